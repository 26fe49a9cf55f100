"""Chapter 1: the sync loop's dispatch, its back-off, and a pod from a source to its worker's first sync.

The dispatch rules are pkg/kubelet/kubelet.go syncLoopIteration's. Upstream tests the loop itself in
kubelet_test.go#TestSyncLoopAbort and #TestSyncLoopTimeUpdate (ported below); the rest it covers through
whole-kubelet tests with a full fake kubelet, so each case here names the branch of the code it checks.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from kubernetes.client import V1Container, V1ObjectMeta, V1Pod, V1PodSpec, V1PodStatus

from mini_kubelet import container, types
from mini_kubelet.api import node_from_manifest as api_node_from_manifest
from mini_kubelet.api import pod_from_manifest as api_pod_from_manifest
from mini_kubelet.clock import Clock
from mini_kubelet.config.config import PodConfig
from mini_kubelet.config.sources import SourcesReady
from mini_kubelet.container_cache import Cache
from mini_kubelet.kubelet_handlers import KubeletHandlers
from mini_kubelet.pleg import CONTAINER_CHANGED, CONTAINER_DIED, CONTAINER_REMOVED, CONTAINER_STARTED, GenericPLEG, \
    PodLifecycleEvent
from mini_kubelet.pod_manager import BasicManager
from mini_kubelet.pod_workers import PodWorkers
from mini_kubelet.sync_loop import (Channels, SyncLoop, SyncLoopBackOff, is_sync_pod_worthy, runtime_errors,
                                    sync_loop_iteration)
from mini_kubelet.types import ADD, DELETE, RECONCILE, REMOVE, SET, UPDATE, PodUpdate, SyncPodType
from mini_kubelet.work_queue import BasicWorkQueue

pytestmark = pytest.mark.ch1
T0 = datetime(2023, 1, 1, tzinfo=timezone.utc)


def pod(uid, name=None, created=0, annotations=None):
    return V1Pod(metadata=V1ObjectMeta(uid=uid, name=name or uid, namespace="default", annotations=annotations,
                                       creation_timestamp=T0 + timedelta(seconds=created)),
                 spec=V1PodSpec(containers=[V1Container(name="c", image="nginx")]), status=V1PodStatus(phase="Pending"))


class Handler:
    """Records which SyncHandler method each message reached."""

    def __init__(self):
        self.calls = []
        for name in ("additions", "updates", "removes", "reconcile", "syncs"):
            setattr(self, f"handle_pod_{name}", lambda pods, name=name: self.calls.append((name, [p.metadata.uid for p in pods])))

    def handle_pod_cleanups(self):
        self.calls.append(("cleanups", []))


class Kubelet:
    def __init__(self, pods=(), ready=True):
        self.log, self.cleaned = [], []
        self.pods = {p.metadata.uid: p for p in pods}
        self.sources_ready = SourcesReady(lambda seen: ready)

    def get_pod_by_uid(self, uid):
        return self.pods.get(uid)

    def get_pods_to_sync(self):
        return list(self.pods.values())

    def clean_up_containers_in_pod(self, uid, cid):
        self.cleaned.append((uid, cid))


@pytest.mark.parametrize("op, handled", [
    (ADD, [("additions", ["a"])]), (UPDATE, [("updates", ["a"])]), (REMOVE, [("removes", ["a"])]),
    (RECONCILE, [("reconcile", ["a"])]), (DELETE, [("updates", ["a"])]),  # DELETE is an update (graceful)
    (SET, []),  # logged as unsupported
])
def test_config_dispatch(op, handled):
    """syncLoopIteration, configCh: each operation to its handler, then sourcesReady.AddSource."""
    kl, handler, channels = Kubelet(), Handler(), Channels()
    channels.config.append(PodUpdate([pod("a")], op, "api"))
    assert sync_loop_iteration(kl, channels, handler)
    assert handler.calls == handled and kl.sources_ready.sources_seen == {"api"}
    if op == SET:
        assert kl.log == ["Kubelet does not support snapshot update"]


def test_sync_loop_abort():
    """kubelet_test.go#TestSyncLoopAbort: a closed config channel ends the iteration (False) and the loop."""
    kl, channels, clock = Kubelet(), Channels(), Clock(T0)
    channels.config.append(None)
    assert not sync_loop_iteration(kl, channels, Handler())
    channels.config.append(None)
    loop = SyncLoop(kl, Handler(), channels, clock)
    loop.run_until(T0 + timedelta(days=1))  # returns at once
    assert loop.stopped and clock.now() == T0


