"""Chapter 1: restarting all containers in place (RestartAllContainersOnContainerExits, KEP-5532), behind its gate.

The gate is alpha (off) in 1.35 and beta (on) in 1.36; under v1.27 and 1.35's defaults the same Pod does what it
did before. Ported upstream tables, each naming its source and the copy read:
- pkg/kubelet/status/generate_test.go TestGenerateAllContainersRestartingCondition (6 cases) and
  TestGeneratePodInitializedCondition (11 cases, run with the gate on): read in two copies later than the
  v1.36 feature freeze, one of 22,981 characters and a later one (42,249, with the InsecureUserID tests); the
  two tables are the same. The v1.36.0 tag itself was not at hand.
- test/e2e/node "Pod Extended (RestartAllContainers)", its 5 Its (every named container restarts; the Pod runs
  again), replayed: read in a copy of the same era (package node; its exact file path was not shown).
The rest is derived, and says so: from generate.go (the same late copy: GenerateAllContainersRestartingCondition,
the Initialized condition kept during an in-place restart), kubelet.go (a copy later than v1.36.0: SyncPod reads
the condition, passes restartingAllContainers to the runtime and syncs again after a reset that removed a
container), the prober worker's call of ShouldAllContainersRestart with no runtime status, KEP-5532's "Restart
Phases" (stop and remove every init and regular container, keep the sandbox, run the init containers again).
Not read, so written as the course's model (see the module docstrings): the bodies of ShouldAllContainersRestart,
AllContainersRestartCleanedUp and AllContainersCouldRestart, computePodActions' reset, the status manager letting
the containers of such a Pod leave a terminated state, getPhase counting an exit that triggers the rule as one that
will run again, and the container statuses shown while the reset is done (each removed container waits, its restart
count kept). The restart counts go on from the container's log files, as startContainer counts them when no
instance is left (calcRestartCountByLogDir); the mini kubelet counts them only with this gate on.
Not modelled: lastState after the restart (the e2e test finds a terminated lastState; here it is empty), preStop
hooks, and any back-off between repeated resets.
"""

from __future__ import annotations

import pytest
from kubernetes.client import (
    V1Container, V1ContainerRestartRule, V1ContainerRestartRuleOnExitCodes, V1ContainerState, V1ContainerStateRunning,
    V1ContainerStateTerminated, V1ContainerStateWaiting, V1ContainerStatus, V1ObjectMeta, V1Pod, V1PodCondition,
    V1PodSpec, V1PodStatus,
)

from mini_kubelet import features, kubelet_sync
from mini_kubelet.container import (
    CONTAINER_STATE_EXITED, CONTAINER_STATE_RUNNING, PodStatus, SandboxStatus, Status, all_containers_could_restart,
    all_containers_restart_cleaned_up, should_all_containers_restart,
)
from mini_kubelet.features import release_profile
from mini_kubelet.kuberuntime.kuberuntime_manager import compute_pod_actions
from mini_kubelet.sim.lifecycle.replay import run_lifecycle
from mini_kubelet.sim.lifecycle.scenario import load_lifecycle_scenario, read_scenario
from mini_kubelet.status.generate import (
    generate_all_containers_restarting_condition, generate_pod_initialized_condition,
)
from mini_kubelet.status.status_manager import check_container_state_transition

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch1

SCENARIO = EXAMPLES / "scenarios" / "lifecycle-restart-all.yaml"
RESTART_ALL = V1ContainerRestartRule(action="RestartAllContainers",
                                     exit_codes=V1ContainerRestartRuleOnExitCodes(operator="In", values=[42]))


def condition(c: V1PodCondition) -> tuple:
    return c.type, c.status, c.reason or "", c.message or ""


# --- pkg/kubelet/status/generate.go -----------------------------------------------------------------------

def default_pod() -> V1Pod:
    """generate_test.go's defaultPod: container1, and a trigger (Never) that restarts all on exit code 42."""
    return V1Pod(metadata=V1ObjectMeta(name="p", namespace="n", uid="u"), spec=V1PodSpec(containers=[
        V1Container(name="container1"),
        V1Container(name="trigger", restart_policy="Never", restart_policy_rules=[RESTART_ALL])]))


def runtime(*instances) -> PodStatus:
    return PodStatus(id="u", name="p", namespace="n", container_statuses=[
        Status(id=f"{name}-1", name=name, state=state, exit_code=code) for name, state, code in instances])


