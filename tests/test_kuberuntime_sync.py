"""Chapter 1: SyncPod against the simulated runtime, and the crash-loop back-off it applies.

The first tests follow pkg/kubelet/kuberuntime/kuberuntime_manager_test.go (TestSyncPod,
TestSyncPodWithInitContainers, TestKillPod, TestPruneInitContainers, TestSyncPodWithSandboxAndDeletedPod)
with the simulated runtime in place of the CRI fake runtime service.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from kubernetes.client import V1Container, V1ObjectMeta, V1Pod, V1PodSpec, V1Probe

from mini_kubelet import container as kc, features
from mini_kubelet.clock import Clock
from mini_kubelet.cri import FakeContainer, RuntimeService
from mini_kubelet.events import Recorder
from mini_kubelet.flowcontrol import new_back_off, new_container_back_off
from mini_kubelet.kuberuntime.kuberuntime_container import kill_container, prune_init_containers_before_start
from mini_kubelet.kuberuntime.kuberuntime_manager import kill_pod_with_sync_result, sync_pod

pytestmark = pytest.mark.ch1


def make_pod(containers, init_containers=None, policy=None):
    return V1Pod(metadata=V1ObjectMeta(uid="12345678", name="foo", namespace="new"),
                 spec=V1PodSpec(containers=[V1Container(name=n, image=i) for n, i in containers],
                                init_containers=[V1Container(name=n, image=i) for n, i in init_containers or []] or None,
                                restart_policy=policy))


def records(runtime):
    """kuberuntime_manager_test.go verifyContainerStatuses: (name, attempt, state), sorted."""
    return sorted((c.name, c.restart_count, c.state) for c in runtime.containers.values())


@pytest.fixture
def env():
    clock = Clock()
    return clock, RuntimeService(clock), Recorder(clock)


def test_sync_pod(env):
    """kuberuntime_manager_test.go#TestSyncPod: a new pod gets one ready sandbox and two running containers."""
    clock, runtime, recorder = env
    pod = make_pod([("foo1", "busybox"), ("foo2", "alpine")])
    result = sync_pod(runtime, pod, kc.PodStatus(id="", name="", namespace=""), new_back_off(timedelta(seconds=1), timedelta(minutes=1), clock), recorder)
    assert result.error() is None
    assert len(runtime.containers) == 2 and len(runtime.sandboxes) == 1
    assert all(s.state == kc.SANDBOX_READY for s in runtime.sandboxes.values())
    assert all(c.state == kc.CONTAINER_STATE_RUNNING for c in runtime.containers.values())
    assert [(e.reason, e.message) for e in recorder.events] == [
        ("Created", "Created container foo1"), ("Started", "Started container foo1"),
        ("Created", "Created container foo2"), ("Started", "Started container foo2")]
    # a new pod counts as "sandbox changed", so KillPod runs first (with nothing to stop)
    assert [r.action for r in result.sync_results] == [
        "KillPodSandbox", "CreatePodSandbox", "ConfigPodSandbox", "StartContainer", "StartContainer"]


def test_sync_pod_with_init_containers(env):
    """kuberuntime_manager_test.go#TestSyncPodWithInitContainers, its four steps."""
    clock, runtime, recorder = env
    pod = make_pod([("foo1", "busybox"), ("foo2", "alpine")], init_containers=[("init1", "init")])
    back_off = new_back_off(timedelta(seconds=1), timedelta(minutes=1), clock)
    status = lambda: runtime.get_pod_status(pod.metadata.uid, "foo", "new")  # noqa: E731

    assert sync_pod(runtime, pod, status(), back_off, recorder).error() is None
    assert records(runtime) == [("init1", 0, "running")], "start only the init container"

    assert sync_pod(runtime, pod, status(), back_off, recorder).error() is None
    assert records(runtime) == [("init1", 0, "running")], "init container still running; do nothing"

    runtime.exit_container(pod.metadata.uid, "init1", 0)
    assert sync_pod(runtime, pod, status(), back_off, recorder).error() is None
    assert records(runtime) == [("foo1", 0, "running"), ("foo2", 0, "running"), ("init1", 0, "exited")]

    runtime.kill_sandbox(pod.metadata.uid)
    assert sync_pod(runtime, pod, status(), back_off, recorder).error() is None
    # the old init instance is purged, a new one (attempt 1) runs, the app containers were killed
    assert records(runtime) == [("foo1", 0, "exited"), ("foo2", 0, "exited"), ("init1", 1, "running")]
    assert any(e.reason == "SandboxChanged" for e in recorder.events)


