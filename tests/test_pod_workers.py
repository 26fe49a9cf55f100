"""Chapter 1: the pod workers' state machine, one serialised worker per UID on the virtual clock.

Ported from pkg/kubelet/pod_workers_test.go (read at an upstream revision later than v1.27; where its
answers differ from v1.27's code, the v1.27 answer is asserted and the case says so): TestUpdatePod,
TestUpdatePodForRuntimePod, TestUpdatePodForTerminatedRuntimePod, TestUpdatePodDoesNotForgetSyncPodKill,
TestTerminalPhaseTransition, TestStaticPodExclusion, TestSyncKnownPods, Test_removeTerminatedWorker,
TestKillPodNowFunc, Test_allowPodStart, Test_calculateEffectiveGracePeriod. The Go tests run goroutines and
wait for them (drainAllWorkers); here run_pending() runs the workers, and a PLEG relist is stood in for by
the pod cache's update_time. Not ported: TestUpdatePodParallel (concurrent UpdatePod calls) and
TestFakePodWorkers (it checks upstream's test double against the real workers).
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from kubernetes.client import V1ObjectMeta, V1Pod, V1PodSpec, V1PodStatus

from mini_kubelet import container, types
from mini_kubelet.clock import Clock
from mini_kubelet.container_cache import Cache
from mini_kubelet.pod_workers import (ContextCanceled, KillPodOptions, PodSyncStatus, PodWorkers, PodWorkerState,
                                      PodWorkerSync, UpdatePodOptions,
                                      calculate_effective_grace_period, kill_pod_now)
from mini_kubelet.types import SyncPodType
from mini_kubelet.work_queue import BasicWorkQueue

pytestmark = pytest.mark.ch1
T0 = datetime(2023, 1, 1, tzinfo=timezone.utc)


def new_named_pod(uid, namespace, name, is_static=False, grace=None):
    """pod_workers_test.go newNamedPod (newStaticPod: is_static)."""
    annotations = {types.CONFIG_SOURCE_ANNOTATION_KEY: "file"} if is_static else None
    return V1Pod(metadata=V1ObjectMeta(uid=uid, namespace=namespace, name=name, annotations=annotations),
                 spec=V1PodSpec(containers=[], termination_grace_period_seconds=grace), status=V1PodStatus())


class Recorder:
    """The fake podSyncer of pod_workers_test.go: records each call as (uid, step, update type, grace)."""

    def __init__(self, terminal=()):
        self.calls, self.terminal = [], set(terminal)

    def sync_pod(self, ctx, update_type, pod, mirror_pod, status):
        self.calls.append((pod.metadata.uid, "sync", update_type, None))
        return pod.metadata.uid in self.terminal

    def sync_terminating_pod(self, ctx, pod, status, grace_period, status_fn):
        self.calls.append((pod.metadata.uid, "terminating", None, grace_period))

    def sync_terminating_runtime_pod(self, ctx, running_pod):
        self.calls.append((running_pod.id, "terminating-runtime", None, None))

    def sync_terminated_pod(self, ctx, pod, status):
        self.calls.append((pod.metadata.uid, "terminated", None, None))


def create_pod_workers(terminal=()):
    """pod_workers_test.go createPodWorkers, on the virtual clock."""
    clock = Clock(T0)
    cache, syncer = Cache(), Recorder(terminal)
    workers = PodWorkers(syncer, BasicWorkQueue(clock), cache, clock)
    return workers, syncer, cache, clock


def drain(workers, cache, clock, relists=5):
    """drainAllWorkers: run the workers, with a PLEG relist (a fresh cache timestamp) each second."""
    for _ in range(relists):
        cache.update_time(clock.now())
        workers.run_pending()
        clock.advance(1)


def steps(syncer, uid):
    return [(step, kind) for u, step, kind, _ in syncer.calls if u == uid]


def view(status):
    """The podSyncStatus fields TestUpdatePod compares (times as set or not: upstream's come from its
    tick-per-call harness)."""
    if status is None:
        return None
    def options(o):
        if o is None:
            return None
        kill = o.kill_pod_options
        return {"type": o.update_type, "pod": o.pod.metadata.name if o.pod else None,
                "labels": o.pod.metadata.labels if o.pod else None, "running": o.running_pod is not None,
                "kill": (kill.pod_termination_grace_period_seconds_override, kill.evict) if kill else None}
    return {"fullname": status.fullname, "started": status.is_started(), "terminating": status.is_termination_requested(),
            "terminated": status.is_terminated(), "grace": status.grace_period, "started_terminating":
            status.started_terminating, "restart_requested": status.restart_requested, "finished": status.finished,
            "deleted": status.deleted, "evicted": status.evicted, "observed_runtime": status.observed_runtime,
            "working": status.working, "active": options(status.active_update), "pending": options(status.pending_update)}


def expected(fullname="running-pod_ns", *, started=True, terminating=False, terminated=False, grace=0,
             started_terminating=False, restart_requested=False, finished=False, deleted=False, evicted=False,
             observed_runtime=False, working=False, active=None, pending=None):
    return {"fullname": fullname, "started": started, "terminating": terminating, "terminated": terminated,
            "grace": grace, "started_terminating": started_terminating, "restart_requested": restart_requested,
            "finished": finished, "deleted": deleted, "evicted": evicted, "observed_runtime": observed_runtime,
            "working": working, "active": active, "pending": pending}


def opts(pod="running-pod", kill=None, type_=SyncPodType.SYNC, labels=None, running=False):
    return {"type": type_, "pod": pod, "labels": labels, "running": running, "kill": kill}


def deleted_pod(grace):
    pod = new_named_pod("1", "ns", "running-pod", grace=30)
    pod.metadata.deletion_timestamp, pod.metadata.deletion_grace_period_seconds = T0, grace
    return pod


def done_pod():
    pod = new_named_pod("1", "ns", "done-pod", grace=30)
    pod.status.phase = "Succeeded"
    return pod


RUNNING_POD = container.Pod(id="1", name="orphaned-pod", namespace="ns")
RUNNING = lambda: new_named_pod("1", "ns", "running-pod", grace=30)  # noqa: E731  (newNamedPod: 30 s grace)

UPDATE_POD = [  # (name, prepare, update, cached runtime status, expect before the worker runs, expect, known terminated)
    ("a new pod is recorded and started", [], UpdatePodOptions(SyncPodType.CREATE, pod=RUNNING()), None, None,
     expected(active=opts()), False),
    ("a new pod is recorded and started unless it is a duplicate of an existing terminating pod UID",
     [UpdatePodOptions(SyncPodType.CREATE, pod=RUNNING()), "run", UpdatePodOptions(SyncPodType.KILL, pod=RUNNING())],
     UpdatePodOptions(SyncPodType.CREATE, pod=RUNNING()), None, None,
     expected(terminating=True, terminated=True, grace=30, started_terminating=True, restart_requested=True,
              finished=True, active=opts(kill=(30, False))), True),
    ("a new pod is recorded and started and running pod is ignored", [],
     UpdatePodOptions(SyncPodType.CREATE, pod=RUNNING(), running_pod=RUNNING_POD), None, None,
     expected(active=opts()), False),
    ("a running pod is terminated when an update contains a deletionTimestamp",
     [UpdatePodOptions(SyncPodType.CREATE, pod=RUNNING()), "run"], UpdatePodOptions(SyncPodType.UPDATE, pod=deleted_pod(15)),
     None, None, expected(terminating=True, terminated=True, grace=15, started_terminating=True, finished=True,
                          deleted=True, active=opts(kill=(15, False))), True),
    ("a running pod is terminated when an eviction is requested",
     [UpdatePodOptions(SyncPodType.CREATE, pod=RUNNING()), "run"],
     UpdatePodOptions(SyncPodType.KILL, pod=RUNNING(), kill_pod_options=KillPodOptions(evict=True)), None, None,
     expected(terminating=True, terminated=True, grace=30, started_terminating=True, finished=True, evicted=True,
              active=opts(kill=(30, True))), True),
    # upstream's fake cache has no entry for this pod; the real cache answers a miss with an empty status,
    # which counts as terminal, so "no cached terminal state" is a cached read error here
    ("a pod that is terminal and has never started must be terminated if the runtime does not have a cached "
     "terminal state", [], UpdatePodOptions(SyncPodType.CREATE, pod=done_pod()), RuntimeError("no status"), None,
     expected("done-pod_ns", terminating=True, terminated=True, grace=30, started_terminating=True, finished=True,
              active=opts("done-pod", kill=(30, False))), True),
    ("a pod that is terminal and has never started advances to finished if the runtime has a cached terminal state",
     [], UpdatePodOptions(SyncPodType.CREATE, pod=done_pod()), "terminal",
     expected("done-pod_ns", started=False, terminating=True, terminated=True, started_terminating=True, working=True,
              pending=opts("done-pod", type_=SyncPodType.CREATE)),
     expected("done-pod_ns", terminating=True, terminated=True, started_terminating=True, finished=True,
              active=opts("done-pod")), True),
    ("an orphaned running pod we have not seen is marked terminating and advances to finished and then is removed",
     [], UpdatePodOptions(SyncPodType.KILL, running_pod=RUNNING_POD), None,
     expected("orphaned-pod_ns", started=False, terminating=True, grace=1, deleted=True, observed_runtime=True,
              working=True, pending=opts(None, kill=(1, False), type_=SyncPodType.KILL, running=True)), None, False),
    ("an orphaned running pod with a non-kill update type does nothing", [],
     UpdatePodOptions(SyncPodType.CREATE, running_pod=RUNNING_POD), None, None, None, False),
]


@pytest.mark.parametrize("name, prepare, update, cached, before, after, known_terminated", UPDATE_POD,
                         ids=[case[0] for case in UPDATE_POD])
def test_update_pod(name, prepare, update, cached, before, after, known_terminated):
    """pod_workers_test.go#TestUpdatePod"""
    workers, syncer, cache, clock = create_pod_workers()
    if cached == "terminal":
        cache.set("1", container.PodStatus(id="1", name="done-pod", namespace="ns"), None, T0)
    elif cached is not None:
        cache.set("1", container.PodStatus(id="1", name="done-pod", namespace="ns"), cached, T0)
    for step in prepare:
        if step == "run":
            drain(workers, cache, clock, relists=1)
        else:
            workers.update_pod(step)
    workers.update_pod(update)
    if before is not None:
        assert view(workers.pod_sync_statuses.get("1")) == before
    if cached is not None and cached != "terminal":  # let the next read succeed
        cache.set("1", container.PodStatus(id="1", name="done-pod", namespace="ns"), None, clock.now())
    drain(workers, cache, clock)
    assert view(workers.pod_sync_statuses.get("1")) == after
    assert workers.is_pod_known_terminated("1") is known_terminated


