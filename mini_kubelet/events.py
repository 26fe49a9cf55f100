"""The events the kubelet records on a Pod (what `kubectl describe pod` lists), kept in order in memory.

Upstream: pkg/kubelet/events/event.go (the reasons) and k8s.io/client-go/tools/record FakeRecorder
(the kubelet's tests collect events the same way; a real kubelet sends them to the API server).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Optional

from mini_kubelet.clock import Clock

# --8<-- [start:reasons]
CREATED_CONTAINER = "Created"
STARTED_CONTAINER = "Started"
FAILED_TO_CREATE_CONTAINER = "Failed"
FAILED_TO_START_CONTAINER = "Failed"
KILLING_CONTAINER = "Killing"
BACK_OFF_START_CONTAINER = "BackOff"
SANDBOX_CHANGED = "SandboxChanged"
FAILED_CREATE_POD_SANDBOX = "FailedCreatePodSandBox"
FAILED_POST_START_HOOK = "FailedPostStartHook"
# --8<-- [end:reasons]

NORMAL = "Normal"  # k8s.io/api/core/v1 EventTypeNormal
WARNING = "Warning"


@dataclass
class Event:
    """One recorded event: when, its type and reason, its message, and the object (pod or pod/container)."""

    time: Optional[datetime]
    type: str
    reason: str
    message: str
    involved: str  # "namespace/name" of the pod, with "{container}" appended for a container's events


@dataclass
class Recorder:
    """Collects events in the order they are recorded.

    Upstream: k8s.io/client-go/tools/record FakeRecorder
    """

    clock: Optional[Clock] = None
    events: list[Event] = field(default_factory=list)

    def eventf(self, involved: str, event_type: str, reason: str, message: str) -> None:
        """Record one event.

        Upstream: k8s.io/client-go/tools/record EventRecorder.Eventf
        """
        self.events.append(Event(self.clock.now() if self.clock else None, event_type, reason, message, involved))
