"""What the replay reports: one Step per pass, evictions with their ranking and why, and how to read them.

Upstream: none (a course tool); the ranking keys are those of pkg/kubelet/eviction/helpers.go
rankMemoryPressure, rankPIDPressure and rankDiskPressureFunc, written out instead of compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from kubernetes.client import V1Pod

from ... import api, types
from ...api import pod_label
from ...eviction import ranking
from ...eviction.api import SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, SIGNAL_MEMORY_AVAILABLE, SIGNAL_PID_AVAILABLE
from .scenario import Scenario
from ..series import format_duration


# --8<-- [start:timeline]
@dataclass
class RankedPod:
    """One row of a ranking: the pod and the keys the rank function compared, in order."""

    pod: str  # namespace/name
    keys: dict[str, Any]  # memory/disk: has_stats, exceeds_request, priority, usage, request; pids: priority, processes
    critical: bool = False


@dataclass
class Eviction:
    """One eviction: which threshold drove it, the ranking and why its first pod went, the grace, the message."""

    time: int
    pod: str
    signal: str
    threshold: str  # e.g. "memory.available<500Mi" or "memory.available<1Gi (soft, grace 1m30s)"
    hard: bool
    grace_period_override: int
    grace_period: int  # what the pod actually gets (effective_grace_period)
    stops_at: int
    message: str
    annotations: dict[str, str]
    ranking: list[RankedPod]
    decided_by: str


@dataclass
class Admission:
    """A pod added by an event, and the eviction manager's answer."""

    time: int
    pod: str
    admitted: bool
    reason: str = ""
    message: str = ""


