"""Why each container last failed to start (CrashLoopBackOff, CreateContainerError ...), per pod.

The API status shows it as the container's waiting reason and message until a start succeeds.
Upstream: pkg/kubelet/reason_cache.go ReasonCache (an LRU of 1000 entries there; a dict here)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from mini_kubelet.container import START_CONTAINER, PodSyncResult


@dataclass
class ReasonItem:
    """The error (as its Go error string) and message of a failed start.

    Upstream: pkg/kubelet/reason_cache.go ReasonItem
    """

    err: str
    message: str


class ReasonCache:
    """Failed starts by (pod UID, container name), updated from each SyncPod result.

    Upstream: pkg/kubelet/reason_cache.go ReasonCache
    """

    def __init__(self) -> None:
        self.cache: dict[str, ReasonItem] = {}

    @staticmethod
    def compose_key(uid: str, name: str) -> str:
        """Upstream: pkg/kubelet/reason_cache.go ReasonCache.composeKey"""
        return f"{uid}_{name}"

    def update(self, uid: str, result: PodSyncResult) -> None:
        """Record each failed StartContainer and forget each successful one.

        Upstream: pkg/kubelet/reason_cache.go ReasonCache.Update
        """
        for r in result.sync_results:
            if r.action != START_CONTAINER:
                continue
            if r.error:
                self.cache[self.compose_key(uid, r.target)] = ReasonItem(r.error, r.message)
            else:
                self.remove(uid, r.target)

    def remove(self, uid: str, name: str) -> None:
        """Upstream: pkg/kubelet/reason_cache.go ReasonCache.Remove"""
        self.cache.pop(self.compose_key(uid, name), None)

    def get(self, uid: str, name: str) -> Optional[ReasonItem]:
        """The last failure of the container's start, or None.

        Upstream: pkg/kubelet/reason_cache.go ReasonCache.Get
        """
        return self.cache.get(self.compose_key(uid, name))