def test_update_pod_for_runtime_pod():
    """TestUpdatePodForRuntimePod: a runtime-only pod can only be killed, then it is forgotten."""
    workers, syncer, cache, clock = create_pod_workers()
    running = container.Pod(id="1", name="1", namespace="test")
    workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, running_pod=running))
    drain(workers, cache, clock)
    assert syncer.calls == [] and "1" not in workers.pod_sync_statuses
    workers.update_pod(UpdatePodOptions(SyncPodType.KILL, running_pod=running))
    drain(workers, cache, clock)
    assert steps(syncer, "1") == [("terminating-runtime", None)] and "1" not in workers.pod_sync_statuses


def test_update_pod_for_terminated_runtime_pod():
    """TestUpdatePodForTerminatedRuntimePod: a runtime kill for a terminated pod is ignored."""
    workers, syncer, cache, clock = create_pod_workers()
    workers.pod_sync_statuses["1"] = PodSyncStatus(terminated_at=T0, terminating_at=T0)
    workers.update_pod(UpdatePodOptions(SyncPodType.KILL, running_pod=container.Pod(id="1", name="1", namespace="test")))
    drain(workers, cache, clock)
    assert syncer.calls == [] and workers.pod_sync_statuses["1"].pending_update is None


def test_update_pod_does_not_forget_sync_pod_kill():
    """pod_workers_test.go#TestUpdatePodDoesNotForgetSyncPodKill: create, kill, update before the workers run."""
    workers, syncer, cache, clock = create_pod_workers()
    for i in range(20):
        pod = new_named_pod(str(i), "ns", str(i), grace=30)
        for kind in (SyncPodType.CREATE, SyncPodType.KILL, SyncPodType.UPDATE):
            workers.update_pod(UpdatePodOptions(kind, pod=pod))
    drain(workers, cache, clock)
    for i in range(20):
        history = [(s, k, g) for u, s, k, g in syncer.calls if u == str(i)]
        # upstream accepts [kill, terminated] or [create, kill, terminated]: the updates may be coalesced
        assert history in ([("terminating", None, 30), ("terminated", None, None)],
                           [("sync", SyncPodType.CREATE, None), ("terminating", None, 30), ("terminated", None, None)])