RESTARTING = V1PodStatus(conditions=[V1PodCondition(type="AllContainersRestarting", status="True")])
STARTED = ("AllContainersRestarting", "True", "RestartAllContainersStarted", "container exited with restart policy rule")
# generate_test.go#TestGenerateAllContainersRestartingCondition: (name, runtime status, old API status, phase, expected)
ALL_CONTAINERS_RESTARTING = [
    ("pod pending", runtime(), None, "Pending", ("AllContainersRestarting", "False", "", "")),
    ("pod failed", runtime(), None, "Failed", ("AllContainersRestarting", "False", "PodFailed", "")),
    ("pod succeeded", runtime(), None, "Succeeded", ("AllContainersRestarting", "False", "PodCompleted", "")),
    ("container triggers RestartAllContainers rule",
     runtime(("container", CONTAINER_STATE_RUNNING, 0), ("trigger", CONTAINER_STATE_EXITED, 42)), None, "Running",
     STARTED),
    ("container triggres RestartAllContainers rule, cleaning up",
     runtime(("container", CONTAINER_STATE_EXITED, 0), ("trigger", CONTAINER_STATE_EXITED, 42)), RESTARTING, "Running",
     STARTED),
    ("container triggres RestartAllContainers rule, cleaned up", runtime(), RESTARTING, "Pending",
     ("AllContainersRestarting", "False", "", "")),
]


@pytest.mark.parametrize("name, pod_status, old, phase, expected", ALL_CONTAINERS_RESTARTING,
                         ids=[case[0] for case in ALL_CONTAINERS_RESTARTING])
def test_generate_all_containers_restarting_condition(name, pod_status, old, phase, expected):
    """generate_test.go#TestGenerateAllContainersRestartingCondition, 6 cases (gates on, as 1.36 has them)."""
    with release_profile("1.36"):
        assert condition(generate_all_containers_restarting_condition(default_pod(), pod_status, old, phase)) == expected


def status(name, ready=False, started=None, state=None) -> V1ContainerStatus:
    return V1ContainerStatus(name=name, ready=ready, started=started, image="", image_id="", restart_count=0,
                             state=state or V1ContainerState())


ONE = V1PodSpec(init_containers=[V1Container(name="1234")], containers=[V1Container(name="regular")])
TWO = V1PodSpec(init_containers=[V1Container(name="1234"), V1Container(name="5678")], containers=[V1Container(name="regular")])
SIDECAR = V1PodSpec(init_containers=[V1Container(name="1234", restart_policy="Always")], containers=[V1Container(name="regular")])
# generate_test.go#TestGeneratePodInitializedCondition: (spec, statuses, phase, expected status, expected reason)
POD_INITIALIZED = [
    (TWO, None, "Running", "False", "UnknownContainerStatuses"),
    (V1PodSpec(containers=[]), [], "Running", "True", ""),
    (ONE, [], "Running", "False", "ContainersNotInitialized"),
    (TWO, [status("1234", True), status("5678", True)], "Running", "True", ""),
    (TWO, [status("1234", True)], "Running", "False", "ContainersNotInitialized"),
    (TWO, [status("1234", True), status("5678")], "Running", "False", "ContainersNotInitialized"),
    (ONE, [status("1234", True)], "Succeeded", "True", "PodCompleted"),
    (SIDECAR, [status("1234", started=False)], "Pending", "False", "ContainersNotInitialized"),
    (SIDECAR, [status("1234", started=True)], "Running", "True", ""),
    (SIDECAR, [status("1234", started=False), status("regular", state=V1ContainerState(running=V1ContainerStateRunning()))],
     "Running", "True", ""),
    (ONE, [status("1234", state=V1ContainerState(waiting=V1ContainerStateWaiting())),
           status("regular", state=V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=0)))],
     "Running", "True", ""),
]


@pytest.mark.parametrize("spec, statuses, phase, want_status, want_reason", POD_INITIALIZED)
def test_generate_pod_initialized_condition(spec, statuses, phase, want_status, want_reason):
    """generate_test.go#TestGeneratePodInitializedCondition, 11 cases, gates on, an empty old status."""
    with release_profile("1.36"):
        c = generate_pod_initialized_condition(spec, statuses, phase, V1PodStatus())
    assert (c.type, c.status, c.reason or "") == ("Initialized", want_status, want_reason)


@pytest.mark.parametrize("release, expected", [("1.36", ("True", "")), ("1.35", ("False", "ContainersNotInitialized")),
                                               ("1.27", ("False", "ContainersNotInitialized"))])
