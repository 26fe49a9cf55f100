"""Chapter 1, since 1.27: a Pod's phase with sidecars (init containers with restartPolicy Always).

Behind the SidecarContainers gate (off by default, as v1.27 has no sidecars). Ported from
pkg/kubelet/kubelet_pods_test.go of a later release whose getPhase is v1.32's
(TestPodPhaseWithRestartAlwaysRestartableInitContainers, TestPodPhaseWithRestartAlwaysAndPodHasRun,
TestPodPhaseWithRestartNeverRestartableInitContainers).
"""

from __future__ import annotations

import pytest
from kubernetes.client import V1Container, V1ContainerState, V1ContainerStateRunning, V1ObjectMeta, V1Pod, V1PodSpec

from mini_kubelet.clock import Clock
from mini_kubelet.cri import RuntimeService
from mini_kubelet.events import Recorder
from mini_kubelet.features import DEFAULT_FEATURE_GATE, set_feature_gate_during_test
from mini_kubelet.flowcontrol import new_container_back_off
from mini_kubelet.kubelet_pods import generate_api_pod_status, get_phase
from mini_kubelet.kuberuntime.kuberuntime_manager import sync_pod
from tests.test_kubelet_pods import (
    failed, running, status, stopped, succeeded, waiting, waiting_with_last_termination, waiting_with_non_zero_termination,
)

pytestmark = pytest.mark.ch1


@pytest.fixture
def sidecars():
    with set_feature_gate_during_test(DEFAULT_FEATURE_GATE, "SidecarContainers", True):
        yield


def started(name):
    s = status(name, V1ContainerState(running=V1ContainerStateRunning()))
    s.started = True
    return s


def pod(policy, inits):
    return V1Pod(metadata=V1ObjectMeta(name="p", namespace="n"),
                 spec=V1PodSpec(node_name="machine", restart_policy=policy,
                                init_containers=[V1Container(name=n, restart_policy="Always" if sidecar else None)
                                                 for n, sidecar in inits],
                                containers=[V1Container(name=n) for n in (["containerA", "containerB"] if len(inits) == 1
                                                                          else ["containerA"])]))


A, B, X, Y = "containerA", "containerB", "containerX", "containerY"

ALWAYS_RESTARTABLE = [  # (init statuses, statuses, podIsTerminal, phase, test name)
    ([], [], False, "Pending", "empty, waiting"),
    ([running(X)], [], False, "Pending", "restartable init container running"),
    ([stopped(X)], [], False, "Pending", "restartable init container stopped"),
    ([waiting_with_last_termination(X)], [], False, "Pending", "restartable init container waiting, terminated zero"),
    ([waiting_with_non_zero_termination(X)], [], False, "Pending", "restartable init container waiting, terminated non-zero"),
    ([waiting(X)], [], False, "Pending", "restartable init container waiting, not terminated"),
    ([started(X)], [running(A)], False, "Pending", "restartable init container started, 1/2 regular container running"),
    ([started(X)], [running(A), running(B)], False, "Running", "restartable init container started, all regular containers running"),
    ([running(X)], [running(A), running(B)], False, "Running", "restartable init container running, all regular containers running"),
    ([stopped(X)], [running(A), running(B)], False, "Running", "restartable init container stopped, all regular containers running"),
    ([waiting_with_last_termination(X)], [running(A), running(B)], False, "Running",
     "backoff crashloop restartable init container, all regular containers running"),
    ([failed(X)], [succeeded(A), succeeded(B)], True, "Succeeded",
     "all regular containers succeeded and restartable init container failed with restart always, but the pod is terminal"),
    ([succeeded(X)], [succeeded(A), succeeded(B)], True, "Succeeded",
     "all regular containers succeeded and restartable init container succeeded with restart always, but the pod is terminal"),
]


@pytest.mark.parametrize("init, statuses, terminal, phase, test", ALWAYS_RESTARTABLE, ids=[c[4] for c in ALWAYS_RESTARTABLE])
def test_pod_phase_with_restart_always_restartable_init_containers(sidecars, init, statuses, terminal, phase, test):
    """kubelet_pods_test.go#TestPodPhaseWithRestartAlwaysRestartableInitContainers"""
    assert get_phase(pod("Always", [(X, True)]), init + statuses, terminal) == phase