def test_kill_pending_then_sync_keeps_the_kill():
    """UpdatePod: a kill's grace period and completion survive a later SYNC that replaces the pending update."""
    workers, syncer, cache, clock = create_pod_workers()
    pod = new_named_pod("1", "ns", "running-pod")
    workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=pod))
    drain(workers, cache, clock, relists=1)
    kill = {}
    workers.update_pod(UpdatePodOptions(SyncPodType.KILL, pod=pod, kill_pod_options=KillPodOptions(
        completed=lambda: kill.__setitem__("done", True), pod_termination_grace_period_seconds_override=5)))
    workers.update_pod(UpdatePodOptions(SyncPodType.SYNC, pod=pod))  # replaces the pending kill update
    drain(workers, cache, clock)
    assert [(s, g) for _, s, _, g in syncer.calls] == [("sync", None), ("terminating", 5), ("terminated", None)]
    assert kill.get("done")


def test_terminal_phase_transition():
    """pod_workers_test.go#TestTerminalPhaseTransition: SyncPod saying terminal moves the pod to terminated."""
    workers, syncer, cache, clock = create_pod_workers()
    pod = new_named_pod("1", "test1", "pod1")
    for _ in range(2):
        workers.update_pod(UpdatePodOptions(SyncPodType.UPDATE, pod=pod))
        drain(workers, cache, clock)
        assert not workers.pod_sync_statuses["1"].is_terminated()
    syncer.terminal.add("1")
    workers.update_pod(UpdatePodOptions(SyncPodType.UPDATE, pod=pod))
    drain(workers, cache, clock)
    status = workers.pod_sync_statuses["1"]
    assert status.is_termination_requested() and status.is_terminated()


