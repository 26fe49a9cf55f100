"""The cgroup tree the kubelet (and the runtime, on its behalf) builds for some pods on one node.

Not one upstream function: it puts together what several managers write, in v1.27 with default
settings (cgroupsPerQOS on, cgroupRoot "/", enforceNodeAllocatable ["pods"], cpuCFSQuota on,
100ms period, podPidsLimit -1, every alpha gate off), or in the release the profile names (a container's
memory.oom.group and memory.swap.max from 1.28). Each file says which function computed it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Iterable, Mapping, Optional

from kubernetes.client import V1Container, V1Pod

from mini_kubelet import api, qos
from mini_kubelet.cm import cgroups
from mini_kubelet.cm.cgroups import KUBEPODS, cgroup_files, cgroup_name_to_path, page_size_in_bytes
from mini_kubelet.cm.helpers import ResourceConfig, resource_config_for_pod
from mini_kubelet.cm.node_allocatable import node_allocatable_cgroup_config
from mini_kubelet.cm.qos_tiers import qos_tier_configs
from mini_kubelet import kuberuntime  # a module import: kuberuntime itself imports mini_kubelet.cm

if TYPE_CHECKING:  # a Node's models load when a Node is read, not for every Pod
    from kubernetes.client import V1Node

# --8<-- [start:default_node]
# Used when no Node is given: a 4-CPU, 16Gi machine with the usual x86-64 hugepage sizes and no hugepages.
DEFAULT_NODE_CAPACITY = {"cpu": "4", "memory": "16Gi", "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
DEFAULT_NODE_NOTE = "no Node given: a default node with 4 CPUs and 16Gi of memory, no hugepages"
OOM_SCORE_ADJ_FILE = "/proc/<pid>/oom_score_adj"  # not a cgroup file: set on each process of the container
# --8<-- [end:default_node]

_CM = "pkg/kubelet/cm"
_KR = "pkg/kubelet/kuberuntime"
_WEIGHT = f"{_CM}/cgroup_manager_linux.go getCPUWeight"
_RUNC_WEIGHT = "runc libcontainer/cgroups/utils.go ConvertCPUSharesToCgroupV2Value"
_FILL_HUGETLB = f"{_CM}/cgroup_manager_linux.go maybeSetHugetlb"
_UNIFIED_ORIGINS = {
    "memory.oom.group": f"{_KR}/kuberuntime_container_linux.go calculateLinuxResources",
    "memory.swap.max": f"{_KR}/kuberuntime_container_linux.go configureContainerSwapResources",
}
_CALC_SWAP = f"{_KR}/kuberuntime_container_linux.go calcSwapForBurstablePods"  # a LimitedSwap share


# --8<-- [start:Cgroup]
@dataclass
class Cgroup:
    """One cgroup: its path for the chosen driver, the files written there, and who computed each value.

    computed_by maps a file to "path Func" of the upstream function(s), several joined by "; " in
    the order they apply. kind is "node", "qos", "pod", "container" or "init container";
    pod and container name what the cgroup belongs to.
    """

    path: str
    files: dict[str, str]
    computed_by: dict[str, str]
    note: str = ""
    kind: str = ""
    pod: str = ""
    container: str = ""
# --8<-- [end:Cgroup]


# --8<-- [start:node_capacity]
def node_capacity(node: Optional[V1Node]) -> dict[str, Decimal]:
    """The machine capacity the container manager sees: cpu, memory and hugepages-* from the Node status.

    Upstream: pkg/kubelet/cadvisor/util.go CapacityFromMachineInfo (the kubelet reads the machine; we read its Node)
    """
    raw = (node.status.capacity if node is not None and node.status is not None else None) or {}
    if node is None:
        raw = DEFAULT_NODE_CAPACITY
    return {name: api.parse_quantity(text) for name, text in raw.items()
            if name in ("cpu", "memory") or name.startswith("hugepages-")}
# --8<-- [end:node_capacity]


def _host_page_sizes(capacity: Mapping[str, Decimal]) -> tuple[str, ...]:
    """The host's hugepage sizes as runc names them: the Node lists every size, with 0 when none are set aside."""
    sizes = []
    for name in capacity:
        if name.startswith("hugepages-"):
            try:
                sizes.append(cgroups.huge_page_unit_size_from_byte_size(api.value(api.parse_quantity(name[10:]))))
            except (api.ManifestError, ValueError):
                continue
    return tuple(sorted(set(sizes), key=page_size_in_bytes)) or cgroups.HOST_PAGE_SIZES


