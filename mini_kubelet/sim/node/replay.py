"""Replay a one-node scenario (`replay: node`): one Kubelet with every chapter wired in, on the virtual clock.

Upstream: pkg/kubelet/kubelet.go NewMainKubelet and Kubelet.Run (the sync loop, the PLEG, the pod workers),
pkg/kubelet/eviction/eviction_manager.go managerImpl.Start (a pass every 10 s, or after an eviction once the
pod is cleaned up), Kubelet.StartGarbageCollection (containers every minute, images every 5 minutes).
Sources → admission (chapter 2, with the eviction manager's admit handler) → pod workers and the runtime
(chapter 1) → each container's cgroup values and oom_score_adj (chapter 3) → the kernel's OOM kill at a
container's own memory limit → node-pressure eviction through killPodNow (chapter 4) → garbage collection.
The replay is event-driven: the Kubelet runs up to the next instant something is due (a pass, a GC, a Pod
arriving, a container reaching its limit or its end), never further than any container can live.
"""

from __future__ import annotations

import functools
import gc
from datetime import datetime, timedelta
from typing import Optional

from kubernetes.client import V1PodCondition

from ... import api, stats, types
from ...clock import Clock
from ...eviction import images, local_storage, manager as mgr, signals
from ...eviction.records import REASON
from ...kubelet_main import Kubelet
from ...pod_workers import kill_pod_now
from ..lifecycle.api import APIServer
from .cluster import ClusterSide
from .events import SIGNAL_COLUMNS, NodeRecorder
from .scenario import NodeScenario, NodePod
from .trace import NodeTrace
from .usage import (CONTAINER_GC_PERIOD, IMAGE_GC_PERIOD, FoldedTerms, LivePod, container_gc,
                    first_reach, image_gc, image_gc_due, memory_limit, node_summaries, signal_levels)
from ..eviction.summary import build_summary
from ..resize import wire_resize

# --8<-- [start:constants]
EVICTION_MONITORING_PERIOD = 10  # seconds: pkg/kubelet/kubelet.go evictionMonitoringPeriod
POD_CLEANUP_TIMEOUT, POD_CLEANUP_POLL_FREQ = 30, 1  # eviction_manager.go waitForPodsCleanup
# --8<-- [end:constants]


def _fewer_collections(run):
    """Run with the cyclic garbage collector's young generations larger (20,000 and 20 where Python has 700 and 10):
    a replay makes millions of short-lived objects, and the full passes they set off, over all it keeps, find next
    to nothing. The outcome is the same either way."""
    @functools.wraps(run)
    def wrapper(*args, **kwargs):
        thresholds = gc.get_threshold()
        gc.set_threshold(max(thresholds[0], 20_000), max(thresholds[1], 20), thresholds[2])
        try:
            return run(*args, **kwargs)
        finally:
            gc.set_threshold(*thresholds)
    return wrapper