def static(uid):
    return new_named_pod(uid, "test1", "pod1", is_static=True)


def test_static_pod_exclusion():
    """pod_workers_test.go#TestStaticPodExclusion: one started UID per static full name, the rest wait in order."""
    workers, syncer, cache, clock = create_pod_workers()
    update = lambda p, kind=SyncPodType.UPDATE: workers.update_pod(UpdatePodOptions(kind, pod=p))  # noqa: E731
    started = lambda: workers.started_static_pods_by_fullname  # noqa: E731
    waiting = lambda: workers.waiting_to_start_static_pods_by_fullname  # noqa: E731
    update(new_named_pod("1-normal", "test1", "pod1"))
    update(static("2-static"))
    drain(workers, cache, clock)
    assert steps(syncer, "2-static") == [("sync", SyncPodType.UPDATE)] and started() == {"pod1_test1": "2-static"}
    update(static("3-static"))
    update(static("4-static"))
    drain(workers, cache, clock)
    assert steps(syncer, "3-static") == steps(syncer, "4-static") == []
    assert started() == {"pod1_test1": "2-static"} and waiting() == {"pod1_test1": ["3-static", "4-static"]}
    assert set(workers.work_queue.queue) == {"1-normal", "2-static", "3-static", "4-static"}
    workers.work_queue.queue.clear()
    update(static("3-static"))
    drain(workers, cache, clock)
    assert waiting() == {"pod1_test1": ["3-static", "4-static"]} and set(workers.work_queue.queue) == {"3-static"}
    workers.work_queue.queue.clear()
    update(static("3-static"), SyncPodType.KILL)  # never started: terminated at once
    drain(workers, cache, clock)
    assert workers.pod_sync_statuses["3-static"].is_terminated() and not workers.work_queue.queue
    assert started() == {"pod1_test1": "2-static"} and waiting() == {"pod1_test1": ["3-static", "4-static"]}
    update(static("2-static"), SyncPodType.KILL)
    drain(workers, cache, clock)
    assert workers.pod_sync_statuses["2-static"].is_terminated() and started() == {}
    update(static("4-static"))  # a periodic sync: 4-static starts, as 3-static has terminated
    drain(workers, cache, clock)
    assert started() == {"pod1_test1": "4-static"} and waiting() == {}
    everyone = [new_named_pod("1-normal", "test1", "pod1"), static("2-static"), static("3-static"), static("4-static")]
    assert workers.sync_known_pods(everyone) == {
        "1-normal": PodWorkerSync(PodWorkerState.SYNC_POD, has_config=True),
        "2-static": PodWorkerSync(PodWorkerState.TERMINATED_POD, has_config=True, static=True),
        "3-static": PodWorkerSync(PodWorkerState.TERMINATED_POD),
        "4-static": PodWorkerSync(PodWorkerState.SYNC_POD, has_config=True, static=True)}
    assert workers.pod_sync_statuses["3-static"].finished
    assert set(workers.sync_known_pods([everyone[0], everyone[1], everyone[3]]))  == {"1-normal", "2-static", "4-static"}
    assert "3-static" not in workers.pod_sync_statuses
    # start 5, hold its worker, kill it and add 6: 5 stays terminating, both wait behind 4
    update(static("5-static"))
    drain(workers, cache, clock)
    update(static("5-static"), SyncPodType.KILL)
    update(static("6-static"))
    held = lambda: [workers.run_pending(held={"5-static"}), cache.update_time(clock.now()), clock.advance(1)]  # noqa
    for _ in range(3):
        held()
    status5 = workers.pod_sync_statuses["5-static"]
    assert status5.is_termination_requested() and not status5.is_terminated()
    assert started() == {"pod1_test1": "4-static"} and waiting() == {"pod1_test1": ["5-static", "6-static"]}
    update(static("4-static"), SyncPodType.KILL)
    for _ in range(3):
        held()
    update(static("6-static"))
    for _ in range(3):
        held()
    assert started() == {"pod1_test1": "6-static"} and waiting() == {}
    assert steps(syncer, "6-static") == [("sync", SyncPodType.UPDATE)]
    drain(workers, cache, clock)  # release 5: it sees its kill out of order and ends
    assert workers.pod_sync_statuses["5-static"].is_terminated()
    for uid in ("7-static", "8-static", "9-static"):
        update(static(uid))
    drain(workers, cache, clock)
    update(static("6-static"), SyncPodType.KILL)
    drain(workers, cache, clock)
    update(static("6-static"), SyncPodType.CREATE)
    drain(workers, cache, clock)
    update(static("8-static"))
    drain(workers, cache, clock)
    assert workers.pod_sync_statuses["6-static"].restart_requested and started() == {}
    assert waiting() == {"pod1_test1": ["7-static", "8-static", "9-static"]}  # only 7 may start; it had no event
    assert steps(syncer, "7-static") == steps(syncer, "8-static") == steps(syncer, "9-static") == []
    update(static("7-static"), SyncPodType.KILL)
    drain(workers, cache, clock)
    update(static("8-static"))
    drain(workers, cache, clock)
    assert steps(syncer, "8-static") == [("sync", SyncPodType.UPDATE)]
    assert workers.sync_known_pods([static("8-static")]) == {
        "1-normal": PodWorkerSync(PodWorkerState.TERMINATING_POD, orphan=True, has_config=True),
        "8-static": PodWorkerSync(PodWorkerState.SYNC_POD, has_config=True, static=True)}


