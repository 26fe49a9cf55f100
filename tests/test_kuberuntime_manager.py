"""Chapter 1: computePodActions, the decision at the heart of every sync.

Ported from pkg/kubelet/kuberuntime/kuberuntime_manager_test.go. The stored copy read was a v1.28
one (it already has the SidecarContainers gate): its TestComputePodActions table is the same as
v1.27's, and for ...WithInitContainers and ...WithInitAndEphemeralContainers the expectations used are
those of its "sidecar containers disabled" runs, which is v1.27's one-at-a-time init path
(NextInitContainerToStart set; the later InitContainersToStart field does not exist in v1.27).
"""

from __future__ import annotations

import dataclasses

import pytest
from kubernetes.client import V1Container, V1EphemeralContainer, V1ObjectMeta, V1Pod, V1PodSpec

from mini_kubelet.container import (
    CONTAINER_STATE_EXITED as EXITED,
    CONTAINER_STATE_RUNNING as RUNNING,
    CONTAINER_STATE_UNKNOWN as UNKNOWN,
    SANDBOX_NOTREADY,
    PodStatus,
    SandboxStatus,
    Status,
    hash_container,
)
from mini_kubelet.kuberuntime.kuberuntime_manager import (
    ContainerToKillInfo,
    PodActions,
    compute_pod_actions,
    pod_sandbox_changed,
)

pytestmark = pytest.mark.ch1


def base_pod_and_status():
    """kuberuntime_manager_test.go makeBasePodAndStatus: three running containers in a ready sandbox."""
    pod = V1Pod(metadata=V1ObjectMeta(uid="12345678", name="foo", namespace="foo-ns"),
                spec=V1PodSpec(containers=[V1Container(name=f"foo{i}", image="busybox") for i in (1, 2, 3)]))
    status = PodStatus(
        id=pod.metadata.uid, name="foo", namespace="foo-ns",
        sandbox_statuses=[SandboxStatus(id="sandboxID", attempt=0, ip="10.0.0.1")],
        container_statuses=[Status(id=f"id{i + 1}", name=c.name, state=RUNNING, hash=hash_container(c))
                            for i, c in enumerate(pod.spec.containers)])
    return pod, status


def with_init_containers():
    """makeBasePodAndStatusWithInitContainers: three init containers that all exited 0 (hash of the first, as upstream)."""
    pod, status = base_pod_and_status()
    pod.spec.init_containers = [V1Container(name=f"init{i}", image="bar-image") for i in (1, 2, 3)]
    h = hash_container(pod.spec.init_containers[0])
    status.container_statuses = [Status(id=f"initid{i}", name=f"init{i}", state=EXITED, hash=h) for i in (1, 2, 3)]
    return pod, status


def with_init_and_ephemeral_containers():
    """makeBasePodAndStatusWithInitAndEphemeralContainers: one exited init container and a running "debug"."""
    pod, status = base_pod_and_status()
    pod.spec.init_containers = [V1Container(name="init1", image="bar-image")]
    pod.spec.ephemeral_containers = [V1EphemeralContainer(name="debug", image="busybox")]
    status.container_statuses += [
        Status(id="initid1", name="init1", state=EXITED, hash=hash_container(pod.spec.init_containers[0])),
        Status(id="debug1", name="debug", state=RUNNING, hash=hash_container(pod.spec.ephemeral_containers[0]))]
    return pod, status


def kill_map(pod, status, indexes, init=False):
    """getKillMap / getKillMapWithInitContainers: message and reason are not compared."""
    specs = pod.spec.init_containers if init else pod.spec.containers
    return {status.container_statuses[i].id: ContainerToKillInfo(specs[i], specs[i].name) for i in indexes}


def policy(name):
    def mutate(pod):
        pod.spec.restart_policy = name
    return mutate


def exit_codes(**codes):
    """Mark statuses (by index, "c0", "c1", ...) exited with these codes."""
    def mutate(status):
        for key, code in codes.items():
            s = status.container_statuses[int(key[1:])]
            s.state, s.exit_code = EXITED, code
    return mutate


def all_exited(code):
    def mutate(status):
        for s in status.container_statuses:
            s.state, s.exit_code = EXITED, code
    return mutate


def sandbox(state=SANDBOX_NOTREADY, attempt=None, ip=None, no_containers=False):
    def mutate(status):
        s = status.sandbox_statuses[0]
        s.state = state
        s.attempt = s.attempt if attempt is None else attempt
        s.ip = s.ip if ip is None else ip
        if no_containers:
            status.container_statuses = []
    return mutate


def chain(*fns):
    def run(x):
        for f in fns:
            f(x)
    return run


def state_of(index, state):
    def mutate(status):
        status.container_statuses[index].state = state
    return mutate


