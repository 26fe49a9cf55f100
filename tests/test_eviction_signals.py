"""Chapter 4: observations from the Summary, thresholds met, grace periods and node conditions.

Tables ported from pkg/kubelet/eviction/helpers_test.go (copy about v1.29; the containerfs rows and cases
it has are post-1.27 — KubeletSeparateDiskGC — and are left out). Everything else matches v1.27.7.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_kubelet import stats as statsapi
from mini_kubelet.eviction import api, signals
from mini_kubelet.eviction.api import Threshold, ThresholdValue
from mini_kubelet.eviction.signals import DISK_PRESSURE, MEMORY_PRESSURE, PID_PRESSURE, SignalObservation

pytestmark = pytest.mark.ch4

MI, GI = 2**20, 2**30
MEM, ALLOC = api.SIGNAL_MEMORY_AVAILABLE, api.SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE
NODEFS, IMAGEFS, PID = api.SIGNAL_NODEFS_AVAILABLE, api.SIGNAL_IMAGEFS_AVAILABLE, api.SIGNAL_PID_AVAILABLE
NODEFS_INODES, IMAGEFS_INODES = api.SIGNAL_NODEFS_INODES_FREE, api.SIGNAL_IMAGEFS_INODES_FREE
NOW = datetime(2024, 5, 14, 9, 0, tzinfo=timezone.utc)
FIXTURE = Path(__file__).parent / "data" / "summary-worker-1.json"


def t(signal, quantity=None, percentage=None, grace=timedelta(0), min_reclaim=None):
    return Threshold(signal, api.OP_LESS_THAN, ThresholdValue(quantity, percentage), grace, min_reclaim)


class Pod:  # only metadata.uid is read by the stats lookup
    def __init__(self, uid):
        self.metadata = type("Meta", (), {"uid": uid})()


# helpers_test.go#TestMakeSignalObservations (containerFs rows: post-1.27)
def test_make_signal_observations():
    pods = [("pod1", "ns1", "uuid1"), ("pod1", "ns2", "uuid2"), ("pod3", "ns3", "uuid3")]
    summary = statsapi.Summary(
        node=statsapi.NodeStats(
            memory=statsapi.MemoryStats(available_bytes=GI, working_set_bytes=GI),
            fs=statsapi.FsStats(available_bytes=1024, capacity_bytes=2048, inodes_free=1024, inodes=MI),
            runtime=statsapi.RuntimeStats(image_fs=statsapi.FsStats(available_bytes=MI, capacity_bytes=2 * MI,
                                                                     inodes_free=1024, inodes=MI)),
            rlimit=statsapi.RlimitStats(maxpid=255816, curproc=1000),
            system_containers=[statsapi.ContainerStats(name="pods", memory=statsapi.MemoryStats(available_bytes=GI,
                                                                                                working_set_bytes=GI))]),
        pods=[statsapi.PodStats(pod_ref=statsapi.PodReference(*ref)) for ref in pods])
    observations, stats = signals.make_signal_observations(summary)
    got = {signal: (o.available, o.capacity) for signal, o in observations.items()}
    assert got == {MEM: (GI, 2 * GI), ALLOC: (GI, 2 * GI), NODEFS: (1024, 2048), NODEFS_INODES: (1024, 1048576),
                   IMAGEFS: (1048576, 2097152), IMAGEFS_INODES: (1024, 1048576), PID: (254816, 255816)}
    for name, namespace, uid in pods:
        assert stats(Pod(uid)).pod_ref == statsapi.PodReference(name, namespace, uid)


def test_observations_from_a_real_summary_file():
    """memory.available's capacity is available + workingSet; allocatable comes from the "pods" system container."""
    observations, stats = signals.make_signal_observations(statsapi.load_summary(FIXTURE))
    assert observations[MEM] == SignalObservation(27144192, 27144192 + 7920 * MI, datetime(2024, 5, 14, 9, 31, 7, tzinfo=timezone.utc))
    assert (observations[ALLOC].available, observations[ALLOC].capacity) == (782118912, 782118912 + 7100 * MI)
    assert observations[PID].available == 4194304 - 1873
    assert stats(Pod("9a3e5f7b-1d2c-4b8a-8e9f-0c1d2e3f4a03")).pod_ref.name == "postgres-0"