def _origins(files: Mapping[str, str], shares: str, cpu_limit: str, memory: str, hugetlb: str,
             pids: str = "", unified: str = "", weight: str = _WEIGHT) -> dict[str, str]:
    """Name the function behind each file, by the resource the file belongs to."""
    origins = {}
    for name in files:
        if name == "cpu.shares":
            origins[name] = shares
        elif name == "cpu.weight":
            origins[name] = f"{shares}; {weight}"
        elif name in ("cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.max"):
            origins[name] = cpu_limit
        elif name.startswith("hugetlb."):
            origins[name] = hugetlb
        elif name == "pids.max":
            origins[name] = pids
        elif name.startswith("memory.") and name not in ("memory.min", "memory.high", "memory.low"):
            origins[name] = memory
        else:
            origins[name] = unified
    return origins


# --8<-- [start:cgroup_tree]
def cgroup_tree(pods: Iterable[V1Pod], node: Optional[V1Node], *, cgroup_version: int = 2,
                cgroup_driver: str = "cgroupfs", system_reserved: Optional[Mapping] = None,
                kube_reserved: Optional[Mapping] = None, pid_max: Optional[int] = None,
                single_process_oom_kill: Optional[bool] = None, swap_behavior: str = "",
                swap_capacity: int = 0) -> list[Cgroup]:
    """Every cgroup for these pods on this node, top down: kubepods, the two QoS tiers, each pod and container.

    pid_max is the host's kernel.pid_max: the kubepods pids.max, left out when unknown. The kubelet config's
    singleProcessOOMKill and memorySwap.swapBehavior, and the node's swap in bytes, shape the container cgroups.
    Upstream: none; it puts together containerManagerImpl.enforceNodeAllocatableCgroups,
    qosContainerManagerImpl.UpdateCgroups, podContainerManagerImpl.EnsureExists and
    kubeGenericRuntimeManager.generateLinuxContainerResources (pkg/kubelet/cm, pkg/kubelet/kuberuntime).
    """
    pods = list(pods)
    capacity = node_capacity(node)
    page_sizes = _host_page_sizes(capacity)
    memory_capacity = api.value(capacity.get("memory", Decimal(0)))
    tiers = qos_tier_configs(pods, page_sizes)
    path = lambda name: cgroup_name_to_path(name, cgroup_driver)  # noqa: E731
    files = lambda config: cgroup_files(config, cgroup_version, page_sizes)  # noqa: E731
    tree = [_kubepods(capacity, system_reserved, kube_reserved, pid_max, tiers["kubepods"], page_sizes,
                      cgroup_version, path, node is None)]
    tier_origin = f"{_CM}/qos_container_manager_linux.go "
    for tier, note in (("burstable", "shares for the sum of the Burstable pods' cpu requests"),
                       ("besteffort", "always the minimum 2 shares")):
        tier_files = files(tiers[tier])
        shares_origin = tier_origin + ("setCPUCgroupConfig; " + f"{_CM}/helpers_linux.go MilliCPUToShares"
                                       if tier == "burstable" else "setCPUCgroupConfig")
        tree.append(Cgroup(path(cgroups.new_cgroup_name(KUBEPODS, tier)), tier_files,
                           _origins(tier_files, shares_origin, "", "", tier_origin + "setHugePagesUnbounded"),
                           note=f"QoS tier: {note}; hugepages unbounded", kind="qos"))
    container_settings = {"cgroup_version": cgroup_version, "single_process_oom_kill": single_process_oom_kill,
                          "swap_behavior": swap_behavior, "swap_capacity": swap_capacity}
    for pod in pods:
        tree += _pod_cgroups(pod, memory_capacity, page_sizes, files, path, container_settings)
    return tree
# --8<-- [end:cgroup_tree]


