"""Chapter 1: the container statuses and conditions the user sees, built from what the runtime reports."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from kubernetes.client import (
    V1Container, V1ContainerState, V1ContainerStateRunning, V1ContainerStatus, V1ObjectMeta, V1Pod, V1PodCondition,
    V1PodSpec, V1PodStatus, V1Probe,
)

from mini_kubelet import container as kc
from mini_kubelet.clock import Clock
from mini_kubelet.cri import RuntimeService
from mini_kubelet.events import Recorder
from mini_kubelet.flowcontrol import new_container_back_off
from mini_kubelet.kubelet_pods import convert_to_api_container_statuses, generate_api_pod_status
from mini_kubelet.kuberuntime.kuberuntime_manager import sync_pod
from mini_kubelet.reason_cache import ReasonCache

pytestmark = pytest.mark.ch1


def running(name):
    return V1ContainerStatus(name=name, image="", image_id="", ready=False, restart_count=0,
                             state=V1ContainerState(running=V1ContainerStateRunning()))


@pytest.mark.parametrize("deleted, restart_count", [(True, 0), (False, 1)],
                         ids=["no current status, with previous statuses and deletion",
                              "no current status, with previous statuses and no deletion"])
def test_convert_to_api_container_statuses(deleted, restart_count):
    """kubelet_pods_test.go#TestConvertToAPIContainerStatuses: a running container the runtime lost is
    waiting (ContainerCreating) with a ContainerStatusUnknown termination, exit 137; a restart unless deleted."""
    pod = V1Pod(metadata=V1ObjectMeta(name="my-pod", deletion_timestamp=datetime(2023, 1, 1, tzinfo=timezone.utc) if deleted else None),
                spec=V1PodSpec(restart_policy="Always", containers=[V1Container(name="containerA"), V1Container(name="containerB")]))
    got = convert_to_api_container_statuses(pod, kc.PodStatus(id="", name="", namespace=""),
                                            [running("containerA"), running("containerB")], pod.spec.containers, False, False)
    for s, name in zip(got, ["containerA", "containerB"]):
        assert (s.name, s.state.waiting.reason, s.restart_count) == (name, "ContainerCreating", restart_count)
        last = s.last_state.terminated
        assert (last.reason, last.exit_code) == ("ContainerStatusUnknown", 137)
        assert last.message == "The container could not be located when the pod was deleted.  The container used to be Running"


class Node:
    """A pod on the simulated runtime, synced by hand: sync, then read the status the kubelet would write."""

    def __init__(self, pod):
        self.clock = Clock()
        self.runtime = RuntimeService(self.clock)
        self.recorder = Recorder(self.clock)
        self.back_off = new_container_back_off(self.clock)
        self.reasons = ReasonCache()
        self.pod = pod
        self.last = None

    def sync(self, terminal=False, **probes):
        runtime_status = self.runtime.get_pod_status(self.pod.metadata.uid)
        result = sync_pod(self.runtime, self.pod, runtime_status, self.back_off, self.recorder)
        self.reasons.update(self.pod.metadata.uid, result)
        return self.status(terminal, **probes)

    def status(self, terminal=False, **probes):
        self.last = generate_api_pod_status(self.pod, self.runtime.get_pod_status(self.pod.metadata.uid), terminal,
                                            old_status=self.last, reason_cache=self.reasons, **probes)
        return self.last


def make_pod(policy="Always", init=None, **container):
    return V1Pod(metadata=V1ObjectMeta(uid="uid-1", name="web", namespace="default"),
                 spec=V1PodSpec(restart_policy=policy, containers=[V1Container(name="app", image="nginx", **container)],
                                init_containers=[V1Container(name=n, image="busybox") for n in init] if init else None),
                 status=V1PodStatus(phase="Pending"))


def conditions(status):
    return {c.type: (c.status, c.reason) for c in status.conditions}


def test_before_any_sync_the_container_is_creating():
    node = Node(make_pod())
    s = node.status()
    assert s.phase == "Pending" and s.container_statuses[0].state.waiting.reason == "ContainerCreating"
    assert conditions(s)["Ready"] == ("False", "ContainersNotReady")
    assert s.qos_class == "BestEffort"


def test_running_pod_is_ready_with_its_ip():
    node = Node(make_pod())
    s = node.sync()
    assert s.phase == "Running" and s.pod_ip == "10.244.0.3"
    c = s.container_statuses[0]
    assert c.state.running.started_at == node.clock.now() and c.ready and c.started and c.restart_count == 0
    assert c.container_id == "fakeRuntime://ct-0002"
    assert conditions(s) == {"Initialized": ("True", None), "Ready": ("True", None), "ContainersReady": ("True", None),
                             "PodScheduled": ("True", None)}


def test_readiness_probe_without_result_is_not_ready():
    """prober_manager UpdatePodStatus: a container with a readiness probe is not ready until the probe succeeds."""
    node = Node(make_pod(readiness_probe=V1Probe()))
    s = node.sync()
    assert s.container_statuses[0].ready is False
    assert conditions(s)["ContainersReady"] == ("False", "ContainersNotReady")
    assert [c.message for c in s.conditions if c.type == "Ready"] == ["containers with unready status: [app]"]
    s = node.status(readiness={"ct-0002": "Success"})
    assert s.container_statuses[0].ready is True


def test_crash_loop_shows_waiting_crash_loop_back_off_with_last_state():
    """After a crash inside the back-off window: waiting CrashLoopBackOff, lastState terminated Error, restartCount 1."""
    node = Node(make_pod())
    node.sync()
    node.runtime.crash_container("uid-1", "app", 1)
    node.clock.advance(1)
    node.sync()  # first restart: immediate
    node.clock.advance(1)
    node.runtime.crash_container("uid-1", "app", 1)
    s = node.sync()  # inside the 10 s back-off
    c = s.container_statuses[0]
    assert (c.state.waiting.reason, c.state.waiting.message) == (
        "CrashLoopBackOff", "back-off 10s restarting failed container=app pod=web_default(uid-1)")
    assert (c.last_state.terminated.reason, c.last_state.terminated.exit_code) == ("Error", 1)
    assert c.restart_count == 1 and s.phase == "Running"
    node.clock.advance(10)
    c = node.sync().container_statuses[0]
    assert c.state.running is not None and c.restart_count == 2 and c.last_state.terminated.exit_code == 1


def test_never_policy_exit_one_is_failed():
    node = Node(make_pod(policy="Never"))
    node.sync()
    node.runtime.exit_container("uid-1", "app", 1)
    s = node.sync()
    t = s.container_statuses[0].state.terminated
    assert s.phase == "Failed" and (t.reason, t.exit_code) == ("Error", 1)
    assert conditions(s)["Ready"] == ("False", "PodFailed")


def test_on_failure_completed_is_succeeded():
    node = Node(make_pod(policy="OnFailure"))
    node.sync()
    node.runtime.exit_container("uid-1", "app", 0)
    s = node.sync()
    assert s.phase == "Succeeded" and s.container_statuses[0].state.terminated.reason == "Completed"
    assert conditions(s)["ContainersReady"] == ("False", "PodCompleted")
    assert conditions(s)["Initialized"] == ("True", "PodCompleted")


def test_oom_killed_container_is_restarted_under_always():
    node = Node(make_pod())
    node.sync()
    node.runtime.oom_kill_container("uid-1", "app")
    s = node.status()
    assert s.container_statuses[0].state.terminated.reason == "OOMKilled"
    assert s.container_statuses[0].state.terminated.exit_code == 137 and s.phase == "Running"
    c = node.sync().container_statuses[0]
    assert c.state.running is not None and c.last_state.terminated.reason == "OOMKilled" and c.restart_count == 1


def test_init_containers_in_order_then_the_app():
    """Init containers run one at a time; app containers wait with PodInitializing until they are done."""
    node = Node(make_pod(init=["init-a", "init-b"]))
    s = node.sync()
    assert [c.state.running is not None for c in s.init_container_statuses] == [True, False]
    assert s.container_statuses[0].state.waiting.reason == "PodInitializing" and s.phase == "Pending"
    assert conditions(s)["Initialized"] == ("False", "ContainersNotInitialized")
    node.runtime.exit_container("uid-1", "init-a", 0)
    s = node.sync()
    assert [c.name for c in s.init_container_statuses] == ["init-a", "init-b"]
    assert s.init_container_statuses[0].state.terminated.reason == "Completed"
    assert s.init_container_statuses[1].state.running is not None
    node.runtime.exit_container("uid-1", "init-b", 0)
    s = node.sync()
    assert s.phase == "Running" and conditions(s)["Initialized"] == ("True", None)
    assert all(c.ready for c in s.init_container_statuses)


def test_terminal_phase_sticks_and_keeps_its_reason():
    """Once the API shows a terminal phase, the kubelet never reports another one (generateAPIPodStatus)."""
    pod = make_pod()
    pod.status = V1PodStatus(phase="Failed", reason="DeadlineExceeded", message="Pod was active on the node longer than the specified deadline")
    node = Node(pod)
    s = node.sync()
    assert (s.phase, s.reason) == ("Failed", "DeadlineExceeded")


def test_non_kubelet_conditions_are_kept():
    pod = make_pod()
    pod.status.conditions = [V1PodCondition(type="example.com/Gate", status="True"), V1PodCondition(type="Ready", status="True")]
    s = Node(pod).status()
    assert [c.type for c in s.conditions] == ["example.com/Gate", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
