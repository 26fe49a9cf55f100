"""Chapter 1: the container restart story of v1.36, behind its gates (v1.27 stays as it was).

Ported upstream tables, each naming its source and the copy read:
- pkg/api/v1/pod/util_test.go TestContainerHasRestartablePolicy (it calls ContainerShouldRestart),
  TestIsContainerRestartable, TestFindMatchingContainerRestartRule: read in a main-branch copy of the
  1.35 era (it has the ContainerRestartRules helpers; the v1.36 tag itself was not at hand).
- pkg/kubelet/container/helpers_test.go TestShouldContainerBeRestarted: the copy read has only the pod-level
  table (five containers, three policies, then a deleted pod); it must still hold with ContainerRestartRules on.
- pkg/kubelet/kuberuntime/kuberuntime_manager_test.go TestComputePodActionsWithContainerRestartRules: its five
  cases, and, as it does, the TestComputePodActions and ...WithInitContainers tables again with the gate on
  (read as the table stood after the fix that made probe kills read the container's own policy only).
- k8s.io/client-go util/flowcontrol/backoff_test.go TestAlternateHasExpiredFunc, TestAlternateBackoffGC at v0.36.0.
- test/e2e_node/container_restart_test.go "Alternate restart backs off" (a 30 s maxContainerRestartPeriod:
  restarts at 0 s, 0 s, 10 s, 30 s, 60 s, 90 s ... after the first exits), checked on the replay.
The rest is derived from the code read (pkg/kubelet/kubelet.go newCrashLoopBackOff in a 1.35-era copy, its
HasExpiredFunc from v1.32.10, pkg/kubelet/apis/config validation and defaults at v1.32.10, getPhase as a later
release reads it) and says so.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

import pytest
from kubernetes.client import (
    V1Container, V1ContainerRestartRule, V1ContainerRestartRuleOnExitCodes, V1ContainerState, V1ContainerStateRunning,
    V1ContainerStateTerminated, V1ContainerStateWaiting, V1ContainerStatus, V1ObjectMeta, V1Pod, V1PodSpec,
)

from mini_kubelet import features
from mini_kubelet.clock import Clock
from mini_kubelet.cmd.main import main
from mini_kubelet.container import (
    CONTAINER_STATE_CREATED, CONTAINER_STATE_EXITED, CONTAINER_STATE_RUNNING, CONTAINER_STATE_UNKNOWN, PodStatus,
    Status, container_should_restart, find_matching_container_restart_rule, hash_container, is_container_restartable,
    should_container_be_restarted,
)
from mini_kubelet.features import release_profile, set_feature_gate_during_test, DEFAULT_FEATURE_GATE
from mini_kubelet.flowcontrol import (
    BACK_OFF_PERIOD, MAX_CONTAINER_BACK_OFF, Backoff, new_back_off, new_container_back_off, new_crash_loop_back_off,
)
from mini_kubelet.kubelet_pods import get_phase
from mini_kubelet.kuberuntime.kuberuntime_manager import PodActions, compute_pod_actions
from mini_kubelet.sim.lifecycle.replay import run_lifecycle
from mini_kubelet.status.status_manager import check_container_state_transition

from . import test_kuberuntime_manager as trm
from .conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.ch1

SCENARIOS = EXAMPLES / "scenarios"
RESTART = "Restart"


def rule(op, *codes, action=RESTART):
    return V1ContainerRestartRule(action=action, exit_codes=V1ContainerRestartRuleOnExitCodes(operator=op, values=list(codes)))


def container(policy=None, *rules, name="c"):
    return V1Container(name=name, restart_policy=policy, restart_policy_rules=list(rules) or None)


# --- pkg/api/v1/pod/util.go helpers -------------------------------------------------------------------------

# util_test.go#TestContainerHasRestartablePolicy: (name, container, pod restartPolicy, exit code, restarts)
CONTAINER_SHOULD_RESTART = [
    ("Rule: 'In' operator matches with 'Restart' action", container("Never", rule("In", 42, 50, 60)), None, 42, True),
    ("Rule: 'NotIn' operator matches with 'Restart' action", container("Never", rule("NotIn", 0, 1, 2)), None, 99, True),
    ("Rule: 'In' operator does not match, should fall back to container policy",
     container("Never", rule("In", 10, 20)), None, 30, False),
    ("Rule: 'NotIn' operator does not match, should fall back to container policy",
     container("Never", rule("NotIn", 10, 20)), None, 10, False),
    ("Container Policy: 'Always'", container("Always"), "Never", 0, True),
    ("Container Policy: 'OnFailure' with exit code 0", container("OnFailure"), "Never", 0, False),
    ("Container Policy: 'OnFailure' with non-zero exit code", container("OnFailure"), "Never", 1, True),
    ("Container Policy: 'Never' should return false", container("Never"), "Always", 1, False),
    ("Pod Policy: Fallback to pod 'Always'", container(), "Always", 0, True),
    ("Pod Policy: Fallback to pod 'OnFailure' with non-zero exit code", container(), "OnFailure", 1, True),
    ("Pod Policy: Fallback to pod 'Never'", container(), "Never", 1, False),
    ("Pod Policy: Fallback with no policies specified should return true", container(), None, 0, True),
]


@pytest.mark.parametrize("name, c, pod_policy, code, expected", CONTAINER_SHOULD_RESTART,
                         ids=[case[0] for case in CONTAINER_SHOULD_RESTART])
def test_container_should_restart(name, c, pod_policy, code, expected):
    """util_test.go#TestContainerHasRestartablePolicy (ContainerShouldRestart), 12 cases."""
    assert container_should_restart(c, pod_policy, code) is expected


