"""The order in which the eviction manager tries pods: first evicted first.

Upstream: pkg/kubelet/eviction/helpers.go (rankMemoryPressure, rankPIDPressure, rankDiskPressureFunc,
the comparators, podDiskUsage, localVolumeNames); the request they compare is
resource.get_resource_request_quantity (pkg/api/v1/resource/helpers.go GetResourceRequestQuantity).

Upstream sorts with sort.Sort, which is not stable in general; Go sorts up to 12 pods by insertion sort,
which is. Python's sort is stable, so the two agree whenever Go's does not depend on the input order.
The QoS class is never consulted: only usage, requests and priority.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterable, Optional

from kubernetes.client import V1Pod

from .. import stats as statsapi
from ..resource import get_resource_request_quantity
from . import api
from .signals import RESOURCE_EPHEMERAL_STORAGE, RESOURCE_INODES, RESOURCE_MEMORY, StatsFunc, _int64

# --8<-- [start:fs_stats_types]
FS_STATS_LOCAL_VOLUME_SOURCE = "localVolumeSource"  # the pod's local volumes (emptyDir, hostPath, ...)
FS_STATS_LOGS = "logs"  # container logs
FS_STATS_ROOT = "root"  # container writable layers
FS_STATS_IMAGES = "images"  # 1.29+: the image layers; named in the rank lists, but podDiskUsage sums nothing for it
# --8<-- [end:fs_stats_types]

CmpFunc = Callable[[V1Pod, V1Pod], int]  # < 0: the first pod is evicted first
RankFunc = Callable[[list, StatsFunc], list]


# --8<-- [start:pod_priority]
def pod_priority(pod: V1Pod) -> int:
    """The pod's priority, 0 when unset.

    Upstream: k8s.io/component-helpers/scheduling/corev1/helpers.go PodPriority
    """
    return pod.spec.priority if pod.spec and pod.spec.priority is not None else 0
# --8<-- [end:pod_priority]


# --8<-- [start:local_volume_names]
def local_volume_names(pod: V1Pod) -> list[str]:
    """The pod's volumes on local disk: hostPath, gitRepo, configMap, and emptyDir on the default medium.

    Upstream: pkg/kubelet/eviction/helpers.go localVolumeNames (with pkg/volume/util IsLocalEphemeralVolume)
    """
    return [volume.name for volume in pod.spec.volumes or []
            if volume.host_path is not None or volume.git_repo is not None or volume.config_map is not None
            or (volume.empty_dir is not None and (volume.empty_dir.medium or "") == "")]
# --8<-- [end:local_volume_names]


def _fs_usage(fs: Optional[statsapi.FsStats], resource: str) -> int:
    """Bytes or inodes used, read as Go's int64 conversion of the uint64 does (2**63 and more wrap to negative)."""
    if fs is None:
        return 0
    value = fs.inodes_used if resource == RESOURCE_INODES else fs.used_bytes
    return _int64(value or 0)


# --8<-- [start:pod_disk_usage]
def pod_disk_usage(pod_stats: statsapi.PodStats, pod: V1Pod, fs_stats_to_measure: Iterable[str]) -> dict[str, int]:
    """Bytes and inodes used by the selected stats: container rootfs and/or logs, and/or the pod's local volumes.

    Upstream: pkg/kubelet/eviction/helpers.go podDiskUsage
    """
    measure = set(fs_stats_to_measure)
    usage = {RESOURCE_EPHEMERAL_STORAGE: 0, RESOURCE_INODES: 0}
    for resource in usage:
        for container in pod_stats.containers:
            if FS_STATS_ROOT in measure:
                usage[resource] += _fs_usage(container.rootfs, resource)
            if FS_STATS_LOGS in measure:
                usage[resource] += _fs_usage(container.logs, resource)
        if FS_STATS_LOCAL_VOLUME_SOURCE in measure:
            for name in local_volume_names(pod):
                volume = next((v for v in pod_stats.volume_stats if v.name == name), None)
                usage[resource] += _fs_usage(volume, resource)
    return usage
# --8<-- [end:pod_disk_usage]


# --8<-- [start:comparators]
def cmp_bool(a: bool, b: bool) -> int:
    """True sorts first.

    Upstream: pkg/kubelet/eviction/helpers.go cmpBool
    """
    return 0 if a == b else (-1 if a else 1)


def _sign(number) -> int:
    return (number > 0) - (number < 0)


def priority(p1: V1Pod, p2: V1Pod) -> int:
    """Lower priority first.

    Upstream: pkg/kubelet/eviction/helpers.go priority
    """
    return _sign(pod_priority(p1) - pod_priority(p2))