def test_sync_known_pods_table():
    """pod_workers_test.go#TestSyncKnownPods"""
    workers, syncer, cache, clock = create_pod_workers()
    for i in range(20):
        workers.update_pod(UpdatePodOptions(SyncPodType.UPDATE, pod=new_named_pod(str(i), "ns", "name")))
    drain(workers, cache, clock)
    assert len(workers.pod_updates) == 20
    for i in range(20):
        if str(i) in ("2", "14"):
            continue
        pod = new_named_pod(str(i), "ns", "name")
        if i % 2 == 0:
            pod.metadata.deletion_timestamp = T0
        workers.update_pod(UpdatePodOptions(SyncPodType.KILL, pod=pod))
    drain(workers, cache, clock)
    assert workers.should_pod_containers_be_terminating("0") and workers.should_pod_containers_be_terminating("1")
    assert not workers.should_pod_containers_be_terminating("2")
    assert workers.is_pod_termination_requested("0") and not workers.is_pod_termination_requested("2")
    assert not workers.could_have_running_containers("0") and not workers.could_have_running_containers("1")
    assert workers.could_have_running_containers("2")
    assert workers.should_pod_content_be_removed("0") and not workers.should_pod_content_be_removed("1")
    assert not workers.should_pod_content_be_removed("2")
    assert not workers.should_pod_containers_be_terminating("abc") and workers.could_have_running_containers("abc")
    assert not workers.should_pod_content_be_removed("abc")  # unknown, and the workers have not synced yet
    workers.sync_known_pods([new_named_pod("2", "ns", "name"), new_named_pod("14", "ns", "name")])
    assert set(workers.pod_updates) == {"2", "14"} and not workers.is_pod_termination_requested("2")
    assert workers.should_pod_containers_be_terminating("abc") and not workers.could_have_running_containers("abc")
    assert workers.should_pod_content_be_removed("abc")  # unknown after the first sync: nothing of it should stay
    workers.sync_known_pods([])  # workers not terminated stay until they are
    drain(workers, cache, clock)
    assert len(workers.pod_updates) == 0 and len(workers.pod_sync_statuses) == 2
    for uid in ("2", "14"):
        workers.update_pod(UpdatePodOptions(SyncPodType.KILL, pod=new_named_pod(uid, "ns", "name")))
    drain(workers, cache, clock)
    workers.sync_known_pods([])
    assert len(workers.pod_updates) == 0 and len(workers.pod_sync_statuses) == 0


ONE, TWO = new_named_pod("pod-uid", "", "1"), new_named_pod("pod-uid", "", "2")
REMOVE_TERMINATED_WORKER = [  # (desc, orphan, status, started, waiting, removed, expected pending pod name)
    ("finished worker", False, {"finished": True}, None, None, True, None),
    ("waiting to start worker because of another started pod with the same fullname", False, {},
     {"fake-fullname": "another-pod-uid"}, {"fake-fullname": ["pod-uid"]}, False, None),
    ("not yet started worker", False, {}, {}, {"fake-fullname": ["pod-uid"]}, False, None),
    ("orphaned not started worker", True, {}, None, None, True, None),
    ("orphaned started worker", True, {"started_at": T0}, None, None, False, None),
    ("orphaned terminating worker with no activeUpdate", True, {"started_at": T0, "terminating_at": T0}, None, None,
     False, None),
    ("orphaned terminating worker", True, {"started_at": T0, "terminating_at": T0,
                                           "active_update": UpdatePodOptions(pod=ONE)}, None, None, False, "1"),
    ("orphaned terminating worker with pendingUpdate", True, {
        "started_at": T0, "terminating_at": T0, "working": True, "pending_update": UpdatePodOptions(pod=TWO),
        "active_update": UpdatePodOptions(pod=ONE)}, None, None, False, "2"),
    ("orphaned terminated worker with no activeUpdate", True, {"started_at": T0, "terminating_at": T0,
                                                               "terminated_at": T0}, None, None, False, None),
    ("orphaned terminated worker", True, {"started_at": T0, "terminating_at": T0, "terminated_at": T0,
                                          "active_update": UpdatePodOptions(pod=ONE)}, None, None, False, "1"),
    ("orphaned terminated worker with pendingUpdate", True, {
        "started_at": T0, "terminating_at": T0, "terminated_at": T0, "working": True,
        "pending_update": UpdatePodOptions(pod=TWO), "active_update": UpdatePodOptions(pod=ONE)}, None, None, False, "2"),
]