def test_missing_inputs_leave_signals_out():
    """helpers.go makeSignalObservations omits a signal when an input is missing; imagefs inodes need imagefs bytes."""
    summary = statsapi.Summary(node=statsapi.NodeStats(
        memory=statsapi.MemoryStats(available_bytes=GI),  # no workingSetBytes
        fs=statsapi.FsStats(inodes_free=5, inodes=10),  # inodes without bytes: still observed for nodefs
        runtime=statsapi.RuntimeStats(image_fs=statsapi.FsStats(inodes_free=5, inodes=10)),  # ... but not for imagefs
        rlimit=statsapi.RlimitStats(maxpid=100, curproc=130),
        system_containers=[statsapi.ContainerStats(name="kubelet", memory=statsapi.MemoryStats(available_bytes=1,
                                                                                               working_set_bytes=1))]))
    observations, _ = signals.make_signal_observations(summary)
    assert set(observations) == {NODEFS_INODES, PID}
    assert observations[PID].available == -30  # int64 subtraction: negative is possible


# helpers_test.go#TestThresholdsMet: hard memory.available<1Gi with min-reclaim 500Mi
@pytest.mark.parametrize("name, enforce, available, met", [
    ("threshold-met-memory", False, 500 * MI, True),
    ("threshold-not-met", False, 2 * GI, False),
    ("threshold-met-with-min-reclaim", True, int(1.05 * GI), True),
    ("threshold-not-met-with-min-reclaim", True, 2 * GI, False),
])
def test_thresholds_met(name, enforce, available, met):
    hard = t(MEM, "1Gi", min_reclaim=ThresholdValue("500Mi"))
    observations = {MEM: SignalObservation(available=available, capacity=0)}
    assert signals.thresholds_met([hard], observations, enforce) == ([hard] if met else [])


def test_thresholds_met_empty_and_strict():
    assert signals.thresholds_met([], {}, False) == []
    hard = t(MEM, "1Gi")
    assert signals.thresholds_met([hard], {MEM: SignalObservation(GI, 0)}, False) == []  # equal: not met
    assert signals.thresholds_met([hard], {MEM: SignalObservation(GI - 1, 0)}, False) == [hard]
    assert signals.thresholds_met([hard], {}, False) == []  # no observation: skipped


# helpers_test.go#TestPercentageThresholdsMet: T0 = memory<20% (min-reclaim 5%), T1 = nodefs<30%
T0 = t(MEM, percentage=0.2, min_reclaim=ThresholdValue(percentage=0.05))
T1 = t(NODEFS, percentage=0.3)


@pytest.mark.parametrize("name, mem, nodefs, enforce, expected", [
    ("BothMet", (100 * MI, 1000 * MI), (100 * GI, 1000 * GI), False, [T0, T1]),
    ("NoneMet", (300 * MI, 1000 * MI), (400 * GI, 1000 * GI), False, []),
    ("DiskMet", (300 * MI, 1000 * MI), (100 * GI, 1000 * GI), False, [T1]),
    ("MemoryMet", (100 * MI, 1000 * MI), (400 * GI, 1000 * GI), False, [T0]),
    ("MemoryMetWithMinReclaim", (225 * MI, 1000 * MI), None, True, [T0]),  # 209715203 + 52428800 > 235929600
    ("MemoryNotMetWithMinReclaim", (300 * MI, 1000 * MI), None, True, []),
])
def test_percentage_thresholds_met(name, mem, nodefs, enforce, expected):
    observations = {MEM: SignalObservation(*mem)}
    if nodefs:
        observations[NODEFS] = SignalObservation(*nodefs)
    assert signals.thresholds_met([T0, T1], observations, enforce) == expected


# helpers_test.go#TestThresholdsUpdatedStats
T_OLD, T_NEW = datetime(2016, 1, 1, 0, 0), datetime(2016, 1, 1, 0, 1)


