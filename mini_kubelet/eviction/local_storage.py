"""Local-storage limit evictions: a pod over an emptyDir sizeLimit or an ephemeral-storage limit goes at once.

Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.localStorageEviction and the three checks it
runs on each pod. They run at every pass while localStorageCapacityIsolation is on (the kubelet default),
whatever the thresholds; a pass that evicts this way skips threshold eviction. Each eviction asks for a
grace override of 0, with no annotations and no DisruptionTarget condition; evict (the manager's evictPod)
refuses a critical pod and returns None.
"""

from __future__ import annotations

from typing import Callable, Optional

from kubernetes.client import V1Pod

from .. import api, resource, stats
from . import api as evapi
from . import messages
from .records import EvictedPod

# --8<-- [start:constants]
SIGNAL_EMPTY_DIR_FS_LIMIT = "emptydirfs.limit"  # metric labels of the local-storage evictions
SIGNAL_EPHEMERAL_POD_FS_LIMIT = "ephemeralpodfs.limit"
SIGNAL_EPHEMERAL_CONTAINER_FS_LIMIT = "ephemeralcontainerfs.limit"
# --8<-- [end:constants]

EvictFunc = Callable[[V1Pod, str, str], Optional[EvictedPod]]  # (pod, signal, message): evict with override 0


# --8<-- [start:local_storage_eviction]
def local_storage_eviction(pods: list[V1Pod], stats_func, evict: EvictFunc,
                           dedicated_image_fs: bool) -> list[EvictedPod]:
    """Evict every pod over an emptyDir sizeLimit, its pod ephemeral-storage limit, or a container's limit.

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.localStorageEviction
    """
    evicted: list[EvictedPod] = []
    for pod in pods:
        pod_stats = stats_func(pod)
        if pod_stats is None:
            continue
        # The first check that evicts the pod skips the others; a critical pod is refused by each.
        result = (empty_dir_limit_eviction(pod_stats, pod, evict)
                  or pod_ephemeral_storage_limit_eviction(pod_stats, pod, evict)
                  or container_ephemeral_storage_limit_eviction(pod_stats, pod, evict, dedicated_image_fs))
        if result is not None:
            evicted.append(result)
    return evicted
# --8<-- [end:local_storage_eviction]


def limits_local_storage(pod: V1Pod) -> bool:
    """Whether one of the three checks could evict the pod: it has an emptyDir sizeLimit or a container (init ones
    too) with an ephemeral-storage limit."""
    return any(v.empty_dir is not None and v.empty_dir.size_limit is not None for v in pod.spec.volumes or []) or any(
        "ephemeral-storage" in ((c.resources.limits if c.resources else None) or {})
        for c in [*(pod.spec.containers or []), *(pod.spec.init_containers or [])])


def empty_dir_limit_eviction(pod_stats: stats.PodStats, pod: V1Pod, evict: EvictFunc) -> Optional[EvictedPod]:
    """An emptyDir (any medium) using more than its sizeLimit evicts the pod with override 0.

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.emptyDirLimitEviction
    """
    used = {v.name: v.used_bytes for v in pod_stats.volume_stats if v.used_bytes is not None}
    for volume in pod.spec.volumes or []:
        size_limit = volume.empty_dir.size_limit if volume.empty_dir is not None else None
        if size_limit is None or volume.name not in used:
            continue
        limit = api.parse_quantity(str(size_limit))
        if limit > 0 and used[volume.name] > limit:
            message = messages.EMPTY_DIR_MESSAGE_FMT.format(volume.name, evapi.quantity_string(str(size_limit)))
            return evict(pod, SIGNAL_EMPTY_DIR_FS_LIMIT, message)  # first volume over
    return None


def pod_ephemeral_storage_limit_eviction(pod_stats: stats.PodStats, pod: V1Pod,
                                         evict: EvictFunc) -> Optional[EvictedPod]:
    """A pod using more ephemeral storage than its containers' limits add up to is evicted with override 0.

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.podEphemeralStorageLimitEviction
    """
    containers = [*(pod.spec.containers or []), *(pod.spec.init_containers or [])]
    if not any("ephemeral-storage" in ((c.resources.limits if c.resources else None) or {}) for c in containers):
        return None  # no container limits it, so the pod's limits have no entry: skip summing them all
    limits = resource.pod_limits(pod)
    if "ephemeral-storage" not in limits:
        return None
    storage = pod_stats.ephemeral_storage
    usage = storage.used_bytes if storage is not None and storage.used_bytes is not None else 0
    limit = limits["ephemeral-storage"]
    if usage > limit:
        message = messages.POD_EPHEMERAL_STORAGE_MESSAGE_FMT.format(_pod_limit_text(pod, limit))
        return evict(pod, SIGNAL_EPHEMERAL_POD_FS_LIMIT, message)
    return None


def container_ephemeral_storage_limit_eviction(pod_stats: stats.PodStats, pod: V1Pod, evict: EvictFunc,
                                               dedicated_image_fs: bool) -> Optional[EvictedPod]:
    """A container whose logs (+ writable layer, without a dedicated imagefs) exceed its limit evicts the pod.

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.containerEphemeralStorageLimitEviction
    """
    limits = {}
    for container in pod.spec.containers or []:  # regular containers only
        text = ((container.resources.limits if container.resources else None) or {}).get("ephemeral-storage")
        if text is not None and api.value(text) != 0:
            limits[container.name] = text
    for container_stats in pod_stats.containers:
        used = _used(container_stats.logs) + (0 if dedicated_image_fs else _used(container_stats.rootfs))
        text = limits.get(container_stats.name)
        if text is not None and api.parse_quantity(text) < used:
            message = messages.CONTAINER_EPHEMERAL_STORAGE_MESSAGE_FMT.format(container_stats.name, evapi.quantity_string(text))
            return evict(pod, SIGNAL_EPHEMERAL_CONTAINER_FS_LIMIT, message)
    return None


def _used(fs: Optional[stats.FsStats]) -> int:
    return fs.used_bytes if fs is not None and fs.used_bytes is not None else 0


def _pod_limit_text(pod: V1Pod, total) -> str:
    """How Go prints PodLimits' ephemeral-storage: a lone quantity keeps its text, a sum is re-canonicalized."""
    texts = [((c.resources.limits if c.resources else None) or {}).get("ephemeral-storage")
             for c in (pod.spec.containers or []) + (pod.spec.init_containers or [])]
    texts = [t for t in texts if t is not None]
    if len(texts) == 1 and api.parse_quantity(texts[0]) == total:
        return evapi.quantity_string(texts[0])
    _, fmt = evapi.parse_quantity(texts[0]) if texts else (None, evapi.BINARY_SI)
    return evapi.format_quantity(total, fmt)  # Add keeps the first operand's format and drops its cached text