@pytest.mark.parametrize("desc, orphan, fields, started, waiting, removed, pending", REMOVE_TERMINATED_WORKER,
                         ids=[c[0] for c in REMOVE_TERMINATED_WORKER])
def test_remove_terminated_worker(desc, orphan, fields, started, waiting, removed, pending):
    """pod_workers_test.go#Test_removeTerminatedWorker"""
    workers, *_ = create_pod_workers()
    status = PodSyncStatus(fullname="fake-fullname", **fields)
    workers.pod_sync_statuses["pod-uid"] = status
    workers.pod_updates["pod-uid"] = status.working
    workers.started_static_pods_by_fullname = dict(started or {})
    workers.waiting_to_start_static_pods_by_fullname = dict(waiting or {})
    workers.remove_terminated_worker("pod-uid", status, orphan)
    assert ("pod-uid" not in workers.pod_sync_statuses) is removed
    if not removed:
        got = status.pending_update
        assert (got.pod.metadata.name if got else None) == pending
        if pending:
            assert status.working and workers.pod_updates["pod-uid"]


def test_kill_pod_now_func():
    """TestKillPodNowFunc: killPodNow with a 0 override kills the pod (grace raised to 1) and completes."""
    workers, syncer, cache, clock = create_pod_workers()
    pod = new_named_pod("test", "ns", "test")
    request = kill_pod_now(workers)(pod, False, 0, lambda status: None)
    drain(workers, cache, clock)
    # two records, as upstream: the kill (terminating, the 0 override raised to 1) and the terminated step
    assert workers.pod_sync_statuses["test"].finished and request.timeout.total_seconds() == 10 and request.done
    assert [(s, g) for _, s, _, g in syncer.calls] == [("terminating", 1), ("terminated", None)]
    running = new_named_pod("r", "ns", "running", grace=30)
    workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=running))
    drain(workers, cache, clock, relists=1)
    request = kill_pod_now(workers)(running, True, None)
    assert request.timeout.total_seconds() == 45 and not request.done  # max(1.5 × 30 s, 10 s)
    drain(workers, cache, clock)
    assert request.done and workers.should_pod_content_be_removed("r")  # evicted
    assert [(s, g) for u, s, _, g in syncer.calls if u == "r"] == [("sync", None), ("terminating", 30), ("terminated", None)]


def test_terminal_sync_pod_moves_on():
    """podWorkerLoop: SyncPod saying terminal → completeSync → terminating → terminated, each requeued at 0."""
    workers, syncer, cache, clock = create_pod_workers(terminal={"1"})
    workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=new_named_pod("1", "ns", "job")))
    drain(workers, cache, clock)
    assert steps(syncer, "1") == [("sync", SyncPodType.CREATE), ("terminating", None), ("terminated", None)]


def test_complete_work_delays():
    """completeWork: success resync 60 s (jitter lower bound), network not ready 1 s, other errors 10 s."""
    for error, delay in ((None, 60), ("network is not ready: cni config uninitialized", 1), ("boom", 10)):
        workers, syncer, cache, clock = create_pod_workers()
        if error:
            syncer.sync_pod = lambda *a, error=error: (_ for _ in ()).throw(RuntimeError(error))
        workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=new_named_pod("1", "ns", "p")))
        cache.update_time(clock.now())
        workers.run_pending()
        assert (workers.work_queue.queue["1"] - clock.now()).total_seconds() == delay
    workers = PodWorkers(Recorder(), BasicWorkQueue(clock), cache, clock, rand=lambda: 0.999)
    workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=new_named_pod("2", "ns", "p")))
    workers.run_pending()
    assert (workers.work_queue.queue["2"] - clock.now()).total_seconds() == pytest.approx(89.97)


NON_STATIC, STATIC = new_named_pod("uid-0", "ns", "test"), new_named_pod("uid-0", "", "foo", is_static=True)
TERMINATING, TERMINATED = {"terminating_at": T0}, {"terminated_at": T0}

