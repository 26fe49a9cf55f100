"""Which Pods the kubelet treats as static, mirror, critical or node-critical.

Upstream: pkg/kubelet/types/pod_update.go (the predicates) and pkg/apis/scheduling/types.go
(the priority constants).
"""

from __future__ import annotations

from kubernetes.client import V1Pod

# --8<-- [start:constants]
CONFIG_SOURCE_ANNOTATION_KEY = "kubernetes.io/config.source"  # set by the kubelet's pod sources
CONFIG_MIRROR_ANNOTATION_KEY = "kubernetes.io/config.mirror"  # set on the API copy of a static pod
API_SERVER_SOURCE = "api"  # the source name of pods that came from the API server

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY  # 2_000_000_000
SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"
# --8<-- [end:constants]


def _annotations(pod: V1Pod) -> dict[str, str]:
    return (pod.metadata.annotations if pod.metadata else None) or {}


# --8<-- [start:is_static_pod]
def is_static_pod(pod: V1Pod) -> bool:
    """A static pod: its config-source annotation is present and names a source other than the API server.

    Upstream: pkg/kubelet/types/pod_update.go IsStaticPod
    """
    annotations = _annotations(pod)
    return CONFIG_SOURCE_ANNOTATION_KEY in annotations and annotations[CONFIG_SOURCE_ANNOTATION_KEY] != API_SERVER_SOURCE
# --8<-- [end:is_static_pod]


# --8<-- [start:is_mirror_pod]
def is_mirror_pod(pod: V1Pod) -> bool:
    """A mirror pod: it carries the config-mirror annotation (whatever its value).

    Upstream: pkg/kubelet/types/pod_update.go IsMirrorPod
    """
    return CONFIG_MIRROR_ANNOTATION_KEY in _annotations(pod)
# --8<-- [end:is_mirror_pod]


# --8<-- [start:is_critical_pod]
def is_critical_pod(pod: V1Pod) -> bool:
    """A critical pod: static, mirror, or with a resolved priority of at least SYSTEM_CRITICAL_PRIORITY.

    Upstream: pkg/kubelet/types/pod_update.go IsCriticalPod
    """
    if is_static_pod(pod) or is_mirror_pod(pod):
        return True
    priority = pod.spec.priority if pod.spec else None
    return priority is not None and priority >= SYSTEM_CRITICAL_PRIORITY
# --8<-- [end:is_critical_pod]


# --8<-- [start:is_node_critical_pod]
def is_node_critical_pod(pod: V1Pod) -> bool:
    """A node-critical pod: critical, and its priorityClassName is system-node-critical.

    Upstream: pkg/kubelet/types/pod_update.go IsNodeCriticalPod
    """
    class_name = pod.spec.priority_class_name if pod.spec else None
    return is_critical_pod(pod) and class_name == SYSTEM_NODE_CRITICAL
# --8<-- [end:is_node_critical_pod]
