"""The pod cache: the runtime's latest PodStatus for each pod, stamped with when it was read.

Upstream: pkg/kubelet/container/cache.go (cache; the generic PLEG's path, EventedPLEG off as in v1.27)
The PLEG writes it on every relist; a pod worker waits in GetNewerThan until the cache holds something
newer than its last sync. Go blocks the worker's goroutine on a channel; here the wait is a callback that
the cache calls when an entry or its global timestamp catches up.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Optional

from .container import PodStatus


@dataclass
class Data:
    """One cached entry: the status, the error reading it, and when it was read.

    Upstream: pkg/kubelet/container/cache.go data
    """

    status: PodStatus
    err: Optional[Exception] = None
    modified: Optional[datetime] = None


def _after(a: Optional[datetime], b: Optional[datetime]) -> bool:
    """Go's a.After(b), where None is the zero time (before every time)."""
    return a is not None and (b is None or a > b)


class Cache:
    """Pod statuses by UID, a global timestamp, and the waiters for something newer.

    Upstream: pkg/kubelet/container/cache.go cache
    """

    def __init__(self):
        self.pods: dict[str, Data] = {}
        self.timestamp: Optional[datetime] = None
        self.subscribers: dict[str, list[tuple[Optional[datetime], Callable[[Data], None]]]] = {}

    def get(self, uid: str) -> Data:
        """The cached entry, or an empty status when the runtime had nothing for the pod.

        Upstream: pkg/kubelet/container/cache.go cache.Get (makeDefaultData on a miss)
        """
        return self.pods.get(uid) or Data(PodStatus(id=uid, name="", namespace=""))

    def get_if_newer_than(self, uid: str, min_time: Optional[datetime]) -> Optional[Data]:
        """The entry if it, or the cache as a whole, is newer than min_time; else None (the caller waits).

        Upstream: pkg/kubelet/container/cache.go cache.getIfNewerThan
        """
        data = self.pods.get(uid)
        global_newer = _after(self.timestamp, min_time)
        if data is None and global_newer:
            return self.get(uid)
        if data is not None and (_after(data.modified, min_time) or global_newer):
            return data
        return None

    def subscribe(self, uid: str, min_time: Optional[datetime], deliver: Callable[[Data], None]) -> None:
        """Deliver the entry now if it is newer than min_time, else as soon as it is.

        Upstream: pkg/kubelet/container/cache.go cache.GetNewerThan (subscribe)
        """
        data = self.get_if_newer_than(uid, min_time)
        if data is not None:
            deliver(data)
        else:
            self.subscribers.setdefault(uid, []).append((min_time, deliver))

    def set(self, uid: str, status: PodStatus, err: Optional[Exception], timestamp: datetime) -> bool:
        """Store a status read at timestamp and wake the waiters it satisfies.

        Upstream: pkg/kubelet/container/cache.go cache.Set
        """
        self.pods[uid] = Data(status, err, timestamp)
        self.notify(uid, timestamp)
        return True

    def delete(self, uid: str) -> None:
        """Forget a pod. Upstream: pkg/kubelet/container/cache.go cache.Delete"""
        self.pods.pop(uid, None)

    def update_time(self, timestamp: datetime) -> None:
        """Say that every entry is current as of timestamp, and wake the waiters.

        Upstream: pkg/kubelet/container/cache.go cache.UpdateTime
        """
        self.timestamp = timestamp
        for uid in list(self.subscribers):
            self.notify(uid, timestamp)

    def notify(self, uid: str, timestamp: datetime) -> None:
        """Wake every waiter whose time is not after timestamp (note: not strictly newer, unlike subscribe).

        Upstream: pkg/kubelet/container/cache.go cache.notify
        """
        waiting = self.subscribers.pop(uid, [])
        still = [(t, deliver) for t, deliver in waiting if t is not None and timestamp < t]
        for t, deliver in waiting:
            if not (t is not None and timestamp < t):
                deliver(self.get(uid))
        if still:
            self.subscribers[uid] = still