ALLOW_POD_START = [  # (desc, pod, statuses, started, waiting, expected started, expected waiting, allowed, ever)
    ("non-static pod", NON_STATIC, {"uid-0": ("test_", {}), "uid-1": ("test_", {})}, None, None, {}, {}, True, True),
    ("non-static pod when there is a started static pod with the same full name", NON_STATIC,
     {"uid-0": ("test_", {}), "uid-1": ("test_", {})}, {"test_": "uid-1"}, None, {"test_": "uid-1"}, {}, True, True),
    ("static pod when there are no started static pods with the same full name", STATIC,
     {"uid-0": ("foo_", {}), "uid-1": ("bar_", {})}, {"bar_": "uid-1"}, None, {"foo_": "uid-0", "bar_": "uid-1"}, {},
     True, True),
    ("static pod when there is a started static pod with the same full name", STATIC,
     {"uid-0": ("foo_", {}), "uid-1": ("foo_", {})}, {"foo_": "uid-1"}, None, {"foo_": "uid-1"}, {}, False, True),
    ("static pod if the static pod has already started", STATIC, {"uid-0": ("foo_", {})}, {"foo_": "uid-0"}, None,
     {"foo_": "uid-0"}, {}, True, True),
    ("static pod if the static pod is the first pod waiting to start", STATIC, {"uid-0": ("foo_", {})}, None,
     {"foo_": ["uid-0"]}, {"foo_": "uid-0"}, {}, True, True),
    ("static pod if the static pod is not the first pod waiting to start", STATIC,
     {"uid-0": ("foo_", {}), "uid-1": ("foo_", {})}, None, {"foo_": ["uid-1", "uid-0"]}, {},
     {"foo_": ["uid-1", "uid-0"]}, False, True),
    ("static pod if the static pod is the first valid pod waiting to start / clean up until picking the first valid pod",
     STATIC, {"uid-0": ("foo_", {}), "uid-1": ("foo_", {})}, None, {"foo_": ["uid-2", "uid-2", "uid-3", "uid-0", "uid-1"]},
     {"foo_": "uid-0"}, {"foo_": ["uid-1"]}, True, True),
    ("static pod if the static pod is the first pod that is not termination requested and waiting to start", STATIC,
     {"uid-0": ("foo_", {}), "uid-1": ("foo_", {}), "uid-2": ("foo_", TERMINATING), "uid-3": ("foo_", TERMINATED)}, None,
     {"foo_": ["uid-2", "uid-3", "uid-0", "uid-1"]}, {"foo_": "uid-0"}, {"foo_": ["uid-1"]}, True, True),
    ("static pod if there is no sync status for the pod should be denied", STATIC,
     {"uid-1": ("foo_", {}), "uid-2": ("foo_", TERMINATING), "uid-3": ("foo_", TERMINATED)}, None, {"foo_": ["uid-1"]},
     {}, {"foo_": ["uid-1"]}, False, False),
    ("static pod if the static pod is terminated should not be allowed", STATIC, {"uid-0": ("foo_", TERMINATING)}, None,
     {"foo_": ["uid-2", "uid-3", "uid-0", "uid-1"]}, {}, {"foo_": ["uid-2", "uid-3", "uid-0", "uid-1"]}, False, False),
]


@pytest.mark.parametrize("desc, pod, statuses, started, waiting, want_started, want_waiting, allowed, ever",
                         ALLOW_POD_START, ids=[c[0] for c in ALLOW_POD_START])
def test_allow_pod_start(desc, pod, statuses, started, waiting, want_started, want_waiting, allowed, ever):
    """pod_workers_test.go#Test_allowPodStart"""
    workers, *_ = create_pod_workers()
    workers.pod_sync_statuses = {uid: PodSyncStatus(fullname=name, **times) for uid, (name, times) in statuses.items()}
    workers.started_static_pods_by_fullname = dict(started or {})
    workers.waiting_to_start_static_pods_by_fullname = {k: list(v) for k, v in (waiting or {}).items()}
    assert workers.allow_pod_start(pod) == (allowed, ever)
    assert workers.started_static_pods_by_fullname == want_started
    assert workers.waiting_to_start_static_pods_by_fullname == want_waiting


@pytest.mark.parametrize("desc, spec, deletion, override, expected", [
    ("use termination grace period from the spec when no overrides", 30, None, None, 30),
    ("use pod DeletionGracePeriodSeconds when set", 30, 5, None, 5),
    ("use grace period override when set", 30, 5, 2, 2),
    # upstream's later table expects 1 for these two; v1.27's code treats a 0 like "nothing recorded" and
    # falls back to the spec's 30 (a zero override only lowers to 0, and 0 then means "use the spec"):
    # the force-delete behaviour reported upstream as issue #120449
    ("v1.27: pod DeletionGracePeriodSeconds zero falls back to the spec", 30, 0, None, 30),
    ("v1.27: grace period override zero falls back to the spec", 30, 5, 0, 30),
    ("no spec value and nothing else: at least 1", None, None, None, 1),
])
def test_calculate_effective_grace_period(desc, spec, deletion, override, expected):
    """pod_workers_test.go#Test_calculateEffectiveGracePeriod (cases 1-3 as upstream; see the v1.27 notes)."""
    pod = new_named_pod("1", "ns", "running-pod", grace=spec)
    pod.metadata.deletion_grace_period_seconds = deletion
    grace, _ = calculate_effective_grace_period(PodSyncStatus(), pod, KillPodOptions(
        pod_termination_grace_period_seconds_override=override))
    assert grace == expected


