"""Chapter 1: the static pod file source and the defaults a static pod gets.

Ported from pkg/kubelet/config/common_test.go#TestStaticPodNameGenerate (the name table; the validation
half needs the API server's validation), file_test.go#TestExtractFromBadDataFile and #TestExtractFromEmptyDir,
and file_linux_test.go#TestUpdateOnNonExistentFile and #TestReadPodsFromFileExistAlready, read at upstream
revisions whose file.go and common.go behave as v1.27's here. Two differences are v1.27's code, not the old
test's: v1.27 adds the NoExecute toleration to file pods, and the API defaults the old test expects
(restartPolicy, dnsPolicy, imagePullPolicy, ...) come from decoding with the API scheme, which the mini
kubelet's reader does not apply. Not ported: the inotify tests (TestReadPodsFromFileChanged and the like).
Two manifests with one Pod name have no upstream test (none in file_test.go or file_linux_test.go as read;
config_test.go#TestInvalidPodFiltered covers a duplicate within one update); they are checked against v1.27.7's
own config.NewSourceFile through the differential harness.
"""

from __future__ import annotations

import re

import pytest
import yaml
from kubernetes.client import V1Toleration

from mini_kubelet import api, types
from mini_kubelet.config.common import add_or_update_toleration_in_pod, generate_pod_name, static_pod_uid
from mini_kubelet.config.config import PodConfig
from mini_kubelet.config.file import SourceFile
from mini_kubelet.types import ADD, SET

pytestmark = pytest.mark.ch1

MANIFEST = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "test"},
            "spec": {"containers": [{"name": "image", "image": "test/image"}]}}


@pytest.mark.parametrize("node_name, pod_name, expected", [
    ("node1", "static-pod1", "static-pod1-node1"),
    ("Node1", "static-pod1", "static-pod1-node1"),
    ("NODE1", "static-pod1", "static-pod1-node1"),
])
def test_static_pod_name_generate(node_name, pod_name, expected):
    """common_test.go#TestStaticPodNameGenerate: the node name is lower-cased after a dash."""
    assert generate_pod_name(pod_name, node_name) == expected


def source(path, node="localhost"):
    sent = []
    return SourceFile(str(path), node, sent.append), sent


def test_extract_from_bad_data_file(tmp_path):
    """file_test.go#TestExtractFromBadDataFile: a path that is one unreadable file is an error and sends nothing."""
    (tmp_path / "test_pod_config").write_bytes(bytes([1, 2, 3]))
    files, sent = source(tmp_path / "test_pod_config")
    assert files.list_config() is not None and sent == []


def test_extract_from_empty_dir(tmp_path):
    """file_test.go#TestExtractFromEmptyDir: an empty directory sends an empty SET from "file"."""
    files, sent = source(tmp_path)
    assert files.list_config() is None
    assert [(u.op, u.source, u.pods) for u in sent] == [(SET, "file", [])]


def test_update_on_non_existent_file(tmp_path):
    """file_linux_test.go#TestUpdateOnNonExistentFile: a missing path sends an empty SET and logs why."""
    files, sent = source(tmp_path / "missing")
    assert files.list_config() == "path does not exist, ignoring"
    assert [(u.op, u.source, u.pods) for u in sent] == [(SET, "file", [])]


def test_read_pods_from_file_exist_already(tmp_path):
    """file_linux_test.go#TestReadPodsFromFileExistAlready: one file, one defaulted static pod in a SET."""
    path = tmp_path / "test_pod_manifest"
    path.write_text(yaml.safe_dump({**MANIFEST, "metadata": {"name": "test", "uid": "12345", "namespace": "mynamespace"}}))
    files, sent = source(path, node="random-test-hostname")
    assert files.list_config() is None
    (update,) = sent
    (pod,) = update.pods
    assert (update.op, update.source) == (SET, "file")
    assert (pod.metadata.name, pod.metadata.uid, pod.metadata.namespace) == (
        "test-random-test-hostname", "12345", "mynamespace")
    assert pod.metadata.annotations == {types.CONFIG_HASH_ANNOTATION_KEY: "12345"}
    assert pod.spec.node_name == "random-test-hostname" and pod.status.phase == "Pending"
    assert [(t.operator, t.effect, t.key) for t in pod.spec.tolerations] == [("Exists", "NoExecute", None)]


def test_directory_rules(tmp_path):
    """extractFromDir: sorted by name, dot files and sub-directories skipped, a bad file skipped and logged."""
    for name in ("b.yaml", "a.yaml", ".hidden.yaml"):
        (tmp_path / name).write_text(yaml.safe_dump({**MANIFEST, "metadata": {"name": name.strip(".")[0]}}))
    (tmp_path / "c.yaml").write_text("kind: Service\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.yaml").write_text(yaml.safe_dump(MANIFEST))
    files, sent = source(tmp_path, node="Node-1")
    assert files.list_config() is None
    assert [p.metadata.name for p in sent[0].pods] == ["a-node-1", "b-node-1"]
    assert files.log == [f"Could not process manifest file: {tmp_path}/c.yaml: kind: expected Pod, got \"Service\"",
                         f"Provided manifest path is a directory, not recursing into manifest path: {tmp_path}/sub"]


