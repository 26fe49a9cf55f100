"""Whether a Pod needs a new sandbox, and the network namespace it asks for.

Upstream: pkg/kubelet/kuberuntime/util/util.go (PodSandboxChanged, NetworkNamespaceForPod). In
v1.27 these live in the util sub-package; kuberuntime_manager.go calls them from computePodActions.
"""

from __future__ import annotations

from kubernetes.client import V1Pod

from mini_kubelet.container import SANDBOX_READY, PodStatus

NAMESPACE_MODE_POD = "POD"  # k8s.io/cri-api NamespaceMode
NAMESPACE_MODE_NODE = "NODE"


def network_namespace_for_pod(pod: V1Pod) -> str:
    """NODE for a hostNetwork pod, else POD.

    Upstream: pkg/kubelet/kuberuntime/util/util.go NetworkNamespaceForPod
    """
    return NAMESPACE_MODE_NODE if pod.spec.host_network else NAMESPACE_MODE_POD


# --8<-- [start:pod_sandbox_changed]
def pod_sandbox_changed(pod: V1Pod, pod_status: PodStatus) -> tuple[bool, int, str]:
    """(changed, attempt, sandbox ID): whether the pod needs a new sandbox, its attempt number, the old sandbox.

    Sandbox statuses are newest first. A new sandbox is needed when there is none (attempt 0), when
    more than one is ready, when the newest is not ready, when its network namespace mode no longer
    matches hostNetwork (the old ID is then not returned), or when a pod-network sandbox has no IP.
    Upstream: pkg/kubelet/kuberuntime/util/util.go PodSandboxChanged
    """
    if not pod_status.sandbox_statuses:
        return True, 0, ""
    ready = sum(1 for s in pod_status.sandbox_statuses if s.state == SANDBOX_READY)
    latest = pod_status.sandbox_statuses[0]
    if ready > 1:
        return True, latest.attempt + 1, latest.id
    if latest.state != SANDBOX_READY:
        return True, latest.attempt + 1, latest.id
    mode = NAMESPACE_MODE_NODE if latest.host_network else NAMESPACE_MODE_POD
    if mode != network_namespace_for_pod(pod):
        return True, latest.attempt + 1, ""
    if not pod.spec.host_network and latest.ip == "":
        return True, latest.attempt + 1, latest.id
    return False, latest.attempt, latest.id
# --8<-- [end:pod_sandbox_changed]
