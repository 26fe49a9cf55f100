"""The kubelet's work queue: pod UIDs with the time their next sync is due.

Upstream: pkg/kubelet/util/queue/work_queue.go (basicWorkQueue)
"""

from __future__ import annotations

import heapq
from datetime import datetime, timedelta
from typing import Optional

from .clock import Clock


class BasicWorkQueue:
    """UIDs due at a time; GetWork takes those whose time is strictly before now.

    Upstream: pkg/kubelet/util/queue/work_queue.go basicWorkQueue
    """

    def __init__(self, clock: Clock):
        self.clock = clock
        self.queue: dict[str, datetime] = {}
        self._times: list[tuple[datetime, str]] = []  # (due, uid) as enqueued, earliest first; stale ones are skipped
        self._order: dict[str, int] = {}  # uid -> when it entered the queue (the queue's iteration order)
        self._entered = 0
        self.generation = 0  # counts every change (a reader that saw the same number saw the same queue)

    def enqueue(self, uid: str, delay: float | timedelta) -> None:
        """Make uid due after delay (replacing any earlier due time). Upstream: basicWorkQueue.Enqueue"""
        delay = delay if isinstance(delay, timedelta) else timedelta(seconds=delay)
        self.generation += 1
        if uid not in self.queue:
            self._entered += 1
            self._order[uid] = self._entered
        self.queue[uid] = at = self.clock.now() + delay
        heapq.heappush(self._times, (at, uid))

    def requeue(self, uid: str, at: Optional[datetime]) -> None:
        """What GetWork taking uid and Enqueue putting it back due at `at` leave (None: taken, not put back)."""
        if uid in self.queue:
            del self.queue[uid]
            del self._order[uid]
            self.generation += 1
        if at is not None:
            self.enqueue(uid, at - self.clock.now())

    def next_due(self) -> Optional[datetime]:
        """The earliest time a UID is due (None: the queue is empty); replaced times are dropped on the way."""
        times = self._times
        while times and self.queue.get(times[0][1]) != times[0][0]:
            heapq.heappop(times)
        return times[0][0] if times else None

    def get_work(self) -> list[str]:
        """Remove and return the UIDs whose time is before now (a delay of 0 waits for the next tick).

        Upstream: pkg/kubelet/util/queue/work_queue.go basicWorkQueue.GetWork
        Go iterates a map, so the order is unspecified; here it is the order of enqueueing.
        """
        now, times, due = self.clock.now(), self._times, set()
        while times and times[0][0] < now:  # only the due times are looked at (a replaced or taken one is stale)
            at, uid = heapq.heappop(times)
            if self.queue.get(uid) == at:
                due.add(uid)
        ordered = sorted(due, key=self._order.__getitem__)
        for uid in ordered:
            del self.queue[uid]
            del self._order[uid]
        self.generation += bool(ordered)
        return ordered
