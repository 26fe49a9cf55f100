"""The runtime manager: what the kubelet asks the container runtime (CRI) to do for each Pod.

Upstream: pkg/kubelet/kuberuntime/
- kuberuntime_container_linux: one container's Linux resources (chapter 3);
- util, helpers, kuberuntime_container, kuberuntime_manager: sandbox changes, the pod actions, the
  crash-loop back-off and SyncPod's steps (chapter 1), imported by name from their modules;
- kuberuntime_resize, kuberuntime_resize_actuate: in-place resize, which containers get new resources, and
  the cgroup writes that apply them, in order (chapter 3, from 1.33).
"""

from .kuberuntime_container_linux import (
    HUGEPAGES_PREFIX,
    MILLI_CPU_TO_CPU,
    MIN_QUOTA_PERIOD,
    QUOTA_PERIOD,
    LinuxContainerResources,
    calculate_linux_resources,
    generate_linux_container_resources,
    get_hugepage_limits_from_resources,
    milli_cpu_to_quota,
)

__all__ = [
    "HUGEPAGES_PREFIX", "MILLI_CPU_TO_CPU", "MIN_QUOTA_PERIOD", "QUOTA_PERIOD", "LinuxContainerResources",
    "calculate_linux_resources", "generate_linux_container_resources", "get_hugepage_limits_from_resources",
    "milli_cpu_to_quota",
]