priority.key = pod_priority  # the same order as a sort key: see ordered_by


def _with_stats(stats: StatsFunc, compare: Callable, key: Callable) -> CmpFunc:
    """A comparator that first puts a pod without stats ahead of one with stats.

    key(pod, pod_stats) orders pods with stats as compare does; the comparator's own key puts (0,), a pod
    without stats, before (1, key), one with stats.
    """
    def cmp(p1: V1Pod, p2: V1Pod) -> int:
        s1, s2 = stats(p1), stats(p2)
        if s1 is None or s2 is None:
            return cmp_bool(s1 is None, s2 is None)
        return compare(p1, s1, p2, s2)

    def sort_key(pod: V1Pod) -> tuple:
        pod_stats = stats(pod)
        return (0,) if pod_stats is None else (1, key(pod, pod_stats))
    cmp.key = sort_key
    return cmp


def _memory_usage(pod_stats: statsapi.PodStats) -> int:
    return _int64((pod_stats.memory.working_set_bytes if pod_stats.memory else None) or 0)  # as _fs_usage


def exceed_memory_requests(stats: StatsFunc) -> CmpFunc:
    """Pods whose working set is above their memory request first.

    Upstream: pkg/kubelet/eviction/helpers.go exceedMemoryRequests
    """
    def exceeds(pod, pod_stats):
        return _memory_usage(pod_stats) > get_resource_request_quantity(pod, RESOURCE_MEMORY)
    return _with_stats(stats, lambda p1, s1, p2, s2: cmp_bool(exceeds(p1, s1), exceeds(p2, s2)),
                       lambda pod, pod_stats: not exceeds(pod, pod_stats))  # True (exceeds) first, as cmp_bool


def memory(stats: StatsFunc) -> CmpFunc:
    """The larger working set minus memory request first (the difference may be negative).

    Upstream: pkg/kubelet/eviction/helpers.go memory
    """
    def above(pod, pod_stats):
        return _memory_usage(pod_stats) - get_resource_request_quantity(pod, RESOURCE_MEMORY)
    return _with_stats(stats, lambda p1, s1, p2, s2: _sign(above(p2, s2) - above(p1, s1)),
                       lambda pod, pod_stats: -above(pod, pod_stats))  # larger first


def process(stats: StatsFunc) -> CmpFunc:
    """The larger process count first.

    Upstream: pkg/kubelet/eviction/helpers.go process
    """
    def count(pod_stats):
        return (pod_stats.process_stats.process_count if pod_stats.process_stats else None) or 0
    return _with_stats(stats, lambda p1, s1, p2, s2: _sign(count(s2) - count(s1)), lambda pod, pod_stats: -count(pod_stats))


def exceed_disk_requests(stats: StatsFunc, fs_stats_to_measure: Iterable[str], disk_resource: str) -> CmpFunc:
    """Pods whose disk usage is above their request for that resource first (inodes have no request: any use counts).

    Upstream: pkg/kubelet/eviction/helpers.go exceedDiskRequests
    """
    measure = list(fs_stats_to_measure)

    def exceeds(pod, pod_stats):
        return pod_disk_usage(pod_stats, pod, measure)[disk_resource] > get_resource_request_quantity(pod, disk_resource)
    return _with_stats(stats, lambda p1, s1, p2, s2: cmp_bool(exceeds(p1, s1), exceeds(p2, s2)),
                       lambda pod, pod_stats: not exceeds(pod, pod_stats))


def disk(stats: StatsFunc, fs_stats_to_measure: Iterable[str], disk_resource: str) -> CmpFunc:
    """The larger usage minus the ephemeral-storage request first (subtracted even when counting inodes).

    Upstream: pkg/kubelet/eviction/helpers.go disk
    """
    measure = list(fs_stats_to_measure)

    def above(pod, pod_stats):
        usage = pod_disk_usage(pod_stats, pod, measure)[disk_resource]
        return usage - get_resource_request_quantity(pod, RESOURCE_EPHEMERAL_STORAGE)
    return _with_stats(stats, lambda p1, s1, p2, s2: _sign(above(p2, s2) - above(p1, s1)),
                       lambda pod, pod_stats: -above(pod, pod_stats))
# --8<-- [end:comparators]


