"""A quiet stretch's resyncs in one go: each settled Pod's minute resync, each crash-looping Pod's repeated back-off.

Upstream: none. Upstream runs every one of them: pkg/kubelet/pod_workers.go completeWork queues the next sync a
resync interval (or, after an error, a back-off period) later, and pkg/kubelet/kubelet.go syncLoopIteration takes
the Pods due at each sync tick. While the sync loop is idle the plan follows every take ahead: a Pod whose resync
is settled (PodWorkers.resync_if_settled) is settled again at each take, a Pod whose sync repeats its crash-loop
back-off (KubeletSyncer._repeat_back_off) repeats it at each take until a back-off ends, and the first take that is
neither is where the stretch ends. Performing the plan writes what those takes leave behind: the sync loop's line
for each tick, the BackOff events and the workers' error lines at their times, and each Pod's last sync time and
next due time as its last take left them.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Optional

from .events import Event

SETTLED, REPEATED, DROPPED = 0, 1, 2  # what a take does: settle the Pod, repeat its back-off, or drop a gone Pod


@dataclass
class _Takes:
    """One Pod's takes: at ticks first, first + step, ... (before stop), each requeueing it `delay` seconds later."""

    uid: str
    kind: int
    first: int  # tick indices: tick k is the plan's first tick + k sync periods
    step: int = 0
    delay: float = 0.0
    stop: Optional[int] = None


