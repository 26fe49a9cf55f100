"""What this kubelet would do with each Pod bound to a node: admission verdict, QoS class, first pod actions.

Upstream: pkg/kubelet/kubelet.go (HandlePodAdditions → canAdmitPod), pkg/apis/core/v1/helper/qos GetPodQOS,
pkg/kubelet/kuberuntime/kuberuntime_manager.go computePodActions (for a Pod with nothing in the runtime yet),
pkg/kubelet/pod_workers.go calculateEffectiveGracePeriod (for a Pod being deleted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kubernetes.client import V1Node, V1Pod

from mini_kubelet import container, kubelet, qos, types
from mini_kubelet.kuberuntime.kuberuntime_manager import compute_pod_actions
from mini_kubelet.pod_worker_types import PodSyncStatus, calculate_effective_grace_period


@dataclass
class PodView:
    """One pod as this kubelet would see it."""

    key: str  # namespace/name
    version: str  # resourceVersion
    lines: list[str]


def _actions(pod: V1Pod) -> str:
    """computePodActions for a pod the runtime has nothing of: what the first sync would do."""
    changes = compute_pod_actions(pod, container.PodStatus(id=pod.metadata.uid or "", name=pod.metadata.name,
                                                           namespace=pod.metadata.namespace or ""))
    steps = []
    if changes.create_sandbox:
        steps.append(f"create the pod sandbox (attempt {changes.attempt})")
    if changes.next_init_container_to_start is not None:
        steps.append(f"start init container {changes.next_init_container_to_start.name} (the others wait for it)")
    for i in changes.init_containers_to_start:
        steps.append(f"start init container {pod.spec.init_containers[i].name}")
    if changes.containers_to_start:
        steps.append("start " + ", ".join(pod.spec.containers[i].name for i in changes.containers_to_start))
    return "; ".join(steps) or "nothing"


# --8<-- [start:pod_view]
def admit_all(pods: list[V1Pod], node: V1Node) -> dict[str, kubelet.AdmissionOutcome]:
    """Each listed pod's admission as a kubelet starting now would do it, by UID: `admit`'s path (admit_on_node).

    Upstream: pkg/kubelet/kubelet.go Kubelet.HandlePodAdditions (all pods of the first SET, oldest first, each
    against the active pods admitted before it; the eviction manager's handler reads the Node's conditions)
    """
    from mini_kubelet.cmd.admit import admit_on_node

    waiting = [p for p in pods if ((p.status.phase if p.status else None) or "Pending") not in ("Succeeded", "Failed")]
    return {o.pod.metadata.uid: o for o in admit_on_node(waiting, node)[0] if not o.skipped}


def pod_view(pod: V1Pod, outcome: Optional[kubelet.AdmissionOutcome]) -> PodView:
    """Admission (its outcome from admit_all), the QoS class, and what the first sync would do.

    Upstream: pkg/kubelet/kubelet.go Kubelet.HandlePodAdditions (canAdmitPod with filterOutInactivePods)
    """
    meta = pod.metadata
    key, phase = f"{meta.namespace}/{meta.name}", (pod.status.phase if pod.status else None) or "Pending"
    lines = [f"phase {phase}, QoS class {qos.get_pod_qos(pod)}"]
    if types.is_mirror_pod(pod):
        lines.append("a mirror pod: the API copy of a static pod; never admitted or run from the API "
                     "(deleting it only makes the kubelet create it again)")
        return PodView(key, meta.resource_version or "", lines)
    if phase in ("Succeeded", "Failed") or outcome is None:
        lines.append("terminal: the pod worker only finishes it (nothing is started again)")
        return PodView(key, meta.resource_version or "", lines)
    result = outcome.result
    verdict = "admitted" if result.admit else f"rejected: {result.reason}: {result.message}"
    lines.append(f"admission (oldest first, against the {len(outcome.active_pods)} active pods admitted before it): "
                 f"{verdict}")
    if meta.deletion_timestamp is not None:
        grace, _ = calculate_effective_grace_period(PodSyncStatus(), pod, None)
        lines.append(f"being deleted: the pod worker stops it with a grace period of {grace}s")
    elif result.admit:
        lines.append(f"first sync (nothing in the runtime yet): {_actions(pod)}")
    return PodView(key, meta.resource_version or "", lines)
# --8<-- [end:pod_view]


def render(view: PodView, change: str) -> str:
    """A pod's block: `ADDED default/web (resourceVersion 12)` and its indented lines."""
    return "\n".join([f"{change} {view.key} (resourceVersion {view.version or '-'})"] + [f"  {line}" for line in view.lines])
