"""Chapter 0: reading manifests and quantities the way the Kubernetes API does."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.client import V1Node, V1Pod

from mini_kubelet import api
from mini_kubelet.cmd.main import main

from .conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.ch0

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: app
    resources:
      requests: {cpu: 250m, memory: 64Mi}
      limits: {cpu: "1", memory: 128Mi}
"""


# Quantity.MilliValue and Quantity.Value round up to the next integer
# (k8s.io/apimachinery/pkg/api/resource/quantity.go; quantity_test.go TestQuantityParse and
# TestScaledValue exercise the same rounding).
@pytest.mark.parametrize("text, millis, whole", [
    ("250m", 250, 1),
    ("1", 1000, 1),
    ("0.5", 500, 1),
    ("0.1m", 1, 1),
    ("100u", 1, 1),
    ("1n", 1, 1),
    ("2k", 2_000_000, 2000),
    ("64Mi", 67_108_864_000, 67_108_864),
    ("1.5Gi", 1_610_612_736_000, 1_610_612_736),
    ("32M", 32_000_000_000, 32_000_000),
    ("1e3", 1_000_000, 1000),
    ("1E-3", 1, 1),
    ("0", 0, 0),
    ("100m", 100, 1),
])
def test_milli_value_and_value_round_up(text, millis, whole):
    assert api.milli_value(text) == millis
    assert api.value(text) == whole


# Found by the differential tests: ParseQuantity keeps nano precision and rounds anything finer away from zero.
@pytest.mark.parametrize("text, nanos", [("0.1n", 1), ("1.5n", 2), ("0.0000000015", 2), ("-0.1n", -1),
                                         ("1.0000000001", 1_000_000_001), ("1n", 1)])
def test_quantities_finer_than_a_nano_round_away_from_zero(text, nanos):
    assert api.parse_quantity(text) == Decimal(nanos) / 10**9


def test_yaml_numbers_are_read_as_written_not_as_binary_floats():
    # A YAML float 0.1 must be one tenth exactly: Decimal(0.1) would be 0.1000000000000000055...
    assert api.parse_quantity(0.1) == Decimal("0.1")
    assert api.milli_value(api.parse_quantity(0.1)) == 100
    assert api.parse_quantity(2) == 2


@pytest.mark.parametrize("text", ["12Zi", "1 Gi", " 1", "1_000", "NaN", "Infinity", "1.2.3", "Mi", "", "1ki", "0x10", "1Ki2"])
def test_quantities_the_api_rejects_are_rejected(text):
    with pytest.raises(api.ManifestError, match="invalid quantity"):
        api.parse_quantity(text)


_MULTIPLIER = {"": Decimal(1), "m": Decimal("0.001"), "k": Decimal(1000), "Ki": Decimal(2**10), "Mi": Decimal(2**20),
               "Gi": Decimal(2**30), "M": Decimal(10**6), "G": Decimal(10**9)}


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(["", "m", "k", "Ki", "Mi", "Gi", "M", "G"]))
def test_any_canonical_quantity_parses_and_rounds_up(number, suffix):
    text = f"{number}{suffix}"
    if Decimal(number) * _MULTIPLIER[suffix] > api.MAX_INT64:  # past what the kubelet's int64 amounts hold
        if suffix.endswith("i"):  # ParseQuantity caps a binary-suffixed amount at the int64 maximum
            assert api.parse_quantity(text) == api.MAX_INT64
        else:
            with pytest.raises(api.ManifestError, match="out of range"):
                api.parse_quantity(text)
        return
    exact = api.parse_quantity(text)
    assert api.milli_value(text) >= exact * 1000 > api.milli_value(text) - 1
    assert api.value(text) >= exact > api.value(text) - 1


def test_pod_from_manifest_gives_the_client_model():
    import yaml

    pod = api.pod_from_manifest(yaml.safe_load(POD))
    assert isinstance(pod, V1Pod)
    assert pod.spec.containers[0].resources.requests == {"cpu": "250m", "memory": "64Mi"}


def test_pod_from_manifest_leaves_the_callers_dict_alone():
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": 0.5}}}]}}
    before = json.dumps(manifest)
    pod = api.pod_from_manifest(manifest)
    assert json.dumps(manifest) == before
    assert pod.spec.containers[0].resources.requests == {"cpu": "0.5"}