# util_test.go#TestIsContainerRestartable: (name, pod restartPolicy, container, restartable)
IS_CONTAINER_RESTARTABLE = [
    ("Container: Rule action 'Restart' should always be true", "Never",
     container("Never", V1ContainerRestartRule(action=RESTART)), True),
    ("Container: Policy 'Always' is restartable", "Never", container("Always"), True),
    ("Container: Policy 'OnFailure' is restartable", "Never", container("OnFailure"), True),
    ("Container: Policy 'Never' is not restartable", "Always", container("Never"), False),
    ("Pod Fallback: Policy 'Always' is restartable", "Always", container(), True),
    ("Pod Fallback: Policy 'OnFailure' is restartable", "OnFailure", container(), True),
    ("Pod Fallback: Policy 'Never' is not restartable", "Never", container(), False),
    ("Pod Fallback: Default empty policy is restartable (since it's not 'Never')", None, container(), True),
]


@pytest.mark.parametrize("name, pod_policy, c, expected", IS_CONTAINER_RESTARTABLE,
                         ids=[case[0] for case in IS_CONTAINER_RESTARTABLE])
def test_is_container_restartable(name, pod_policy, c, expected):
    """util_test.go#TestIsContainerRestartable, 8 cases."""
    assert is_container_restartable(pod_policy, c) is expected


RULE_IN, RULE_NOT_IN, RULE_IN_42 = rule("In", 42, 50, 60), rule("NotIn", 0, 1, 2), rule("In", 42)
# util_test.go#TestFindMatchingContainerRestartRule: (name, rules, exit code, the rule found or None)
FIND_MATCHING_RULE = [
    ("a rule with op In matches", [RULE_IN], 42, RULE_IN),
    ("a rule with op NotIn matches", [RULE_NOT_IN], 99, RULE_NOT_IN),
    ("matches the first rule if two rules both matched", [RULE_IN, RULE_IN_42], 42, RULE_IN),
    ("no rules matched", [RULE_IN], 100, None),
    ("no rules defined", [], 0, None),
]


@pytest.mark.parametrize("name, rules, code, expected", FIND_MATCHING_RULE, ids=[case[0] for case in FIND_MATCHING_RULE])
def test_find_matching_container_restart_rule(name, rules, code, expected):
    """util_test.go#TestFindMatchingContainerRestartRule, 5 cases."""
    assert find_matching_container_restart_rule(container(None, *rules), code) is expected


# --- ShouldContainerBeRestarted ---------------------------------------------------------------------------