def test_kill_pod(env):
    """kuberuntime_manager_test.go#TestKillPod: every container exited, the sandbox NOTREADY, nothing removed."""
    clock, runtime, recorder = env
    pod = make_pod([("foo1", "busybox"), ("foo2", "busybox")])
    sync_pod(runtime, pod, kc.PodStatus(id="", name="", namespace=""), new_container_back_off(clock), recorder)
    running = kc.convert_pod_status_to_running_pod(runtime.get_pod_status(pod.metadata.uid))
    assert kill_pod_with_sync_result(runtime, pod, running, None, recorder).error() is None
    assert len(runtime.containers) == 2 and len(runtime.sandboxes) == 1
    assert all(s.state == kc.SANDBOX_NOTREADY for s in runtime.sandboxes.values())
    assert all(c.state == kc.CONTAINER_STATE_EXITED for c in runtime.containers.values())


def test_prune_init_containers(env):
    """kuberuntime_manager_test.go#TestPruneInitContainers: only the newest exited instance of each init container stays."""
    clock, runtime, _ = env
    pod = V1Pod(metadata=V1ObjectMeta(uid="12345678", name="foo", namespace="new"),
                spec=V1PodSpec(containers=[], init_containers=[V1Container(name="init1"), V1Container(name="init2")]))
    templates = [("init1", 3, 3, "exited"), ("init1", 2, 2, "exited"), ("init2", 1, 1, "exited"),
                 ("init1", 1, 1, "unknown"), ("init2", 0, 0, "exited"), ("init1", 0, 0, "exited")]
    for i, (name, attempt, created, state) in enumerate(templates):
        runtime.containers[f"ct-{i}"] = FakeContainer(f"ct-{i}", "sb", pod.metadata.uid, name, "busybox", 0, attempt,
                                                      clock.start + timedelta(seconds=created), state=state)
    prune_init_containers_before_start(runtime, pod, runtime.get_pod_status(pod.metadata.uid))
    assert sorted(runtime.containers) == ["ct-0", "ct-2"]


def test_sync_pod_with_sandbox_and_deleted_pod(env):
    """kuberuntime_manager_test.go#TestSyncPodWithSandboxAndDeletedPod: a failed sandbox is no error once the pod is being deleted."""
    clock, runtime, recorder = env
    pod = make_pod([("foo1", "busybox")])
    runtime.inject_error("RunPodSandbox", "sandbox create failed")
    result = sync_pod(runtime, pod, runtime.get_pod_status(pod.metadata.uid), new_container_back_off(clock), recorder,
                      termination_requested=True)
    assert result.error() is None


def test_sandbox_creation_failure_is_an_error_and_an_event(env):
    """A sandbox that cannot be created fails the sync with CreatePodSandboxError and a FailedCreatePodSandBox event."""
    clock, runtime, recorder = env
    pod = make_pod([("foo1", "busybox")])
    runtime.inject_error("RunPodSandbox", "cni not ready")
    result = sync_pod(runtime, pod, runtime.get_pod_status(pod.metadata.uid), new_container_back_off(clock), recorder)
    assert result.error() == ('failed to "CreatePodSandbox" for "foo_new(12345678)" with CreatePodSandboxError: '
                              '"Failed to create sandbox for pod "foo_new(12345678)": cni not ready"')
    assert [(e.type, e.reason, e.message) for e in recorder.events] == [
        ("Warning", "FailedCreatePodSandBox", "Failed to create pod sandbox: cni not ready")]


def crash_loop(clock, runtime, recorder, back_off, pod, seconds):
    """Sync every second for the given time; the container crashes each time it has run 1 s. The restart times."""
    starts = []
    for _ in range(seconds):
        status = runtime.get_pod_status(pod.metadata.uid)
        result = sync_pod(runtime, pod, status, back_off, recorder)
        if any(r.action == "StartContainer" and r.error is None for r in result.sync_results):
            starts.append(int(clock.elapsed().total_seconds()))
        clock.advance(1)
        for c in list(runtime.containers.values()):
            if c.state == kc.CONTAINER_STATE_RUNNING and clock.now() - c.started_at >= timedelta(seconds=1):
                runtime.crash_container(pod.metadata.uid, c.name, 1)
    return starts, result


