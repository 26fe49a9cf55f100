"""What a pod worker keeps and is given: update options, worker states, podSyncStatus, the grace period.

Upstream: pkg/kubelet/pod_workers.go (the types, calculateEffectiveGracePeriod, isPodStatusCacheTerminal)
The worker itself is mini_kubelet.pod_workers.PodWorkers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum
from typing import Callable, Optional, Protocol

from kubernetes.client import V1Pod, V1PodStatus

from . import container, features
from .types import SyncPodType

# --8<-- [start:constants]
WORKER_RESYNC_INTERVAL_JITTER_FACTOR = 0.5
WORKER_BACK_OFF_PERIOD_JITTER_FACTOR = 0.5
BACK_OFF_ON_TRANSIENT_ERROR_PERIOD = 1.0  # seconds, when the network is not ready
BACK_OFF_PERIOD = 10.0  # seconds: kubelet.go backOffPeriod, after a failed sync
RESYNC_INTERVAL = 60.0  # seconds: KubeletConfiguration syncFrequency's default
NETWORK_NOT_READY_ERROR_MSG = "network is not ready"  # pkg/kubelet/errors.go NetworkNotReadyErrorMsg
# --8<-- [end:constants]


class ContextCanceled(Exception):
    """What a sync returns when a newer update cancelled it. Upstream: context.Canceled"""


class Context:
    """A sync's context: cancelled when the pod starts terminating or its grace period shrinks.

    Upstream: context.WithCancel (podSyncStatus.ctx and cancelFn)
    """

    def __init__(self):
        self.cancelled = False

    def cancel(self) -> None:
        """Upstream: context.CancelFunc"""
        self.cancelled = True


@dataclass
class KillPodOptions:
    """How a kill should go. Upstream: pkg/kubelet/pod_workers.go KillPodOptions (CompletedCh is `completed`)"""

    completed: Optional[Callable[[], None]] = None  # called once the pod is terminated
    evict: bool = False
    pod_status_func: Optional[Callable[[V1PodStatus], None]] = None
    pod_termination_grace_period_seconds_override: Optional[int] = None


@dataclass
class UpdatePodOptions:
    """One update for a worker. Upstream: pkg/kubelet/pod_workers.go UpdatePodOptions"""

    update_type: SyncPodType = SyncPodType.SYNC
    pod: Optional[V1Pod] = None
    mirror_pod: Optional[V1Pod] = None
    running_pod: Optional[container.Pod] = None  # a pod found in the runtime but no longer in config
    kill_pod_options: Optional[KillPodOptions] = None
    start_time: Optional[datetime] = None


class PodWorkerState(IntEnum):
    """Where a pod is in the worker's lifecycle. Upstream: pkg/kubelet/pod_workers.go PodWorkerState"""

    SYNC_POD = 0
    TERMINATING_POD = 1
    TERMINATED_POD = 2

    def __str__(self) -> str:
        return ["sync", "terminating", "terminated"][self]


@dataclass
class PodWorkerSync:
    """What SyncKnownPods reports for a worker. Upstream: pkg/kubelet/pod_workers.go PodWorkerSync"""

    state: PodWorkerState
    orphan: bool = False
    has_config: bool = False
    static: bool = False


@dataclass
class PodWork:
    """The update a worker is about to sync, and as which state. Upstream: pkg/kubelet/pod_workers.go podWork"""

    work_type: PodWorkerState
    options: UpdatePodOptions


class PodSyncer(Protocol):
    """The lifecycle steps a worker calls; each raises to report an error (retried later).

    Upstream: pkg/kubelet/pod_workers.go podSyncer (implemented by the Kubelet)
    """

    def sync_pod(self, ctx: Context, update_type: SyncPodType, pod: V1Pod, mirror_pod: Optional[V1Pod],
                 pod_status: container.PodStatus) -> bool: ...  # True: the pod reached a terminal phase

    def sync_terminating_pod(self, ctx: Context, pod: V1Pod, pod_status: container.PodStatus,
                             grace_period: Optional[int], pod_status_fn) -> None: ...

    def sync_terminating_runtime_pod(self, ctx: Context, running_pod: container.Pod) -> None: ...

    def sync_terminated_pod(self, ctx: Context, pod: V1Pod, pod_status: container.PodStatus) -> None: ...


