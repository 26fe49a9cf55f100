"""Chapter 1, since 1.27: computePodActions with sidecars, behind the SidecarContainers gate (off in v1.27).

The code follows v1.32's computeInitContainerActions. The table is
pkg/kubelet/kuberuntime/kuberuntime_manager_test.go#TestComputePodActionsWithRestartableInitContainers
as stored in a later copy (it also knows the LegacySidecarContainers gate of 1.33 and later); every
case of it is kept, each with the same expected actions.
"""

from __future__ import annotations

import copy

import pytest
from kubernetes.client import V1Container, V1ObjectMeta, V1Pod, V1PodSpec, V1Probe

from mini_kubelet.clock import Clock

from mini_kubelet.container import (
    CONTAINER_STATE_CREATED as CREATED,
    CONTAINER_STATE_EXITED as EXITED,
    CONTAINER_STATE_RUNNING as RUNNING,
    CONTAINER_STATE_UNKNOWN as UNKNOWN,
    SANDBOX_NOTREADY,
    Status,
    hash_container,
)
from mini_kubelet.cri import RuntimeService
from mini_kubelet.events import Recorder
from mini_kubelet.features import DEFAULT_FEATURE_GATE, set_feature_gate_during_test
from mini_kubelet.flowcontrol import new_container_back_off
from mini_kubelet.kuberuntime.kuberuntime_manager import PodActions, compute_pod_actions, sync_pod
from tests.test_kuberuntime_manager import base_pod_and_status, kill_map, verify

pytestmark = pytest.mark.ch1


def with_restartable_init_containers():
    """makeBasePodAndStatusWithRestartableInitContainers: three running sidecars, the last two with both probes."""
    pod, status = base_pod_and_status()
    pod.spec.init_containers = [
        V1Container(name="restartable-init-1", image="bar-image", restart_policy="Always"),
        V1Container(name="restartable-init-2", image="bar-image", restart_policy="Always",
                    liveness_probe=V1Probe(), startup_probe=V1Probe()),
        V1Container(name="restartable-init-3", image="bar-image", restart_policy="Always",
                    liveness_probe=V1Probe(), startup_probe=V1Probe()),
    ]
    status.container_statuses = [Status(id=f"initid{i + 1}", name=c.name, state=RUNNING, hash=hash_container(c))
                                 for i, c in enumerate(pod.spec.init_containers)]
    return pod, status


def policy(name):
    return lambda pod: setattr(pod.spec, "restart_policy", name)


def keep(n):
    def mutate(pod, status, probes):
        del status.container_statuses[n:]
    return mutate


def set_state(index, state, exit_code=None):
    def mutate(pod, status, probes):
        status.container_statuses[index].state = state
        if exit_code is not None:
            status.container_statuses[index].exit_code = exit_code
    return mutate


def chain(*fns):
    def run(pod, status, probes):
        for f in fns:
            f(pod, status, probes)
    return run


def probe(kind, container_id, result):
    def mutate(pod, status, probes):
        if result is None:
            probes[kind].pop(container_id, None)
        else:
            probes[kind][container_id] = result
    return mutate


def sandbox_dead(pod, status, probes):
    status.sandbox_statuses[0].state = SANDBOX_NOTREADY


def regular(state, exit_code=0):
    def mutate(pod, status, probes):
        status.container_statuses += [Status(id=f"id{i}", name=f"foo{i}", state=state, exit_code=exit_code,
                                             hash=hash_container(pod.spec.containers[i - 1])) for i in (1, 2, 3)]
    return mutate


def image(pod):
    pod.spec.restart_policy = "Always"
    pod.spec.init_containers[2].image = "foo-image"


def startup_probe_on_third(pod):
    pod.spec.restart_policy = "Always"
    pod.spec.init_containers[2].startup_probe = V1Probe()


S = "sandboxID"
NO_ACTION = PodActions(sandbox_id=S)

