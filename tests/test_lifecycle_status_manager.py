"""Chapter 1: the status manager and the Kubelet's sync steps that feed it.

Ported from pkg/kubelet/status/status_manager_test.go (TestNewStatus, TestNewStatusPreservesPodStartTime,
TestChangedStatus, TestUnchangedStatus, TestUnchangedStatusPreservesLastTransitionTime,
TestChangedStatusUpdatesLastTransitionTime, TestStatusEquality, TestMergePodStatus), read at a later revision
whose cases match v1.27's code for these functions; a "version" here is upstream's versionedPodStatus.version
(one per update the manager would send). The rest checks pkg/kubelet/kubelet.go SyncPod's v1.27 error
handling and SyncTerminatingPod's kill through the pod workers.
"""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from kubernetes.client import (V1ContainerState, V1ContainerStateRunning, V1ContainerStateTerminated,
                               V1ContainerStateWaiting, V1ContainerStatus, V1ObjectMeta, V1Pod, V1PodCondition,
                               V1PodSpec, V1PodStatus)

from mini_kubelet import container as kc
from mini_kubelet.api import node_from_manifest, pod_from_manifest
from mini_kubelet.clock import Clock
from mini_kubelet.kubelet_main import Kubelet
from mini_kubelet.status.status_manager import StatusManager, check_container_state_transition, merge_pod_status

pytestmark = pytest.mark.ch1


def make_pod(status=None):
    return V1Pod(metadata=V1ObjectMeta(uid="12345678", name="foo", namespace="new"), spec=V1PodSpec(containers=[]),
                 status=status or V1PodStatus())


def ready(status="True"):
    return V1PodStatus(conditions=[V1PodCondition(type="Ready", status=status)])


def test_new_status_sets_start_time_and_ready_transition_time():
    """TestNewStatus, TestNewStatusSetsReadyTransitionTime"""
    clock = Clock()
    manager = StatusManager(clock)
    manager.set_pod_status(make_pod(), ready())
    status = manager.get_pod_status("12345678")
    assert status.start_time == clock.now() and status.conditions[0].last_transition_time == clock.now()


def test_new_status_preserves_pod_start_time():
    """TestNewStatusPreservesPodStartTime"""
    clock = Clock()
    start = clock.now() - timedelta(minutes=1)
    manager = StatusManager(clock)
    manager.set_pod_status(make_pod(V1PodStatus(start_time=start)), V1PodStatus(message="x"))
    assert manager.get_pod_status("12345678").start_time == start


def test_changed_and_unchanged_status_versions():
    """TestChangedStatus (two updates), TestUnchangedStatus (one), TestChangedStatusKeepsStartTime"""
    clock = Clock()
    manager = StatusManager(clock)
    manager.set_pod_status(make_pod(), V1PodStatus(message="1"))
    clock.advance(5)
    manager.set_pod_status(make_pod(), V1PodStatus(message="2"))
    assert manager.pod_statuses["12345678"].version == 2
    assert manager.get_pod_status("12345678").start_time == clock.now() - timedelta(seconds=5)
    manager.set_pod_status(make_pod(), V1PodStatus(message="2"))
    assert manager.pod_statuses["12345678"].version == 2


def test_transition_times():
    """TestUnchangedStatusPreservesLastTransitionTime, TestChangedStatusUpdatesLastTransitionTime"""
    clock = Clock()
    manager = StatusManager(clock)
    manager.set_pod_status(make_pod(), ready())
    first = manager.get_pod_status("12345678").conditions[0].last_transition_time
    clock.advance(3)
    manager.set_pod_status(make_pod(), ready())
    assert manager.get_pod_status("12345678").conditions[0].last_transition_time == first
    manager.set_pod_status(make_pod(), ready("False"))
    assert manager.get_pod_status("12345678").conditions[0].last_transition_time == first + timedelta(seconds=3)


def test_status_equality_ignores_conditions_not_owned_by_the_kubelet():
    """TestStatusEquality (its second half): only a foreign condition differs, so there is no new version."""
    manager = StatusManager(Clock())
    feature = "www.example.com/feature"
    manager.set_pod_status(make_pod(), V1PodStatus(conditions=[V1PodCondition(type=feature, status="False")]))
    manager.set_pod_status(make_pod(), V1PodStatus(conditions=[V1PodCondition(type=feature, status="True")]))
    assert manager.pod_statuses["12345678"].version == 1


