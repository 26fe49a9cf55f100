"""Chapter 4: the eviction changes of v1.28-v1.36, each under the release it came in and under v1.36.

- Grace periods. From 1.31 (#124063) a hard eviction, and every local-storage limit eviction, asks for 1 s,
  and pod_workers.go calculateEffectiveGracePeriod keeps an applied override of 0 (then 1 s) instead of
  falling back to the spec's grace period. From 1.32 (#122890) a soft eviction asks for
  min(evictionMaxPodGracePeriod, the Pod's terminationGracePeriodSeconds) unless
  AllowOverwriteTerminationGracePeriodSeconds is on (deprecated and off; locked off from 1.35).
- Defaults. imagefs.inodesFree<5% joins the default evictionHard in 1.30 (#121834); the 1.33 kubelet config
  field mergeDefaultEvictionSettings (#127577) keeps the defaults a given evictionHard leaves out.
- Split image filesystem (KEP-4191; code from 1.29, KubeletSeparateDiskGC beta and on from 1.31): the
  containerfs signals, observed from node.runtime.containerFs and copied from the nodefs or imagefs
  thresholds (UpdateContainerFsThresholds); the rank and reclaim maps take the split into account.

Sources read: kubeedge/kubeedge v1.22.0 and v1.23.0 (vendoring k8s v1.31.12 and v1.32.10:
pkg/kubelet/eviction/eviction_manager.go, helpers.go, pod_workers.go, defaults_linux.go) and, for v1.36,
stored 1.35/1.36-era copies of eviction_manager.go (no AllowOverwrite gate check left, the gate being
locked off; HasDedicatedContainerFs on the disk info provider) and helpers.go (the same
UpdateContainerFsThresholds as v1.32). Each ported test names the copy it was read from.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import yaml

from mini_kubelet import features, stats
from mini_kubelet.cmd.main import main
from mini_kubelet.eviction import api as evapi
from mini_kubelet.eviction import ranking, reclaim, signals
from mini_kubelet.eviction.api import (OP_LESS_THAN, SIGNAL_CONTAINERFS_AVAILABLE, SIGNAL_CONTAINERFS_INODES_FREE,
                                       SIGNAL_IMAGEFS_AVAILABLE, SIGNAL_IMAGEFS_INODES_FREE, SIGNAL_MEMORY_AVAILABLE,
                                       SIGNAL_NODEFS_AVAILABLE, SIGNAL_NODEFS_INODES_FREE, Threshold, ThresholdValue)
from mini_kubelet.eviction.manager import SPLIT_DISK_GATE_OFF
from mini_kubelet.eviction.records import effective_grace_period, grace_period_override
from mini_kubelet.eviction.thresholds import parse_threshold_config, update_container_fs_thresholds
from mini_kubelet.features import DEFAULT_FEATURE_GATE, FeatureGate, release_profile, set_feature_gate_during_test
from mini_kubelet.pod_worker_types import KillPodOptions, PodSyncStatus, calculate_effective_grace_period

from .conftest import EXAMPLES
from .test_eviction_manager import (DEFAULT, MINUTE, admission_probes, b, hard, make_manager, memory_pods,
                                    memory_summary, new_pod, pod_ref, resource_list, run_steps, soft, storage_pod,
                                    storage_stats)

pytestmark = pytest.mark.ch4

SCENARIOS = EXAMPLES / "scenarios"
SUMMARY = EXAMPLES / "summary"


# ---- grace periods ----------------------------------------------------------------------------------

@pytest.mark.parametrize("release", ["1.31", "1.36"])
def test_memory_pressure(release):
    """eviction_manager_test.go#TestMemoryPressure, read in a stored 1.31+ copy (synchronize returns an error;
    after the hard threshold it asserts a gracePeriodOverride of 1, where the v1.26/v1.27 copy asserts 0).
    The soft eviction still asserts MaxPodGracePeriodSeconds (5): the test's pods set no
    terminationGracePeriodSeconds, so the 1.32 min does not apply."""
    with release_profile(release):
        pods, pod_stats = memory_pods()
        manager, clock, killer = make_manager([hard(SIGNAL_MEMORY_AVAILABLE, "1Gi"),
                                               soft(SIGNAL_MEMORY_AVAILABLE, "2Gi", 2 * MINUTE)])
        victim = "best-effort-low-priority-low-usage"
        steps = [
            (0, memory_summary("2Gi", pod_stats), False, [], [True, True]),
            (1 * MINUTE, memory_summary("1500Mi", pod_stats), True, [], None),
            (3 * MINUTE, memory_summary("1500Mi", pod_stats), True, [(victim, 5)], None),
            (20 * MINUTE, memory_summary("3Gi", pod_stats), False, [], None),
            (1 * MINUTE, memory_summary("500Mi", pod_stats), True, [(victim, 1)], [False, True]),  # 1, not 0
            (1 * MINUTE, memory_summary("2Gi", pod_stats), True, [], [False, True]),
            (5 * MINUTE, memory_summary("2Gi", pod_stats), False, [], [True, True]),
        ]
        run_steps(manager, clock, pods, steps, manager.is_under_memory_pressure, admission_probes())
        assert [(e.grace_period_override, e.effective_grace_period) for e in killer.killed] == [(5, 5), (1, 1)]


@pytest.mark.parametrize("release, expected", [
    ("1.27", [30, 5, 2, 30, 30]),  # 0 reads as "nothing recorded": the spec's 30 s comes back
    ("1.30", [30, 5, 2, 30, 30]),
    ("1.31", [30, 5, 2, 1, 1]),
    ("1.36", [30, 5, 2, 1, 1]),
])
def test_calculate_effective_grace_period(release, expected):
    """pod_workers_test.go#Test_calculateEffectiveGracePeriod (5 cases), read in a stored 1.33+ copy
    (kubernetes/kubernetes commit 0046548a, which builds the workers with allocation.NewInMemoryManager).
    Upstream's expectations are the 1.31+ rows; 1.27 and 1.30 show the same cases before #124063."""
    cases = [  # (spec terminationGracePeriodSeconds, deletionGracePeriodSeconds, kill override)
        (30, None, None),  # use termination grace period from the spec when no overrides
        (30, 5, None),  # use pod DeletionGracePeriodSeconds when set
        (30, 5, 2),  # use grace period override when set
        (30, 0, None),  # use 1 when pod DeletionGracePeriodSeconds is zero
        (30, 5, 0),  # use 1 when grace period override is zero
    ]
    with release_profile(release):
        got = []
        for spec, deletion, override in cases:
            pod = new_pod("running-pod", DEFAULT, termination_grace_period=spec)
            pod.metadata.deletion_grace_period_seconds = deletion
            options = KillPodOptions(pod_termination_grace_period_seconds_override=override)
            got.append(calculate_effective_grace_period(PodSyncStatus(), pod, options)[0])
        assert got == expected