# --8<-- [start:pod_sync_status]
@dataclass
class PodSyncStatus:
    """A worker's record of one UID. Upstream: pkg/kubelet/pod_workers.go podSyncStatus"""

    fullname: str = ""
    ctx: Optional[Context] = None
    working: bool = False
    pending_update: Optional[UpdatePodOptions] = None
    active_update: Optional[UpdatePodOptions] = None
    synced_at: Optional[datetime] = None
    started_at: Optional[datetime] = None
    terminating_at: Optional[datetime] = None
    terminated_at: Optional[datetime] = None
    grace_period: int = 0
    notify_post_terminating: list = field(default_factory=list)
    status_post_terminating: list = field(default_factory=list)
    started_terminating: bool = False
    deleted: bool = False
    evicted: bool = False
    finished: bool = False
    restart_requested: bool = False
    observed_runtime: bool = False

    def is_termination_requested(self) -> bool:
        """Upstream: podSyncStatus.IsTerminationRequested"""
        return self.terminating_at is not None

    def is_terminated(self) -> bool:
        """Upstream: podSyncStatus.IsTerminated"""
        return self.terminated_at is not None

    def is_started(self) -> bool:
        """Upstream: podSyncStatus.IsStarted"""
        return self.started_at is not None

    def work_type(self) -> PodWorkerState:
        """Upstream: pkg/kubelet/pod_workers.go podSyncStatus.WorkType"""
        if self.is_terminated():
            return PodWorkerState.TERMINATED_POD
        return PodWorkerState.TERMINATING_POD if self.is_termination_requested() else PodWorkerState.SYNC_POD

    def merge_last_update(self, other: UpdatePodOptions) -> None:
        """Record an update as the active one: keep the last real pod and mirror pod, accumulate kill options.

        Upstream: pkg/kubelet/pod_workers.go podSyncStatus.mergeLastUpdate
        """
        opts = self.active_update = self.active_update or UpdatePodOptions()
        if opts.pod is None or other.running_pod is None:
            opts.pod = other.pod
        opts.running_pod = other.running_pod
        if other.mirror_pod is not None:
            opts.mirror_pod = other.mirror_pod
        if other.kill_pod_options is not None:
            opts.kill_pod_options = KillPodOptions(
                evict=other.kill_pod_options.evict,
                pod_termination_grace_period_seconds_override=(
                    other.kill_pod_options.pod_termination_grace_period_seconds_override))
# --8<-- [end:pod_sync_status]


def phase_of(pod: V1Pod) -> Optional[str]:
    """A pod's status.phase (None when it has no status). Upstream: pod.Status.Phase"""
    return pod.status.phase if pod.status else None


# --8<-- [start:calculate_effective_grace_period]
def calculate_effective_grace_period(status: PodSyncStatus, pod: V1Pod,
                                     options: Optional[KillPodOptions]) -> tuple[int, bool]:
    """The grace period for a terminating pod, which can only shrink, and whether it just did.

    Upstream: pkg/kubelet/pod_workers.go calculateEffectiveGracePeriod
    The API server's deletionGracePeriodSeconds, then a kill's override (eviction), may lower the recorded
    value (or set it when it is 0); with nothing recorded, the pod's terminationGracePeriodSeconds; at least 1.
    A 0 (kubectl delete --force --grace-period=0) reads as "nothing recorded", so v1.27 falls back to the
    spec's grace period (upstream issue #120449). From 1.31 (#124063) a value that was applied, 0 included,
    is kept: a force delete gets 1 s.
    """
    grace_period, overridden = status.grace_period, False
    override = pod.metadata.deletion_grace_period_seconds
    if override is not None and (grace_period == 0 or override < grace_period):
        grace_period, overridden = override, True
    if options is not None:
        override = options.pod_termination_grace_period_seconds_override
        if override is not None and (grace_period == 0 or override < grace_period):
            grace_period, overridden = override, True
    if overridden and not features.DEFAULT_FEATURE_GATE.changed("HardEvictionOneSecondGrace"):
        overridden = False  # v1.27 has no such flag
    if not overridden and grace_period == 0 and pod.spec.termination_grace_period_seconds is not None:
        grace_period = pod.spec.termination_grace_period_seconds
    grace_period = max(grace_period, 1)
    return grace_period, status.grace_period != 0 and status.grace_period != grace_period
# --8<-- [end:calculate_effective_grace_period]


def is_pod_status_cache_terminal(status: container.PodStatus) -> bool:
    """No running container and no ready sandbox. Upstream: pkg/kubelet/pod_workers.go isPodStatusCacheTerminal"""
    return not any(c.state == container.CONTAINER_STATE_RUNNING for c in status.container_statuses) and not any(
        s.state == container.SANDBOX_READY for s in status.sandbox_statuses)


def jitter(duration: float, max_factor: float, rand: Callable[[], float]) -> float:
    """A duration between d and d*(1+max_factor). Upstream: k8s.io/apimachinery/pkg/util/wait Jitter"""
    return duration + rand() * max_factor * duration