def helpers_pod_and_status():
    """helpers_test.go#TestShouldContainerBeRestarted's pod and runtime status (newest instance first)."""
    pod = V1Pod(metadata=V1ObjectMeta(uid="12345678", name="foo", namespace="new"),
                spec=V1PodSpec(containers=[V1Container(name=n) for n in ("no-history", "alive", "succeed", "failed",
                                                                         "unknown")]))
    status = PodStatus(id="12345678", name="foo", namespace="new", container_statuses=[
        Status(id="1", name="alive", state=CONTAINER_STATE_RUNNING),
        Status(id="2", name="succeed", state=CONTAINER_STATE_EXITED, exit_code=0),
        Status(id="3", name="failed", state=CONTAINER_STATE_EXITED, exit_code=1),
        Status(id="4", name="alive", state=CONTAINER_STATE_EXITED, exit_code=2),
        Status(id="5", name="unknown", state=CONTAINER_STATE_UNKNOWN),
        Status(id="6", name="failed", state=CONTAINER_STATE_EXITED, exit_code=3)])
    return pod, status


POLICIES = ("Never", "OnFailure", "Always")
SHOULD_BE_RESTARTED = {"no-history": (True, True, True), "alive": (False, False, False),
                       "succeed": (False, False, True), "failed": (False, True, True), "unknown": (True, True, True)}


@pytest.mark.parametrize("release", ["1.27", "1.36"])
def test_should_container_be_restarted_pod_level_table(release):
    """helpers_test.go#TestShouldContainerBeRestarted: 5 containers x 3 policies, then all False once deleted.

    Under v1.36 ContainerRestartRules is on; with no container-level policy the answers are the same.
    """
    pod, status = helpers_pod_and_status()
    with release_profile(release):
        for c in pod.spec.containers:
            for policy, expected in zip(POLICIES, SHOULD_BE_RESTARTED[c.name]):
                pod.spec.restart_policy = policy
                assert should_container_be_restarted(c, pod, status) is expected, (c.name, policy)
        pod.metadata.deletion_timestamp = Clock().now()
        assert not any(should_container_be_restarted(c, pod, status) for c in pod.spec.containers for _ in POLICIES)


def rules_pod(code: int):
    """A Never pod whose container restarts itself on exit code 42 only; its newest instance exited with code."""
    c = container("Never", rule("In", 42), name="worker")
    pod = V1Pod(metadata=V1ObjectMeta(uid="u", name="trainer", namespace="ml"),
                spec=V1PodSpec(restart_policy="Never", containers=[c]))
    status = PodStatus(id="u", name="trainer", namespace="ml",
                       container_statuses=[Status(id="1", name="worker", state=CONTAINER_STATE_EXITED, exit_code=code)])
    return pod, c, status


@pytest.mark.parametrize("release, code, expected", [("1.36", 42, True), ("1.36", 1, False), ("1.27", 42, False),
                                                      ("1.34", 42, False)])
def test_should_container_be_restarted_reads_the_rules_behind_the_gate(release, code, expected):
    """Derived from helpers.go ShouldContainerBeRestarted (ContainerRestartRules: beta, on from 1.35; alpha in 1.34)."""
    pod, c, status = rules_pod(code)
    with release_profile(release):
        assert should_container_be_restarted(c, pod, status) is expected


# --- computePodActions ------------------------------------------------------------------------------------

def container_policies(pod_policy, *policies):
    def mutate(pod):
        pod.spec.restart_policy = pod_policy
        for c, p in zip(pod.spec.containers, policies):
            c.restart_policy = p
    return mutate