def base():
    return V1PodStatus(phase="Running", message="Message", conditions=[
        V1PodCondition(type="Ready", status="True"), V1PodCondition(type="PodScheduled", status="True")])


def with_(status, **changes):
    status = copy.deepcopy(status)
    for key, value in changes.items():
        if key == "add":
            status.conditions.append(V1PodCondition(type=value[0], status=value[1]))
        elif key == "ready":
            status.conditions[0].status = value
        else:
            setattr(status, key, value)
    return status


FEATURE = "example.com/feature"
MERGE_CASES = [  # status_manager_test.go#TestMergePodStatus: (desc, running, old, new, phase, reason, conditions)
    ("no change", False, base(), base(), "Running", None, {"Ready": "True", "PodScheduled": "True"}),
    ("readiness changes", False, base(), with_(base(), ready="False"), "Running", None,
     {"Ready": "False", "PodScheduled": "True"}),
    ("additional pod condition", False, with_(base(), add=(FEATURE, "True")), base(), "Running", None,
     {"Ready": "True", "PodScheduled": "True", FEATURE: "True"}),
    ("additional pod condition and readiness changes", False, with_(base(), add=(FEATURE, "True")),
     with_(base(), ready="False"), "Running", None, {"Ready": "False", "PodScheduled": "True", FEATURE: "True"}),
    ("additional pod condition changes", False, with_(base(), add=(FEATURE, "True")),
     with_(base(), add=(FEATURE, "False")), "Running", None, {"Ready": "True", "PodScheduled": "True", FEATURE: "True"}),
    ("phase is transitioning to failed and no containers running", False,
     with_(base(), reason="Unknown"), with_(base(), phase="Failed", reason="Evicted", message="Was Evicted"),
     "Failed", "Evicted", {"Ready": "False", "ContainersReady": "False", "PodScheduled": "True"}),
    ("phase is transitioning to failed and containers running", True,
     with_(base(), reason="Unknown"), with_(base(), phase="Failed", reason="Evicted", message="Was Evicted"),
     "Running", "Unknown", {"Ready": "True", "PodScheduled": "True"}),
]


# status_manager.go mergePodStatus (v1.27): DisruptionTarget is "shared by the kubelet" (PodDisruptionConditions, on by
# default): it is sent only with the transition to a terminal phase once no container can run. Later releases' tables
# have rows for this; these follow the v1.27 code.
MERGE_CASES += [
    ("disruption target sent with the terminal phase", False, with_(base(), reason="Unknown"),
     with_(base(), phase="Failed", reason="Evicted", add=("DisruptionTarget", "True")), "Failed", "Evicted",
     {"Ready": "False", "ContainersReady": "False", "PodScheduled": "True", "DisruptionTarget": "True"}),
    ("disruption target held while containers run", True, with_(base(), reason="Unknown"),
     with_(base(), phase="Failed", reason="Evicted", add=("DisruptionTarget", "True")), "Running", "Unknown",
     {"Ready": "True", "PodScheduled": "True"}),
    ("disruption target not sent before the phase is terminal", False, base(),
     with_(base(), add=("DisruptionTarget", "True")), "Running", None, {"Ready": "True", "PodScheduled": "True"}),
]


@pytest.mark.parametrize("desc,running,old,new,phase,reason,conditions", MERGE_CASES, ids=[c[0] for c in MERGE_CASES])
def test_merge_pod_status(desc, running, old, new, phase, reason, conditions):
    merged = merge_pod_status(old, new, running)
    assert (merged.phase, merged.reason) == (phase, reason)
    assert {c.type: c.status for c in merged.conditions} == conditions
    assert len(merged.conditions) == len(conditions)


def cs(name, state):
    return V1ContainerStatus(name=name, image="x", image_id="", ready=False, restart_count=0, state=state)


TERMINATED = lambda code: V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=code))  # noqa: E731
RUNNING = V1ContainerState(running=V1ContainerStateRunning())
WAITING = V1ContainerState(waiting=V1ContainerStateWaiting(reason="ContainerCreating"))


