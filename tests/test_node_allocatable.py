"""Chapter 3: node allocatable, what is reserved from it, and the /kubepods cgroup limits."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_kubelet import api
from mini_kubelet.cm import cgroup_files
from mini_kubelet.cm.node_allocatable import (
    get_node_allocatable_absolute,
    get_node_allocatable_reservation,
    node_allocatable,
    node_allocatable_cgroup_config,
    parse_percentage,
    validate_node_allocatable,
)

pytestmark = pytest.mark.ch3


def rl(cpu=None, memory=None):
    """getResourceList(cpu, mem) of the upstream tests: "" leaves the resource out."""
    return {name: amount for name, amount in (("cpu", cpu), ("memory", memory)) if amount}


def millis(resources):
    return {name: api.milli_value(amount) for name, amount in resources.items()}


CAP = rl("10", "10Gi")

# pkg/kubelet/cm/node_container_manager_linux_test.go TestNodeAllocatableReservationForScheduling (cpu/memory)
# (kubeReserved, systemReserved, hard memory.available threshold, capacity, expected reservation)
RESERVATION_CASES = [
    (rl("100m", "100Mi"), rl("50m", "50Mi"), None, CAP, rl("150m", "150Mi")),
    (rl("100m", "100Mi"), rl("50m", "50Mi"), "100Mi", CAP, rl("150m", "250Mi")),
    (rl("100m", "100Mi"), rl("50m", "50Mi"), "5%", CAP, {"cpu": "150m", "memory": "694157320"}),
    ({}, {}, None, CAP, {}),
    (rl("", "100Mi"), rl("50m", "50Mi"), None, CAP, rl("50m", "150Mi")),
    (rl("50m", "100Mi"), rl("", "50Mi"), None, CAP, rl("50m", "150Mi")),
    (rl("", "100Mi"), rl("", "50Mi"), None, rl("10", ""), {}),
]


@pytest.mark.parametrize("kube, system, threshold, capacity, expected", RESERVATION_CASES)
def test_node_allocatable_reservation_for_scheduling(kube, system, threshold, capacity, expected):
    thresholds = {"memory.available": threshold} if threshold else None
    got = get_node_allocatable_reservation(capacity, system, kube, thresholds)
    assert millis(got) == millis(expected)


# Same test, the ephemeral-storage part: only kubeReserved, signal nodefs.available.
@pytest.mark.parametrize("kube, threshold, expected", [
    ({"ephemeral-storage": "100Mi"}, None, "100Mi"),
    ({"ephemeral-storage": "100Mi"}, "100Mi", "200Mi"),
    ({"ephemeral-storage": "150Mi"}, "5%", "694157320"),
    ({}, None, None),
])
def test_node_allocatable_reservation_for_ephemeral_storage(kube, threshold, expected):
    thresholds = {"nodefs.available": threshold} if threshold else None
    got = get_node_allocatable_reservation({"ephemeral-storage": "10Gi"}, None, kube, thresholds)
    assert millis(got) == ({"ephemeral-storage": api.milli_value(expected)} if expected else {})


# pkg/kubelet/cm/node_container_manager_linux_test.go TestNodeAllocatableForEnforcement
# (thresholds are ignored: the absolute allocatable is what /kubepods is limited to)
@pytest.mark.parametrize("kube, system, threshold, capacity, expected", [
    (rl("100m", "100Mi"), rl("50m", "50Mi"), None, CAP, rl("9850m", "10090Mi")),
    (rl("100m", "100Mi"), rl("50m", "50Mi"), "100Mi", CAP, rl("9850m", "10090Mi")),
    (rl("100m", "100Mi"), rl("50m", "50Mi"), "5%", CAP, rl("9850m", "10090Mi")),
    ({}, {}, None, CAP, rl("10", "10Gi")),
    (rl("", "100Mi"), rl("50m", "50Mi"), None, CAP, rl("9950m", "10090Mi")),
    (rl("50m", "100Mi"), rl("", "50Mi"), None, CAP, rl("9950m", "10090Mi")),
    (rl("", "100Mi"), rl("", "50Mi"), None, rl("10", ""), rl("10", "")),
])
def test_node_allocatable_for_enforcement(kube, system, threshold, capacity, expected):
    assert millis(get_node_allocatable_absolute(capacity, system, kube)) == millis(expected)
    config = node_allocatable_cgroup_config(capacity, system, kube)
    assert config.cpu_shares == api.milli_value(expected["cpu"]) * 1024 // 1000
    assert config.memory == (api.value(expected["memory"]) if "memory" in expected else None)


# pkg/kubelet/cm/node_container_manager_linux_test.go TestNodeAllocatableInputValidation
@pytest.mark.parametrize("kube, system, threshold, capacity, invalid", [
    *[(kube, system, threshold, capacity, []) for kube, system, threshold, capacity, _ in RESERVATION_CASES],
    (rl("5", "10Gi"), rl("5", "10Gi"), "2Gi", rl("10", "11Gi"), ["memory"]),
])
def test_node_allocatable_input_validation(kube, system, threshold, capacity, invalid):
    thresholds = {"memory.available": threshold} if threshold else None
    assert validate_node_allocatable(capacity, system, kube, thresholds) == invalid


@pytest.mark.parametrize("kube, threshold, capacity, invalid", [
    ({"ephemeral-storage": "100Mi"}, None, "500Mi", []),
    ({"ephemeral-storage": "20Gi"}, "100Mi", "20Gi", ["ephemeral-storage"]),
])
def test_node_allocatable_input_validation_ephemeral_storage(kube, threshold, capacity, invalid):
    thresholds = {"nodefs.available": threshold} if threshold else None
    assert validate_node_allocatable({"ephemeral-storage": capacity}, None, kube, thresholds) == invalid


# pkg/kubelet/eviction/helpers.go parsePercentage keeps a float32; cm hardEvictionReservation uses it.
@pytest.mark.parametrize("capacity, threshold, reserved", [
    ("10Gi", "5%", 536870920),  # not 536870912: float32(0.05) is 0.0500000007...
    ("100Gi", "10%", 10737418400),
    ("10Gi", "0%", None),  # "0%" and "100%" make no threshold at all
    ("10Gi", "100%", None),
])
def test_percentage_thresholds_are_float32(capacity, threshold, reserved):
    got = get_node_allocatable_reservation({"memory": capacity}, None, None, {"memory.available": threshold})
    assert got == ({"memory": Decimal(reserved)} if reserved else {})


def test_parse_percentage_rounds_like_go_float32():
    assert parse_percentage("5%") == 0.05000000074505806
    assert parse_percentage("10%") == 0.10000000149011612
    assert parse_percentage("100%") == 1.0


@pytest.mark.parametrize("thresholds", [{"memory.available": "0"}, {"memory.available": "101%"},
                                        {"memory.available": "-1%"}, {"memory.available": "1_0%"},
                                        {"nope.available": "1Gi"}])
def test_invalid_thresholds_are_refused(thresholds):
    with pytest.raises(ValueError):
        get_node_allocatable_reservation({"memory": "1Gi"}, None, None, thresholds)


def test_node_status_allocatable_takes_hugepages_out_of_memory():
    # pkg/kubelet/nodestatus/setters.go MachineInfo: capacity - reservation, then each hugepages-* capacity
    # comes out of allocatable memory as well.
    capacity = {"cpu": "4", "memory": "16Gi", "hugepages-2Mi": "1Gi", "hugepages-1Gi": "2Gi", "pods": "110"}
    got = node_allocatable(capacity, {"cpu": "100m", "memory": "1Gi"}, {"memory": "1Gi"}, {"memory.available": "100Mi"})
    assert millis(got) == millis({"cpu": "3900m", "memory": str(16 * 2**30 - 2 * 2**30 - 100 * 2**20 - 3 * 2**30),
                                  "hugepages-2Mi": "1Gi", "hugepages-1Gi": "2Gi", "pods": "110"})
    # ... but the /kubepods cgroup is not reduced by the threshold or the hugepages.
    config = node_allocatable_cgroup_config(capacity, {"cpu": "100m", "memory": "1Gi"}, {"memory": "1Gi"})
    assert config.memory == 14 * 2**30
    assert config.cpu_shares == 3993  # MilliCPUToShares(3900)
    assert config.huge_page_limit == {2097152: 2**30, 1073741824: 2 * 2**30}


def test_allocatable_never_goes_below_zero():
    assert node_allocatable({"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "2Gi"}, {"cpu": "2"}) == {
        "cpu": Decimal(0), "memory": Decimal(0), "hugepages-2Mi": Decimal(2 * 2**30)}


def test_kubepods_files_on_a_4_cpu_node():
    # pkg/kubelet/cm/node_container_manager_linux.go getCgroupConfig: 4 cores and no reservations give
    # MilliCPUToShares(4000) = 4096 shares (v2: weight 157).
    config = node_allocatable_cgroup_config({"cpu": "4", "memory": "16Gi", "pid": "4194304"})
    assert cgroup_files(config, 1, ()) == {"cpu.shares": "4096", "memory.limit_in_bytes": "17179869184",
                                           "pids.max": "4194304"}
    assert cgroup_files(config, 2, ())["cpu.weight"] == "157"


@given(st.integers(0, 2**40), st.integers(0, 2**40), st.integers(0, 2**40))
def test_allocatable_is_capacity_minus_reservation_clamped(capacity, system, kube):
    got = node_allocatable({"memory": str(capacity)}, {"memory": str(system)}, {"memory": str(kube)})
    assert got["memory"] == max(capacity - system - kube, 0)
    assert get_node_allocatable_absolute({"memory": str(capacity)}, {"memory": str(system)},
                                         {"memory": str(kube)}) == got