def test_static_pod_uid(tmp_path):
    """applyDefaults: without a UID, an MD5 of the manifest, the host and the path (32 hex digits)."""
    uid = static_pod_uid(MANIFEST, "/etc/kubernetes/manifests/a.yaml", True, "node1")
    assert re.fullmatch(r"[0-9a-f]{32}", uid)
    assert uid == static_pod_uid(dict(reversed(MANIFEST.items())), "/etc/kubernetes/manifests/a.yaml", True, "node1")
    assert uid != static_pod_uid(MANIFEST, "/etc/kubernetes/manifests/a.yaml", True, "node2")
    assert uid != static_pod_uid(MANIFEST, "/etc/kubernetes/manifests/b.yaml", True, "node1")
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(MANIFEST))
    files, sent = source(tmp_path, node="node1")
    files.list_config()
    pod = sent[0].pods[0]
    assert pod.metadata.uid == pod.metadata.annotations[types.CONFIG_HASH_ANNOTATION_KEY] == static_pod_uid(
        MANIFEST, str(tmp_path / "a.yaml"), True, "node1")
    assert pod.metadata.namespace == "default"


def test_toleration_replaced_not_duplicated():
    """AddOrUpdateTolerationInPod: a matching toleration is replaced (its tolerationSeconds dropped)."""
    p = api.pod_from_manifest({**MANIFEST, "spec": {**MANIFEST["spec"], "tolerations": [
        {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}, {"key": "k", "operator": "Exists"}]}})
    add_or_update_toleration_in_pod(p, V1Toleration(operator="Exists", effect="NoExecute"))
    assert [(t.key, t.effect, t.toleration_seconds) for t in p.spec.tolerations] == [
        (None, "NoExecute", None), ("k", None, None)]


def test_file_source_through_pod_config(tmp_path):
    """The file source feeds PodConfig: ADD with the source and first-seen annotations, then REMOVE."""
    config = PodConfig()
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(MANIFEST))
    files = SourceFile(str(tmp_path), "node1", config.channel(types.FILE_SOURCE))
    files.list_config()
    files.list_config()  # the same content again: nothing new
    (update,) = config.updates
    assert update.op == ADD and update.pods[0].metadata.annotations[types.CONFIG_SOURCE_ANNOTATION_KEY] == "file"
    assert types.CONFIG_FIRST_SEEN_ANNOTATION_KEY in update.pods[0].metadata.annotations
    (tmp_path / "a.yaml").unlink()
    config.updates.clear()
    files.list_config()
    assert [(u.op, len(u.pods)) for u in config.updates] == [(types.REMOVE, 1)]


def test_two_manifests_with_one_name(tmp_path):
    """Two files naming one Pod make one Pod: the file source's store keeps one per namespace/name, the later file.

    sourceFile.extractFromDir reads the files in name order and replaceStore hands them to client-go's
    UndeltaStore (MetaNamespaceKeyFunc), whose Replace keeps the last item of each key: the duplicate never
    reaches filterInvalidPods, so there is no FailedValidation event. No upstream test covers this; the
    differential test below checks it against v1.27.7's own file source.
    """
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(yaml.safe_dump(MANIFEST))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({**MANIFEST, "metadata": {"name": "other"}}))
    config = PodConfig()
    files = SourceFile(str(tmp_path), "node1", config.channel(types.FILE_SOURCE))
    assert files.list_config() is None
    (update,) = config.updates
    assert sorted((p.metadata.name, p.metadata.uid) for p in update.pods) == [
        ("other-node1", static_pod_uid({**MANIFEST, "metadata": {"name": "other"}}, str(tmp_path / "c.yaml"), True, "node1")),
        ("test-node1", static_pod_uid(MANIFEST, str(tmp_path / "b.yaml"), True, "node1"))]
    assert config.events == [], "no FailedValidation: the duplicate is gone before the merge"


@pytest.mark.upstream
def test_two_manifests_with_one_name_against_v1_27_7(tmp_path):
    """v1.27.7's config.NewSourceFile: the later file of two with one Pod name wins, and the other file alone wins too."""
    from . import upstream_harness
    upstream_harness.go()

    def first_set():
        return [(p["name"], p["uid"]) for p in upstream_harness.call("1.27", "SourceFileFirstSet", path=str(tmp_path),
                                                                     node="node1")["pods"]]

    (tmp_path / "b.yaml").write_text(yaml.safe_dump(MANIFEST))
    (later,) = first_set()
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(MANIFEST))
    assert first_set() == [later], "a.yaml sorts first: b.yaml's Pod is the one kept"
    (tmp_path / "b.yaml").unlink()
    (earlier,) = first_set()
    assert earlier[0] == later[0] == "test-node1" and earlier[1] != later[1], "the path is part of the UID's hash"
