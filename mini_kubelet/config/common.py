"""What the kubelet adds to a static pod read from a file: UID, name, namespace, node, hash, toleration, phase.

Upstream: pkg/kubelet/config/common.go (applyDefaults, generatePodName, tryDecodeSinglePod) and, from 1.34,
pkg/api/pod/util.go HasAPIObjectReference (static pods may not reference API objects)

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

from .. import api, features, types

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
    With PreventStaticPodAPIReferences (beta, on from 1.34) a Pod that names an API object is refused.
    """
    pod = api.pod_from_manifest(doc, source)
    apply_defaults(pod, doc, source, is_file, node_name)
    if features.DEFAULT_FEATURE_GATE.enabled("PreventStaticPodAPIReferences"):
        field, resource = has_api_object_reference(pod)
        if resource:
            raise api.ManifestError(source, field, f"static pods may not reference {resource}")
    return pod


_LOCAL_VOLUMES = ("aws_elastic_block_store", "azure_disk", "cephfs", "cinder", "downward_api", "empty_dir", "fc",
                  "flex_volume", "flocker", "gce_persistent_disk", "git_repo", "host_path", "image", "iscsi", "nfs",
                  "photon_persistent_disk", "portworx_volume", "quobyte", "rbd", "scale_io", "storageos",
                  "vsphere_volume")  # volume kinds that need no API object (their secretRefs count as secrets)
_API_VOLUMES = {"config_map": "configmaps (via configmap volumes)", "secret": "secrets (via secret volumes)",
                "csi": "csidrivers (via CSI volumes)", "glusterfs": "endpoints (via glusterFS volumes)",
                "persistent_volume_claim": "persistentvolumeclaims",
                "ephemeral": "persistentvolumeclaims (via ephemeral volumes)",
                "azure_file": "secrets (via azureFile volumes)"}
_API_PROJECTIONS = {"config_map": "configmaps (via projected volumes)", "secret": "secrets (via projected volumes)",
                    "service_account_token": "serviceaccounts (via projected volumes)",
                    "cluster_trust_bundle": "clustertrustbundles", "pod_certificate": "podcertificates"}
_SECRET_REFS = ("cephfs", "cinder", "flex_volume", "rbd", "scale_io", "iscsi", "storageos")  # volume.secretRef


def has_api_object_reference(pod: V1Pod) -> tuple[str, str]:
    """The first field of the Pod that names an API object, and what the kubelet calls it; ("", "") if none.

    Upstream: pkg/api/pod/util.go HasAPIObjectReference, in its order: the service account, then every
    secret (VisitPodSecretNames), every config map (VisitPodConfigmapNames), resource claims, and volumes.
    """
    spec = pod.spec
    if spec.service_account_name:
        return "spec.serviceAccountName", "serviceaccounts"
    containers = [(f"spec.{kind}[{i}]", c) for kind, attr in (("initContainers", "init_containers"),
                  ("containers", "containers"), ("ephemeralContainers", "ephemeral_containers"))
                  for i, c in enumerate(getattr(spec, attr, None) or [])]
    volumes = [(f"spec.volumes[{i}]", v) for i, v in enumerate(spec.volumes or [])]
    for i, ref in enumerate(spec.image_pull_secrets or []):
        if ref.name:
            return f"spec.imagePullSecrets[{i}]", "secrets"
    for kind, key_ref, from_ref in (("secrets", "secret_key_ref", "secret_ref"),
                                    ("configmaps", "config_map_key_ref", "config_map_ref")):
        for path, c in containers:
            for j, env in enumerate(c.env_from or []):
                if getattr(env, from_ref, None) is not None and getattr(env, from_ref).name:
                    return f"{path}.envFrom[{j}]", kind
            for j, env in enumerate(c.env or []):
                ref = getattr(env.value_from, key_ref, None) if env.value_from else None
                if ref is not None and ref.name:
                    return f"{path}.env[{j}]", kind
        for path, v in volumes:
            for j, projection in enumerate((v.projected.sources or []) if v.projected else []):
                named = getattr(projection, "secret" if kind == "secrets" else "config_map", None)
                if named is not None and named.name:
                    return f"{path}.projected.sources[{j}]", kind
            if kind == "secrets":
                refs = [v.secret.secret_name if v.secret else None, v.azure_file.secret_name if v.azure_file else None,
                        v.csi.node_publish_secret_ref.name if v.csi and v.csi.node_publish_secret_ref else None,
                        *[getattr(v, k).secret_ref.name for k in _SECRET_REFS if getattr(v, k, None) is not None
                          and getattr(v, k).secret_ref is not None]]
            else:
                refs = [v.config_map.name if v.config_map else None]
            if any(refs):
                return path, kind
    if spec.resource_claims:
        return "spec.resourceClaims", "resourceclaims"
    for path, v in volumes:
        if any(getattr(v, k, None) is not None for k in _LOCAL_VOLUMES):
            continue
        kind = next((k for k in _API_VOLUMES if getattr(v, k, None) is not None), None)
        if kind:
            return f"{path}.{type(v).attribute_map[kind]}", _API_VOLUMES[kind]
        for j, projection in enumerate((v.projected.sources or []) if v.projected else []):
            found = next((k for k in _API_PROJECTIONS if getattr(projection, k, None) is not None), None)
            if found:
                return f"{path}.projected.sources[{j}]", _API_PROJECTIONS[found]
    return "", ""
