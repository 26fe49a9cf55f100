"""activeDeadlineSeconds: once a Pod has been active that long, the kubelet syncs it and fails it.

Upstream: pkg/kubelet/active_deadline.go activeDeadlineHandler, registered in NewMainKubelet both as
a PodSyncLoopHandler (ShouldSync: sync the pod now) and as a PodSyncHandler (ShouldEvict: make it Failed).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Callable, Optional

from kubernetes.client import V1Pod, V1PodStatus

from mini_kubelet import events
from mini_kubelet.clock import Clock

# --8<-- [start:constants]
REASON = "DeadlineExceeded"
MESSAGE = "Pod was active on the node longer than the specified deadline"
# --8<-- [end:constants]


@dataclass
class ShouldEvictResponse:
    """Whether a sync handler wants the pod failed, and with which reason and message.

    Upstream: pkg/kubelet/lifecycle/interfaces.go ShouldEvictResponse
    """

    evict: bool
    reason: str = ""
    message: str = ""


# --8<-- [start:ActiveDeadlineHandler]
class ActiveDeadlineHandler:
    """Flags pods whose activeDeadlineSeconds have passed since their status startTime.

    pod_status_provider(uid) gives the status manager's latest status for the pod, or None.
    Upstream: pkg/kubelet/active_deadline.go activeDeadlineHandler (newActiveDeadlineHandler)
    """

    def __init__(self, pod_status_provider: Callable[[str], Optional[V1PodStatus]], recorder: events.Recorder, clock: Clock):
        self.pod_status_provider = pod_status_provider
        self.recorder = recorder
        self.clock = clock

    def should_sync(self, pod: V1Pod) -> bool:
        """True once the pod is past its active deadline.

        Upstream: pkg/kubelet/active_deadline.go activeDeadlineHandler.ShouldSync
        """
        return self.past_active_deadline(pod)

    def should_evict(self, pod: V1Pod) -> ShouldEvictResponse:
        """Evict (fail) the pod with DeadlineExceeded once past its deadline, recording a Normal event.

        Upstream: pkg/kubelet/active_deadline.go activeDeadlineHandler.ShouldEvict
        """
        if not self.past_active_deadline(pod):
            return ShouldEvictResponse(evict=False)
        self.recorder.eventf(f"{pod.metadata.namespace}/{pod.metadata.name}", events.NORMAL, REASON, MESSAGE)
        return ShouldEvictResponse(evict=True, reason=REASON, message=MESSAGE)

    def past_active_deadline(self, pod: V1Pod) -> bool:
        """Whether activeDeadlineSeconds is set, the pod has a start time, and now - start >= the deadline.

        Upstream: pkg/kubelet/active_deadline.go activeDeadlineHandler.pastActiveDeadline
        """
        if pod.spec.active_deadline_seconds is None:
            return False
        status = self.pod_status_provider(pod.metadata.uid) or pod.status
        if status is None or status.start_time is None:
            return False
        return self.clock.since(status.start_time) >= timedelta(seconds=pod.spec.active_deadline_seconds)
# --8<-- [end:ActiveDeadlineHandler]
