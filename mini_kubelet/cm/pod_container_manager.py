"""A pod's cgroup as the kubelet writes it and reads it back during an in-place resize, with a log of the writes.

Upstream: pkg/kubelet/cm/pod_container_manager_linux.go (EnsureExists, GetPodCgroupConfig, SetPodCgroupConfig) and
cgroup_v1_manager_linux.go, cgroup_v2_manager_linux.go (getCgroupCPUConfig, getCgroupMemoryConfig: the values read
back). Only the cpu and memory files are kept; the kernel's defaults stand for a file the kubelet never wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from kubernetes.client import V1Pod

from mini_kubelet import features, qos
from mini_kubelet.cm.cgroups import cgroup_files, cgroup_name_to_path, cpu_weight_to_cpu_shares, pod_cgroup_name
from mini_kubelet.cm.helpers import QUOTA_PERIOD, ResourceConfig, resource_config_for_pod

# --8<-- [start:files]
RESIZE_FILES = {1: ("cpu.shares", "cpu.cfs_period_us", "cpu.cfs_quota_us", "memory.limit_in_bytes"),
                2: ("cpu.weight", "cpu.max", "memory.max")}
V1_UNLIMITED_MEMORY = "9223372036854771712"  # memory.limit_in_bytes of an unlimited cgroup v1: the largest page count
KERNEL_DEFAULTS = {1: {"cpu.shares": "1024", "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "-1",
                       "memory.limit_in_bytes": V1_UNLIMITED_MEMORY},
                   2: {"cpu.weight": "100", "cpu.max": "max 100000", "memory.max": "max"}}
# --8<-- [end:files]


# --8<-- [start:CgroupWrite]
@dataclass(frozen=True)
class CgroupWrite:
    """One cgroup file written: whose cgroup (a pod cgroup's path, or a container's name), which file, before and after."""

    cgroup: str
    file: str
    old: str
    new: str
# --8<-- [end:CgroupWrite]


def resize_files(config: ResourceConfig, cgroup_version: int) -> dict[str, str]:
    """The cpu and memory files a ResourceConfig writes (the fields it leaves None are not written)."""
    files = cgroup_files(config, cgroup_version)
    return {name: files[name] for name in RESIZE_FILES[cgroup_version] if name in files}


def writes_between(cgroup: str, before: dict[str, str], config: ResourceConfig, cgroup_version: int) -> list[CgroupWrite]:
    """The writes that apply config to a cgroup whose cpu and memory files hold before."""
    return [CgroupWrite(cgroup, name, before[name], value) for name, value in resize_files(config, cgroup_version).items()]


class CgroupError(Exception):
    """A pod cgroup that cannot be read or written (an injected failure, or a pod with no cgroup)."""


@dataclass
class PodContainerManager:
    """Each pod's cgroup files by pod UID; every write is appended to writes.

    Upstream: pkg/kubelet/cm/pod_container_manager_linux.go podContainerManagerImpl
    """

    cgroup_version: int = 2
    cgroup_driver: str = "cgroupfs"
    writes: list[CgroupWrite] = field(default_factory=list)
    files: dict[str, dict[str, str]] = field(default_factory=dict)
    injected_errors: dict[str, str] = field(default_factory=dict)  # "GetPodCgroupConfig"/"SetPodCgroupConfig" -> message

    def name(self, pod: V1Pod) -> str:
        """The pod cgroup's path for the driver. Upstream: podContainerManagerImpl.GetPodContainerName"""
        return cgroup_name_to_path(pod_cgroup_name(pod, qos.get_pod_qos(pod)), self.cgroup_driver)

    def ensure_exists(self, pod: V1Pod, enforce_cpu_limits: bool = True, cpu_period: int = QUOTA_PERIOD) -> None:
        """Create the pod cgroup with its values from the pod's spec, unless it exists.

        Upstream: pkg/kubelet/cm/pod_container_manager_linux.go podContainerManagerImpl.EnsureExists
        """
        if pod.metadata.uid not in self.files:
            config = resource_config_for_pod(pod, enforce_cpu_limits, cpu_period, cpu_cfs_quota_period_gate=(
                features.DEFAULT_FEATURE_GATE.enabled("CustomCPUCFSQuotaPeriod")))
            self.files[pod.metadata.uid] = {**KERNEL_DEFAULTS[self.cgroup_version], **resize_files(config, self.cgroup_version)}

    def _files(self, pod: V1Pod, call: str) -> dict[str, str]:
        if call in self.injected_errors:
            raise CgroupError(self.injected_errors.pop(call))
        if pod.metadata.uid not in self.files:
            raise CgroupError(f"no cgroup for pod {self.name(pod)}")
        return self.files[pod.metadata.uid]

    def get_pod_cgroup_config(self, pod: V1Pod, resource: str) -> ResourceConfig:
        """The pod cgroup's memory limit, or its cpu shares, quota and period, as read back from the files.

        On cgroup v2 "max" reads as -1 (memory.max through a uint64, quota as such) and the shares come back from
        cpu.weight, rounded: they can differ from the shares written.
        Upstream: pkg/kubelet/cm/pod_container_manager_linux.go podContainerManagerImpl.GetPodCgroupConfig
        (cgroupV1impl/cgroupV2impl getCgroupCPUConfig, getCgroupMemoryConfig)
        """
        files = self._files(pod, "GetPodCgroupConfig")
        if self.cgroup_version == 1:
            if resource == "memory":
                return ResourceConfig(memory=int(files["memory.limit_in_bytes"]))
            return ResourceConfig(cpu_shares=int(files["cpu.shares"]), cpu_quota=int(files["cpu.cfs_quota_us"]),
                                  cpu_period=int(files["cpu.cfs_period_us"]))
        if resource == "memory":
            return ResourceConfig(memory=-1 if files["memory.max"] == "max" else int(files["memory.max"]))
        quota, period = files["cpu.max"].split()
        return ResourceConfig(cpu_shares=cpu_weight_to_cpu_shares(int(files["cpu.weight"])),
                              cpu_quota=-1 if quota == "max" else int(quota), cpu_period=int(period))

    def set_pod_cgroup_config(self, pod: V1Pod, config: ResourceConfig) -> None:
        """Write the fields config sets to the pod cgroup, each write logged.

        Upstream: pkg/kubelet/cm/pod_container_manager_linux.go podContainerManagerImpl.SetPodCgroupConfig
        """
        files = self._files(pod, "SetPodCgroupConfig")
        for write in writes_between(self.name(pod), files, config, self.cgroup_version):
            unlimited_v1 = write.file == "memory.limit_in_bytes" and write.new == "-1"
            files[write.file] = V1_UNLIMITED_MEMORY if unlimited_v1 else write.new
            self.writes.append(write)

    def inject_error(self, call: str, message: str) -> None:
        """Make the next call of this name fail with the message."""
        self.injected_errors[call] = message