def test_crash_loop_back_off_through_sync_pod(env):
    """Restarts wait 10, 20, 40, 80 s after each crash, and the refusal is CrashLoopBackOff with upstream's message."""
    clock, runtime, recorder = env
    pod = make_pod([("app", "busybox")], policy="Always")
    starts, _ = crash_loop(clock, runtime, recorder, new_container_back_off(clock), pod, 160)
    gaps = [b - a - 1 for a, b in zip(starts, starts[1:])]  # each run lasts 1 s, then it crashes
    assert gaps == [0, 10, 20, 40, 80]
    status = runtime.get_pod_status(pod.metadata.uid)
    result = sync_pod(runtime, pod, status, new_container_back_off(clock), recorder)  # a fresh back-off: Next, then start
    assert result.error() is None


def test_crash_loop_back_off_message(env):
    """doBackOff's refusal: reason CrashLoopBackOff, message "back-off 40s restarting failed container=NAME pod=NAME_NS(UID)"."""
    clock, runtime, recorder = env
    pod = make_pod([("app", "busybox")], policy="Always")
    back_off = new_container_back_off(clock)
    crash_loop(clock, runtime, recorder, back_off, pod, 36)  # the third crash was at 33 s; back-off now 40 s
    result = sync_pod(runtime, pod, runtime.get_pod_status(pod.metadata.uid), back_off, recorder)
    failed = [r for r in result.sync_results if r.error]
    assert [(r.action, r.target, r.error, r.message) for r in failed] == [
        ("StartContainer", "app", "CrashLoopBackOff", "back-off 40s restarting failed container=app pod=foo_new(12345678)")]
    assert recorder.events[-1].reason == "BackOff"
    assert recorder.events[-1].message == "Back-off restarting failed container app in pod foo_new(12345678)"


def test_never_policy_pod_is_not_restarted_and_its_sandbox_is_stopped(env):
    """restartPolicy Never: the exited container stays down, and with nothing left to run the sandbox is stopped."""
    clock, runtime, recorder = env
    pod = make_pod([("app", "busybox")], policy="Never")
    sync_pod(runtime, pod, runtime.get_pod_status(pod.metadata.uid), new_container_back_off(clock), recorder)
    runtime.exit_container(pod.metadata.uid, "app", 1)
    sync_pod(runtime, pod, runtime.get_pod_status(pod.metadata.uid), new_container_back_off(clock), recorder)
    assert records(runtime) == [("app", 0, "exited")]
    assert [s.state for s in runtime.sandboxes.values()] == [kc.SANDBOX_NOTREADY]
    result = sync_pod(runtime, pod, runtime.get_pod_status(pod.metadata.uid), new_container_back_off(clock), recorder)
    assert not any(r.action == "CreatePodSandbox" for r in result.sync_results), "no new sandbox for a pod that ran under Never"


def test_restart_count_goes_up_by_one_per_restart(env):
    """startContainer: a new instance's restart count is the previous instance's plus one."""
    clock, runtime, recorder = env
    pod = make_pod([("app", "busybox")], policy="OnFailure")
    back_off = new_container_back_off(clock)
    for _ in range(3):
        sync_pod(runtime, pod, runtime.get_pod_status(pod.metadata.uid), back_off, recorder)
        runtime.oom_kill_container(pod.metadata.uid, "app")
        clock.advance(600)
    assert [s.restart_count for s in runtime.get_pod_status(pod.metadata.uid).container_statuses] == [2, 1, 0]


