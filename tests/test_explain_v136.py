"""Chapter 3, the current release: `mini-kubelet explain` answers for v1.36 with --kubernetes-version 1.36, for v1.27 by default.

A sidecar's OOM score (capped from 1.32), a Guaranteed Pod's memory.oom.group on cgroup v2 (1.28; off with
singleProcessOOMKill from 1.32), a Burstable Pod's memory.swap.max under LimitedSwap (NodeSwap), and the
note that a 1.35+ kubelet refuses cgroup v1 by default.
"""

from __future__ import annotations

import json

import pytest

from mini_kubelet.cmd.main import main

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch3

DEPLOYMENT = str(EXAMPLES / "cluster" / "deployment.yaml")
GUARANTEED = str(EXAMPLES / "pods" / "guaranteed.yaml")
BURSTABLE = str(EXAMPLES / "pods" / "burstable.yaml")
V136 = ["--kubernetes-version", "1.36"]
OOM_GROUP_BY = "pkg/kubelet/kuberuntime/kuberuntime_container_linux.go calculateLinuxResources"
SWAP_BY = ("pkg/kubelet/kuberuntime/kuberuntime_container_linux.go configureContainerSwapResources; "
           "pkg/kubelet/kuberuntime/kuberuntime_container_linux.go calcSwapForBurstablePods")


