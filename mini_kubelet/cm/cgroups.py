"""Cgroup names for both drivers, and the cgroup files a ResourceConfig becomes on cgroup v1 and v2.

Upstream: pkg/kubelet/cm/cgroup_manager_linux.go (names, toResources, maybeSetHugetlb),
pkg/kubelet/cm/pod_container_manager_linux.go (pod cgroup names), and the runc v1.1 writers
(libcontainer/cgroups/fs and fs2) that turn the values into file writes.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Iterable

from kubernetes.client import V1Pod

if TYPE_CHECKING:  # only for annotations: cm.helpers is the home of ResourceConfig
    from mini_kubelet.cm.helpers import ResourceConfig

# --8<-- [start:names]
CgroupName = tuple[str, ...]  # the components of a cgroup, e.g. ("kubepods", "burstable", "pod<uid>")
ROOT_CGROUP_NAME: CgroupName = ()  # the root of the hierarchy
DEFAULT_NODE_ALLOCATABLE_CGROUP_NAME = "kubepods"  # appended to --cgroup-root when cgroupsPerQOS is on
KUBEPODS: CgroupName = (DEFAULT_NODE_ALLOCATABLE_CGROUP_NAME,)  # the parent of every pod cgroup
POD_CGROUP_NAME_PREFIX = "pod"  # a pod's cgroup is "pod" + its UID
SYSTEMD_SUFFIX = ".slice"
HOST_PAGE_SIZES = ("2MB", "1GB")  # the usual x86-64 hugepage sizes, named the way runc names them
# --8<-- [end:names]


# --8<-- [start:new_cgroup_name]
def new_cgroup_name(base: Iterable[str], *components: str) -> CgroupName:
    """Append components to a cgroup name; "/" and "_" are refused so the systemd escaping can be undone.

    Upstream: pkg/kubelet/cm/cgroup_manager_linux.go NewCgroupName
    """
    for component in components:
        if "/" in component or "_" in component:
            raise ValueError(f"invalid character in component [{component!r}] of CgroupName")
    return tuple(base) + tuple(components)
# --8<-- [end:new_cgroup_name]


# --8<-- [start:to_cgroupfs]
def to_cgroupfs(name: CgroupName) -> str:
    """The cgroupfs path of a cgroup name: "/" and the components joined (empty ones dropped).

    Upstream: pkg/kubelet/cm/cgroup_manager_linux.go CgroupName.ToCgroupfs
    """
    parts = [part for part in name if part]
    return "/" + (posixpath.normpath("/".join(parts)) if parts else "")
# --8<-- [end:to_cgroupfs]


# --8<-- [start:to_systemd]
def to_systemd(name: CgroupName) -> str:
    """The systemd slice path: "-" escaped to "_", components joined by "-", then expanded per level.

    Upstream: pkg/kubelet/cm/cgroup_manager_linux.go CgroupName.ToSystemd
    """
    if len(name) == 0 or tuple(name) == ("",):
        return "/"
    return expand_slice("-".join(part.replace("-", "_") for part in name) + SYSTEMD_SUFFIX)
# --8<-- [end:to_systemd]


# --8<-- [start:expand_slice]
def expand_slice(slice_name: str) -> str:
    """Expand "a-b-c.slice" into "/a.slice/a-b.slice/a-b-c.slice", refusing empty components.

    Upstream: runc libcontainer/cgroups/systemd/common.go ExpandSlice
    """
    if len(slice_name) < len(SYSTEMD_SUFFIX) or not slice_name.endswith(SYSTEMD_SUFFIX) or "/" in slice_name:
        raise ValueError(f"invalid slice name: {slice_name}")
    stem = slice_name[: -len(SYSTEMD_SUFFIX)]
    if stem == "-":
        return "/"
    path, prefix = "", ""
    for component in stem.split("-"):
        if component == "":
            raise ValueError(f"invalid slice name: {slice_name}")
        path += "/" + prefix + component + SYSTEMD_SUFFIX
        prefix += component + "-"
    return path
# --8<-- [end:expand_slice]


# --8<-- [start:parse_cgroupfs_to_cgroup_name]
def parse_cgroupfs_to_cgroup_name(name: str) -> CgroupName:
    """Split a cgroupfs path back into components ("/" and "" are the root; "/a/" gives ("a", "")).

    Upstream: pkg/kubelet/cm/cgroup_manager_linux.go ParseCgroupfsToCgroupName
    """
    components = (name[1:] if name.startswith("/") else name).split("/")
    return () if components == [""] else tuple(components)
# --8<-- [end:parse_cgroupfs_to_cgroup_name]


# --8<-- [start:parse_systemd_to_cgroup_name]
def parse_systemd_to_cgroup_name(name: str) -> CgroupName:
    """Turn a systemd slice path back into components: last element, ".slice" dropped, split on "-", "_" to "-".

    Upstream: pkg/kubelet/cm/cgroup_manager_linux.go ParseSystemdToCgroupName
    """
    base = _go_path_base(name)
    if base.endswith(SYSTEMD_SUFFIX):
        base = base[: -len(SYSTEMD_SUFFIX)]
    return tuple(part.replace("_", "-") for part in base.split("-"))


def _go_path_base(name: str) -> str:
    """Go's path.Base: the last element, trailing slashes ignored; "" gives "." and "/" gives "/"."""
    if name == "":
        return "."
    stripped = name.rstrip("/")
    return "/" if stripped == "" else stripped.rsplit("/", 1)[-1]
