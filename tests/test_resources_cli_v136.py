"""Chapters 2 and 3: `explain` and `admit` on a Pod with a sidecar and on one with pod-level resources, with
v1.27's answers by default and v1.36's under `--kubernetes-version 1.36` (JSON output).

The numbers are those of tests/test_resource_v136.py (component-helpers resource/helpers.go v0.36.0 PodRequests
and PodLimits) applied to examples/cluster/deployment.yaml and examples/pods/pod-level-resources.yaml.
"""

from __future__ import annotations

import json

import pytest
import yaml

from mini_kubelet.cmd.main import main

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch2

DEPLOYMENT = str(EXAMPLES / "cluster" / "deployment.yaml")
POD_LEVEL = str(EXAMPLES / "pods" / "pod-level-resources.yaml")
NODE = str(EXAMPLES / "nodes" / "node.yaml")  # worker-1, allocatable cpu 1930m
Mi = 1024 * 1024


def run_json(capsys, *argv):
    code = main([*argv, "--output", "json"])
    return code, json.loads(capsys.readouterr().out)


# deployment.yaml: migrate 500m/256Mi (init), mesh-proxy 200m/128Mi, limit 256Mi (sidecar), app 400m/512Mi, limit 1Gi.
# v1.27: max(400m, 500m, 200m) = 500m, max(512Mi, 256Mi, 128Mi) = 512Mi; limits max(1Gi, 256Mi) = 1Gi.
# v1.36: max(400m + 200m, 500m) = 600m, max(512Mi + 128Mi, 256Mi) = 640Mi; limits 1Gi + 256Mi = 1280Mi.
# pod-level-resources.yaml: containers 500m/512Mi and 100m/128Mi, no limits; spec.resources 1/1Gi, limits 2/2Gi.
@pytest.mark.ch3
@pytest.mark.parametrize("path, version, requests, limits", [
    (DEPLOYMENT, None, {"cpu": "500m", "memory": str(512 * Mi)}, {"memory": str(1024 * Mi)}),
    (DEPLOYMENT, "1.36", {"cpu": "600m", "memory": str(640 * Mi)}, {"memory": str(1280 * Mi)}),
    (POD_LEVEL, None, {"cpu": "600m", "memory": str(640 * Mi)}, {}),
    (POD_LEVEL, "1.36", {"cpu": "1000m", "memory": str(1024 * Mi)}, {"cpu": "2000m", "memory": str(2048 * Mi)}),
])
def test_explain_gives_the_releases_effective_requests(capsys, path, version, requests, limits):
    code, report = run_json(capsys, "explain", path, "--node", NODE, *(["--kubernetes-version", version] if version else []))
    assert code == 0
    assert report["profile"]["kubernetesVersion"] == (version or "1.27")
    (pod,) = report["pods"]
    assert (pod["requests"], pod["limits"]) == (requests, limits)
    assert len(pod["notes"]) == 1  # the sidecar note, or the pod-level one


def running_file(tmp_path, cpu):
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "busy", "namespace": "shop"},
           "spec": {"nodeName": "worker-1", "containers": [{"name": "c", "image": "x",
                                                             "resources": {"requests": {"cpu": cpu}}}]},
           "status": {"phase": "Running"}}
    path = tmp_path / "running.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


# The node has 1930m; a running Pod takes `busy`. v1.27 fits the smaller request, v1.36 is short of cpu.
@pytest.mark.parametrize("path, busy_m, cpu_127, cpu_136", [
    (DEPLOYMENT, 1400, 500, 600),  # free 530m
    (POD_LEVEL, 1000, 600, 1000),  # free 930m
])
def test_admit_fits_v1_27_and_rejects_v1_36(capsys, tmp_path, path, busy_m, cpu_127, cpu_136):
    running = running_file(tmp_path, f"{busy_m}m")
    answers = {}
    for version in ("1.27", "1.36"):
        code, report = run_json(capsys, "admit", path, "--node", NODE, "--running", running,
                                "--kubernetes-version", version)
        (pod,) = report["pods"]
        cpu = next(row for row in pod["fit"] if row["resource"] == "cpu")
        answers[version] = (code == 0, pod["admitted"], cpu["requested"], cpu["used"], pod["status"]["reason"])
    assert answers["1.27"] == (True, True, cpu_127, busy_m, "")
    assert answers["1.36"] == (False, False, cpu_136, busy_m, "OutOfcpu")


def test_pod_level_quantities_are_checked_and_yaml_numbers_kept_as_text():
    from mini_kubelet import api

    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "resources": {"requests": {"cpu": 1.5}, "limits": {"memory": "2Gi"}}, "containers": [{"name": "c"}]}}
    pod = api.pod_from_manifest(doc)
    assert (pod.spec.resources.requests, pod.spec.resources.limits) == ({"cpu": "1.5"}, {"memory": "2Gi"})
    doc["spec"]["resources"]["limits"]["memory"] = "-1Gi"
    with pytest.raises(api.ManifestError, match="spec.resources.limits.memory"):
        api.pod_from_manifest(doc)
