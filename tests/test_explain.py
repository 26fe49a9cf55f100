"""Chapter 3: `mini-kubelet explain` prints a Pod's QoS class, cgroup files and OOM scores."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mini_kubelet.cmd.main import main

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch3

NODE = str(EXAMPLES / "nodes" / "node.yaml")
BURSTABLE = str(EXAMPLES / "pods" / "burstable.yaml")
GUARANTEED = str(EXAMPLES / "pods" / "guaranteed.yaml")
BEST_EFFORT = str(EXAMPLES / "pods" / "best-effort.yaml")


def run_json(capsys, *args):
    assert main(["explain", *args, "--output", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def files_of(report, kind, container=""):
    [cgroup] = [c for c in report["cgroups"] if c["kind"] == kind and c["container"] == container]
    return {f["name"]: f["value"] for f in cgroup["files"]}, cgroup


def test_text_shows_class_reason_files_and_oom_scores(capsys):
    assert main(["explain", BURSTABLE, "--node", NODE]) == 0
    out = capsys.readouterr().out
    assert "QoS class Burstable" in out
    assert "container log-shipper has no cpu limit" in out  # why it is not Guaranteed
    assert "\033[" not in out  # not a terminal: no colour
    pod_path = "/kubepods/burstable/pod50c464c8-d22a-411d-a894-1abf0394856f"
    lines = out.splitlines()
    assert pod_path in lines
    # 300m of requests -> 307 shares -> weight 1 + (305*9999)//262142 = 12; limits 512Mi + 128Mi.
    # Under each file, the functions that computed it.
    pod_lines = lines[lines.index(pod_path):]
    weight = next(i for i, line in enumerate(pod_lines) if line.split()[:1] == ["cpu.weight"])
    assert pod_lines[weight].split() == ["cpu.weight", "12"]
    assert pod_lines[weight + 1].split() == ["by", "ResourceConfigForPod,", "MilliCPUToShares,", "getCPUWeight"]
    assert any(line.split() == ["memory.max", "671088640"] for line in pod_lines)
    assert "container app: oom_score_adj 968" in out
    assert "container log-shipper: oom_score_adj 992" in out
    assert "GetContainerOOMScoreAdjust" in out


def test_text_shows_each_containers_requests_and_limits_in_millicores_and_bytes(capsys):
    assert main(["explain", BURSTABLE, "--node", NODE]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    # burstable.yaml: app 250m/256Mi | 1/512Mi; log-shipper 50m/64Mi | -/128Mi.
    assert ["app", "cpu", "250m", "1000m"] in rows
    assert ["memory", "268435456", "536870912"] in rows
    assert ["log-shipper", "cpu", "50m", "-"] in rows
    assert ["memory", "67108864", "134217728"] in rows


def test_text_qos_reason_in_millicores_summed_with_init_containers(capsys):
    # GetPodQOS adds init containers to the sums: 500m + 200m + 100m = 800m requested,
    # 1 + 500m + 200m = 1700m limited (the pod cgroup uses the init maximum instead).
    assert main(["explain", str(EXAMPLES / "pods" / "init-containers.yaml"), "--node", NODE]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "the pod's cpu requests (800m) differ from its limits (1700m)" in out
    assert "migrate (init) cpu 500m 1000m" in out


def test_text_marks_requests_copied_from_limits(tmp_path, capsys):
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i, "
                    "resources: {limits: {cpu: 500m, memory: 1Gi}, requests: {memory: 1Gi}}}]}\n")
    assert main(["explain", str(path)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["c", "cpu", "500m*", "500m"] in rows  # copied by SetDefaults_Pod
    assert ["memory", "1073741824", "1073741824"] in rows  # written: no mark
    assert ["*", "copied", "from", "the", "limit,", "as", "the", "API", "server", "does", "(SetDefaults_Pod)"] in rows


@pytest.mark.parametrize("example", sorted(p.name for p in (EXAMPLES / "pods").glob("*.yaml")
                                           if not p.name.startswith("admission-")))
def test_text_fits_80_columns_and_names_every_source(capsys, example):
    args = [str(EXAMPLES / "pods" / example), "--node", NODE, "--kube-reserved", "cpu=70m,memory=1865216Ki"]
    assert main(["explain", *args]) == 0
    out = capsys.readouterr().out
    # Only a cgroup path may be longer: it cannot be broken.
    assert [line for line in out.splitlines() if len(line) > 80 and not line.startswith("/")] == []
    # The legend gives each function's file; together they are exactly the JSON's computed_by.
    legend = out.split("Where each function is")[1].splitlines()[1:]
    where, path = {}, None
    for line in legend:
        if line.startswith("      "):
            where.update({function.strip(): path for function in line.split(",")})
        else:
            path = line.strip()
    report = run_json(capsys, *args)
    sources = {source for c in report["cgroups"] for f in c["files"] for source in f["computed_by"].split("; ")}
    assert sources <= {f"{path} {function}" for function, path in where.items()}
    named, in_by_line = set(), False
    for line in out.splitlines():  # "      by A, B," and its continuation lines, indented 9
        in_by_line = line.startswith("      by ") or (in_by_line and line.startswith(" " * 9) and line[9] != " ")
        if in_by_line:
            named |= {word.rstrip(",") for word in line.split() if word != "by"}
    assert named == {source.rsplit(" ", 1)[1] for source in sources}


def test_values_are_aligned_in_one_column(capsys):
    assert main(["explain", GUARANTEED]) == 0
    file_lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  cpu.") or
                  line.startswith("  memory.") or line.startswith("  hugetlb.")]
    # Values are right-aligned, so they all end in the same column.
    assert len(file_lines) > 5 and len({len(line) for line in file_lines}) == 1


def test_json_numbers_guaranteed_on_cgroup_v1(capsys):
    report = run_json(capsys, GUARANTEED, "--node", NODE, "--cgroup-version", "1")
    assert report["version"] == "mini-kubelet.explain/v1"
    [pod] = report["pods"]
    assert (pod["qos_class"], pod["cgroup"]) == ("Guaranteed", "/kubepods/poda26d5dfe-ae9d-4802-a7f7-af048b5acdbd")
    assert {c["oom_score_adj"] for c in pod["containers"]} == {-997}
    # The inputs, as the kubelet reads them: cpu in millicores, memory in bytes (api: 500m, 256Mi).
    api = pod["containers"][0]
    assert (api["name"], api["requests"], api["limits"], api["copied_requests"]) == (
        "api", {"cpu": "500m", "memory": "268435456"}, {"cpu": "500m", "memory": "268435456"}, [])
    files, _ = files_of(report, "pod")
    # 600m -> 614 shares, 60ms of every 100ms, 320Mi.
    assert files["cpu.shares"] == "614"
    assert (files["cpu.cfs_quota_us"], files["cpu.cfs_period_us"]) == ("60000", "100000")
    assert files["memory.limit_in_bytes"] == str(320 * 2**20)
    kubepods, cgroup = files_of(report, "node")
    # worker-1: 2 CPUs, 8148084Ki, no reservations given -> the whole capacity; hugetlb 1<<62 from UpdateCgroups.
    assert kubepods["cpu.shares"] == "2048"
    assert kubepods["memory.limit_in_bytes"] == str(8148084 * 1024)
    assert kubepods["hugetlb.2MB.limit_in_bytes"] == str(1 << 62)
    assert "setHugePagesUnbounded" in next(f["computed_by"] for f in cgroup["files"] if f["name"].startswith("hugetlb"))


def test_json_systemd_paths_and_reservations(capsys):
    report = run_json(capsys, BURSTABLE, "--node", NODE, "--cgroup-driver", "systemd",
                      "--system-reserved", "cpu=100m,memory=1Gi", "--kube-reserved", "memory=512Mi")
    assert report["pods"][0]["cgroup"] == ("/kubepods.slice/kubepods-burstable.slice/"
                                           "kubepods-burstable-pod50c464c8_d22a_411d_a894_1abf0394856f.slice")
    kubepods, _ = files_of(report, "node")
    assert kubepods["memory.max"] == str(8148084 * 1024 - 1536 * 2**20)  # not minus the eviction threshold
    assert kubepods["cpu.weight"] == "75"  # 1900m -> 1945 shares -> weight 75
    app, cgroup = files_of(report, "container", "app")
    assert app["cpu.max"] == "100000 100000" and app["/proc/<pid>/oom_score_adj"] == "968"
    assert "not a cgroup file" in cgroup["note"]
    shipper, _ = files_of(report, "container", "log-shipper")
    assert shipper["cpu.max"] == "max 100000"  # no cpu limit: quota 0, period 100000


def test_default_node_is_said(capsys):
    report = run_json(capsys, BEST_EFFORT)
    assert report["node"]["default"] is True and "4 CPUs" in report["node"]["note"]
    assert report["node"]["memory_capacity"] == 16 * 2**30
    assert report["pods"][0]["qos_class"] == "BestEffort"
    assert [c["oom_score_adj"] for c in report["pods"][0]["containers"]] == [1000] * len(report["pods"][0]["containers"])
    assert main(["explain", BEST_EFFORT]) == 0
    assert "default node with 4 CPUs and 16Gi" in capsys.readouterr().out


POD = """\
- apiVersion: v1
  kind: Pod
  metadata: {{name: {name}, uid: {uid}}}
  spec:
    containers:
    - name: app
      image: app
      resources: {resources}
