"""Chapter 4: `mini-kubelet eviction rank` on real-shaped /stats/summary JSON and `kubectl get pods -o yaml`
output, and the command-line errors of `run` and `eviction rank`.

The expected orders are upstream's: eviction_manager_test.go TestMemoryPressure and TestDiskPressureNodeFs
use these pod sets (examples/summary/memory-*.{json,yaml} and disk-*), and helpers.go cachedStatsFunc
matches stats to pods by UID, a pod without stats ranking first (the comparators' cmpBool on "no stats").
"""

from __future__ import annotations

import json

import pytest
import yaml

from mini_kubelet.cmd.main import main

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch4

SUMMARY = EXAMPLES / "summary"


def rank(capsys, summary, pods, signal, *extra):
    code = main(["eviction", "rank", "--summary", str(summary), "--pods", str(pods), "--signal", signal,
                 "--output", "json", *extra])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_memory_pressure_order(capsys):
    # TestMemoryPressure's pod set ranked by rankMemoryPressure: exceeds request, priority, usage - request.
    report = rank(capsys, SUMMARY / "memory-pressure.json", SUMMARY / "memory-pods.yaml", "memory.available")
    assert [p["pod"].split("/")[1] for p in report["pods"]] == [
        "best-effort-low-priority-low-usage", "burstable-above-requests", "best-effort-high-priority-high-usage",
        "guaranteed-low-priority-high-usage", "burstable-below-requests"]
    assert report["first_evicted"] == "default/best-effort-low-priority-low-usage"
    guaranteed = report["pods"][3]
    assert guaranteed["qos_class"] == "Guaranteed" and guaranteed["keys"]["usage_minus_request"] == (900 - 1024) * 2**20


def test_disk_pressure_order(capsys):
    # TestDiskPressureNodeFs's pod set: no ephemeral-storage requests, so any usage exceeds; the Guaranteed
    # low-priority-high-usage pod goes first.
    report = rank(capsys, SUMMARY / "disk-pressure.json", SUMMARY / "disk-pods.yaml", "nodefs.available")
    assert not report["dedicated_image_fs"]
    assert [p["pod"].split("/")[1] for p in report["pods"]] == [
        "low-priority-high-usage", "low-priority-low-usage", "above-requests", "below-requests", "high-priority-high-usage"]
    assert report["pods"][-1]["keys"]["exceeds_request"] is False  # 0 is not greater than 0


def test_pid_order_is_priority_then_processes(capsys):
    report = rank(capsys, SUMMARY / "worker-1.json", SUMMARY / "worker-1-pods.yaml", "pid.available")
    counts = [p["keys"]["processes"] for p in report["pods"]]
    assert counts == sorted(counts, reverse=True) and "exceeds_request" not in report["pods"][0]["keys"]


