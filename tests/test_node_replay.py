"""Chapter 5: the one-node replay (`replay: node`), every chapter wired into one Kubelet.

Each behaviour asserted names the upstream code it follows.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from mini_kubelet import features
from mini_kubelet.cmd.main import main
from mini_kubelet.sim.node.replay import NodeReplay, run_node
from mini_kubelet.sim.node.scenario import load_node_scenario
from mini_kubelet.sim.node.trace import human_duration
from mini_kubelet.sim.reader import scenario_profile
from mini_kubelet.sim.node.usage import first_reach
from mini_kubelet.sim.series import PAGE_SIZE, Series

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch5

SCENARIOS = EXAMPLES / "scenarios"
NODE_EXAMPLES = sorted(p for p in SCENARIOS.glob("*.yaml") if yaml.safe_load(p.read_text()).get("replay") == "node")
Mi, Gi = 2**20, 2**30

BASE = {"replay": "node", "duration": "5m",
        "node": {"name": "n1", "capacity": {"memory": "4Gi", "cpu": "4", "nodefs": "100Gi", "inodes": 6553600,
                                            "maxpid": 4194304},
                 "usage": {"memory": "600Mi", "nodefs": "20Gi", "inodes": 400000, "pids": 300}},
        "pods": []}


def pod(name: str, *, requests=None, limits=None, **entry) -> dict:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    container = {"name": "app", "image": "app:1", **({"resources": resources} if resources else {})}
    return {"manifest": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                         "spec": {"containers": [container]}}, **entry}


def scenario(**changes):
    doc = copy.deepcopy(BASE)
    for key, value in changes.items():
        doc[key] = value
    return load_node_scenario(doc, "<test>", Path("."), "test")


def run_example(name: str):
    from mini_kubelet.sim.lifecycle.scenario import read_scenario
    doc, where, base, stem = read_scenario(SCENARIOS / name)
    return run_node(load_node_scenario(doc, where, base, stem))


# --- the loader: one line naming the file and the field, exit code 2 ---

@pytest.mark.parametrize("change, field", [
    ({"pods": [pod("web", colour="blue")]}, "pods[0].colour"),
    ({"pods": [pod("web", count=3)]}, "pods[0].count"),
    ({"pods": [pod("web", run={"sidecar": {"after": "1m"}})]}, "pods[0].run.sidecar"),
    ({"pods": [pod("web", run={"app": {"exitCode": 1}})]}, "pods[0].run.app.after"),
    ({"pods": [pod("web", source="kubectl")]}, "pods[0].source"),
    ({"pods": [pod("web", at="10m")]}, "pods[0].at"),
    ({"pods": [pod("web", usage={"memory": "lots"})]}, "pods[0].usage.memory"),
    ({"duration": "8d"}, "duration"),
    ({"events": [{"at": "1m", "deletePod": {"pod": "nobody"}}]}, "events[0].deletePod.pod"),
    ({"events": [{"at": "1m", "explode": {}}]}, "events[0].explode"),
    ({"expect": {"evictions": [{"at": "1m"}]}}, "expect.evictions[0].pod"),
])
def test_bad_input_names_the_file_and_the_field(tmp_path, capsys, change, field):
    doc = copy.deepcopy(BASE)
    doc.update(change)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and field in err[0]


@pytest.mark.parametrize("kubelet, field", [
    ({"maxPods": -1}, "node.kubelet.maxPods"),
    ({"imageGCHighThresholdPercent": 70, "imageGCLowThresholdPercent": 80}, "node.kubelet.imageGCLowThresholdPercent"),
    ({"evictionHard": "memory.available<lots"}, "node.kubelet.evictionHard"),
    ({"colour": 1}, "node.kubelet.colour"),
])
def test_bad_kubelet_settings_name_their_field(tmp_path, capsys, kubelet, field):
    """Upstream: pkg/kubelet/apis/config/validation/validation.go ValidateKubeletConfiguration (the GC percents)"""
    doc = copy.deepcopy(BASE)
    doc["node"]["kubelet"] = kubelet
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["run", str(path)]) == 2
    assert field in capsys.readouterr().err


def test_count_writes_many_pods_from_one_entry():
    sc = scenario(pods=[pod("web-{i}", count=110, requests={"cpu": "10m"})])
    assert [p.name for p in sc.pods][:3] == ["web-1", "web-2", "web-3"] and len(sc.pods) == 110
    assert len({p.plan.pod.metadata.uid for p in sc.pods}) == 110


def test_the_node_reports_allocatable_after_reservations_and_the_hard_threshold():
    """Upstream: pkg/kubelet/nodestatus/setters.go MachineInfo (allocatable = capacity - reserved - evictionHard)"""
    doc = copy.deepcopy(BASE)
    doc["node"]["kubelet"] = {"systemReserved": {"memory": "500Mi"}, "maxPods": 20}
    sc = load_node_scenario(doc, "<test>", Path("."), "t")
    assert sc.node.status.allocatable["memory"] == f"{(4096 - 500 - 100) * 1024}Ki"
    assert sc.node.status.allocatable["pods"] == "20"


# --- the kernel's OOM kill at the container's own limit ---

@pytest.mark.parametrize("series, level, expected", [
    (Series([(0, 100)]), 100, 0),
    (Series([(0, 100)]), 101, None),
    (Series([(0, 10), (30, 200)]), 150, 30),
    (Series([(0, 0), (100, 100 * PAGE_SIZE)], ramp=True, unit=PAGE_SIZE), 50 * PAGE_SIZE, 50),
    (Series([(0, 0), (100, 100 * PAGE_SIZE)], ramp=True, unit=PAGE_SIZE), 50 * PAGE_SIZE + 1, 51),
    (Series([(10, 5 * PAGE_SIZE), (20, 10 * PAGE_SIZE)], ramp=True, unit=PAGE_SIZE), 4 * PAGE_SIZE, 10),
])
def test_first_reach(series, level, expected):
    assert first_reach(series, level) == expected
    if expected is not None:
        assert series.at(expected) >= level and (expected == 0 or series.at(expected - 1) < level)


def test_a_container_at_its_limit_is_oom_killed_and_restarted_with_back_off():
    """The kernel kills at memory.max (exit 137, OOMKilled); the kubelet restarts the container, waiting 10 s,
    then 20 s, ... (pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff; backOffPeriod 10 s in kubelet.go).
    No kubelet event for the kill: pkg/kubelet/oom/oom_watcher_linux.go records only system OOMs."""
    trace = run_example("node-guaranteed-oom.yaml")
    kills = [k["time"] for k in trace.oom_kills]
    life = first_reach(Series([(0, 600 * Mi), (180, 1200 * Mi)], ramp=True, unit=PAGE_SIZE), Gi)
    waits = [b - a - life for a, b in zip(kills, kills[1:])]
    assert waits[0] <= 2  # the first restart is not backed off
    assert [10 <= waits[1] <= 13, 20 <= waits[2] <= 23] == [True, True]
    assert {k["oomScoreAdj"] for k in trace.oom_kills} == {-997}  # Guaranteed (pkg/kubelet/qos/policy.go)
    assert not [e for e in trace.events if e["reason"] in ("OOMKilling", "SystemOOM")]
    db = next(p for p in trace.pods if p["name"] == "db")
    assert db["restarts"] == len(kills) and db["phase"] == "Running"


def test_the_kernel_kills_a_guaranteed_pod_while_eviction_waits_for_someone_else():
    """Conditions ignore grace periods, evictions wait for them (eviction_manager.go synchronize):
    db is OOM-killed inside the soft threshold's grace period; batch, ranked first, is evicted after it."""
    trace = run_example("node-guaranteed-oom.yaml")
    pressure = trace.conditions[0]["from"]
    assert pressure < trace.oom_kills[0]["time"] < trace.evictions[0]["time"]
    assert trace.evictions[0]["time"] - pressure >= 90
    assert [e["pod"] for e in trace.evictions] == ["batch"]