@pytest.mark.parametrize("policy,old,new,illegal", [
    ("Always", TERMINATED(0), RUNNING, False),  # Always may leave the terminated state
    ("Never", TERMINATED(1), RUNNING, True),
    ("Never", TERMINATED(0), WAITING, True),
    ("OnFailure", TERMINATED(1), RUNNING, False),  # a failure may restart under OnFailure
    ("OnFailure", TERMINATED(0), RUNNING, True),  # a success may not
    ("Never", RUNNING, TERMINATED(0), False),
])
def test_check_container_state_transition(policy, old, new, illegal):
    """status_manager.go checkContainerStateTransition, each branch"""
    err = check_container_state_transition([cs("c", old)], [cs("c", new)], policy)
    assert (err is not None) == illegal
    if illegal:
        assert err == "terminated container c attempted illegal transition to non-terminated state"


def test_an_illegal_transition_is_not_cached():
    manager = StatusManager(Clock())
    pod = make_pod()
    pod.spec.restart_policy = "Never"
    manager.set_pod_status(pod, V1PodStatus(container_statuses=[cs("c", TERMINATED(1))]))
    manager.set_pod_status(pod, V1PodStatus(container_statuses=[cs("c", RUNNING)]))
    assert manager.get_pod_status("12345678").container_statuses[0].state.terminated.exit_code == 1
    assert manager.log == ["Status update on pod new/foo aborted: terminated container c attempted illegal "
                           "transition to non-terminated state"]


def test_terminate_pod_marks_running_containers_unknown_and_the_phase_failed():
    """status_manager.go TerminatePod: every container terminated (137, ContainerStatusUnknown), phase Failed."""
    manager = StatusManager(Clock())
    pod = make_pod()
    manager.set_pod_status(pod, V1PodStatus(phase="Running", container_statuses=[cs("c", RUNNING)]))
    manager.terminate_pod(pod)
    status = manager.get_pod_status("12345678")
    assert status.phase == "Failed" and manager.can_be_deleted("12345678")
    term = status.container_statuses[0].state.terminated
    assert (term.exit_code, term.reason) == (137, "ContainerStatusUnknown")


def web(policy="Always"):
    return pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default",
                                                                                "uid": "web"},
                              "spec": {"restartPolicy": policy, "terminationGracePeriodSeconds": 30,
                                       "containers": [{"name": "app", "image": "nginx"}]}})


NODE = node_from_manifest({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
                           "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}})


def run(kubelet, seconds):
    for _ in range(seconds):
        kubelet.clock.advance(1)
        kubelet.step()


def test_crash_loop_back_off_is_a_sync_error_in_v1_27():
    """kubelet.go SyncPod loops over every result: the successful ConfigPodSandbox makes the back-off an error,
    so the pod worker requeues after its 10 s back-off period, not its 60 s resync interval."""
    kubelet = Kubelet(Clock(), NODE)
    kubelet.send("api", [web()])
    kubelet.send("file", [])
    kubelet.step()
    for _ in range(2):  # two crashes: the second restart must wait for the back-off
        run(kubelet, 2)
        kubelet.runtime.crash_container("web", "app")
    run(kubelet, 1)
    assert kubelet.pod_workers.log[-1] == ('Error syncing pod, skipping: failed to "StartContainer" for "app" with '
                                           'CrashLoopBackOff: "back-off 10s restarting failed container=app '
                                           'pod=web_default(web)"')
    assert kubelet.work_queue.queue["web"] == kubelet.clock.now() + timedelta(seconds=10)


def test_deletion_kills_with_the_effective_grace_period_then_terminates():
    kubelet = Kubelet(Clock(), NODE)
    pod = web()
    kubelet.send("api", [pod])
    kubelet.send("file", [])
    run(kubelet, 2)
    deleted = copy.deepcopy(pod)
    deleted.metadata.deletion_timestamp = kubelet.clock.now() + timedelta(seconds=12)
    deleted.metadata.deletion_grace_period_seconds = 12
    kubelet.send("api", [deleted])
    run(kubelet, 3)
    assert [(p.metadata.name, grace) for p, grace in kubelet.syncer.kills] == [("web", 12)]
    assert all(c.state == kc.CONTAINER_STATE_EXITED for c in kubelet.runtime.containers.values())
    assert kubelet.status_manager.can_be_deleted("web")
    assert kubelet.pod_status(deleted).phase == "Failed"  # exited 143 on SIGTERM, restartPolicy Always