# kuberuntime_manager_test.go#TestComputePodActionsWithContainerRestartRules: (name, pod mutation, status mutation,
# expected actions as a function of the base pod and status)
WITH_RESTART_RULES = [
    ("restart exited containers if RestartPolicy == Always", container_policies("Never", "Always", "Always"),
     trm.exit_codes(c0=0, c1=111), lambda p, s: PodActions(sandbox_id="sandboxID", containers_to_start=[0, 1])),
    ("restart failed containers if RestartPolicy == OnFailure", container_policies("Never", "OnFailure", "OnFailure"),
     trm.exit_codes(c0=0, c1=111), lambda p, s: PodActions(sandbox_id="sandboxID", containers_to_start=[1])),
    ("restart created but not started containers if RestartPolicy == OnFailure",
     container_policies("Never", "OnFailure", "OnFailure"),
     trm.chain(trm.exit_codes(c0=0), trm.state_of(1, CONTAINER_STATE_CREATED)),
     lambda p, s: PodActions(sandbox_id="sandboxID", containers_to_start=[1])),
    ("don't restart containers if RestartPolicy == Never", container_policies("Always", "Never", "Never"),
     trm.exit_codes(c0=0, c1=111), lambda p, s: PodActions(sandbox_id="sandboxID")),
    ("Kill pod and recreate all containers (except for the succeeded one) if the pod sandbox is dead",
     container_policies("Always", None, "OnFailure"), trm.chain(trm.sandbox(), trm.exit_codes(c1=0)),
     lambda p, s: PodActions(kill_pod=True, create_sandbox=True, sandbox_id="sandboxID", attempt=1,
                             containers_to_start=[0, 2])),
]


@pytest.mark.parametrize("desc, mutate_pod, mutate_status, expected", WITH_RESTART_RULES,
                         ids=[case[0] for case in WITH_RESTART_RULES])
def test_compute_pod_actions_with_container_restart_rules(desc, mutate_pod, mutate_status, expected):
    """kuberuntime_manager_test.go#TestComputePodActionsWithContainerRestartRules, 5 cases, under v1.36."""
    pod, status = trm.base_pod_and_status()
    base_pod, base_status = trm.base_pod_and_status()
    mutate_pod(pod)
    mutate_status(status)
    with release_profile("1.36"):
        trm.verify(compute_pod_actions(pod, status), expected(base_pod, base_status))


def test_the_first_restart_rules_case_differs_without_the_gate():
    """The same pod under v1.27 (no container-level policy): its Never keeps both exited containers down."""
    pod, status = trm.base_pod_and_status()
    WITH_RESTART_RULES[0][1](pod)
    WITH_RESTART_RULES[0][2](status)
    assert compute_pod_actions(pod, status).containers_to_start == []


@pytest.mark.parametrize("desc, mutate_pod, mutate_status, probes, expected", trm.COMPUTE_POD_ACTIONS,
                         ids=[case[0] for case in trm.COMPUTE_POD_ACTIONS])
def test_compute_pod_actions_table_holds_with_the_gate_on(desc, mutate_pod, mutate_status, probes, expected):
    """TestComputePodActionsWithContainerRestartRules runs TestComputePodActions again with the gate on."""
    with release_profile("1.36"):
        trm.test_compute_pod_actions(desc, mutate_pod, mutate_status, probes, expected)


@pytest.mark.parametrize("desc, mutate_pod, mutate_status, expected", trm.WITH_INIT_CONTAINERS,
                         ids=[case[0] for case in trm.WITH_INIT_CONTAINERS])
def test_compute_pod_actions_with_init_containers_holds_with_the_gate_on(desc, mutate_pod, mutate_status, expected):
    """... and TestComputePodActionsWithInitContainers (the one-at-a-time form: these pods have no sidecar)."""
    with set_feature_gate_during_test(DEFAULT_FEATURE_GATE, "ContainerRestartRules", True):
        trm.test_compute_pod_actions_with_init_containers(desc, mutate_pod, mutate_status, expected)


def test_a_probe_kill_reads_the_containers_own_policy_only():
    """Derived from computePodActions (as fixed in 1.35): a running container's own Never outranks the pod's Always."""
    pod, status = trm.base_pod_and_status()
    container_policies("Always", None, "Never")(pod)
    status.container_statuses[1].hash = hash_container(pod.spec.containers[1])  # the spec with its policy is running
    with release_profile("1.36"):
        actions = compute_pod_actions(pod, status, liveness={"id2": "Failure"})
    assert list(actions.containers_to_kill) == ["id2"] and actions.containers_to_start == []
    with release_profile("1.34"):  # the gate is alpha, off: the pod's policy restarts it
        assert compute_pod_actions(pod, status, liveness={"id2": "Failure"}).containers_to_start == [1]