def run_json(capsys, *args):
    assert main(["explain", *args, "--output", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def container_files(report, name):
    [cgroup] = [c for c in report["cgroups"] if c["container"] == name]
    return {f["name"]: (f["value"], f["computed_by"]) for f in cgroup["files"]}


def oom_scores(report):
    return {c["name"]: c["oom_score_adj"] for pod in report["pods"] for c in pod["containers"]}


def test_sidecar_oom_score_is_capped_in_136_not_in_127(capsys):
    # mesh-proxy requests 128Mi, app 512Mi, on the default 16Gi node: 1000 - 1000*128Mi/16Gi = 993 in v1.27;
    # from 1.32 a sidecar is capped at the regular container's 969.
    assert oom_scores(run_json(capsys, DEPLOYMENT)) == {"migrate": 985, "mesh-proxy": 993, "app": 969}
    report = run_json(capsys, DEPLOYMENT, *V136)
    assert report["profile"]["kubernetesVersion"] == "1.36"
    assert oom_scores(report) == {"migrate": 985, "mesh-proxy": 969, "app": 969}
    assert container_files(report, "mesh-proxy")["/proc/<pid>/oom_score_adj"][0] == "969"


def test_guaranteed_pod_gets_memory_oom_group_on_cgroup_v2_in_136(capsys):
    default = run_json(capsys, GUARANTEED)
    assert not any(f["name"] == "memory.oom.group" for c in default["cgroups"] for f in c["files"])
    report = run_json(capsys, GUARANTEED, *V136)
    for name in ("api", "metrics-exporter"):
        assert container_files(report, name)["memory.oom.group"] == ("1", OOM_GROUP_BY)
    pod_cgroup = [c for c in report["cgroups"] if c["kind"] == "pod"][0]
    assert not any(f["name"] == "memory.oom.group" for f in pod_cgroup["files"])  # containers only


def test_single_process_oom_kill_drops_memory_oom_group(capsys):
    report = run_json(capsys, GUARANTEED, *V136, "--single-process-oom-kill")
    assert "memory.oom.group" not in container_files(report, "api")


@pytest.mark.parametrize("release", ["1.27", "1.31"])
def test_single_process_oom_kill_before_132_is_one_line_exit_2(capsys, release):
    assert main(["explain", GUARANTEED, "--kubernetes-version", release, "--single-process-oom-kill"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "singleProcessOOMKill" in err[0] and "1.32" in err[0]


def test_cgroup_v1_has_no_oom_group_and_135_notes_fail_cgroup_v1(capsys):
    report = run_json(capsys, GUARANTEED, *V136, "--cgroup-version", "1")
    assert "memory.oom.group" not in container_files(report, "api")
    assert "memory.limit_in_bytes" in container_files(report, "api")  # the v1 files are still computed
    assert any("failCgroupV1" in note and "refuses to start" in note for note in report["notes"])
    for release in ("1.34", "1.27"):
        older = run_json(capsys, GUARANTEED, "--kubernetes-version", release, "--cgroup-version", "1")
        assert not any("failCgroupV1" in note for note in older["notes"])


def test_burstable_pod_with_limited_swap_in_136(capsys):
    # The default node: 16Gi of memory; 4Gi of swap. app requests 256Mi: 256Mi/16Gi * 4Gi = 64Mi; log-shipper 16Mi.
    report = run_json(capsys, BURSTABLE, *V136, "--swap-behavior", "LimitedSwap", "--swap-capacity", "4Gi")
    assert container_files(report, "app")["memory.swap.max"] == (str(64 * 2**20), SWAP_BY)
    assert container_files(report, "log-shipper")["memory.swap.max"] == (str(16 * 2**20), SWAP_BY)
    assert "swap: 4294967296 bytes, from --swap-capacity" in report["notes"]
    no_swap = run_json(capsys, BURSTABLE, *V136)  # NoSwap, the default from 1.30
    assert container_files(no_swap, "app")["memory.swap.max"][0] == "0"


def test_guaranteed_pod_gets_no_swap_under_limited_swap(capsys):
    report = run_json(capsys, GUARANTEED, *V136, "--swap-behavior", "LimitedSwap", "--swap-capacity", "4Gi")
    assert container_files(report, "api")["memory.swap.max"] == (
        "0", "pkg/kubelet/kuberuntime/kuberuntime_container_linux.go configureContainerSwapResources")


def test_swap_capacity_comes_from_the_nodes_node_info(tmp_path, capsys):
    node = tmp_path / "node.yaml"
    node.write_text("""apiVersion: v1
kind: Node
metadata: {name: swappy}
status:
  capacity: {cpu: "4", memory: 16Gi}
  nodeInfo:
    architecture: amd64
    bootID: b
    containerRuntimeVersion: containerd://2.1.0
    kernelVersion: 6.8.0
    kubeProxyVersion: ""
    kubeletVersion: v1.36.0
    machineID: m
    operatingSystem: linux
    osImage: Ubuntu 24.04
    systemUUID: s
    swap: {capacity: 8589934592}
""")
    report = run_json(capsys, BURSTABLE, "--node", str(node), "--swap-behavior", "LimitedSwap")
    assert report["profile"]["kubernetesVersion"] == "1.36"  # the Node's kubeletVersion chose it
    assert container_files(report, "app")["memory.swap.max"][0] == str(128 * 2**20)
    assert any("status.nodeInfo.swap.capacity" in note for note in report["notes"])


@pytest.mark.parametrize("args", [["--swap-behavior", "LimitedSwap"], ["--swap-capacity", "4Gi"]])
def test_swap_flags_in_127_need_the_gate(capsys, args):
    assert main(["explain", BURSTABLE, *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "NodeSwap" in err[0], err


def test_swap_in_127_with_the_gate_writes_no_swap_file(capsys):
    report = run_json(capsys, BURSTABLE, "--feature-gates", "NodeSwap=true", "--swap-behavior", "LimitedSwap")
    assert "memory.swap.max" not in container_files(report, "app")
    assert "memory.oom.group" not in container_files(report, "app")
    assert any("memory_swap_limit_in_bytes" in note for note in report["notes"])


def test_no_swap_before_130_is_one_line_exit_2(capsys):
    args = ["explain", BURSTABLE, "--kubernetes-version", "1.29", "--feature-gates", "NodeSwap=true"]
    assert main([*args, "--swap-behavior", "NoSwap"]) == 2
    assert "1.30" in capsys.readouterr().err