@pytest.mark.parametrize("name, observed, last, kept", [
    ("no-time", None, "none", True),
    ("no-last-observation", T_OLD, "none", True),
    ("time-machine", T_OLD, T_NEW, False),
    ("same-observation", T_OLD, T_OLD, False),
    ("new-observation", T_NEW, T_OLD, True),
])
def test_thresholds_updated_stats(name, observed, last, kept):
    threshold = t(MEM, "1Gi")
    observations = {MEM: SignalObservation(0, 0, observed)}
    last_observations = {} if last == "none" else {MEM: SignalObservation(0, 0, last)}
    assert signals.thresholds_updated_stats([threshold], observations, last_observations) == ([threshold] if kept else [])


def test_thresholds_updated_stats_empty():
    assert signals.thresholds_updated_stats([], {}, {}) == []


# helpers_test.go#TestThresholdsFirstObservedAt
def test_thresholds_first_observed_at():
    hard, old = t(MEM, "1Gi"), NOW - timedelta(minutes=1)
    assert signals.thresholds_first_observed_at([], {}, NOW) == {}
    assert signals.thresholds_first_observed_at([hard], {}, NOW) == {hard: NOW}
    assert signals.thresholds_first_observed_at([hard], {hard: old}, NOW) == {hard: old}
    assert signals.thresholds_first_observed_at([], {hard: old}, NOW) == {}  # no longer met: forgotten


# helpers_test.go#TestThresholdsMetGracePeriod
def test_thresholds_met_grace_period():
    hard, soft = t(MEM, "1Gi"), t(MEM, "2Gi", grace=timedelta(minutes=1))
    old = NOW - timedelta(minutes=2)
    assert signals.thresholds_met_grace_period({}, NOW) == []
    assert signals.thresholds_met_grace_period({hard: NOW}, NOW) == [hard]
    assert signals.thresholds_met_grace_period({soft: NOW}, NOW) == []
    assert signals.thresholds_met_grace_period({soft: old}, NOW) == [soft]
    assert signals.thresholds_met_grace_period({soft: NOW - timedelta(minutes=1)}, NOW) == [soft]  # exactly: met (>=)


# helpers_test.go#TestNodeConditions
def test_node_conditions():
    assert signals.node_conditions([]) == []
    assert signals.node_conditions([t(MEM, "1Gi")]) == [MEMORY_PRESSURE]
    assert signals.node_conditions([t(MEM, "1Gi"), t(NODEFS, "1Gi"), t(ALLOC, "1Gi"), t(PID, "10")]) == [
        MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE]


# helpers_test.go#TestNodeConditionsLastObservedAt
def test_node_conditions_last_observed_at():
    old = NOW - timedelta(minutes=1)
    assert signals.node_conditions_last_observed_at([MEMORY_PRESSURE], {}, NOW) == {MEMORY_PRESSURE: NOW}
    assert signals.node_conditions_last_observed_at([MEMORY_PRESSURE], {MEMORY_PRESSURE: old}, NOW) == {MEMORY_PRESSURE: NOW}
    assert signals.node_conditions_last_observed_at([], {MEMORY_PRESSURE: old}, NOW) == {MEMORY_PRESSURE: old}


# helpers_test.go#TestNodeConditionsObservedSince
@pytest.mark.parametrize("name, period, expected", [
    ("in-period", timedelta(minutes=2), [MEMORY_PRESSURE]),
    ("out-of-period", timedelta(seconds=30), []),
    ("exactly the period (strict <)", timedelta(minutes=1), []),
    ("zero period: never reported", timedelta(0), []),
])
def test_node_conditions_observed_since(name, period, expected):
    observed_at = {MEMORY_PRESSURE: NOW - timedelta(minutes=1)}
    assert signals.node_conditions_observed_since(observed_at, period, NOW) == expected


# helpers_test.go#TestHasNodeConditions
def test_has_node_condition():
    assert signals.has_node_condition(["Ready", DISK_PRESSURE, MEMORY_PRESSURE], MEMORY_PRESSURE)
    assert not signals.has_node_condition(["Ready", DISK_PRESSURE], MEMORY_PRESSURE)