# pkg/kubelet/eviction/eviction_manager.go synchronize (gracePeriodOverride), v1.31.12 / v1.32.10 as vendored
# by kubeedge v1.22.0 / v1.23.0 and a 1.35/1.36-era copy; derived from the source (no upstream test of the
# soft min was found). (release, max grace, pod's own, gates) -> override.
@pytest.mark.parametrize("release, max_grace, own, gates, expected", [
    ("1.27", 90, 60, {}, 90),
    ("1.31", 90, 60, {}, 90),
    ("1.32", 90, 60, {}, 60),  # the smaller of the two
    ("1.32", 20, 60, {}, 20),
    ("1.32", 90, None, {}, 90),  # no terminationGracePeriodSeconds: no min
    ("1.32", 90, 60, {"AllowOverwriteTerminationGracePeriodSeconds": True}, 90),  # the deprecated way back
    ("1.34", 90, 60, {"AllowOverwriteTerminationGracePeriodSeconds": True}, 90),
    ("1.36", 90, 60, {}, 60),
    ("1.36", 0, 60, {}, 0),  # default max 0: min(0, 60)
    ("1.36", -5, 60, {}, -5),
])
def test_soft_eviction_override(release, max_grace, own, gates, expected):
    with release_profile(release, gates):
        pod = new_pod("p", DEFAULT, termination_grace_period=own)
        assert grace_period_override(soft(SIGNAL_MEMORY_AVAILABLE, "1Gi", MINUTE), pod, max_grace) == expected
        assert grace_period_override(hard(SIGNAL_MEMORY_AVAILABLE, "1Gi"), pod, max_grace) == (
            1 if DEFAULT_FEATURE_GATE.changed("HardEvictionOneSecondGrace") else 0)


def test_the_overwrite_gate_is_locked_off_from_1_35():
    """kube_features.go: AllowOverwriteTerminationGracePeriodSeconds is deprecated from 1.32 and locked off in 1.35."""
    with pytest.raises(ValueError, match="locked to false"):
        FeatureGate("1.35").set_from_map({"AllowOverwriteTerminationGracePeriodSeconds": True})
    FeatureGate("1.34").set_from_map({"AllowOverwriteTerminationGracePeriodSeconds": True})


# records.effective_grace_period is calculateEffectiveGracePeriod for a running pod (nothing recorded yet).
@pytest.mark.parametrize("release, override, own, expected", [
    ("1.27", 0, None, 30), ("1.36", 1, None, 1),  # hard: the pod's 30 s in 1.27, 1 s from 1.31
    ("1.27", 0, 60, 60), ("1.31", 0, 60, 1),  # soft with evictionMaxPodGracePeriod 0: the pod's value, then 1 s
    ("1.36", 60, 60, 60), ("1.36", -1, 30, 1), ("1.36", None, 45, 45),
])
def test_effective_grace_period_by_release(release, override, own, expected):
    with release_profile(release):
        assert effective_grace_period(new_pod("p", DEFAULT, termination_grace_period=own), override) == expected


@pytest.mark.parametrize("release, override", [("1.27", 0), ("1.30", 0), ("1.31", 1), ("1.36", 1)])
def test_local_storage_evictions_ask_for_one_second_from_1_31(release, override):
    """eviction_manager.go emptyDirLimitEviction (and the two ephemeral-storage checks): from v1.31.12 they pass
    immediateEvictionGracePeriodSeconds (1) where v1.27 passes 0."""
    with release_profile(release):
        pod = storage_pod("scratch", volumes=[("cache", None, "100Mi")])
        manager, clock, killer = make_manager([], local_storage_capacity_isolation=True)
        summary = stats.summary_from_json({"node": {}, "pods": [storage_stats(pod, volumes=[("cache", "200Mi")])]})
        [evicted] = manager.synchronize(summary, [pod])
        assert (evicted.signal, evicted.grace_period_override) == ("emptydirfs.limit", override)