def test_initialized_stays_true_while_the_init_containers_run_again(release, expected):
    """Derived from generate.go: with the gate on, an old Initialized True is kept when an init container waits again."""
    old = V1PodStatus(conditions=[V1PodCondition(type="Initialized", status="True")])
    with release_profile(release):
        c = generate_pod_initialized_condition(ONE, [status("1234")], "Pending", old)
    assert (c.status, c.reason or "") == expected


# --- pkg/kubelet/container/helpers.go, pkg/api/v1/pod/util.go (derived) --------------------------------------

def test_only_a_pod_with_a_restart_all_rule_could_restart_all():
    """AllContainersCouldRestart (derived): a Restart rule is not enough; an init container's rule counts."""
    restart = V1ContainerRestartRule(action="Restart", exit_codes=RESTART_ALL.exit_codes)
    assert all_containers_could_restart(default_pod().spec)
    assert not all_containers_could_restart(V1PodSpec(containers=[V1Container(name="c", restart_policy="Never",
                                                                              restart_policy_rules=[restart])]))
    assert all_containers_could_restart(V1PodSpec(containers=[V1Container(name="c")], init_containers=[
        V1Container(name="i", restart_policy="Never", restart_policy_rules=[RESTART_ALL])]))


@pytest.mark.parametrize("pod_status, old, expected", [
    (runtime(("trigger", CONTAINER_STATE_EXITED, 42)), None, True),
    (runtime(("trigger", CONTAINER_STATE_EXITED, 1)), None, False),  # no rule matches: the trigger's own Never
    (runtime(("trigger", CONTAINER_STATE_RUNNING, 0)), None, False),
    (runtime(("container1", CONTAINER_STATE_EXITED, 42)), None, False),  # the rule is the trigger's only
    (runtime(), RESTARTING, True),  # the condition already says so
    (None, V1PodStatus(container_statuses=[status("trigger", state=V1ContainerState(
        terminated=V1ContainerStateTerminated(exit_code=42)))]), True),  # no runtime status: the API's states
])
def test_should_all_containers_restart(pod_status, old, expected):
    """ShouldAllContainersRestart (derived from the generate_test table and the prober worker's call)."""
    assert should_all_containers_restart(default_pod(), pod_status, old) is expected


def test_the_reset_is_done_when_the_runtime_holds_no_container():
    """AllContainersRestartCleanedUp (derived): any instance of an init or regular container left means not yet."""
    assert all_containers_restart_cleaned_up(default_pod(), runtime())
    assert not all_containers_restart_cleaned_up(default_pod(), runtime(("trigger", CONTAINER_STATE_EXITED, 42)))


# --- computePodActions, status manager (the course's model) ---------------------------------------------------

def test_the_reset_keeps_the_sandbox_and_starts_nothing():
    """While restarting all containers, every init and regular instance is reset; no sandbox change, no start."""
    pod = default_pod()
    pod.spec.init_containers = [V1Container(name="init")]
    pod_status = runtime(("container1", CONTAINER_STATE_RUNNING, 0), ("trigger", CONTAINER_STATE_EXITED, 42),
                         ("init", CONTAINER_STATE_EXITED, 0))
    pod_status.sandbox_statuses = [SandboxStatus(id="sandboxID", attempt=0, ip="10.0.0.1")]
    with release_profile("1.36"):
        actions = compute_pod_actions(pod, pod_status, restarting_all_containers=True)
        normal = compute_pod_actions(pod, pod_status)
    assert [s.name for s in actions.containers_to_reset] == ["container1", "trigger", "init"]
    assert (actions.kill_pod, actions.create_sandbox, actions.sandbox_id) == (False, False, "sandboxID")
    assert not (actions.containers_to_start or actions.containers_to_kill or actions.next_init_container_to_start)
    assert not normal.containers_to_reset and 1 not in normal.containers_to_start  # the trigger's own Never holds


@pytest.mark.parametrize("release, refused", [("1.36", False), ("1.35", True), ("1.27", True)])
def test_a_terminated_container_may_run_again_only_with_the_gate(release, refused):
    """With the gate on, a container of a Pod that could restart all may leave its terminated state."""
    pod = default_pod()
    pod.spec.restart_policy = "Never"
    before = [status("container1", state=V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=0)))]
    after = [status("container1", state=V1ContainerState(running=V1ContainerStateRunning()))]
    with release_profile(release):
        err = check_container_state_transition(before, after, "Never", pod.spec.containers, False, pod.spec)
    assert (err is not None) is refused


# --- the replay -----------------------------------------------------------------------------------------------

