"""Which Pods the kubelet treats as static, mirror, critical or node-critical.

Upstream: pkg/kubelet/types/pod_update.go (the predicates) and pkg/apis/scheduling/types.go
(the priority constants); the built-in priority classes come from pkg/apis/scheduling/helpers.go, and are
resolved here as the API server's Priority admission resolves them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Optional

from kubernetes.client import V1Pod

# --8<-- [start:constants]
CONFIG_SOURCE_ANNOTATION_KEY = "kubernetes.io/config.source"  # set by the kubelet's pod sources
CONFIG_MIRROR_ANNOTATION_KEY = "kubernetes.io/config.mirror"  # set on the API copy of a static pod
API_SERVER_SOURCE = "api"  # the source name of pods that came from the API server

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY  # 2_000_000_000
SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"
SYSTEM_PRIORITY_CLASSES = {  # the classes the API server creates at start-up, and their values
    SYSTEM_NODE_CRITICAL: SYSTEM_CRITICAL_PRIORITY + 1000,  # 2_000_001_000
    SYSTEM_CLUSTER_CRITICAL: SYSTEM_CRITICAL_PRIORITY,  # 2_000_000_000
}
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


# --8<-- [start:resolve_system_priority]
def resolve_system_priority(pod: V1Pod) -> Optional[str]:
    """Set spec.priority from a built-in priorityClassName when it is unset, as the API server does; a note, or None.

    Upstream: plugin/pkg/admission/priority/admission.go Plugin.admitPod (on create, spec.priority becomes the
    class's value), with pkg/apis/scheduling/helpers.go SystemPriorityClasses (the classes created at start-up)
    A Pod read from the API already has its priority; a workload's template or a hand-written Pod has not.
    A static pod never goes through the API server, so the kubelet's copy keeps what its file says.
    """
    spec = pod.spec
    if spec is None or spec.priority is not None or spec.priority_class_name not in SYSTEM_PRIORITY_CLASSES:
        return None
    if is_static_pod(pod):
        return None
    spec.priority = SYSTEM_PRIORITY_CLASSES[spec.priority_class_name]
    return (f"priority {spec.priority} from priorityClassName {spec.priority_class_name} (the API server's Priority "
            "admission sets spec.priority when the Pod is created)")
# --8<-- [end:resolve_system_priority]


# --8<-- [start:pod_update]
CONFIG_FIRST_SEEN_ANNOTATION_KEY = "kubernetes.io/config.seen"  # when a source first delivered the pod
CONFIG_HASH_ANNOTATION_KEY = "kubernetes.io/config.hash"  # a static pod's UID, the hash of its manifest
FILE_SOURCE, HTTP_SOURCE, ALL_SOURCE = "file", "http", "*"  # with API_SERVER_SOURCE above


class PodOperation(IntEnum):
    """What a PodUpdate does to a source's pods: the whole set, or one kind of change.

    Upstream: pkg/kubelet/types/pod_update.go PodOperation
    """

    SET = 0  # the current pods of a source (the sources send this; PodConfig turns it into the others)
    ADD = 1  # pods new to the source
    DELETE = 2  # pods gracefully deleted (a deletionTimestamp appeared)
    REMOVE = 3  # pods gone from the source
    UPDATE = 4  # pods whose spec, labels, annotations or deletion fields changed
    RECONCILE = 5  # pods whose status alone changed


SET, ADD, DELETE, REMOVE, UPDATE, RECONCILE = PodOperation


@dataclass
class PodUpdate:
    """One message on a config channel: an operation on some pods of one source.

    Upstream: pkg/kubelet/types/pod_update.go PodUpdate
    """

    pods: list[V1Pod]
    op: PodOperation
    source: str


class SyncPodType(IntEnum):
    """Why a pod worker is asked to sync a pod.

    Upstream: pkg/kubelet/types/pod_update.go SyncPodType
    """

    SYNC = 0  # SyncPodSync: make sure the pod is in its desired state
    UPDATE = 1  # SyncPodUpdate: the pod changed in its source
    CREATE = 2  # SyncPodCreate: the pod is new
    KILL = 3  # SyncPodKill: the pod must have no running containers

    def __str__(self) -> str:
        """Upstream: pkg/kubelet/types/pod_update.go SyncPodType.String"""
        return self.name.lower()
# --8<-- [end:pod_update]