@dataclass
class Step:
    """One synchronize pass: what it observed, which thresholds were met, the conditions it reports, what it did."""

    time: int
    observations: dict[str, dict[str, int]]  # signal -> {"available": n, "capacity": n}
    thresholds_met: list[str]  # crossed now (grace periods ignored; min-reclaim stickiness included)
    thresholds_acted_on: list[str]  # grace period passed and stats fresh
    conditions: list[str]  # reported, held through the transition period
    reclaimed: Optional[dict] = None  # {"bytes", "inodes", "images", "sufficient"} when node-level GC ran
    evictions: list[Eviction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Happening:
    """Something the scenario did between passes: a pod added or stopped, an image pulled, a usage change."""

    time: int
    text: str


@dataclass
class Timeline:
    """The whole replay: the thresholds, one Step per pass, admissions and other happenings, in time order."""

    scenario: Scenario
    thresholds: list[dict]  # {"signal", "text", "hard", "grace_period", "min_reclaim"}
    steps: list[Step]
    admissions: list[Admission]
    happenings: list[Happening]

    @property
    def evictions(self) -> list[Eviction]:
        return [e for step in self.steps for e in step.evictions]

    def condition_intervals(self) -> list[dict]:
        """Each stretch of passes that reported a condition: {"type", "from", "to"} ("to" None: still reported)."""
        open_at: dict[str, int] = {}
        intervals = []
        for step in self.steps:
            for condition in step.conditions:
                open_at.setdefault(condition, step.time)
            for condition in [c for c in open_at if c not in step.conditions]:
                intervals.append({"type": condition, "from": open_at.pop(condition), "to": step.time})
        intervals += [{"type": c, "from": t, "to": None} for c, t in open_at.items()]
        return sorted(intervals, key=lambda i: (i["from"], i["type"]))
# --8<-- [end:timeline]


def threshold_text(threshold, capacity: Optional[int] = None) -> str:
    """A threshold as the flag would write it, with its kind: "memory.available<1Gi (soft, grace 2m)".

    Upstream: none (a course tool); the quantity prints as Go's Quantity.String
    """
    grace = int(threshold.grace_period.total_seconds())
    kind = f" (soft, grace {format_duration(grace)})" if grace else ""
    return f"{threshold.signal}<{value_text(threshold.value)}{kind}"


def value_text(value) -> str:
    """A threshold value as the flag would write it: the quantity as given (500Mi), or a percentage (10%).

    Upstream: none (a course tool); the quantity prints as Go's Quantity.String
    """
    if value.quantity is not None:
        return value.quantity_text or str(value.quantity)
    return f"{round(value.percentage * 100, 4):g}%"


_BINARY_UNITS = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def format_bytes(n: int) -> str:
    """Bytes for a reader: whole Mi or larger where exact (1536Mi), else two decimals (1.93Gi, 66.27Mi).

    Upstream: none (a course tool)
    """
    sign, n = ("-" if n < 0 else ""), abs(n)
    for i, (suffix, unit) in enumerate(_BINARY_UNITS):
        if n < unit:
            continue
        if n % unit == 0:
            return f"{sign}{n // unit}{suffix}"
        smaller, small_unit = _BINARY_UNITS[i + 1] if i + 1 < len(_BINARY_UNITS) - 1 else ("", 0)
        if small_unit and n % small_unit == 0 and n // small_unit < 10000:
            return f"{sign}{n // small_unit}{smaller}"
        return f"{sign}{n / unit:.2f}{suffix}"
    return f"{sign}{n}"


def format_signed_bytes(n: int) -> str:
    """Bytes with a sign, for a difference: +200Mi, -1536Mi.

    Upstream: none (a course tool)
    """
    return ("+" if n >= 0 else "") + format_bytes(n)


# --8<-- [start:rank_rows]
def rank_rows(signal: str, ranked: list[V1Pod], stats_func, dedicated_image_fs: bool,
              split_container_fs: bool = False) -> list[RankedPod]:
    """The keys the signal's rank function compares, for each pod in ranked order.

    Upstream: pkg/kubelet/eviction/helpers.go rankMemoryPressure, rankPIDPressure, rankDiskPressureFunc
    (the same keys, written out instead of compared)
    """
    rows = []
    for pod in ranked:
        pod_stats = stats_func(pod)
        keys: dict[str, Any] = {"has_stats": pod_stats is not None, "priority": ranking.pod_priority(pod)}
        if signal == SIGNAL_PID_AVAILABLE:
            keys["processes"] = (pod_stats.process_stats.process_count if pod_stats and pod_stats.process_stats else None) or 0
        else:
            if signal in (SIGNAL_MEMORY_AVAILABLE, SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE):
                resource_name = "memory"
                usage = ((pod_stats.memory.working_set_bytes if pod_stats.memory else None) or 0) if pod_stats else 0
                request = subtract = api.value(ranking.get_resource_request_quantity(pod, "memory"))
            else:
                resource_name = "inodes" if signal.endswith("inodesFree") else "ephemeral-storage"
                measure = ranking.disk_stats_to_measure(signal, dedicated_image_fs, split_container_fs)
                usage = ranking.pod_disk_usage(pod_stats, pod, measure)[resource_name] if pod_stats else 0
                request = api.value(ranking.get_resource_request_quantity(pod, resource_name))
                subtract = api.value(ranking.get_resource_request_quantity(pod, "ephemeral-storage"))
            keys.update(resource=resource_name, usage=usage, request=request, exceeds_request=usage > request,
                        usage_minus_request=usage - subtract)
        rows.append(RankedPod(pod_label(pod), keys, types.is_critical_pod(pod)))
    return rows
# --8<-- [end:rank_rows]


# --8<-- [start:decided_by]
def decided_by(rows: list[RankedPod], index: int, signal: str) -> str:
    """Why rows[index] ranks ahead of the next pod: the first key that tells them apart.

    Upstream: pkg/kubelet/eviction/helpers.go multiSorter.Less (the first comparator that differs decides)
    """
    skipped = [row.pod for row in rows[:index] if row.critical]
    prefix = f"critical pods are never evicted ({', '.join(skipped)} ranked ahead); " if skipped else ""
    if index + 1 >= len(rows):
        return prefix + ("the only pod on the node" if len(rows) == 1 else "the last pod left that could be evicted")
    a, b = rows[index], rows[index + 1]
    ka, kb, first, second = a.keys, b.keys, a.pod, b.pod
    if ka["has_stats"] != kb["has_stats"]:
        return prefix + f"{first} has no stats in the Summary, and a pod without stats ranks first"
    order = ["priority", "processes"] if signal == SIGNAL_PID_AVAILABLE else ["exceeds_request", "priority", "usage_minus_request"]
    for key in order:
        if ka[key] == kb[key]:
            continue
        if key == "exceeds_request":
            what = ka["resource"]
            return prefix + f"{first} uses more {what} than it requests and {second} does not"
        if key == "priority":
            return prefix + f"{first} has a lower priority than {second} ({ka['priority']} < {kb['priority']})"
        if key == "processes":
            return prefix + f"same priority, and {first} runs more processes than {second} ({ka['processes']} > {kb['processes']})"
        if ka.get("resource") == "inodes":
            return prefix + (f"same priority, and {first} has the larger inode count minus ephemeral-storage request "
                             f"({ka[key]} > {kb[key]} for {second}): v1.27 subtracts the request, in bytes, from inodes")
        show = format_signed_bytes
        return prefix + (f"both {'exceed' if ka['exceeds_request'] else 'stay within'} their requests with the same priority, "
                         f"and {first} is further above its request ({show(ka[key])} > {show(kb[key])} for {second})")
    return prefix + f"{first} and {second} tie on every key; {first} was listed first (upstream's sort is not stable)"
# --8<-- [end:decided_by]
