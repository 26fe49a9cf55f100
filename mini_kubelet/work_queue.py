"""The kubelet's work queue: pod UIDs with the time their next sync is due.

Upstream: pkg/kubelet/util/queue/work_queue.go (basicWorkQueue)
"""

from __future__ import annotations

from datetime import datetime, timedelta

from .clock import Clock


class BasicWorkQueue:
    """UIDs due at a time; GetWork takes those whose time is strictly before now.

    Upstream: pkg/kubelet/util/queue/work_queue.go basicWorkQueue
    """

    def __init__(self, clock: Clock):
        self.clock = clock
        self.queue: dict[str, datetime] = {}

    def enqueue(self, uid: str, delay: float | timedelta) -> None:
        """Make uid due after delay (replacing any earlier due time). Upstream: basicWorkQueue.Enqueue"""
        delay = delay if isinstance(delay, timedelta) else timedelta(seconds=delay)
        self.queue[uid] = self.clock.now() + delay

    def get_work(self) -> list[str]:
        """Remove and return the UIDs whose time is before now (a delay of 0 waits for the next tick).

        Upstream: pkg/kubelet/util/queue/work_queue.go basicWorkQueue.GetWork
        Go iterates a map, so the order is unspecified; here it is the order of enqueueing.
        """
        now = self.clock.now()
        due = [uid for uid, at in self.queue.items() if at < now]
        for uid in due:
            del self.queue[uid]
        return due