# (description, pod mutation, status/probe mutation, expected: function of base pod and status)
CASES = [
    ("initialization completed; start all containers", None, None,
     lambda p, s: PodActions(sandbox_id=S, containers_to_start=[0, 1, 2])),
    ("no init containers have been started; start the first one", None, keep(0),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[0])),
    ("an init container is stuck in the created state; restart it", policy("Always"), set_state(2, CREATED),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[2])),
    ("restartable init container has started; start the next", policy("Always"), keep(1),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[1])),
    ("livenessProbe has not been run; start the nothing", policy("Always"), chain(probe("liveness", "initid2", None), keep(2)),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[2])),
    ("livenessProbe in progress; start the next", policy("Always"), chain(probe("liveness", "initid2", "Unknown"), keep(2)),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[2])),
    ("livenessProbe has completed; start the next", policy("Always"), keep(2),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[2])),
    ("kill and recreate the restartable init container if the liveness check has failed", policy("Always"),
     probe("liveness", "initid3", "Failure"),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[2], containers_to_kill=kill_map(p, s, [2], init=True),
                             containers_to_start=[0, 1, 2])),
    ("startupProbe has not been run; do nothing", policy("Always"), chain(probe("startup", "initid2", None), keep(2)),
     lambda p, s: NO_ACTION),
    ("startupProbe in progress; do nothing", policy("Always"), chain(probe("startup", "initid2", "Unknown"), keep(2)),
     lambda p, s: NO_ACTION),
    ("startupProbe has completed; start the next", policy("Always"), keep(2),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[2])),
    ("kill and recreate the restartable init container if the startup check has failed", startup_probe_on_third,
     probe("startup", "initid3", "Failure"),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[2], containers_to_kill=kill_map(p, s, [2], init=True))),
    ("kill and recreate the restartable init container if the container definition changes", image, None,
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[2], containers_to_start=[0, 1, 2],
                             containers_to_kill=kill_map(_with_image(p), s, [2], init=True))),
    ("restart terminated restartable init container and next init container", policy("Always"),
     chain(set_state(0, EXITED), set_state(2, EXITED)),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[0, 2])),
    ("restart terminated restartable init container and regular containers", policy("Always"), set_state(0, EXITED),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[0], containers_to_start=[0, 1, 2])),
    ("Pod sandbox not ready, restartable init container failed, but RestartPolicy == Never; kill pod only", policy("Never"),
     chain(sandbox_dead, set_state(2, EXITED, 137)),
     lambda p, s: PodActions(kill_pod=True, create_sandbox=False, sandbox_id=S, attempt=1)),
    ("Pod sandbox not ready, and RestartPolicy == Never, but no visible restartable init containers;  create a new pod sandbox",
     policy("Never"), chain(sandbox_dead, keep(0)),
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id=S, attempt=1, init_containers_to_start=[0])),
    ("Pod sandbox not ready, restartable init container failed, and RestartPolicy == OnFailure; create a new pod sandbox",
     policy("OnFailure"), chain(sandbox_dead, set_state(2, EXITED, 137)),
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id=S, attempt=1, init_containers_to_start=[0])),
    ("Pod sandbox not ready, restartable init container failed, and RestartPolicy == Always; create a new pod sandbox",
     policy("Always"), chain(sandbox_dead, set_state(2, EXITED, 137)),
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id=S, attempt=1, init_containers_to_start=[0])),
    ("initialization failed; restart the last restartable init container even if pod's RestartPolicy == Never",
     policy("Never"), set_state(2, EXITED, 137),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[2])),
    ("restartable init container state unknown; kill and recreate the last restartable init container even if pod's RestartPolicy == Never",
     policy("Never"), set_state(2, UNKNOWN),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[2], containers_to_kill=kill_map(p, s, [2], init=True))),
    ("restart restartable init container if regular containers are running even if pod's RestartPolicy == Never",
     policy("Never"), chain(set_state(2, EXITED, 137), regular(RUNNING)),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[2])),
    ("kill the pod if all main containers succeeded if pod's RestartPolicy == Never", policy("Never"), regular(EXITED, 0),
     lambda p, s: PodActions(kill_pod=True, sandbox_id=S)),
    ("some of the init container statuses are missing but the last init container is running, restart restartable init and regular containers",
     policy("Always"), lambda pod, status, probes: status.container_statuses.__delitem__(slice(0, 2)),
     lambda p, s: PodActions(sandbox_id=S, init_containers_to_start=[0, 1], containers_to_start=[0, 1, 2])),
]


def _with_image(pod):
    """modifyKillMapContainerImage: the kill info carries the changed spec."""
    pod = copy.deepcopy(pod)
    pod.spec.init_containers[2].image = "foo-image"
    return pod


@pytest.mark.parametrize("desc, mutate_pod, mutate, expected", CASES, ids=[c[0] for c in CASES])
def test_compute_pod_actions_with_restartable_init_containers(desc, mutate_pod, mutate, expected):
    """kuberuntime_manager_test.go#TestComputePodActionsWithRestartableInitContainers"""
    pod, status = with_restartable_init_containers()
    base_pod, base_status = with_restartable_init_containers()
    probes = {"liveness": {"initid2": "Success", "initid3": "Success"}, "startup": {"initid2": "Success", "initid3": "Success"}}
    if mutate_pod:
        mutate_pod(pod)
    if mutate:
        mutate(pod, status, probes)
    with set_feature_gate_during_test(DEFAULT_FEATURE_GATE, "SidecarContainers", True):
        actions = compute_pod_actions(pod, status, **probes)
    verify(actions, expected(base_pod, base_status))


def test_gate_off_runs_sidecars_as_plain_init_containers():
    """With the gate off (v1.27), restartPolicy on an init container is ignored: a running one blocks the next."""
    pod, status = with_restartable_init_containers()
    del status.container_statuses[1:]
    actions = compute_pod_actions(pod, status)
    assert actions.next_init_container_to_start is None and actions.init_containers_to_start == []
    assert actions == PodActions(sandbox_id=S)


def test_sidecar_through_sync_pod_restarts_under_never():
    """SyncPod with the gate on: the sidecar starts first, then the app; a crashed sidecar restarts although the policy is Never."""
    clock = Clock()
    runtime, recorder, back_off = RuntimeService(clock), Recorder(clock), new_container_back_off(clock)
    pod = V1Pod(metadata=V1ObjectMeta(uid="u", name="web", namespace="default"),
                spec=V1PodSpec(restart_policy="Never", containers=[V1Container(name="app", image="nginx")],
                               init_containers=[V1Container(name="proxy", image="envoy", restart_policy="Always")]))

    def sync():
        sync_pod(runtime, pod, runtime.get_pod_status("u"), back_off, recorder)
        return sorted((c.name, c.restart_count, c.state) for c in runtime.containers.values())

    with set_feature_gate_during_test(DEFAULT_FEATURE_GATE, "SidecarContainers", True):
        assert sync() == [("proxy", 0, RUNNING)]
        assert sync() == [("app", 0, RUNNING), ("proxy", 0, RUNNING)]
        runtime.crash_container("u", "proxy")
        assert sync() == [("app", 0, RUNNING), ("proxy", 0, EXITED), ("proxy", 1, RUNNING)]
