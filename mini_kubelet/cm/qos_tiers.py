"""The QoS-tier cgroups: what the kubelet writes on kubepods, kubepods/burstable and kubepods/besteffort.

Upstream: pkg/kubelet/cm/qos_container_manager_linux.go (UpdateCgroups, with the MemoryQoS and
QOSReserved gates off, as they are by default in v1.27).
"""

from __future__ import annotations

from typing import Iterable

from kubernetes.client import V1Pod

from mini_kubelet import api, qos
from mini_kubelet.cm.cgroups import HOST_PAGE_SIZES, page_size_in_bytes
from mini_kubelet.cm.helpers import MIN_SHARES, ResourceConfig, milli_cpu_to_shares
from mini_kubelet.resource import pod_requests

# --8<-- [start:unbounded_huge_page_limit]
UNBOUNDED_HUGE_PAGE_LIMIT = 1 << 62  # 4611686018427387904: "no limit" for every hugepage size
# --8<-- [end:unbounded_huge_page_limit]


# --8<-- [start:huge_pages_unbounded]
def huge_pages_unbounded(host_page_sizes: Iterable[str] = HOST_PAGE_SIZES) -> dict[int, int]:
    """A hugepage map with limit 1<<62 for every page size the host has.

    Upstream: pkg/kubelet/cm/qos_container_manager_linux.go qosContainerManagerImpl.setHugePagesUnbounded
    """
    return {page_size_in_bytes(size): UNBOUNDED_HUGE_PAGE_LIMIT for size in host_page_sizes}
# --8<-- [end:huge_pages_unbounded]


# --8<-- [start:burstable_cpu_request]
def burstable_cpu_request(pods: Iterable[V1Pod]) -> int:
    """The millicores requested by all Burstable pods (pod requests: init max and overhead included).

    Upstream: pkg/kubelet/cm/qos_container_manager_linux.go qosContainerManagerImpl.setCPUCgroupConfig
    """
    total = 0
    for pod in pods:
        if qos.get_pod_qos(pod) != qos.BURSTABLE:
            continue
        requests = pod_requests(pod)
        if "cpu" in requests:
            total += api.milli_value(requests["cpu"])
    return total
# --8<-- [end:burstable_cpu_request]


# --8<-- [start:qos_tier_configs]
def qos_tier_configs(pods: Iterable[V1Pod], host_page_sizes: Iterable[str] = HOST_PAGE_SIZES) -> dict[str, ResourceConfig]:
    """The three configs UpdateCgroups writes: "kubepods" (the Guaranteed tier), "burstable", "besteffort".

    burstable gets cpu shares for the Burstable pods' summed cpu requests (2 when there are none),
    besteffort always 2 shares, and all three unbounded hugepages. Guaranteed gets no cpu shares here:
    the kubepods cpu.shares come from node allocatable.
    Upstream: pkg/kubelet/cm/qos_container_manager_linux.go qosContainerManagerImpl.UpdateCgroups
    """
    sizes = tuple(host_page_sizes)
    return {
        "kubepods": ResourceConfig(huge_page_limit=huge_pages_unbounded(sizes)),
        "burstable": ResourceConfig(cpu_shares=milli_cpu_to_shares(burstable_cpu_request(pods)),
                                    huge_page_limit=huge_pages_unbounded(sizes)),
        "besteffort": ResourceConfig(cpu_shares=MIN_SHARES, huge_page_limit=huge_pages_unbounded(sizes)),
    }
# --8<-- [end:qos_tier_configs]