def test_sync_loop_time_update():
    """kubelet_test.go#TestSyncLoopTimeUpdate: each turn of the loop stamps the loop monitor with a later time."""
    clock = Clock(T0)
    loop = SyncLoop(Kubelet(), Handler(), Channels(), clock)
    assert loop.sync_loop_monitor is None
    loop.step()
    first = loop.sync_loop_monitor
    clock.advance(1)
    loop.step()
    assert first == T0 and loop.sync_loop_monitor > first


@pytest.mark.parametrize("event_type, synced, cleaned", [
    (CONTAINER_STARTED, True, False), (CONTAINER_DIED, True, True), (CONTAINER_REMOVED, False, False),
    (CONTAINER_CHANGED, True, False),
])
def test_pleg_dispatch(event_type, synced, cleaned):
    """syncLoopIteration, plegCh: sync-worthy unless ContainerRemoved; ContainerDied also trims dead containers."""
    kl, handler, channels = Kubelet([pod("a")]), Handler(), Channels()
    assert is_sync_pod_worthy(PodLifecycleEvent("a", event_type, "c1")) is (event_type != CONTAINER_REMOVED)
    channels.pleg.extend([PodLifecycleEvent("a", event_type, "c1"), PodLifecycleEvent("gone", event_type, "c2")])
    sync_loop_iteration(kl, channels, handler)
    sync_loop_iteration(kl, channels, handler)  # a pod the pod manager does not know: no sync
    assert handler.calls == ([("syncs", ["a"])] if synced else [])
    assert kl.cleaned == ([("a", "c1"), ("gone", "c2")] if cleaned else [])


def test_sync_tick_and_housekeeping():
    """syncCh: the due pods are synced (nothing when none); housekeepingCh: cleanups only once sources are ready."""
    kl, handler, channels = Kubelet([pod("a")]), Handler(), Channels()
    channels.sync.extend([T0, T0])  # a ticker channel holds one tick
    channels.housekeeping.append(T0)
    while channels.ready():
        sync_loop_iteration(kl, channels, handler)
    assert handler.calls == [("syncs", ["a"]), ("cleanups", [])]
    kl, handler, channels = Kubelet([], ready=False), Handler(), Channels()
    channels.sync.append(T0)
    channels.housekeeping.append(T0)
    while channels.ready():
        sync_loop_iteration(kl, channels, handler)
    assert handler.calls == [] and kl.log == ["SyncLoop (housekeeping, skipped): sources aren't ready yet"]


def test_fixed_order_of_ready_channels():
    """The mini loop takes config, then PLEG, then sync, then housekeeping (Go's select picks at random)."""
    kl, handler, channels = Kubelet([pod("a")]), Handler(), Channels()
    channels.housekeeping.append(T0)
    channels.sync.append(T0)
    channels.pleg.append(PodLifecycleEvent("a", CONTAINER_STARTED, "c"))
    channels.config.append(PodUpdate([pod("b")], ADD, "api"))
    while channels.ready():
        sync_loop_iteration(kl, channels, handler)
    assert [name for name, _ in handler.calls] == ["additions", "syncs", "syncs", "cleanups"]


def test_sync_loop_back_off():
    """syncLoop: while the runtime reports errors, sleep 100 ms, doubling up to 5 s; reset after a good turn."""
    back_off = SyncLoopBackOff()
    assert [back_off.next().total_seconds() for _ in range(8)] == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    back_off.reset()
    assert back_off.next() == timedelta(milliseconds=100)


def test_runtime_errors_skip_syncing():
    """syncLoop: no message is taken while runtimeErrors() is non-empty; the turns come at the back-off's pace."""
    clock, errors = Clock(T0), ["container runtime is down"]
    kl, handler, channels = Kubelet(), Handler(), Channels()
    channels.config.append(PodUpdate([pod("a")], ADD, "api"))
    loop = SyncLoop(kl, handler, channels, clock, runtime_errors=lambda: errors)
    loop.run_until(T0 + timedelta(seconds=0.65))
    assert handler.calls == [] and len(kl.log) == 3  # turns at 0, 0.1 and 0.3 s; the next, at 0.7 s, is past the end
    errors.clear()
    loop.run_until(T0 + timedelta(seconds=1))
    assert handler.calls == [("additions", ["a"])]


class Runtime:
    """A runtime with one pod whose container runs once the pod worker has synced it."""

    def __init__(self):
        self.pods = []

    def get_pod_status(self, uid, name, namespace):
        return container.PodStatus(id=uid, name=name, namespace=namespace)