# --- eviction through the Kubelet, and admission under pressure ---

def test_an_evicted_pod_is_killed_by_its_worker_and_ends_failed_with_the_managers_message():
    """Upstream: eviction_manager.go evictPod (status Failed, reason Evicted, the message, a DisruptionTarget
    condition, the Evicted event) through pod_workers.go killPodNow (the Killing event of the kubelet's kill)."""
    replay = NodeReplay(_load("node-evicted-replacement.yaml"))
    trace = replay.run()
    evicted = trace.evictions[0]
    stored = replay.server.by_name("scraper")
    assert (stored.status.phase, stored.status.reason) == ("Failed", "Evicted")
    assert stored.status.message == evicted["message"]
    assert evicted["message"].startswith("The node was low on resource: memory. Threshold quantity: 100Mi, available: ")
    assert evicted["message"].endswith("Container scrape was using 2653864Ki, request is 0, has larger consumption of memory. ")
    # mergePodStatus sends the shared DisruptionTarget condition once the phase is terminal and nothing runs
    condition = next(c for c in stored.status.conditions if c.type == "DisruptionTarget")
    assert (condition.status, condition.reason) == ("True", "TerminationByKubelet")
    reasons = [(e["reason"], e["object"]) for e in trace.events if e["time"] == evicted["time"]]
    assert ("EvictionThresholdMet", "node/worker-1") in reasons and ("Evicted", "pod/scraper") in reasons
    assert ("Killing", "pod/scraper") in reasons
    assert not any(c.state == "running" for c in replay.kubelet.runtime.containers.values()
                   if c.pod_uid == stored.metadata.uid)


