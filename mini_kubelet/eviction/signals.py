"""Observations of each signal, which thresholds they meet, and the node conditions that follow.

Upstream: pkg/kubelet/eviction/helpers.go. Upstream keeps several of these results in Go maps and reads them
back in random order; here a dict keeps insertion order, so the same inputs always give the same lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from .. import stats as statsapi
from . import api
from .api import Threshold, get_threshold_quantity, valid_signal  # noqa: F401 (valid_signal re-exported)
from .thresholds import compare_threshold_value, has_threshold, merge_thresholds  # noqa: F401 (re-exported)

if TYPE_CHECKING:
    from kubernetes.client import V1Pod

# --8<-- [start:signal_maps]
MEMORY_PRESSURE = "MemoryPressure"
DISK_PRESSURE = "DiskPressure"
PID_PRESSURE = "PIDPressure"

RESOURCE_MEMORY = "memory"
RESOURCE_EPHEMERAL_STORAGE = "ephemeral-storage"
RESOURCE_INODES = "inodes"  # internal to the eviction manager
RESOURCE_PIDS = "pids"  # internal to the eviction manager

SIGNAL_TO_NODE_CONDITION = {
    api.SIGNAL_MEMORY_AVAILABLE: MEMORY_PRESSURE, api.SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE: MEMORY_PRESSURE,
    api.SIGNAL_IMAGEFS_AVAILABLE: DISK_PRESSURE, api.SIGNAL_NODEFS_AVAILABLE: DISK_PRESSURE,
    api.SIGNAL_IMAGEFS_INODES_FREE: DISK_PRESSURE, api.SIGNAL_NODEFS_INODES_FREE: DISK_PRESSURE,
    api.SIGNAL_PID_AVAILABLE: PID_PRESSURE,
    api.SIGNAL_CONTAINERFS_AVAILABLE: DISK_PRESSURE, api.SIGNAL_CONTAINERFS_INODES_FREE: DISK_PRESSURE,  # 1.29+
}
SIGNAL_TO_RESOURCE = {
    api.SIGNAL_MEMORY_AVAILABLE: RESOURCE_MEMORY, api.SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE: RESOURCE_MEMORY,
    api.SIGNAL_IMAGEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE, api.SIGNAL_IMAGEFS_INODES_FREE: RESOURCE_INODES,
    api.SIGNAL_NODEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE, api.SIGNAL_NODEFS_INODES_FREE: RESOURCE_INODES,
    api.SIGNAL_PID_AVAILABLE: RESOURCE_PIDS,
    api.SIGNAL_CONTAINERFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE, api.SIGNAL_CONTAINERFS_INODES_FREE: RESOURCE_INODES,
}
# --8<-- [end:signal_maps]

# Signals counted in whole units (inodes, processes) print without binary suffixes: DecimalSI.
DECIMAL_SIGNALS = (api.SIGNAL_NODEFS_INODES_FREE, api.SIGNAL_IMAGEFS_INODES_FREE, api.SIGNAL_PID_AVAILABLE,
                   api.SIGNAL_CONTAINERFS_INODES_FREE)


# --8<-- [start:signal_observation]
@dataclass
class SignalObservation:
    """What was observed for one signal: available and capacity (bytes, inodes or PIDs), and when (None = unknown).

    Upstream: pkg/kubelet/eviction/types.go signalObservation
    """

    available: int
    capacity: int
    time: Optional[datetime] = None


StatsFunc = Callable[["V1Pod"], Optional[statsapi.PodStats]]  # a pod's stats, or None when the summary has none
# --8<-- [end:signal_observation]


def _int64(number: int) -> int:
    """A uint64 converted to int64 as Go does (values of 2^63 and above wrap to negative)."""
    return (number + 2**63) % 2**64 - 2**63


# --8<-- [start:cached_stats_func]
def cached_stats_func(pod_stats: Iterable[statsapi.PodStats]) -> StatsFunc:
    """A lookup of a pod's stats by its UID (podRef.uid), not by name.

    Upstream: pkg/kubelet/eviction/helpers.go cachedStatsFunc (the map is made at the first lookup here, not at once)
    """
    by_uid: dict = {}

    def lookup(pod: V1Pod) -> Optional[statsapi.PodStats]:
        if not by_uid:
            by_uid.update((stats.pod_ref.uid, stats) for stats in pod_stats)
        return by_uid.get((pod.metadata.uid if pod.metadata else None) or "")
    return lookup
# --8<-- [end:cached_stats_func]


# --8<-- [start:make_signal_observations]
def make_signal_observations(summary: statsapi.Summary) -> tuple[dict[str, SignalObservation], StatsFunc]:
    """Each signal's observation from the summary (a signal whose inputs are missing is left out), and a stats lookup.

    Upstream: pkg/kubelet/eviction/helpers.go makeSignalObservations
    From 1.29 node.runtime.containerFs gives the containerfs signals, and imagefs inodes are read on their own.
    """
    node, result = summary.node, {}

    def memory_signal(signal: str, memory: Optional[statsapi.MemoryStats]) -> None:
        if memory and memory.available_bytes is not None and memory.working_set_bytes is not None:
            capacity = memory.available_bytes + memory.working_set_bytes  # the cgroup's limit
            result[signal] = SignalObservation(_int64(memory.available_bytes), _int64(capacity), memory.time)

    def fs_signals(available: str, inodes_free: str, fs: Optional[statsapi.FsStats], inodes_need_bytes: bool) -> None:
        if fs is None:
            return
        has_bytes = fs.available_bytes is not None and fs.capacity_bytes is not None
        if has_bytes:
            result[available] = SignalObservation(_int64(fs.available_bytes), _int64(fs.capacity_bytes), fs.time)
        if (has_bytes or not inodes_need_bytes) and fs.inodes_free is not None and fs.inodes is not None:
            result[inodes_free] = SignalObservation(_int64(fs.inodes_free), _int64(fs.inodes), fs.time)

    memory_signal(api.SIGNAL_MEMORY_AVAILABLE, node.memory)
    pods = next((c for c in node.system_containers if c.name == statsapi.SYSTEM_CONTAINER_PODS), None)
    if pods is not None:  # upstream logs: system container "pods" not found in metrics
        memory_signal(api.SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, pods.memory)
    fs_signals(api.SIGNAL_NODEFS_AVAILABLE, api.SIGNAL_NODEFS_INODES_FREE, node.fs, inodes_need_bytes=False)
    # v1.27 quirk (to 1.28): imagefs.inodesFree is only read when imagefs bytes are present too.
    newer = api.containerfs_signals_known()
    fs_signals(api.SIGNAL_IMAGEFS_AVAILABLE, api.SIGNAL_IMAGEFS_INODES_FREE, node.runtime and node.runtime.image_fs,
               inodes_need_bytes=not newer)
    if newer:
        fs_signals(api.SIGNAL_CONTAINERFS_AVAILABLE, api.SIGNAL_CONTAINERFS_INODES_FREE,
                   node.runtime and node.runtime.container_fs, inodes_need_bytes=False)
    rlimit = node.rlimit
    if rlimit and rlimit.curproc is not None and rlimit.maxpid is not None:
        available = _int64(rlimit.maxpid - rlimit.curproc)  # an int64 difference: wraps as Go's does
        result[api.SIGNAL_PID_AVAILABLE] = SignalObservation(available, rlimit.maxpid, rlimit.time)
    return result, cached_stats_func(summary.pods)
# --8<-- [end:make_signal_observations]


# --8<-- [start:thresholds_met]
def thresholds_met(thresholds: Iterable[Threshold], observations: dict[str, SignalObservation],
                   enforce_min_reclaim: bool) -> list[Threshold]:
    """The thresholds whose quantity (plus min-reclaim, if enforced) is strictly above what is available.

    Upstream: pkg/kubelet/eviction/helpers.go thresholdsMet
    """
    results = []
    for threshold in thresholds:
        observed = observations.get(threshold.signal)
        if observed is None:  # upstream logs: no observation found for eviction signal
            continue
        quantity = get_threshold_quantity(threshold.value, observed.capacity)
        if enforce_min_reclaim and threshold.min_reclaim is not None:
            quantity += get_threshold_quantity(threshold.min_reclaim, observed.capacity)
        if threshold.operator == api.OP_LESS_THAN and quantity > observed.available:
            results.append(threshold)
    return results
# --8<-- [end:thresholds_met]


# --8<-- [start:thresholds_updated_stats]
def thresholds_updated_stats(thresholds: Iterable[Threshold], observations: dict[str, SignalObservation],
                             last_observations: dict[str, SignalObservation]) -> list[Threshold]:
    """The thresholds whose signal has a newer observation than last time (or no time, or no last one).

    Upstream: pkg/kubelet/eviction/helpers.go thresholdsUpdatedStats
    """
    results = []
    for threshold in thresholds:
        observed = observations.get(threshold.signal)
        if observed is None:
            continue
        last = last_observations.get(threshold.signal)
        if last is None or observed.time is None or last.time is None or observed.time > last.time:
            results.append(threshold)
    return results
# --8<-- [end:thresholds_updated_stats]


# --8<-- [start:thresholds_first_observed_at]
def thresholds_first_observed_at(thresholds: Iterable[Threshold], last_observed_at: dict[Threshold, datetime],
                                 now: datetime) -> dict[Threshold, datetime]:
    """When each currently met threshold was first met: its old time if it was met before, else now.

    Upstream: pkg/kubelet/eviction/helpers.go thresholdsFirstObservedAt
    """
    return {threshold: last_observed_at.get(threshold, now) for threshold in thresholds}
# --8<-- [end:thresholds_first_observed_at]


# --8<-- [start:thresholds_met_grace_period]
def thresholds_met_grace_period(observed_at: dict[Threshold, datetime], now: datetime) -> list[Threshold]:
    """The thresholds met for at least their grace period (a hard threshold at once).

    Upstream: pkg/kubelet/eviction/helpers.go thresholdsMetGracePeriod
    Go walks a map here, so its order varies from pass to pass (and, after byEvictionPriority, which of two
    memory thresholds is acted on and named); here it is the order of the thresholds met, the configuration's.
    """
    return [threshold for threshold, at in observed_at.items() if not now - at < threshold.grace_period]
# --8<-- [end:thresholds_met_grace_period]


# --8<-- [start:node_conditions]
def node_conditions(thresholds: Iterable[Threshold]) -> list[str]:
    """The node conditions of the thresholds' signals, each once, in first-seen order.

    Upstream: pkg/kubelet/eviction/helpers.go nodeConditions
    """
    results: list[str] = []
    for threshold in thresholds:
        condition = SIGNAL_TO_NODE_CONDITION.get(threshold.signal)
        if condition is not None and not has_node_condition(results, condition):
            results.append(condition)
    return results
# --8<-- [end:node_conditions]


# --8<-- [start:node_conditions_last_observed_at]
def node_conditions_last_observed_at(conditions: Iterable[str], last_observed_at: dict[str, datetime],
                                     now: datetime) -> dict[str, datetime]:
    """The given conditions seen now; every other condition keeps the time it was last seen (nothing is dropped).

    Upstream: pkg/kubelet/eviction/helpers.go nodeConditionsLastObservedAt
    """
    results = {condition: now for condition in conditions}
    for condition, at in last_observed_at.items():
        results.setdefault(condition, at)
    return results
# --8<-- [end:node_conditions_last_observed_at]


# --8<-- [start:node_conditions_observed_since]
def node_conditions_observed_since(observed_at: dict[str, datetime], period: timedelta, now: datetime) -> list[str]:
    """The conditions last seen less than `period` ago (strictly): the pressure transition period.

    Upstream: pkg/kubelet/eviction/helpers.go nodeConditionsObservedSince
    """
    return [condition for condition, at in observed_at.items() if now - at < period]
# --8<-- [end:node_conditions_observed_since]


# --8<-- [start:has_node_condition]
def has_node_condition(inputs: Iterable[str], item: str) -> bool:
    """Whether the condition is in the list.

    Upstream: pkg/kubelet/eviction/helpers.go hasNodeCondition
    """
    return item in list(inputs)
# --8<-- [end:has_node_condition]




# --8<-- [start:is_hard_eviction_threshold]
def is_hard_eviction_threshold(threshold: Threshold) -> bool:
    """A hard threshold has no grace period.

    Upstream: pkg/kubelet/eviction/helpers.go isHardEvictionThreshold"""
    return threshold.grace_period == timedelta(0)
# --8<-- [end:is_hard_eviction_threshold]


# --8<-- [start:is_allocatable_eviction_threshold]
def is_allocatable_eviction_threshold(threshold: Threshold) -> bool:
    """Whether the threshold is on allocatableMemory.available.

    Upstream: pkg/kubelet/eviction/helpers.go isAllocatableEvictionThreshold"""
    return threshold.signal == api.SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE
# --8<-- [end:is_allocatable_eviction_threshold]


# --8<-- [start:sort_by_eviction_priority]
def sort_by_eviction_priority(thresholds: Iterable[Threshold]) -> list[Threshold]:
    """The thresholds with memory ones moved to the front, as Go's sort with byEvictionPriority orders them.

    Less(i, j) is "i is a memory signal, or j has no resource": not a strict ordering (memory is "less" than
    memory both ways). Go sorts up to 12 items by insertion sort, replayed here step by step, which also
    reverses the memory thresholds among themselves. (Longer lists would go through pdqsort: not replayed.)
    Upstream: pkg/kubelet/eviction/helpers.go byEvictionPriority
    """
    items = list(thresholds)

    def less(i: int, j: int) -> bool:
        memory = (api.SIGNAL_MEMORY_AVAILABLE, api.SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE)
        return items[i].signal in memory or items[j].signal not in SIGNAL_TO_RESOURCE

    for i in range(1, len(items)):
        j = i
        while j > 0 and less(j, j - 1):
            items[j], items[j - 1] = items[j - 1], items[j]
            j -= 1
    return items
# --8<-- [end:sort_by_eviction_priority]


# --8<-- [start:get_reclaimable_threshold]
def get_reclaimable_threshold(thresholds: Iterable[Threshold]) -> tuple[Optional[Threshold], str, bool]:
    """The first threshold whose signal maps to a resource, that resource, and whether one was found.

    Upstream: pkg/kubelet/eviction/helpers.go getReclaimableThreshold
    """
    for threshold in thresholds:
        if threshold.signal in SIGNAL_TO_RESOURCE:
            return threshold, SIGNAL_TO_RESOURCE[threshold.signal], True
    return None, "", False
# --8<-- [end:get_reclaimable_threshold]