def test_grace_period_only_decreases():
    """calculateEffectiveGracePeriod: once recorded, a larger value is ignored; a smaller one is 'shortened'."""
    pod = new_named_pod("1", "ns", "p", grace=30)
    status = PodSyncStatus(grace_period=10)
    assert calculate_effective_grace_period(status, pod, KillPodOptions(
        pod_termination_grace_period_seconds_override=20)) == (10, False)
    assert calculate_effective_grace_period(status, pod, KillPodOptions(
        pod_termination_grace_period_seconds_override=3)) == (3, True)


def test_static_pods_one_uid_per_full_name():
    """Static pods with one full name: the second UID starts only after the first has terminated."""
    workers, syncer, cache, clock = create_pod_workers()
    old, new = new_named_pod("old", "ns", "web", is_static=True), new_named_pod("new", "ns", "web", is_static=True)
    workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=old))
    workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=new))
    drain(workers, cache, clock, relists=2)
    assert steps(syncer, "new") == [] and workers.started_static_pods_by_fullname == {"web_ns": "old"}
    workers.update_pod(UpdatePodOptions(SyncPodType.KILL, pod=old))
    drain(workers, cache, clock, relists=3)
    workers.update_pod(UpdatePodOptions(SyncPodType.SYNC, pod=new))  # the kubelet's next sync of the pod
    drain(workers, cache, clock, relists=2)
    assert steps(syncer, "new")[0] == ("sync", SyncPodType.SYNC)
    assert workers.started_static_pods_by_fullname == {"web_ns": "new"}


def test_sync_known_pods():
    """SyncKnownPods: finished and not desired → forgotten; running orphan → terminated with its grace period."""
    workers, syncer, cache, clock = create_pod_workers()
    a, b = new_named_pod("a", "ns", "a", grace=7), new_named_pod("b", "ns", "b")
    for pod in (a, b):
        workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=pod))
    workers.update_pod(UpdatePodOptions(SyncPodType.KILL, pod=b))
    drain(workers, cache, clock)
    known = workers.sync_known_pods([])
    assert "b" not in workers.pod_sync_statuses and known == {"a": known["a"]}
    assert known["a"].orphan and known["a"].state == PodWorkerState.TERMINATING_POD and known["a"].has_config
    drain(workers, cache, clock)
    # the replayed update carries no kill options, so SyncTerminatingPod gets no grace period (as upstream)
    assert [(s, g) for u, s, _, g in syncer.calls if u == "a"][1:] == [("terminating", None), ("terminated", None)]
    assert workers.sync_known_pods([]) == {} and not workers.could_have_running_containers("zzz")


def test_create_while_terminating_requests_restart():
    """UpdatePod: a CREATE for a UID that is terminating only sets restartRequested; SyncKnownPods clears it."""
    workers, syncer, cache, clock = create_pod_workers()
    pod = new_named_pod("1", "ns", "static")
    workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=pod))
    drain(workers, cache, clock, relists=1)
    workers.update_pod(UpdatePodOptions(SyncPodType.KILL, pod=pod))
    workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=pod))
    assert workers.pod_sync_statuses["1"].restart_requested
    drain(workers, cache, clock)
    assert workers.sync_known_pods([pod]) == {} and "1" not in workers.pod_sync_statuses


def test_status_error_is_a_failed_sync():
    """podWorkerLoop: a cached status with an error is a FailedSync event and a 10 s back-off; no sync runs."""
    workers, syncer, cache, clock = create_pod_workers()
    pod = new_named_pod("1", "ns", "p")
    cache.set("1", container.PodStatus(id="1", name="p", namespace="ns"), RuntimeError("rpc error"), clock.now())
    workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=pod))
    workers.run_pending()
    assert syncer.calls == [] and workers.events == [(pod, ("Warning", "FailedSync", "error determining status: rpc error"))]
    assert (workers.work_queue.queue["1"] - clock.now()).total_seconds() == 10


def test_kill_during_sync_cancels_it():
    """UpdatePod: a pod that becomes terminating cancels the running sync's context; the kill runs next."""
    workers, syncer, cache, clock = create_pod_workers()
    pod = new_named_pod("1", "ns", "p")

    def sync_pod(ctx, update_type, p, mirror, status):
        syncer.calls.append(("1", "sync", update_type, None))
        workers.update_pod(UpdatePodOptions(SyncPodType.KILL, pod=p))  # e.g. an eviction while the sync runs
        if ctx.cancelled:
            raise ContextCanceled()
        return False
    syncer.sync_pod = sync_pod
    workers.update_pod(UpdatePodOptions(SyncPodType.CREATE, pod=pod))
    drain(workers, cache, clock)
    assert "Sync exited with context cancellation error" in workers.log
    assert steps(syncer, "1") == [("sync", SyncPodType.CREATE), ("terminating", None), ("terminated", None)]