def verify(actual: PodActions, expected: PodActions):
    """verifyActions: compare everything but the kill message and reason."""
    actual.containers_to_kill = {k: dataclasses.replace(v, message="", reason="") for k, v in actual.containers_to_kill.items()}
    assert actual == expected


NO_ACTION = dict(sandbox_id="sandboxID")

# (description, pod mutation, status mutation, liveness/startup results, expected actions: a function of pod and status)
COMPUTE_POD_ACTIONS = [
    ("everything is good; do nothing", None, None, {}, lambda p, s: PodActions(**NO_ACTION)),
    ("start pod sandbox and all containers for a new pod", None,
     lambda s: (s.sandbox_statuses.clear(), s.container_statuses.clear()), {},
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, attempt=0, containers_to_start=[0, 1, 2])),
    ("restart exited containers if RestartPolicy == Always", policy("Always"), exit_codes(c0=0, c1=111), {},
     lambda p, s: PodActions(sandbox_id="sandboxID", containers_to_start=[0, 1])),
    ("restart failed containers if RestartPolicy == OnFailure", policy("OnFailure"), exit_codes(c0=0, c1=111), {},
     lambda p, s: PodActions(sandbox_id="sandboxID", containers_to_start=[1])),
    ("don't restart containers if RestartPolicy == Never", policy("Never"), exit_codes(c0=0, c1=111), {},
     lambda p, s: PodActions(**NO_ACTION)),
    ("Kill pod and recreate everything if the pod sandbox is dead, and RestartPolicy == Always", policy("Always"),
     sandbox(), {},
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id="sandboxID", attempt=1, containers_to_start=[0, 1, 2])),
    ("Kill pod and recreate all containers (except for the succeeded one) if the pod sandbox is dead, and RestartPolicy == OnFailure",
     policy("OnFailure"), chain(sandbox(), exit_codes(c1=0)), {},
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id="sandboxID", attempt=1, containers_to_start=[0, 2])),
    ("Kill pod and recreate all containers if the PodSandbox does not have an IP", None,
     sandbox(state="SANDBOX_READY", ip=""), {},
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id="sandboxID", attempt=1, containers_to_start=[0, 1, 2])),
    ("Kill and recreate the container if the container's spec changed", policy("Always"),
     lambda s: setattr(s.container_statuses[1], "hash", 432423432), {},
     lambda p, s: PodActions(sandbox_id="sandboxID", containers_to_kill=kill_map(p, s, [1]), containers_to_start=[1])),
    ("Kill and recreate the container if the liveness check has failed", policy("Always"), None,
     {"liveness": {"id2": "Failure"}},
     lambda p, s: PodActions(sandbox_id="sandboxID", containers_to_kill=kill_map(p, s, [1]), containers_to_start=[1])),
    ("Kill and recreate the container if the startup check has failed", policy("Always"), None,
     {"startup": {"id2": "Failure"}},
     lambda p, s: PodActions(sandbox_id="sandboxID", containers_to_kill=kill_map(p, s, [1]), containers_to_start=[1])),
    ("Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and all containers exited",
     policy("Never"), chain(sandbox(attempt=1), all_exited(0)), {},
     lambda p, s: PodActions(sandbox_id="sandboxID", attempt=2, create_sandbox=False, kill_pod=True)),
    ("Verify we do not create a pod sandbox if no ready sandbox for pod with RestartPolicy=OnFailure and all containers succeeded",
     policy("OnFailure"), chain(sandbox(attempt=1), all_exited(0)), {},
     lambda p, s: PodActions(sandbox_id="sandboxID", attempt=2, create_sandbox=False, kill_pod=True)),
    ("Verify we create a pod sandbox if no ready sandbox for pod with RestartPolicy=Never and no containers have ever been created",
     policy("Never"), sandbox(attempt=2, no_containers=True), {},
     lambda p, s: PodActions(sandbox_id="sandboxID", attempt=3, create_sandbox=True, kill_pod=True, containers_to_start=[0, 1, 2])),
    ("Kill and recreate the container if the container is in unknown state", policy("Never"), state_of(1, UNKNOWN), {},
     lambda p, s: PodActions(sandbox_id="sandboxID", containers_to_kill=kill_map(p, s, [1]), containers_to_start=[1])),
]


@pytest.mark.parametrize("desc, mutate_pod, mutate_status, probes, expected", COMPUTE_POD_ACTIONS,
                         ids=[c[0] for c in COMPUTE_POD_ACTIONS])
def test_compute_pod_actions(desc, mutate_pod, mutate_status, probes, expected):
    """kuberuntime_manager_test.go#TestComputePodActions"""
    pod, status = base_pod_and_status()
    base_pod, base_status = base_pod_and_status()
    if mutate_pod:
        mutate_pod(pod)
    if mutate_status:
        mutate_status(status)
    verify(compute_pod_actions(pod, status, **probes), expected(base_pod, base_status))


