"""Chapter 1: shortcuts that tell the same story, byte for byte: settled resyncs skipped, a replay that follows changes.

`Kubelet(..., skip_settled_resyncs=True)` re-queues the periodic resync of a pod whose SyncPod would change
nothing (its last sync changed nothing and nothing it reads has changed since) without running SyncPod, and
repeats a crash-looping pod's sync that would refuse the same starts in back-off (its events and its error).
Upstream runs every resync (pkg/kubelet/pod_workers.go completeWork queues one each resync interval); the
option is only a shortcut, so every replay must come out the same with it on and off: statuses, events,
restarts, kills (the `--output json` trace). Likewise the lifecycle replay stores and reads a pod's status
only when something it comes from has changed; read every second instead, each trace is the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_kubelet.cmd import run_lifecycle_report
from mini_kubelet.sim.lifecycle.replay import run_lifecycle
from mini_kubelet.sim.lifecycle.scenario import load_lifecycle_scenario

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch1

LIFECYCLE = sorted((EXAMPLES / "scenarios").glob("lifecycle-*.yaml"))


def _container(name: str, *, liveness: bool = False, readiness: bool = False) -> dict:
    container = {"name": name, "image": "registry.example/app:1",
                 "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}}
    if liveness:
        container["livenessProbe"] = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10}
    if readiness:
        container["readinessProbe"] = {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5}
    return container


def many_pods_scenario(count: int, minutes: int) -> dict:
    """A busy node: steady pods with probes, crash loops, OOM kills, jobs, init containers, deletions, static pods."""
    pods, events = [], []
    for i in range(count):
        name, kind, at = f"pod-{i:03d}", i % 8, i % 40
        spec: dict = {"containers": [_container("app", liveness=kind == 0, readiness=kind in (0, 5))]}
        entry: dict = {"at": f"{at}s"}
        if kind == 1:  # a crash loop
            entry["run"] = {"app": {"after": f"{5 + i % 7}s", "exitCode": 1}}
        elif kind == 2:  # the kernel's OOM killer, every 90 s of running
            entry["run"] = {"app": {"after": "90s", "oomKill": True}}
        elif kind == 3:  # a job that succeeds
            spec["restartPolicy"] = "OnFailure"
            entry["run"] = {"app": {"after": f"{20 + i % 13}s", "exitCode": 0}}
        elif kind == 4:  # a pod that fails once for good
            spec["restartPolicy"] = "Never"
            entry["run"] = {"app": {"after": f"{40 + i % 11}s", "exitCode": 2}}
        elif kind == 5:  # an init container first
            spec["initContainers"] = [_container("setup")]
            entry["run"] = {"setup": {"after": "3s", "exitCode": 0}}
        if kind == 7:
            entry["source"] = "file"
        entry["manifest"] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "busy"},
                             "spec": spec}
        pods.append(entry)
        late = at + 120 + (i * 7) % (minutes * 60 - at - 180)
        if kind == 0:
            events += [{"at": f"{late}s", "probe": {"pod": name, "liveness": "failure", "output": "HTTP 500"}},
                       {"at": f"{late + 30}s", "probe": {"pod": name, "readiness": "failure"}},
                       {"at": f"{late + 50}s", "probe": {"pod": name, "readiness": "success"}}]
        elif kind == 5:
            events.append({"at": f"{late}s", "crash": {"pod": name, "code": 3}})
        elif kind == 6:
            events.append({"at": f"{late}s", "delete": {"pod": name, "gracePeriod": i % 45}})
        elif kind == 7:
            events += [{"at": f"{late}s", "delete": {"pod": name}}, {"at": f"{late + 40}s", "sandboxDies": {"pod": name}}]
    return {"replay": "lifecycle", "duration": f"{minutes}m", "pods": pods, "events": events}


def trace(source, skip: bool) -> str:
    return run_lifecycle_report.render_json(run_lifecycle(source, skip_settled_resyncs=skip))


@pytest.mark.parametrize("path", LIFECYCLE, ids=lambda p: p.stem)
def test_every_lifecycle_example_is_the_same_with_settled_resyncs_skipped(path: Path):
    assert trace(path, True) == trace(path, False)


@pytest.fixture(scope="module")
def busy_node():
    """A busy node and its trace with both shortcuts on, which each test below compares with one of them off.

    Eight minutes of 24 pods: three of each kind, and every crash loop's back-off at its 5-minute cap.
    """
    scenario = load_lifecycle_scenario(many_pods_scenario(24, 8), "busy-node", EXAMPLES / "scenarios", "busy-node")
    return scenario, trace(scenario, True)


def test_a_busy_node_is_the_same_with_settled_resyncs_skipped(busy_node):
    scenario, skipped = busy_node
    full = trace(scenario, False)
    assert skipped == full
    assert '"OOMKilled"' in full and '"BackOff"' in full and '"Killing"' in full and '"Unhealthy"' in full
    assert "back-off 5m0s" in full


def test_settled_resyncs_are_skipped_and_unsettled_ones_are_not():
    """The shortcut is taken for quiet pods (else it proves nothing), never for one with something to do."""
    from mini_kubelet.clock import Clock
    from mini_kubelet.kubelet_main import Kubelet
    from mini_kubelet.sim.lifecycle.api import APIServer

    scenario = load_lifecycle_scenario(many_pods_scenario(8, 5), "busy-node", EXAMPLES / "scenarios", "busy-node")
    kubelet = Kubelet(Clock(), scenario.node, skip_settled_resyncs=True)
    server = APIServer(kubelet)
    kubelet.syncer.mirror_client = server
    steady = next(p.pod for p in scenario.pods if p.pod.metadata.name == "pod-000")
    server.pods[steady.metadata.uid] = steady
    server.send()
    kubelet.send("file", [])
    syncs = []
    real_sync_pod = kubelet.syncer.sync_pod
    kubelet.syncer.sync_pod = lambda *args: syncs.append(kubelet.clock.now()) or real_sync_pod(*args)
    for _ in range(300):
        kubelet.clock.advance(1)
        kubelet.step()
    uid = steady.metadata.uid
    assert kubelet.pod_status(steady).phase == "Running" and uid in kubelet.syncer.settled
    settled_at = len(syncs)
    assert settled_at < 10  # the start-up syncs, then none: 4 minutes of resyncs were settled
    assert kubelet.work_queue.queue[uid] > kubelet.clock.now()  # the next resync is queued all the same
    container = next(c for c in kubelet.runtime.containers.values() if c.pod_uid == uid)
    kubelet.syncer.readiness[container.id] = "Failure"  # a new input: the next resync runs SyncPod
    for _ in range(61):
        kubelet.clock.advance(1)
        kubelet.step()
    assert len(syncs) == settled_at + 1
    assert next(c.status for c in kubelet.pod_status(steady).conditions if c.type == "Ready") == "False"


def test_a_crash_loops_back_off_syncs_are_repeated_until_the_back_off_ends(monkeypatch):
    """The repeat is taken (else the equal traces above prove nothing), and never where SyncPod would start the container."""
    from mini_kubelet import kubelet_sync

    repeated, started = [], []
    real_repeat = kubelet_sync.KubeletSyncer._repeat_back_off

    def repeat(self, pod, mirror_pod, pod_status):
        err = real_repeat(self, pod, mirror_pod, pod_status)
        if err is not None:
            repeated.append((self.clock.now(), err))
        return err
    monkeypatch.setattr(kubelet_sync.KubeletSyncer, "_repeat_back_off", repeat)
    real_start = kubelet_sync.sync_pod

    def sync_pod(runtime, pod, *args, **kwargs):
        result = real_start(runtime, pod, *args, **kwargs)
        started.extend(r.target for r in result.sync_results if r.action == kubelet_sync.START_CONTAINER and not r.error)
        return result
    monkeypatch.setattr(kubelet_sync, "sync_pod", sync_pod)
    timeline = run_lifecycle(EXAMPLES / "scenarios" / "lifecycle-crash-loop.yaml", skip_settled_resyncs=True)
    assert len(repeated) >= 20 and all('with CrashLoopBackOff: "back-off ' in err for _, err in repeated)
    assert len(started) >= 4  # the restarts still happen, each when its back-off ends
    assert run_lifecycle_report.render_json(timeline) == trace(EXAMPLES / "scenarios" / "lifecycle-crash-loop.yaml", False)


@pytest.fixture
def every_pod_every_second(monkeypatch):
    """The replay reading every pod's status every second, as it did before it followed changes."""
    from mini_kubelet.sim.lifecycle import replay as lifecycle_replay
    monkeypatch.setattr(lifecycle_replay._StatusWriter, "change_driven", False)
    monkeypatch.setattr(lifecycle_replay._Recorder, "change_driven", False)