class NodeReplay(ClusterSide):
    """The node, the Kubelet on it, the API server's side, and the workload the scenario describes."""

    def __init__(self, scenario: NodeScenario, *, skip_quiet_passes: bool = True, batch_settled_resyncs: bool = True):
        self.sc, self.clock = scenario, Clock()
        self.trace = NodeTrace(scenario)
        self.skip_quiet_passes = skip_quiet_passes
        # --8<-- [start:wiring]
        self.kubelet = Kubelet(self.clock, scenario.node, skip_settled_resyncs=True, skip_idle_seconds=True,
                               batch_settled_resyncs=batch_settled_resyncs,
                               admit_options={"eviction_admit": lambda pod, pods: self.manager.admit(pod, pods)})
        self.server = APIServer(self.kubelet)
        self.kubelet.syncer.mirror_client = self.server
        self.store = images.ImageStore()
        self.pass_clock = Clock(self.clock.start)  # the eviction manager's: the instant of the pass it runs
        self.manager = mgr.Manager(scenario.config, self.pass_clock, image_store=self.store, kill_pod=self._kill_pod,
                                   dedicated_image_fs=scenario.dedicated_image_fs,
                                   summary_after_reclaim=lambda: self._pass_summary(self._active_pods()))
        # --8<-- [end:wiring]
        self.resize = None  # in-place resize, wired for a scenario with a resize event
        if any(e.kind == "resize" for e in scenario.events):
            self.resize = wire_resize(self.kubelet, scenario.node, scenario.capacity["memory"], pod_stats=_LiveStats(self),
                                      extra_admit=[lambda attrs: self.manager.admit(attrs.pod, attrs.other_pods)])
        self.writes_seen = 0
        # the statuses written come back to the kubelet only where it acts on them: a Pod that has ended frees room
        # for a pending resize (HandlePodReconcile, v1.36); elsewhere the replay is the same without (a test shows it)
        self.statuses_back = self.resize is not None
        self.events = NodeRecorder(self)
        for image in scenario.images:
            self.store.add_image(image["name"], image["size"], self.clock.now(), pinned=image["pinned"],
                                 inodes=image["inodes"])
        self.node_usage = dict(scenario.node_usage)
        self.plans: dict[str, NodePod] = {}
        self.live: dict[str, LivePod] = {}
        self.stopped: set[str] = set()  # live Pods found with no container running: none runs till the runtime starts one
        self.ends: dict[str, tuple[int, Optional[int]]] = {}  # running container id -> (second, exit code; None = OOM)
        self.started: list[str] = []  # container ids the runtime started since the replay last looked
        self.static: list = []
        self.versions: dict[str, int] = {}
        self.unwritten: set[str] = set()  # statuses not written for want of an API Pod
        self.changes_read = 0  # how much of the status manager's changes the replay has read
        self.mirrors_seen, self.statuses_seen, self._images_seen = 0, -1, -1
        self._active: Optional[tuple] = None
        self._usage: Optional[tuple] = None
        self.folded = FoldedTerms()
        self.usage_changes = 0  # counts the scenario's changes to a Pod's usage series
        self.deleting: set[str] = set()  # API Pods with a deletionTimestamp, removed once the kubelet is done
        self.arrivals = sorted([(p.at, i, p) for i, p in enumerate(scenario.pods)] +
                               [(e.at, len(scenario.pods) + i, e.payload) for i, e in enumerate(scenario.events)
                                if e.kind == "addPod"], key=lambda a: (a[0], a[1]))
        self.others = [e for e in scenario.events if e.kind != "addPod"]
        self.replacements: list[tuple[int, NodePod]] = []
        self.pending: list[NodePod] = []  # created by a controller, not scheduled: the node's taint keeps them away
        self.recreated: set[str] = set()
        self.cleanup: Optional[tuple[set, int]] = None
        self.next_pass, self.next_container_gc, self.next_image_gc = 0, 0, 0
        self.gc_seen: Optional[tuple] = None  # what container GC last left (it would remove nothing more from it)
        self.quiet_until = -1  # the Kubelet starts no container before this second
        self.quiet_from = -1  # the last second the replay would have stopped at before it, passes and GC all run
        self.visited: tuple = ()  # what the Kubelet had changed when the replay last looked
        self.window = max(1, min([EVICTION_MONITORING_PERIOD] + [self._shortest_life(p) for _, _, p in self.arrivals]))
        start = self.kubelet.runtime.start_container

        def start_container(container_id: str) -> None:  # the workload's process starts when the runtime starts it
            start(container_id)
            self.started.append(container_id)
            self.stopped.discard(self.kubelet.runtime.containers[container_id].pod_uid)
        self.kubelet.runtime.start_container = start_container

    def now(self) -> int:
        return int(self.clock.elapsed().total_seconds())

    @_fewer_collections
    # --8<-- [start:run]
    def run(self) -> NodeTrace:
        """Move the node through the scenario: the Kubelet runs between the instants something is due.

        Upstream: pkg/kubelet/kubelet.go Kubelet.Run (with the eviction manager's and the GC's loops)
        """
        first = True
        while True:
            due = self._next_due()
            if due > self.sc.duration:
                break
            if due > self.now() or first:
                start = max(self.now(), self.quiet_from) if self.quiet_until < due else self.now()
                chunks = max(1, -(-(self.quiet_until - start) // self.window))  # no container starts before quiet_until
                target = min(due, start + chunks * self.window) if not first else 0
                self.kubelet.run_until(self.clock.start + timedelta(seconds=target))
                if self.now() < target:
                    self.clock.advance(target - self.now())
                self._track_starts()
                if target < due:
                    continue  # a container that started meanwhile may end before `due`
            first = False
            if not (self.skip_quiet_passes and self._pass_alone(due)):
                self._at(due)
                self.visited = self._kubelet_changes()
            if self.skip_quiet_passes:
                self._skip_quiet()
        self.kubelet.run_until(self.clock.start + timedelta(seconds=self.sc.duration))
        if self.now() < self.sc.duration:
            self.clock.advance(self.sc.duration - self.now())
        self._write_statuses()
        self.events.finish()
        return self.trace
    # --8<-- [end:run]

    def _next_due(self) -> int:
        return max(min([self.next_pass, self.next_container_gc, self.next_image_gc] + self._event_times()), self.now())

    def _shortest_life(self, plan: NodePod, pod=None) -> int:
        """The shortest a container instance of this Pod can run: its `run.after`, or the time to its memory limit
        (the limits of `pod`, the Pod as resized, if given)."""
        lives = [b["after"] for b in plan.run.values()]
        for c in (pod or plan.plan.pod).spec.containers:
            limit, series = memory_limit(c), plan.plan.containers.get(c.name, {}).get("memory")
            reach = first_reach(series, limit) if limit is not None and series is not None else None
            if reach is not None:
                lives.append(reach)
        return min(lives, default=EVICTION_MONITORING_PERIOD)

    # --8<-- [start:at]
    def _at(self, t: int) -> None:
        """Everything due at second t: containers ending, arrivals and events, the Kubelet's pass, eviction, GC."""
        for cid, (end, code) in sorted(self.ends.items(), key=lambda item: (item[1][0], item[0])):
            if end <= t:
                self._end_container(cid, code, t)
        api_changed = static_changed = t == 0
        while self.arrivals and self.arrivals[0][0] <= t:
            _, _, plan = self.arrivals.pop(0)
            api_changed |= plan.source == "api"
            static_changed |= plan.source == "file"
            self._arrive(plan, t)
        for at, plan in [r for r in self.replacements if r[0] <= t]:
            self.replacements.remove((at, plan))
            api_changed |= self._create_replacement(plan, t)
        api_changed |= self._bind_pending(t)
        while self.others and self.others[0].at <= t:
            api_changed |= self._event(self.others.pop(0), t)
        if static_changed:
            self.kubelet.send(types.FILE_SOURCE, [api.deep_copy(p) for p in self.static])
        if api_changed:
            self.server.send()
        self.kubelet.step()
        self._track_starts()
        if t >= self.next_pass:
            self._pass(t)
            if self._bind_pending(t):  # a cleared condition lets the scheduler place what waited
                self.server.send()
                self.kubelet.step()
                self._track_starts()
        if t >= self.next_container_gc:
            self.next_container_gc = t + CONTAINER_GC_PERIOD
            container_gc(self.kubelet.runtime, self.kubelet.pod_workers.should_pod_content_be_removed,
                         self.kubelet.handlers.sources_ready.all_ready())
            self.gc_seen = self._gc_inputs()
        if t >= self.next_image_gc:
            self.next_image_gc = t + IMAGE_GC_PERIOD
            self._image_gc(t)
        if self._write_statuses():
            self.server.send()
            self.kubelet.step()
            self._track_starts()
        self.events.collect(t)
    # --8<-- [end:at]

    # --8<-- [start:kernel]
    def _track_starts(self) -> None:
        """Each container the runtime started: its usage from now on, and when its process ends or is OOM-killed."""
        runtime = self.kubelet.runtime
        for cid in self.started:
            c = runtime.containers.get(cid)
            plan = self.plans.get(c.pod_uid) if c is not None else None
            if plan is None or c.state != "running":
                continue
            start = int((c.started_at - self.clock.start).total_seconds())
            live = self.live.setdefault(c.pod_uid, LivePod(plan, start, runtime=runtime))
            live.instances[c.name] = (start, cid)
            if c.image not in self.store.images:
                self.store.add_image(c.image, 0, c.started_at)
            self.store.set_in_use(c.image, True, c.started_at)
            self.events.container_started(plan, c, start)
            self._schedule_end(cid, plan, c.name, start)
        self.started.clear()
        if self.resize is not None and len(runtime.cgroup_writes) != self.writes_seen:  # a new memory.max, maybe
            self.writes_seen = len(runtime.cgroup_writes)
            for uid, live in self.live.items():
                for name, (start, cid) in live.instances.items():
                    c = runtime.containers.get(cid)
                    if c is not None and c.state == "running":
                        self._schedule_end(cid, self.plans[uid], name, start)

    def _schedule_end(self, cid: str, plan: NodePod, name: str, start: int) -> None:
        """When this instance ends: at its memory limit (the kernel's OOM kill), or after its `run.after`.

        After an in-place resize the limit is what the container's cgroup holds now (its memory.max), not the spec's.
        """
        spec = next(c for c in plan.plan.pod.spec.containers if c.name == name)
        limit, series = memory_limit(spec), plan.plan.containers.get(name, {}).get("memory")
        held = self.kubelet.runtime.containers.get(cid) if self.resize is not None else None
        if held is not None and held.resources is not None:
            limit = held.resources.memory_limit_in_bytes or None
        reach = first_reach(series, limit) if limit is not None and series is not None else None
        ends = [(start + max(reach, 0), None)] if reach is not None else []
        if name in plan.run:
            ends.append((start + plan.run[name]["after"], plan.run[name]["exitCode"]))
        if ends:
            end, code = min(ends, key=lambda e: (e[0], e[1] is not None))
            self.ends[cid] = (max(end, self.now()), code)
        else:  # a raised limit, or a usage that no longer reaches it: no end planned before now holds
            self.ends.pop(cid, None)

    def _end_container(self, cid: str, code: Optional[int], t: int) -> None:
        """The process ends: the kernel OOM-kills it at its limit (exit 137, no kubelet event), or it exits."""
        del self.ends[cid]
        c = self.kubelet.runtime.containers.get(cid)
        if c is None or c.state != "running":
            return  # the kubelet stopped it first
        plan = self.plans[c.pod_uid]
        if code is None:
            self.kubelet.runtime.oom_kill_container(c.pod_uid, c.name)
            self.events.oom_killed(plan, c, t)
        else:
            self.kubelet.runtime.exit_container(c.pod_uid, c.name, code)
            self.trace.note(t, "exit", plan.name, f"{plan.name}: container {c.name} exits with code {code}")
    # --8<-- [end:kernel]

    # --8<-- [start:eviction_pass]
    def _pass(self, t: int) -> None:
        """One eviction-manager pass on a Summary of what runs; after an eviction, wait for the Pod's cleanup.

        Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.Start, synchronize and waitForPodsCleanup
        """
        if self.cleanup is not None:
            uids, deadline = self.cleanup
            if t < deadline and any(self.kubelet.pod_workers.could_have_running_containers(u) for u in uids):
                self.next_pass = t + POD_CLEANUP_POLL_FREQ
                return
            self.cleanup = None
        active = self._active_pods()
        self._mark_images_in_use()
        self.pass_clock.advance(self.clock.now() - self.pass_clock.now())
        evicted = self.manager.synchronize(self._pass_summary(active), active)
        self.trace.passes += 1
        self.events.after_pass(t, self.manager.last_sync, evicted)
        if evicted:
            self.kubelet.step()  # the pod worker kills it now (killPodNow waits for that)
            self._track_starts()
            self.cleanup = ({e.pod.metadata.uid for e in evicted}, t + POD_CLEANUP_TIMEOUT)
            self.next_pass = t + POD_CLEANUP_POLL_FREQ
        else:
            self.next_pass = t + EVICTION_MONITORING_PERIOD

    def _skip_quiet(self) -> None:
        """Go past a quiet stretch of passes: each records its row of signals and is counted, none runs.

        The stretch ends at the first of: a scenario event or a container's end, a sync of the Kubelet that does
        more than settle a resync or repeat a back-off (Kubelet.quiet_until), a GC that would act, and a pass that
        could find something (a threshold met, a condition's transition period over, a local-storage limit
        passed). Until then each pass finds nothing met and changes nothing (see _quiet_pass).
        """
        self.quiet_until = self.quiet_from = -1
        t, first = self.now(), self.next_pass
        if self.cleanup is not None or self.manager.thresholds_met or first <= t:
            return
        end = min([self.sc.duration + 1] + self._event_times())
        if self.next_container_gc < end and self.gc_seen != self._gc_inputs():
            end = self.next_container_gc
        if end <= first or not self.kubelet.is_idle() or self._kubelet_changes() != self.visited:
            return
        found = self._quiet_passes(first, min(end, first + EVICTION_MONITORING_PERIOD + 1))
        if not found:
            return  # the next pass may find something
        if len(found) > 1 or end > first + EVICTION_MONITORING_PERIOD:
            quiet = self.kubelet.quiet_until(self.clock.start + timedelta(seconds=end))
            self.quiet_until = (quiet - self.clock.start).total_seconds()
            found = self._quiet_passes(first, min(end, self.quiet_until), found)
        if found and found[-1][0] < min(end, self.quiet_until):
            self._account(found)

    def _pass_alone(self, t: int) -> bool:
        """At t only a pass is due, the Kubelet changed nothing the replay reads since it last looked, and the
        pass finds nothing: accounted for (True), or nothing done (False)."""
        if (t != self.next_pass or t in (self.next_container_gc, self.next_image_gc) or t in self._event_times()
                or self.cleanup is not None or self.manager.thresholds_met or self.started
                or self._kubelet_changes() != self.visited):
            return False
        found = self._quiet_passes(t, t + 1)
        if found:
            self._account(found)
        return bool(found)

    def _quiet_passes(self, first: int, end: float, found: Optional[list] = None) -> list[tuple]:
        """The passes from `first` on, before `end`, that would find nothing, each with its observations.

        They stop at the first that may find something, or at an image GC that would act; read ten minutes at a
        time from the end of `found` (the ones already known)."""
        found, high = list(found or []), self.sc.kubelet["imageGCHighThresholdPercent"]
        active = self._active_pods()
        _, terms, local_limits = self._usage_terms(active)
        if self._usage is None:
            return []  # a Pod not started yet is measured from each pass's own time
        limited = [self.live[p.metadata.uid] for p in active if local_limits and self.plans[p.metadata.uid].local_limits]
        low = found[-1][0] + EVICTION_MONITORING_PERIOD if found else min(first, self.next_image_gc)
        while low < end:
            span = min(end, low + 60 * EVICTION_MONITORING_PERIOD)
            passes = list(_range(first, EVICTION_MONITORING_PERIOD, low, span))
            collections = list(_range(self.next_image_gc, IMAGE_GC_PERIOD, low, span))
            gc_due = next((u for u, summary in zip(collections, self._node_summaries(terms, collections))
                           if image_gc_due(summary.node.runtime.image_fs, high)), None)
            for u, observations in zip(passes, self._levels(terms, passes)):
                if (gc_due is not None and u >= gc_due) or not self._quiet_pass(u, observations, limited):
                    return found
                found.append((u, observations))
            if gc_due is not None:
                return found
            low = span
        return found

    def _levels(self, terms: list[tuple], times: list[int]) -> list[dict]:
        """signal_levels at the times, for the signals a quiet pass is checked on: the thresholds' and the plot's."""
        wanted = frozenset([t.signal for t in self.manager.config.thresholds] + list(SIGNAL_COLUMNS))
        return signal_levels(self.sc, terms, self.store, self.node_usage, times, wanted)

    def _node_summaries(self, terms: list[tuple], times: list[int]) -> list:
        return node_summaries(self.sc, terms, self.store, self.node_usage, times, self.clock.start)

    def _account(self, found: list[tuple]) -> None:
        """The passes found quiet, as they would have gone: a row of signals each, counted; the eviction manager
        runs the last one (at its own instant) and so is left as they all leave it. GC passes among them are no-ops."""
        last = self.quiet_from = found[-1][0]  # the replay would have stopped there last (a GC skipped is before it)
        first = min(found[0][0], self.next_image_gc)  # the first to look at the images: a pass, or an image GC skipped
        self._mark_images_in_use(self.clock.start + timedelta(seconds=first))
        for u, observations in found:
            self.events.signals(u, observations)
        self.trace.passes += len(found)
        self.pass_clock.advance(timedelta(seconds=last) - (self.pass_clock.now() - self.clock.start))
        self.manager.synchronize(self._node_summaries(self._usage[2][1], [last])[0], self._active_pods())
        self.next_pass = last + EVICTION_MONITORING_PERIOD
        self.next_container_gc = _grid(self.next_container_gc, CONTAINER_GC_PERIOD, last + 1)
        self.next_image_gc = _grid(self.next_image_gc, IMAGE_GC_PERIOD, last + 1)

    # --8<-- [start:quiet_pass]
    def _quiet_pass(self, u: int, observations: dict, limited: list[LivePod]) -> bool:
        """Whether the pass at u finds nothing: no threshold met, no condition ending, no local-storage limit passed."""
        manager, now = self.manager, self.clock.start + timedelta(seconds=u)
        if signals.thresholds_met(manager.config.thresholds, observations, False):
            return False
        if signals.node_conditions_observed_since(manager.node_conditions_last_observed_at,
                                                  manager.config.pressure_transition_period, now) != manager.node_conditions:
            return False
        if not limited:
            return True
        summary = build_summary(self.sc, limited, self.store, u, now, self.node_usage)[0]
        over = local_storage.local_storage_eviction([lp.pod for lp in limited], signals.cached_stats_func(summary.pods),
                                                    lambda *_: True, self.sc.dedicated_image_fs)
        return not over
    # --8<-- [end:quiet_pass]

    def _event_times(self) -> list[int]:
        """When the next scenario event, arrival, replacement or container end is due."""
        return ([a[0] for a in self.arrivals[:1]] + [e.at for e in self.others[:1]] + [r[0] for r in self.replacements]
                + [end for end, _ in self.ends.values()])

    def _kubelet_changes(self) -> tuple:
        """What the replay reads of the Kubelet at an instant: statuses, mirror Pods, the runtime, events, rejections."""
        kl = self.kubelet
        return (kl.status_manager.generation, len(self.server.notes), kl.runtime.generation, len(kl.pod_workers.events),
                len(kl.handlers.rejected), kl.pod_manager.generation)

    def _gc_inputs(self) -> tuple:
        """What container GC reads of the Kubelet: the runtime, its workers (the Pods whose content may go), its sources."""
        kl = self.kubelet
        return (kl.runtime.generation, kl.pod_workers.pod_sync_statuses.changes, kl.pod_workers.pods_synced,
                kl.handlers.sources_ready.all_ready())

    def _kill_pod(self, evicted) -> None:
        """killPodNow for the eviction manager: the Pod ends Failed, reason Evicted, with the manager's message.

        Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.evictPod (its status function) and
        pkg/kubelet/pod_workers.go killPodNow
        """
        def status_fn(status) -> None:
            status.phase, status.reason, status.message = "Failed", REASON, evicted.message
            if evicted.condition is not None:
                others = [c for c in status.conditions or [] if c.type != evicted.condition["type"]]
                status.conditions = others + [V1PodCondition(last_transition_time=self.clock.now(), **evicted.condition)]
        kill_pod_now(self.kubelet.pod_workers)(evicted.pod, True, evicted.grace_period_override, status_fn)
    # --8<-- [end:eviction_pass]

    def _active_pods(self) -> list:
        """The Pods the Kubelet counts as active. Upstream: pkg/kubelet/kubelet_pods.go Kubelet.GetActivePods"""
        kl = self.kubelet
        key = (kl.pod_manager.generation, kl.pod_workers.pod_sync_statuses.changes, len(kl.handlers.rejected))
        if self._active is not None and self._active[0] == key:
            return self._active[1]
        active = kl.get_active_pods()
        self._active = (key, active, {p.metadata.uid for p in active})
        return active

    def _measured(self, active: list) -> list[LivePod]:
        """The Pods the stats provider reports: those active, and those with a container still running."""
        held = self._active
        t, uids = self.now(), held[2] if held is not None and held[1] is active else {p.metadata.uid for p in active}
        pods, stopped = [], self.stopped
        for uid, lp in self.live.items():
            if uid in uids or uid not in stopped and lp.any_running():
                pods.append(lp)
            else:  # only StartContainer makes a container run again (it takes the Pod out of `stopped`)
                stopped.add(uid)
        return pods + [LivePod(self.plans[u], t, runtime=self.kubelet.runtime) for u in uids
                       if u not in self.live and u in self.plans]  # not started yet: measured from now

    def _summary(self, active: list):
        """The Summary of the node as it is, every measured Pod with its stats."""
        return build_summary(self.sc, self._measured(active), self.store, self.now(), self.clock.now(), self.node_usage)[0]

    # --8<-- [start:pass_summary]
    def _pass_summary(self, active: list):
        """The Summary a pass needs: the node's figures from one aggregate of all Pods, each Pod's stats when read.

        synchronize reads the Pods' stats only to rank them and to check local-storage limits; otherwise the
        node's figures decide everything (as they do in the Summary it asks for after reclaiming, which it reads
        for its thresholds alone). They are built the first time it looks one up (with skip_quiet_passes;
        without, whenever a threshold is met, still held for its minimum reclaim, or a Pod has a local-storage limit).
        """
        pods, terms, local_limits = self._usage_terms(active)
        cheap = self._node_summaries(terms, [self.now()])[0]
        full = lambda: build_summary(self.sc, pods, self.store, self.now(), self.clock.now(), self.node_usage)[0]  # noqa: E731
        if self.skip_quiet_passes:
            return stats.Summary(cheap.node, _OnFirstRead(lambda: full().pods))
        observations, _ = signals.make_signal_observations(cheap)
        held = self.manager.thresholds_met and signals.thresholds_met(self.manager.thresholds_met, observations, True)
        if held or signals.thresholds_met(self.sc.config.thresholds, observations, False) or local_limits:
            return full()
        return cheap
    # --8<-- [end:pass_summary]

    def _usage_terms(self, active: list) -> tuple[list[LivePod], list[tuple], bool]:
        """The measured Pods, their usage terms, and whether one has a local-storage limit.

        These change only with what runs (the runtime's generation), the active Pods, or a usage change in
        the scenario; a Pod not started yet is measured from now, so then they are read again each time.
        """
        key = (self.kubelet.runtime.generation, self.usage_changes, len(self.live))
        if self._usage is not None and self._usage[0] is active and self._usage[1] == key:
            return self._usage[2]
        pods = self._measured(active)
        found = (pods, self.folded.update(pods), any(lp.node_pod.local_limits for lp in pods))
        settled = not self.started and len(pods) == len(set(lp.uid for lp in pods) & self.live.keys())
        self._usage = (active, key, found) if settled else None
        return found

    def _mark_images_in_use(self, now: Optional[datetime] = None) -> None:
        """Images a container of the runtime uses (running or not) are in use. Upstream: image_gc_manager.go detectImages"""
        if self._images_seen == self.kubelet.runtime.generation:
            return
        self._images_seen = self.kubelet.runtime.generation
        used = {c.image for c in self.kubelet.runtime.containers.values()}
        for name, record in self.store.images.items():
            if (name in used) != record.in_use or record.in_use:
                self.store.set_in_use(name, name in used, now or self.clock.now())

    def _image_gc(self, t: int) -> None:
        """Image GC's periodic pass. Upstream: pkg/kubelet/kubelet.go StartGarbageCollection (every ImageGCPeriod)"""
        self._mark_images_in_use()
        _, terms, _ = self._usage_terms(self._active_pods())
        summary = self._node_summaries(terms, [self.now()])[0]  # image GC reads the node's figures
        kl = self.sc.kubelet
        result = image_gc(self.store, summary.node.runtime.image_fs, kl["imageGCHighThresholdPercent"],
                          kl["imageGCLowThresholdPercent"], self.clock.now())
        if result is not None:
            self.events.image_gc(t, *result)



class _LiveStats:
    """Each Pod's stats as the Summary reports them now, by UID: what the kubelet reads before lowering a memory limit.

    Upstream: pkg/kubelet/kubelet.go Kubelet.PodCPUAndMemoryStats (the runtime manager's runtimeHelper)
    """

    def __init__(self, replay: NodeReplay):
        self.replay = replay

    def get(self, uid: str):
        replay = self.replay
        return next((p for p in replay._summary(replay._active_pods()).pods if p.pod_ref.uid == uid), None)


class _OnFirstRead:
    """A list made the first time it is read."""

    def __init__(self, make):
        self.make, self.items = make, None

    def __iter__(self):
        if self.items is None:
            self.items = self.make()
        return iter(self.items)


def _range(start: int, period: int, low: float, high: float) -> range:
    """start, start + period, ... from low (included) to high (excluded)."""
    return range(_grid(start, period, low), int(-(-high // 1)), period)


def _grid(start: int, period: int, instant: float) -> int:
    """The first of start, start + period, ... that is not before instant."""
    return start if start >= instant else start + int(-(-(instant - start) // period)) * period


def run_node(scenario: NodeScenario) -> NodeTrace:
    """Replay the scenario on one node and return its trace. Upstream: pkg/kubelet/kubelet.go Kubelet.Run"""
    return NodeReplay(scenario).run()
