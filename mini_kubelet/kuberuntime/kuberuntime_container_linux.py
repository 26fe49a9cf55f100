"""The CRI resources the kubelet asks the runtime to give one container (cpu, memory, hugepages, OOM score, swap).

Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go and helpers_linux.go.
Gates off as in v1.27 by default: CustomCPUCFSQuotaPeriod, MemoryQoS, NodeSwap, InPlacePodVerticalScaling.
From 1.28 a cgroup v2 container gets memory.oom.group=1 (1.32: unless singleProcessOOMKill) and a
memory.swap.max; with PodLevelResources a container without a limit takes the pod-level one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Iterable, Optional

from kubernetes.client import V1Container, V1Pod

from mini_kubelet import api, features, qos, resource, types
from mini_kubelet.cm.cgroups import HOST_PAGE_SIZES, huge_page_unit_size_from_byte_size
from mini_kubelet.cm.helpers import MIN_SHARES, SHARES_PER_CPU, milli_cpu_to_shares
from mini_kubelet.container import ContainerResources

# --8<-- [start:constants]
MILLI_CPU_TO_CPU = 1000
QUOTA_PERIOD = 100000  # microseconds
MIN_QUOTA_PERIOD = 1000  # microseconds: the smallest quota written
HUGEPAGES_PREFIX = "hugepages-"
MEMORY_OOM_GROUP = "memory.oom.group"  # cgroup v2: an OOM kills every process of the cgroup
CGROUP2_MAX_SWAP_FILENAME = "memory.swap.max"  # pkg/kubelet/cm Cgroup2MaxSwapFilename
NO_SWAP, LIMITED_SWAP = "NoSwap", "LimitedSwap"  # kubelet config memorySwap.swapBehavior (NoSwap from 1.30)
# --8<-- [end:constants]


# --8<-- [start:LinuxContainerResources]
@dataclass
class LinuxContainerResources:
    """The resource part of a CRI container config; 0 means "not set" for every field.

    Upstream: k8s.io/cri-api/pkg/apis/runtime/v1 LinuxContainerResources
    """

    cpu_shares: int = 0
    cpu_quota: int = 0  # microseconds per period
    cpu_period: int = 0  # microseconds
    memory_limit_in_bytes: int = 0
    oom_score_adj: int = 0
    hugepage_limits: dict[str, int] = field(default_factory=dict)  # runc page size ("2MB") -> bytes
    memory_swap_limit_in_bytes: int = 0  # memory + swap (cgroup v1, and v1.27's NodeSwap)
    unified: dict[str, str] = field(default_factory=dict)  # cgroup v2 files written as given
# --8<-- [end:LinuxContainerResources]


# --8<-- [start:milli_cpu_to_quota]
def milli_cpu_to_quota(milli_cpu: int, period: int) -> int:
    """CFS quota for a CPU limit over the given period: 0 for no limit, else at least 1000.

    Unlike cm's version it never looks at the CustomCPUCFSQuotaPeriod gate: the caller picked the period.
    Upstream: pkg/kubelet/kuberuntime/helpers_linux.go milliCPUToQuota
    """
    if milli_cpu == 0:
        return 0
    return max(milli_cpu * period // MILLI_CPU_TO_CPU, MIN_QUOTA_PERIOD)
# --8<-- [end:milli_cpu_to_quota]


# --8<-- [start:calculate_linux_resources]
def calculate_linux_resources(cpu_request: Optional[Decimal], cpu_limit: Decimal, memory_limit: Decimal, *,
                              cpu_cfs_quota: bool = True, cpu_period: int = QUOTA_PERIOD, cgroup_version: int = 2,
                              single_process_oom_kill: Optional[bool] = None) -> LinuxContainerResources:
    """CPU shares, quota and period, and the memory limit, from one container's request and limits.

    A missing cpu request (None) takes its shares from the cpu limit; an explicit 0 gets 2 shares.
    With cpu_cfs_quota on, the period is always written, and quota 0 (none) when there is no cpu limit.
    From 1.28 a cgroup v2 container also gets memory.oom.group=1, unless (1.32+) singleProcessOOMKill holds.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go kubeGenericRuntimeManager.calculateLinuxResources
    """
    resources = LinuxContainerResources()
    shares_from = cpu_limit if cpu_request is None else cpu_request
    resources.cpu_shares = milli_cpu_to_shares(api.milli_value(shares_from))
    resources.memory_limit_in_bytes = api.value(memory_limit)
    if cpu_cfs_quota:
        resources.cpu_quota = milli_cpu_to_quota(api.milli_value(cpu_limit), cpu_period)
        resources.cpu_period = cpu_period
    gate = features.DEFAULT_FEATURE_GATE
    if cgroup_version == 2 and gate.changed("MemoryOOMGroup") and not effective_single_process_oom_kill(
            single_process_oom_kill, cgroup_version):
        resources.unified = {MEMORY_OOM_GROUP: "1"}
    return resources
# --8<-- [end:calculate_linux_resources]


def effective_single_process_oom_kill(configured: Optional[bool], cgroup_version: int) -> bool:
    """What the runtime manager is given: always true on cgroup v1, the config (unset is false) on v2; 1.32+.

    Before 1.32 there is no such setting, so false.
    Upstream: pkg/kubelet/kubelet.go NewMainKubelet (singleProcessOOMKill)
    """
    if not features.DEFAULT_FEATURE_GATE.changed("SingleProcessOOMKill"):
        return False
    return True if cgroup_version == 1 else bool(configured)


def get_cpu_limit(pod: V1Pod, container: V1Container) -> Decimal:
    """The container's cpu limit, or with PodLevelResources the pod-level one when the container sets none.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go getCPULimit
    """
    return _limit(pod, container, "cpu")


def get_memory_limit(pod: V1Pod, container: V1Container) -> Decimal:
    """The container's memory limit, or with PodLevelResources the pod-level one when the container sets none.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go getMemoryLimit
    """
    return _limit(pod, container, "memory")


def _limit(pod: V1Pod, container: V1Container, name: str) -> Decimal:
    limits = (container.resources.limits if container.resources else None) or {}
    own = api.parse_quantity(limits.get(name, "0"))
    gate = features.DEFAULT_FEATURE_GATE
    if own == 0 and gate.enabled("PodLevelResources") and resource.is_pod_level_resources_set(pod):
        return api.parse_quantity((pod.spec.resources.limits or {}).get(name, "0"))
    return own


# --8<-- [start:get_hugepage_limits_from_resources]
def get_hugepage_limits_from_resources(limits: Optional[dict], host_page_sizes: Iterable[str] = HOST_PAGE_SIZES) -> dict[str, int]:
    """Hugepage limit per host page size: 0 for each, then the container's hugepages-<size> limits.

    Names whose size does not parse as a quantity (e.g. "hugepages-2MB") are skipped, and sizes
    the host does not have are dropped.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go GetHugepageLimitsFromResources
    """
    result = {size: 0 for size in host_page_sizes}
    for name, amount in (limits or {}).items():
        if not name.startswith(HUGEPAGES_PREFIX):
            continue
        try:
            size = huge_page_unit_size_from_byte_size(api.value(api.parse_quantity(name[len(HUGEPAGES_PREFIX):])))
        except (api.ManifestError, ValueError):
            continue
        if size in result:
            result[size] = api.value(amount) % 2**64  # uint64
    return result
# --8<-- [end:get_hugepage_limits_from_resources]


# --8<-- [start:generate_linux_container_resources]
def generate_linux_container_resources(pod: V1Pod, container: V1Container, memory_capacity: int, *,
                                       cpu_cfs_quota: bool = True, cpu_period: int = QUOTA_PERIOD,
                                       host_page_sizes: Iterable[str] = HOST_PAGE_SIZES, cgroup_version: int = 2,
                                       single_process_oom_kill: Optional[bool] = None,
                                       swap_behavior: str = "", swap_capacity: int = 0,
                                       swap_controller: Optional[bool] = None) -> LinuxContainerResources:
    """Everything the kubelet sends the runtime for one container's cgroup, and its oom_score_adj.

    memory_capacity is the machine's memory (not allocatable); it matters for the OOM score and swap.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go kubeGenericRuntimeManager.generateLinuxContainerResources
    """
    requests = (container.resources.requests if container.resources else None) or {}
    limits = (container.resources.limits if container.resources else None) or {}
    cpu_request = api.parse_quantity(requests["cpu"]) if "cpu" in requests else None
    resources = calculate_linux_resources(
        cpu_request, get_cpu_limit(pod, container), get_memory_limit(pod, container),
        cpu_cfs_quota=cpu_cfs_quota, cpu_period=cpu_period, cgroup_version=cgroup_version,
        single_process_oom_kill=single_process_oom_kill)
    resources.oom_score_adj = qos.get_container_oom_score_adjust(pod, container, memory_capacity)
    resources.hugepage_limits = get_hugepage_limits_from_resources(limits, host_page_sizes)
    configure_container_swap_resources(resources, pod, container, swap_behavior, memory_capacity, swap_capacity,
                                       cgroup_version, swap_controller)
    return resources
# --8<-- [end:generate_linux_container_resources]


# --8<-- [start:configure_container_swap_resources]
def configure_container_swap_resources(resources: LinuxContainerResources, pod: V1Pod, container: V1Container,
                                       swap_behavior: str, memory_capacity: int, swap_capacity: int,
                                       cgroup_version: int = 2, swap_controller: Optional[bool] = None) -> None:
    """Set the container's swap: memory.swap.max 0 (none), the LimitedSwap share, or "max"; in place.

    swap_controller says whether the kubelet finds the swap controller; by default it is taken to exist on
    cgroup v2 (memory.swap.max in the kubelet's own cgroup) and not on v1 (memory.memsw.* needs swapaccount=1).
    Without it nothing is set; on v1 with it, "no swap" is memory + swap = the memory limit.
    v1.27 (NodeSwap alpha) only sets memory + swap to the memory limit, with the gate on.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go configureContainerSwapResources
    """
    gate = features.DEFAULT_FEATURE_GATE
    if not gate.changed("MemoryOOMGroup"):  # v1.27: the 1.28 swap rework is not there yet
        if gate.enabled("NodeSwap"):
            resources.memory_swap_limit_in_bytes = resources.memory_limit_in_bytes
        return
    if not (cgroup_version == 2 if swap_controller is None else swap_controller):
        return
    if cgroup_version != 2:
        resources.memory_swap_limit_in_bytes = resources.memory_limit_in_bytes  # ConfigureNoSwap on cgroup v1
        return
    behavior = get_container_swap_behavior(pod, container, swap_behavior, cgroup_version)
    if behavior == LIMITED_SWAP:
        request = _memory_request(container)
        try:
            swap = calc_swap_for_burstable_pods(request, memory_capacity, swap_capacity)
        except ValueError:
            swap = 0  # the kubelet logs the error and allows no swap
        resources.unified[CGROUP2_MAX_SWAP_FILENAME] = str(swap)
    elif behavior == "UnlimitedSwap":
        resources.unified[CGROUP2_MAX_SWAP_FILENAME] = "max"
    else:
        resources.unified[CGROUP2_MAX_SWAP_FILENAME] = "0"
# --8<-- [end:configure_container_swap_resources]


def get_container_swap_behavior(pod: V1Pod, container: V1Container, swap_behavior: str, cgroup_version: int) -> str:
    """NoSwap unless LimitedSwap applies: the gate on, cgroup v2, a Burstable non-critical pod, and a container
    whose memory request is set and below its limit. 1.28-1.29 have no NoSwap: anything but LimitedSwap is UnlimitedSwap.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go kubeGenericRuntimeManager.GetContainerSwapBehavior
    """
    gate = features.DEFAULT_FEATURE_GATE
    if not gate.enabled("NodeSwap") or cgroup_version != 2:
        return NO_SWAP
    if swap_behavior != LIMITED_SWAP:
        return NO_SWAP if gate.release not in ("1.28", "1.29") else "UnlimitedSwap"
    if gate.changed("NoSwapForCriticalPods") and types.is_critical_pod(pod):
        return NO_SWAP
    requests = (container.resources.requests if container.resources else None) or {}
    limits = (container.resources.limits if container.resources else None) or {}
    request = api.parse_quantity(requests.get("memory", "0"))
    limit = api.parse_quantity(limits.get("memory", "0"))
    if qos.get_pod_qos(pod) != qos.BURSTABLE or (request == 0 and limit == 0) or request == limit:
        return NO_SWAP
    return LIMITED_SWAP


def calc_swap_for_burstable_pods(container_memory_request: int, node_total_memory: int, total_pods_swap: int) -> int:
    """The container's swap: its memory request's share of the node's memory, times the node's swap (float64, truncated).

    Raises ValueError when the node has no memory or the request is larger than it.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go calcSwapForBurstablePods
    """
    if node_total_memory <= 0:
        raise ValueError("total node memory is 0")
    if container_memory_request > node_total_memory:
        raise ValueError(f"container request {container_memory_request} is larger than total node memory "
                         f"{node_total_memory}")
    proportion = float(container_memory_request) / float(node_total_memory)  # Go float64, as Python's float
    return int(proportion * float(total_pods_swap))  # int64() truncates toward zero


def _memory_request(container: V1Container) -> int:
    requests = (container.resources.requests if container.resources else None) or {}
    return api.value(requests.get("memory", "0"))


# --8<-- [start:to_kube_container_resources]
def shares_to_milli_cpu(shares: int) -> int:
    """cpu.shares back to millicores, rounded up; 0 below the minimum of 2 shares.

    Upstream: pkg/kubelet/kuberuntime/helpers_linux.go sharesToMilliCPU
    """
    if shares < MIN_SHARES:
        return 0
    return math.ceil(float(api.int64(shares * MILLI_CPU_TO_CPU)) / float(SHARES_PER_CPU))  # Go: int64, then float64


def quota_to_milli_cpu(quota: int, period: int) -> int:
    """A CFS quota over its period as millicores (-1, no quota, is 0), truncated.

    Upstream: pkg/kubelet/kuberuntime/helpers_linux.go quotaToMilliCPU
    """
    if quota == -1:
        return 0
    return api.int64_div(quota * MILLI_CPU_TO_CPU, period)


def to_kube_container_resources(linux: Optional[LinuxContainerResources]) -> Optional[ContainerResources]:
    """What the kubelet reads back from the runtime's container status: cpu request from the shares, cpu limit
    from quota and period, memory limit; None when the runtime reports none of them (memory requests never).

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go toKubeContainerResources
    """
    if linux is None:
        return None
    positive = lambda n: n if n > 0 else None  # noqa: E731
    found = ContainerResources(
        cpu_request=positive(shares_to_milli_cpu(linux.cpu_shares)) if linux.cpu_shares > 0 else None,
        cpu_limit=positive(quota_to_milli_cpu(linux.cpu_quota, linux.cpu_period)) if linux.cpu_period > 0 else None,
        memory_limit=positive(linux.memory_limit_in_bytes))
    return found if found != ContainerResources() else None
# --8<-- [end:to_kube_container_resources]