def test_the_replacement_is_rejected_under_memory_pressure_then_pending_on_the_taint():
    """Upstream: eviction_manager.go Admit (BestEffort refused under MemoryPressure) and kubelet.go rejectPod
    (Failed, "Pod was rejected: " + message); the scheduler's TaintToleration filter keeps later ones away."""
    replay = NodeReplay(_load("node-evicted-replacement.yaml"))
    trace = replay.run()
    first = trace.rejections[0]
    assert (first["reason"], first["message"], first["handler"]) == ("Evicted", "The node had condition: [MemoryPressure]. ", "eviction")
    stored = replay.server.by_name(first["pod"])
    assert (stored.status.phase, stored.status.message) == ("Failed", "Pod was rejected: The node had condition: [MemoryPressure]. ")
    assert any(line["kind"] == "pending" for line in trace.timeline)
    assert trace.timeline[-1]["kind"] in ("bind", "condition", "arrive")


def test_disk_pressure_refuses_every_pod_but_critical_ones_and_image_gc_frees_space():
    """Upstream: eviction_manager.go Admit (DiskPressure: every pod refused; critical pods always admitted)
    and images/image_gc_manager.go GarbageCollect (above 85% used, free down to 80%)."""
    static = pod("kube-proxy", source="file", at="2m", requests={"cpu": "10m"})
    web = pod("web", at="2m", requests={"cpu": "100m", "memory": "100Mi"})
    sc = scenario(duration="10m", pods=[pod("runner", usage={"memory": "100Mi"}), static, web],
                  events=[{"at": "1m", "pullImage": {"name": "ml/huge:1", "size": "72Gi"}}])
    trace = run_node(sc)
    assert [(r["pod"], r["message"]) for r in trace.rejections] == [("web", "The node had condition: [DiskPressure]. ")]
    assert any(p["name"].startswith("kube-proxy") and p["status"] == "Running" for p in trace.pods)
    assert trace.conditions[0]["type"] == "DiskPressure"


