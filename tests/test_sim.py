"""Chapter 4: the scenario replay (mini_kubelet/sim/): the format, its errors, the Summary it builds, the loop.

The loop follows pkg/kubelet/eviction/eviction_manager.go managerImpl.Start: a pass every 10 s
(kubelet.go evictionMonitoringPeriod); after an eviction, killPodNow blocks up to max(10, 1.5 x override)
seconds (pod_workers.go), then waitForPodsCleanup polls every 1 s for up to 30 s and the next pass
comes at once. The grace period a pod gets is pod_workers.go calculateEffectiveGracePeriod (v1.27).
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_kubelet import api, sim
from mini_kubelet.eviction import signals
from mini_kubelet.cmd.run_report import render_json
from mini_kubelet.sim import check_expect

pytestmark = pytest.mark.ch4

Mi, Gi = 2**20, 2**30


def pod(name, *, requests=None, limits=None, priority=None, grace=None, annotations=None, volumes=None, containers=None):
    spec = {"containers": containers or [{"name": name, "image": f"registry.example/{name}:1",
                                          "resources": {k: v for k, v in (("requests", requests), ("limits", limits)) if v}}]}
    if priority is not None:
        spec["priority"] = priority
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if volumes:
        spec["volumes"] = volumes
    metadata = {"name": name, "namespace": "default", "uid": f"uid-{name}", **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def scenario(**overrides):
    doc = {
        "duration": "3m",
        "node": {"name": "n1", "capacity": {"memory": "4Gi", "nodefs": "100Gi", "inodes": 1000000, "maxpid": 32768},
                 "usage": {"memory": "1Gi"}, "kubelet": {"evictionHard": "memory.available<1Gi"}},
        "pods": [{"manifest": pod("a", requests={"memory": "100Mi"}), "usage": {"memory": "500Mi"}}],
    }
    doc.update(overrides)
    return doc


# --- durations and series ------------------------------------------------------------------------

@pytest.mark.parametrize("text, seconds", [
    ("0", 0), ("0s", 0), ("90s", 90), ("1m30s", 90), ("2m", 120), ("1h", 3600), ("1h30m", 5400),
    ("-2h", -7200), ("1.5m", 90), ("1500ms", None), ("", None), ("5", None), ("abc", None), ("10x", None), ("m", None),
])
def test_parse_duration(text, seconds):
    # time.ParseDuration's format; the replay counts whole seconds, so 1500ms is refused.
    if seconds is None:
        with pytest.raises(ValueError):
            sim.parse_duration(text)
    else:
        assert sim.parse_duration(text) == seconds


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (45, "45s"), (120, "2m"), (130, "2m10s"), (3900, "1h5m"), (-60, "-1m")])
def test_format_duration(seconds, text):
    assert sim.format_duration(seconds) == text


def test_series_steps_hold_from_their_time_and_are_zero_before():
    steps = sim.Series([(60, 100), (120, 300)])
    assert [steps.at(t) for t in (0, 59, 60, 119, 120, 999)] == [0, 0, 100, 100, 300, 300]


def test_series_ramp_is_a_straight_line_in_whole_pages():
    ramp = sim.Series([(0, 0), (100, 4096 * 1000)], ramp=True, unit=4096)
    assert ramp.at(0) == 0 and ramp.at(50) == 4096 * 500 and ramp.at(100) == ramp.at(500) == 4096 * 1000
    assert all(ramp.at(t) % 4096 == 0 for t in range(0, 101, 7))
    down = sim.Series([(0, 100), (10, 0)], ramp=True)
    assert [down.at(t) for t in (0, 5, 10, 20)] == [100, 50, 0, 0]


# --- loading: defaults and good errors --------------------------------------------------------------

def test_defaults_are_v127_kubelet_defaults():
    doc = scenario()
    del doc["node"]["kubelet"]
    sc = sim.load_scenario(doc)
    # cmd/kubelet/app/server.go: EvictionHard nil -> DefaultEvictionHard (defaults_linux.go); then
    # enforceNodeAllocatable [pods] adds an allocatableMemory.available copy of the hard memory threshold.
    assert [sim.threshold_text(t) for t in sc.config.thresholds] == [
        "memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%", "imagefs.available<15%",
        "allocatableMemory.available<100Mi"]
    assert sc.config.pressure_transition_period.total_seconds() == 300
    assert sc.config.max_pod_grace_period_seconds == 0
    assert sc.duration == 180 and not sc.dedicated_image_fs


def test_pod_as_the_kubelet_sees_it():
    doc = scenario(pods=[{"manifest": {**pod("x", limits={"memory": "1Gi"}),
                                       "metadata": {"name": "x"}}}])
    doc["pods"][0]["manifest"]["spec"]["priorityClassName"] = "system-node-critical"
    [plan] = sim.load_scenario(doc).pods
    assert plan.pod.metadata.uid == "x" and plan.pod.metadata.namespace == "default"
    assert plan.pod.spec.containers[0].resources.requests == {"memory": "1Gi"}  # SetDefaults_Pod
    assert plan.pod.spec.priority == 2000001000  # resolved as the Priority admission plugin does


def _with(path, value):
    doc = scenario()
    target = doc
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    last = int(keys[-1]) if isinstance(target, list) else keys[-1]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return doc


@pytest.mark.parametrize("path, value, where, problem", [
    ("node.capacity.memory", KeyError, "node.capacity.memory", "required"),
    ("node.capacity.memory", "4Zi", "node.capacity.memory", 'invalid quantity "4Zi"'),
    ("node.capacity.swap", "1Gi", "node.capacity.swap", "unknown field"),
    ("duration", "10 minutes", "duration", "invalid duration"),
    ("node.usage.memory", {"1m": "1Gi", "60s": "2Gi"}, "node.usage.memory.60s", "given twice"),
    ("node.kubelet.evictionHard", "memory.available=1Gi", "node.kubelet.evictionHard", "malformed pair, expect string<string"),
    # pkg/kubelet/eviction/helpers.go ParseThresholdConfig, word for word
    ("node.kubelet.evictionHard", "memory.available<-150Mi", "node.kubelet.evictionHard",
     "eviction threshold memory.available must be positive: -150Mi"),
    ("node.kubelet.evictionHard", "mem.available<150Mi", "node.kubelet.evictionHard", "unsupported eviction signal mem.available"),
    ("node.kubelet.evictionSoft", "memory.available<2Gi", "node.kubelet.evictionSoft",
     "grace period must be specified for the soft eviction threshold memory.available"),
    ("node.kubelet.evictionSoftGracePeriod", "memory.available=-30s", "node.kubelet.evictionSoftGracePeriod",
     "invalid eviction grace period specified: -30s, must be a positive value"),
    ("node.kubelet.evictionMinimumReclaim", "memory.available=0%", "node.kubelet.evictionMinimumReclaim",
     "eviction percentage minimum reclaim memory.available must be positive: 0%"),
    ("node.kubelet.evictionMaxPodGracePeriod", "30s", "node.kubelet.evictionMaxPodGracePeriod", "int32"),
    ("pods.0.usage", {"containers": {"nope": {"memory": "1Gi"}}}, "pods[0].usage.containers.nope", "no such container"),
    ("pods.0.usage", {"volumes": {"cache": "1Gi"}}, "pods[0].usage.volumes.cache", "no volume named"),
    ("pods.0.usage", {"memory": "1Gi", "containers": {}}, "pods[0].usage", "not both"),
    ("pods.0.manifest.spec.containers", [], "pods[0].manifest.spec.containers", "at least one container"),
    ("pods.0", {"file": "missing.yaml"}, "pods[0].file", "no such file: missing.yaml"),
    ("events", [{"at": "1m", "set": {"pod": "ghost", "memory": "1Gi"}}], "events[0].set.pod", "no pod named"),
    ("events", [{"at": "1m"}], "events[0]", "one of addPod, pullImage, set"),
])
def test_bad_scenarios_name_the_field(path, value, where, problem):
    with pytest.raises(api.ManifestError) as err:
        sim.load_scenario(_with(path, value))
    assert err.value.path == where
    assert problem in err.value.problem
    assert "\n" not in str(err.value)


def test_duplicate_uids_are_refused():
    doc = scenario(pods=[{"manifest": pod("a")}, {"manifest": {**pod("b"), "metadata": {"name": "b", "uid": "uid-a"}}}])
    with pytest.raises(api.ManifestError, match=r"pods\[1\]: two pods with the same uid uid-a \(also pods\[0\]\)"):
        sim.load_scenario(doc)


# --- the Summary the replay builds ------------------------------------------------------------------

def test_summary_signals_come_from_the_scenario():
    doc = scenario()
    doc["node"]["kubelet"]["systemReserved"] = "memory=512Mi"
    doc["node"]["capacity"]["imagefs"] = "50Gi"
    doc["node"]["capacity"]["imagefsInodes"] = 500000
    doc["pods"][0]["usage"] = {"memory": "500Mi", "rootfs": "2Gi", "logs": "1Gi", "inodes": 1000, "pids": 7}
    doc["images"] = [{"name": "img", "size": "3Gi", "inodes": 200}]
    timeline = sim.run_scenario(doc)
    obs = timeline.steps[0].observations
    # makeSignalObservations: memory capacity = available + working set = the machine's memory.
    assert obs["memory.available"] == {"available": 4 * Gi - Gi - 500 * Mi, "capacity": 4 * Gi}
    # The "pods" cgroup is limited to capacity - systemReserved (enforceNodeAllocatable: [pods]).
    assert obs["allocatableMemory.available"] == {"available": 4 * Gi - 512 * Mi - 500 * Mi, "capacity": 4 * Gi - 512 * Mi}
    # Dedicated imagefs: logs on nodefs; the writable layer and images on imagefs.
    assert obs["nodefs.available"]["available"] == 100 * Gi - Gi
    assert obs["imagefs.available"] == {"available": 50 * Gi - 2 * Gi - 3 * Gi, "capacity": 50 * Gi}
    assert obs["imagefs.inodesFree"]["available"] == 500000 - 1000 - 200
    assert obs["pid.available"] == {"available": 32768 - 7, "capacity": 32768}


def test_shared_disk_reports_imagefs_with_nodefs_numbers():
    doc = scenario()
    doc["images"] = [{"name": "img", "size": "3Gi", "inodes": 200}]
    summary, _ = sim.build_summary(sim.load_scenario(doc), [], _store(doc), 0, sim.ZERO_TIME, sim.load_scenario(doc).node_usage)
    assert summary.node.runtime.image_fs.available_bytes == summary.node.fs.available_bytes == 97 * Gi
    assert summary.node.runtime.image_fs.used_bytes == 3 * Gi


def _store(doc):
    from mini_kubelet.eviction import images
    store = images.ImageStore()
    for image in doc.get("images", []):
        store.add_image(image["name"], api.value(api.parse_quantity(image["size"])), sim.ZERO_TIME, inodes=image["inodes"])
    return store


def test_memory_backed_empty_dir_counts_as_memory_and_disk_empty_dir_as_nodefs():
    volumes = [{"name": "shm", "emptyDir": {"medium": "Memory"}}, {"name": "scratch", "emptyDir": {}}]
    doc = scenario(pods=[{"manifest": pod("a", volumes=volumes),
                          "usage": {"memory": "100Mi", "volumes": {"shm": "200Mi", "scratch": "1Gi"}}}])
    step = sim.run_scenario(doc).steps[0]
    assert step.observations["memory.available"]["available"] == 4 * Gi - Gi - 300 * Mi
    assert step.observations["nodefs.available"]["available"] == 99 * Gi


# --- the loop: passes, kills, grace periods ---------------------------------------------------------

def test_passes_every_10s_and_after_an_eviction_when_the_pod_is_gone():
    # Hard threshold: override 0, so the pod's own 30 s (calculateEffectiveGracePeriod, v1.27).
    # killPodNow gives up after 10 s, waitForPodsCleanup sees the pod gone at +30 s: the next pass.
    doc = scenario()
    doc["pods"][0]["usage"]["memory"] = {"0s": "500Mi", "1m": "2600Mi"}
    timeline = sim.run_scenario(doc)
    [eviction] = timeline.evictions
    assert eviction.time == 60 and eviction.grace_period_override == 0 and eviction.grace_period == 30
    times = [s.time for s in timeline.steps]
    assert times[:8] == [0, 10, 20, 30, 40, 50, 60, 90] and times[8] == 100


def test_soft_eviction_uses_max_pod_grace_period_and_the_next_pass_follows_the_stop():
    doc = scenario()
    doc["node"]["kubelet"] = {"evictionHard": "", "evictionSoft": "memory.available<1Gi",
                              "evictionSoftGracePeriod": "memory.available=20s", "evictionMaxPodGracePeriod": 5}
    doc["pods"][0]["manifest"]["spec"]["terminationGracePeriodSeconds"] = 60
    doc["pods"][0]["usage"]["memory"] = {"0s": "500Mi", "1m": "2600Mi"}
    timeline = sim.run_scenario(doc)
    [eviction] = timeline.evictions
    # first seen at 60, grace 20 s satisfied at 80; override 5 is used even though the pod asks for 60.
    assert (eviction.time, eviction.grace_period_override, eviction.grace_period, eviction.stops_at) == (80, 5, 5, 85)
    assert [s.time for s in timeline.steps if s.time > 80][0] == 86  # the first 1 s poll after the kill returned


def test_a_pod_still_terminating_is_evicted_again_but_keeps_its_grace_period():
    # terminationGracePeriodSeconds 60: killPodNow times out at +10, the cleanup wait at +40; the pod is still
    # active (terminating), so the next pass kills it again; its grace period can only shrink, so it stops at +60.
    doc = scenario()
    doc["pods"][0]["manifest"]["spec"]["terminationGracePeriodSeconds"] = 60
    doc["pods"][0]["usage"]["memory"] = {"0s": "500Mi", "1m": "2600Mi"}
    timeline = sim.run_scenario(doc)
    assert [(e.time, e.stops_at) for e in timeline.evictions] == [(60, 120), (100, 120)]
    assert any(h.time == 120 and "stopped" in h.text for h in timeline.happenings)


def test_the_replay_is_deterministic():
    doc = json.loads(json.dumps(scenario()))
    doc["pods"][0]["usage"]["memory"] = {"ramp": {"0s": "500Mi", "2m": "3Gi"}}
    first, second = sim.run_scenario(copy.deepcopy(doc)), sim.run_scenario(copy.deepcopy(doc))
    assert render_json(first) == render_json(second)


def test_decided_by_names_the_first_key_that_differs():
    def row(name, exceeds, priority, above):
        return sim.RankedPod(f"ns/{name}", {"has_stats": True, "exceeds_request": exceeds, "priority": priority,
                                            "usage_minus_request": above * Mi, "resource": "memory"})
    # Rows in ranked order, as rankMemoryPressure leaves them.
    assert sim.decided_by([row("a", True, 5, 1), row("b", False, -5, 9)], 0, "memory.available") == \
        "ns/a uses more memory than it requests and ns/b does not"
    assert sim.decided_by([row("a", True, -10, 1), row("b", True, -5, 9)], 0, "memory.available") == \
        "ns/a has a lower priority than ns/b (-10 < -5)"
    assert "further above its request (+9Mi > +1Mi for ns/b)" in \
        sim.decided_by([row("a", True, 0, 9), row("b", True, 0, 1)], 0, "memory.available")
    assert "tie on every key" in sim.decided_by([row("a", True, 0, 1), row("b", True, 0, 1)], 0, "memory.available")
    critical = sim.RankedPod("ns/static", {"has_stats": True, "exceeds_request": True, "priority": 0,
                                           "usage_minus_request": 0, "resource": "memory"}, critical=True)
    assert sim.decided_by([critical, row("a", True, 0, 1)], 1, "memory.available").startswith(
        "critical pods are never evicted (ns/static ranked ahead); the last pod left")


# A static pod is never evicted, at most one pod goes per threshold pass, and every eviction comes from
# a pass that acted on a threshold whose grace period was over (eviction_manager.go synchronize).
@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 170), st.integers(0, 3000)), min_size=3, max_size=3),
       st.integers(0, 1), st.booleans())
def test_replay_invariants(ramps, static_index, soft):
    pods = []
    for i, (start, peak) in enumerate(ramps):
        manifest = pod(f"p{i}", requests={"memory": "100Mi"},
                       annotations={"kubernetes.io/config.source": "file"} if i == static_index else None)
        pods.append({"manifest": manifest, "usage": {"memory": {"ramp": {f"{start}s": "100Mi", f"{start + 60}s": f"{peak}Mi"}}}})
    kubelet = {"evictionHard": "memory.available<512Mi"}
    if soft:
        kubelet.update(evictionSoft="memory.available<1Gi", evictionSoftGracePeriod="memory.available=30s")
    timeline = sim.run_scenario(scenario(pods=pods, node={**scenario()["node"], "kubelet": kubelet}))
    for step in timeline.steps:
        assert len(step.evictions) <= 1
        for eviction in step.evictions:
            assert eviction.pod != f"default/p{static_index}"
            assert step.thresholds_acted_on
            assert step.observations["memory.available"]["available"] < 1 * Gi
    intervals = timeline.condition_intervals()
    assert all(i["to"] is None or i["to"] > i["from"] for i in intervals)


def test_plot_writes_an_image(tmp_path):
    doc = scenario()
    doc["pods"][0]["usage"]["memory"] = {"0s": "500Mi", "1m": "2600Mi"}
    out = tmp_path / "t.png"
    sim.plot_timeline(sim.run_scenario(doc), out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_expect_block_mismatch_is_reported():
    doc = scenario(expect={"evictions": [{"pod": "a", "at": "30s"}], "conditions": []})
    doc["pods"][0]["usage"]["memory"] = {"0s": "500Mi", "1m": "2600Mi"}
    checked, failures = check_expect(sim.run_scenario(doc))
    assert checked == 2
    assert failures == ["evictions[0].at: expected '30s', got 1m",
                        "conditions: expected 0, got 1: type=MemoryPressure from=1m to=end"]
    assert signals.SIGNAL_TO_NODE_CONDITION["memory.available"] == "MemoryPressure"


def exceeded_grace_period_events(timeline: sim.Timeline) -> list[int]:
    return [h.time for h in timeline.happenings if h.text.startswith("event ExceededGracePeriod (Warning)")]


def test_hard_eviction_records_exceeded_grace_period_after_10_seconds():
    # pod_workers.go killPodNow: the wait is max(10, g + g/2) from the raw override g, before
    # calculateEffectiveGracePeriod turns 0 into the pod's 30 s; on timeout it records the Warning event
    # ExceededGracePeriod on the pod, although the pod is still inside its own grace period.
    doc = scenario()
    doc["pods"][0]["usage"]["memory"] = {"0s": "500Mi", "1m": "2600Mi"}
    timeline = sim.run_scenario(doc)
    first = timeline.evictions[0]
    assert (first.grace_period_override, first.grace_period) == (0, 30)
    assert exceeded_grace_period_events(timeline)[0] == first.time + 10 < first.stops_at
    text = next(h.text for h in timeline.happenings if h.time == first.time + 10)
    assert "Container runtime did not kill the pod within specified grace period." in text


def test_no_exceeded_grace_period_when_the_pod_stops_within_the_wait():
    # Soft eviction with evictionMaxPodGracePeriod 5: the pod gets 5 s, killPodNow waits up to 10 s.
    doc = scenario()
    doc["node"]["kubelet"] = {"evictionHard": "", "evictionSoft": "memory.available<1Gi",
                              "evictionSoftGracePeriod": "memory.available=20s", "evictionMaxPodGracePeriod": 5}
    doc["pods"][0]["usage"]["memory"] = {"0s": "500Mi", "1m": "2600Mi"}
    assert exceeded_grace_period_events(sim.run_scenario(doc)) == []


def test_long_override_waits_one_and_a_half_times_the_override():
    # evictionMaxPodGracePeriod 60 (soft): timeout 60 + 30 = 90 s > the 60 s the pod gets: no event.
    doc = scenario()
    doc["node"]["kubelet"] = {"evictionHard": "", "evictionSoft": "memory.available<1Gi",
                              "evictionSoftGracePeriod": "memory.available=20s", "evictionMaxPodGracePeriod": 60}
    doc["pods"][0]["usage"]["memory"] = {"0s": "500Mi", "1m": "2600Mi"}
    timeline = sim.run_scenario(doc)
    assert timeline.evictions[0].grace_period == 60 and exceeded_grace_period_events(timeline) == []