POD_HAS_RUN = [
    ([running(X), running(Y)], [running(A)], "Pending",
     "regular init containers, restartable init container and regular container are all running"),
    ([running(X), running(Y)], [stopped(A)], "Pending",
     "regular containers is stopped, restartable init container and regular int container are both running"),
    ([succeeded(X), running(Y)], [stopped(A)], "Running",
     "regular init container is succeeded, restartable init container is running, regular containers is stopped"),
    ([succeeded(X), running(Y)], [running(A)], "Running",
     "regular init container is succeeded, restartable init container and regular containers are both running"),
]


@pytest.mark.parametrize("init, statuses, phase, test", POD_HAS_RUN, ids=[c[3] for c in POD_HAS_RUN])
def test_pod_phase_with_restart_always_and_pod_has_run(sidecars, init, statuses, phase, test):
    """kubelet_pods_test.go#TestPodPhaseWithRestartAlwaysAndPodHasRun"""
    assert get_phase(pod("Always", [(X, False), (Y, True)]), init + statuses, False) == phase


NEVER_RESTARTABLE = [
    ([], [], "Pending", "empty, waiting"),
    ([running(X)], [], "Pending", "restartable init container running"),
    ([stopped(X)], [], "Pending", "restartable init container stopped"),
    ([waiting_with_last_termination(X)], [], "Pending", "restartable init container waiting, terminated zero"),
    ([waiting_with_non_zero_termination(X)], [], "Pending", "restartable init container waiting, terminated non-zero"),
    ([waiting(X)], [], "Pending", "restartable init container waiting, not terminated"),
    ([started(X)], [running(A)], "Pending", "restartable init container started, one main container running"),
    ([started(X)], [succeeded(A), succeeded(B)], "Running", "restartable init container started, main containers succeeded"),
    ([running(X)], [succeeded(A), succeeded(B)], "Running", "restartable init container running, main containers succeeded"),
    ([succeeded(X)], [succeeded(A), succeeded(B)], "Succeeded", "all containers succeeded"),
    ([failed(X)], [succeeded(A), succeeded(B)], "Succeeded", "restartable init container terminated non-zero, main containers succeeded"),
    ([waiting_with_last_termination(X)], [succeeded(A), succeeded(B)], "Succeeded",
     "backoff crashloop restartable init container, main containers succeeded"),
    ([waiting_with_non_zero_termination(X)], [succeeded(A), succeeded(B)], "Succeeded",
     "backoff crashloop with non-zero restartable init container, main containers succeeded"),
]


@pytest.mark.parametrize("init, statuses, phase, test", NEVER_RESTARTABLE, ids=[c[3] for c in NEVER_RESTARTABLE])
def test_pod_phase_with_restart_never_restartable_init_containers(sidecars, init, statuses, phase, test):
    """kubelet_pods_test.go#TestPodPhaseWithRestartNeverRestartableInitContainers"""
    assert get_phase(pod("Never", [(X, True)]), init + statuses, False) == phase


def test_gate_off_treats_a_sidecar_as_a_regular_init_container():
    """With SidecarContainers off (v1.27), restartPolicy on an init container means nothing: a running one keeps the pod Pending."""
    assert not DEFAULT_FEATURE_GATE.enabled("SidecarContainers")
    assert get_phase(pod("Always", [(X, True)]), [started(X), running(A), running(B)], False) == "Pending"
    with set_feature_gate_during_test(DEFAULT_FEATURE_GATE, "SidecarContainers", True):
        assert get_phase(pod("Always", [(X, True)]), [started(X), running(A), running(B)], False) == "Running"
    assert not DEFAULT_FEATURE_GATE.enabled("SidecarContainers"), "the gate is put back after the block"


def test_pod_with_a_sidecar_becomes_running_end_to_end(sidecars):
    """Through the runtime, SyncPod and the generated status: sidecar started, app running, pod Running and Ready."""
    clock = Clock()
    runtime, recorder, back_off = RuntimeService(clock), Recorder(clock), new_container_back_off(clock)
    p = V1Pod(metadata=V1ObjectMeta(uid="u", name="web", namespace="default"),
              spec=V1PodSpec(restart_policy="Always", containers=[V1Container(name="app", image="nginx")],
                             init_containers=[V1Container(name="proxy", image="envoy", restart_policy="Always")]))
    for _ in range(2):
        sync_pod(runtime, p, runtime.get_pod_status("u"), back_off, recorder)
    s = generate_api_pod_status(p, runtime.get_pod_status("u"), False)
    proxy = s.init_container_statuses[0]
    assert (proxy.started, proxy.ready) == (True, True)
    assert s.phase == "Running" and {c.type: c.status for c in s.conditions}["Ready"] == "True"