# helpers_test.go#TestCompareThresholdValue (checked both ways: the comparison is symmetric)
@pytest.mark.parametrize("a, b, equal", [
    (ThresholdValue(quantity="123"), ThresholdValue(quantity="123"), True),
    (ThresholdValue(quantity="123"), ThresholdValue(quantity="456"), False),
    (ThresholdValue(quantity="123"), ThresholdValue(percentage=0.1), False),
    (ThresholdValue(percentage=0.1), ThresholdValue(percentage=0.1), True),
    (ThresholdValue(percentage=0.2), ThresholdValue(percentage=0.1), False),
    (ThresholdValue(quantity="1Gi"), ThresholdValue(quantity="1024Mi"), True),
])
def test_compare_threshold_value(a, b, equal):
    assert signals.compare_threshold_value(a, b) is equal
    assert signals.compare_threshold_value(b, a) is equal


# helpers_test.go#TestGetReclaimableThreshold (without the post-1.27 containerfs threshold)
def test_get_reclaimable_threshold():
    listed = signals.sort_by_eviction_priority([t(ALLOC, "1Gi"), t(MEM, "1Gi"), t(IMAGEFS, "1Gi"), t(NODEFS, "1Gi")])
    threshold, resource, ok = signals.get_reclaimable_threshold(listed)
    assert ok and resource == "memory" and threshold.signal in (MEM, ALLOC)
    assert signals.get_reclaimable_threshold([]) == (None, "", False)


# helpers_test.go#TestSortByEvictionPriority
@pytest.mark.parametrize("name, given_, expected", [
    ("memory first", [NODEFS, PID, MEM], [MEM, NODEFS, PID]),
    ("allocatable memory first", [NODEFS, PID, ALLOC], [ALLOC, NODEFS, PID]),
    ("empty", [], []),
    # derived from Go's insertion sort (≤ 12 items) with this Less: memory thresholds end up reversed
    ("memory thresholds reversed among themselves", [MEM, NODEFS, ALLOC], [ALLOC, MEM, NODEFS]),
    # so the one acted on and named depends on the order given, which upstream takes from a Go map
    ("two memory thresholds: the allocatable one first", [MEM, ALLOC], [ALLOC, MEM]),
    ("the same two the other way round: memory.available first", [ALLOC, MEM], [MEM, ALLOC]),
])
def test_sort_by_eviction_priority(name, given_, expected):
    result = signals.sort_by_eviction_priority([t(signal, "1Gi") for signal in given_])
    assert [x.signal for x in result] == expected


def test_merge_thresholds_ignores_min_reclaim():
    """mergeThresholds/hasThreshold compare grace, operator, signal and value; not min-reclaim."""
    plain, with_reclaim, other = t(MEM, "1Gi"), t(MEM, "1Gi", min_reclaim=ThresholdValue("500Mi")), t(MEM, "2Gi")
    assert signals.merge_thresholds([plain], [with_reclaim, other]) == [plain, other]
    assert signals.merge_thresholds([], [plain, plain]) == [plain]


def test_hard_and_allocatable_predicates():
    assert signals.is_hard_eviction_threshold(t(MEM, "1Gi"))
    assert not signals.is_hard_eviction_threshold(t(MEM, "1Gi", grace=timedelta(seconds=1)))
    assert signals.is_allocatable_eviction_threshold(t(ALLOC, "1Gi"))
    assert set(signals.SIGNAL_TO_NODE_CONDITION) == set(signals.SIGNAL_TO_RESOURCE) == set(api.OP_FOR_SIGNAL)


@given(st.integers(0, 2**40), st.integers(1, 2**40), st.integers(1, 100))
def test_percentage_threshold_met_iff_strictly_above_available(available, capacity, percent):
    threshold = t(NODEFS, percentage=percent / 100)
    quantity = api.get_threshold_quantity(threshold.value, capacity)
    met = signals.thresholds_met([threshold], {NODEFS: SignalObservation(available, capacity)}, False)
    assert (met == [threshold]) == (quantity > available)
    assert 0 <= quantity <= capacity