def _kubepods(capacity, system_reserved, kube_reserved, pid_max, guaranteed_tier: ResourceConfig,
              page_sizes, cgroup_version, path, default_node: bool) -> Cgroup:
    """kubepods: node-allocatable limits, then the hugepage limits UpdateCgroups keeps rewriting to 1<<62."""
    internal = dict(capacity)
    if pid_max is not None:
        internal["pid"] = Decimal(pid_max)
    config = node_allocatable_cgroup_config(internal, system_reserved, kube_reserved)
    config.huge_page_limit = dict(guaranteed_tier.huge_page_limit)
    files = cgroup_files(config, cgroup_version, page_sizes)
    origin = f"{_CM}/node_container_manager_linux.go getCgroupConfig"
    origins = _origins(files, f"{origin}; {_CM}/helpers_linux.go MilliCPUToShares", "", origin,
                       f"{_CM}/qos_container_manager_linux.go setHugePagesUnbounded", pids=origin)
    notes = ["node allocatable (capacity - system-reserved - kube-reserved, not minus eviction thresholds);"
             " also the Guaranteed tier; hugetlb rewritten to 1<<62 by UpdateCgroups every minute"]
    if pid_max is None:
        notes.append("pids.max (the host's kernel.pid_max minus reservations) left out: not in a Node manifest")
    if default_node:
        notes.append(DEFAULT_NODE_NOTE)
    return Cgroup(path(KUBEPODS), files, origins, note="; ".join(notes), kind="node")


def _pod_cgroups(pod: V1Pod, memory_capacity: int, page_sizes, files, path, settings: dict) -> list[Cgroup]:
    qos_class = qos.get_pod_qos(pod)
    pod_name = cgroups.pod_cgroup_name(pod, qos_class)
    config = resource_config_for_pod(pod)
    pod_files = files(config)
    helpers = f"{_CM}/helpers_linux.go "
    origins = _origins(pod_files, helpers + "ResourceConfigForPod; " + helpers + "MilliCPUToShares",
                       helpers + "ResourceConfigForPod; " + helpers + "MilliCPUToQuota",
                       helpers + "ResourceConfigForPod", helpers + "HugePageLimits; " + _FILL_HUGETLB,
                       unified=helpers + "ResourceConfigForPod")
    label = api.pod_label(pod)
    result = [Cgroup(path(pod_name), pod_files, origins, note=f"pod {label}, {qos_class}", kind="pod", pod=label)]
    kinds = [("init container", c) for c in pod.spec.init_containers or []]
    for kind, container in kinds + [("container", c) for c in pod.spec.containers or []]:
        result.append(_container_cgroup(pod, container, kind, label, memory_capacity, page_sizes, files,
                                        path(pod_name), settings))
    return result


def _container_cgroup(pod: V1Pod, container: V1Container, kind: str, label: str, memory_capacity: int,
                      page_sizes, files, pod_path: str, settings: dict) -> Cgroup:
    """A container's cgroup: the runtime writes the CRI values the kubelet computed; plus its oom_score_adj."""
    resources = kuberuntime.generate_linux_container_resources(pod, container, memory_capacity,
                                                               host_page_sizes=page_sizes, **settings)
    config = ResourceConfig(cpu_shares=resources.cpu_shares, cpu_quota=resources.cpu_quota or None,
                            cpu_period=resources.cpu_period or None,
                            memory=resources.memory_limit_in_bytes or None,
                            huge_page_limit={page_size_in_bytes(size): limit
                                             for size, limit in resources.hugepage_limits.items()},
                            unified=dict(resources.unified))
    container_files = files(config)
    calc = f"{_KR}/kuberuntime_container_linux.go calculateLinuxResources"
    origins = _origins(container_files, f"{calc}; {_CM}/helpers_linux.go MilliCPUToShares",
                       f"{calc}; {_KR}/helpers_linux.go milliCPUToQuota", calc,
                       f"{_KR}/kuberuntime_container_linux.go GetHugepageLimitsFromResources", weight=_RUNC_WEIGHT)
    for name in resources.unified:  # cgroup v2 only: cgroup_files leaves unified out on v1
        if name in container_files:
            origins[name] = _UNIFIED_ORIGINS.get(name, calc)
            if name == "memory.swap.max" and container_files[name] not in ("0", "max"):
                origins[name] += f"; {_CALC_SWAP}"
    container_files[OOM_SCORE_ADJ_FILE] = str(resources.oom_score_adj)
    origins[OOM_SCORE_ADJ_FILE] = "pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust"
    note = (f"{kind} {container.name} of {label}: the runtime writes these from the kubelet's CRI values"
            f" and names this last level; {OOM_SCORE_ADJ_FILE} is a process setting, not a cgroup file")
    return Cgroup(f"{pod_path}/<container-id:{container.name}>", container_files, origins, note=note,
                  kind=kind, pod=label, container=container.name)
