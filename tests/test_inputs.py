"""What users feed the commands: kubectl output, apply bundles, workloads, standard input, and input too big.

Each behaviour gets the right answer, or one line on stderr naming the file and the field, exit 2.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import time

import pytest
import yaml

from mini_kubelet import api
from mini_kubelet.cmd.main import main

from .conftest import EXAMPLES, ROOT

CLUSTER = EXAMPLES / "cluster"
SMALL_POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"


def one_line_error(capsys, argv, *parts) -> str:
    """Run argv; assert exit 2, nothing on stdout, one line on stderr containing each part."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("mini-kubelet: "), err
    for part in parts:
        assert part in err, err
    return err


# ---- standard input -------------------------------------------------------------------------------

@pytest.mark.ch0
def test_show_reads_standard_input(capsys, stdin):
    stdin((EXAMPLES / "pods" / "web.yaml").read_text())
    assert main(["show", "-"]) == 0
    from_stdin = capsys.readouterr().out
    assert main(["show", str(EXAMPLES / "pods" / "web.yaml")]) == 0
    assert from_stdin == capsys.readouterr().out and from_stdin.startswith("Pod shop/web\n")


@pytest.mark.ch0
def test_a_bad_manifest_on_standard_input_is_named_stdin(capsys, stdin):
    stdin("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {memory: 1Q}}}]}\n")
    one_line_error(capsys, ["show", "-"], "<stdin>: spec.containers[0].resources.limits.memory: invalid quantity")


@pytest.mark.ch2
def test_admit_reads_the_pods_from_standard_input_and_refuses_it_twice(capsys, stdin):
    stdin((EXAMPLES / "pods" / "admission-fits.yaml").read_text())
    assert main(["admit", "-", "--node", str(EXAMPLES / "nodes" / "small-worker.yaml")]) == 0
    assert "ADMITTED" in capsys.readouterr().out
    stdin(SMALL_POD)
    one_line_error(capsys, ["admit", "-", "--node", "-"], "--node: - (standard input) is already read for POD.yaml")


@pytest.mark.ch3
def test_explain_reads_standard_input(capsys, stdin):
    stdin((EXAMPLES / "pods" / "burstable.yaml").read_text())
    assert main(["explain", "-", "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pods"][0]["qos_class"] == "Burstable"


@pytest.mark.ch4
def test_run_and_eviction_rank_read_standard_input(capsys, stdin):
    stdin((EXAMPLES / "scenarios" / "memory-hard.yaml").read_text().replace("../pods/", str(EXAMPLES / "pods") + "/"))
    assert main(["run", "-", "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["scenario"]["source"] == "<stdin>"
    stdin((EXAMPLES / "summary" / "memory-pods.yaml").read_text())
    assert main(["eviction", "rank", "--summary", str(EXAMPLES / "summary" / "memory-pressure.json"), "--pods", "-",
                 "--signal", "memory.available"]) == 0
    assert capsys.readouterr().out.startswith("Ranking for memory.available")


# ---- bundles, workloads, lists ---------------------------------------------------------------------

@pytest.mark.ch0
def test_an_apply_bundle_shows_its_pods_and_names_what_it_skipped(capsys):
    assert main(["show", str(CLUSTER / "shop-bundle.yaml")]) == 0
    out, err = capsys.readouterr()
    assert [line for line in out.splitlines() if line.startswith("Pod ")] == ["Pod shop/storefront", "Pod shop/cache-warmer"]
    assert "Deployment shop/storefront: read through its Pod template (spec.template)" in err
    assert err.splitlines()[-1].endswith("skipped (not a Pod, a Node or a workload with a Pod template): "
                                         "Namespace shop, Service shop/storefront")


WORKLOADS = {
    "Deployment": ("apps/v1", "spec.template", lambda t: {"replicas": 2, "template": t}),
    "StatefulSet": ("apps/v1", "spec.template", lambda t: {"serviceName": "db", "template": t}),
    "DaemonSet": ("apps/v1", "spec.template", lambda t: {"template": t}),
    "ReplicaSet": ("apps/v1", "spec.template", lambda t: {"template": t}),
    "Job": ("batch/v1", "spec.template", lambda t: {"template": t}),
    "CronJob": ("batch/v1", "spec.jobTemplate.spec.template",
                lambda t: {"schedule": "0 2 * * *", "jobTemplate": {"spec": {"template": t}}}),
}


def workload(kind: str, memory: str = "128Mi") -> dict:
    api_version, _, spec = WORKLOADS[kind]
    template = {"metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"memory": memory}}}]}}
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "db", "namespace": "data"}, "spec": spec(template)}


@pytest.mark.ch0
@pytest.mark.parametrize("kind", WORKLOADS)
def test_a_workload_is_read_through_its_pod_template(tmp_path, kind):
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(workload(kind)))
    notes: list[str] = []
    (pod,) = api.load_manifests(path, notes)
    assert (pod.metadata.namespace, pod.metadata.name, pod.metadata.labels) == ("data", "db", {"app": "db"})
    assert pod.spec.containers[0].resources.requests == {"memory": "128Mi"}
    assert notes == [f"{path}: {kind} data/db: read through its Pod template ({WORKLOADS[kind][1]}), "
                     "the Pod each replica would get"]


@pytest.mark.ch0
@pytest.mark.parametrize("kind", WORKLOADS)
def test_a_bad_template_names_the_field_in_the_workload(capsys, tmp_path, kind):
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(workload(kind, memory="lots")))
    one_line_error(capsys, ["show", str(path)],
                   f"w.yaml: {WORKLOADS[kind][1]}.spec.containers[0].resources.requests.memory: invalid quantity \"lots\"")