# --8<-- [start:ordered_by]
def ordered_by(*cmps: CmpFunc) -> Callable[[list], list]:
    """A sorter: the first comparator that tells two pods apart decides; sorts the list in place and returns it.

    Upstream: pkg/kubelet/eviction/helpers.go orderedBy (multiSorter)

    When every comparator also has a key (the course's all do), the pods are sorted by the tuple of their
    keys: the same order, as Python's sort is stable, with each pod's keys worked out once instead of at
    every comparison.
    """
    def combined(p1: V1Pod, p2: V1Pod) -> int:
        for cmp in cmps:
            result = cmp(p1, p2)
            if result:
                return result
        return 0

    keys = [getattr(cmp, "key", None) for cmp in cmps]

    def sort(pods: list) -> list:
        if all(keys):
            pods.sort(key=lambda pod: [key(pod) for key in keys])  # lists compare item by item, as tuples do
        else:
            pods.sort(key=functools.cmp_to_key(combined))
        return pods
    return sort
# --8<-- [end:ordered_by]


# --8<-- [start:rank_functions]
def rank_memory_pressure(pods: list, stats: StatsFunc) -> list:
    """Over its memory request first, then lower priority, then larger usage above request.

    Upstream: pkg/kubelet/eviction/helpers.go rankMemoryPressure
    """
    return ordered_by(exceed_memory_requests(stats), priority, memory(stats))(pods)


def rank_pid_pressure(pods: list, stats: StatsFunc) -> list:
    """Lower priority first, then more processes.

    Upstream: pkg/kubelet/eviction/helpers.go rankPIDPressure
    """
    return ordered_by(priority, process(stats))(pods)


def rank_disk_pressure_func(fs_stats_to_measure: Iterable[str], disk_resource: str) -> RankFunc:
    """A rank function for disk: over its request first, then lower priority, then larger usage above request.

    Upstream: pkg/kubelet/eviction/helpers.go rankDiskPressureFunc
    """
    measure = list(fs_stats_to_measure)

    def rank(pods: list, stats: StatsFunc) -> list:
        return ordered_by(exceed_disk_requests(stats, measure, disk_resource), priority,
                          disk(stats, measure, disk_resource))(pods)
    return rank
# --8<-- [end:rank_functions]


# --8<-- [start:build_signal_to_rank_func]
def disk_stats_to_measure(signal: str, with_image_fs: bool, split_container_fs: bool = False) -> list[str]:
    """Which stats a disk signal's ranking sums, for the node's filesystems.

    With a dedicated imagefs, nodefs counts logs and volumes and imagefs (and containerfs) the writable layers.
    From 1.29 a split containerfs (images alone on imagefs, writable layers on nodefs) puts the writable
    layers back on nodefs and containerfs, and leaves imagefs only "images", for which no pod uses anything.
    Upstream: pkg/kubelet/eviction/helpers.go buildSignalToRankFunc (its fsStatsType lists)
    """
    newer = api.containerfs_signals_known()
    images = [FS_STATS_IMAGES] if newer else []
    on = signal.split(".")[0]  # nodefs, imagefs or containerfs
    if with_image_fs and split_container_fs and newer:
        return images if on == "imagefs" else [FS_STATS_LOGS, FS_STATS_LOCAL_VOLUME_SOURCE, FS_STATS_ROOT]
    if with_image_fs:
        return [FS_STATS_ROOT] + images if on in ("imagefs", "containerfs") else [FS_STATS_LOGS, FS_STATS_LOCAL_VOLUME_SOURCE]
    return images + [FS_STATS_ROOT, FS_STATS_LOGS, FS_STATS_LOCAL_VOLUME_SOURCE]


def build_signal_to_rank_func(with_image_fs: bool, split_container_fs: bool = False) -> dict[str, RankFunc]:
    """Each signal's rank function; the disk ones sum the stats disk_stats_to_measure names.

    Upstream: pkg/kubelet/eviction/helpers.go buildSignalToRankFunc (the split argument from 1.29)
    """
    result = {
        api.SIGNAL_MEMORY_AVAILABLE: rank_memory_pressure,
        api.SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE: rank_memory_pressure,
        api.SIGNAL_PID_AVAILABLE: rank_pid_pressure,
    }
    for signal in (api.SIGNAL_NODEFS_AVAILABLE, api.SIGNAL_NODEFS_INODES_FREE, api.SIGNAL_IMAGEFS_AVAILABLE,
                   api.SIGNAL_IMAGEFS_INODES_FREE, *api.CONTAINERFS_SIGNALS):
        resource = RESOURCE_INODES if signal.endswith("inodesFree") else RESOURCE_EPHEMERAL_STORAGE
        result[signal] = rank_disk_pressure_func(disk_stats_to_measure(signal, with_image_fs, split_container_fs), resource)
    return result
# --8<-- [end:build_signal_to_rank_func]
