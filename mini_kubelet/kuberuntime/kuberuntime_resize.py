"""In-place resize on the node, the decision: which running containers get new resources, which restart.

Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go (computePodResizeAction, the resize parts of
computePodActions), as v1.36.5 answers through the differential harness (tests/test_differential_resize.py).
When SyncPod runs, the pod's spec already holds the allocated resources (the allocation manager put them
there); what was last applied to each container, the actuated resources, the runtime manager keeps itself.
Applying the decision is kuberuntime_resize_actuate's. Left out: pod-level resources resize
(InPlacePodLevelResourcesVerticalScaling, alpha).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kubernetes.client import V1Container, V1Pod, V1ResourceRequirements

from mini_kubelet import api, features, types
from mini_kubelet.container import CONTAINER_STATE_RUNNING, PodStatus, Status, is_restartable_init_container
from mini_kubelet.kuberuntime.kuberuntime_container import ContainerToKillInfo

RESTART_CONTAINER = "RestartContainer"  # k8s.io/api/core/v1 ResourceResizeRestartPolicy


def is_in_place_pod_vertical_scaling_allowed(pod: V1Pod) -> tuple[bool, str, str]:
    """(allowed, message, reason): with the gate on, for any pod; before 1.36 not for a static pod (#135856 dropped
    that check: a changed manifest is a new pod anyway).

    Upstream: pkg/kubelet/allocation/features_linux.go IsInPlacePodVerticalScalingAllowed
    """
    gate = features.DEFAULT_FEATURE_GATE
    if not gate.enabled("InPlacePodVerticalScaling"):
        return False, "InPlacePodVerticalScaling is disabled", "feature_gate_off"
    if not gate.changed("ResizeStaticPods") and types.is_static_pod(pod):
        return False, "In-place resize of static-pods is not supported", "static_pod"
    return True, "", ""


# --8<-- [start:ContainerResources]
@dataclass
class ContainerResources:
    """A container's cpu (millicores) and memory (bytes) requests and limits; 0 for none.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go containerResources
    """

    memory_limit: int = 0
    memory_request: int = 0
    cpu_limit: int = 0
    cpu_request: int = 0


def container_resources_from_requirements(requirements: Optional[V1ResourceRequirements]) -> ContainerResources:
    """The four numbers of a container's resources.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go containerResourcesFromRequirements
    """
    limits = (requirements.limits if requirements else None) or {}
    requests = (requirements.requests if requirements else None) or {}
    return ContainerResources(api.value(limits.get("memory", 0)), api.value(requests.get("memory", 0)),
                              api.milli_value(limits.get("cpu", 0)), api.milli_value(requests.get("cpu", 0)))


@dataclass
class ContainerToUpdateInfo:
    """One running container to give new resources: current is shared by its cpu and memory entries, and moves
    to desired as each update succeeds.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go containerToUpdateInfo
    """

    container: V1Container
    kube_container_id: str
    desired_container_resources: ContainerResources
    current_container_resources: ContainerResources
# --8<-- [end:ContainerResources]


class ActuatedState:
    """The resources last applied to each container, by pod UID and container name.

    Upstream: pkg/kubelet/allocation/state/state_mem.go stateMemory (GetContainerResources, SetContainerResources,
    RemovePod), kept by the runtime manager as kubeGenericRuntimeManager.actuatedState
    """

    def __init__(self) -> None:
        self.pods: dict[str, dict[str, V1ResourceRequirements]] = {}

    def get_container_resources(self, pod_uid: str, name: str) -> tuple[V1ResourceRequirements, bool]:
        """A copy of the record, and whether there was one (none: empty resources)."""
        found = self.pods.get(pod_uid, {}).get(name)
        return (api.deep_copy(found), True) if found is not None else (V1ResourceRequirements(), False)

    def set_container_resources(self, pod_uid: str, name: str, resources: Optional[V1ResourceRequirements]) -> None:
        """Record a copy of the resources just applied."""
        self.pods.setdefault(pod_uid, {})[name] = api.deep_copy(resources or V1ResourceRequirements())

    def initialize_pod(self, pod: V1Pod) -> None:
        """Record every container's resources for a pod with no record yet, before any container starts, so that a
        resize while it initialises is seen (v1.36.4+, #140387).

        Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go kubeGenericRuntimeManager.UpdateActuatedPodLevelResources
        """
        if pod.metadata.uid not in self.pods and features.DEFAULT_FEATURE_GATE.changed("ResizeStartingContainers"):
            for c in (pod.spec.init_containers or []) + pod.spec.containers:
                self.set_container_resources(pod.metadata.uid, c.name, c.resources)

    def remove_pod(self, pod_uid: str) -> None:
        """Forget the pod's records."""
        self.pods.pop(pod_uid, None)


# --8<-- [start:is_pod_resize_in_progress]
def is_pod_resize_in_progress(allocated_pod: V1Pod, pod_status: PodStatus, actuated: ActuatedState) -> bool:
    """Whether a running container of the pod has cpu or memory allocated other than what was last applied to it.

    Only sidecars count among the init containers; a container not running (or not in the runtime's status) has
    nothing to resize; a missing record counts as no resources; each of the four values is compared by amount.
    Pod-level resources are not resized here (none is recorded as actuated, so they never are in progress).
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go kubeGenericRuntimeManager.IsPodResizeInProgress
    (isContainerResourceResizeInProgress)
    """
    containers = [c for c in allocated_pod.spec.init_containers or [] if is_restartable_init_container(c)]
    for container in containers + list(allocated_pod.spec.containers):
        status = pod_status.find_container_status_by_name(container.name)
        if status is None or status.state != CONTAINER_STATE_RUNNING:
            continue
        recorded, _ = actuated.get_container_resources(allocated_pod.metadata.uid, container.name)
        if not _cpu_memory_equal(container.resources, recorded):
            return True
    return False


def _cpu_memory_equal(a: Optional[V1ResourceRequirements], b: Optional[V1ResourceRequirements]) -> bool:
    """cpu and memory requests and limits equal by amount (resource.Quantity Equal; missing is zero)."""
    for kind in ("requests", "limits"):
        left, right = (getattr(a, kind, None) or {}), (getattr(b, kind, None) or {})
        if any(api.parse_quantity(left.get(r, 0)) != api.parse_quantity(right.get(r, 0)) for r in ("cpu", "memory")):
            return False
    return True
# --8<-- [end:is_pod_resize_in_progress]


# --8<-- [start:compute_pod_resize_action]
def compute_pod_resize_action(pod: V1Pod, container_idx: int, is_restartable_init_container: bool, status: Status,
                              changes, actuated: ActuatedState) -> bool:
    """Whether to keep the running container; its resize goes into changes: an update per resource that changed,
    decreases first, or a kill and start when a changed resource's resizePolicy is RestartContainer.

    A resource is changed when the spec (the allocated resources) and the actuated record differ; a missing record
    counts as no resources. Memory is updated for its limit, else its request; cpu likewise.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go kubeGenericRuntimeManager.computePodResizeAction
    """
    if not is_in_place_pod_vertical_scaling_allowed(pod)[0] or status.state != CONTAINER_STATE_RUNNING:
        return True
    container = (pod.spec.init_containers if is_restartable_init_container else pod.spec.containers)[container_idx]
    recorded, _ = actuated.get_container_resources(pod.metadata.uid, container.name)
    desired = container_resources_from_requirements(container.resources)
    current = container_resources_from_requirements(recorded)
    if desired == current:
        return True

    def determine(resource: str, desired_value: int, current_value: int) -> tuple[bool, bool]:
        if desired_value == current_value:
            return False, False
        for policy in container.resize_policy or []:  # the first policy for the resource decides
            if policy.resource_name == resource:
                return True, policy.restart_policy == RESTART_CONTAINER
        return True, False  # no policy: NotRequired

    def mark(resource: str, desired_value: int, current_value: int) -> None:
        info = ContainerToUpdateInfo(container, status.id, desired, current)
        updates = changes.containers_to_update.setdefault(resource, [])
        updates.append(info) if desired_value > current_value else updates.insert(0, info)  # decreases go first

    resize_mem_lim, restart_mem_lim = determine("memory", desired.memory_limit, current.memory_limit)
    resize_mem_req, restart_mem_req = determine("memory", desired.memory_request, current.memory_request)
    resize_cpu_lim, restart_cpu_lim = determine("cpu", desired.cpu_limit, current.cpu_limit)
    resize_cpu_req, restart_cpu_req = determine("cpu", desired.cpu_request, current.cpu_request)
    if restart_cpu_lim or restart_cpu_req or restart_mem_lim or restart_mem_req:
        changes.containers_to_kill[status.id] = ContainerToKillInfo(
            container, status.name, f"Container {container.name} resize requires restart")
        (changes.init_containers_to_start if is_restartable_init_container else changes.containers_to_start).append(
            container_idx)
        changes.update_pod_resources = True
        return False
    if resize_mem_lim:
        mark("memory", desired.memory_limit, current.memory_limit)
    elif resize_mem_req:
        mark("memory", desired.memory_request, current.memory_request)
    if resize_cpu_lim:
        mark("cpu", desired.cpu_limit, current.cpu_limit)
    elif resize_cpu_req:
        mark("cpu", desired.cpu_request, current.cpu_request)
    return True
# --8<-- [end:compute_pod_resize_action]


def mark_starting_containers_resized(pod: V1Pod, changes, actuated: ActuatedState, containers: list,
                                     to_start: list[int]) -> None:
    """Resize the pod cgroup too when a container about to start has resources other than its actuated ones.

    From v1.36.4 (#140387, cherry-picked as #141004): a container that restarts after a resize (an OOM kill, a
    crash) starts with its new resources, so the pod cgroup must be resized before it starts. Only cpu and memory
    count, by amount (the differential harness's answers; the pull request's review shows an earlier draft).
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions and kuberuntime_container.go
    computeInitContainerActions (their last check)
    """
    if changes.update_pod_resources or not features.DEFAULT_FEATURE_GATE.changed("ResizeStartingContainers"):
        return
    for i in to_start:
        recorded, _ = actuated.get_container_resources(pod.metadata.uid, containers[i].name)
        if container_resources_from_requirements(recorded) != container_resources_from_requirements(containers[i].resources):
            changes.update_pod_resources = True
            return