class Syncer:
    def __init__(self, runtime, clock):
        self.runtime, self.clock, self.calls = runtime, clock, []

    def sync_pod(self, ctx, update_type, pod, mirror_pod, status):
        self.calls.append((self.clock.elapsed().total_seconds(), str(update_type), pod.metadata.name))
        if not self.runtime.pods:
            self.runtime.pods = [container.Pod(id=pod.metadata.uid, name=pod.metadata.name, namespace="default",
                                               containers=[container.Container(id="c1", name="c", state="running")])]
        return False

    def sync_terminating_pod(self, *args):
        self.calls.append((self.clock.elapsed().total_seconds(), "terminating", args[1].metadata.name))
        self.runtime.pods = []  # the containers are stopped

    def sync_terminating_runtime_pod(self, *args):
        pass

    def sync_terminated_pod(self, ctx, pod, status):
        self.calls.append((self.clock.elapsed().total_seconds(), "terminated", pod.metadata.name))


def test_pod_from_source_to_running():
    """A pod through PodConfig, the sync loop, admission and its worker: CREATE after the first relist, then a
    SYNC from the PLEG's ContainerStarted, then resyncs from the work queue; a REMOVE kills it."""
    clock = Clock(T0)
    runtime, cache, queue = Runtime(), Cache(), BasicWorkQueue(clock)
    syncer = Syncer(runtime, clock)
    workers = PodWorkers(syncer, queue, cache, clock, resync_interval=10)
    config = PodConfig(clock=clock)
    api = config.channel("api")
    pleg = GenericPLEG(lambda: runtime.pods, clock, get_pod_status=runtime.get_pod_status, cache=cache)
    manager = BasicManager()
    handlers = KubeletHandlers(workers, manager, SourcesReady(config.seen_all_sources), clock,
                               work_queue=queue, pod_cache=cache, need_to_reconcile_pod_readiness=lambda p: False,
                               # HandlePodCleanups' first step: forget pod workers no longer desired
                               handle_pod_cleanups=lambda: workers.sync_known_pods(manager.get_pods()) and None,
                               node=api_node_from_manifest({"apiVersion": "v1", "kind": "Node", "metadata": {
                                   "name": "node-1"}, "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}))
    channels = Channels(config=config.updates, pleg=pleg.watch())
    loop = SyncLoop(handlers, handlers, channels, clock, relist=pleg.relist, run_pod_workers=workers.run_pending)
    api(PodUpdate([pod("web-uid", "web")], SET, "api"))
    loop.run_until(T0 + timedelta(seconds=12))
    assert syncer.calls == [(0.0, "create", "web"), (1.0, "sync", "web"), (12.0, "sync", "web")]
    assert handlers.sources_ready.all_ready()
    api(PodUpdate([], SET, "api"))  # at 12 s: a REMOVE, so a kill; each step waits for the next relist
    loop.run_until(T0 + timedelta(seconds=16))
    assert syncer.calls[3:] == [(13.0, "terminating", "web"), (14.0, "terminated", "web")]
    # finished at 14 s, and forgotten by the housekeeping of the same instant (it is no longer desired)
    assert "web-uid" not in workers.pod_sync_statuses


def test_unhealthy_pleg_stops_pod_syncing():
    """runtimeErrors with the PLEG's health check: after 3 min without a good relist, syncLoop skips every turn."""
    clock = Clock(T0)
    failing = {"on": False}

    def get_pods():
        if failing["on"]:
            raise RuntimeError("rpc error: code = DeadlineExceeded")
        return []
    pleg = GenericPLEG(get_pods, clock)
    assert runtime_errors({"PLEG": pleg.healthy}) == ["PLEG is not healthy: pleg has yet to be successful"]
    kl, handler, channels = Kubelet(), Handler(), Channels(pleg=pleg.watch())
    loop = SyncLoop(kl, handler, channels, clock, relist=pleg.relist,
                    runtime_errors=lambda: runtime_errors({"PLEG": pleg.healthy}))
    loop.run_until(T0 + timedelta(seconds=10))
    assert not any("Skipping" in line for line in kl.log)
    failing["on"] = True  # the last good relist was at 10 s
    loop.run_until(T0 + timedelta(seconds=190))
    assert not any("Skipping" in line for line in kl.log)  # 180 s is still within the threshold
    loop.run_until(T0 + timedelta(seconds=191))
    assert kl.log[-1] == ("Skipping pod synchronization: ['PLEG is not healthy: pleg was last seen active "
                          "3m1s ago; threshold is 3m0s']")


def make_handlers(clock):
    cache, queue = Cache(), BasicWorkQueue(clock)
    workers = PodWorkers(Syncer(Runtime(), clock), queue, cache, clock)
    manager = BasicManager()
    node = api_node_from_manifest({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
                                   "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "110"}}})
    handlers = KubeletHandlers(workers, manager, SourcesReady(lambda seen: "api" in seen), clock, work_queue=queue,
                               pod_cache=cache, node=node, need_to_reconcile_pod_readiness=lambda p: p.metadata.name == "r",
                               handle_pod_cleanups=lambda: None)
    return handlers, workers, manager


def test_handlers_dispatch_to_the_pod_workers():
    """HandlePodAdditions/Updates/Removes/Reconcile/Syncs: what each hands the pod workers (kubelet.go)."""
    clock = Clock(T0)
    handlers, workers, manager = make_handlers(clock)
    big = api_pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "big", "namespace": "default", "uid": "big"}, "spec": {"containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"memory": "2Gi"}}}]}})
    handlers.handle_pod_additions([pod("a"), big])
    # oldest first (no creation time sorts first), and rejected pods stay in the pod manager
    assert [p.metadata.uid for p in manager.get_pods()] == ["big", "a"]
    assert handlers.rejected["big"].status_reason == "OutOfmemory"
    assert workers.pod_sync_statuses["a"].pending_update.update_type == SyncPodType.CREATE
    assert "big" not in workers.pod_sync_statuses  # a rejected pod never gets a worker
    handlers.handle_pod_updates([pod("a")])
    assert workers.pod_sync_statuses["a"].pending_update.update_type == SyncPodType.UPDATE
    handlers.handle_pod_reconcile([pod("r"), pod("a")])  # only the readiness reconcile dispatches a SYNC
    assert workers.pod_sync_statuses["r"].pending_update.update_type == SyncPodType.SYNC
    assert workers.pod_sync_statuses["a"].pending_update.update_type == SyncPodType.UPDATE
    evicted = pod("e")
    evicted.status = V1PodStatus(phase="Failed", reason="Evicted")
    handlers.handle_pod_reconcile([evicted])
    assert handlers.container_deletions == [("e", "", True)]  # eviction.PodIsEvicted: every dead container
    handlers.handle_pod_removes([pod("a")])  # the sources are not all ready: no kill yet
    assert handlers.log == ["Failed to delete pod default/a: skipping delete because sources aren't ready yet"]
    assert manager.get_pod_by_uid("a") is None
    handlers.sources_ready.add_source("api")
    handlers.handle_pod_removes([pod("r")])
    assert workers.pod_sync_statuses["r"].pending_update.update_type == SyncPodType.KILL
    handlers.handle_pod_syncs([pod("big")])
    assert workers.pod_sync_statuses["big"].pending_update.update_type == SyncPodType.SYNC


def test_mirror_pod_updates_its_static_pod():
    """handleMirrorPod: a mirror pod is never admitted or run; its changes are UPDATEs of its static pod."""
    clock = Clock(T0)
    handlers, workers, manager = make_handlers(clock)
    static = pod("static-uid", "web-node-1", annotations={types.CONFIG_SOURCE_ANNOTATION_KEY: "file"})
    mirror = pod("mirror-uid", "web-node-1", annotations={types.CONFIG_MIRROR_ANNOTATION_KEY: "hash"})
    handlers.handle_pod_additions([static])
    handlers.handle_pod_additions([mirror])
    assert "mirror-uid" not in workers.pod_sync_statuses and manager.get_pods() == [static]
    pending = workers.pod_sync_statuses["static-uid"].pending_update
    assert pending.update_type == SyncPodType.UPDATE and pending.mirror_pod is mirror
    assert manager.get_mirror_pod_by_pod(static) is mirror and manager.translation_by_uid == {"mirror-uid": "static-uid"}


def test_get_pods_to_sync():
    """getPodsToSync: due work-queue entries (strictly before now) and pods a PodSyncLoopHandler wants."""
    clock = Clock(T0)
    handlers, workers, manager = make_handlers(clock)
    for uid in ("a", "b", "c"):
        manager.add_pod(pod(uid))
    handlers.work_queue.enqueue("a", 0)
    handlers.work_queue.enqueue("b", 5)
    assert handlers.get_pods_to_sync() == []  # due at now is not before now
    clock.advance(1)
    handlers.pod_sync_loop_handlers.append(lambda p: p.metadata.uid == "c")  # e.g. an active deadline passed
    assert [p.metadata.uid for p in handlers.get_pods_to_sync()] == ["a", "c"]