@pytest.mark.ch0
def test_a_podlist_from_the_api_is_read_like_a_list():
    # kubectl get --raw /api/v1/namespaces/shop/pods: a PodList, whose items carry no kind or apiVersion.
    pods = api.load_manifests(CLUSTER / "pods-raw.json")
    assert [(p.metadata.name, p.status.phase) for p in pods] == [("storefront-6b8d7c9f5d-4kq2x", "Running"),
                                                                  ("cache-warmer", "Succeeded")]


# ---- admit on real data ----------------------------------------------------------------------------

def admit_json(capsys, *args) -> tuple[int, dict]:
    code = main(["admit", *args, "--output", "json"])
    return code, json.loads(capsys.readouterr().out)


def pressured_node(tmp_path, conditions: dict[str, str]) -> str:
    node = yaml.safe_load((CLUSTER / "node-memory-pressure.yaml").read_text())
    node["status"]["conditions"] = [{"type": t, "status": s} for t, s in conditions.items()]
    path = tmp_path / "node.yaml"
    path.write_text(yaml.safe_dump(node))
    return str(path)


def pod_file(tmp_path, name: str, resources: dict, **spec) -> str:
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}], **spec}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.ch2
def test_a_node_under_memory_pressure_rejects_a_best_effort_pod(capsys):
    # The eviction manager's Admit (pkg/kubelet/eviction/eviction_manager.go managerImpl.Admit), the first
    # admit handler, reads the conditions the Node reports: reason Evicted, the conditions printed Go-style.
    code, report = admit_json(capsys, str(CLUSTER / "batch-report.yaml"), "--node", str(CLUSTER / "node-memory-pressure.yaml"))
    assert code == 1 and report["node"]["conditions"] == ["MemoryPressure"]
    (pod,) = report["pods"]
    assert pod["decided_by"]["handler"] == "eviction"
    assert pod["status"] == {"phase": "Failed", "reason": "Evicted",
                             "message": "Pod was rejected: The node had condition: [MemoryPressure]. "}
    assert pod["event"] == {"type": "Warning", "reason": "Evicted", "message": "The node had condition: [MemoryPressure]. "}
    assert {c["result"] for c in pod["checks"]} == {"not reached"}  # the chain stops at the first refusal