def test_examples_load():
    (web,) = api.load_manifests(EXAMPLES / "pods" / "web.yaml")
    (node,) = api.load_manifests(EXAMPLES / "nodes" / "node.yaml")
    assert web.metadata.name == "web" and [c.name for c in web.spec.containers] == ["nginx", "log-shipper"]
    assert isinstance(node, V1Node) and node.status.allocatable["cpu"] == "1930m"


def test_multi_document_yaml_a_kind_list_and_json(tmp_path):
    import yaml

    pod = yaml.safe_load(POD)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}}}
    (tmp_path / "multi.yaml").write_text(yaml.safe_dump_all([pod, node]))
    (tmp_path / "list.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod, pod]}))
    assert [type(o) for o in api.load_manifests(tmp_path / "multi.yaml")] == [V1Pod, V1Node]
    assert [o.metadata.name for o in api.load_manifests(tmp_path / "list.json")] == ["web", "web"]


# Each malformed manifest, and the one line the course prints for it: file, field path, problem.
MALFORMED = [
    ("bad YAML", "kind: Pod\nspec: [unclosed\n", "bad.yaml: line 3, column 1: invalid YAML (expected ',' or ']', but got '<stream end>')"),
    ("empty file", "", "bad.yaml: no Kubernetes objects found"),
    ("a list, not a mapping", "- a\n- b\n", "bad.yaml: expected a Pod or Node manifest (a mapping), got a list"),
    ("a string, not a mapping", "hello\n", "bad.yaml: expected a Pod or Node manifest (a mapping), got a string"),
    ("a Deployment without a template", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
     "bad.yaml: spec: expected a mapping (the Pod template of a Deployment), got nothing"),
    ("only a Service", "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n", "bad.yaml: no Pod or Node found"),
    ("a kind without an apiVersion", "kind: Service\nmetadata: {name: web}\n", 'bad.yaml: kind: expected Pod or Node, got "Service"'),
    ("no kind", "apiVersion: v1\nmetadata: {name: x}\n", "bad.yaml: kind: expected Pod or Node, got no kind"),
    ("wrong apiVersion", "apiVersion: v2\nkind: Pod\n", 'bad.yaml: apiVersion: expected "v1", got "v2"'),
    ("no name", "apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {containers: [{name: a}]}\n",
     "bad.yaml: metadata.name: a name is required"),
    ("no containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n",
     "bad.yaml: spec.containers: a Pod needs at least one container"),
    ("spec not a mapping", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: [1]\n",
     "bad.yaml: spec: expected a mapping, got a list"),
    ("containers not a list", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: {name: a}}\n",
     "bad.yaml: spec.containers: expected a list, got a mapping"),
    ("container not a mapping", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [a]}\n",
     "bad.yaml: spec.containers[0]: expected a mapping, got a string"),
    ("container without a name", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{image: a}]}\n",
     "bad.yaml: spec.containers[0].name: a container name is required"),
    ("duplicate container names", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a}, {name: a}]}\n",
     'bad.yaml: spec.containers[1].name: duplicate name "a" (also spec.containers[0])'),
    ("init and app container share a name",
     "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {initContainers: [{name: a}], containers: [{name: a}]}\n",
     'bad.yaml: spec.containers[0].name: duplicate name "a" (also spec.initContainers[0])'),
    ("unknown suffix", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, resources: {limits: {memory: 12Zi}}}]}\n",
     'bad.yaml: spec.containers[0].resources.limits.memory: invalid quantity "12Zi"'),
    ("negative request", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, resources: {requests: {cpu: '-1'}}}]}\n",
     'bad.yaml: spec.containers[0].resources.requests.cpu: must not be negative, got "-1"'),
    ("limit below request",
     "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, resources: {requests: {cpu: '2'}, limits: {cpu: 500m}}}]}\n",
     "bad.yaml: spec.containers[0].resources.limits.cpu: limit 500m is below the request 2"),
    ("a boolean quantity", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, resources: {requests: {memory: true}}}]}\n",
     "bad.yaml: spec.containers[0].resources.requests.memory: invalid quantity true"),
    ("requests not a mapping", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, resources: {requests: [1]}}]}\n",
     "bad.yaml: spec.containers[0].resources.requests: expected a mapping, got a list"),
    ("bad overhead", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {overhead: {cpu: lots}, containers: [{name: a}]}\n",
     'bad.yaml: spec.overhead.cpu: invalid quantity "lots"'),
    ("bad node allocatable", "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {memory: 1 Gi}}\n",
     'bad.yaml: status.allocatable.memory: invalid quantity "1 Gi"'),
    ("bad item in a kind: List", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: x}, spec: {containers: [{name: a}]}}\n"
     "- {apiVersion: v1, kind: Pod, metadata: {name: y}, spec: {containers: []}}\n",
     "bad.yaml: items[1].spec.containers: a Pod needs at least one container"),
    ("bad second document", "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n---\napiVersion: v1\nkind: Pod\n",
     "bad.yaml (document 2): metadata: expected a mapping, got nothing"),
    ("a field of the wrong type", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a, ports: [{containerPort: eighty}]}]}\n",
     "bad.yaml: not a valid Pod: containerPort: Input should be a valid integer"),
]


