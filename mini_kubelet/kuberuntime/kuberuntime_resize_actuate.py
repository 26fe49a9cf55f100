"""In-place resize on the node, the actuation: the pod cgroup and the containers' cgroups written in order.

Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go (doPodResizeAction, validatePodResizeAction,
updatePodContainerResources, mergeResourceConfig) and kuberuntime_container.go (updateContainerResources), as
v1.36.5 answers through the differential harness (tests/test_differential_resize.py). The writes land, in order,
in the simulated runtime's cgroup_writes (the pod cgroup's too, when its PodContainerManager shares the list).
Left out: the CPU manager's exclusive CPUs, UpdatePodSandboxResources (best effort, no cgroup write) and the
resize metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from kubernetes.client import V1Container, V1Pod, V1ResourceRequirements

from mini_kubelet import api, features
from mini_kubelet.cm.helpers import QUOTA_PERIOD, ResourceConfig, resource_config_for_pod
from mini_kubelet.cm.pod_container_manager import CgroupError, PodContainerManager
from mini_kubelet.container import SyncResult
from mini_kubelet.cri import CRIError, RuntimeService
from mini_kubelet.kuberuntime.kuberuntime_container_linux import generate_linux_container_resources
from mini_kubelet.kuberuntime.kuberuntime_resize import ActuatedState, ContainerToUpdateInfo
from mini_kubelet.stats import PodStats

RESIZE_POD_IN_PLACE = "ResizePodInPlace"  # pkg/kubelet/container/sync_result.go SyncAction
ERR_RESIZE_POD_IN_PLACE = "ResizePodInPlaceError"


@dataclass
class ResizeState:
    """What the runtime manager keeps and reads for a resize: the actuated resources, the pod cgroups, the machine's
    memory, the CFS quota settings and each pod's memory usage (for a limit decrease), by pod UID.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go kubeGenericRuntimeManager (actuatedState,
    containerManager.NewPodContainerManager, machineInfo.MemoryCapacity, cpuCFSQuota, cpuCFSQuotaPeriod,
    runtimeHelper.PodCPUAndMemoryStats)
    """

    actuated: ActuatedState = field(default_factory=ActuatedState)
    pod_cgroups: PodContainerManager = field(default_factory=PodContainerManager)
    memory_capacity: int = 16 * 2**30
    cpu_cfs_quota: bool = True
    cpu_cfs_quota_period: int = QUOTA_PERIOD
    pod_stats: dict[str, PodStats] = field(default_factory=dict)
    request_reinspect: Optional[Callable[[str], None]] = None  # runtimeHelper.RequestPodReinspect: the PLEG's


def merge_resource_config(source: Optional[ResourceConfig], update: Optional[ResourceConfig]) -> Optional[ResourceConfig]:
    """A copy of source with the cpu and memory fields update sets.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go mergeResourceConfig (hugepages, pids and unified
    left out)
    """
    if source is None or update is None:
        return update if source is None else source
    merged = ResourceConfig(memory=source.memory, cpu_shares=source.cpu_shares, cpu_quota=source.cpu_quota,
                            cpu_period=source.cpu_period)
    for name in ("memory", "cpu_shares", "cpu_quota", "cpu_period"):
        if getattr(update, name) is not None:
            setattr(merged, name, getattr(update, name))
    return merged


def update_container_resources(runtime: RuntimeService, pod: V1Pod, container: V1Container, container_id: str,
                               state: ResizeState) -> None:
    """Send the container's new CRI resources to the runtime, then record them as actuated; CRIError on failure.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go kubeGenericRuntimeManager.updateContainerResources
    (and setActuatedContainerResources)
    """
    resources = generate_linux_container_resources(pod, container, state.memory_capacity, cpu_cfs_quota=state.cpu_cfs_quota,
                                                   cpu_period=state.cpu_cfs_quota_period,
                                                   cgroup_version=runtime.cgroup_version)
    runtime.update_container_resources(container_id, resources)
    state.actuated.set_container_resources(pod.metadata.uid, container.name, container.resources)


# --8<-- [start:update_pod_container_resources]
def update_pod_container_resources(runtime: RuntimeService, pod: V1Pod, resource: str,
                                   containers_to_update: list[ContainerToUpdateInfo], state: ResizeState) -> None:
    """Update each container in turn for one resource (the other resource keeps its current values); the first
    failure stops the rest (CRIError), so that the order computePodResizeAction chose holds.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go kubeGenericRuntimeManager.updatePodContainerResources
    """
    for info in containers_to_update:
        desired, current = info.desired_container_resources, info.current_container_resources
        cpu, memory = (current, desired) if resource == "memory" else (desired, current)
        container = api.deep_copy(info.container)
        container.resources = V1ResourceRequirements(
            limits={"cpu": f"{cpu.cpu_limit}m", "memory": str(memory.memory_limit)},
            requests={"cpu": f"{cpu.cpu_request}m", "memory": str(memory.memory_request)})
        update_container_resources(runtime, pod, container, info.kube_container_id, state)
        if resource == "memory":  # the runtime took them: current is what the container has now
            current.memory_limit, current.memory_request = desired.memory_limit, desired.memory_request
        else:
            current.cpu_limit, current.cpu_request = desired.cpu_limit, desired.cpu_request
# --8<-- [end:update_pod_container_resources]


def validate_pod_resize_action(pod: V1Pod, current: ResourceConfig, desired: ResourceConfig, changes,
                               state: ResizeState) -> Optional[str]:
    """The error that makes the resize not feasible now, or None: a memory limit set below what is in use.

    Only checked when memory changes: the pod's limit and each container's limit that is added or lowered must
    stay above the usage the pod's stats report (missing usage is an error).
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go validatePodResizeAction, validateMemoryResizeAction
    """
    if not (changes.containers_to_update.get("memory") or changes.update_pod_resources):
        return None
    pod_decreasing = desired.memory is not None and (current.memory is None or desired.memory < current.memory)
    decreasing = {}
    for info in changes.containers_to_update.get("memory", []):
        want, have = info.desired_container_resources.memory_limit, info.current_container_resources.memory_limit
        if want != 0 and (have == 0 or want < have):  # a limit added, or lowered
            decreasing[info.container.name] = want
    if not pod_decreasing and not decreasing:
        return None
    stats = state.pod_stats.get(pod.metadata.uid)
    if stats is None:
        return f'unable to read memory usage for pod "{_format_pod(pod)}"'
    errors = []
    pod_usage = stats.memory.usage_bytes if stats.memory is not None else None
    if pod_decreasing:
        if pod_usage is None:
            errors.append("missing pod memory usage")
        elif pod_usage >= desired.memory % 2**64:  # compared as uint64
            errors.append(f"attempting to set pod memory limit ({desired.memory}) below current usage ({pod_usage})")
    for c in stats.containers:
        if c.name in decreasing:
            usage = c.memory.usage_bytes if c.memory is not None else None
            if usage is None:
                errors.append(f'missing container "{c.name}" memory usage')
            elif usage >= decreasing[c.name] % 2**64:
                if pod_usage is None:
                    raise ValueError("upstream prints the pod's usage here and dereferences nil without it")
                errors.append(f'attempting to set container "{c.name}" memory limit ({decreasing[c.name]}) below '
                              f"current usage ({pod_usage})")  # the pod's usage, as upstream prints it
    if not errors:
        return None
    unique = list(dict.fromkeys(errors))  # k8s.io/apimachinery/pkg/util/errors aggregate: duplicates once, [a, b]
    return "cannot decrease memory limits: " + (unique[0] if len(unique) == 1 else f"[{', '.join(unique)}]")


def _format_pod(pod: V1Pod) -> str:
    return f"{pod.metadata.name}_{pod.metadata.namespace}({pod.metadata.uid})"


# --8<-- [start:do_pod_resize_action]
def do_pod_resize_action(runtime: RuntimeService, pod: V1Pod, changes, state: ResizeState) -> SyncResult:
    """Apply the resize: memory first, then cpu; for each, a pod cgroup value that grows is written before the
    containers are updated and one that shrinks after them (limits outside requests); the first error stops it all.

    The pod cgroup's new values come from its spec (ResourceConfigForPod), the current ones from reading the cgroup
    back; a memory request is never written. A pod with no memory or cpu limit keeps the one it has.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go kubeGenericRuntimeManager.doPodResizeAction
    """
    result = SyncResult(RESIZE_POD_IN_PLACE, _format_pod(pod))
    pcm = state.pod_cgroups
    desired = resource_config_for_pod(pod, state.cpu_cfs_quota, state.cpu_cfs_quota_period, cpu_cfs_quota_period_gate=(
        features.DEFAULT_FEATURE_GATE.enabled("CustomCPUCFSQuotaPeriod")))
    try:
        current_memory = pcm.get_pod_cgroup_config(pod, "memory")
    except CgroupError:
        result.fail(ERR_RESIZE_POD_IN_PLACE, f'unable to get pod cgroup memory config for pod "{_format_pod(pod)}"')
        return result
    try:
        current_cpu = pcm.get_pod_cgroup_config(pod, "cpu")
    except CgroupError:
        result.fail(ERR_RESIZE_POD_IN_PLACE, f'unable to get pod cgroup cpu config for pod "{_format_pod(pod)}"')
        return result
    current = merge_resource_config(merge_resource_config(desired, current_memory), current_cpu)
    infeasible = validate_pod_resize_action(pod, current, desired, changes, state)
    if infeasible is not None:
        result.fail(ERR_RESIZE_POD_IN_PLACE, infeasible)
        return result
    if state.request_reinspect is not None:  # the Pod's status is read again however the writes go (v1.36)
        state.request_reinspect(pod.metadata.uid)

    def set_pod_cgroup_config(resource: str, limit: bool) -> None:
        if resource == "memory":
            if limit:  # memory requests are not written to cgroups
                pcm.set_pod_cgroup_config(pod, ResourceConfig(memory=desired.memory))
        elif limit:
            pcm.set_pod_cgroup_config(pod, ResourceConfig(cpu_quota=desired.cpu_quota, cpu_period=desired.cpu_period))
        else:
            pcm.set_pod_cgroup_config(pod, ResourceConfig(cpu_shares=desired.cpu_shares))

    def resize_containers(resource: str, current_limit: int, new_limit: int, current_request: int, new_request: int):
        if new_limit > current_limit:
            set_pod_cgroup_config(resource, True)
        if new_request > current_request:
            set_pod_cgroup_config(resource, False)
        if changes.containers_to_update.get(resource):
            update_pod_container_resources(runtime, pod, resource, changes.containers_to_update[resource], state)
        if new_request < current_request:
            set_pod_cgroup_config(resource, False)
        if new_limit < current_limit:
            set_pod_cgroup_config(resource, True)

    try:
        if changes.containers_to_update.get("memory") or changes.update_pod_resources:
            if desired.memory is None:
                desired.memory = current_memory.memory  # the pod keeps its limit (removing one is not supported)
            resize_containers("memory", current_memory.memory, desired.memory, 0, 0)
        if changes.containers_to_update.get("cpu") or changes.update_pod_resources:
            if desired.cpu_quota is None:
                desired.cpu_quota = current_cpu.cpu_quota
            resize_containers("cpu", current_cpu.cpu_quota, desired.cpu_quota, current_cpu.cpu_shares, desired.cpu_shares)
    except (CgroupError, CRIError) as err:
        result.fail(ERR_RESIZE_POD_IN_PLACE, str(err))
    return result
# --8<-- [end:do_pod_resize_action]