# Upstream: pkg/kubelet/eviction/eviction_manager_test.go (TestMemoryPressure, TestDiskPressureNodeFs,
# TestAdmitUnderNodeConditions): under memory pressure alone only BestEffort Pods are refused, unless they
# tolerate the memory-pressure taint; under any other pressure every Pod is refused; a critical Pod never.
BURSTABLE = {"requests": {"memory": "100Mi"}}
ADMISSION_UNDER_PRESSURE = [
    ({"MemoryPressure": "True"}, {}, {}, False, "[MemoryPressure]"),
    ({"MemoryPressure": "True"}, BURSTABLE, {}, True, ""),
    ({"MemoryPressure": "True"}, {}, {"tolerations": [{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists",
                                                       "effect": "NoSchedule"}]}, True, ""),
    ({"MemoryPressure": "True"}, {}, {"priorityClassName": "system-node-critical", "priority": 2000001000}, True, ""),
    ({"MemoryPressure": "False", "DiskPressure": "True"}, BURSTABLE, {}, False, "[DiskPressure]"),
    ({"MemoryPressure": "True", "DiskPressure": "True"}, BURSTABLE, {}, False, "[MemoryPressure DiskPressure]"),
    ({"PIDPressure": "True"}, {}, {}, False, "[PIDPressure]"),
    ({"MemoryPressure": "Unknown"}, {}, {}, True, ""),
]


@pytest.mark.ch2
@pytest.mark.parametrize("conditions, resources, spec, admitted, listed", ADMISSION_UNDER_PRESSURE)
def test_the_eviction_admit_handler_reads_the_nodes_conditions(capsys, tmp_path, conditions, resources, spec, admitted,
                                                               listed):
    code, report = admit_json(capsys, pod_file(tmp_path, "p", resources, **spec), "--node",
                              pressured_node(tmp_path, conditions))
    (pod,) = report["pods"]
    assert (code, pod["admitted"]) == (0 if admitted else 1, admitted)
    if not admitted:
        assert pod["event"]["message"] == f"The node had condition: {listed}. "


@pytest.mark.ch2
def test_the_pod_being_admitted_is_not_counted_twice_among_the_running(capsys, tmp_path):
    # kubectl get pods -o yaml lists the Pod itself; it is left out by UID, and the finished Pod is not active.
    node = pressured_node(tmp_path, {"MemoryPressure": "False"})
    code, report = admit_json(capsys, str(CLUSTER / "batch-report.yaml"), "--node", node,
                              "--running", str(CLUSTER / "running-pods.yaml"))
    assert code == 0
    assert report["running"]["admitting"] == [{"pod": "jobs/batch-report", "why": "same UID as a Pod being admitted"}]
    assert report["running"]["inactive"] == [{"pod": "jobs/nightly-export-28597440-kq7zd", "why": "phase Succeeded"}]
    (pod,) = report["pods"]
    assert pod["checked_against"] == 1  # the web Pod alone
    fit = {row["resource"]: row for row in pod["fit"]}
    assert (fit["pods"]["used"], fit["cpu"]["used"]) == (1, 250)
    # An already Running Pod keeps its phase: admission does not make it Pending.
    assert pod["status"]["phase"] == "Running"
    assert main(["admit", str(CLUSTER / "batch-report.yaml"), "--node", node, "--running",
                 str(CLUSTER / "running-pods.yaml")]) == 0
    out = capsys.readouterr().out
    assert "  left out: jobs/batch-report (same UID as a Pod being admitted)\n" in out
    assert "phase Running" in out and "phase Pending" not in out


# ---- explain: the active-Pod rule ------------------------------------------------------------------

def burstable_weight(report: dict) -> str:
    (tier,) = [c for c in report["cgroups"] if c["path"] == "/kubepods/burstable"]
    return next(f["value"] for f in tier["files"] if f["name"] == "cpu.weight")


