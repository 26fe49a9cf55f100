"""The Pod conditions the kubelet owns: Initialized, ContainersReady, Ready (and PodScheduled, always true).

Upstream: pkg/kubelet/status/generate.go
"""

from __future__ import annotations

from typing import Optional

from kubernetes.client import V1ContainerStatus, V1PodCondition, V1PodSpec

from .. import features
from ..container import is_restartable_init_container

# --8<-- [start:constants]
UNKNOWN_CONTAINER_STATUSES = "UnknownContainerStatuses"
POD_COMPLETED = "PodCompleted"
POD_FAILED = "PodFailed"
CONTAINERS_NOT_READY = "ContainersNotReady"
CONTAINERS_NOT_INITIALIZED = "ContainersNotInitialized"
READINESS_GATES_NOT_READY = "ReadinessGatesNotReady"
# --8<-- [end:constants]


def _status_of(statuses: list[V1ContainerStatus], name: str) -> Optional[V1ContainerStatus]:
    return next((s for s in statuses if s.name == name), None)


def _go_list(names: list[str]) -> str:
    return "[" + " ".join(names) + "]"  # how Go's %s prints a []string


def generate_containers_ready_condition(spec: V1PodSpec, statuses: Optional[list[V1ContainerStatus]], phase: str) -> V1PodCondition:
    """True when every regular container is ready; False with PodCompleted/PodFailed in a terminal phase.

    Upstream: pkg/kubelet/status/generate.go GenerateContainersReadyCondition
    """
    if statuses is None:
        return V1PodCondition(type="ContainersReady", status="False", reason=UNKNOWN_CONTAINER_STATUSES)
    unknown = [c.name for c in spec.containers if _status_of(statuses, c.name) is None]
    unready = [c.name for c in spec.containers if (s := _status_of(statuses, c.name)) is not None and not s.ready]
    if (phase == "Succeeded" and not unknown) or phase == "Failed":
        return V1PodCondition(type="ContainersReady", status="False",
                              reason=POD_FAILED if phase == "Failed" else POD_COMPLETED)
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {_go_list(unknown)}")
    if unready:
        messages.append(f"containers with unready status: {_go_list(unready)}")
    if messages:
        return V1PodCondition(type="ContainersReady", status="False", reason=CONTAINERS_NOT_READY, message=", ".join(messages))
    return V1PodCondition(type="ContainersReady", status="True")


def generate_pod_ready_condition(spec: V1PodSpec, conditions: list[V1PodCondition],
                                 statuses: Optional[list[V1ContainerStatus]], phase: str) -> V1PodCondition:
    """ContainersReady, then every readiness gate's condition must be True.

    Upstream: pkg/kubelet/status/generate.go GeneratePodReadyCondition
    """
    ready = generate_containers_ready_condition(spec, statuses, phase)
    if ready.status != "True":
        return V1PodCondition(type="Ready", status=ready.status, reason=ready.reason, message=ready.message)
    messages = []
    for gate in spec.readiness_gates or []:
        c = next((c for c in conditions if c.type == gate.condition_type), None)
        if c is None:
            messages.append(f'corresponding condition of pod readiness gate "{gate.condition_type}" does not exist.')
        elif c.status != "True":
            messages.append(f'the status of pod readiness gate "{gate.condition_type}" is not "True", but {c.status}')
    if messages:
        return V1PodCondition(type="Ready", status="False", reason=READINESS_GATES_NOT_READY, message=", ".join(messages))
    return V1PodCondition(type="Ready", status="True")


def generate_pod_initialized_condition(spec: V1PodSpec, statuses: Optional[list[V1ContainerStatus]], phase: str) -> V1PodCondition:
    """True when every init container is ready (exited 0); PodCompleted once the pod succeeded.

    With the SidecarContainers gate on, statuses holds the regular containers' too (as the kubelet passes them
    from 1.28): a sidecar counts once started, and a pod any of whose regular containers has started stays
    initialized (its sidecars may be restarting).
    Upstream: pkg/kubelet/status/generate.go GeneratePodInitializedCondition (v1.27; the gated parts as in v1.32)
    """
    inits = spec.init_containers or []
    if statuses is None and inits:
        return V1PodCondition(type="Initialized", status="False", reason=UNKNOWN_CONTAINER_STATUSES)
    statuses = statuses or []
    unknown = [c.name for c in inits if _status_of(statuses, c.name) is None]
    unready = [c.name for c in inits if (s := _status_of(statuses, c.name)) is not None
               and not (s.started if is_restartable_init_container(c) else s.ready)]
    if phase == "Succeeded" and not unknown:
        return V1PodCondition(type="Initialized", status="True", reason=POD_COMPLETED)
    if features.DEFAULT_FEATURE_GATE.enabled("SidecarContainers") and _any_regular_started(spec, statuses):
        return V1PodCondition(type="Initialized", status="True")
    messages = []
    if unknown:
        messages.append(f"containers with unknown status: {_go_list(unknown)}")
    if unready:
        messages.append(f"containers with incomplete status: {_go_list(unready)}")
    if messages:
        return V1PodCondition(type="Initialized", status="False", reason=CONTAINERS_NOT_INITIALIZED, message=", ".join(messages))
    return V1PodCondition(type="Initialized", status="True")


def _any_regular_started(spec: V1PodSpec, statuses: list[V1ContainerStatus]) -> bool:
    """Upstream: pkg/kubelet/container/helpers.go HasAnyRegularContainerStarted (running or terminated)"""
    names = {c.name for c in spec.containers}
    return any(s.name in names and s.state is not None and (s.state.running is not None or s.state.terminated is not None)
               for s in statuses)
