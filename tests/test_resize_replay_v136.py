"""In-place resize replayed (v1.36): the resize event, the allocation manager's decision, the cgroup writes.

The decision and the actuation are the ported upstream functions (tests/test_allocation_v136.py and
tests/test_kuberuntime_resize_v136.py compare them with v1.36.5); these tests check the replay's wiring.
"""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mini_kubelet import features
from mini_kubelet.sim.lifecycle.expect import check_lifecycle_expect
from mini_kubelet.sim.lifecycle.replay import run_lifecycle
from mini_kubelet.sim.lifecycle.scenario import load_lifecycle_scenario

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples" / "scenarios").glob("lifecycle-resize-*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_resize_example_passes_its_expect_block(path):
    assert "--kubernetes-version 1.36" in path.read_text().split("replay:")[0]
    timeline = run_lifecycle(path)
    checked, failures = check_lifecycle_expect(timeline)
    assert failures == [] and checked >= 3


def replay(doc):
    doc = copy.deepcopy(doc)
    doc.pop("kubernetesVersion", None)
    doc.pop("expect", None)
    with features.release_profile("1.36"):
        return run_lifecycle(load_lifecycle_scenario(doc, "test.yaml", ROOT, "test"))


def example(name):
    return yaml.safe_load((ROOT / "examples" / "scenarios" / f"lifecycle-resize-{name}.yaml").read_text())


def test_cpu_up_writes_the_pod_cgroup_before_the_container():
    timeline = replay(example("cpu-up"))
    assert [(w["cgroup"], w["file"]) for w in timeline.cgroups] == [
        ("/kubepods/burstable/podweb", "cpu.max"), ("/kubepods/burstable/podweb", "cpu.weight"),
        ("app", "cpu.weight"), ("app", "cpu.max"), ("app", "memory.max")]
    assert {w["time"] for w in timeline.cgroups} == {20}
    assert timeline.restarts == []


def test_deferred_writes_nothing_until_the_other_pod_has_ended():
    timeline = replay(example("deferred"))
    assert timeline.cgroups and min(w["time"] for w in timeline.cgroups) == 20
    pending = [r for r in timeline.resizes if r["type"] == "PodResizePending"]
    assert [(r["time"], r["status"], r["reason"]) for r in pending] == [(10, "True", "Deferred"), (20, "removed", "")]


def test_a_pod_that_ends_frees_its_room_before_it_leaves_the_api():
    """v1.36.5 Kubelet.HandlePodReconcile retries the pending resizes when a pod's status turns terminal (trigger
    pod_terminated): batch is Failed at 20s and leaves the API at 21s; the resize is allocated at 20s."""
    timeline = replay(example("deferred"))
    assert any(n["time"] == 21 and "removed from the API" in n["text"] for n in timeline.happenings)
    started = [e["time"] for e in timeline.events if e["reason"] == "ResizeStarted"]
    assert started == [20]


def test_without_room_freed_the_resize_stays_deferred():
    doc = example("deferred")
    doc["events"] = doc["events"][:1]
    timeline = replay(doc)
    assert timeline.cgroups == []
    assert [(r["type"], r["reason"]) for r in timeline.resizes] == [("PodResizePending", "Deferred")]


def test_a_deferred_resize_is_retried_by_the_ticker_and_its_pod_synced(monkeypatch):
    """v1.36.5 allocation manager.Run: the ticker retries the pending resizes 3 min after the last retry (here the
    resize's own, at 10 s), and a retry that leaves a new condition (its lastProbeTime) calls triggerPodSync:
    a SyncPod of the Pod at 3m10s and 6m10s, beside its resyncs. The status manager writes no status for a
    probe time alone (isPodStatusByKubeletEqual compares a condition's status, reason and message)."""
    from mini_kubelet.allocation.allocation_manager import Manager
    from mini_kubelet.kubelet_sync import KubeletSyncer
    retries, syncs = [], []
    retry, sync = Manager.retry_pending_resizes, KubeletSyncer.sync_pod

    def recorded_retry(self, trigger):
        retries.append((int((self.status_manager.clock.elapsed()).total_seconds()), trigger))
        return retry(self, trigger)

    def recorded_sync(self, ctx, update_type, pod, *args):
        syncs.append((int(self.clock.elapsed().total_seconds()), pod.metadata.name))
        return sync(self, ctx, update_type, pod, *args)
    monkeypatch.setattr(Manager, "retry_pending_resizes", recorded_retry)
    monkeypatch.setattr(KubeletSyncer, "sync_pod", recorded_sync)
    doc = example("deferred")
    doc["events"], doc["duration"] = doc["events"][:1], "7m"
    timeline = replay(doc)
    assert retries == [(10, "pod_updated"), (190, "periodic_retry"), (370, "periodic_retry")]
    assert (190, "api") in syncs and (370, "api") in syncs
    assert [(r["time"], r["type"], r["reason"]) for r in timeline.resizes] == [(10, "PodResizePending", "Deferred")]


