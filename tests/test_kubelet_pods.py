"""Chapter 1: a Pod's phase from its container statuses (getPhase), the upstream tables.

Ported from pkg/kubelet/kubelet_pods_test.go. The stored copy read is from a later release; the
tables below are the ones without restartable init containers, which match v1.27's getPhase(pod,
info, podIsTerminal) signature and code (the sidecar tables belong behind the SidecarContainers gate).
"""

from __future__ import annotations

import pytest
from kubernetes.client import (
    V1Container, V1ContainerState, V1ContainerStateRunning, V1ContainerStateTerminated, V1ContainerStateWaiting,
    V1ContainerStatus, V1ObjectMeta, V1Pod, V1PodSpec,
)

from mini_kubelet.kubelet_pods import get_phase

pytestmark = pytest.mark.ch1


def status(name, state, last=None):
    return V1ContainerStatus(name=name, image="", image_id="", ready=False, restart_count=0, state=state, last_state=last)


def waiting(name):
    return status(name, V1ContainerState(waiting=V1ContainerStateWaiting(reason="")))


def waiting_with_last_termination(name):
    return status(name, V1ContainerState(waiting=V1ContainerStateWaiting()),
                  V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=0)))


def waiting_with_non_zero_termination(name):
    return status(name, V1ContainerState(waiting=V1ContainerStateWaiting()),
                  V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=-1)))


def running(name):
    return status(name, V1ContainerState(running=V1ContainerStateRunning()))


def stopped(name):
    return status(name, V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=0)))


succeeded = stopped


def failed(name):
    return status(name, V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=-1)))


def pod(policy, init=False, annotations=None):
    return V1Pod(metadata=V1ObjectMeta(name="p", namespace="n", uid="u", annotations=annotations),
                 spec=V1PodSpec(node_name="machine", restart_policy=policy,
                                init_containers=[V1Container(name="containerX")] if init else None,
                                containers=[V1Container(name="containerA"), V1Container(name="containerB")]))


A, B, X = "containerA", "containerB", "containerX"

# kubelet_pods_test.go#TestPodPhaseWithRestartAlways: (statuses, podIsTerminal, phase, test name)
RESTART_ALWAYS = [
    ([], False, "Pending", "waiting"),
    ([running(A), running(B)], False, "Running", "all running"),
    ([stopped(A), stopped(B)], False, "Running", "all stopped with restart always"),
    ([succeeded(A), succeeded(B)], True, "Succeeded", "all succeeded with restart always, but the pod is terminal"),
    ([succeeded(A), failed(B)], True, "Failed", "all stopped with restart always, but the pod is terminal"),
    ([running(A), stopped(B)], False, "Running", "mixed state #1 with restart always"),
    ([running(A)], False, "Pending", "mixed state #2 with restart always"),
    ([running(A), waiting(B)], False, "Pending", "mixed state #3 with restart always"),
    ([running(A), waiting_with_last_termination(B)], False, "Running", "backoff crashloop container with restart always"),
]


@pytest.mark.parametrize("statuses, terminal, phase, test", RESTART_ALWAYS, ids=[c[3] for c in RESTART_ALWAYS])
def test_pod_phase_with_restart_always(statuses, terminal, phase, test):
    """kubelet_pods_test.go#TestPodPhaseWithRestartAlways"""
    assert get_phase(pod("Always"), statuses, terminal) == phase


def init_table(never):
    """TestPodPhaseWithRestart{Always,Never}InitContainers: (init statuses, statuses, phase, test name)."""
    fail = "Failed" if never else "Pending"
    return [
        ([], [], "Pending", "empty, waiting"),
        ([running(X)], [], "Pending", "init container running"),
        ([failed(X)], [], fail, "init container terminated non-zero"),
        ([waiting_with_last_termination(X)], [], "Pending", "init container waiting, terminated zero"),
        ([waiting_with_non_zero_termination(X)], [], fail, "init container waiting, terminated non-zero"),
        ([waiting(X)], [], "Pending", "init container waiting, not terminated"),
        ([succeeded(X)], [running(A), running(B)], "Running", "init container succeeded"),
    ]