def test_text_output_names_the_keys(capsys):
    assert main(["eviction", "rank", "--summary", str(SUMMARY / "memory-pressure.json"),
                 "--pods", str(SUMMARY / "memory-pods.yaml"), "--signal", "memory.available"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())  # long lines wrap with a hanging indent
    assert "Keys, in order: over its request? (yes first), priority (lower first), working set - request" in flat
    assert "<- evicted first" in out and "never reads it" in flat
    assert max(len(line) for line in out.splitlines()) <= 80


@pytest.mark.parametrize("signal", ["nodefs.inodesFree", "imagefs.inodesFree"])
def test_text_output_for_inode_signals(capsys, signal):
    # rankDiskPressureFunc(…, resourceInodes): the request compared is the pod's inode request (always 0), and
    # disk() subtracts the ephemeral-storage request from the inode count. The text table names both.
    assert main(["eviction", "rank", "--summary", str(SUMMARY / "disk-pressure.json"),
                 "--pods", str(SUMMARY / "disk-pods.yaml"), "--signal", signal]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert f"Ranking for {signal} on node" in out
    assert "inodes - ephemeral-storage request (larger first)" in flat and "inodes - eph. req." in out
    assert "<- evicted first" in out and max(len(line) for line in out.splitlines()) <= 80
    report = rank(capsys, SUMMARY / "disk-pressure.json", SUMMARY / "disk-pods.yaml", signal)
    assert report["pods"][0]["keys"]["resource"] == "inodes"
    assert all(p["pod"] in out for p in report["pods"])


def _pods(tmp_path, edit):
    doc = yaml.safe_load((SUMMARY / "memory-pods.yaml").read_text())
    edit(doc["items"])
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_pods_are_matched_by_uid_not_name(tmp_path, capsys):
    def rename(items):
        items[0]["metadata"]["name"] = "renamed"  # same UID: still matched

    def new_uid(items):
        items[1]["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000"  # its stats no longer match

    report = rank(capsys, SUMMARY / "memory-pressure.json", _pods(tmp_path, rename), "memory.available")
    assert all(p["keys"]["has_stats"] for p in report["pods"])
    report = rank(capsys, SUMMARY / "memory-pressure.json", _pods(tmp_path, new_uid), "memory.available")
    assert report["pods"][0]["pod"] == "default/burstable-below-requests" and not report["pods"][0]["keys"]["has_stats"]
    assert report["stats_without_pod"] == ["default/burstable-below-requests (uid burstable-below-requests)"]


def test_finished_and_foreign_pods_are_left_out(tmp_path, capsys):
    def edit(items):
        items[0]["status"]["phase"] = "Succeeded"
        items[1]["spec"]["nodeName"] = "other-node"

    report = rank(capsys, SUMMARY / "memory-pressure.json", _pods(tmp_path, edit), "memory.available")
    assert len(report["pods"]) == 3
    assert [item["reason"] for item in report["left_out"]] == ["phase Succeeded: not an active pod",
                                                               "runs on node other-node, not test-node"]


@pytest.mark.parametrize("args, message", [
    (["--summary", "nope.json", "--pods", "P", "--signal", "memory.available"], "nope.json: cannot read file"),
    (["--summary", "S", "--pods", "P", "--signal", "memory.avail"], "--signal: unsupported eviction signal memory.avail"),
    (["--summary", "BAD_JSON", "--pods", "P", "--signal", "memory.available"], "invalid JSON"),
    (["--summary", "BAD_FIELD", "--pods", "P", "--signal", "memory.available"], "node.memory.availableBytes: expected a non-negative integer"),
    (["--summary", "S", "--pods", "NODE", "--signal", "memory.available"], "kind: no Pod in this file"),
    (["--summary", "S", "--pods", "NO_UID", "--signal", "memory.available"], "metadata.uid: missing"),
])
def test_rank_bad_input_is_one_line_exit_2(tmp_path, capsys, args, message):
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{")
    bad_field = tmp_path / "field.json"
    doc = json.loads((SUMMARY / "memory-pressure.json").read_text())
    doc["node"]["memory"]["availableBytes"] = -1
    bad_field.write_text(json.dumps(doc))
    no_uid = tmp_path / "no-uid.yaml"
    no_uid.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n")
    files = {"S": SUMMARY / "memory-pressure.json", "P": SUMMARY / "memory-pods.yaml", "BAD_JSON": bad_json,
             "BAD_FIELD": bad_field, "NODE": EXAMPLES / "nodes" / "node.yaml", "NO_UID": no_uid}
    args = [str(files.get(a, a)) for a in args]
    assert main(["eviction", "rank", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mini-kubelet: ") and message in err


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    ("node: [", "invalid YAML"),
    ("node: {capacity: {memory: 4Gi}}", "node.capacity.nodefs: required"),
])
def test_run_bad_input_is_one_line_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "s.yaml"
    if content is not None:
        path.write_text(content)
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and (message in err or (content is None and "cannot read file" in err))


def test_plot_does_not_overwrite_a_file_that_is_not_an_image(tmp_path, capsys):
    notes = tmp_path / "notes.png"
    notes.write_text("my notes")
    assert main(["run", str(EXAMPLES / "scenarios" / "pids.yaml"), "--plot", str(notes)]) == 2
    assert "not overwriting it" in capsys.readouterr().err and notes.read_text() == "my notes"
    assert main(["run", str(EXAMPLES / "scenarios" / "pids.yaml"), "--plot", str(tmp_path / "x.txt")]) == 2


def test_the_ranking_says_it_is_on_the_stats_given(capsys, stdin):
    """The eviction manager ranks on the Summary of the pass that evicts (eviction_manager.go synchronize calls
    summaryProvider.Get with updateStats at each pass, every 10 s: kubelet.go evictionMonitoringPeriod, v1.27.7)."""
    stdin((SUMMARY / "memory-pods.yaml").read_text())
    assert main(["eviction", "rank", "--summary", str(SUMMARY / "memory-pressure.json"), "--pods", "-",
                 "--signal", "memory.available"]) == 0
    flat = " ".join(capsys.readouterr().out.split())
    assert flat.endswith("Note: ranked on the stats given (taken 2023-01-01T08:01:00Z), not on those of the moment of "
                         "an eviction: the kubelet ranks on the Summary it reads at the pass that evicts (a fresh one "
                         "every 10 s), when usage, and with it the order, may differ.")
    report = rank(capsys, SUMMARY / "memory-pressure.json", SUMMARY / "memory-pods.yaml", "memory.available")
    assert report["stats_time"] == "2023-01-01T08:01:00Z" and report["note"].startswith("ranked on the stats given, ")


def test_a_built_in_priority_class_without_a_priority_is_resolved_before_ranking(capsys, stdin):
    """As the API server's Priority admission sets it (plugin/pkg/admission/priority/admission.go, v1.27.7): the pod
    is critical (priority 2000000000 >= SystemCriticalPriority), so never evicted, and ranked by that priority."""
    text = (SUMMARY / "memory-pods.yaml").read_text()
    first = "    priority: -1\n"
    assert first in text
    stdin(text.replace(first, "    priorityClassName: system-cluster-critical\n", 1))
    assert main(["eviction", "rank", "--summary", str(SUMMARY / "memory-pressure.json"), "--pods", "-",
                 "--signal", "memory.available", "--output", "json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    pod = next(p for p in report["pods"] if p["pod"] == "default/guaranteed-low-priority-high-usage")
    assert pod["critical"] and pod["keys"]["priority"] == 2000000000
    assert ("Pod default/guaranteed-low-priority-high-usage: priority 2000000000 from priorityClassName "
            "system-cluster-critical") in err
