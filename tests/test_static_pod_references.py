"""Chapter 1, since 1.27: a static Pod that names an API object is refused (PreventStaticPodAPIReferences, 1.34).

Upstream: pkg/kubelet/config/common.go tryDecodeSinglePod, which from 1.34 (gate beta, on) calls
pkg/api/pod/util.go HasAPIObjectReference and refuses the manifest with "static pods may not reference X".
Read in copies of both files from 1.35 or later (they know the RestartAllContainersOnContainerExits and
GenericWorkload gates). The two upstream tests on the decode path are ported
(pkg/kubelet/config/common_test.go#TestDecodeSinglePodRejectsClusterTrustBundleVolumes and
#TestDecodeSinglePodRejectsResourceClaims); the stored util_test.go has no table for HasAPIObjectReference,
so the other cases follow its branches in order, one case a branch.
"""

from __future__ import annotations

import pytest

from mini_kubelet import api, features
from mini_kubelet.config.common import has_api_object_reference, try_decode_single_pod
from mini_kubelet.config.file import SourceFile

pytestmark = pytest.mark.ch1

CONTAINER = {"name": "image", "image": "test/image"}


def pod(**spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "test", "uid": "12345", "namespace": "mynamespace"},
            "spec": {"containers": [dict(CONTAINER)], **spec}}


def volume(**source) -> dict:
    return {"volumes": [{"name": "v", **source}]}


@pytest.mark.parametrize("spec, field, resource", [
    ({}, "", ""),
    (volume(hostPath={"path": "/etc/kubernetes"}), "", ""),  # local volumes need no API object
    (volume(emptyDir={}), "", ""),
    (volume(projected={"sources": [{"downwardAPI": {"items": []}}]}), "", ""),
    ({"serviceAccountName": "default"}, "spec.serviceAccountName", "serviceaccounts"),
    ({"imagePullSecrets": [{"name": "registry"}]}, "spec.imagePullSecrets[0]", "secrets"),
    ({"containers": [{**CONTAINER, "envFrom": [{"secretRef": {"name": "s"}}]}]}, "spec.containers[0].envFrom[0]", "secrets"),
    ({"initContainers": [{**CONTAINER, "name": "init", "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]},
     "spec.initContainers[0].env[0]", "secrets"),
    (volume(secret={"secretName": "tls"}), "spec.volumes[0]", "secrets"),
    (volume(projected={"sources": [{"secret": {"name": "s"}}]}), "spec.volumes[0].projected.sources[0]", "secrets"),
    (volume(cephfs={"monitors": ["m"], "secretRef": {"name": "ceph"}}), "spec.volumes[0]", "secrets"),
    (volume(csi={"driver": "d", "nodePublishSecretRef": {"name": "s"}}), "spec.volumes[0]", "secrets"),
    ({"containers": [{**CONTAINER, "envFrom": [{"configMapRef": {"name": "c"}}]}]}, "spec.containers[0].envFrom[0]",
     "configmaps"),
    (volume(configMap={"name": "c"}), "spec.volumes[0]", "configmaps"),
    ({"resourceClaims": [{"name": "my-claim", "resourceClaimName": "some-external-claim"}]}, "spec.resourceClaims",
     "resourceclaims"),  # TestDecodeSinglePodRejectsResourceClaims
    (volume(csi={"driver": "d"}), "spec.volumes[0].csi", "csidrivers (via CSI volumes)"),
    (volume(persistentVolumeClaim={"claimName": "data"}), "spec.volumes[0].persistentVolumeClaim", "persistentvolumeclaims"),
    (volume(ephemeral={"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}),
     "spec.volumes[0].ephemeral", "persistentvolumeclaims (via ephemeral volumes)"),
    (volume(projected={"sources": [{"serviceAccountToken": {"path": "token"}}]}), "spec.volumes[0].projected.sources[0]",
     "serviceaccounts (via projected volumes)"),
    (volume(projected={"sources": [{"clusterTrustBundle": {"name": "my-ctb", "path": "ctb-file"}}]}),
     "spec.volumes[0].projected.sources[0]", "clustertrustbundles"),  # TestDecodeSinglePodRejectsClusterTrustBundleVolumes
])
def test_has_api_object_reference(spec, field, resource):
    assert has_api_object_reference(api.pod_from_manifest(pod(**spec))) == (field, resource)


def test_the_service_account_is_found_before_anything_else():
    both = pod(serviceAccountName="default", imagePullSecrets=[{"name": "registry"}])
    assert has_api_object_reference(api.pod_from_manifest(both))[1] == "serviceaccounts"


def test_refused_from_1_34_read_before():
    manifest = pod(**volume(secret={"secretName": "tls"}))
    assert try_decode_single_pod(manifest, "/etc/kubernetes/manifests/p.yaml", "node-1").metadata.name == "test-node-1"
    for release in ("1.33", "1.34", "1.36"):
        with features.release_profile(release):
            if release == "1.33":
                try_decode_single_pod(manifest, "p.yaml", "node-1")
                continue
            with pytest.raises(api.ManifestError) as err:
                try_decode_single_pod(manifest, "p.yaml", "node-1")
            assert str(err.value) == "p.yaml: spec.volumes[0]: static pods may not reference secrets"
    with features.release_profile("1.36", {"PreventStaticPodAPIReferences": False}):
        try_decode_single_pod(manifest, "p.yaml", "node-1")


def test_the_file_source_logs_the_refused_manifest_and_keeps_the_others(tmp_path):
    import yaml
    (tmp_path / "a-ok.yaml").write_text(yaml.safe_dump(pod()))
    (tmp_path / "b-secret.yaml").write_text(yaml.safe_dump({**pod(**volume(secret={"secretName": "tls"})),
                                                             "metadata": {"name": "other"}}))
    sent = []
    with features.release_profile("1.36"):
        source = SourceFile(str(tmp_path), "node-1", sent.append)
        source.list_config()
    assert [p.metadata.name for p in sent[-1].pods] == ["test-node-1"]
    assert source.log == [f"Could not process manifest file: {tmp_path / 'b-secret.yaml'}: spec.volumes[0]: "
                          "static pods may not reference secrets"]
