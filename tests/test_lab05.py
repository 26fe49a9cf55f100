"""Lab 05's node: worker-5's files are what a cluster prints, and the lab's story holds on them.

What tests/test_labs.py does for every lab (solutions pass, stubs are not done, the notebook is current) covers
Lab 05 too; this file checks what is new: the three example files, the node's helpers the checks use,
and the facts the lab and its instructor notes state about worker-5.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from kubernetes.client import V1Pod

from mini_kubelet import qos, stats, types
from mini_kubelet.cmd.main import main
from mini_kubelet.labs import capstone

from .conftest import EXAMPLES

pytestmark = [pytest.mark.labs, pytest.mark.ch5]

CLUSTER = EXAMPLES / "cluster"
FIRST, SECOND = "nightly-aggregate-28597440-b7xq2", "adhoc-query-5d9f8b6c4-kx7tw"


@pytest.fixture(scope="module")
def worker5():
    return capstone.load_node()


def test_the_pods_are_a_kubectl_list_with_what_a_cluster_prints(worker5):
    raw = yaml.safe_load((CLUSTER / "worker-5-pods.yaml").read_text())
    assert raw["kind"] == "List" and 20 <= len(raw["items"]) <= 40
    for item in raw["items"]:
        meta = item["metadata"]
        assert meta["uid"] and meta["managedFields"] and item["status"]["phase"] and item["status"]["qosClass"]
        assert item["spec"]["nodeName"] == "worker-5"
    owners = {ref["kind"] for item in raw["items"] for ref in item["metadata"].get("ownerReferences", [])}
    assert owners == {"DaemonSet", "ReplicaSet", "StatefulSet", "Job", "Pod", "Node"}  # Node: a static Pod's mirror
    pods, _, _ = worker5
    assert [p.metadata.uid for p in pods] == [i["metadata"]["uid"] for i in raw["items"]]
    assert all(qos.get_pod_qos(p) == p.status.qos_class for p in pods)  # the API server's class is the kubelet's


def test_the_summary_has_stats_for_every_running_pod_by_uid_and_none_for_the_finished_one(worker5):
    pods, summary, _ = worker5
    parsed = stats.load_summary(CLUSTER / "worker-5-summary.json")
    uids = {p.pod_ref.uid for p in parsed.pods}
    assert uids == {p.metadata.uid for p in pods if p.status.phase == "Running"}
    assert len(capstone.active_pods(pods)) == len(pods) - 1
    node = summary["node"]["memory"]
    pods_cgroup = next(c for c in summary["node"]["systemContainers"] if c["name"] == "pods")["memory"]
    assert pods_cgroup["workingSetBytes"] == sum(p["memory"]["workingSetBytes"] for p in summary["pods"])
    assert node["workingSetBytes"] > pods_cgroup["workingSetBytes"]  # the system's own use on top
    for entry in summary["pods"]:  # a Pod's cgroup holds its containers and its sandbox
        assert entry["memory"]["workingSetBytes"] > sum(c["memory"]["workingSetBytes"] for c in entry["containers"])


def test_the_kubelet_configuration_is_read_with_its_minimum_reclaim_and_allocatable_copy(worker5):
    _, _, kubelet = worker5
    assert kubelet["kind"] == "KubeletConfiguration"
    config = capstone.eviction_config(kubelet)
    described = [(t.signal, str(t.grace_period), t.min_reclaim is not None) for t in config.thresholds]
    assert described == [("memory.available", "0:00:00", True), ("nodefs.available", "0:00:00", False),
                         ("nodefs.inodesFree", "0:00:00", False), ("imagefs.available", "0:00:00", False),
                         ("memory.available", "0:02:00", True), ("allocatableMemory.available", "0:00:00", True)]
    assert config.max_pod_grace_period_seconds == 60 and config.pressure_transition_period.total_seconds() == 300


def test_the_answer_is_not_obvious(worker5):
    """The lab's premise: the first victim is neither the largest Pod nor a BestEffort one, and critical Pods
    are ranked among the others."""
    pods, summary, kubelet = worker5
    active = capstone.active_pods(pods)
    ranked = capstone.kubelet_rank(active, summary)
    by_name = {p.metadata.name: p for p in active}
    largest = max(summary["pods"], key=lambda p: p["memory"]["workingSetBytes"])["podRef"]["name"]
    assert ranked[0] == FIRST != largest
    assert qos.get_pod_qos(by_name[FIRST]) == "Burstable" and qos.get_pod_qos(by_name[ranked[1]]) == "BestEffort"
    critical = [i for i, name in enumerate(ranked) if types.is_critical_pod(by_name[name])]
    assert critical and min(critical) < len(ranked) // 2  # the static Pod ranks among the first
    assert [name for name, _ in capstone.kubelet_passes(active, summary, kubelet, 2)] == [FIRST, SECOND]


def test_the_same_files_rank_alike_on_the_command_line(worker5, capsys):
    pods, summary, _ = worker5
    code = main(["eviction", "rank", "--summary", str(CLUSTER / "worker-5-summary.json"),
                 "--pods", str(CLUSTER / "worker-5-pods.yaml"), "--signal", "memory.available", "--output", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["first_evicted"] == f"analytics/{FIRST}"
    assert [entry["pod"].split("/")[1] for entry in report["pods"]] == capstone.kubelet_rank(capstone.active_pods(pods), summary)
    assert [item["pod"] for item in report["left_out"]] == ["analytics/report-export-28597380-zz9kl"]


def test_after_eviction_frees_the_pods_working_set_moves_time_on_and_leaves_its_input_alone(worker5):
    pods, summary, _ = worker5
    before = json.dumps(summary, sort_keys=True)
    victim = next(p for p in pods if p.metadata.name == FIRST)
    freed = next(p for p in summary["pods"] if p["podRef"]["name"] == FIRST)["memory"]["workingSetBytes"]
    later = capstone.after_eviction(summary, victim)
    assert json.dumps(summary, sort_keys=True) == before
    assert later["node"]["memory"]["availableBytes"] == summary["node"]["memory"]["availableBytes"] + freed
    assert FIRST not in {p["podRef"]["name"] for p in later["pods"]}
    old, new = stats.summary_from_json(summary), stats.summary_from_json(later)
    assert (new.node.memory.time - old.node.memory.time).total_seconds() == capstone.NEXT_PASS
    capacity = lambda m: m["availableBytes"] + m["workingSetBytes"]  # noqa: E731
    assert capacity(later["node"]["memory"]) == capacity(summary["node"]["memory"])


def test_the_changed_inputs_print_as_what_changed_and_copy_what_they_change(worker5):
    pods, summary, kubelet = worker5
    changed = capstone.with_kubelet(kubelet, "no evictionMinimumReclaim", evictionMinimumReclaim=None)
    assert repr(changed) == "worker-5's kubelet config, no evictionMinimumReclaim" and "evictionMinimumReclaim" in kubelet
    lower = capstone.with_memory(capstone.with_imagefs(summary, "12Gi"), node="1Gi")
    assert repr(lower) == "worker-5's summary, filesystem available 12Gi, node memory available 1Gi"
    assert lower["node"]["memory"]["availableBytes"] == 2**30 != summary["node"]["memory"]["availableBytes"]
    moved = capstone.with_pod(pods, FIRST, "a new request", memory_request="1Gi")
    assert [p.metadata.name for p in moved] == [p.metadata.name for p in pods]
    original = next(p for p in pods if p.metadata.name == FIRST)
    assert original.spec.containers[0].resources.requests["memory"] == "256Mi"
    assert next(p for p in moved if p.metadata.name == FIRST).spec.containers[0].resources.requests["memory"] == "1Gi"
    new = capstone.with_new_pod(pods, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "uid": "x"},
                                       "spec": {"containers": [{"name": "x", "image": "x"}]}}, "one more")
    assert isinstance(new[-1], V1Pod) and new[-1].status.phase == "Pending" and len(new) == len(pods) + 1


def test_every_change_the_lab_names_is_a_real_kubelet_setting():
    source = (EXAMPLES.parent / "labs" / "src" / "05-a-node-under-pressure.py").read_text()
    settings = set(yaml.safe_load((CLUSTER / "worker-5-kubelet-config.yaml").read_text())) | {"evictionSoft"}
    named = set(re.findall(r"\b(eviction[A-Za-z]+|enforceNodeAllocatable)=", source))
    assert named and named <= settings
