"""One kubelet, wired: pod sources → PodConfig → the sync loop → pod workers → runtime → PLEG → status, on a virtual clock.

Upstream: pkg/kubelet/kubelet.go (NewMainKubelet builds these parts, Kubelet.Run starts them, HandlePodCleanups
in kubelet_pods.go is housekeeping)
Each part is its own module; this one only connects them, as NewMainKubelet does. The API server is outside the
kubelet: `api_pods` is called for its pod list (the API source's SET), and the status manager's writes are
read back with `pod_statuses`. Time moves only through `run_until`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Optional

from kubernetes.client import V1Node, V1Pod, V1PodStatus

from . import types
from .clock import Clock
from .config.config import PodConfig
from .config.sources import SourcesReady
from .container_cache import Cache
from .cri import RuntimeService
from .events import Recorder
from .flowcontrol import new_container_back_off
from .kubelet import filter_out_inactive_pods
from .kubelet_handlers import KubeletHandlers
from .kubelet_sync import KubeletSyncer, MirrorClient
from .pleg import GenericPLEG
from .pod_manager import BasicManager
from .pod_workers import PodWorkers, UpdatePodOptions
from .status.status_manager import StatusManager
from .resync_batch import ResyncPlan
from .sync_loop import SYNC_PERIOD, Channels, SyncLoop
from .types import SET, PodUpdate, SyncPodType
from .work_queue import BasicWorkQueue


BATCH_MIN = timedelta(minutes=2)  # a shorter stretch has too few resyncs to be worth planning
PLAN_HORIZON = timedelta(hours=1)  # how far a plan looks ahead: it serves the stretches that follow until it ends

# --8<-- [start:kubelet]
class Kubelet:
    """The parts NewMainKubelet builds, connected; `run_until` moves the whole node forward in time.

    Upstream: pkg/kubelet/kubelet.go NewMainKubelet and Kubelet.Run
    skip_settled_resyncs (no upstream counterpart; off by default): upstream runs SyncPod for every pod at
    every resync (syncFrequency, 1 min). A pod whose last sync changed nothing (no container started or
    stopped, no status, event or log line written), and whose inputs are the same objects since (the pod,
    its mirror pod, the cached runtime status, the status manager's status, its probe results), with
    nothing bound to the clock (no crash-loop back-off pending, which would have been a start, no active
    deadline, no termination), gets the same answer from SyncPod: nothing. With the option on, its resync
    is settled by re-queueing it (the sync time, the next resync) without SyncPod, so a node of quiet pods
    costs nothing a minute. Likewise a crash-looping pod's sync that only refused starts in back-off, and left
    the reason cache as it found it, is repeated (its BackOff events and error) while its inputs, reason cache
    entries and back-off delays stay the same and each back-off still runs: SyncPod would do just that again.
    Statuses, events, restarts and kills are the same, byte for byte, on or off.
    skip_idle_seconds (no upstream counterpart; off by default): the loop goes straight past the instants at which
    each relist, tick and housekeeping would do nothing (see `idle_until`); the same answers, on or off.
    batch_settled_resyncs (no upstream counterpart; off by default; with both shortcuts above): while the loop is
    idle, a stretch of ticks whose every take is a settled resync or a repeated back-off is done in one go
    (resync_batch.ResyncPlan), and the loop goes straight past it; the same log, events and statuses, on or off.
    admit_options: chapter 2's admission options for HandlePodAdditions (eviction_admit: the eviction manager's Admit).
    max_container_restart_period: the kubelet config's crashLoopBackOff.maxContainerRestartPeriod (KubeletCrashLoopBackOffMax).
    """

    def __init__(self, clock: Clock, node: Optional[V1Node], *, mirror_client: Optional[MirrorClient] = None,
                 sources: tuple[str, ...] = (types.API_SERVER_SOURCE, types.FILE_SOURCE),
                 skip_settled_resyncs: bool = False, skip_idle_seconds: bool = False,
                 batch_settled_resyncs: bool = False, admit_options: Optional[dict] = None,
                 max_container_restart_period: Optional[timedelta] = None):
        self.clock, self.node = clock, node
        self.runtime = RuntimeService(clock)
        self.recorder = Recorder(clock)
        self.pod_cache, self.work_queue, self.pod_manager = Cache(), BasicWorkQueue(clock), BasicManager()
        self.status_manager = StatusManager(clock, self.pod_manager.get_mirror_pod_by_pod)
        self.config = PodConfig(clock=clock)
        self.sources = {source: self.config.channel(source) for source in sources}
        self.syncer = KubeletSyncer(self.runtime, self.status_manager, clock, self.recorder, mirror_client=mirror_client,
                                    skip_settled_resyncs=skip_settled_resyncs,
                                    back_off=new_container_back_off(clock, max_container_restart_period))
        self.pod_workers = PodWorkers(self.syncer, self.work_queue, self.pod_cache, clock)
        self.syncer.is_pod_termination_requested = self.pod_workers.is_pod_termination_requested
        self.syncer.update_pod = self.pod_workers.update_pod  # kubelet.go SyncPod: podWorkers.UpdatePod
        self.pleg = GenericPLEG(self.runtime.get_pods, clock, get_pod_status=self.runtime.get_pod_status,
                                cache=self.pod_cache, generation=lambda: self.runtime.generation)
        self.handlers = KubeletHandlers(self.pod_workers, self.pod_manager, SourcesReady(self.config.seen_all_sources),
                                        clock, work_queue=self.work_queue, pod_cache=self.pod_cache, node=node,
                                        need_to_reconcile_pod_readiness=lambda pod: False,
                                        handle_pod_cleanups=self.housekeeping, **(admit_options or {}))
        self.settled_housekeeping: Optional[tuple[int, int, int, int]] = None
        self.rejections_written: Optional[tuple[int, int]] = None  # (rejections, status removals) when all were written
        self.batch_settled_resyncs = batch_settled_resyncs and skip_settled_resyncs
        self._plan: Optional[ResyncPlan] = None
        self.loop = SyncLoop(self.handlers, self.handlers, Channels(config=self.config.updates, pleg=self.pleg.watch()),
                             clock, relist=self.pleg.relist, run_pod_workers=self.pod_workers.run_pending,
                             idle_until=self.idle_until if skip_idle_seconds else None,
                             resync_before=self.resync_before if self.batch_settled_resyncs else None)

    def add_timer(self, due, tick) -> None:
        """A goroutine's ticker beside the sync loop: due() when it next acts (None: nothing to do), tick() its turn.

        A turn may sync a pod outside the loop's ticks (HandlePodSyncs), which requeues it: the resync plan is
        made again after it.
        """
        def turn() -> None:
            self._plan = None
            tick()
        self.loop.timers.append((due, turn))

    def send(self, source: str, pods: list[V1Pod]) -> None:
        """A source's full list of pods (a SET), as the file and API sources send it."""
        self.sources[source](PodUpdate(pods, SET, source))

    # --8<-- [start:handle_pod_cleanups]
    def handle_pod_cleanups(self) -> Optional[str]:
        """Housekeeping: forget finished workers no longer desired; kill runtime pods nobody wants; drop old statuses.

        Upstream: pkg/kubelet/kubelet_pods.go Kubelet.HandlePodCleanups (the parts about workers and runtime pods)
        """
        desired = self.pod_manager.get_pods()
        workers = self.pod_workers.sync_known_pods(desired)
        self.status_manager.remove_orphaned_statuses({p.metadata.uid for p in desired} | set(workers))
        for running in self.runtime.get_pods():
            if running.id in workers or not any(c.state == "running" for c in running.containers + running.sandboxes):
                continue
            self.pod_workers.update_pod(UpdatePodOptions(update_type=SyncPodType.KILL, running_pod=running))
        return None
    # --8<-- [end:handle_pod_cleanups]

    def housekeeping(self) -> Optional[str]:
        """HandlePodCleanups, unless nothing it reads has changed since a pass that found nothing to do.

        A pass reads the pod manager's pods, the pod workers' UIDs, the status manager's statuses and the runtime's
        pods; it acts only on orphans (workers, statuses or running pods no desired pod accounts for) and on workers
        a new pod with a terminating UID asked to restart (which comes with the pod manager's add). When the last
        pass met none of them and none of those counters has moved since, this pass would do nothing either.
        """
        seen = self._housekeeping_inputs()
        if seen == self.settled_housekeeping:
            return None
        if not self.has_pods_to_clean_up():
            self.pod_workers.pods_synced = True  # all a pass with nothing to clean up leaves behind
            self.settled_housekeeping = seen
            return None
        err = self.handle_pod_cleanups()
        quiet = (err is None and self._housekeeping_inputs() == seen
                 and self.pod_workers.pod_sync_statuses.keys() <= self.pod_manager.pod_by_uid.keys()
                 and not self.pod_workers.any_restart_requested())
        self.settled_housekeeping = seen if quiet else None
        return err

    def has_pods_to_clean_up(self) -> bool:
        """Whether HandlePodCleanups would act: a worker, status or runtime pod no desired pod accounts for, or a
        restart asked for. Else it only sets pods_synced; found with set operations on UIDs, no pod read."""
        desired, statuses, runtime = self.pod_manager.pod_by_uid.keys(), self.pod_workers.pod_sync_statuses, self.runtime
        return not (statuses.keys() <= desired and self.status_manager.pod_statuses.keys() <= desired
                    and runtime.sandboxes.by_pod.keys() <= statuses.keys()
                    and runtime.containers.by_pod.keys() <= statuses.keys()
                    and not self.pod_workers.any_restart_requested())

    def _housekeeping_inputs(self) -> tuple[int, int, int, int]:
        return (self.pod_manager.generation, self.pod_workers.pod_sync_statuses.changes,
                self.status_manager.generation, self.runtime.generation)

    def idle_until(self, end: datetime) -> Optional[datetime]:
        """None if the loop's next turns may do something; else when the work queue next has a pod due (end if none).

        Idle: no message waits, no pod worker has anything to do or waits for the cache, the runtime is as the
        last relist listed it (a relist only moves its timestamps), housekeeping is settled, and no PodSyncLoopHandler
        may ask for a sync. None of that changes with time alone; only the work queue's due times come round.
        With batch_settled_resyncs, a stretch of at least BATCH_MIN is planned, and the pod due is the first whose
        take would do more than settle or repeat (resync_before then performs the takes the loop skips).
        """
        if not self.is_idle():
            self._plan = None
            return None
        if self.batch_settled_resyncs and self._resync_plan(end) is not None:
            return min(self._plan.busy, end)
        due = self.work_queue.next_due()
        return end if due is None else due

    def is_idle(self) -> bool:
        pleg, workers, handlers = self.pleg, self.pod_workers, self.handlers
        return not (self.config.updates or pleg.event_channel or pleg.pods_to_reinspect or pleg.reinspect_requested
                    or pleg.listed_generation != self.runtime.generation or workers.pod_updates.notified
                    or workers.delivered or workers.waiting or self.pod_cache.subscribers
                    or handlers.pod_sync_loop_handlers or not handlers.sources_ready.all_ready()
                    or self._housekeeping_inputs() != self.settled_housekeeping)

    def resync_before(self, before: datetime) -> None:
        """The loop skips to `before`: perform the planned takes at the ticks before it."""
        if self._plan is not None:
            self._plan.perform(before)

    def quiet_until(self, end: datetime) -> Optional[datetime]:
        """None if the Kubelet may act now; else the first sync tick (at most end) at which it may do more than
        resyncs that settle or repeat a back-off: until then it changes no status, runtime or pod."""
        if not self.is_idle():
            return None
        end = min([end] + self.loop.timers_due())  # a ticker beside the loop may act then
        plan = self._resync_plan(end, at_least=timedelta(0))
        return end if plan.busy >= end else min(end, plan.tick(plan.index_after(plan.busy)))

    def _resync_plan(self, end: datetime, at_least: timedelta = BATCH_MIN) -> Optional[ResyncPlan]:
        """The plan of the takes up to end (None for a stretch shorter than at_least): the one in hand while nothing
        but its own takes has happened since it was made, and it reaches end; else a new one, an hour long."""
        plan, seen, now = self._plan, self._housekeeping_inputs(), self.clock.now()
        if (plan is not None and plan.seen == seen and plan.end >= end and plan.tick(plan.done) == self.loop.next_sync
                and self.loop.next_sync < plan.tick(plan.index_after(plan.busy))):
            return plan
        if end - now < at_least:
            return None
        plan = self._plan = ResyncPlan(self, self.loop.next_sync, SYNC_PERIOD, max(end, now + PLAN_HORIZON))
        plan.seen = seen
        return plan

    def run_until(self, end: datetime) -> None:
        """Everything due up to and including end: relists, ticks, messages and the workers they wake."""
        self.loop.run_until(end)

    def step(self) -> None:
        """Everything due at the clock's current instant. Upstream: one pass of syncLoop (with the PLEG)"""
        self.loop.step()
        self.record_rejections()

    def get_active_pods(self) -> list[V1Pod]:
        """The pods not yet terminated (nor rejected at admission), nor asked to terminate.

        Upstream: pkg/kubelet/kubelet_pods.go Kubelet.GetActivePods
        """
        statuses = self.pod_workers.pod_sync_statuses
        terminated = {u for u, s in statuses.items() if s.is_terminated()} | set(self.handlers.rejected)
        requested = {u for u, s in statuses.items() if s.is_termination_requested()}
        return filter_out_inactive_pods(self.pod_manager.get_pods(), known_terminated=terminated,
                                        termination_requested=requested)

    # --8<-- [start:record_rejections]
    def record_rejections(self) -> None:
        """What rejectPod writes for each pod admission refused: a Warning event and a Failed status.

        Upstream: pkg/kubelet/kubelet.go Kubelet.rejectPod (the handlers keep the outcome; this writes it once)
        Each has its status once written, until the status manager removes one: till a rejection or a removal
        comes, there is nothing to look at.
        """
        seen = (len(self.handlers.rejected), self.status_manager.removals)
        if seen == self.rejections_written:
            return
        for uid, outcome in self.handlers.rejected.items():
            if self.status_manager.get_pod_status(uid) is not None:
                continue
            event_type, reason, message = outcome.event
            self.recorder.eventf(f"{outcome.pod.metadata.namespace}/{outcome.pod.metadata.name}", event_type, reason,
                                 message)
            self.status_manager.set_pod_status(outcome.pod, V1PodStatus(
                phase=outcome.status_phase, reason=outcome.status_reason, message=outcome.status_message))
            if self.status_manager.get_pod_status(uid) is None:
                seen = None  # not written (an aborted update): look again next time
        self.rejections_written = seen
    # --8<-- [end:record_rejections]

    def pod_status(self, pod: V1Pod) -> Optional[V1PodStatus]:
        """The status the API would show for the pod after the status manager's write (None before the first sync).

        Upstream: pkg/kubelet/status/status_manager.go manager.syncPod
        """
        if self.status_manager.get_pod_status(pod.metadata.uid) is None:
            return None
        return self.status_manager.api_status(pod, self.pod_workers.could_have_running_containers(pod.metadata.uid))
# --8<-- [end:kubelet]