def test_spec_change_restarts_even_under_never():
    """A running container whose spec changed is killed and restarted although the policy is Never (derived from the code)."""
    pod, status = base_pod_and_status()
    pod.spec.restart_policy = "Never"
    pod.spec.containers[0].image = "busybox:2"
    actions = compute_pod_actions(pod, status)
    assert actions.containers_to_start == [0] and list(actions.containers_to_kill) == ["id1"]
    assert actions.containers_to_kill["id1"].message == "Container foo1 definition changed, will be restarted"


def test_liveness_failure_under_never_kills_without_restart():
    """Under Never a failed liveness probe kills the container and does not start it again (derived from the code)."""
    pod, status = base_pod_and_status()
    pod.spec.restart_policy = "Never"
    actions = compute_pod_actions(pod, status, liveness={"id1": "Failure"})
    assert actions.containers_to_start == [] and actions.kill_pod is False
    assert actions.containers_to_kill["id1"].message == "Container foo1 failed liveness probe"
    assert actions.containers_to_kill["id1"].reason == "LivenessProbe"


def first_init(p, s):
    return p.spec.init_containers[0]


# kuberuntime_manager_test.go#TestComputePodActionsWithInitContainers (the SidecarContainers-off expectations)
WITH_INIT_CONTAINERS = [
    ("initialization completed; start all containers", None, None,
     lambda p, s: PodActions(sandbox_id="sandboxID", containers_to_start=[0, 1, 2])),
    ("no init containers have been started; start the first one", None, lambda s: s.container_statuses.clear(),
     lambda p, s: PodActions(sandbox_id="sandboxID", next_init_container_to_start=first_init(p, s))),
    ("initialization in progress; do nothing", policy("Always"), state_of(2, RUNNING),
     lambda p, s: PodActions(**NO_ACTION)),
    ("Kill pod and restart the first init container if the pod sandbox is dead", policy("Always"), sandbox(),
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id="sandboxID", attempt=1,
                             next_init_container_to_start=first_init(p, s))),
    ("initialization failed; restart the last init container if RestartPolicy == Always", policy("Always"),
     lambda s: setattr(s.container_statuses[2], "exit_code", 137),
     lambda p, s: PodActions(sandbox_id="sandboxID", next_init_container_to_start=p.spec.init_containers[2])),
    ("initialization failed; restart the last init container if RestartPolicy == OnFailure", policy("OnFailure"),
     lambda s: setattr(s.container_statuses[2], "exit_code", 137),
     lambda p, s: PodActions(sandbox_id="sandboxID", next_init_container_to_start=p.spec.init_containers[2])),
    ("initialization failed; kill pod if RestartPolicy == Never", policy("Never"),
     lambda s: setattr(s.container_statuses[2], "exit_code", 137),
     lambda p, s: PodActions(kill_pod=True, sandbox_id="sandboxID")),
    ("init container state unknown; kill and recreate the last init container if RestartPolicy == Always", policy("Always"),
     state_of(2, UNKNOWN),
     lambda p, s: PodActions(sandbox_id="sandboxID", next_init_container_to_start=p.spec.init_containers[2],
                             containers_to_kill=kill_map(p, s, [2], init=True))),
    ("init container state unknown; kill and recreate the last init container if RestartPolicy == OnFailure", policy("OnFailure"),
     state_of(2, UNKNOWN),
     lambda p, s: PodActions(sandbox_id="sandboxID", next_init_container_to_start=p.spec.init_containers[2],
                             containers_to_kill=kill_map(p, s, [2], init=True))),
    ("init container state unknown; kill pod if RestartPolicy == Never", policy("Never"), state_of(2, UNKNOWN),
     lambda p, s: PodActions(kill_pod=True, sandbox_id="sandboxID")),
    ("Pod sandbox not ready, init container failed, but RestartPolicy == Never; kill pod only", policy("Never"), sandbox(),
     lambda p, s: PodActions(kill_pod=True, create_sandbox=False, sandbox_id="sandboxID", attempt=1)),
    ("Pod sandbox not ready, and RestartPolicy == Never, but no visible init containers;  create a new pod sandbox",
     policy("Never"), sandbox(no_containers=True),
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id="sandboxID", attempt=1,
                             next_init_container_to_start=first_init(p, s))),
    ("Pod sandbox not ready, init container failed, and RestartPolicy == OnFailure; create a new pod sandbox",
     policy("OnFailure"), chain(sandbox(), lambda s: setattr(s.container_statuses[2], "exit_code", 137)),
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id="sandboxID", attempt=1,
                             next_init_container_to_start=first_init(p, s))),
    ("some of the init container statuses are missing but the last init container is running, don't restart preceding ones",
     policy("Always"), chain(state_of(2, RUNNING), lambda s: s.container_statuses.__delitem__(slice(0, 2))),
     lambda p, s: PodActions(kill_pod=False, sandbox_id="sandboxID")),
]