def test_a_failed_init_container_restarts_by_its_rules():
    """Derived from computeInitContainerActions: a Never pod's init container that exits 42 runs again, 1 kills the pod."""
    pod, status = trm.with_init_containers()
    pod.spec.restart_policy = "Never"
    pod.spec.init_containers[1].restart_policy = "Never"
    pod.spec.init_containers[1].restart_policy_rules = [rule("In", 42)]
    status.container_statuses = status.container_statuses[:2]
    status.container_statuses[1].exit_code = 42
    with release_profile("1.36"):
        assert compute_pod_actions(pod, status).next_init_container_to_start is pod.spec.init_containers[1]
        status.container_statuses[1].exit_code = 1
        assert compute_pod_actions(pod, status).kill_pod
    status.container_statuses[1].exit_code = 42
    assert compute_pod_actions(pod, status).kill_pod  # v1.27: Never is Never


# --- getPhase ---------------------------------------------------------------------------------------------

def api_status(name, state, last=None):
    return V1ContainerStatus(name=name, image="", image_id="", ready=False, restart_count=0, state=state, last_state=last)


def terminated(name, code):
    return api_status(name, V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=code)))


def crash_looping(name, code):
    return api_status(name, V1ContainerState(waiting=V1ContainerStateWaiting(reason="CrashLoopBackOff")),
                      V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=code)))


def running(name):
    return api_status(name, V1ContainerState(running=V1ContainerStateRunning()))


def phase_pod(policy="Never", init=False):
    worker = container("Never", rule("In", 42), name="worker")
    return V1Pod(metadata=V1ObjectMeta(name="p", namespace="n", uid="u"),
                 spec=V1PodSpec(restart_policy=policy, containers=[worker, V1Container(name="side")],
                                init_containers=[container("Never", rule("In", 42), name="setup")] if init else None))


# (statuses, v1.36 phase, v1.27 phase): derived from getPhase's gated branch; no upstream table was at hand
GET_PHASE = [
    ("exited 42, will restart: Running", [terminated("worker", 42), terminated("side", 0)], "Running", "Failed"),
    ("waiting to restart after 42: Running", [crash_looping("worker", 42), terminated("side", 0)], "Running", "Failed"),
    ("exited 1, no rule: Failed", [terminated("worker", 1), terminated("side", 0)], "Failed", "Failed"),
    ("every container exited 0, none restarts: Succeeded", [terminated("worker", 0), terminated("side", 0)],
     "Succeeded", "Succeeded"),
    ("one still runs: Running", [terminated("worker", 1), running("side")], "Running", "Running"),
]


@pytest.mark.parametrize("desc, statuses, phase_136, phase_127", GET_PHASE, ids=[case[0] for case in GET_PHASE])
def test_get_phase_with_restart_rules(desc, statuses, phase_136, phase_127):
    """getPhase with ContainerRestartRules: a stopped container that will restart keeps the pod Running."""
    with release_profile("1.36"):
        assert get_phase(phase_pod(), statuses, False) == phase_136
    assert get_phase(phase_pod(), statuses, False) == phase_127


@pytest.mark.parametrize("code, phase", [(42, "Pending"), (1, "Failed")])
def test_get_phase_fails_only_an_init_container_that_will_not_run_again(code, phase):
    """getPhase with ContainerRestartRules: a failed init container counts only if it will not run again."""
    statuses = [terminated("setup", code), api_status("worker", V1ContainerState(waiting=V1ContainerStateWaiting())),
                api_status("side", V1ContainerState(waiting=V1ContainerStateWaiting()))]
    with release_profile("1.36"):
        assert get_phase(phase_pod(init=True), statuses, False) == phase
    assert get_phase(phase_pod(init=True), statuses, False) == "Failed"


def test_the_status_manager_lets_a_restarting_container_leave_terminated():
    """checkContainerStateTransition: a Never pod's container restarted by its rule may show running again."""
    c = container("Never", rule("In", 42), name="worker")
    old, new = [terminated("worker", 42)], [running("worker")]
    illegal = "terminated container worker attempted illegal transition to non-terminated state"
    assert check_container_state_transition(old, new, "Never", [c]) == illegal
    with release_profile("1.36"):
        assert check_container_state_transition(old, new, "Never", [c]) is None
        assert check_container_state_transition([terminated("worker", 1)], new, "Never", [c]) == illegal