def replay(monkeypatch, release=None):
    """Run the example (under its own 1.36, or release): per second, the conditions and sandboxes SyncPod saw."""
    seen = {}
    original = kubelet_sync.KubeletSyncer.sync_pod

    def sync_pod(self, ctx, update_type, pod, mirror_pod, pod_status):
        api = self.generate_api_pod_status(pod, pod_status, False)
        seen.setdefault(self.clock.now(), ({c.type: c.status for c in api.conditions},
                                           [s.id for s in pod_status.sandbox_statuses]))
        return original(self, ctx, update_type, pod, mirror_pod, pod_status)
    monkeypatch.setattr(kubelet_sync.KubeletSyncer, "sync_pod", sync_pod)
    if release is None:
        timeline = run_lifecycle(SCENARIO)
    else:
        doc, where, base, name = read_scenario(SCENARIO)
        doc.pop("kubernetesVersion")
        with release_profile(release):
            timeline = run_lifecycle(load_lifecycle_scenario(doc, where, base, name))
    start = min(seen)
    return timeline, {int((t - start).total_seconds()): v for t, v in seen.items()}


def test_the_replay_restarts_every_container_in_place(monkeypatch):
    """v1.36: the condition is True at the exit, False after the reset; Initialized stays True; one sandbox throughout."""
    timeline, seen = replay(monkeypatch)
    assert seen[20][0]["AllContainersRestarting"] == "True" and seen[21][0]["AllContainersRestarting"] == "False"
    assert all(conditions["Initialized"] == "True" for t, (conditions, _) in seen.items() if t >= 4)
    assert len({tuple(sandboxes) for t, (_, sandboxes) in seen.items() if t >= 1}) == 1
    assert [(r.container, r.time, r.count) for r in timeline.restarts] == [("fetch", 22, 1), ("logger", 25, 1),
                                                                            ("worker", 25, 1)]
    assert (timeline.at("trainer", 21).phase, timeline.at("trainer", 60).phase) == ("Pending", "Running")
    assert not timeline.kills


@pytest.mark.parametrize("release", ["1.35", "1.27"])
def test_without_the_gate_the_rule_does_nothing(monkeypatch, release):
    """v1.35's defaults (alpha, off) and v1.27: no condition, no reset; the worker stays exited, the logger runs on."""
    timeline, seen = replay(monkeypatch, release)
    assert not any("AllContainersRestarting" in conditions for conditions, _ in seen.values())
    assert not timeline.restarts and not timeline.kills
    line = timeline.at("trainer", 60)
    assert (line.phase, line.status, line.ready) == ("Running", "Error", "1/2")
    assert features.DEFAULT_FEATURE_GATE.release == "1.27"


def test_the_client_takes_the_action_and_the_condition_as_plain_strings():
    """kubernetes 37.0.2: ContainerRestartRule.action and PodCondition.type are free strings (its docs still say
    "Restart" is the only action), so a manifest with RestartAllContainers loads and the condition round-trips."""
    assert V1ContainerRestartRule(action="RestartAllContainers").action == "RestartAllContainers"
    assert V1PodCondition(type="AllContainersRestarting", status="True").to_dict()["type"] == "AllContainersRestarting"


def trigger(name: str) -> dict:
    return {"name": name, "image": f"registry.example.com/{name}:1", "restartPolicy": "Never",
            "restartPolicyRules": [{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]}


def inline(tmp_path, release: str, spec: dict, **rest):
    """A one-pod lifecycle scenario written out and replayed under release."""
    import yaml
    doc = {"replay": "lifecycle", "kubernetesVersion": release, "description": "inline", "duration": "30s",
           "pods": [{"manifest": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"},
                                  "spec": {"restartPolicy": "Never", **spec}}, **rest.pop("pod", {})}], **rest}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return run_lifecycle(path)


@pytest.mark.parametrize("release, phase_at_20, restarts", [("1.36", "Running", [("worker", 12, 1)]),
                                                             ("1.35", "Failed", [])])
def test_a_lone_trigger_restarts_itself_in_place(tmp_path, release, phase_at_20, restarts):
    """A Never pod whose only container exits 42: v1.36 starts it over (it will run again, so the Pod stays Running);
    without the gate the exit ends the Pod. The course's model of getPhase for this (upstream's not read)."""
    timeline = inline(tmp_path, release, {"containers": [trigger("worker")]},
                      events=[{"at": "10s", "crash": {"pod": "p", "container": "worker", "code": 42}}])
    assert [(r.container, r.time, r.count) for r in timeline.restarts] == restarts
    assert timeline.at("p", 20).phase == phase_at_20


