"""The resize admit handler: what makes a resize Infeasible on this node before any fit is tried.

Upstream: pkg/kubelet/allocation/handlers.go (podResizesAdmitHandler.Admit, disallowResizeForSwappableContainers,
guaranteedPodResourceResizeRequired) and features_linux.go, as v1.36.5 runs them. Since 1.36 neither a static
pod (#135856) nor a request beyond the node's allocatable (#136043: the API server refuses that resize) is
Infeasible here any more; a resize that does not fit is Deferred by the allocation manager.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Callable, Optional

from kubernetes.client import V1Container, V1Pod, V1ResourceRequirements

from .. import api, features, qos
from ..lifecycle import RESIZE_OPERATION, PodAdmitAttributes, PodAdmitResult
from ..status.status_manager import POD_REASON_INFEASIBLE
from .allocation_manager import GATE, Manager, requirements_equal, resizable_containers

CPU_MANAGER_POLICY_STATIC = "static"  # pkg/kubelet/cm/cpumanager PolicyStatic
MEMORY_MANAGER_POLICY_STATIC = "Static"  # pkg/kubelet/cm/memorymanager PolicyTypeStatic
NO_SWAP = "NoSwap"  # pkg/kubelet/types SwapBehavior
SWAP_MESSAGE = "In-place resize of containers with swap is not supported."

SwapBehavior = Callable[[V1Pod, V1Container], str]  # kubecontainer.Runtime GetContainerSwapBehavior
GetAllocation = Callable[[str, str], V1ResourceRequirements]  # pod UID, container name -> its allocation


@dataclass(frozen=True)
class NodeConfig:
    """The two policies the resize handler reads, at the kubelet's defaults. Upstream: pkg/kubelet/cm NodeConfig"""

    cpu_manager_policy: str = "none"
    memory_manager_policy: str = "None"


def is_in_place_pod_vertical_scaling_allowed(pod: V1Pod) -> tuple[bool, str, str]:
    """Whether pods may be resized at all: (allowed, message, metric reason).

    Upstream: pkg/kubelet/allocation/features_linux.go IsInPlacePodVerticalScalingAllowed (no static-pod check from 1.36)
    """
    if not features.DEFAULT_FEATURE_GATE.enabled(GATE):
        return False, f"{GATE} is disabled", "feature_gate_off"
    return True, "", ""


def is_in_place_pod_level_resources_vertical_scaling_allowed(pod: V1Pod) -> tuple[bool, str, str]:
    """Upstream: pkg/kubelet/allocation/features_linux.go IsInPlacePodLevelResourcesVerticalScalingAllowed"""
    if not features.DEFAULT_FEATURE_GATE.enabled("InPlacePodLevelResourcesVerticalScaling"):
        return False, "InPlacePodLevelResourcesVerticalScaling is disabled", "feature_gate_off"
    return True, "", ""


def _amount(resources: Optional[V1ResourceRequirements], name: str) -> Decimal:
    """One request, 0 when absent (Go's zero Quantity, which Quantity.Equal compares by value)."""
    return api.parse_quantity(((resources.requests if resources else None) or {}).get(name, 0))


def disallow_resize_for_swappable_containers(desired: V1Pod, allocated: V1Pod,
                                             swap_behavior: SwapBehavior) -> tuple[bool, str]:
    """A memory request change of a container that has, or would have, swap, unless memory resizes restart it.

    Upstream: pkg/kubelet/allocation/handlers.go disallowResizeForSwappableContainers
    """
    def restarts_on_memory(policies) -> bool:
        return next((p.restart_policy == "RestartContainer" for p in policies or [] if p.resource_name == "memory"), False)

    old = {c.name: c for c in [*allocated.spec.containers, *(allocated.spec.init_containers or [])]}
    for c in [*desired.spec.containers, *(desired.spec.init_containers or [])]:
        before = old.get(c.name)
        if before is None or _amount(c.resources, "memory") == _amount(before.resources, "memory"):
            continue
        if restarts_on_memory(before.resize_policy):
            continue
        if swap_behavior(desired, c) != NO_SWAP or swap_behavior(allocated, before) != NO_SWAP:
            return True, SWAP_MESSAGE
    return False, ""


