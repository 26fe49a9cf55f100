"""From a Pod's requests and limits to the values the kubelet writes into its pod cgroup.

Upstream: pkg/kubelet/cm/helpers_linux.go (and the ResourceConfig type in pkg/kubelet/cm/types.go).
Feature gates are at their v1.27 defaults: CustomCPUCFSQuotaPeriod and InPlacePodVerticalScaling are off.
With PodLevelResources on (beta from 1.34), a pod's spec.resources size its cgroup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Optional

from kubernetes.client import V1Pod

from .. import api, features, qos, resource
from ..api import Bytes, MilliCPU

# --8<-- [start:constants]
MIN_SHARES = 2  # the kernel's bounds for cpu.shares
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000
QUOTA_PERIOD = 100000  # microseconds: 100ms
MIN_QUOTA_PERIOD = 1000  # microseconds: 1ms; despite the name, the smallest quota written
# --8<-- [end:constants]

_HUGE_PAGES_PREFIX = "hugepages-"
_MEMORY_MIN = "memory.min"  # pkg/kubelet/cm/cgroup_manager_linux.go MemoryMin


# --8<-- [start:milli_cpu_to_shares]
def milli_cpu_to_shares(milli_cpu: MilliCPU) -> int:
    """CFS shares for a CPU request: 1024 per CPU, kept within [2, 262144].

    Upstream: pkg/kubelet/cm/helpers_linux.go MilliCPUToShares
    """
    if milli_cpu == 0:
        return MIN_SHARES  # not the kernel's default of 1024 for "unset"
    shares = api.int64_div(milli_cpu * SHARES_PER_CPU, MILLI_CPU_TO_CPU)  # int64: past 2**53 millicores it wraps
    return min(max(shares, MIN_SHARES), MAX_SHARES)
# --8<-- [end:milli_cpu_to_shares]


# --8<-- [start:milli_cpu_to_quota]
def milli_cpu_to_quota(milli_cpu: MilliCPU, period: int, *, cpu_cfs_quota_period_gate: bool = False) -> int:
    """CFS quota in microseconds for a CPU limit (0 = no limit, else at least 1000).

    Upstream: pkg/kubelet/cm/helpers_linux.go MilliCPUToQuota
    """
    if milli_cpu == 0:
        return 0
    if not cpu_cfs_quota_period_gate:
        period = QUOTA_PERIOD  # the argument is ignored while the gate is off
    quota = api.int64_div(milli_cpu * period, MILLI_CPU_TO_CPU)  # int64, as in Go
    return max(quota, MIN_QUOTA_PERIOD)
# --8<-- [end:milli_cpu_to_quota]


# --8<-- [start:huge_page_limits]
def huge_page_limits(resource_list: dict[str, Decimal | str]) -> dict[int, int]:
    """Page size in bytes -> bytes, summed over every hugepages-<size> entry of a resource list.

    Upstream: pkg/kubelet/cm/helpers_linux.go HugePageLimits
    """
    limits: dict[int, int] = {}
    for name, amount in resource_list.items():
        if not name.startswith(_HUGE_PAGES_PREFIX):
            continue
        try:
            page_size = api.value(api.parse_quantity(name[len(_HUGE_PAGES_PREFIX):]))
        except api.ManifestError:
            page_size = 0  # upstream ignores the parse error and uses a zero quantity
        limits[page_size] = api.int64(limits.get(page_size, 0) + api.value(amount))  # an int64 sum, as in Go
    return limits
# --8<-- [end:huge_page_limits]


# --8<-- [start:ResourceConfig]
@dataclass
class ResourceConfig:
    """The cgroup settings for one cgroup; None means "do not write this one".

    Upstream: pkg/kubelet/cm/types.go ResourceConfig
    """

    memory: Optional[Bytes] = None
    cpu_shares: Optional[int] = None
    cpu_quota: Optional[int] = None  # microseconds; -1 = unlimited
    cpu_period: Optional[int] = None  # microseconds
    huge_page_limit: dict[int, int] = field(default_factory=dict)  # page size -> bytes
    pids_limit: Optional[int] = None
    unified: dict[str, str] = field(default_factory=dict)  # cgroup v2 files, e.g. memory.min
# --8<-- [end:ResourceConfig]


# --8<-- [start:resource_config_for_pod]
def resource_config_for_pod(
    pod: V1Pod,
    enforce_cpu_limits: bool = True,
    cpu_period: int = QUOTA_PERIOD,
    enforce_memory_qos: bool = False,
    *,
    cpu_cfs_quota_period_gate: bool = False,
) -> ResourceConfig:
    """The pod cgroup's settings: shares from requests, quota and memory from limits, by QoS class.

    Upstream: pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod
    """
    requests = resource.pod_requests(pod)  # overhead included
    cpu_limits_declared = memory_limits_declared = True

    def note_undeclared(limits: dict[str, Decimal], kind: str) -> None:
        # Called for every app and init container: one without a limit leaves the pod unlimited.
        nonlocal cpu_limits_declared, memory_limits_declared
        if limits.get("cpu", 0) == 0:
            cpu_limits_declared = False
        if limits.get("memory", 0) == 0:
            memory_limits_declared = False

    limits = resource.pod_limits(pod, container_fn=note_undeclared)
    if features.DEFAULT_FEATURE_GATE.enabled("PodLevelResources") and resource.is_pod_level_resources_set(pod):
        # A pod-level limit stands for the whole pod, whatever its containers leave unlimited.
        pod_limits = pod.spec.resources.limits or {}
        if api.parse_quantity(pod_limits.get("cpu", "0")) != 0:
            cpu_limits_declared = True
        if api.parse_quantity(pod_limits.get("memory", "0")) != 0:
            memory_limits_declared = True
    hugepages = huge_page_limits(requests)  # from requests, not limits

    cpu_requests = api.milli_value(requests.get("cpu", Decimal(0)))
    cpu_limits = api.milli_value(limits.get("cpu", Decimal(0)))
    memory_limits = api.value(limits.get("memory", Decimal(0)))

    cpu_shares = milli_cpu_to_shares(cpu_requests)
    cpu_quota = milli_cpu_to_quota(cpu_limits, cpu_period, cpu_cfs_quota_period_gate=cpu_cfs_quota_period_gate)
    if not enforce_cpu_limits:
        cpu_quota = -1  # the kubelet runs with cpuCFSQuota off: no cap

    config = ResourceConfig()
    qos_class = qos.get_pod_qos(pod)
    if qos_class == qos.GUARANTEED:
        # The period is written as given, even though the quota was computed over 100000.
        config.cpu_shares, config.cpu_quota, config.cpu_period = cpu_shares, cpu_quota, cpu_period
        config.memory = memory_limits
    elif qos_class == qos.BURSTABLE:
        config.cpu_shares = cpu_shares
        if cpu_limits_declared:
            config.cpu_quota, config.cpu_period = cpu_quota, cpu_period
        if memory_limits_declared:
            config.memory = memory_limits
    else:
        config.cpu_shares = MIN_SHARES  # BestEffort, even when overhead gave it a cpu request
    config.huge_page_limit = hugepages

    if enforce_memory_qos:
        memory_min = api.value(requests.get("memory", Decimal(0)))
        if memory_min > 0:
            config.unified = {_MEMORY_MIN: str(memory_min)}
    return config
# --8<-- [end:resource_config_for_pod]
