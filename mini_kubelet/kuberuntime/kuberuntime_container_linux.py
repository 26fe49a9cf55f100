"""The CRI resources the kubelet asks the runtime to give one container (cpu, memory, hugepages, OOM score).

Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go and helpers_linux.go.
Gates off as in v1.27 by default: CustomCPUCFSQuotaPeriod, MemoryQoS, NodeSwap, InPlacePodVerticalScaling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Iterable, Optional

from kubernetes.client import V1Container, V1Pod

from mini_kubelet import api, qos
from mini_kubelet.cm.cgroups import HOST_PAGE_SIZES, huge_page_unit_size_from_byte_size
from mini_kubelet.cm.helpers import milli_cpu_to_shares

# --8<-- [start:constants]
MILLI_CPU_TO_CPU = 1000
QUOTA_PERIOD = 100000  # microseconds
MIN_QUOTA_PERIOD = 1000  # microseconds: the smallest quota written
HUGEPAGES_PREFIX = "hugepages-"
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
                              cpu_cfs_quota: bool = True, cpu_period: int = QUOTA_PERIOD) -> LinuxContainerResources:
    """CPU shares, quota and period, and the memory limit, from one container's request and limits.

    A missing cpu request (None) takes its shares from the cpu limit; an explicit 0 gets 2 shares.
    With cpu_cfs_quota on, the period is always written, and quota 0 (none) when there is no cpu limit.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go kubeGenericRuntimeManager.calculateLinuxResources
    """
    resources = LinuxContainerResources()
    shares_from = cpu_limit if cpu_request is None else cpu_request
    resources.cpu_shares = milli_cpu_to_shares(api.milli_value(shares_from))
    resources.memory_limit_in_bytes = api.value(memory_limit)
    if cpu_cfs_quota:
        resources.cpu_quota = milli_cpu_to_quota(api.milli_value(cpu_limit), cpu_period)
        resources.cpu_period = cpu_period
    return resources
# --8<-- [end:calculate_linux_resources]


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
                                       host_page_sizes: Iterable[str] = HOST_PAGE_SIZES) -> LinuxContainerResources:
    """Everything the kubelet sends the runtime for one container's cgroup, and its oom_score_adj.

    memory_capacity is the machine's memory (not allocatable); it only matters for the OOM score.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go kubeGenericRuntimeManager.generateLinuxContainerResources
    """
    requests = (container.resources.requests if container.resources else None) or {}
    limits = (container.resources.limits if container.resources else None) or {}
    cpu_request = api.parse_quantity(requests["cpu"]) if "cpu" in requests else None
    resources = calculate_linux_resources(
        cpu_request, api.parse_quantity(limits.get("cpu", "0")), api.parse_quantity(limits.get("memory", "0")),
        cpu_cfs_quota=cpu_cfs_quota, cpu_period=cpu_period)
    resources.oom_score_adj = qos.get_container_oom_score_adjust(pod, container, memory_capacity)
    resources.hugepage_limits = get_hugepage_limits_from_resources(limits, host_page_sizes)
    return resources
# --8<-- [end:generate_linux_container_resources]