@pytest.mark.parametrize("deletion, pod_grace, probe_grace, reason, override, expected", [
    (None, 30, None, "Unknown", None, 30),  # the pod's terminationGracePeriodSeconds
    (5, 30, None, "Unknown", None, 5),  # a deletion's grace period wins
    (None, 30, 7, "LivenessProbe", None, 7),  # a liveness kill uses the probe's own period
    (None, 30, 7, "Unknown", None, 30),  # ... but only for a liveness kill
    (None, 1, None, "Unknown", None, 2),  # never below minimumGracePeriodInSeconds = 2
    (None, 30, None, "Unknown", 1, 1),  # an override (from the pod worker) is applied after that floor
    (None, None, None, "Unknown", None, 2),  # nothing set: 2
])
def test_kill_container_grace_period(env, deletion, pod_grace, probe_grace, reason, override, expected):
    """kuberuntime_container.go setTerminationGracePeriod and killContainer: which grace period a stop gets (derived from the code)."""
    clock, runtime, recorder = env
    pod = make_pod([("app", "busybox")])
    pod.metadata.deletion_grace_period_seconds = deletion
    pod.spec.termination_grace_period_seconds = pod_grace
    pod.spec.containers[0].liveness_probe = V1Probe(termination_grace_period_seconds=probe_grace)
    sync_pod(runtime, pod, runtime.get_pod_status(pod.metadata.uid), new_container_back_off(clock), recorder)
    cid = runtime.running_container(pod.metadata.uid, "app").id
    assert kill_container(runtime, pod, cid, "app", "", reason, override, recorder) == expected
    assert recorder.events[-1].reason == "Killing" and recorder.events[-1].message == "Stopping container app"


def test_liveness_failure_restarts_the_container_with_a_killing_event(env):
    """A failed liveness probe: SyncPod stops the container ("failed liveness probe, will be restarted") and starts a new one."""
    clock, runtime, recorder = env
    pod = make_pod([("app", "busybox")], policy="Always")
    sync_pod(runtime, pod, runtime.get_pod_status(pod.metadata.uid), new_container_back_off(clock), recorder)
    first = runtime.running_container(pod.metadata.uid, "app").id
    sync_pod(runtime, pod, runtime.get_pod_status(pod.metadata.uid), new_container_back_off(clock), recorder,
             liveness={first: "Failure"})
    assert records(runtime) == [("app", 0, "exited"), ("app", 1, "running")]
    assert [e.message for e in recorder.events if e.reason == "Killing"] == [
        "Container app failed liveness probe, will be restarted"]


# --- the preStop hook and the grace period override (kuberuntime_container.go killContainer) -------------

def _hooked(runtime, env_clock, recorder, runs, *, deletion=None, pod_grace=30, handler="exec"):
    """A running pod whose container has a preStop hook that runs `runs` seconds."""
    from kubernetes.client import V1ExecAction, V1HTTPGetAction, V1Lifecycle, V1LifecycleHandler
    pod = make_pod([("app", "busybox")])
    pod.metadata.deletion_grace_period_seconds = deletion
    pod.spec.termination_grace_period_seconds = pod_grace
    hook = (V1LifecycleHandler(_exec=V1ExecAction(command=["PreStopCMD"])) if handler == "exec" else
            V1LifecycleHandler(http_get=V1HTTPGetAction(host="testHost.com", path="/GracefulExit", port=80)))
    pod.spec.containers[0].lifecycle = V1Lifecycle(pre_stop=hook)
    sync_pod(runtime, pod, runtime.get_pod_status(pod.metadata.uid), new_container_back_off(env_clock), recorder)
    runtime.hook_durations[(pod.metadata.uid, "app")] = runs
    return pod, runtime.running_container(pod.metadata.uid, "app").id


@pytest.mark.parametrize("release, override, runs, waited, expected", [
    # v1.27.7: the hook waits at most the container's own period; the override then replaces what is left
    ("1.27", 30, 60, 30, 30),  # a terminating Pod, a hook longer than its 30 s: 30 s of hook, then 30 s again
    ("1.27", 30, 10, 10, 30),  # a short hook: the stop still gets the full 30 s
    ("1.27", 5, 60, 30, 5),  # a smaller override does not shorten the wait for the hook
    ("1.27", None, 10, 10, 20),  # a kill during a sync (no override): what is left of 30
    ("1.27", None, 60, 30, 2),  # nothing left: the 2-second floor
    ("1.27", 1, 0, 0, 1),  # the override comes after the floor: 1
    # 1.28+ (#115835; read at v1.28.6 and v1.32.10): the override first, so it bounds the hook; the floor last
    ("1.36", 30, 60, 30, 2),  # SIGKILL 32 s after the kill began, not 60
    ("1.36", 30, 10, 10, 20),
    ("1.36", 5, 60, 5, 2),  # the override bounds the hook
    ("1.36", None, 10, 10, 20),
    ("1.36", None, 60, 30, 2),
    ("1.36", 1, 0, 0, 2),  # the floor now applies to an override too
])
def test_kill_container_with_a_pre_stop_hook(env, release, override, runs, waited, expected):
    """kuberuntime_container.go killContainer and executePreStopHook (v1.27.7, and v1.28.6 after #115835): the
    seconds waited for the hook and StopContainer's grace period (derived from the code: no upstream unit test
    times the hook)."""
    clock, runtime, recorder = env
    pod, cid = _hooked(runtime, clock, recorder, runs)
    with features.release_profile(release):
        assert kill_container(runtime, pod, cid, "app", "", "Unknown", override, recorder) == expected
    stop = runtime.stops[-1]
    assert (stop.name, stop.grace_period, stop.pre_stop) == ("app", expected, (waited, runs))


