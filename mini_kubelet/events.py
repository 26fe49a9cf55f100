"""The events the kubelet records on a Pod (what `kubectl describe pod` lists), kept in order in memory.

Upstream: pkg/kubelet/events/event.go (the reasons; from 1.34 the resize events and their messages) and
k8s.io/client-go/tools/record FakeRecorder (the kubelet's tests collect events the same way; a real kubelet
sends them to the API server).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Optional

from mini_kubelet.clock import Clock
from mini_kubelet.eviction.api import quantity_string

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
RESIZE_STARTED, RESIZE_DEFERRED, RESIZE_INFEASIBLE = "ResizeStarted", "ResizeDeferred", "ResizeInfeasible"
RESIZE_COMPLETED, RESIZE_ERROR = "ResizeCompleted", "ResizeError"
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


def _go_json(value) -> str:
    """json.Marshal's text: no spaces, and <, > and & escaped as Go escapes them for HTML."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _resources_json(resources) -> dict:
    """A container's ResourceRequirements as Go marshals it: canonical quantities, empty lists left out."""
    out = {}
    for field_name in ("limits", "requests"):
        amounts = getattr(resources, field_name, None) or {}
        if amounts:
            out[field_name] = {k: quantity_string(str(v)) for k, v in sorted(amounts.items())}
    claims = getattr(resources, "claims", None) or []
    if claims:
        out["claims"] = [{"name": c.name, **({"request": c.request} if c.request else {})} for c in claims]
    return out


def _resize_json(pod, generation: int, error: Optional[str] = None) -> str:
    doc = {}
    for key, containers in (("initContainers", pod.spec.init_containers), ("containers", pod.spec.containers)):
        if containers:
            doc[key] = [{"name": c.name, "resources": _resources_json(c.resources)} for c in containers]
    doc["generation"] = generation
    if error is not None:
        doc["error"] = error
    return _go_json(doc)


def pod_resize_started_msg(pod, generation: int) -> str:
    """The ResizeStarted message: every container's resources, as JSON. Upstream: pkg/kubelet/events PodResizeStartedMsg"""
    return "Pod resize started: " + _resize_json(pod, generation)


def pod_resize_completed_msg(pod, generation: int) -> str:
    """The ResizeCompleted message. Upstream: pkg/kubelet/events PodResizeCompletedMsg"""
    return "Pod resize completed: " + _resize_json(pod, generation)


def pod_resize_error_msg(pod, generation: int, error: str) -> str:
    """The ResizeError message: the resources, then the error. Upstream: pkg/kubelet/events PodResizeErrorMsg"""
    return "Pod resize error: " + _resize_json(pod, generation, error)


def pod_resize_pending_msg(pod, reason: str, message: str, generation: int) -> str:
    """The ResizeDeferred or ResizeInfeasible message: the admit handler's reason, then the resources and its message.

    Upstream: pkg/kubelet/events PodResizePendingMsg
    """
    return f"Pod resize {reason}: " + _resize_json(pod, generation, message)