class ResyncPlan:
    """The takes of the sync ticks first_tick, first_tick + period, ... up to end, while nothing else happens.

    busy: the due time of the first take that would do more than settle or repeat (end if none is before it).
    """

    def __init__(self, kubelet, first_tick: datetime, period: timedelta, end: datetime):
        self.kubelet, self.first_tick, self.period, self.end, self.busy = kubelet, first_tick, period, end, end
        self.seen: tuple = ()  # the Kubelet's state it was made in
        self.done = 0  # the ticks before this one are taken (by perform, or by the loop itself)
        self.pods: list[_Takes] = []
        self._ordered: Optional[tuple] = None  # the pod manager's generation, the takes in its order, an index
        workers, syncer, manager = kubelet.pod_workers, kubelet.syncer, kubelet.pod_manager
        settled = None  # a settled take's (step, delay): the resync interval (idle_worker_data allows no jitter)
        for due, uid in sorted((due, uid) for uid, due in kubelet.work_queue.queue.items()):
            if due >= self.busy:
                break  # taken at the first tick after busy, or later: past the stretch
            first = self.index_after(due)
            pod = manager.pod_by_uid.get(uid)
            if pod is None:  # getPodsToSync leaves out a UID the pod manager no longer has
                self.pods.append(_Takes(uid, DROPPED, first))
                continue
            mirror = manager.get_mirror_pod_by_pod(pod)
            data = workers.idle_worker_data(pod, mirror, relisted=True)
            if data is not None and syncer.is_settled(pod, mirror, data.status):
                if settled is None:
                    delay = workers.requeue_delay(False, None)
                    settled = (self.steps(delay), delay)
                self.pods.append(_Takes(uid, SETTLED, first, *settled))
                continue
            ends = syncer.repeats_until(pod, mirror, data.status) if data is not None else None
            if ends is None or self.tick(first) >= ends:
                self.busy = min(self.busy, due)
                continue
            delay = workers.requeue_delay(False, syncer.backing_off[uid][4])
            step = self.steps(delay)
            stop = first + -(-(ends - self.tick(first)) // (step * period)) * step  # the first take at or after ends
            self.pods.append(_Takes(uid, REPEATED, first, step, delay, stop))
            if self.tick(stop) <= end:
                self.busy = min(self.busy, self.tick(stop - step) + timedelta(seconds=delay))

    def tick(self, index: int) -> datetime:
        return self.first_tick + index * self.period

    def index_after(self, due: datetime) -> int:
        """The first tick strictly after due: GetWork takes the UIDs due before now."""
        return 0 if due < self.first_tick else (due - self.first_tick) // self.period + 1

    def steps(self, delay: float) -> int:
        return timedelta(seconds=delay) // self.period + 1

    def perform(self, before: datetime) -> None:
        """Write what every take at a tick before `before` leaves, as the sync loop and the workers would have.

        The loop then turns at `before` itself and takes what is due at that tick: the plan goes on after it.
        """
        kl = self.kubelet
        done, count = self.done, -(-(before - self.first_tick) // self.period)  # the ticks before `before`
        self.done = count + (self.tick(count) == before)
        lines: dict[int, list[str]] = {}
        repeats, last = [], []
        for takes, name, rank in self._in_window(done, count):
            if takes.kind == DROPPED:
                if done <= takes.first < count:
                    kl.work_queue.requeue(takes.uid, None)
                continue
            first = takes.first + max(0, -(-(done - takes.first) // takes.step)) * takes.step  # its first take from done
            ticks = range(first, min(count, takes.stop if takes.stop is not None else count), takes.step)
            if not ticks:
                continue
            for k in ticks:
                lines.setdefault(k, []).append(name)
            if takes.kind == REPEATED:
                rank = kl.pod_workers.pod_updates.order[takes.uid]
                repeats += [(k, rank, takes.uid) for k in ticks]
            last.append((ticks[-1], takes.kind, rank, takes))
        for k in sorted(lines):  # syncLoopIteration's line for each tick, the Pods in the pod manager's order
            kl.handlers.log.append(f"SyncLoop (SYNC) pods=[{' '.join(lines[k])}]")
        for k, _, uid in sorted(repeats):  # each repeat's events and error, worker by worker
            _, _, _, recorded, err = kl.syncer.backing_off[uid]
            kl.recorder.events += [Event(self.tick(k), kind, reason, message, involved)
                                   for involved, kind, reason, message in recorded]
            kl.pod_workers.log.append(f"Error syncing pod, skipping: {err}")
        for k, _, _, takes in sorted(last, key=lambda entry: entry[:3]):  # settled at dispatch, repeats after
            kl.pod_workers.last_sync_time[takes.uid] = self.tick(k)
            kl.work_queue.requeue(takes.uid, self.tick(k) + timedelta(seconds=takes.delay))

    def _in_window(self, done: int, count: int) -> list[tuple[_Takes, Optional[str], int]]:
        """The Pods' takes in the pod manager's order, each with the Pod's name and place, but for settled ones
        with no take at a tick from done to before count (a settled Pod's takes come every `step` ticks, so
        those of a shorter window are the ones whose first take is at one of its ticks, counted round the step).

        Made again only once the pod manager has changed."""
        manager = self.kubelet.pod_manager
        if self._ordered is None or self._ordered[0] != manager.generation:
            order = manager.order
            pods = [(takes, manager.pod_by_uid.get(takes.uid), order.get(takes.uid, -1))
                    for takes in sorted(self.pods, key=lambda p: order.get(p.uid, -1))]
            entries = [(takes, None if pod is None else f"{pod.metadata.namespace}/{pod.metadata.name}", rank)
                       for takes, pod, rank in pods]
            step = next((takes.step for takes, _, _ in entries if takes.kind == SETTLED), 0)
            residues = sorted((takes.first % step, i) for i, (takes, _, _) in enumerate(entries) if takes.kind == SETTLED)
            others = [i for i, (takes, _, _) in enumerate(entries) if takes.kind != SETTLED]
            self._ordered = (manager.generation, entries, step, residues, others)
        _, entries, step, residues, others = self._ordered
        if not residues or count - done >= step:
            return entries
        low, high = bisect_left(residues, (done % step, -1)), bisect_left(residues, (count % step, -1))
        picked = residues[low:high] if done % step <= count % step else residues[low:] + residues[:high]
        return [entries[i] for i in sorted([i for _, i in picked] + others)]