# --8<-- [end:parse_systemd_to_cgroup_name]


# --8<-- [start:cgroup_name_to_path]
def cgroup_name_to_path(name: CgroupName, cgroup_driver: str = "cgroupfs") -> str:
    """The literal path of a cgroup for the chosen driver ("cgroupfs" or "systemd").

    Upstream: pkg/kubelet/cm/cgroup_manager_linux.go cgroupManagerImpl.Name
    """
    return to_systemd(name) if cgroup_driver == "systemd" else to_cgroupfs(name)
# --8<-- [end:cgroup_name_to_path]


# --8<-- [start:qos_cgroup_names]
def qos_cgroup_names(root: CgroupName = KUBEPODS) -> dict[str, CgroupName]:
    """The parent cgroup of each QoS class: Guaranteed pods sit directly in the root, the others in a tier.

    Upstream: pkg/kubelet/cm/qos_container_manager_linux.go qosContainerManagerImpl.Start
    """
    return {"Guaranteed": tuple(root), "Burstable": new_cgroup_name(root, "burstable"),
            "BestEffort": new_cgroup_name(root, "besteffort")}
# --8<-- [end:qos_cgroup_names]


# --8<-- [start:pod_cgroup_name]
def pod_cgroup_name(pod: V1Pod, qos_class: str, root: CgroupName = KUBEPODS) -> CgroupName:
    """The pod's cgroup name: its QoS parent plus "pod" + UID, e.g. ("kubepods", "burstable", "pod<uid>").

    Upstream: pkg/kubelet/cm/pod_container_manager_linux.go podContainerManagerImpl.GetPodContainerName
    """
    uid = (pod.metadata.uid if pod.metadata else None) or ""
    return new_cgroup_name(qos_cgroup_names(root)[qos_class], POD_CGROUP_NAME_PREFIX + uid)
# --8<-- [end:pod_cgroup_name]


# --8<-- [start:is_pod_cgroup]
def is_pod_cgroup(cgroupfs: str, qos_containers: dict[str, CgroupName] | None = None,
                  cgroup_driver: str = "cgroupfs") -> tuple[bool, str]:
    """Whether a literal cgroup path is a pod cgroup, and the pod UID if so.

    Only the depth is compared with the QoS cgroups (one level below one of them), then the last
    component must be "pod" + a UID that does not itself contain "pod".
    Upstream: pkg/kubelet/cm/pod_container_manager_linux.go podContainerManagerImpl.IsPodCgroup
    """
    qos = qos_containers if qos_containers is not None else qos_cgroup_names()
    if cgroup_driver == "systemd":
        name = parse_systemd_to_cgroup_name(cgroupfs)
    else:
        name = parse_cgroupfs_to_cgroup_name(cgroupfs)
    base = ""
    for parent in (qos["BestEffort"], qos["Burstable"], qos["Guaranteed"]):
        if len(name) == len(parent) + 1:
            base = name[len(parent)]
    if base == "" or not base.startswith(POD_CGROUP_NAME_PREFIX):
        return False, ""
    parts = base.split(POD_CGROUP_NAME_PREFIX)
    if len(parts) != 2:
        return False, ""
    return True, parts[1]
# --8<-- [end:is_pod_cgroup]


# --8<-- [start:cpu_shares_to_cpu_weight]
def cpu_shares_to_cpu_weight(shares: int) -> int:
    """cgroup v1 cpu.shares [2, 262144] to cgroup v2 cpu.weight [1, 10000], linearly, 262144 and up -> 10000.

    Go computes with uint64, so shares below 2 wrap around (never reached: shares are at least 2).
    Upstream: pkg/kubelet/cm/cgroup_manager_linux.go getCPUWeight
    """
    if shares >= 262144:
        return 10000
    return 1 + ((shares - 2) * 9999 % 2**64) // 262142
# --8<-- [end:cpu_shares_to_cpu_weight]


