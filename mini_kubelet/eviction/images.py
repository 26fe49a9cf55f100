"""The node-level reclaim the eviction manager tries before evicting a pod: image and container GC.

Upstream: pkg/kubelet/images/image_gc_manager.go (DeleteUnusedImages, freeSpace) and
pkg/kubelet/kuberuntime/kuberuntime_gc.go (evictContainers, reached through
pkg/kubelet/container/container_gc.go DeleteAllUnusedContainers).

The real kubelet asks the container runtime which images and containers exist; the mini kubelet
keeps them in two small in-memory stores. Only what eviction uses is simulated: the eviction path
ignores the image GC's high/low thresholds and tries to free everything eligible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Iterable, Optional

# --8<-- [start:constants]
IMAGE_MINIMUM_GC_AGE = timedelta(minutes=2)  # KubeletConfiguration imageMinimumGCAge default
MAX_PER_POD_CONTAINER = 1  # container GC policy default: dead instances kept per (pod, container)
CONTAINER_MINIMUM_GC_AGE = timedelta(0)  # container GC policy default MinAge
# --8<-- [end:constants]


@dataclass
class ImageRecord:
    """One image the runtime holds: its size, when the kubelet first saw it and last saw it used.

    Upstream: pkg/kubelet/images/image_gc_manager.go imageRecord
    """

    id: str
    size: int  # bytes
    first_detected: datetime
    last_used: Optional[datetime] = None  # None = Go's zero time: never used, so the oldest of all
    pinned: bool = False
    in_use: bool = False  # a container (running or not) references it
    inodes: int = 0  # inodes the image's layers hold (for the inodesFree signals)


# --8<-- [start:ImageStore]
@dataclass
class ImageStore:
    """The runtime's images, and the image GC that deletes the unused ones.

    Upstream: pkg/kubelet/images/image_gc_manager.go realImageGCManager
    """

    min_age: timedelta = IMAGE_MINIMUM_GC_AGE
    images: dict[str, ImageRecord] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)  # every image removed, in order
    gc_invocations: int = 0  # how often delete_unused_images ran

    def add_image(self, image_id: str, size: int, now: datetime, *, pinned: bool = False, inodes: int = 0) -> ImageRecord:
        """Record a pulled image, first detected now (a re-pull keeps the first detection time).

        Upstream: pkg/kubelet/images/image_gc_manager.go detectImages
        """
        record = self.images.get(image_id)
        if record is None:
            record = self.images[image_id] = ImageRecord(image_id, size, now, pinned=pinned, inodes=inodes)
        record.size, record.pinned, record.inodes = size, pinned, inodes
        return record

    def set_in_use(self, image_id: str, in_use: bool, now: datetime) -> None:
        """Mark an image used (or no longer used) by a container; a used image's last_used becomes now.

        Upstream: pkg/kubelet/images/image_gc_manager.go detectImages
        """
        record = self.images[image_id]
        record.in_use = in_use
        if in_use:
            record.last_used = now

    def total_size(self) -> int:
        """Bytes all images take on the image filesystem.

        Upstream: none (the runtime's ImageFsInfo reports this in the real kubelet)
        """
        return sum(record.size for record in self.images.values())

    def delete_unused_images(self, now: datetime) -> tuple[int, int]:
        """Delete every unused, unpinned image older than min_age, least recently used first; (bytes, inodes) freed.

        Upstream: pkg/kubelet/images/image_gc_manager.go DeleteUnusedImages
        """
        self.gc_invocations += 1
        return self.free_space(None, now)

    def free_space(self, bytes_to_free: Optional[int], now: datetime) -> tuple[int, int]:
        """Delete eligible images in eviction order until bytes_to_free (None = no limit) are freed.

        Upstream: pkg/kubelet/images/image_gc_manager.go freeSpace
        """
        for record in self.images.values():  # detectImages: images in use get last_used = now
            if record.in_use:
                record.last_used = now
        candidates = [r for r in self.images.values() if not r.in_use and not r.pinned]
        # byLastUsedAndDetected: last used ascending (never used first), ties by first detection.
        # Upstream sorts a map's values with an unstable sort; exact ties keep insertion order here.
        candidates.sort(key=lambda r: (r.last_used is not None, r.last_used or now, r.first_detected))
        freed_bytes = freed_inodes = 0
        for record in candidates:
            if record.last_used is not None and record.last_used >= now:
                continue  # used too recently
            if now - record.first_detected < self.min_age:
                continue  # just pulled: it may be about to be used
            del self.images[record.id]
            self.deleted.append(record.id)
            freed_bytes += record.size
            freed_inodes += record.inodes
            if bytes_to_free is not None and freed_bytes >= bytes_to_free:
                break
        return freed_bytes, freed_inodes
# --8<-- [end:ImageStore]


@dataclass
class DeadContainer:
    """An exited container the runtime still holds (its writable layer and logs take disk space).

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_gc.go containerGCInfo
    """

    pod_uid: str
    name: str
    created: datetime
    size: int = 0  # bytes of writable layer + logs
    inodes: int = 0
    id: str = ""


# --8<-- [start:ContainerStore]
@dataclass
class ContainerStore:
    """The runtime's exited containers, and the container GC that removes them.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_gc.go containerGC
    """

    min_age: timedelta = CONTAINER_MINIMUM_GC_AGE
    max_per_pod_container: int = MAX_PER_POD_CONTAINER
    dead: list[DeadContainer] = field(default_factory=list)
    removed: list[DeadContainer] = field(default_factory=list)
    gc_invocations: int = 0

    def delete_all_unused_containers(self, now: datetime, active_pod_uids: Iterable[str]) -> tuple[int, int]:
        """Remove dead containers: all of pods no longer active, else all but the newest per (pod, container).

        Upstream: pkg/kubelet/kuberuntime/kuberuntime_gc.go evictContainers (evictNonDeletedPods=true)
        """
        self.gc_invocations += 1
        active = set(active_pod_uids)
        units: dict[tuple[str, str], list[DeadContainer]] = {}
        for container in self.dead:
            if container.created > now - self.min_age:
                continue  # younger than the policy's minimum age
            units.setdefault((container.pod_uid, container.name), []).append(container)
        doomed: list[DeadContainer] = []
        for (pod_uid, _name), unit in units.items():
            unit.sort(key=lambda c: c.created, reverse=True)  # newest first (byCreated)
            # A pod the kubelet no longer runs loses every dead container (ShouldPodRuntimeBeRemoved);
            # otherwise MaxPerPodContainer newest instances are kept.
            keep = 0 if pod_uid not in active else max(self.max_per_pod_container, 0)
            doomed.extend(unit[keep:])
        for container in doomed:
            self.dead.remove(container)
            self.removed.append(container)
        return sum(c.size for c in doomed), sum(c.inodes for c in doomed)
# --8<-- [end:ContainerStore]