def test_the_status_manager_lets_a_sidecar_leave_terminated():
    """checkContainerStateTransition (v1.32.10): restartable init containers are skipped; init errors say so."""
    sidecar, plain = V1Container(name="s", restart_policy="Always"), V1Container(name="i")
    with release_profile("1.36"):
        assert check_container_state_transition([terminated("s", 1)], [running("s")], "Never", [sidecar], init=True) is None
        assert check_container_state_transition([terminated("i", 0)], [running("i")], "Never", [plain], init=True) == \
            "terminated init container i attempted illegal transition to non-terminated state"


# --- the crash-loop back-off ------------------------------------------------------------------------------

# (release, gates, maxContainerRestartPeriod, expected (cap, initial) in seconds): kubelet.go newCrashLoopBackOff
CRASH_LOOP_BACK_OFF = [
    ("1.27", {}, None, (300, 10)),
    ("1.34", {}, None, (300, 10)),  # KubeletCrashLoopBackOffMax alpha, off
    ("1.34", {"KubeletCrashLoopBackOffMax": True}, 30, (30, 10)),
    ("1.36", {}, None, (300, 10)),  # the gate is on; the config's default is MaxContainerBackOff
    ("1.36", {}, 30, (30, 10)),
    ("1.36", {}, 5, (5, 5)),  # the first delay is never above the cap
    ("1.36", {"ReduceDefaultCrashLoopBackOffDecay": True, "KubeletCrashLoopBackOffMax": False}, None, (60, 1)),
    ("1.36", {"ReduceDefaultCrashLoopBackOffDecay": True}, None, (300, 1)),  # the config's 300 s default wins
    ("1.36", {"ReduceDefaultCrashLoopBackOffDecay": True}, 30, (30, 1)),
]


@pytest.mark.parametrize("release, gates, period, expected", CRASH_LOOP_BACK_OFF)
def test_new_crash_loop_back_off(release, gates, period, expected):
    """Derived from kubelet.go newCrashLoopBackOff (1.35-era copy) and the config default (defaults.go, v1.32.10)."""
    with release_profile(release, gates):
        cap, initial = new_crash_loop_back_off(None if period is None else timedelta(seconds=period))
    assert (cap.total_seconds(), initial.total_seconds()) == expected


def test_v127_back_off_is_unchanged():
    assert new_crash_loop_back_off() == (MAX_CONTAINER_BACK_OFF, BACK_OFF_PERIOD)
    assert new_container_back_off(Clock()).has_expired_func is None  # 2 x the cap


# backoff_test.go#TestAlternateHasExpiredFunc (v0.36.0): (name, has_expired_func, cap, not expired after, expired after)
ALTERNATE_EXPIRY = [
    ("default expiration", None, 50, 5, 101),
    ("expires faster than maxDuration", lambda event, last, _cap: event - last >= timedelta(seconds=8), 50, 5, 9),
]


@pytest.mark.parametrize("name, func, cap, fresh, expired", ALTERNATE_EXPIRY, ids=[c[0] for c in ALTERNATE_EXPIRY])
def test_alternate_has_expired_func(name, func, cap, fresh, expired):
    """backoff_test.go#TestAlternateHasExpiredFunc, 2 cases: Next doubles inside the window and starts over past it."""
    clock = Clock()
    b = new_back_off(timedelta(seconds=1), timedelta(seconds=cap), clock)
    b.has_expired_func = func
    b.next(name, clock.now())
    clock.advance(fresh)
    b.next(name, clock.now())
    assert b.get(name) >= timedelta(seconds=2)
    clock.advance(expired)
    b.next(name, clock.now())
    assert b.get(name) == timedelta(seconds=1)


# backoff_test.go#TestAlternateBackoffGC (v0.36.0): (name, has_expired_func, cap, kept after, collected after)
ALTERNATE_GC = [
    ("default GC", None, 50, 5, 101),
    ("GC later than 2*maxDuration", lambda event, last, _cap: event - last >= timedelta(seconds=200), 50, 101, 501),
]