def test_max_pods_rejects_the_pod_over_the_limit():
    """Upstream: pkg/kubelet/lifecycle/predicate.go (the scheduler's fit: pods counted against allocatable pods)"""
    doc = copy.deepcopy(BASE)
    doc["node"]["kubelet"] = {"maxPods": 2}
    doc["pods"] = [pod("p-{i}", count=3, requests={"cpu": "10m"})]
    trace = run_node(load_node_scenario(doc, "<test>", Path("."), "t"))
    assert [(r["pod"], r["reason"]) for r in trace.rejections] == [("p-3", "OutOfpods")]
    assert trace.rejections[0]["message"] == "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"


def test_crash_loop_keeps_the_condition_without_evicting():
    """A condition is raised as soon as a threshold is crossed and held evictionPressureTransitionPeriod;
    a soft threshold evicts only after its grace period (eviction_manager.go synchronize, helpers.go
    nodeConditionsObservedSince, thresholdsMetGracePeriod)."""
    trace = run_example("node-crash-loop-pressure.yaml")
    assert trace.evictions == [] and len(trace.conditions) >= 3
    assert [r["pod"] for r in trace.rejections] == ["report"]


def test_container_gc_keeps_one_dead_instance_per_container():
    """Upstream: pkg/kubelet/kuberuntime/kuberuntime_gc.go evictContainers (MaxPerPodContainer 1, the default)"""
    replay = NodeReplay(_load("node-crash-loop-pressure.yaml"))
    replay.run()
    dead = [c for c in replay.kubelet.runtime.containers.values() if c.name == "load" and c.state != "running"]
    assert 1 <= len(dead) <= 2  # GC runs every minute: one kept, perhaps one more since its last pass


# --- chapter 3's values in the trace ---

def test_every_container_has_its_cgroup_values_and_oom_score():
    """Upstream: pkg/kubelet/kuberuntime/kuberuntime_container_linux.go generateLinuxContainerResources and
    pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust (BestEffort 1000, Guaranteed -997)"""
    trace = run_example("node-guaranteed-oom.yaml")
    rows = {r["pod"]: r for r in trace.containers}
    assert (rows["db"]["qosClass"], rows["db"]["oomScoreAdj"], rows["db"]["memoryLimit"]) == ("Guaranteed", -997, Gi)
    assert (rows["db"]["cpuShares"], rows["db"]["cpuQuota"], rows["db"]["cpuPeriod"]) == (512, 50000, 100000)
    assert (rows["batch"]["qosClass"], rows["batch"]["oomScoreAdj"], rows["batch"]["cpuShares"]) == ("BestEffort", 1000, 2)


# --- output ---

@pytest.mark.parametrize("seconds, text", [  # apimachinery/pkg/util/duration/duration_test.go TestHumanDuration*
    (1, "1s"), (70, "70s"), (190, "3m10s"), (70 * 60, "70m"), (47 * 3600, "47h"), (49 * 3600, "2d1h"),
    ((8 * 24 + 2) * 3600, "8d"), (367 * 24 * 3600, "367d"), ((365 * 2 * 24 + 25) * 3600, "2y1d"),
    ((365 * 8 * 24 + 2) * 3600, "8y"), (-2, "<invalid>"), (0, "0s"), (119, "119s"), (120, "2m"), (121, "2m1s"),
    (599, "9m59s"), (600, "10m"), (601, "10m"), (10799, "179m"), (10800, "3h"), (10860, "3h1m"), (28799, "7h59m"),
    (28800, "8h"), (2 * 86400 - 1, "47h"), (2 * 86400, "2d"), (8 * 86400 - 1, "7d23h"), (8 * 86400, "8d"),
    (2 * 365 * 86400 - 1, "729d"), (2 * 365 * 86400, "2y"), (2 * 365 * 86400 + 86400, "2y1d"),
    (8 * 365 * 86400 - 1, "7y364d"), (8 * 365 * 86400, "8y"), (9 * 365 * 86400, "9y"),
])
def test_human_duration(seconds, text):
    assert human_duration(seconds) == text