@pytest.mark.parametrize("release", ["1.27", "1.36"])
@pytest.mark.parametrize("handler", ["exec", "httpGet"])
def test_life_cycle_hook_pre_stop_runs(env, release, handler):
    """kuberuntime_container_test.go#TestLifeCycleHook, PreStop-CMDExec and PreStop-HTTPGet (read in a stored copy
    of v1.29 or later, where killContainer also takes the termination ordering): with a grace period of 30 the
    hook runs."""
    clock, runtime, recorder = env
    pod, cid = _hooked(runtime, clock, recorder, 0, handler=handler)
    with features.release_profile(release):
        kill_container(runtime, pod, cid, "app", "testKill", "", 30, recorder)
    assert runtime.stops[-1].pre_stop == (0, 0)


@pytest.mark.parametrize("release", ["1.27", "1.36"])
def test_life_cycle_hook_pre_stop_no_time_to_run(env, release):
    """kuberuntime_container_test.go#TestLifeCycleHook, PreStop-NoTimeToRun (same copy): deletion, Pod and override
    grace periods all 0, so the hook is not run."""
    clock, runtime, recorder = env
    pod, cid = _hooked(runtime, clock, recorder, 60, deletion=0, pod_grace=0)
    with features.release_profile(release):
        kill_container(runtime, pod, cid, "app", "testKill", "", 0, recorder)
    assert runtime.stops[-1].pre_stop is None


SHORT, MEDIUM, LONG = 10, 30, 60


@pytest.mark.parametrize("name, pod_grace, startup, liveness, reason, expected", [
    ("default termination grace period", None, None, None, "Unknown", 2),
    ("use pod termination grace period", LONG, None, None, "Unknown", LONG),
    ("liveness probe overrides pod termination grace period", LONG, None, SHORT, "LivenessProbe", SHORT),
    ("startup probe overrides pod termination grace period", LONG, SHORT, None, "StartupProbe", SHORT),
    ("startup probe overrides pod termination grace period, probe period > pod period", SHORT, LONG, None,
     "StartupProbe", LONG),
    ("liveness probe overrides pod termination grace period, probe period > pod period", SHORT, None, LONG,
     "LivenessProbe", LONG),
    ("non-liveness probe failure, use pod termination grace period", LONG, None, SHORT, "Unknown", LONG),
    ("non-startup probe failure, use pod termination grace period", LONG, SHORT, None, "Unknown", LONG),
    ("all three grace periods set, use pod termination grace period", LONG, SHORT, MEDIUM, "Unknown", LONG),
    ("all three grace periods set, use startup termination grace period", LONG, SHORT, MEDIUM, "StartupProbe", SHORT),
    ("all three grace periods set, use liveness termination grace period", LONG, SHORT, MEDIUM, "LivenessProbe", MEDIUM),
])
def test_kill_container_grace_period_table(name, pod_grace, startup, liveness, reason, expected):
    """kuberuntime_container_test.go#TestKillContainerGracePeriod (11 cases, the same stored copy; the function it
    tests, setTerminationGracePeriod, is the same in v1.27.7)."""
    from mini_kubelet.kuberuntime.kuberuntime_container import set_termination_grace_period
    c = V1Container(name="foo", startup_probe=V1Probe(termination_grace_period_seconds=startup) if startup else None,
                    liveness_probe=V1Probe(termination_grace_period_seconds=liveness) if liveness else None)
    pod = V1Pod(metadata=V1ObjectMeta(), spec=V1PodSpec(containers=[c], termination_grace_period_seconds=pod_grace))
    assert set_termination_grace_period(pod, c, reason) == expected
