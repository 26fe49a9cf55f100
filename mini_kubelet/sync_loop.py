"""The kubelet's main loop: config updates, PLEG events, the sync tick and housekeeping, one at a time.

Upstream: pkg/kubelet/kubelet.go (syncLoop, syncLoopIteration, isSyncPodWorthy)
Go's syncLoop blocks in a select over its channels, and when several are ready it picks one at random.
Here time is virtual and the order is fixed: at each instant the PLEG relists first (its own goroutine in
Go), then the tickers fire (a ticker channel holds one tick; a tick nobody took is dropped), then the loop
takes one message at a time from the first non-empty channel in the order config → PLEG → sync →
housekeeping, and the pod workers run after each message. The probe managers' channels are not modelled.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable, Optional, Protocol

from kubernetes.client import V1Pod

from .clock import Clock
from .pleg import CONTAINER_DIED, CONTAINER_REMOVED, GENERIC_PLEG_RELIST_PERIOD, PodLifecycleEvent
from .types import PodOperation, PodUpdate

# --8<-- [start:constants]
SYNC_PERIOD = timedelta(seconds=1)  # syncLoop's syncTicker
HOUSEKEEPING_PERIOD = timedelta(seconds=2)  # kubelet.go housekeepingPeriod
HOUSEKEEPING_WARNING_DURATION = timedelta(seconds=1)  # a slower housekeeping is logged
# The sync loop's own back-off while the runtime reports errors (not CrashLoopBackOff, which is per container)
SYNC_LOOP_BACK_OFF_BASE, SYNC_LOOP_BACK_OFF_MAX, SYNC_LOOP_BACK_OFF_FACTOR = timedelta(milliseconds=100), \
    timedelta(seconds=5), 2
# --8<-- [end:constants]


def is_sync_pod_worthy(event: PodLifecycleEvent) -> bool:
    """Every PLEG event but ContainerRemoved is worth a sync. Upstream: pkg/kubelet/kubelet.go isSyncPodWorthy"""
    return event.type != CONTAINER_REMOVED


class SyncHandler(Protocol):
    """What the sync loop dispatches to. Upstream: pkg/kubelet/kubelet.go SyncHandler"""

    def handle_pod_additions(self, pods: list[V1Pod]) -> None: ...
    def handle_pod_updates(self, pods: list[V1Pod]) -> None: ...
    def handle_pod_removes(self, pods: list[V1Pod]) -> None: ...
    def handle_pod_reconcile(self, pods: list[V1Pod]) -> None: ...
    def handle_pod_syncs(self, pods: list[V1Pod]) -> None: ...
    def handle_pod_cleanups(self) -> Optional[str]: ...


class LoopKubelet(Protocol):
    """The parts of the Kubelet syncLoopIteration reads besides the handler.

    Upstream: pkg/kubelet/kubelet.go Kubelet (podManager, sourcesReady, getPodsToSync, cleanUpContainersInPod)
    """

    log: list[str]
    sources_ready: object  # config.sources.SourcesReady

    def get_pod_by_uid(self, uid: str) -> Optional[V1Pod]: ...
    def get_pods_to_sync(self) -> list[V1Pod]: ...
    def clean_up_containers_in_pod(self, uid: str, container_id: str) -> None: ...


@dataclass
class Channels:
    """syncLoopIteration's inputs. A None on the config channel means it was closed.

    Upstream: pkg/kubelet/kubelet.go syncLoopIteration's arguments (configCh, plegCh, syncCh, housekeepingCh)
    """

    config: deque = field(default_factory=deque)  # PodConfig.updates
    pleg: deque = field(default_factory=deque)  # GenericPLEG.watch()
    sync: deque = field(default_factory=lambda: deque(maxlen=1))  # the 1 s ticker
    housekeeping: deque = field(default_factory=lambda: deque(maxlen=1))  # the 2 s ticker

    def ready(self) -> bool:
        """Whether select would find a channel ready."""
        return bool(self.config or self.pleg or self.sync or self.housekeeping)


# --8<-- [start:sync_loop_iteration]
def sync_loop_iteration(kl: LoopKubelet, channels: Channels, handler: SyncHandler) -> bool:
    """Handle one message from the first ready channel; False only when the config channel is closed.

    Upstream: pkg/kubelet/kubelet.go Kubelet.syncLoopIteration
    """
    if channels.config:
        update: Optional[PodUpdate] = channels.config.popleft()
        if update is None:
            kl.log.append("Update channel is closed, exiting the sync loop")
            return False
        dispatch = {PodOperation.ADD: handler.handle_pod_additions, PodOperation.UPDATE: handler.handle_pod_updates,
                    PodOperation.REMOVE: handler.handle_pod_removes, PodOperation.RECONCILE: handler.handle_pod_reconcile,
                    PodOperation.DELETE: handler.handle_pod_updates}  # a graceful deletion is an update
        if update.op in dispatch:
            kl.log.append(f"SyncLoop {update.op.name} source={update.source} pods={_names(update.pods)}")
            dispatch[update.op](update.pods)
        elif update.op == PodOperation.SET:
            kl.log.append("Kubelet does not support snapshot update")
        else:
            kl.log.append(f"Invalid operation type received: {update.op}")
        kl.sources_ready.add_source(update.source)
    elif channels.pleg:
        event: PodLifecycleEvent = channels.pleg.popleft()
        if is_sync_pod_worthy(event):
            pod = kl.get_pod_by_uid(event.id)
            if pod is not None:
                kl.log.append(f"SyncLoop (PLEG): event for pod {_names([pod])}: {event.type} {event.data}")
                handler.handle_pod_syncs([pod])
        if event.type == CONTAINER_DIED and event.data:
            kl.clean_up_containers_in_pod(event.id, event.data)
    elif channels.sync:
        channels.sync.popleft()
        pods = kl.get_pods_to_sync()
        if pods:
            kl.log.append(f"SyncLoop (SYNC) pods={_names(pods)}")
            handler.handle_pod_syncs(pods)
    elif channels.housekeeping:
        channels.housekeeping.popleft()
        if not kl.sources_ready.all_ready():
            kl.log.append("SyncLoop (housekeeping, skipped): sources aren't ready yet")
        else:
            err = handler.handle_pod_cleanups()  # in no virtual time, so never longer than the 1 s warning
            if err:
                kl.log.append(f"Failed cleaning pods: {err}")
    return True
# --8<-- [end:sync_loop_iteration]


def _names(pods: list[V1Pod]) -> str:
    return "[" + " ".join(f"{p.metadata.namespace}/{p.metadata.name}" for p in pods) + "]"


# --8<-- [start:runtime_errors]
def runtime_errors(health_checks: dict[str, Callable[[], tuple[bool, Optional[str]]]]) -> list[str]:
    """The failing health checks, each as "<name> is not healthy: <error>" (the PLEG registers as "PLEG").

    Upstream: pkg/kubelet/runtime.go runtimeState.runtimeErrors (the health-check part; the container
    runtime's own status and network errors belong to the runtime side)
    """
    return [f"{name} is not healthy: {err}" for name, check in health_checks.items() for ok, err in [check()] if not ok]
# --8<-- [end:runtime_errors]


# --8<-- [start:sync_loop_back_off]
class SyncLoopBackOff:
    """How long syncLoop sleeps while the runtime reports errors: 100 ms, doubling, at most 5 s.

    Upstream: pkg/kubelet/kubelet.go Kubelet.syncLoop (base, max, factor); reset by a healthy turn
    Not the crash-loop back-off of containers (10 s doubling to 300 s, per container).
    """

    def __init__(self):
        self.duration = SYNC_LOOP_BACK_OFF_BASE

    def next(self) -> timedelta:
        """The sleep now, and double it for the next time. Upstream: syncLoop's time.Sleep(duration)"""
        sleep = self.duration
        self.duration = min(SYNC_LOOP_BACK_OFF_MAX, self.duration * SYNC_LOOP_BACK_OFF_FACTOR)
        return sleep

    def reset(self) -> None:
        """Upstream: syncLoop's duration = base after a healthy check"""
        self.duration = SYNC_LOOP_BACK_OFF_BASE
# --8<-- [end:sync_loop_back_off]


# --8<-- [start:sync_loop]
class SyncLoop:
    """The kubelet's main loop on the virtual clock, with the PLEG relisting and the pod workers running.

    Upstream: pkg/kubelet/kubelet.go Kubelet.syncLoop (and Kubelet.Run starting the PLEG)
    runtime_errors() is runtimeState.runtimeErrors(): while it is non-empty no pod is synced.
    """

    def __init__(self, kl: LoopKubelet, handler: SyncHandler, channels: Channels, clock: Clock, *,
                 relist: Optional[Callable[[], None]] = None, run_pod_workers: Callable[[], object] = lambda: None,
                 runtime_errors: Callable[[], list[str]] = list,
                 relist_period: timedelta = GENERIC_PLEG_RELIST_PERIOD,
                 idle_until: Optional[Callable[[datetime], Optional[datetime]]] = None,
                 resync_before: Optional[Callable[[datetime], None]] = None):
        self.kl, self.handler, self.channels, self.clock = kl, handler, channels, clock
        self.idle_until, self.resync_before = idle_until, resync_before
        self.relist, self.run_pod_workers, self.runtime_errors = relist, run_pod_workers, runtime_errors
        self.relist_period, self.back_off = relist_period, SyncLoopBackOff()
        start = clock.now()
        self.next_relist, self.next_sync, self.next_housekeeping = start, start + SYNC_PERIOD, start + HOUSEKEEPING_PERIOD
        self.next_turn: datetime = start  # when the loop may look at its channels again
        # Other goroutines' tickers the node runs beside the loop: (when next due, or None; what a tick does).
        self.timers: list[tuple[Callable[[], Optional[datetime]], Callable[[], None]]] = []
        self.sync_loop_monitor: Optional[datetime] = None  # LatestLoopEntryTime: when the loop last turned
        self.stopped = False

    def step(self) -> None:
        """Everything due at the clock's current instant.

        Upstream: pkg/kubelet/kubelet.go Kubelet.syncLoop (one pass of its for loop, with the tickers and PLEG)
        """
        now = self.clock.now()
        if self.relist is not None and now >= self.next_relist:
            self.relist()
            self.next_relist = now + self.relist_period
        if now >= self.next_sync:
            self.channels.sync.append(now)
            self.next_sync = now + SYNC_PERIOD
        if now >= self.next_housekeeping:
            self.channels.housekeeping.append(now)
            self.next_housekeeping = now + HOUSEKEEPING_PERIOD
        for due, tick in self.timers:
            at = due()
            if at is not None and now >= at:
                tick()
        self.run_pod_workers()
        if now < self.next_turn or self.stopped:
            return
        errors = self.runtime_errors()
        if errors:
            self.kl.log.append(f"Skipping pod synchronization: {errors}")
            self.next_turn = now + self.back_off.next()
            return
        self.back_off.reset()
        self.sync_loop_monitor = now
        while self.channels.ready():
            if not sync_loop_iteration(self.kl, self.channels, self.handler):
                self.stopped = True
                return
            self.sync_loop_monitor = self.clock.now()
            self.run_pod_workers()

    def run_until(self, end: datetime) -> None:
        """Step through every instant something is due, up to and including end.

        Upstream: pkg/kubelet/kubelet.go Kubelet.syncLoop (which never ends while the config channel is open)
        """
        while not self.stopped:
            self.step()
            if self.stopped:
                return
            due = min(t for t in (self.next_relist if self.relist else None, self.next_sync, self.next_housekeeping,
                                  self.next_turn if self.next_turn > self.clock.now() else None,
                                  *self.timers_due()) if t is not None)
            if due > end:
                return
            self.clock.advance((self._skip_idle(end) or due) - self.clock.now())
# --8<-- [end:sync_loop]

    def timers_due(self) -> list[datetime]:
        """When each ticker beside the loop next acts (those with nothing to do left out)."""
        return [at for at in (due() for due, _ in self.timers) if at is not None]

    def _skip_idle(self, end: datetime) -> Optional[datetime]:
        """The last relist instant up to end, or to the first sync tick with a pod due, if every turn till then is idle.

        idle_until(end) (no upstream counterpart) says None when a turn may do something, else when the work queue
        next has a pod due (end if none is before). Until the first sync tick after that, each relist finds the runtime
        unchanged, each tick finds no pod, each housekeeping is settled: only the times move on. The loop then
        goes straight to the last relist before that tick (or end), whose relist sets the timestamps the skipped
        ones would have left behind, and the tickers' next times are those the skipped turns would have set.
        resync_before(last), if given, does what the skipped ticks' takes would have done (idle_until planned them).
        """
        now = self.clock.now()
        busy = self.idle_until(end) if self.idle_until is not None and self.relist is not None else None
        if busy is None or self.next_turn > now:
            return None
        limit = end
        if busy < end:  # the first tick strictly after busy: GetWork takes the UIDs due before now
            ticks = max(busy - self.next_sync, -SYNC_PERIOD) // SYNC_PERIOD + 1
            limit = min(end, self.next_sync + ticks * SYNC_PERIOD)
        limit = min([limit] + self.timers_due())  # a ticker's turn is not skipped: the loop steps at it
        if limit < self.next_relist:
            return None
        last = self.next_relist + ((limit - self.next_relist) // self.relist_period) * self.relist_period
        if last <= now:
            return None
        if self.resync_before is not None:
            self.resync_before(last)
        self.next_relist = last
        self.next_sync = _first_at_or_after(self.next_sync, SYNC_PERIOD, last)
        self.next_housekeeping = _first_at_or_after(self.next_housekeeping, HOUSEKEEPING_PERIOD, last)
        return last


def _first_at_or_after(start: datetime, period: timedelta, instant: datetime) -> datetime:
    """The first of start, start + period, ... that is not before instant."""
    return start if start >= instant else start + -((start - instant) // period) * period
