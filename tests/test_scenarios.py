"""Chapter 4: every example scenario replays to the outcome its `expect:` block states, and to facts
checked here independently from the timeline (observations, thresholds, rankings, messages, timing).

The rules checked are those of pkg/kubelet/eviction/eviction_manager.go (synchronize, Admit),
helpers.go (thresholdsMet, nodeConditionsObservedSince, the rank functions, evictionMessage) and
pod_workers.go calculateEffectiveGracePeriod, v1.27.
"""

from __future__ import annotations

import pytest

from mini_kubelet import qos, sim
from mini_kubelet.cmd.main import main
from mini_kubelet.sim import check_expect

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch4

SCENARIOS = EXAMPLES / "scenarios"
VALID = sorted(p for p in SCENARIOS.glob("*.yaml")  # lifecycle-: chapter 1; node- and day-: chapter 5 (replay: node)
               if not p.name.startswith(("invalid-", "lifecycle-", "node-", "day-")))
Mi, Gi = 2**20, 2**30
REQUIRED = {"memory-hard", "memory-soft-grace", "disk-image-gc", "inodes", "pids", "flapping", "besteffort-not-first"}


def replay(name: str) -> sim.Timeline:
    return sim.run_scenario(SCENARIOS / f"{name}.yaml")


def met_times(timeline: sim.Timeline, signal: str) -> list[int]:
    return [s.time for s in timeline.steps if any(t.split("<")[0] == signal for t in s.thresholds_met)]


def test_the_required_scenarios_exist():
    assert REQUIRED <= {p.stem for p in VALID}


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_scenario_meets_its_expect_block(path, capsys):
    timeline = sim.run_scenario(path)
    checked, failures = check_expect(timeline)
    assert timeline.scenario.expect, "every example states its expected outcome"
    assert checked >= 1 and failures == []
    assert timeline.scenario.description
    # The command says so too, and exits 0.
    assert main(["run", str(path)]) == 0
    assert f"expect: all {checked} checks passed" in capsys.readouterr().out


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_timeline_is_consistent_with_the_manager_rules(path):
    timeline = sim.run_scenario(path)
    thresholds = {t["text"]: t for t in timeline.thresholds}
    for step in timeline.steps:
        for text in step.thresholds_met:
            signal = text.split("<")[0]
            assert signal in step.observations  # a threshold is met only on an observed signal
        # Conditions come from thresholds met now, or are held (never raised without a threshold met).
        for condition in step.conditions:
            assert any(sim.signals.SIGNAL_TO_NODE_CONDITION[t.split("<")[0]] == condition
                       for s in timeline.steps if s.time <= step.time for t in s.thresholds_met)
        assert len([e for e in step.evictions if e.ranking]) <= 1  # at most one pod per threshold pass
        for eviction in step.evictions:
            assert eviction.threshold in thresholds and eviction.threshold in step.thresholds_acted_on
            expected_override = 0 if thresholds[eviction.threshold]["hard"] else \
                timeline.scenario.config.max_pod_grace_period_seconds
            assert eviction.grace_period_override == expected_override
            assert eviction.stops_at == eviction.time + eviction.grace_period
            assert eviction.ranking[0].pod == eviction.pod or eviction.ranking[0].critical
            assert eviction.message.startswith("The node was low on resource: ")
    # After the last pass that met a threshold of a condition, the condition lasts exactly the transition period.
    period = timeline.scenario.config.pressure_transition_period.total_seconds()
    for interval in timeline.condition_intervals():
        if interval["to"] is None:
            continue
        signals_of = [s for s, c in sim.signals.SIGNAL_TO_NODE_CONDITION.items() if c == interval["type"]]
        last = max(t for s in signals_of for t in met_times(timeline, s) if t < interval["to"])
        assert interval["to"] - last >= period
        assert [s.time for s in timeline.steps if s.time > last][0] <= interval["to"]
        assert max(s.time for s in timeline.steps if s.time < interval["to"]) - last < period


def test_memory_hard():
    timeline = replay("memory-hard")
    [eviction] = timeline.evictions
    step = next(s for s in timeline.steps if s.evictions)
    before = timeline.steps[timeline.steps.index(step) - 1]
    # Met in the first pass where available < 100Mi (strict), and the condition is raised in that same pass.
    assert step.observations["memory.available"]["available"] < 100 * Mi <= before.observations["memory.available"]["available"]
    assert step.conditions == ["MemoryPressure"] and before.conditions == []
    assert [r.pod for r in eviction.ranking] == ["shop/leaky", "shop/batch", "shop/web", "shop/cache"]
    available = step.observations["memory.available"]["available"]
    assert eviction.message == ("The node was low on resource: memory. Threshold quantity: 100Mi, "
                                f"available: {available // 1024}Ki. Container app was using "
                                f"{eviction.ranking[0].keys['usage'] // 1024}Ki, request is 200Mi, "
                                "has larger consumption of memory. ")
    assert eviction.annotations["offending_containers"] == "app"
    # Hard eviction: override 0, so the pod's default 30 s (kubernetes/kubernetes#115819).
    assert (eviction.grace_period_override, eviction.grace_period) == (0, 30)
    rejected, admitted = timeline.admissions
    assert not rejected.admitted and rejected.reason == "Evicted" and admitted.admitted