def test_an_init_container_trigger_runs_the_init_containers_again(tmp_path):
    """e2e_node "should restart init ... containers on init container exit" (derived): an init container exiting 42
    starts the Pod over; one that exits 42 every time keeps doing so (no back-off: its instances are removed)."""
    timeline = inline(tmp_path, "1.36", {"initContainers": [trigger("source-init")],
                                         "containers": [{"name": "regular", "image": "registry.example.com/r:1"}]},
                      pod={"run": {"source-init": {"after": "3s", "exitCode": 42}}})
    counts = [r.count for r in timeline.restarts if r.container == "source-init"]
    assert counts[:3] == [1, 2, 3] and timeline.at("p", 30).phase == "Pending"
    assert not any(r.container == "regular" for r in timeline.restarts)


def test_after_a_reset_the_kubelet_syncs_again_at_once(monkeypatch):
    """kubelet.go SyncPod (a copy later than v1.36.0): a reset that removed a container asks the pod workers to sync."""
    asked = []

    class Recording(kubelet_sync.UpdatePodOptions):
        def __init__(self, **kw):
            super().__init__(**kw)
            asked.append(kw["pod"].metadata.name)
    monkeypatch.setattr(kubelet_sync, "UpdatePodOptions", Recording)
    run_lifecycle(SCENARIO)
    assert asked == ["trainer"]


def crash(at: str, container: str, code: int) -> dict:
    return {"at": at, "crash" if code else "exit": {"pod": "p", "container": container, "code": code}}


BOX = {"image": "registry.example.com/busybox:1"}
SIDE = {"name": "sidecar", **BOX, "restartPolicy": "Always"}
# test/e2e/node "Pod Extended (RestartAllContainers)" (a copy of the 1.35/1.36 era): (It, spec, run, events,
# the restart count each container shows at the end, the containers that must run then). The shell scripts that
# exit 42 only the first time are scenario events here.
E2E = [
    ("should restart all containers on regular container exit",
     {"initContainers": [{"name": "init", **BOX}, SIDE], "containers": [trigger("source-container"), {"name": "regular", **BOX}]},
     {"init": {"after": "1s", "exitCode": 0}}, [crash("10s", "source-container", 42)],
     {"init": 1, "sidecar": 1, "source-container": 1, "regular": 1}, ["source-container", "regular"]),
    ("should restart all containers on sidecar container exit",
     {"initContainers": [{"name": "init", **BOX}, SIDE, {**trigger("source-sidecar"), "restartPolicy": "Always"}],
      "containers": [{"name": "regular", **BOX}]},
     {"init": {"after": "1s", "exitCode": 0}}, [crash("10s", "source-sidecar", 42)],
     {"init": 1, "sidecar": 1, "source-sidecar": 1, "regular": 1}, ["regular", "source-sidecar"]),
    ("should restart init and sidecar containers on init container exit",
     {"initContainers": [SIDE, {"name": "init", **BOX}, trigger("source-init")], "containers": [{"name": "regular", **BOX}]},
     {"init": {"after": "1s", "exitCode": 0}}, [crash("5s", "source-init", 42), crash("12s", "source-init", 0)],
     {"sidecar": 1, "init": 1, "source-init": 1, "regular": 0}, ["regular"]),
    ("should allow multiple RestartAllContainers actions and not introduce a loop",
     {"containers": [trigger("source-container"), trigger("regular")]}, {}, [crash("10s", "source-container", 42)],
     {"source-container": 1, "regular": 1}, ["source-container", "regular"]),
    ("should restart all containers on a previously restarted regular container exit",
     {"restartPolicy": "Always", "containers": [{**trigger("source-container"), "restartPolicy": "Always"},
                                                {"name": "regular", **BOX}]},
     {}, [crash("5s", "source-container", 1), crash("15s", "source-container", 42)],
     {"source-container": 2, "regular": 1}, ["source-container", "regular"]),
]


@pytest.mark.parametrize("it, spec, run, events, counts, running", E2E, ids=[case[0] for case in E2E])
def test_the_e2e_pods_restart_every_container_once(tmp_path, it, spec, run, events, counts, running):
    """test/e2e/node Pod Extended (RestartAllContainers), 5 Its: each named container restarts (its last count)."""
    timeline = inline(tmp_path, "1.36", spec, events=events, pod={"run": run} if run else {})
    last = {}
    for r in timeline.restarts:
        last[r.container] = r.count
    assert {name: last.get(name, 0) for name in counts} == counts
    line = timeline.at("p", 30)
    assert (line.phase, line.status) == ("Running", "Running")
    assert not timeline.kills