# --8<-- [start:cpu_weight_to_cpu_shares]
def cpu_weight_to_cpu_shares(weight: int) -> int:
    """cgroup v2 cpu.weight back to cpu.shares (used when reading a cgroup back), uint64 arithmetic.

    Upstream: pkg/kubelet/cm/cgroup_manager_linux.go CpuWeightToCpuShares
    """
    return (((weight - 1) * 262142) % 2**64) // 9999 + 2
# --8<-- [end:cpu_weight_to_cpu_shares]


# --8<-- [start:huge_page_unit_size_from_byte_size]
def huge_page_unit_size_from_byte_size(size: int) -> str:
    """A page size in bytes as runc names it (2097152 -> "2MB", 1073741824 -> "1GB"); ValueError if not expressible.

    Upstream: pkg/apis/core/v1/helper/helpers.go HugePageUnitSizeFromByteSize
    """
    units = ["B", "KB", "MB", "GB", "TB", "PB"]
    index = 0
    while size % 1024 == 0 and index < len(units) - 1:
        size //= 1024
        index += 1
    if size > 1024 and index < len(units) - 1:
        raise ValueError(f"hugepage size {size}{units[index]}: over 1024 units, and not a whole number of the next unit")
    return f"{size}{units[index]}"
# --8<-- [end:huge_page_unit_size_from_byte_size]


# --8<-- [start:page_size_in_bytes]
def page_size_in_bytes(page_size: str) -> int:
    """A runc page-size name in bytes, binary multiples ("2MB" -> 2097152).

    Upstream: github.com/docker/go-units size.go RAMInBytes (as used by setHugePagesUnbounded)
    """
    multipliers = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40, "PB": 1 << 50}
    number, unit = page_size[:-2], page_size[-2:].upper()
    if not number.isdigit() or unit not in multipliers:
        raise ValueError(f"invalid hugepage size {page_size!r}")
    return int(number) * multipliers[unit]
# --8<-- [end:page_size_in_bytes]


# --8<-- [start:cgroup_files]
def cgroup_files(config: ResourceConfig, cgroup_version: int,
                 host_page_sizes: Iterable[str] = HOST_PAGE_SIZES) -> dict[str, str]:
    """The files written for a ResourceConfig, file name -> value, on cgroup v1 or v2.

    A field that is None (or 0, which runc treats as unset) is not written. Every host hugepage
    size missing from the config's map gets limit 0. On v2 cpu.shares becomes cpu.weight,
    quota and period share one file cpu.max, and the unified entries are written as given.
    Upstream: pkg/kubelet/cm/cgroup_manager_linux.go cgroupManagerImpl.toResources, maybeSetHugetlb
    """
    if cgroup_version not in (1, 2):
        raise ValueError(f"cgroup version must be 1 or 2, got {cgroup_version!r}")
    files: dict[str, str] = {}
    shares, quota, period = config.cpu_shares or 0, config.cpu_quota or 0, config.cpu_period or 0
    memory, pids = config.memory or 0, config.pids_limit or 0
    if cgroup_version == 1:  # runc fs: cpu.go, memory.go, pids.go
        if shares:
            files["cpu.shares"] = str(shares)
        if period:
            files["cpu.cfs_period_us"] = str(period)
        if quota:
            files["cpu.cfs_quota_us"] = str(quota)
        if memory:
            files["memory.limit_in_bytes"] = str(memory)
        if pids:
            files["pids.max"] = str(pids) if pids > 0 else "max"
    else:  # runc fs2: cpu.go, memory.go, pids.go
        if config.cpu_shares is not None:
            files["cpu.weight"] = str(cpu_shares_to_cpu_weight(shares))
        if quota or period:
            files["cpu.max"] = f"{quota if quota > 0 else 'max'} {period or 100000}"
        if memory:
            files["memory.max"] = "max" if memory == -1 else str(memory)
        if pids:
            files["pids.max"] = "max" if pids == -1 else str(pids)
    suffix = "limit_in_bytes" if cgroup_version == 1 else "max"
    for size, limit in _hugetlb_limits(config.huge_page_limit or {}, host_page_sizes).items():
        files[f"hugetlb.{size}.{suffix}"] = str(limit)
    if cgroup_version == 2:
        files.update(config.unified or {})
    return files


def _hugetlb_limits(limits: dict[int, int], host_page_sizes: Iterable[str]) -> dict[str, int]:
    """Each limit under its runc page-size name (inexpressible sizes skipped), then 0 for the host's other sizes."""
    named: dict[str, int] = {}
    for size, limit in limits.items():
        try:
            named[huge_page_unit_size_from_byte_size(size)] = limit % 2**64  # written as uint64
        except ValueError:
            continue
    for size_name in host_page_sizes:
        named.setdefault(size_name, 0)
    return named
# --8<-- [end:cgroup_files]