def test_memory_soft_grace():
    timeline = replay("memory-soft-grace")
    soft = "memory.available<1536Mi (soft, grace 1m30s)"
    first = [s for s in timeline.steps if soft in s.thresholds_met]
    # The condition is raised in the first pass that meets the soft threshold, while nothing is acted on yet.
    assert first[0].time == 60 and first[0].conditions == ["MemoryPressure"] and first[0].thresholds_acted_on == []
    # The first streak (1m-1m30s) is shorter than the grace period: forgotten, no eviction.
    [eviction] = timeline.evictions
    streak_start = max(s.time for s in first if s.time < eviction.time and
                       not any(p.time < s.time and p.time > s.time - 11 and soft in p.thresholds_met for p in first))
    assert eviction.time - streak_start == 90
    assert (eviction.grace_period_override, eviction.grace_period, eviction.stops_at) == (20, 20, eviction.time + 20)
    # A BestEffort pod added at 2m is refused although no threshold is met then: the condition is held.
    [rejected] = timeline.admissions
    step_before = max((s for s in timeline.steps if s.time <= rejected.time), key=lambda s: s.time)
    assert step_before.thresholds_met == [] and step_before.conditions == ["MemoryPressure"]
    assert rejected.message == "The node had condition: [MemoryPressure]. "


def test_memory_soft_replays_upstream_test_memory_pressure():
    # eviction_manager_test.go TestMemoryPressure: the soft kill takes best-effort-low-priority-low-usage with
    # override 5 (MaxPodGracePeriodSeconds); the hard kill uses override 0; under pressure BestEffort is refused
    # and Burstable admitted; after the transition period both are admitted.
    timeline = replay("memory-soft")
    first, *_, hard = timeline.evictions
    assert (first.pod, first.grace_period_override, first.time) == ("default/best-effort-low-priority-low-usage", 5, 180)
    assert first.message.startswith("The node was low on resource: memory. Threshold quantity: 2Gi, available: 1500Mi. ")
    assert (hard.grace_period_override, hard.threshold) == (0, "memory.available<1Gi")
    verdicts = {a.pod.split("/")[1]: a.admitted for a in timeline.admissions}
    assert verdicts == {"best-admit": False, "burst-admit": True, "best-admit-later": True}


def test_disk_image_gc():
    timeline = replay("disk-image-gc")
    assert timeline.evictions == []
    [step] = [s for s in timeline.steps if s.reclaimed]
    # imagefs shares nodefs's disk: imagefs.available<15% fires while nodefs.available<10% does not.
    assert step.thresholds_met == ["imagefs.available<15%"]
    assert step.reclaimed["images"] == ["registry.example/ml/train:7", "registry.example/batch/report:1.0"]  # LRU first
    assert step.reclaimed["bytes"] == 11 * Gi and step.reclaimed["sufficient"]
    # Kept: the image a running pod uses, and the one pulled less than imageMinimumGCAge (2m) ago.
    assert "registry.example/shop/ingest:1.4" not in step.reclaimed["images"]
    assert "registry.example/shop/ingest:1.5" not in step.reclaimed["images"]
    assert step.conditions == ["DiskPressure"]  # raised before the reclaim, in the same pass


def test_inodes_rank_subtracts_the_storage_request_from_inodes():
    timeline = replay("inodes")
    first = timeline.evictions[0]
    keys = {r.pod.split("/")[1]: r.keys for r in first.ranking}
    assert keys["thumbnailer"]["usage"] > 100 * keys["db"]["usage"]  # it uses far more inodes ...
    assert keys["thumbnailer"]["usage_minus_request"] == keys["thumbnailer"]["usage"] - 10 * Gi  # ... minus 10Gi in bytes
    assert first.pod == "media/db" and all(k["exceeds_request"] for k in keys.values())  # inodes: request is 0
    assert first.message == ("The node was low on resource: inodes. Threshold quantity: 320Ki, available: "
                             f"{next(s for s in timeline.steps if s.evictions).observations['nodefs.inodesFree']['available']}. ")