@pytest.mark.parametrize("text, message", [(t, m) for _, t, m in MALFORMED], ids=[name for name, _, _ in MALFORMED])
def test_malformed_manifests_get_one_line_naming_file_and_field(tmp_path, monkeypatch, text, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(api.ManifestError) as caught:
        api.load_manifests("bad.yaml")
    assert str(caught.value) == message


def test_a_missing_file_is_named():
    with pytest.raises(api.ManifestError, match=r"^nowhere.yaml: cannot read file \(No such file or directory\)$"):
        api.load_manifests("nowhere.yaml")


def test_cli_prints_one_line_and_exits_2_on_bad_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pod.yaml").write_text(next(text for _, text, message in MALFORMED if message.endswith('"12Zi"')))
    before = (tmp_path / "pod.yaml").read_bytes()
    result = subprocess.run([sys.executable, "-m", "mini_kubelet", "show", "pod.yaml"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == 'mini-kubelet: pod.yaml: spec.containers[0].resources.limits.memory: invalid quantity "12Zi"\n'
    assert (tmp_path / "pod.yaml").read_bytes() == before


def test_cli_show_converts_to_millicores_and_bytes(capsys):
    assert main(["show", str(EXAMPLES / "pods" / "web.yaml"), str(EXAMPLES / "nodes" / "node.yaml")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  nginx +cpu +250m +1000m \(1\)$", out, re.M)
    assert re.search(r"^ +memory +67108864 \(64Mi\) +134217728 \(128Mi\)$", out, re.M)
    assert re.search(r"^  log-shipper +cpu +50m \(0.05\) +-$", out, re.M)  # 0.05 CPU; no limit
    assert re.search(r"^ +memory +32000000 \(32M\) +50331648 \(48Mi\)$", out, re.M)  # M is decimal
    assert re.search(r"^  cpu +2000m \(2\) +1930m$", out, re.M)


def test_every_example_manifest_loads_or_is_an_invalid_example():
    manifests = [p for folder in ("pods", "nodes", "invalid") for p in (EXAMPLES / folder).glob("*.yaml")]
    assert manifests
    for path in sorted(manifests):
        if path.parent.name == "invalid":
            with pytest.raises(api.ManifestError):
                api.load_manifests(path)
        else:
            assert api.load_manifests(path), path.relative_to(ROOT)


@pytest.mark.parametrize("name", ["cluster/running-pods.yaml", "cluster/worker-5-pods.yaml", "cluster/node-v1.29.yaml"])
def test_deep_copy_makes_what_copy_deepcopy_makes_and_shares_nothing(name):
    import copy
    for found in api.load_manifests(EXAMPLES / name):
        copied, expected = api.deep_copy(found), copy.deepcopy(found)
        assert type(copied) is type(found) and copied.to_dict() == expected.to_dict() == found.to_dict()
        assert copied.model_fields_set == expected.model_fields_set
        copied.metadata.name = "changed"
        (copied.metadata.labels or {})["added"] = "x"
        assert found.metadata.name != "changed" and "added" not in (found.metadata.labels or {})
        assert copied.metadata is not found.metadata and (found.status is None or copied.status is not found.status)