@pytest.mark.parametrize("path", LIFECYCLE, ids=lambda p: p.stem)
def test_following_changes_gives_each_example_the_same_trace(path: Path, request):
    change_driven = trace(path, False)
    request.getfixturevalue("every_pod_every_second")
    assert trace(path, False) == change_driven


def test_following_changes_gives_a_busy_node_the_same_trace(busy_node, every_pod_every_second):
    scenario, change_driven = busy_node
    assert trace(scenario, True) == change_driven


def test_a_relist_of_an_unchanged_runtime_lists_nothing_yet_moves_the_cache_on():
    """pleg/generic.go Relist always ends with cache.UpdateTime (what a worker in GetNewerThan waits for);
    with the runtime's change counter where the last relist left it, that is all a relist does."""
    from kubernetes.client import V1ObjectMeta, V1Pod, V1PodSpec

    from mini_kubelet.clock import Clock
    from mini_kubelet.container_cache import Cache
    from mini_kubelet.cri import RuntimeService
    from mini_kubelet.pleg import CONTAINER_DIED, CONTAINER_STARTED, GenericPLEG

    clock, cache = Clock(), Cache()
    runtime, listings = RuntimeService(clock), []
    pleg = GenericPLEG(lambda: listings.append(clock.now()) or runtime.get_pods(), clock,
                       get_pod_status=runtime.get_pod_status, cache=cache, generation=lambda: runtime.generation)
    pod = V1Pod(metadata=V1ObjectMeta(uid="uid-1", name="web", namespace="shop"), spec=V1PodSpec(containers=[]))
    sandbox = runtime.run_pod_sandbox(pod, 0)
    pleg.relist()
    assert [e.type for e in pleg.event_channel] == [CONTAINER_STARTED] and len(listings) == 1
    pleg.event_channel.clear()
    clock.advance(1)
    woken = []
    cache.subscribe("uid-1", clock.now(), woken.append)  # waits for something newer than now
    clock.advance(1)
    pleg.relist()
    assert len(listings) == 1 and not pleg.event_channel  # nothing listed, nothing compared, no event
    assert len(woken) == 1 and cache.timestamp == clock.now() and pleg.relist_time == clock.now()
    runtime.stop_pod_sandbox(sandbox)
    clock.advance(1)
    pleg.relist()
    assert len(listings) == 2 and [e.type for e in pleg.event_channel] == [CONTAINER_DIED]


def test_housekeeping_left_out_would_have_done_nothing(monkeypatch):
    """Housekeeping with no orphan (a worker, status or runtime pod no desired pod accounts for) and no restart
    asked for is not run (Kubelet.has_pods_to_clean_up): run each time anyway, HandlePodCleanups changes nothing."""
    from mini_kubelet.kubelet_main import Kubelet

    answers = []
    has_pods_to_clean_up = Kubelet.has_pods_to_clean_up

    def checked(kubelet):
        found = has_pods_to_clean_up(kubelet)
        answers.append(found)
        if not found:
            before = (kubelet._housekeeping_inputs(), set(kubelet.pod_workers.pod_updates.notified))
            kubelet.handle_pod_cleanups()
            assert (kubelet._housekeeping_inputs(), set(kubelet.pod_workers.pod_updates.notified)) == before
        return found
    monkeypatch.setattr(Kubelet, "has_pods_to_clean_up", checked)
    scenario = load_lifecycle_scenario(many_pods_scenario(16, 6), "busy-node", EXAMPLES / "scenarios", "busy-node")
    run_lifecycle(scenario, skip_settled_resyncs=True)
    assert answers.count(False) > 20 and answers.count(True) > 5  # both, with deletions and static pods among them