def run_json(capsys, *args):
    code = main(["run", *map(str, args), "--output", "json"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def evictions(doc):
    return [(e["pod"], e["time"], e["grace_period_override"], e["grace_period"], e["stops_at"])
            for step in doc["steps"] for e in step["evictions"]]


def test_memory_hard_scenario_under_1_36(capsys):
    """mini-kubelet run memory-hard.yaml: override 0 and the Pod's 30 s in v1.27, 1 s (and 1 s) under 1.36.

    killPodNow waits max(10 s, 1.5 x override) either way: in v1.27 the wait ends first (ExceededGracePeriod),
    from 1.31 the pod is gone after 2 s (its 1 s, raised to killContainer's 2 s floor, which from 1.28 applies after
    the override), so the next pass, and the end of MemoryPressure, come earlier; the scenario's expect block
    states the v1.27 outcome (MemoryPressure ends at 9m50s; 9m53s under 1.36): its
    failure under 1.36 is what 1.36 does otherwise, not an error (exit 0, with a note)."""
    code, doc, _ = run_json(capsys, SCENARIOS / "memory-hard.yaml")
    assert code == 0 and doc["profile"]["kubernetesVersion"] == "1.27"
    assert evictions(doc) == [("shop/leaky", 290, 0, 30, 320)]
    assert any("ExceededGracePeriod" in h["text"] for h in doc["happenings"])
    code, doc, err = run_json(capsys, SCENARIOS / "memory-hard.yaml", "--kubernetes-version", "1.36")
    assert doc["profile"]["kubernetesVersion"] == "1.36"
    assert evictions(doc) == [("shop/leaky", 290, 1, 1, 292)]
    assert not any("ExceededGracePeriod" in h["text"] for h in doc["happenings"])
    assert [c["to"] for c in doc["conditions"]][:1] == [593]
    assert code == 0 and doc["expect"]["failures"] == ["conditions[0].to: expected '9m50s', got 9m53s"]
    assert "the scenario's expect: block is what Kubernetes 1.27 does" in err


def test_soft_grace_scenario_under_1_36(capsys):
    """examples/scenarios/releases/memory-soft-grace-1.36.yaml (kubernetesVersion "1.36"): evictionMaxPodGracePeriod
    90 and a Pod asking for 60 s give 60 s under 1.36; v1.27 passes 90 s, and leaves the file's expect block
    (1.36's) failing without an error."""
    path = SCENARIOS / "releases" / "memory-soft-grace-1.36.yaml"
    code, doc, _ = run_json(capsys, path)
    assert code == 0 and doc["profile"]["kubernetesVersion"] == "1.36"
    assert evictions(doc) == [("prod/worker", 270, 60, 60, 330)]
    code, doc, err = run_json(capsys, path, "--kubernetes-version", "1.27")
    assert "answering for 1.27" in err
    assert code == 0 and evictions(doc) == [("prod/worker", 270, 90, 90, 360)] and doc["expect"]["failures"]
    # The text report says which rule gave the period.
    assert main(["run", str(path)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "the smaller of evictionMaxPodGracePeriod and the pod's terminationGracePeriodSeconds): 60s" in text


@pytest.mark.parametrize("release, grace", [("1.27", 30), ("1.30", 30), ("1.31", 1), ("1.36", 1)])
def test_a_force_delete_in_the_lifecycle_replay(tmp_path, capsys, release, grace):
    """kubectl delete --grace-period=0 (deletionGracePeriodSeconds 0) in lifecycle-graceful-deletion.yaml: the pod
    worker kills with the spec's 30 s in v1.27 (calculateEffectiveGracePeriod reads 0 as unset), with 1 s from 1.31."""
    text = (SCENARIOS / "lifecycle-graceful-deletion.yaml").read_text()
    path = tmp_path / "force.yaml"
    path.write_text(text.replace("gracePeriod: 45}}", "gracePeriod: 0}}").replace("../pods/", f"{EXAMPLES / 'pods'}/"))
    code, doc, _ = run_json(capsys, path, "--kubernetes-version", release)
    assert doc["kills"] == [{"time": 20, "pod": "web", "gracePeriod": grace}]


# ---- defaults ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("release, inodes", [("1.27", False), ("1.29", False), ("1.30", True), ("1.36", True)])
def test_default_eviction_hard(release, inodes):
    """pkg/kubelet/eviction/defaults_linux.go DefaultEvictionHard: kubeedge v1.18.0 (k8s v1.29.6) has four
    signals, v1.20.0 (v1.30.7) five, imagefs.inodesFree<5% added (#121834)."""
    with release_profile(release):
        expected = dict(evapi.DEFAULT_EVICTION_HARD, **({"imagefs.inodesFree": "5%"} if inodes else {}))
        assert evapi.default_eviction_hard() == expected
        assert evapi.merge_default_eviction_hard(None) == expected


# cmd/kubelet/app/server.go loadConfigFile with MergeDefaultEvictionSettings (kubernetes/kubernetes#127577, merged
# for 1.33): a nil map is the defaults; a given map is kept, and with the field on the defaults it leaves out
# are added. Derived from the PR's code and the field's documentation.
@pytest.mark.parametrize("release, given, merge, expected", [
    ("1.36", {"memory.available": "500Mi"}, False, {"memory.available": "500Mi"}),
    ("1.36", {"memory.available": "500Mi"}, True,
     {"memory.available": "500Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%",
      "imagefs.inodesFree": "5%"}),
    ("1.36", {"nodefs.available": "0%"}, True,  # a signal given, even switched off, is the config's
     {"memory.available": "100Mi", "nodefs.available": "0%", "nodefs.inodesFree": "5%", "imagefs.available": "15%",
      "imagefs.inodesFree": "5%"}),
    ("1.36", {}, True, evapi.DEFAULT_EVICTION_HARD | {"imagefs.inodesFree": "5%"}),
    ("1.32", {"memory.available": "500Mi"}, True, {"memory.available": "500Mi"}),  # no such field before 1.33
])
def test_merge_default_eviction_settings(release, given, merge, expected):
    with release_profile(release):
        assert evapi.merge_default_eviction_hard(given, merge) == expected


def scenario_doc(kubelet):
    capacity = {"memory": "8Gi", "cpu": "8", "nodefs": "200Gi", "inodes": 13107200, "maxpid": 4194304}
    return {"description": "d", "duration": "1m", "node": {"name": "n", "capacity": capacity, "kubelet": kubelet},
            "pods": [], "expect": {"evictions": []}}


@pytest.mark.parametrize("release, ok", [("1.32", False), ("1.33", True)])
def test_a_scenario_may_merge_the_defaults_from_1_33(tmp_path, capsys, release, ok):
    path = tmp_path / "merge.yaml"
    path.write_text(yaml.safe_dump(scenario_doc({"evictionHard": "memory.available<500Mi",
                                                 "mergeDefaultEvictionSettings": True})))
    code = main(["run", str(path), "--kubernetes-version", release, "--output", "json"])
    out = capsys.readouterr()
    if not ok:
        assert code == 2 and "node.kubelet.mergeDefaultEvictionSettings: unknown field" in out.err
        return
    assert code == 0
    texts = [t["text"] for t in json.loads(out.out)["thresholds"]]
    assert texts[:5] == ["memory.available<500Mi", "nodefs.available<10%", "nodefs.inodesFree<5%",
                         "imagefs.available<15%", "imagefs.inodesFree<5%"]


# ---- the split image filesystem: signals and observations ------------------------------------------

def containerfs_summary_doc():
    """helpers_test.go#TestMakeSignalObservations's fakeStats, with its containerFs."""
    gi, mi = 2**30, 2**20
    memory = {"availableBytes": gi, "workingSetBytes": gi}
    return {"node": {"memory": memory, "systemContainers": [{"name": "pods", "memory": memory}],
                     "runtime": {"imageFs": {"availableBytes": mi, "capacityBytes": 2 * mi, "inodesFree": 1024,
                                             "inodes": mi},
                                 "containerFs": {"availableBytes": 2 * mi, "capacityBytes": 8 * mi,
                                                 "inodesFree": 2048, "inodes": 2048}},
                     "rlimit": {"maxpid": 255816, "curproc": 1000},
                     "fs": {"availableBytes": 1024, "capacityBytes": 2048, "inodesFree": 1024, "inodes": mi}},
            "pods": [{"podRef": {"name": n, "namespace": ns, "uid": u}, "memory": {"workingSetBytes": gi}}
                     for n, ns, u in (("pod1", "ns1", "uuid1"), ("pod1", "ns2", "uuid2"), ("pod3", "ns3", "uuid3"))]}


@pytest.mark.parametrize("release", ["1.29", "1.36"])
def test_make_signal_observations(release):
    """helpers_test.go#TestMakeSignalObservations, read in a stored copy with containerFs (pre-contextual-logging:
    makeSignalObservations(fakeStats) without a logger, so 1.29-1.32 era; the newest copy found)."""
    gi, mi = 2**30, 2**20
    with release_profile(release):
        observations, stats_func = signals.make_signal_observations(stats.summary_from_json(containerfs_summary_doc()))
        got = {signal: (o.available, o.capacity) for signal, o in observations.items()}
        assert got == {
            "memory.available": (gi, 2 * gi), "allocatableMemory.available": (gi, 2 * gi),
            "nodefs.available": (1024, 2048), "nodefs.inodesFree": (1024, mi),
            "imagefs.available": (mi, 2 * mi), "imagefs.inodesFree": (1024, mi),
            "containerfs.available": (2 * mi, 8 * mi), "containerfs.inodesFree": (2048, 2048),
            "pid.available": (255816 - 1000, 255816)}
        for name, uid in (("pod1", "uuid1"), ("pod1", "uuid2"), ("pod3", "uuid3")):
            pod = new_pod(name, DEFAULT)
            pod.metadata.uid = uid
            assert stats_func(pod).memory.working_set_bytes == gi


def test_v1_27_has_no_containerfs_observation_and_nests_imagefs_inodes():
    """helpers.go makeSignalObservations before 1.29 (v1.27.7, v1.28.6 as vendored by kubeedge v1.16.0, v1.17.0):
    no containerfs, and imagefs inodes only with imagefs bytes; from 1.29 (v1.29.6) they are read on their own."""
    doc = containerfs_summary_doc()
    doc["node"]["runtime"]["imageFs"] = {"inodesFree": 10, "inodes": 20}
    summary = stats.summary_from_json(doc)
    for release, expected in (("1.27", set()), ("1.28", set()),
                              ("1.29", {"imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree"})):
        with release_profile(release):
            observed = set(signals.make_signal_observations(summary)[0])
            assert observed & {"imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree"} == expected


def test_get_reclaimable_threshold_with_containerfs():
    """helpers_test.go#TestGetReclaimableThreshold (1 case, the same stored copy), which lists containerfs.available."""
    def t(signal, quantity, min_reclaim):
        return Threshold(signal, OP_LESS_THAN, ThresholdValue(quantity=quantity), min_reclaim=ThresholdValue(quantity=min_reclaim))
    with release_profile("1.36"):
        thresholds = signals.sort_by_eviction_priority([
            t("allocatableMemory.available", "150Mi", "0"), t(SIGNAL_MEMORY_AVAILABLE, "150Mi", "0"),
            t(SIGNAL_IMAGEFS_AVAILABLE, "150Mi", "2Gi"), t(SIGNAL_NODEFS_AVAILABLE, "100Mi", "1Gi"),
            t(SIGNAL_CONTAINERFS_AVAILABLE, "100Mi", "1Gi")])
        assert signals.get_reclaimable_threshold(thresholds)[2]


# helpers.go ParseThresholdConfig / validSignal: no containerfs case in the stored TestParseThresholdConfig copy,
# so these are derived from the source: the signals are valid from 1.29 (the code came with the gate).
@pytest.mark.parametrize("release, error", [("1.27", "unsupported eviction signal containerfs.available"),
                                            ("1.28", "unsupported eviction signal containerfs.available"),
                                            ("1.29", None), ("1.36", None)])
def test_parse_threshold_config_with_containerfs(release, error):
    with release_profile(release):
        args = ([], {"containerfs.available": "150Mi", "containerfs.inodesFree": "5%"},
                {"containerfs.available": "300Mi"}, {"containerfs.available": "30s"}, {"containerfs.available": "1Gi"})
        if error:
            with pytest.raises(ValueError, match=error):
                parse_threshold_config(*args)
            return
        got = {(t.signal, t.grace_period, t.value.quantity_text, t.value.percentage) for t in parse_threshold_config(*args)}
        assert got == {(SIGNAL_CONTAINERFS_AVAILABLE, timedelta(0), "150Mi", None),
                       (SIGNAL_CONTAINERFS_INODES_FREE, timedelta(0), None, evapi.float32(0.05)),
                       (SIGNAL_CONTAINERFS_AVAILABLE, timedelta(seconds=30), "300Mi", None)}


# ---- the split image filesystem: thresholds, ranking, reclaim --------------------------------------

NODEFS_HARD = hard(SIGNAL_NODEFS_AVAILABLE, "10Gi")
NODEFS_SOFT = soft(SIGNAL_NODEFS_AVAILABLE, "20Gi", MINUTE)
NODEFS_INODES = Threshold(SIGNAL_NODEFS_INODES_FREE, OP_LESS_THAN, ThresholdValue(percentage=0.05))
IMAGEFS_HARD = hard(SIGNAL_IMAGEFS_AVAILABLE, "15Gi")
IMAGEFS_INODES = Threshold(SIGNAL_IMAGEFS_INODES_FREE, OP_LESS_THAN, ThresholdValue(percentage=0.05))
EMPTY = Threshold("", operator="")


def copy_of(signal, threshold):
    return Threshold(signal, threshold.operator, threshold.value, threshold.grace_period, threshold.min_reclaim)


# helpers.go UpdateContainerFsThresholds (v1.32.10 as vendored by kubeedge v1.23.0, the same in the 1.36-era
# copy); no upstream test of it was found, so the table is derived from the source, quirks included.
@pytest.mark.parametrize("given, image_fs, split, appended, error", [
    # One filesystem: containerfs is nodefs; a missing soft source gives an empty copy (never met).
    ([NODEFS_HARD, NODEFS_INODES, IMAGEFS_HARD], False, False,
     [copy_of(SIGNAL_CONTAINERFS_AVAILABLE, NODEFS_HARD), copy_of(SIGNAL_CONTAINERFS_AVAILABLE, EMPTY),
      copy_of(SIGNAL_CONTAINERFS_INODES_FREE, NODEFS_INODES), copy_of(SIGNAL_CONTAINERFS_INODES_FREE, EMPTY)], None),
    # A soft nodefs threshold is copied with its grace period.
    ([NODEFS_HARD, NODEFS_SOFT], False, False,
     [copy_of(SIGNAL_CONTAINERFS_AVAILABLE, NODEFS_HARD), copy_of(SIGNAL_CONTAINERFS_AVAILABLE, NODEFS_SOFT),
      copy_of(SIGNAL_CONTAINERFS_INODES_FREE, EMPTY), copy_of(SIGNAL_CONTAINERFS_INODES_FREE, EMPTY)], None),
    # A dedicated imagefs holding the writable layers too: containerfs is imagefs.
    ([NODEFS_HARD, IMAGEFS_HARD, IMAGEFS_INODES], True, False,
     [copy_of(SIGNAL_CONTAINERFS_AVAILABLE, IMAGEFS_HARD), copy_of(SIGNAL_CONTAINERFS_AVAILABLE, EMPTY),
      copy_of(SIGNAL_CONTAINERFS_INODES_FREE, IMAGEFS_INODES), copy_of(SIGNAL_CONTAINERFS_INODES_FREE, EMPTY)], None),
    # Images alone on imagefs (a split): the writable layers are on nodefs again.
    ([NODEFS_HARD, IMAGEFS_HARD], True, True,
     [copy_of(SIGNAL_CONTAINERFS_AVAILABLE, NODEFS_HARD), copy_of(SIGNAL_CONTAINERFS_AVAILABLE, EMPTY),
      copy_of(SIGNAL_CONTAINERFS_INODES_FREE, EMPTY), copy_of(SIGNAL_CONTAINERFS_INODES_FREE, EMPTY)], None),
    # No imagefs but a split: a layout neither branch handles, nothing copied.
    ([NODEFS_HARD], False, True, [], None),
])
def test_update_container_fs_thresholds(given, image_fs, split, appended, error):
    with release_profile("1.36"):
        got, err = update_container_fs_thresholds(given, image_fs, split)
        assert got == given + appended and err == error


def test_update_container_fs_thresholds_overwrites_what_the_user_set():
    """A containerfs threshold in the config is replaced in place by the copy; the error names the last one."""
    user_hard = hard(SIGNAL_CONTAINERFS_AVAILABLE, "1Gi")
    user_soft = soft(SIGNAL_CONTAINERFS_AVAILABLE, "2Gi", MINUTE)
    with release_profile("1.36"):
        got, err = update_container_fs_thresholds([NODEFS_HARD, user_hard, user_soft], False, False)
        assert got == [NODEFS_HARD, copy_of(SIGNAL_CONTAINERFS_AVAILABLE, NODEFS_HARD),
                       copy_of(SIGNAL_CONTAINERFS_AVAILABLE, EMPTY), copy_of(SIGNAL_CONTAINERFS_INODES_FREE, EMPTY),
                       copy_of(SIGNAL_CONTAINERFS_INODES_FREE, EMPTY)]
        assert err == "found containerfs.available for soft eviction. ignoring"


# helpers.go buildSignalToRankFunc / buildSignalToNodeReclaimFuncs (v1.32.10, kubeedge v1.23.0): derived.
@pytest.mark.parametrize("image_fs, split, expected", [
    (False, False, {"nodefs": "images root logs localVolumeSource", "imagefs": "images root logs localVolumeSource",
                    "containerfs": "images root logs localVolumeSource"}),
    (True, False, {"nodefs": "logs localVolumeSource", "imagefs": "root images", "containerfs": "root images"}),
    (True, True, {"nodefs": "logs localVolumeSource root", "imagefs": "images",
                  "containerfs": "logs localVolumeSource root"}),
])
def test_disk_stats_each_signal_ranks_by(image_fs, split, expected):
    with release_profile("1.36"):
        for fs, measured in expected.items():
            for suffix in ("available", "inodesFree"):
                assert ranking.disk_stats_to_measure(f"{fs}.{suffix}", image_fs, split) == measured.split()
    with release_profile("1.27"):  # v1.27: no "images", and no split
        assert ranking.disk_stats_to_measure("imagefs.available", True, True) == ["root"]


@pytest.mark.parametrize("image_fs, split, expected", [
    (False, False, {"nodefs": 2, "imagefs": 2, "containerfs": 2}),
    (True, False, {"nodefs": 0, "imagefs": 2, "containerfs": 2}),
    (True, True, {"nodefs": 1, "imagefs": 1, "containerfs": 1}),  # containers on nodefs, images on imagefs
])
def test_node_reclaim_funcs_by_layout(image_fs, split, expected):
    with release_profile("1.36"):
        funcs = reclaim.build_signal_to_node_reclaim_funcs(None, None, list, image_fs, split)
        for fs, count in expected.items():
            assert len(funcs[f"{fs}.available"]) == len(funcs[f"{fs}.inodesFree"]) == count
        if split:
            assert [f.__name__ for f in funcs["imagefs.available"]] == ["delete_unused_images"]
            assert [f.__name__ for f in funcs["containerfs.available"]] == ["delete_all_unused_containers"]
    with release_profile("1.27"):
        assert "containerfs.available" not in reclaim.build_signal_to_node_reclaim_funcs(None, None, list, image_fs)


def named_disk_stats(pod, rootfs):
    """newPodDiskStats, with the container stat named after its container (so the message can name it)."""
    return {"podRef": pod_ref(pod), "containers": [{"name": c.name, "rootfs": {"usedBytes": b(rootfs)},
                                                    "logs": {"usedBytes": 0}} for c in pod.spec.containers]}


def disk_summary_with_containerfs(nodefs, imagefs, containerfs, pod_stats):
    """makeDiskStats of the 1.31+ copy: nodefs, imagefs and containerFs, each with capacity = 2 x available."""
    fs = {name: {"availableBytes": b(v), "capacityBytes": 2 * b(v)}
          for name, v in (("fs", nodefs), ("imageFs", imagefs), ("containerFs", containerfs))}
    return stats.summary_from_json({"node": {"fs": fs["fs"], "runtime": {"imageFs": fs["imageFs"],
                                                                         "containerFs": fs["containerFs"]}},
                                    "pods": list(pod_stats)})


SMALL = ("below-requests", resource_list(disk="1Gi"), resource_list(disk="1Gi"), "900Mi")


@pytest.mark.parametrize("case, dedicated, gate, split, disks, threshold, pods, message", [
    ("eviction due to disk pressure; no image fs", False, True, False, ("1.5Gi", "10Gi", "10Gi"),
     hard(SIGNAL_NODEFS_AVAILABLE, "2Gi"),
     [SMALL, ("above-requests", resource_list(disk="100Mi"), resource_list(disk="1Gi"), "700Mi")],
     "The node was low on resource: ephemeral-storage. Threshold quantity: 2Gi, available: 1536Mi. Container "
     "above-requests was using 700Mi, request is 100Mi, has larger consumption of ephemeral-storage. "),
    ("eviction due to image disk pressure; image fs", True, True, False, ("1Gi", "10Gi", "10Gi"),
     hard(SIGNAL_IMAGEFS_AVAILABLE, "50Gi"),
     [SMALL, ("above-requests", resource_list(disk="50Gi"), resource_list(disk="50Gi"), "80Gi")],
     "The node was low on resource: ephemeral-storage. Threshold quantity: 50Gi, available: 10Gi. Container "
     "above-requests was using 80Gi, request is 50Gi, has larger consumption of ephemeral-storage. "),
    ("eviction due to container disk pressure; feature off; error; container fs", True, False, True,
     ("1Gi", "100Gi", "10Gi"), hard(SIGNAL_CONTAINERFS_AVAILABLE, "50Gi"),
     [SMALL, ("above-requests", resource_list(disk="50Gi"), resource_list(disk="50Gi"), "80Gi")], None),
    ("eviction due to container disk pressure; container fs", True, True, True, ("10Gi", "100Gi", "10Gi"),
     hard(SIGNAL_NODEFS_AVAILABLE, "50Gi"),
     [SMALL, ("above-requests", resource_list(disk="50Gi"), resource_list(disk="50Gi"), "80Gi")],
     "The node was low on resource: ephemeral-storage. Threshold quantity: 50Gi, available: 10Gi. Container "
     "above-requests was using 80Gi, request is 50Gi, has larger consumption of ephemeral-storage. "),
])
def test_disk_pressure_node_fs_verify_pod_status(case, dedicated, gate, split, disks, threshold, pods, message):
    """eviction_manager_test.go#TestDiskPressureNodeFs_VerifyPodStatus (4 cases), read in the stored 1.31+ copy
    (mockDiskGC.readAndWriteSeparate is the split; KubeletSeparateDiskGC set per case). Run under 1.36."""
    with release_profile("1.36"), set_feature_gate_during_test(DEFAULT_FEATURE_GATE, "KubeletSeparateDiskGC", gate):
        made = [new_pod(name, DEFAULT, req, lim) for name, req, lim, _ in pods]
        pod_stats = [named_disk_stats(pod, rootfs) for pod, (*_, rootfs) in zip(made, pods)]
        manager, clock, killer = make_manager([threshold], dedicated_image_fs=dedicated, split_container_fs=split)
        evicted = manager.synchronize(disk_summary_with_containerfs(*disks, pod_stats), made)
        if message is None:
            assert evicted == [] and manager.last_sync.error == SPLIT_DISK_GATE_OFF == (
                "KubeletSeparateDiskGC is turned off but we still have a split filesystem")
            return
        assert manager.is_under_disk_pressure()
        [one] = evicted
        assert (one.pod.metadata.name, one.phase, one.status_reason, one.message) == (
            "above-requests", "Failed", "Evicted", message)
        assert one.condition == {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                                 "message": message}
        assert one.grace_period_override == 1


def test_split_with_the_gate_off_never_ranks_after_the_first_pass():
    """eviction_manager.go synchronize: the first pass returns the error with dedicatedImageFs already set, so
    later passes skip the block and never build rank or reclaim functions: pressure reported, nobody evicted."""
    with release_profile("1.29"):  # KubeletSeparateDiskGC alpha, off
        pod = new_pod("above-requests", DEFAULT, resource_list(disk="50Gi"), resource_list(disk="50Gi"))
        manager, clock, killer = make_manager([hard(SIGNAL_NODEFS_AVAILABLE, "50Gi")], dedicated_image_fs=True,
                                              split_container_fs=True)
        summary = disk_summary_with_containerfs("10Gi", "100Gi", "10Gi", [named_disk_stats(pod, "80Gi")])
        assert manager.synchronize(summary, [pod]) == [] and manager.last_sync.error == SPLIT_DISK_GATE_OFF
        assert not manager.is_under_disk_pressure()  # the failed pass observed nothing
        clock.advance(timedelta(seconds=10))
        assert manager.synchronize(summary, [pod]) == [] and manager.is_under_disk_pressure()
        assert manager.last_sync.error == ""


def test_the_manager_watches_containerfs_copies_from_1_29():
    """synchronize's first pass adds the containerfs copies (a shared disk: those of nodefs) to its own Config."""
    with release_profile("1.36"):
        pod = new_pod("p", DEFAULT)
        manager, clock, killer = make_manager([NODEFS_HARD])
        config = manager.config
        summary = disk_summary_with_containerfs("100Gi", "100Gi", "5Gi", [named_disk_stats(pod, "1Gi")])
        [evicted] = manager.synchronize(summary, [pod])  # containerfs.available 5Gi < 10Gi: met on its own
        assert evicted.signal == SIGNAL_CONTAINERFS_AVAILABLE
        assert copy_of(SIGNAL_CONTAINERFS_AVAILABLE, NODEFS_HARD) in manager.config.thresholds
        assert config.thresholds == [NODEFS_HARD]  # the caller's Config is not changed
    with release_profile("1.27"):
        manager, clock, killer = make_manager([NODEFS_HARD])
        assert manager.synchronize(summary, [pod]) == [] and manager.config.thresholds == [NODEFS_HARD]


def test_the_replay_lists_the_containerfs_copies(capsys):
    """inodes.yaml (one disk, default thresholds): under 1.36 the manager also watches containerfs copies of the
    nodefs thresholds, met with them; the empty soft copies (no operator) are not listed."""
    code, doc, _ = run_json(capsys, SCENARIOS / "inodes.yaml")
    assert code == 0 and not any(t["signal"].startswith("containerfs") for t in doc["thresholds"])
    code, doc, _ = run_json(capsys, SCENARIOS / "inodes.yaml", "--kubernetes-version", "1.36")
    texts = [t["text"] for t in doc["thresholds"]]
    assert texts[-2:] == ["containerfs.available<10%", "containerfs.inodesFree<5%"]
    assert "imagefs.inodesFree<5%" in texts  # the 1.30 default
    met = next(step["thresholds_met"] for step in doc["steps"] if step["thresholds_met"])
    assert met == ["nodefs.inodesFree<5%", "imagefs.inodesFree<5%", "containerfs.inodesFree<5%"]


# ---- eviction rank --signal containerfs.* --------------------------------------------------------------

def split_summary(tmp_path, split=True):
    """disk-pressure.json with a dedicated imagefs and a containerFs (split from it, or the same numbers)."""
    doc = json.loads((SUMMARY / "disk-pressure.json").read_text())
    image = dict(doc["node"]["runtime"]["imageFs"], availableBytes=50 * 2**30, capacityBytes=100 * 2**30)
    doc["node"]["runtime"] = {"imageFs": image, "containerFs": dict(doc["node"]["fs"]) if split else dict(image)}
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(doc))
    return path


def rank(capsys, summary, signal, *extra):
    code = main(["eviction", "rank", "--summary", str(summary), "--pods", str(SUMMARY / "disk-pods.yaml"),
                 "--signal", signal, "--output", "json", *extra])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


def test_rank_containerfs_is_unsupported_in_v1_27(tmp_path, capsys):
    code, _, err = rank(capsys, split_summary(tmp_path), "containerfs.available")
    assert code == 2 and "--signal: unsupported eviction signal containerfs.available (expected one of: " in err
    assert "containerfs" not in err.split("expected one of:")[1]


def test_rank_containerfs_on_a_split_node(tmp_path, capsys):
    """From 1.31 (gate on): containerfs ranks as nodefs does with the writable layers (root, logs, volumes);
    imagefs sums only "images", so every pod uses 0 and priority decides."""
    summary = split_summary(tmp_path)
    code, report, _ = rank(capsys, summary, "containerfs.available", "--kubernetes-version", "1.36")
    assert code == 0 and report["split_container_fs"] is True and report["dedicated_image_fs"] is True
    code, nodefs, _ = rank(capsys, SUMMARY / "disk-pressure.json", "nodefs.available")  # v1.27, one disk
    assert [p["pod"] for p in report["pods"]] == [p["pod"] for p in nodefs["pods"]]
    code, images, _ = rank(capsys, summary, "imagefs.available", "--kubernetes-version", "1.36")
    assert {p["keys"]["usage"] for p in images["pods"]} == {0}
    priorities = [p["keys"]["priority"] for p in images["pods"]]
    assert priorities == sorted(priorities)
    code, old, _ = rank(capsys, summary, "imagefs.available")  # v1.27 reads no containerFs: writable layers on imagefs
    assert "split_container_fs" not in old and {p["keys"]["usage"] for p in old["pods"]} != {0}


def test_rank_containerfs_on_one_filesystem(tmp_path, capsys):
    """containerFs reported with imageFs's numbers is no split: containerfs ranks as imagefs (dedicated)."""
    summary = split_summary(tmp_path, split=False)
    code, report, _ = rank(capsys, summary, "containerfs.inodesFree", "--kubernetes-version", "1.36")
    code, images, _ = rank(capsys, summary, "imagefs.inodesFree", "--kubernetes-version", "1.36")
    assert report["split_container_fs"] is False
    assert [p["keys"] for p in report["pods"]] == [p["keys"] for p in images["pods"]]


def test_rank_a_split_node_with_the_gate_off(tmp_path, capsys):
    """1.29 and 1.30 (KubeletSeparateDiskGC alpha, off): the eviction manager refuses a split filesystem."""
    code, _, err = rank(capsys, split_summary(tmp_path), "nodefs.available", "--kubernetes-version", "1.30")
    assert code == 2 and SPLIT_DISK_GATE_OFF in err
    code, report, _ = rank(capsys, split_summary(tmp_path), "nodefs.available", "--kubernetes-version", "1.30",
                           "--feature-gates", "KubeletSeparateDiskGC=true")
    assert code == 0 and report["split_container_fs"] is True


def test_the_release_profile_is_put_back():
    assert features.DEFAULT_FEATURE_GATE.release == "1.27" and not features.DEFAULT_FEATURE_GATE.enabled_gates