@pytest.mark.parametrize("name, func, cap, kept, collected", ALTERNATE_GC, ids=[c[0] for c in ALTERNATE_GC])
def test_alternate_back_off_gc(name, func, cap, kept, collected):
    """backoff_test.go#TestAlternateBackoffGC, 2 cases: GC follows the same expiry."""
    clock = Clock()
    b = new_back_off(timedelta(seconds=1), timedelta(seconds=cap), clock)
    b.has_expired_func = func
    b.next(name, clock.now())
    clock.advance(kept)
    b.gc()
    assert name in b.per_item_backoff
    clock.advance(collected)
    b.gc()
    assert name not in b.per_item_backoff


@pytest.mark.parametrize("release, ran, reset", [("1.36", 61, False), ("1.36", 601, True), ("1.31", 61, False),
                                                 ("1.31", 601, True)])
def test_the_kubelet_starts_a_back_off_over_after_ten_minutes(release, ran, reset):
    """kubelet.go (v1.32.10 on): HasExpiredFunc is a flat 600 s, so a 30 s cap does not reset after 60 s of quiet.

    Before 1.32 the cap is always 300 s, so client-go's 2 x cap was the same 600 s.
    """
    clock = Clock()
    with release_profile(release):
        b: Backoff = new_container_back_off(clock, timedelta(seconds=30) if release == "1.36" else None)
    b.next("c", clock.now())
    clock.advance(ran)
    b.next("c", clock.now())
    assert (b.get("c") == b.default_duration) is reset


def test_the_capped_back_off_replays_as_the_node_e2e_test_expects():
    """container_restart_test.go "Alternate restart backs off" (30 s cap): delays 0, 10, 20, 30, 30, ... seconds."""
    timeline = run_lifecycle(SCENARIOS / "lifecycle-crash-loop-max.yaml")
    assert [r.back_off for r in timeline.restarts] == [None, 10, 20, 30, 30, 30, 30, 30]
    for before, after in zip(timeline.restarts, timeline.restarts[1:]):  # each waits its back-off after the exit
        assert after.time - (before.time - 1 + 5) >= after.back_off


@pytest.mark.parametrize("args, problem", [
    (["--kubernetes-version", "1.27"], "needs the KubeletCrashLoopBackOffMax feature gate, off here (Kubernetes 1.27"),
    (["--kubernetes-version", "1.36", "--feature-gates", "KubeletCrashLoopBackOffMax=false"],
     "needs the KubeletCrashLoopBackOffMax feature gate, off here (Kubernetes 1.36"),
])
def test_the_setting_is_refused_where_the_gate_is_off(args, problem, capsys):
    """validation.go: with the gate off, CrashLoopBackOff.MaxContainerRestartPeriod must not be set. One line, exit 2."""
    assert main(["run", str(SCENARIOS / "lifecycle-crash-loop-max.yaml"), *args]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("note:")]
    assert len(err) == 1 and problem in err[0]
    assert "node.kubelet.crashLoopBackOff.maxContainerRestartPeriod" in err[0]


@pytest.mark.parametrize("period", ["0s", "301s", "10m"])
def test_the_setting_must_be_from_one_to_300_seconds(period, tmp_path, capsys):
    """validation.go: MaxContainerRestartPeriod between 1 s and 300 s."""
    text = (SCENARIOS / "lifecycle-crash-loop-max.yaml").read_text().replace("maxContainerRestartPeriod: 30s",
                                                                            f"maxContainerRestartPeriod: {period}")
    path = tmp_path / "scenario.yaml"
    path.write_text(text.replace("file: ../pods/", f"file: {EXAMPLES / 'pods'}/"))
    assert main(["run", str(path)]) == 2
    assert "must be from 1s to 300s" in capsys.readouterr().err


# --- the lifecycle examples -------------------------------------------------------------------------------