@pytest.mark.ch3
def test_explain_leaves_a_finished_pod_out_of_the_qos_tier(capsys, tmp_path):
    # qosContainerManagerImpl.UpdateCgroups counts the active Pods only (filterOutInactivePods), as admit and
    # eviction rank do: the Succeeded Burstable Pod's 1 cpu is not in the Burstable tier's weight.
    assert main(["explain", str(CLUSTER / "running-pods.yaml"), "--output", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["inactive"] == [{"pod": "jobs/nightly-export-28597440-kq7zd", "why": "phase Succeeded"}]
    assert [p["name"] for p in report["pods"]] == ["batch-report", "web-7d9c5b8f4-x2mqp"]
    docs = yaml.safe_load((CLUSTER / "running-pods.yaml").read_text())
    docs["items"] = docs["items"][:2]
    active_only = tmp_path / "active.yaml"
    active_only.write_text(yaml.safe_dump(docs))
    assert main(["explain", str(active_only), "--output", "json"]) == 0
    assert burstable_weight(report) == burstable_weight(json.loads(capsys.readouterr().out)) == "10"  # 250m: 256 shares
    assert main(["explain", str(CLUSTER / "running-pods.yaml")]) == 0
    assert "not active: jobs/nightly-export-28597440-kq7zd (phase Succeeded)" in " ".join(capsys.readouterr().out.split())


# ---- sidecars and other kubelet versions -----------------------------------------------------------

@pytest.mark.ch3
def test_sidecar_request_as_1_29_computes_it():
    # KEP-753 "Resources calculation": max(containers + sidecars, max over init i of (init i + sidecars
    # started before it)) + overhead; pkg/api/v1/resource/helpers.go PodRequests from 1.29.
    from mini_kubelet.cmd.inputs import requests_in_two_releases

    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "overhead": {"cpu": "10m"},
        "initContainers": [
            {"name": "side-1", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
            {"name": "big-init", "resources": {"requests": {"cpu": "1"}}},
            {"name": "side-2", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}},
            {"name": "late-init", "resources": {"requests": {"cpu": "800m"}}}],
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "300m"}}}]}}
    pod = api.pod_from_manifest(doc)
    milli = dict(zip((False, True), (api.milli_value(r["cpu"]) for r in requests_in_two_releases(pod))))
    # v1.27: max(300, max(100, 1000, 200, 800)) + 10; 1.29: max(300+100+200, max(100, 1100, 300, 1100)) + 10
    assert milli == {False: 1010, True: 1110}


@pytest.mark.ch3
@pytest.mark.parametrize("command", [["show"], ["explain"], ["admit", "--node", str(CLUSTER / "node-v1.29.yaml")]])
def test_sidecars_and_a_newer_kubelet_get_one_note(capsys, command):
    assert main([command[0], str(CLUSTER / "deployment.yaml"), *command[1:]]) == 0
    out, err = capsys.readouterr()
    flat = " ".join(out.split())
    if command[0] != "admit":
        assert flat.count("init container mesh-proxy has restartPolicy: Always (a sidecar from 1.28); v1.27 computes it as "
                          "a plain init container. A 1.29+ kubelet adds sidecars to the containers (PodRequests): the Pod "
                          "requests cpu 600m, memory 671088640 there, cpu 500m, memory 536870912 here") == 1
        assert "runs kubelet" not in err
    else:  # the Node's kubeletVersion chooses the release the answer is for, and a note on stderr says so
        assert flat.count("init container mesh-proxy has restartPolicy: Always: a sidecar, which Kubernetes 1.29 adds to "
                          "the containers (PodRequests): the Pod requests cpu 600m, memory 671088640 (v1.27, which has no "
                          "sidecars: cpu 500m, memory 536870912)") == 1
        assert err.endswith("\nnote: node worker-9 runs kubelet v1.29.4: answering for Kubernetes 1.29 "
                            "(--kubernetes-version chooses another)\n")
        assert flat.startswith("Kubernetes 1.29 (node worker-9 kubeletVersion v1.29.4)")