def test_infeasible_without_the_static_cpu_manager_applies():
    doc = example("infeasible")
    del doc["node"]
    doc["duration"] = "2m"  # the condition goes at the resync after the resize
    timeline = replay(doc)
    assert [r["type"] for r in timeline.resizes] == ["PodResizeInProgress", "PodResizeInProgress"]
    assert ("/kubepods/poddb", "cpu.max") in [(w["cgroup"], w["file"]) for w in timeline.cgroups]


def test_a_memory_limit_under_the_usage_is_an_error_and_nothing_is_lowered():
    doc = example("memory-down")
    doc["events"][0]["resize"]["memoryUsage"]["redis"] = "400Mi"
    timeline = replay(doc)
    errors = [r for r in timeline.resizes if r["reason"] == "Error"]
    assert errors and "cannot decrease memory limits" in errors[0]["message"]
    assert ("redis", "memory.max") not in [(w["cgroup"], w["file"]) for w in timeline.cgroups]


def test_in_progress_stays_until_the_next_sync_as_v1_36_5_syncpod_checks_it_first():
    """v1.36.5 pkg/kubelet/kubelet.go Kubelet.SyncPod sets or clears PodResizeInProgress before the runtime's sync:
    the sync that writes the cgroups leaves it set, and the Pod's next sync clears it, with the event
    ResizeCompleted. That sync comes from the PLEG: doPodResizeAction asks it to read the Pod again, and its next
    relist, a second later, sends a PodSync (pleg/generic.go reconcilePodRecord). Clearing the condition after the
    writes, in the same sync, would remove it at 20s; waiting for the Pod's resync, at 81s."""
    timeline = replay(example("cpu-up"))
    writes = {w["time"] for w in timeline.cgroups}
    assert [(r["time"], r["status"]) for r in timeline.resizes] == [(20, "True"), (21, "removed")] and writes == {20}
    completed = [e for e in timeline.events if e["reason"] == "ResizeCompleted"]
    assert [(e["time"], e["type"]) for e in completed] == [(21, "Normal")] and '"generation":2' in completed[0]["message"]


def test_a_failed_resize_is_an_error_once_with_one_resize_error_event():
    """Kubelet.SyncPod (v1.36.5) sets reason Error after a failed ResizePodInPlace; the event ResizeError comes only
    when the condition changed, so the retries at each later sync (the same error) add none."""
    doc = example("memory-down")
    doc["events"][0]["resize"]["memoryUsage"]["redis"] = "400Mi"
    doc["duration"] = "3m"
    timeline = replay(doc)
    errors = [e for e in timeline.events if e["reason"] == "ResizeError"]
    assert len(errors) == 1 and errors[0]["type"] == "Warning" and "cannot decrease memory limits" in errors[0]["message"]
    assert [r["reason"] for r in timeline.resizes if r["status"] == "True"] == ["", "Error"]


def test_a_replay_without_resize_events_is_not_wired():
    doc = example("cpu-up")
    doc["events"] = []
    timeline = replay(doc)
    assert timeline.resizes == [] and timeline.cgroups == []


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mini_kubelet", "run", *args], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_v1_27_refuses_a_resize_event_in_one_line_naming_the_gate():
    done = run_cli("examples/scenarios/lifecycle-resize-cpu-up.yaml", "--kubernetes-version", "1.27")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "events[0].resize" in line and "InPlacePodVerticalScaling" in line and "1.27" in line


@pytest.mark.parametrize("change, where", [
    (lambda e: e["resize"]["containers"].update(nope={"limits": {"cpu": "1"}}), "events[0].resize.containers.nope"),
    (lambda e: e["resize"]["containers"]["app"].update(limits={"ephemeral-storage": "1Gi"}),
     "events[0].resize.containers.app.limits.ephemeral-storage"),
    (lambda e: e["resize"].update(pod="ghost"), "events[0].resize.pod"),
    (lambda e: e["resize"]["containers"]["app"].update(requests={"cpu": "3"}), "events[0].resize.containers.app"),
    (lambda e: e["resize"]["containers"]["app"].update(requests={"cpu": "2", "memory": "256Mi"}),
     "events[0].resize.containers: the API server refuses it: the Pod's QoS class would change from Burstable to Guaranteed"),
])
def test_a_bad_resize_event_names_its_field(tmp_path, change, where):
    doc = example("cpu-up")
    change(doc["events"][0])
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    done = run_cli(str(path))
    assert done.returncode == 2 and where in done.stderr and "Traceback" not in done.stderr