def test_pids():
    timeline = replay("pids")
    [eviction] = timeline.evictions
    assert [r.pod for r in eviction.ranking] == ["ci/forker", "ci/batch", "ci/api"]  # priority, then process count
    assert eviction.ranking[0].keys["processes"] > eviction.ranking[1].keys["processes"]
    [rejected] = timeline.admissions
    pod = next(e.payload.pod for e in timeline.scenario.events if e.kind == "addPod")
    assert qos.get_pod_qos(pod) == qos.GUARANTEED and not rejected.admitted  # PIDPressure refuses every QoS class


def test_flapping_condition_does_not_flap():
    timeline = replay("flapping")
    soft = "memory.available<1Gi (soft, grace 1m)"
    met = [s.time for s in timeline.steps if soft in s.thresholds_met]
    streaks = sum(1 for t in met if t - 10 not in met)
    assert streaks >= 5  # the signal crosses the threshold again and again ...
    assert len(timeline.condition_intervals()) == 1  # ... the condition is one stretch
    assert timeline.evictions == [] and all(not s.thresholds_acted_on for s in timeline.steps)


def test_besteffort_not_first():
    timeline = replay("besteffort-not-first")
    [eviction] = timeline.evictions
    pods = {p.pod.metadata.name: p.pod for p in timeline.scenario.pods}
    assert qos.get_pod_qos(pods[eviction.pod.split("/")[1]]) == qos.BURSTABLE
    ranked_qos = [qos.get_pod_qos(pods[r.pod.split("/")[1]]) for r in eviction.ranking]
    assert ranked_qos == [qos.BURSTABLE, qos.BEST_EFFORT, qos.GUARANTEED]


def test_invalid_threshold_is_one_line_and_exit_2(capsys):
    path = SCENARIOS / "invalid-threshold.yaml"
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == (f"mini-kubelet: {path}: node.kubelet.evictionHard: "
                   "eviction threshold memory.available must be positive: -150Mi\n")


def test_run_exits_1_when_the_expect_block_differs(tmp_path, capsys):
    text = (SCENARIOS / "besteffort-not-first.yaml").read_text().replace("{pod: hog, at: 2m10s", "{pod: sleepy, at: 2m10s")
    path = tmp_path / "wrong.yaml"
    path.write_text(text)
    assert main(["run", str(path)]) == 1
    assert "evictions[0].pod: expected 'sleepy', got 'default/hog'" in capsys.readouterr().out


def test_run_json_and_plot(tmp_path, capsys):
    import json
    out = tmp_path / "memory-hard.png"
    assert main(["run", str(SCENARIOS / "memory-hard.yaml"), "--output", "json", "--plot", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["version"] == "mini-kubelet.run/v1" and report["expect"] == {"checked": 4, "failures": []}
    assert [e["pod"] for s in report["steps"] for e in s["evictions"]] == ["shop/leaky"]
    assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_text_output_fits_80_columns(path, capsys):
    # The site shows this output in code blocks about 84 characters wide; long entries wrap with a hanging indent.
    assert main(["run", str(path)]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 80


@pytest.mark.parametrize("name, times", [("memory-hard", [300]), ("memory-soft", [318]), ("memory-soft-grace", [])])
def test_exceeded_grace_period_event_times(name, times):
    # killPodNow (pod_workers.go): 10 s after a hard eviction (override 0) of a pod with a 30 s grace period.
    timeline = replay(name)
    assert [h.time for h in timeline.happenings if "ExceededGracePeriod" in h.text] == times


def test_a_workload_file_is_read_through_its_pod_template_with_its_priority_resolved(capsys):
    """An eviction scenario's pods[].file may hold a workload, read as show and admit read it; a built-in class gives
    the priority the API server's Priority admission sets (plugin/pkg/admission/priority/admission.go, v1.27.7)."""
    doc = {"duration": "1m", "node": {"name": "n", "capacity": {"memory": "4Gi", "nodefs": "100Gi", "inodes": 1000000,
                                                                "maxpid": 10000}},
           "pods": [{"file": str(EXAMPLES / "cluster" / "daemonset-node-critical.yaml"), "usage": {"memory": "50Mi"}},
                    {"file": str(EXAMPLES / "cluster" / "job.yaml"), "usage": {"memory": "100Mi"}}]}
    scenario = sim.load_scenario(doc, name="t", where="t.yaml")
    agent, report = (plan.pod for plan in scenario.pods)
    assert (agent.metadata.name, agent.spec.priority, report.metadata.name, report.spec.priority) == \
        ("node-agent", 2000001000, "report", None)
    err = capsys.readouterr().err
    assert "note: t.yaml: pods[1].file: Job batch/report: read through its Pod template (spec.template)" in err
    assert "note: t.yaml: pods[0]: priority 2000001000 from priorityClassName system-node-critical" in err