@pytest.mark.ch3
def test_no_version_note_for_a_v1_27_kubelet(capsys):
    assert main(["show", str(CLUSTER / "node-memory-pressure.yaml"), str(CLUSTER / "node-v1.29.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.count("runs kubelet") == 1 and "node worker-9 runs kubelet v1.29.4" in out


# ---- reservations the kubelet refuses --------------------------------------------------------------

@pytest.mark.ch3
@pytest.mark.parametrize("flags, message", [
    (["--system-reserved", "memroy=1Gi"], "--system-reserved: memroy: the kubelet cannot reserve this resource"),
    (["--kube-reserved", "hugepages-2Mi=1Gi"], "--kube-reserved: hugepages-2Mi: the kubelet cannot reserve"),
    (["--system-reserved", "memory=15Gi", "--kube-reserved", "memory=1Gi"],
     "--system-reserved + --kube-reserved: memory: reserving 17179869184 (plus the default hard eviction threshold) "
     "is more than the node's capacity 16786677760; the kubelet would not start"),
    (["--kube-reserved", "cpu=5"], "--kube-reserved: cpu: reserving 5000m is more than the node's capacity 4000m"),
])
def test_reservations_the_kubelet_refuses_at_start_are_one_line(capsys, flags, message):
    # cmd/kubelet/app/server.go parseResourceList (cpu, memory, ephemeral-storage, pid) and
    # pkg/kubelet/cm/node_container_manager_linux.go validateNodeAllocatable: the kubelet does not start.
    one_line_error(capsys, ["explain", str(EXAMPLES / "pods" / "burstable.yaml"), "--node",
                            str(CLUSTER / "node-memory-pressure.yaml"), *flags], message)


@pytest.mark.ch3
def test_a_pid_reservation_is_accepted(capsys):
    assert main(["explain", str(EXAMPLES / "pods" / "burstable.yaml"), "--system-reserved", "pid=1000,memory=1Gi"]) == 0


@pytest.mark.ch4
def test_a_scenario_reservation_the_kubelet_refuses_names_its_field(capsys, tmp_path):
    text = (EXAMPLES / "scenarios" / "over-limit.yaml").read_text().replace(
        "    evictionHard: memory.available<500Mi", "    evictionHard: memory.available<500Mi\n    systemReserved: memroy=1Gi")
    (tmp_path / "s.yaml").write_text(text)
    one_line_error(capsys, ["run", str(tmp_path / "s.yaml")], "s.yaml: node.kubelet.systemReserved.memroy: the kubelet "
                                                              "cannot reserve this resource")


# ---- run -------------------------------------------------------------------------------------------

@pytest.mark.ch4
def test_run_given_a_pod_says_it_is_a_pod(capsys):
    one_line_error(capsys, ["run", str(EXAMPLES / "pods" / "web.yaml")],
                   "web.yaml: kind: this is a Pod manifest, not a scenario")


@pytest.mark.ch4
def test_a_container_above_its_own_memory_limit_is_noted_once(capsys):
    assert main(["run", str(EXAMPLES / "scenarios" / "over-limit.yaml"), "--output", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    noted = [(step["time"], note) for step in report["steps"] for note in step["notes"] if "memory limit" in note]
    assert noted == [(20, "default/leaky: container app goes above its memory limit 512Mi (513.33Mi); on a node the "
                          "kernel would OOM-kill it now (the replay does not model that kill: the container keeps growing)")]
    assert main(["run", str(EXAMPLES / "scenarios" / "over-limit.yaml")]) == 0
    assert "note: default/leaky: container app goes above its memory limit 512Mi" in capsys.readouterr().out


@pytest.mark.ch4
@pytest.mark.parametrize("where", ["missing/out.png", "file.txt/out.png"])
def test_plot_into_a_missing_directory_fails_before_replaying(capsys, tmp_path, where):
    (tmp_path / "file.txt").write_text("mine")
    one_line_error(capsys, ["run", str(EXAMPLES / "scenarios" / "memory-hard.yaml"), "--plot", str(tmp_path / where)],
                   f"--plot: {tmp_path / where}: ")
    assert (tmp_path / "file.txt").read_text() == "mine"


@pytest.mark.ch4
def test_plot_into_a_directory_that_cannot_be_written_fails_before_replaying(capsys):
    # /proc takes no new files, whatever the user (root included).
    one_line_error(capsys, ["run", str(EXAMPLES / "scenarios" / "memory-hard.yaml"), "--plot", "/proc/out.png"],
                   "--plot: /proc/out.png: cannot write in the directory /proc")


# ---- bounds ----------------------------------------------------------------------------------------

@pytest.mark.ch0
@pytest.mark.parametrize("text", ["1e400", "99999999999999999999", "9300P"])
def test_a_quantity_past_int64_is_one_line(capsys, tmp_path, text):
    (tmp_path / "p.yaml").write_text(SMALL_POD.replace("image: x}", f"image: x, resources: {{limits: {{memory: {text}}}}}}}"))
    err = one_line_error(capsys, ["show", str(tmp_path / "p.yaml")],
                         f'p.yaml: spec.containers[0].resources.limits.memory: quantity "{text}" is out of range')
    assert not re.search(r"\d{25}", err)  # no 400-digit number


@pytest.mark.ch0
def test_a_number_of_thousands_of_digits_is_one_line_and_never_echoed(capsys, tmp_path):
    (tmp_path / "p.yaml").write_text(SMALL_POD.replace("image: x}", "image: x, resources: {limits: {memory: "
                                                       + "9" * 5000 + "}}}"))
    err = one_line_error(capsys, ["show", str(tmp_path / "p.yaml")], "p.yaml: invalid YAML")
    summary = json.loads((EXAMPLES / "summary" / "memory-pressure.json").read_text())
    summary["pods"][0]["memory"]["workingSetBytes"] = 10**400
    (tmp_path / "s.json").write_text(json.dumps(summary))
    err += one_line_error(capsys, ["eviction", "rank", "--summary", str(tmp_path / "s.json"), "--pods",
                                   str(EXAMPLES / "summary" / "memory-pods.yaml"), "--signal", "memory.available"],
                          "s.json: pods[0].memory.workingSetBytes: expected a non-negative integer (uint64)")
    (tmp_path / "s.json").write_text('{"node": {"nodeName": "n", "memory": {"availableBytes": ' + "9" * 5000 + "}}}")
    err += one_line_error(capsys, ["eviction", "rank", "--summary", str(tmp_path / "s.json"), "--pods",
                                   str(EXAMPLES / "summary" / "memory-pods.yaml"), "--signal", "memory.available"],
                          "s.json: invalid JSON")
    assert not re.search(r"\d{25}", err)


@pytest.mark.ch0
def test_a_binary_quantity_past_int64_is_capped_as_parse_quantity_does():
    # k8s.io/apimachinery/pkg/api/resource/quantity.go ParseQuantity: a BinarySI amount is capped at MaxInt64.
    assert api.parse_quantity("9Ei") == api.parse_quantity("100000Ei") == 2**63 - 1


@pytest.mark.ch0
def test_a_file_too_large_is_not_read(capsys, tmp_path):
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (api.MAX_FILE_BYTES + 1))
    one_line_error(capsys, ["show", str(big)], "big.yaml: larger than 16 MiB: not read")


@pytest.mark.ch0
def test_a_yaml_bomb_stops_at_once(capsys, tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
              f"*a{i - 1}, *a{i - 1}]" for i in range(1, 10)]
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    one_line_error(capsys, ["show", str(tmp_path / "bomb.yaml")], "bomb.yaml: more than 2000000 values")
    assert time.monotonic() - started < 20


@pytest.mark.ch4
@pytest.mark.parametrize("duration, message", [
    ("26280h", "duration: 26280h is longer than the replay's limit of 24h (8640 passes, one every 10s)"),
    ("100000h", "duration: 100000h is more than ten years (87600h) from the start"),
    ("99999999999999999999999h", 'duration: invalid duration "99999999999999999999999h" (out of range'),
])
def test_a_replay_that_would_run_for_years_says_so_at_once(capsys, tmp_path, duration, message):
    text = (EXAMPLES / "scenarios" / "over-limit.yaml").read_text().replace("duration: 6m", f"duration: {duration}")
    (tmp_path / "s.yaml").write_text(text)
    started = time.monotonic()
    one_line_error(capsys, ["run", str(tmp_path / "s.yaml")], f"s.yaml: {message}")
    assert time.monotonic() - started < 5


@pytest.mark.ch4
def test_an_image_used_centuries_ago_is_one_line(capsys, tmp_path):
    text = (EXAMPLES / "scenarios" / "disk-image-gc.yaml").read_text()
    doc = yaml.safe_load(text)
    doc["images"][0]["lastUsed"] = "-2000000h"
    for pod in doc.get("pods", []):
        if "file" in pod:
            pod["file"] = str(EXAMPLES / "scenarios" / pod["file"])
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    one_line_error(capsys, ["run", str(tmp_path / "s.yaml")], "s.yaml: images[0].lastUsed: -2000000h is more than ten years")


# ---- bad input, every command that reads a file: one line, exit 2, before the client loads --------------

POD, NODE = str(EXAMPLES / "pods" / "web.yaml"), str(EXAMPLES / "nodes" / "node.yaml")
PODS, SUMMARY = str(EXAMPLES / "summary" / "memory-pods.yaml"), str(EXAMPLES / "summary" / "memory-pressure.json")
READERS = {  # each file a command reads, at FILE
    "show": ["show", "FILE"], "explain": ["explain", "FILE"], "explain --node": ["explain", POD, "--node", "FILE"],
    "admit": ["admit", "FILE", "--node", NODE], "admit --node": ["admit", POD, "--node", "FILE"],
    "admit --running": ["admit", POD, "--node", NODE, "--running", "FILE"],
    "eviction rank --summary": ["eviction", "rank", "--summary", "FILE", "--pods", PODS, "--signal", "memory.available"],
    "eviction rank --pods": ["eviction", "rank", "--summary", SUMMARY, "--pods", "FILE", "--signal", "memory.available"],
    "run": ["run", "FILE"], "watch --kubeconfig": ["watch", "--kubeconfig", "FILE", "--node", "n", "--once"],
}
BROKEN = "kind: Pod\nspec: [containers\n"
SAYS = {  # what each kind of bad file gets: the usual words, then the readers that say something else
    "missing": ("cannot read file (No such file or directory)",
                {"watch --kubeconfig": "cannot use this kubeconfig: Invalid kube-config file. No configuration found."}),
    "empty": ("no Kubernetes objects found", {"eviction rank --summary": "line 1, column 1: invalid JSON (Expecting value)",
                                              "run": "expected a mapping, got nothing",
                                              "watch --kubeconfig": "cannot use this kubeconfig: Invalid kube-config. {path} "
                                                                    "file is empty"}),
    "non-YAML": ("line 3, column 1: invalid YAML (expected ',' or ']', but got '<stream end>')",
                 {"eviction rank --summary": "line 1, column 1: invalid JSON (Expecting value)",
                  "watch --kubeconfig": "cannot use this kubeconfig: line 3, column 1: invalid YAML (expected ',' or ']', "
                                        "but got '<stream end>')"}),
}
SCENARIO_MISTAKES = {  # one bad field in an example of each kind: (example, text, its replacement, the line)
    "eviction": ("over-limit.yaml", "duration: 6m", "duration: 6 minutes",
                 'duration: invalid duration "6 minutes" (write it like 90s, 2m or 1h30m)'),
    "lifecycle": ("lifecycle-crash-loop.yaml", "exitCode: 1}", "exitcode: 1}", "pods[0].run.app.exitcode: unknown field "
                  "(expected one of: after, exitCode, oomKill, preStopDuration)"),
    "node": ("node-guaranteed-oom.yaml", "capacity: {memory: 4Gi,", "capacity: {memory: 4G1,",
             'node.capacity.memory: invalid quantity "4G1"'),
    "a threshold": ("invalid-threshold.yaml", "", "", "node.kubelet.evictionHard: eviction threshold memory.available "
                    "must be positive: -150Mi"),
    "inline Pod": ("memory-hard.yaml", "memory: 200Mi", "memory: 200MB", "pods[2].manifest.spec.containers[0].resources"
                   '.requests.memory: invalid quantity "200MB"'),
}
BAD_FLAGS = {
    "show": (["show", POD, "--kubernetes-version", "1.99"],
             "--kubernetes-version: Kubernetes 1.99 is outside the releases the course models (1.27 to 1.36)"),
    "explain": (["explain", POD, "--system-reserved", "memroy=1Gi"], "--system-reserved: memroy: the kubelet cannot "
                "reserve this resource and would not start (it reserves cpu, memory, ephemeral-storage, pid)"),
    "admit": (["admit", POD, "--node", NODE, "--feature-gates", "SidecarContainers=true"],  # the Node runs v1.27.7
              "--feature-gates: unrecognized feature gate: SidecarContainers (not in Kubernetes 1.27)"),
    "eviction rank": (["eviction", "rank", "--summary", SUMMARY, "--pods", PODS, "--signal", "memory.free"],
                      "--signal: unsupported eviction signal memory.free (expected one of: memory.available, "
                      "allocatableMemory.available, imagefs.available, imagefs.inodesFree, nodefs.available, "
                      "nodefs.inodesFree, pid.available)"),
    "run": (["run", str(EXAMPLES / "scenarios" / "over-limit.yaml"), "--plot", "out.txt"],
            "--plot: out.txt: expected a file name ending in .png or .svg"),
    "watch": (["watch", "--kubeconfig", "k", "--node", "n", "--connections", "-1"],
              "--connections: expected 0 (watch until interrupted) or more"),
}


def bad_input(tmp_path) -> list[tuple[str, list[str], str | None, str]]:
    """Every case: (what it is, the arguments, standard input or None, the one line it gets)."""
    files = {"missing": tmp_path / "missing.yaml", "empty": tmp_path / "empty.yaml", "non-YAML": tmp_path / "broken.yaml"}
    files["empty"].write_text("")
    files["non-YAML"].write_text(BROKEN)
    cases = []
    for reader, argv in READERS.items():
        for kind, path in files.items():
            usual, other = SAYS[kind]
            says = other.get(reader, usual).format(path=path)
            cases.append((f"{reader}: {kind}", [str(path) if a == "FILE" else a for a in argv], None, f"{path}: {says}"))
            if kind != "missing" and reader != "watch --kubeconfig":  # a kubeconfig is a file; "-" names one
                cases.append((f"{reader}: {kind} on standard input", ["-" if a == "FILE" else a for a in argv],
                              path.read_text(), f"<stdin>: {says}"))
    for kind, (example, text, replacement, says) in SCENARIO_MISTAKES.items():
        path = tmp_path / example
        path.write_text((EXAMPLES / "scenarios" / example).read_text().replace(text, replacement, 1)
                        .replace("../pods/", f"{EXAMPLES / 'pods'}/"))
        cases.append((f"run: a bad field in a scenario ({kind})", ["run", str(path)], None, f"{path}: {says}"))
    cases += [(f"{command}: a bad flag", argv, None, says) for command, (argv, says) in BAD_FLAGS.items()]
    return cases


@pytest.mark.ch0
def test_every_kind_of_bad_input_is_one_line_naming_the_file_and_exit_2(capsys, tmp_path, stdin):
    for what, argv, text, line in bad_input(tmp_path):
        if text is not None:
            stdin(text)
        assert main(argv) == 2, what
        assert capsys.readouterr() == ("", f"mini-kubelet: {line}\n"), what


BAD_INPUT_DRIVER = """
import contextlib, io, json, sys
from mini_kubelet.cmd.main import main
for argv, text in json.loads(sys.stdin.read()):
    sys.stdin = io.TextIOWrapper(io.BytesIO((text or "").encode()))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv)
    print(json.dumps([code, sorted({"kubernetes", "pydantic"} & set(sys.modules))]))
"""


@pytest.mark.ch0
def test_bad_input_is_refused_before_the_kubernetes_client_is_imported(tmp_path):
    # The client is slow to import (it builds its models); every refusal above comes before it, in one process (the last
    # case, a good Pod, shows that the check sees the client when it is imported).
    cases = bad_input(tmp_path) + [("explain: a good Pod", ["explain", POD], None, "")]
    result = subprocess.run([sys.executable, "-c", BAD_INPUT_DRIVER], input=json.dumps([[a, t] for _, a, t, _ in cases]),
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == len(cases)
    for (what, *_), (code, loaded) in zip(cases[:-1], answers):
        assert (code, loaded) == (2, []), what
    assert answers[-1] == [0, ["kubernetes", "pydantic"]]


# ---- version, help and exit codes ------------------------------------------------------------------

@pytest.mark.ch0
def test_version_names_the_course_and_the_kubernetes_release_without_loading_the_client():
    code = ("import sys\nfrom mini_kubelet.cmd.main import main\ntry:\n    main(['--version'])\nexcept SystemExit as e:\n"
            "    assert e.code in (0, None)\nassert 'kubernetes' not in sys.modules and 'yaml' not in sys.modules\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ("mini-kubelet 0.1.0, mirroring the Kubernetes v1.27 kubelet (--kubernetes-version answers "
                             "for 1.27 to 1.36)\n")


@pytest.mark.ch0
def test_the_readme_documents_the_exit_codes():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for code in ("`0`", "`1`", "`2`"):
        assert code in section
    assert "admit" in section and "run" in section
    assert textwrap.dedent(section).strip()