@pytest.mark.parametrize("init, statuses, phase, test", init_table(False), ids=[c[3] for c in init_table(False)])
def test_pod_phase_with_restart_always_init_containers(init, statuses, phase, test):
    """kubelet_pods_test.go#TestPodPhaseWithRestartAlwaysInitContainers"""
    assert get_phase(pod("Always", init=True), init + statuses, False) == phase


RESTART_NEVER = [
    ([], "Pending", "waiting"),
    ([running(A), running(B)], "Running", "all running with restart never"),
    ([succeeded(A), succeeded(B)], "Succeeded", "all succeeded with restart never"),
    ([failed(A), failed(B)], "Failed", "all failed with restart never"),
    ([running(A), succeeded(B)], "Running", "mixed state #1 with restart never"),
    ([running(A)], "Pending", "mixed state #2 with restart never"),
    ([running(A), waiting(B)], "Pending", "mixed state #3 with restart never"),
]


@pytest.mark.parametrize("statuses, phase, test", RESTART_NEVER, ids=[c[2] for c in RESTART_NEVER])
def test_pod_phase_with_restart_never(statuses, phase, test):
    """kubelet_pods_test.go#TestPodPhaseWithRestartNever"""
    assert get_phase(pod("Never"), statuses, False) == phase


@pytest.mark.parametrize("init, statuses, phase, test", init_table(True), ids=[c[3] for c in init_table(True)])
def test_pod_phase_with_restart_never_init_containers(init, statuses, phase, test):
    """kubelet_pods_test.go#TestPodPhaseWithRestartNeverInitContainers"""
    assert get_phase(pod("Never", init=True), init + statuses, False) == phase


RESTART_ON_FAILURE = [
    ([], "Pending", "waiting"),
    ([running(A), running(B)], "Running", "all running with restart onfailure"),
    ([succeeded(A), succeeded(B)], "Succeeded", "all succeeded with restart onfailure"),
    ([failed(A), failed(B)], "Running", "all failed with restart never"),
    ([running(A), succeeded(B)], "Running", "mixed state #1 with restart onfailure"),
    ([running(A)], "Pending", "mixed state #2 with restart onfailure"),
    ([running(A), waiting(B)], "Pending", "mixed state #3 with restart onfailure"),
    ([running(A), waiting_with_last_termination(B)], "Running", "backoff crashloop container with restart onfailure"),
]


@pytest.mark.parametrize("statuses, phase, test", RESTART_ON_FAILURE, ids=[c[2] for c in RESTART_ON_FAILURE])
def test_pod_phase_with_restart_on_failure(statuses, phase, test):
    """kubelet_pods_test.go#TestPodPhaseWithRestartOnFailure (upstream has no separate OnFailure init-container table)."""
    assert get_phase(pod("OnFailure"), statuses, False) == phase


def test_terminal_static_pod_keeps_the_restart_policy_answer():
    """getPhase: the terminal shortcut is skipped for static pods (upstream TODO #116484), so Always gives Running."""
    static = pod("Always", annotations={"kubernetes.io/config.source": "file"})
    assert get_phase(static, [succeeded(A), failed(B)], True) == "Running"
    assert get_phase(pod("Always"), [succeeded(A), failed(B)], True) == "Failed"


def test_exit_code_one_under_never_is_failed():
    """The reader's question: one container, restartPolicy Never, exited with code 1: the pod is Failed."""
    one = V1Pod(metadata=V1ObjectMeta(name="p"), spec=V1PodSpec(restart_policy="Never", containers=[V1Container(name="c")]))
    crashed = status("c", V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=1, reason="Error")))
    assert get_phase(one, [crashed], False) == "Failed"
