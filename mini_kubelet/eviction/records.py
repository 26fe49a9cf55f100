"""What an eviction does to a pod, and what each synchronize pass saw and did.

Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.synchronize (the grace override it picks),
managerImpl.evictPod (the arguments it gives killPodFunc and the status it writes) and pkg/kubelet/pod_workers.go calculateEffectiveGracePeriod (the grace period
the pod really gets); SyncRecord holds what upstream only logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Optional

from kubernetes.client import V1Pod

from .. import features
from . import messages
from .api import Threshold

REASON = messages.REASON  # "Evicted": pod status reason, pod event reason, admission rejection reason
DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30  # the API server's default for spec.terminationGracePeriodSeconds
IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS = 1  # from 1.31 (#124063): what "at once" means; 1.27 passes 0


@dataclass
class EvictedPod:
    """One pod the manager killed: the override it asked for, and the grace period the pod really gets.

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.evictPod (its killPodFunc arguments and statusFn)
    """

    pod: V1Pod
    signal: str  # the threshold's signal, or a local-storage label such as "emptydirfs.limit"
    grace_period_override: int  # what the manager passes to killPodFunc (what upstream's tests assert)
    message: str
    annotations: dict[str, str]
    status_reason: str = REASON
    effective_grace_period: int = 0  # what pod_workers makes of the override (see effective_grace_period)
    phase: str = "Failed"
    condition: Optional[dict[str, str]] = None  # DisruptionTarget (PodDisruptionConditions, beta and on in 1.27)
    kill_error: str = ""  # upstream logs a kill error and still counts the pod as evicted


@dataclass
class SyncRecord:
    """What one synchronize pass saw and did, for timelines (upstream only logs these).

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.synchronize (its debug logs and events)
    """

    time: datetime
    observations: dict = field(default_factory=dict)
    thresholds_met: list[Threshold] = field(default_factory=list)  # ignoring grace periods, min-reclaim stickiness included
    thresholds_grace_met: list[Threshold] = field(default_factory=list)  # grace periods satisfied
    thresholds_to_act_on: list[Threshold] = field(default_factory=list)  # ... with fresh stats, sorted
    node_conditions: list[str] = field(default_factory=list)  # reported (transition period applied)
    threshold_to_reclaim: Optional[Threshold] = None
    resource_to_reclaim: str = ""
    reclaimed: Optional[tuple[int, int]] = None  # (bytes, inodes) freed by node-level GC, if it ran
    reclaim_sufficient: bool = False
    ranked: list[V1Pod] = field(default_factory=list)
    evicted: list[EvictedPod] = field(default_factory=list)
    events: list[tuple[str, str, str, str]] = field(default_factory=list)  # (object, type, reason, message)
    error: str = ""  # 1.29+: the first pass's filesystem check (a split containerfs with the gate off)


# --8<-- [start:grace_period_override]
def grace_period_override(threshold: Threshold, pod: V1Pod, max_pod_grace_period_seconds: int) -> int:
    """The override a threshold eviction asks for: 0 (1 s from 1.31) if hard, else evictionMaxPodGracePeriod,
    from 1.32 capped by the pod's own terminationGracePeriodSeconds when it has one (unless the deprecated
    gate AllowOverwriteTerminationGracePeriodSeconds is on).

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.synchronize (gracePeriodOverride)
    """
    gate = features.DEFAULT_FEATURE_GATE
    if threshold.grace_period == timedelta(0):  # a hard threshold (isHardEvictionThreshold)
        return IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS if gate.changed("HardEvictionOneSecondGrace") else 0
    override, own = max_pod_grace_period_seconds, pod.spec.termination_grace_period_seconds
    if gate.changed("SoftEvictionGraceMin") and own is not None and not gate.enabled("AllowOverwriteTerminationGracePeriodSeconds"):
        override = min(override, own)
    return override
# --8<-- [end:grace_period_override]


# --8<-- [start:effective_grace_period]
def effective_grace_period(pod: V1Pod, override: Optional[int]) -> int:
    """The grace period the pod worker really uses for an eviction kill.

    Upstream: pkg/kubelet/pod_workers.go calculateEffectiveGracePeriod

    The 1.27 quirk: a hard eviction asks for override 0, but 0 here means
    "no value yet", so the pod's own terminationGracePeriodSeconds (30 s
    unless set) is used: a hard eviction is not immediate
    (kubernetes/kubernetes#115819). A soft eviction gets
    evictionMaxPodGracePeriod, even when that is longer than the pod's own
    value; with the default max of 0 it also falls back to the pod's value.
    Anything below 1 (a negative max) becomes 1.
    From 1.31 (#124063) an override that was applied is kept even when it is
    0, so it ends as 1 s: the manager asks for 1 s anyway (hard evictions),
    and a soft eviction with the default max of 0 gets 1 s, not the pod's value.
    """
    grace, overridden = 0, False  # a running pod not yet terminating has no grace period recorded
    deletion = pod.metadata.deletion_grace_period_seconds if pod.metadata else None
    if deletion is not None and (grace == 0 or deletion < grace):
        grace, overridden = deletion, True
    if override is not None and (grace == 0 or override < grace):
        grace, overridden = override, True
    if grace == 0 and not (overridden and features.DEFAULT_FEATURE_GATE.changed("HardEvictionOneSecondGrace")):
        own = pod.spec.termination_grace_period_seconds
        grace = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS if own is None else own
    return max(grace, 1)
# --8<-- [end:effective_grace_period]