def test_the_same_scenario_gives_the_same_trace_byte_for_byte(capsys):
    path = str(SCENARIOS / "node-crash-loop-pressure.yaml")
    outputs = []
    for _ in range(2):
        main(["run", path, "--output", "json"])
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    data = json.loads(outputs[0])
    assert data["version"] == "mini-kubelet.node/v1" and data["expect"]["failures"] == []


def test_text_report_has_the_kubectl_tables(capsys):
    assert main(["run", str(SCENARIOS / "node-evicted-replacement.yaml")]) == 0
    out = capsys.readouterr().out
    assert "LAST SEEN AT  TYPE     REASON" in out and "NAME           READY  STATUS   RESTARTS  AGE" in out
    assert "expect: 6 checks, all met" in out


def test_the_events_and_the_timeline_use_one_clock(capsys):
    """An eviction's `Evicted` event and a rejection's show the time the timeline gives them, not a time before the end."""
    assert main(["run", str(SCENARIOS / "node-evicted-replacement.yaml")]) == 0
    out = capsys.readouterr().out
    timeline = out.split("\ntimeline", 1)[1].split("\n\n", 1)[0]
    events = out.split("\nkubectl get events", 1)[1].split("\n\n", 1)[0]
    evicted = {}
    for line in timeline.splitlines():
        match = re.match(r"  (\S+)\s+(\S+) (?:evicted|rejected at admission)", line)
        if match:
            evicted[match.group(2)] = match.group(1)
    shown = dict((m.group(2), m.group(1)) for m in re.finditer(r"^  (\S+)\s+Warning\s+Evicted\s+pod/(\S+)", events, re.M))
    assert len(evicted) == 5 and shown == evicted


def test_the_description_names_the_time_the_replay_reports_pressure():
    """node-guaranteed-oom.yaml's description (printed on chapter 5's page) gives the pass that first sees the pressure."""
    from mini_kubelet.sim.series import format_duration

    trace = run_example("node-guaranteed-oom.yaml")
    stated = re.search(r"seen by the eviction pass at (\S+): MemoryPressure", trace.scenario.description).group(1)
    assert stated == format_duration(trace.conditions[0]["from"]) == "1m40s"
    assert stated in {format_duration(row[0]) for row in trace.signals}


@pytest.mark.parametrize("name, soft", [("node-guaranteed-oom.yaml", Gi), ("node-crash-loop-pressure.yaml", 1536 * Mi)])
def test_the_plot_draws_the_signal_in_play_against_its_thresholds(name, soft):
    """Chapter 4's --plot: a panel for each signal whose threshold was met, its hard and soft thresholds drawn; no
    panel for nodefs, whose thresholds these replays never meet."""
    from mini_kubelet.sim.node.plot import node_panels

    panels = node_panels(run_example(name))
    assert [p["signal"] for p in panels] == ["memory.available"] and panels[0]["condition"] == "MemoryPressure"
    assert [(style, value) for _, value, style in panels[0]["lines"]] == [("hard", 100 * Mi), ("soft", soft)]
    assert any(value < soft for _, value in panels[0]["points"])

def test_a_wrong_expectation_exits_1(tmp_path, capsys):
    doc = yaml.safe_load((SCENARIOS / "node-guaranteed-oom.yaml").read_text())
    doc["expect"]["evictions"][0]["pod"] = "db"
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["run", str(path)]) == 1
    assert "evictions[0]: expected {at: 190, pod: db, signal: memory.available}, got {at: 190, pod: batch" in capsys.readouterr().out


@pytest.mark.parametrize("path", NODE_EXAMPLES, ids=lambda p: p.stem)
def test_every_node_example_meets_its_expect_block(path, capsys):
    assert main(["run", str(path)]) == 0, capsys.readouterr().out[-2000:]


def _load(name: str):
    from mini_kubelet.sim.lifecycle.scenario import read_scenario
    doc, where, base, stem = read_scenario(SCENARIOS / name)
    scenario_profile(doc, where)  # taken out: the test replays under it (in_profile)
    return load_node_scenario(doc, where, base, stem)