"""


def test_a_list_of_pods_explains_each_and_sums_the_burstable_tier(tmp_path, capsys):
    items = (POD.format(name="a", uid="uid-a", resources="{requests: {cpu: 250m}}")
             + POD.format(name="b", uid="uid-b", resources="{requests: {cpu: 750m}}")
             + POD.format(name="c", uid="uid-c", resources="{limits: {cpu: 1, memory: 1Gi}}"))
    path = tmp_path / "pods.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n" + items)
    report = run_json(capsys, str(path))
    assert [(p["name"], p["qos_class"]) for p in report["pods"]] == [
        ("a", "Burstable"), ("b", "Burstable"), ("c", "Guaranteed")]
    # Pod c had limits only: the API server would copy them to requests, which makes it Guaranteed.
    assert [p["defaulted_requests"] for p in report["pods"]] == [False, False, True]
    tier = next(c for c in report["cgroups"] if c["path"] == "/kubepods/burstable")
    assert {f["name"]: f["value"] for f in tier["files"]}["cpu.weight"] == "39"  # 1000m -> 1024 shares


def test_a_pod_without_uid_gets_a_placeholder(tmp_path, capsys):
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i}]}\n")
    report = run_json(capsys, str(path))
    assert report["pods"][0]["cgroup"] == "/kubepods/besteffort/pod<uid>"


def test_colour_only_on_a_terminal_without_no_color(capsys, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert main(["explain", GUARANTEED]) == 0
    assert "\033[" in capsys.readouterr().out
    monkeypatch.setenv("NO_COLOR", "1")
    assert main(["explain", GUARANTEED]) == 0
    assert "\033[" not in capsys.readouterr().out


@pytest.mark.parametrize("content, args, message", [
    (None, [str(EXAMPLES / "invalid" / "memory-limit-12Zi.yaml")], "spec.containers[0].resources.limits.memory"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n", ["FILE"], "spec.containers"),
    (None, [NODE], "no Pod"),
    (None, [GUARANTEED, "--node", GUARANTEED], "expected one Node"),
    ("apiVersion: v1\nkind: Pod\nmetadata: {name: x, uid: a_b}\nspec: {containers: [{name: c, image: i}]}\n",
     ["FILE"], "metadata.uid"),
    (None, [GUARANTEED, "--kube-reserved", "cpu=lots"], "--kube-reserved: cpu"),
    ("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n", [GUARANTEED, "--node", "FILE"], "status.capacity.memory"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, content, args, message):
    if content is not None:
        (tmp_path / "bad.yaml").write_text(content)
        args = [str(tmp_path / "bad.yaml") if a == "FILE" else a for a in args]
    result = subprocess.run([sys.executable, "-m", "mini_kubelet", "explain", *args], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