@pytest.mark.parametrize("desc, mutate_pod, mutate_status, expected", WITH_INIT_CONTAINERS,
                         ids=[c[0] for c in WITH_INIT_CONTAINERS])
def test_compute_pod_actions_with_init_containers(desc, mutate_pod, mutate_status, expected):
    """kuberuntime_manager_test.go#TestComputePodActionsWithInitContainers"""
    pod, status = with_init_containers()
    base_pod, base_status = with_init_containers()
    if mutate_pod:
        mutate_pod(pod)
    if mutate_status:
        mutate_status(status)
    verify(compute_pod_actions(pod, status), expected(base_pod, base_status))


def debug2(pod):
    pod.spec.ephemeral_containers.append(V1EphemeralContainer(name="debug2", image="busybox"))


# kuberuntime_manager_test.go#TestComputePodActionsWithInitAndEphemeralContainers (SidecarContainers off)
WITH_EPHEMERAL = [
    ("steady state; do nothing; ignore ephemeral container", None, None, lambda p, s: PodActions(**NO_ACTION)),
    ("No ephemeral containers running; start one", None, lambda s: s.container_statuses.__delitem__(slice(4, None)),
     lambda p, s: PodActions(sandbox_id="sandboxID", ephemeral_containers_to_start=[0])),
    ("Start second ephemeral container", debug2, None,
     lambda p, s: PodActions(sandbox_id="sandboxID", ephemeral_containers_to_start=[1])),
    ("Ephemeral container exited; do not restart", policy("Always"), state_of(4, EXITED),
     lambda p, s: PodActions(sandbox_id="sandboxID")),
    ("initialization in progress; start ephemeral container", None,
     chain(state_of(3, RUNNING), lambda s: s.container_statuses.__delitem__(slice(4, None))),
     lambda p, s: PodActions(sandbox_id="sandboxID", ephemeral_containers_to_start=[0])),
    ("Create a new pod sandbox if the pod sandbox is dead, init container failed and RestartPolicy == OnFailure",
     policy("OnFailure"),
     chain(sandbox(), lambda s: s.container_statuses.__delitem__(slice(0, 3)),
           lambda s: setattr(s.container_statuses[0], "exit_code", 137)),
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id="sandboxID", attempt=1,
                             next_init_container_to_start=first_init(p, s))),
    ("Kill pod and do not restart ephemeral container if the pod sandbox is dead", policy("Always"), sandbox(),
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id="sandboxID", attempt=1,
                             next_init_container_to_start=first_init(p, s))),
    ("Kill pod if all containers exited except ephemeral container", policy("Never"),
     exit_codes(c0=0, c1=0, c2=0),
     lambda p, s: PodActions(sandbox_id="sandboxID", create_sandbox=False, kill_pod=True)),
    ("Ephemeral container is in unknown state; leave it alone", policy("Never"), state_of(4, UNKNOWN),
     lambda p, s: PodActions(**NO_ACTION)),
]


@pytest.mark.parametrize("desc, mutate_pod, mutate_status, expected", WITH_EPHEMERAL, ids=[c[0] for c in WITH_EPHEMERAL])
def test_compute_pod_actions_with_init_and_ephemeral_containers(desc, mutate_pod, mutate_status, expected):
    """kuberuntime_manager_test.go#TestComputePodActionsWithInitAndEphemeralContainers"""
    pod, status = with_init_and_ephemeral_containers()
    base_pod, base_status = with_init_and_ephemeral_containers()
    if mutate_pod:
        mutate_pod(pod)
    if mutate_status:
        mutate_status(status)
    verify(compute_pod_actions(pod, status), expected(base_pod, base_status))


@pytest.mark.parametrize("case, expected", [
    ("no sandbox", (True, 0, "")),
    ("ready", (False, 0, "sandboxID")),
    ("not ready", (True, 1, "sandboxID")),
    ("two ready", (True, 1, "newer")),
    ("host network changed", (True, 1, "")),
    ("no ip", (True, 1, "sandboxID")),
])
def test_pod_sandbox_changed(case, expected):
    """pkg/kubelet/kuberuntime/util/util.go PodSandboxChanged, one case per branch (derived from the code)."""
    pod, status = base_pod_and_status()
    if case == "no sandbox":
        status.sandbox_statuses = []
    elif case == "not ready":
        status.sandbox_statuses[0].state = SANDBOX_NOTREADY
    elif case == "two ready":
        status.sandbox_statuses.insert(0, SandboxStatus(id="newer", attempt=0, ip="10.0.0.2"))
    elif case == "host network changed":
        pod.spec.host_network = True
    elif case == "no ip":
        status.sandbox_statuses[0].ip = ""
    assert pod_sandbox_changed(pod, status) == expected