def in_profile(name: str):
    """The release the example names, for its loading and its replay."""
    from mini_kubelet.sim.lifecycle.scenario import read_scenario
    doc, where, _, _ = read_scenario(SCENARIOS / name)
    profile = scenario_profile(doc, where)
    return features.release_profile(*profile) if profile else contextlib.nullcontext()


def test_a_pass_without_pressure_reads_the_same_node_figures_from_the_aggregate():
    """The cheap pass: the node's observations from one aggregate of every Pod equal those from each Pod's stats
    (pkg/kubelet/eviction/helpers.go makeSignalObservations reads only node-level figures)."""
    from mini_kubelet.eviction import signals
    from mini_kubelet.sim.node.usage import NodeAggregate
    from mini_kubelet.sim.eviction.summary import build_summary
    web = pod("web", requests={"cpu": "100m", "memory": "100Mi"}, usage={"memory": {"ramp": {"0s": "50Mi", "3m": "90Mi"}},
                                                                         "rootfs": "1Gi", "logs": "200Mi", "inodes": 300})
    web["manifest"]["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}, {"name": "shm", "emptyDir": {"medium": "Memory"}}]
    web["usage"]["volumes"] = {"scratch": "2Gi", "shm": "64Mi"}
    replay = NodeReplay(scenario(pods=[web, pod("batch", usage={"memory": "300Mi", "pids": 40})]), skip_quiet_passes=False)
    compared = []
    original = replay._pass_summary

    def compare(active):
        pods = replay._measured(active)
        full, cheap = (build_summary(replay.sc, p, replay.store, replay.now(), replay.clock.now(), replay.node_usage)[0]
                       for p in (pods, [NodeAggregate(pods, replay.now())]))
        observed = [{k: (v.available, v.capacity) for k, v in signals.make_signal_observations(s)[0].items()}
                    for s in (full, cheap)]
        compared.append(observed[0] == observed[1] and len(observed[0]) >= 5)
        return original(active)
    replay._pass_summary = compare
    replay.run()
    assert len(compared) == 31 and all(compared)


@pytest.mark.parametrize("path", [p for p in NODE_EXAMPLES if p.stem.startswith("node-")], ids=lambda p: p.stem)
def test_skipping_idle_seconds_tells_the_same_story(path):
    """Kubelet(skip_idle_seconds=True) goes past the instants at which every relist, tick and housekeeping would do
    nothing. Stepped through every instant instead, the trace, the kubelet's log and its events are the same."""
    from mini_kubelet.cmd import run_node_report
    outcomes, steps = [], []
    for skip in (False, True):
        with in_profile(path.name):
            replay = NodeReplay(_load(path.name))
            if not skip:
                replay.kubelet.loop.idle_until = None
            loop_step, turns = replay.kubelet.loop.step, []
            replay.kubelet.loop.step = lambda: (turns.append(1), loop_step())
            trace = replay.run()
        outcomes.append((run_node_report.render_json(trace), replay.kubelet.handlers.log,
                         [(e.time, e.type, e.reason, e.involved, e.message) for e in replay.kubelet.recorder.events]))
        steps.append(len(turns))
    assert outcomes[0] == outcomes[1]
    assert steps[1] < steps[0] / 2  # the shortcut was taken


@pytest.mark.parametrize("path", [p for p in NODE_EXAMPLES if p.stem.startswith("node-")], ids=lambda p: p.stem)
def test_the_kubelets_sync_shortcuts_tell_the_same_story(path):
    """Kubelet(skip_settled_resyncs=True) settles resyncs that would change nothing and repeats syncs that would
    only meet the same back-offs. With every SyncPod run instead, the trace, the kubelet's log and its events are the same."""
    from mini_kubelet.cmd import run_node_report
    outcomes, generated = [], []
    for shortcuts in (False, True):
        with in_profile(path.name):
            replay = NodeReplay(_load(path.name))
            replay.kubelet.syncer.skip_settled_resyncs = shortcuts
            generate, calls = replay.kubelet.syncer.generate_api_pod_status, []
            replay.kubelet.syncer.generate_api_pod_status = lambda *args: (calls.append(1), generate(*args))[1]
            trace = replay.run()
        outcomes.append((run_node_report.render_json(trace), replay.kubelet.handlers.log,
                         [(e.time, e.type, e.reason, e.involved, e.message) for e in replay.kubelet.recorder.events]))
        generated.append(len(calls))
    assert outcomes[0] == outcomes[1]
    assert generated[1] < generated[0]  # SyncPod was run fewer times


def test_a_deleted_replicaset_pod_leaves_the_api_and_is_replaced():
    """kubectl delete: the kubelet stops the Pod, the status manager's syncPod deletes it once it is finished
    (status_manager.go canBeDeleted); its ReplicaSet counts it out at once (replica_set.go filterActivePods)."""
    replay = NodeReplay(scenario(pods=[pod("web-a", replicaSet="web", requests={"cpu": "10m"}, usage={"memory": "50Mi"})],
                                 events=[{"at": "1m", "deletePod": {"pod": "web-a", "gracePeriod": 5}}]))
    trace = replay.run()
    kinds = [(line["kind"], line["pod"]) for line in trace.timeline if line["kind"] in ("delete", "removed", "recreate")]
    assert kinds[0] == ("delete", "web-a") and ("removed", "web-a") in kinds and [k for k, _ in kinds].count("recreate") == 1
    assert replay.server.by_name("web-a") is None
    assert [p["status"] for p in trace.pods] == ["Running"] and trace.pods[0]["name"].startswith("web-")


def test_a_daemonset_file_is_its_pod_template_with_its_built_in_priority_resolved(capsys):
    """pods[].file holding a DaemonSet: the Pod its template makes (as show and admit read it), with spec.priority from
    system-node-critical as the API server's Priority admission sets it (plugin/pkg/admission/priority/admission.go
    admitPod, v1.27.7): critical, so DiskPressure admits it (eviction_manager.go Admit), while the static pod's own
    copy keeps no priority (no API server sees its file)."""
    daemonset = str(EXAMPLES / "cluster" / "daemonset-node-critical.yaml")
    static = pod("kube-proxy", source="file", at="2m", requests={"cpu": "10m"})
    static["manifest"]["spec"]["priorityClassName"] = "system-node-critical"
    sc = scenario(duration="10m", pods=[pod("runner", usage={"memory": "100Mi"}), {"file": daemonset, "at": "2m"},
                                        static, pod("web", at="2m", requests={"cpu": "100m"})],
                  events=[{"at": "1m", "pullImage": {"name": "ml/huge:1", "size": "72Gi"}}])
    err = capsys.readouterr().err
    assert "pods[1].file: DaemonSet kube-system/node-agent: read through its Pod template (spec.template)" in err
    assert "pods[1]: priority 2000001000 from priorityClassName system-node-critical" in err
    assert "pods[2]" not in err
    agent, proxy = sc.pods[1].plan.pod, sc.pods[2].plan.pod
    assert (agent.metadata.name, agent.spec.priority, proxy.spec.priority) == ("node-agent", 2000001000, None)
    trace = run_node(sc)
    assert [r["pod"] for r in trace.rejections] == ["web"]
    assert any(p["name"] == "node-agent" and p["status"] == "Running" for p in trace.pods)


# --- in-place resize on the node (v1.36): the kernel follows the cgroup, a restart the policy asks for ---

def resized(events, *pods, release="1.36"):
    """Replay BASE with these Pods and resize events under the release."""
    with features.release_profile(release):
        return run_node(scenario(pods=list(pods), events=events))


def test_a_raised_memory_limit_keeps_the_kernel_from_killing_the_container():
    """After the resize the kernel compares usage with the container's memory.max as written in place
    (kuberuntime_container.go updateContainerResources), not with the limit it started with."""
    growing = pod("web", requests={"cpu": "100m", "memory": "256Mi"}, limits={"memory": "512Mi"},
                  usage={"memory": {"ramp": {"0s": "100Mi", "4m": "900Mi"}}})
    raise_limit = [{"at": "1m", "resize": {"pod": "web", "containers": {"app": {"limits": {"memory": "1Gi"}}}}}]
    assert resized([], growing).oom_kills
    trace = resized(raise_limit, growing)
    assert trace.oom_kills == []
    assert [(w["time"], w["cgroup"], w["new"]) for w in trace.cgroups if w["file"] == "memory.max"] == [
        (60, "/kubepods/burstable/podweb", str(Gi)), (60, "app", str(Gi))]  # a limit that grows: the pod's first
    assert [(r["time"], r["status"]) for r in trace.resizes] == [(60, "True"), (61, "removed")]  # the PLEG's PodSync


def test_a_resize_whose_policy_is_restart_container_restarts_it():
    """resizePolicy RestartContainer for memory: computePodResizeAction kills the container and starts it with
    its new limit (kuberuntime_manager.go); the restart shows in kubectl get pods and the Killing event."""
    web = pod("web", requests={"cpu": "100m", "memory": "256Mi"}, limits={"memory": "512Mi"}, usage={"memory": "200Mi"})
    web["manifest"]["spec"]["containers"][0]["resizePolicy"] = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    trace = resized([{"at": "1m", "resize": {"pod": "web", "containers": {"app": {"limits": {"memory": "1Gi"}}}}}], web)
    assert next(p for p in trace.pods if p["name"] == "web")["restarts"] == 1
    assert any(e["reason"] == "Killing" and "resize requires restart" in e["message"] for e in trace.events)
    assert [(r["time"], r["type"], r["status"]) for r in trace.resizes][0] == (60, "PodResizeInProgress", "True")


@pytest.mark.parametrize("event, field", [
    ({"pod": "web", "containers": {"sidecar": {"limits": {"cpu": "1"}}}}, "events[0].resize.containers.sidecar"),
    ({"pod": "nobody", "containers": {"app": {"limits": {"cpu": "1"}}}}, "events[0].resize.pod"),
    ({"pod": "web", "containers": {"app": {"limits": {"nvidia.com/gpu": "1"}}}}, "events[0].resize.containers.app.limits"),
])
def test_a_bad_node_resize_event_names_its_field(tmp_path, capsys, event, field):
    doc = copy.deepcopy(BASE)
    doc.update(kubernetesVersion="1.36", pods=[pod("web", requests={"cpu": "100m"})], events=[{"at": "1m", "resize": event}])
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and field in err[0]


def test_v1_27_refuses_a_node_resize_in_one_line_naming_the_gate(capsys):
    """The gate InPlacePodVerticalScaling is alpha and off in 1.27: refused from the field tables, before the replay."""
    assert main(["run", str(SCENARIOS / "node-resize-after-eviction.yaml"), "--kubernetes-version", "1.27"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "events[0].resize" in line and "InPlacePodVerticalScaling" in line and "1.27" in line


@pytest.mark.parametrize("path", [p for p in NODE_EXAMPLES if p.stem.startswith("node-") and "resize" not in p.stem],
                         ids=lambda p: p.stem)
def test_statuses_sent_back_to_the_kubelet_change_nothing_without_a_resize(path):
    """The replay gives the API source's copy of each written status back to the kubelet (HandlePodReconcile) only
    with a resize event; with every status sent back, these replays report the same, event for event."""
    from mini_kubelet.cmd import run_node_report
    outcomes = []
    for back in (False, True):
        with in_profile(path.name):
            replay = NodeReplay(_load(path.name))
            replay.statuses_back = back
            trace = replay.run()
        outcomes.append((run_node_report.render_json(trace), run_node_report.render_text(trace),
                         [(e.time, e.type, e.reason, e.involved, e.message) for e in replay.kubelet.recorder.events]))
    assert outcomes[0] == outcomes[1]  # the kubelet's log differs: it lists each RECONCILE