def test_the_sidecar_runs_to_running_under_136_and_stays_initializing_under_127():
    """SidecarContainers: on 1.36 the app starts beside the sidecar; on 1.27 the sidecar is an init container that runs on."""
    timeline = run_lifecycle(SCENARIOS / "lifecycle-sidecar.yaml")
    assert (timeline.at("api", 30).status, timeline.at("api", 30).phase, timeline.at("api", 30).ready) == \
        ("Running", "Running", "2/2")
    with release_profile("1.27"):
        from mini_kubelet.sim.lifecycle.scenario import load_lifecycle_scenario, read_scenario
        doc, where, base, name = read_scenario(SCENARIOS / "lifecycle-sidecar.yaml")
        doc.pop("kubernetesVersion")
        old = run_lifecycle(load_lifecycle_scenario(doc, where, base, name))
    assert (old.at("api", 30).status, old.at("api", 30).phase, old.at("api", 30).ready) == ("Init:0/1", "Pending", "0/1")
    assert not any(e["reason"] == "Started" and e["container"] == "app" for e in old.events)


def test_the_v127_crash_loop_is_byte_identical(monkeypatch, capsys):
    """The v1.27 crash-loop replay prints what it printed before these changes, text and JSON."""
    monkeypatch.chdir(ROOT)
    assert main(["run", "examples/scenarios/lifecycle-crash-loop.yaml"]) == 0
    assert capsys.readouterr().out == (ROOT / "tests" / "data" / "lifecycle-crash-loop-v1.27.txt").read_text()
    assert main(["run", "examples/scenarios/lifecycle-crash-loop.yaml", "--output", "json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["profile"]["kubernetesVersion"] == "1.27"
    assert hashlib.sha256(out.encode()).hexdigest() == "2625873f4e55ca3c26919fbf30338725e1f93e114a30e8de6162ba7365394446"
    assert features.DEFAULT_FEATURE_GATE.release == "1.27"


# --- termination order with sidecars ----------------------------------------------------------------------

class StopRecorder:
    """A runtime that only records which containers it was asked to stop, in order."""

    def __init__(self):
        self.stopped: list[str] = []

    def stop_container(self, container_id: str, timeout: int) -> None:
        self.stopped.append(container_id)


@pytest.mark.parametrize("release, order", [("1.36", ["app", "web", "proxy", "logs"]),
                                            ("1.27", ["logs", "proxy", "app", "web"])])
def test_sidecars_stop_after_the_main_containers_last_first(release, order):
    """kuberuntime_termination_order.go (v1.32.10; from 1.29, #120620): main containers first, then sidecars in reverse.

    On v1.27 the init containers with restartPolicy are ordinary ones, and every container is stopped as listed.
    """
    from mini_kubelet.container import Container, Pod
    from mini_kubelet.events import Recorder
    from mini_kubelet.kuberuntime.kuberuntime_container import kill_containers_with_sync_result
    pod = V1Pod(metadata=V1ObjectMeta(uid="u", name="p", namespace="n"), spec=V1PodSpec(
        init_containers=[V1Container(name="logs", restart_policy="Always"), V1Container(name="proxy", restart_policy="Always")],
        containers=[V1Container(name="app"), V1Container(name="web")], termination_grace_period_seconds=30))
    running = Pod(id="u", name="p", namespace="n", containers=[
        Container(id=name, name=name, state=CONTAINER_STATE_RUNNING) for name in ("logs", "proxy", "app", "web")])
    runtime = StopRecorder()
    with release_profile(release):
        kill_containers_with_sync_result(runtime, pod, running, None, Recorder(Clock()))
    assert runtime.stopped == order


def test_the_report_names_the_kubelet_setting(capsys):
    """The text and the JSON say which crashLoopBackOff the replayed kubelet ran with (only when the scenario sets it)."""
    assert main(["run", str(SCENARIOS / "lifecycle-crash-loop-max.yaml")]) == 0
    assert "kubelet config: crashLoopBackOff.maxContainerRestartPeriod 30s" in capsys.readouterr().out
    assert main(["run", str(SCENARIOS / "lifecycle-crash-loop-max.yaml"), "--output", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["scenario"]["kubelet"] == {"crashLoopBackOff": {"maxContainerRestartPeriod": 30}}
    assert doc["profile"]["kubernetesVersion"] == "1.36"