def guaranteed_pod_resource_resize_required(pod: V1Pod, resource_name: str, get_allocation: GetAllocation) -> bool:
    """Whether a resizable container's request for the resource differs from its allocation.

    Upstream: pkg/kubelet/allocation/handlers.go podResizesAdmitHandler.guaranteedPodResourceResizeRequired
    """
    return any(_amount(c.resources, resource_name) != _amount(get_allocation(pod.metadata.uid, c.name), resource_name)
               for c in resizable_containers(pod))


# --8<-- [start:pod_resizes_admit]
def pod_resizes_admit(attrs: PodAdmitAttributes, allocated_pod: V1Pod, get_allocation: GetAllocation,
                      node_config: NodeConfig = NodeConfig(),
                      swap_behavior: SwapBehavior = lambda pod, c: NO_SWAP) -> PodAdmitResult:
    """Infeasible: resize off, swap, pod-level resize off, or a Guaranteed pod under a static CPU or memory manager.

    allocated_pod is the pod as allocated (the allocation manager's UpdatePodFromAllocation of attrs.pod).
    Upstream: pkg/kubelet/allocation/handlers.go podResizesAdmitHandler.Admit
    """
    if attrs.operation != RESIZE_OPERATION:
        return PodAdmitResult(True)
    pod = attrs.pod
    allowed, message, _ = is_in_place_pod_vertical_scaling_allowed(pod)
    if not allowed:
        return PodAdmitResult(False, POD_REASON_INFEASIBLE, message)
    blocked, message = disallow_resize_for_swappable_containers(pod, allocated_pod, swap_behavior)
    if blocked:
        return PodAdmitResult(False, POD_REASON_INFEASIBLE, message)
    if not _pointers_equal(pod.spec.resources, allocated_pod.spec.resources):
        allowed, message, _ = is_in_place_pod_level_resources_vertical_scaling_allowed(pod)
        if not allowed:
            return PodAdmitResult(False, POD_REASON_INFEASIBLE, message)
    if qos.get_pod_qos(pod) == qos.GUARANTEED:
        gate = features.DEFAULT_FEATURE_GATE
        for resource, policy, wanted, exclusive, manager in (
                ("cpu", node_config.cpu_manager_policy, CPU_MANAGER_POLICY_STATIC,
                 "InPlacePodVerticalScalingExclusiveCPUs", "CPU"),
                ("memory", node_config.memory_manager_policy, MEMORY_MANAGER_POLICY_STATIC,
                 "InPlacePodVerticalScalingExclusiveMemory", "Memory")):
            if not gate.enabled(exclusive) and policy == wanted and guaranteed_pod_resource_resize_required(
                    pod, resource, get_allocation):
                return PodAdmitResult(False, POD_REASON_INFEASIBLE,
                                      f'Resize is infeasible for Guaranteed Pods alongside {manager} Manager policy "{wanted}"')
    return PodAdmitResult(True)
# --8<-- [end:pod_resizes_admit]


def _pointers_equal(a, b) -> bool:
    """apiequality.Semantic.DeepEqual of two *ResourceRequirements: nil only equals nil."""
    return (a is None) == (b is None) and (a is None or requirements_equal(a, b))


def new_pod_resizes_admit_handler(manager: Manager, node_config: NodeConfig = NodeConfig(),
                                  swap_behavior: SwapBehavior = lambda pod, c: NO_SWAP):
    """The handler the kubelet puts first in the allocation manager's chain, reading that manager's allocations.

    Upstream: pkg/kubelet/allocation/handlers.go NewPodResizesAdmitHandler
    """
    def admit(attrs: PodAdmitAttributes) -> PodAdmitResult:
        allocated, _ = manager.update_pod_from_allocation(attrs.pod)
        return pod_resizes_admit(attrs, allocated, manager.get_container_resource_allocation, node_config,
                                 swap_behavior)
    return admit
