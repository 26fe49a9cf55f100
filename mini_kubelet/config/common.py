"""What the kubelet adds to a static pod read from a file: UID, name, namespace, node, hash, toleration, phase.

Upstream: pkg/kubelet/config/common.go (applyDefaults, generatePodName, tryDecodeSinglePod)

The UID differs from upstream's value. Upstream hashes, with MD5, the Go value of the decoded and
scheme-defaulted internal Pod as printed by its deep-hash printer (go-spew, with Go type names and every
defaulted field), then "host:<node>" and "file:<path>". That printout cannot be rebuilt faithfully in
Python, so the mini kubelet hashes the manifest itself instead: MD5 over its JSON with sorted keys and no
spaces, then the same two strings. Kept from upstream: 32 lowercase hex digits, the same UID for the same
manifest on the same node and path, a new UID when any field, the node or the path changes; a UID in the
manifest is kept. Not kept: the value, and (because upstream applies API defaults before hashing) writing
a default value out explicitly changes the mini UID but not upstream's.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kubernetes.client import V1Pod, V1PodStatus, V1Toleration

from .. import api, types

MAX_CONFIG_LENGTH = 10 * 1 << 20  # 10 MB: the most of a manifest the kubelet reads
NAMESPACE_DEFAULT = "default"


# --8<-- [start:generate_pod_name]
def generate_pod_name(name: str, node_name: str) -> str:
    """A static pod's name: the manifest's name, a dash, and the node name in lower case.

    Upstream: pkg/kubelet/config/common.go generatePodName
    """
    return f"{name}-{node_name.lower()}"
# --8<-- [end:generate_pod_name]


def static_pod_uid(doc: dict, source: str, is_file: bool, node_name: str) -> str:
    """The UID of a static pod whose manifest has none (see the module docstring for how it differs).

    Upstream: pkg/kubelet/config/common.go applyDefaults (the MD5 hasher)
    """
    hasher = hashlib.md5(json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str).encode())
    hasher.update((f"host:{node_name}file:{source}" if is_file else f"url:{source}").encode())
    return hasher.hexdigest()


# --8<-- [start:add_or_update_toleration_in_pod]
def add_or_update_toleration_in_pod(pod: V1Pod, toleration: V1Toleration) -> bool:
    """Add the toleration, or replace each one with the same key, effect, operator and value.

    Upstream: pkg/apis/core/helper/helpers.go AddOrUpdateTolerationInPod
    Upstream compares the new toleration (a pointer) with the existing one (a value) for equality, which
    is never true, so a match is always replaced: an existing tolerationSeconds is dropped.
    """
    def matches(t: V1Toleration) -> bool:
        """Upstream: pkg/apis/core/toleration.go Toleration.MatchToleration"""
        return (t.key or "", t.effect or "", t.operator or "", t.value or "") == (
            toleration.key or "", toleration.effect or "", toleration.operator or "", toleration.value or "")
    existing = pod.spec.tolerations or []
    updated = [toleration if matches(t) else t for t in existing]
    pod.spec.tolerations = updated if any(map(matches, existing)) else [*existing, toleration]
    return True
# --8<-- [end:add_or_update_toleration_in_pod]


# --8<-- [start:apply_defaults]
def apply_defaults(pod: V1Pod, doc: dict, source: str, is_file: bool, node_name: str) -> None:
    """Make a manifest a static pod of this node: UID, name suffix, namespace, node, hash, toleration, Pending.

    Upstream: pkg/kubelet/config/common.go applyDefaults
    The config.source and config.seen annotations come later, from PodConfig's merge.
    """
    if not pod.metadata.uid:
        pod.metadata.uid = static_pod_uid(doc, source, is_file, node_name)
    pod.metadata.name = generate_pod_name(pod.metadata.name, node_name)
    if not pod.metadata.namespace:
        pod.metadata.namespace = NAMESPACE_DEFAULT
    pod.spec.node_name = node_name  # the pod is bound to this node
    if pod.metadata.annotations is None:
        pod.metadata.annotations = {}
    pod.metadata.annotations[types.CONFIG_HASH_ANNOTATION_KEY] = pod.metadata.uid
    if is_file:  # so that node problems (NoExecute taints) never evict a static pod
        add_or_update_toleration_in_pod(pod, V1Toleration(operator="Exists", effect="NoExecute"))
    if pod.status is None:
        pod.status = V1PodStatus()
    pod.status.phase = "Pending"
# --8<-- [end:apply_defaults]


def try_decode_single_pod(doc: Any, source: str, node_name: str, is_file: bool = True) -> V1Pod:
    """Turn one manifest into a defaulted static pod; a ManifestError if it is not a valid Pod.

    Upstream: pkg/kubelet/config/common.go tryDecodeSinglePod
    Upstream validates with the API server's ValidatePodCreate; here the checks are mini_kubelet.api's.
    """
    pod = api.pod_from_manifest(doc, source)
    apply_defaults(pod, doc, source, is_file, node_name)
    return pod
