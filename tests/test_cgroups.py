"""Chapter 3: cgroup names for both drivers, the files a ResourceConfig becomes, and the QoS tiers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_kubelet import api
from mini_kubelet.cm import cgroups
from mini_kubelet.cm.cgroups import (
    cgroup_files,
    cpu_shares_to_cpu_weight,
    cpu_weight_to_cpu_shares,
    is_pod_cgroup,
    new_cgroup_name,
    parse_cgroupfs_to_cgroup_name,
    parse_systemd_to_cgroup_name,
    pod_cgroup_name,
    to_cgroupfs,
    to_systemd,
)
from mini_kubelet.cm.helpers import ResourceConfig
from mini_kubelet.cm.qos_tiers import UNBOUNDED_HUGE_PAGE_LIMIT, qos_tier_configs

pytestmark = pytest.mark.ch3

UID = "6c1a4e95-6bb6-11e6-bc26-28d2444e470d"


def pod(uid="123", *containers):
    """A pod with the given containers, each (requests, limits) as dicts."""
    return api.pod_from_manifest({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": uid},
        "spec": {"containers": [
            {"name": f"c{i}", "image": "i", "resources": {"requests": req, "limits": lim}}
            for i, (req, lim) in enumerate(containers or [({}, {})])]},
    })


# pkg/kubelet/cm/cgroup_manager_linux_test.go TestNewCgroupName
def test_new_cgroup_name_copies_its_base():
    a = parse_cgroupfs_to_cgroup_name("/a/")
    ab = new_cgroup_name(a, "b")
    assert ab == ("a", "", "b")
    abc = new_cgroup_name(ab, "c")
    assert abc == ("a", "", "b", "c")
    new_cgroup_name(ab, "d")
    assert abc == ("a", "", "b", "c")


@pytest.mark.parametrize("component", ["a/b", "a_b"])
def test_new_cgroup_name_refuses_slash_and_underscore(component):
    # NewCgroupName panics on "/" or "_" so that the systemd escaping "-" -> "_" can be undone.
    with pytest.raises(ValueError):
        new_cgroup_name(("kubepods",), component)


# pkg/kubelet/cm/cgroup_manager_linux_test.go TestCgroupNameToSystemdBasename
@pytest.mark.parametrize("name, basename", [
    ((), "/"),
    (("system",), "system.slice"),
    (("system", "Burstable"), "system-Burstable.slice"),
    (("Burstable", "pod-123"), "Burstable-pod_123.slice"),
    (("test", "a", "b"), "test-a-b.slice"),
    (("test", "a", "b", "Burstable"), "test-a-b-Burstable.slice"),
    (("Burstable",), "Burstable.slice"),
    (("BestEffort", "pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d"),
     "BestEffort-pod_6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice"),
])
def test_cgroup_name_to_systemd_basename(name, basename):
    path = to_systemd(name)
    assert (path if path == "/" else path.rsplit("/", 1)[-1]) == basename


# pkg/kubelet/cm/cgroup_manager_linux_test.go TestCgroupNameToSystemd
@pytest.mark.parametrize("name, expected", [
    ((), "/"),
    (("Burstable",), "/Burstable.slice"),
    (("Burstable", "pod-123"), "/Burstable.slice/Burstable-pod_123.slice"),
    (("BestEffort", "pod-6c1a4e95-6bb6-11e6-bc26-28d2444e470d"),
     "/BestEffort.slice/BestEffort-pod_6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice"),
    (("kubepods",), "/kubepods.slice"),
])
def test_cgroup_name_to_systemd(name, expected):
    assert to_systemd(name) == expected


# pkg/kubelet/cm/cgroup_manager_linux_test.go TestCgroupNameToCgroupfs
@pytest.mark.parametrize("name, expected", [((), "/"), (("Burstable",), "/Burstable")])
def test_cgroup_name_to_cgroupfs(name, expected):
    assert to_cgroupfs(name) == expected


# pkg/kubelet/cm/cgroup_manager_linux_test.go TestParseSystemdToCgroupName
@pytest.mark.parametrize("text, expected", [("/test", ("test",)), ("/test.slice", ("test",))])
def test_parse_systemd_to_cgroup_name(text, expected):
    assert parse_systemd_to_cgroup_name(text) == expected


def test_systemd_path_of_a_burstable_pod_expands_every_level():
    # The example in the ToSystemd doc comment, pkg/kubelet/cm/cgroup_manager_linux.go.
    name = ("kubepods", "burstable", f"pod{UID}")
    assert to_systemd(name) == ("/kubepods.slice/kubepods-burstable.slice/"
                                "kubepods-burstable-pod6c1a4e95_6bb6_11e6_bc26_28d2444e470d.slice")
    assert to_cgroupfs(name) == f"/kubepods/burstable/pod{UID}"


def test_an_empty_component_cannot_become_a_slice():
    # runc ExpandSlice refuses "a--b.slice"; v1.27 ToSystemd does not skip empty parts (it panics).
    with pytest.raises(ValueError):
        to_systemd(("kubepods", "", "pod1"))


# pkg/kubelet/cm/cgroup_manager_linux_test.go TestCpuSharesToCpuWeight (same numbers from getCPUWeight),
# plus further examples computed from getCPUWeight (pkg/kubelet/cm/cgroup_manager_linux.go).
@pytest.mark.parametrize("shares, weight", [
    (2, 1), (3, 1), (4, 1), (28, 1), (29, 2), (245, 10), (262144, 10000),
    (102, 4), (204, 8), (256, 10), (1024, 39), (2048, 79), (262143, 9999), (300000, 10000),
])
def test_cpu_shares_to_cpu_weight(shares, weight):
    assert cpu_shares_to_cpu_weight(shares) == weight


# pkg/kubelet/cm/cgroup_manager_linux_test.go TestCpuWeightToCpuShares
@pytest.mark.parametrize("weight, shares", [(1, 2), (2, 28), (3, 54), (4, 80), (245, 6398), (10000, 262144)])
def test_cpu_weight_to_cpu_shares(weight, shares):
    assert cpu_weight_to_cpu_shares(weight) == shares


@given(st.integers(min_value=2, max_value=262144), st.integers(min_value=2, max_value=262144))
def test_cpu_weight_stays_in_range_and_keeps_order(a, b):
    low, high = sorted((a, b))
    assert 1 <= cpu_shares_to_cpu_weight(low) <= cpu_shares_to_cpu_weight(high) <= 10000


@given(st.lists(st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True), min_size=1, max_size=4))
def test_cgroup_names_convert_back_from_both_drivers(components):
    # "_" is forbidden in names, so the systemd escaping "-" -> "_" can always be undone.
    name = new_cgroup_name(cgroups.ROOT_CGROUP_NAME, *components)
    assert parse_systemd_to_cgroup_name(to_systemd(name)) == name
    assert parse_cgroupfs_to_cgroup_name(to_cgroupfs(name)) == name


# pkg/kubelet/cm/pod_container_manager_linux_test.go TestIsCgroupPod (QoS parents: [], [burstable], [besteffort])
IS_POD_CASES = [
    ((), (False, "")),
    (("pod123",), (True, "123")),
    (("pod123", "container.scope"), (False, "")),
    (("burstable",), (False, "")),
    (("burstable", "pod123"), (True, "123")),
    (("burstable", "pod123", "container.scope"), (False, "")),
    (("besteffort",), (False, "")),
    (("besteffort", "pod123"), (True, "123")),
    (("besteffort", "pod123", "container.scope"), (False, "")),
    (("system",), (False, "")),
    (("system", "kubelet"), (False, "")),
    (("podthis-uid-contains-reserved-word-pod",), (False, "")),
]


@pytest.mark.parametrize("driver", ["cgroupfs", "systemd"])
@pytest.mark.parametrize("name, expected", IS_POD_CASES)
def test_is_cgroup_pod(name, expected, driver):
    qos_containers = {"Guaranteed": (), "Burstable": ("burstable",), "BestEffort": ("besteffort",)}
    literal = cgroups.cgroup_name_to_path(name, driver)
    assert is_pod_cgroup(literal, qos_containers, driver) == expected


# pkg/kubelet/cm/pod_container_manager_linux_test.go TestGetPodContainerName (root = kubepods here)
@pytest.mark.parametrize("containers, qos_class, uid, cgroupfs, systemd", [
    ([({"cpu": "1000m", "memory": "1G"}, {"cpu": "1000m", "memory": "1G"})], "Guaranteed", "fake-uid-1",
     "/kubepods/podfake-uid-1", "/kubepods.slice/kubepods-podfake_uid_1.slice"),
    ([({"cpu": "1000m", "memory": "1G"}, {})], "Burstable", "fake-uid-3",
     "/kubepods/burstable/podfake-uid-3", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podfake_uid_3.slice"),
    ([({}, {})], "BestEffort", "fake-uid-5",
     "/kubepods/besteffort/podfake-uid-5", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podfake_uid_5.slice"),
])
def test_get_pod_container_name(containers, qos_class, uid, cgroupfs, systemd):
    from mini_kubelet import qos
    p = pod(uid, *containers)
    assert qos.get_pod_qos(p) == qos_class
    assert to_cgroupfs(pod_cgroup_name(p, qos_class)) == cgroupfs
    assert to_systemd(pod_cgroup_name(p, qos_class)) == systemd
    # The upstream table with an empty root: [podfake-uid-1] -> /podfake-uid-1 and /podfake_uid_2.slice.
    assert to_cgroupfs(pod_cgroup_name(p, qos_class, root=())) == cgroupfs.replace("/kubepods", "", 1)


# The files runc v1.1 writes for a ResourceConfig (pkg/kubelet/cm/cgroup_manager_linux.go toResources):
# v1 and v2, nothing for None.
GUARANTEED_POD = ResourceConfig(memory=104857600, cpu_shares=102, cpu_quota=10000, cpu_period=100000,
                                huge_page_limit={2097152: 4194304})


def test_v1_files():
    assert cgroup_files(GUARANTEED_POD, 1) == {
        "cpu.shares": "102", "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "10000",
        "memory.limit_in_bytes": "104857600",
        "hugetlb.2MB.limit_in_bytes": "4194304", "hugetlb.1GB.limit_in_bytes": "0",
    }


def test_v2_files():
    config = ResourceConfig(**{**GUARANTEED_POD.__dict__, "pids_limit": 1024, "unified": {"memory.min": "104857600"}})
    assert cgroup_files(config, 2) == {
        "cpu.weight": "4", "cpu.max": "10000 100000", "memory.max": "104857600", "pids.max": "1024",
        "hugetlb.2MB.max": "4194304", "hugetlb.1GB.max": "0", "memory.min": "104857600",
    }


@pytest.mark.parametrize("quota, period, v1, cpu_max", [
    (None, None, {}, None),
    (-1, 100000, {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "-1"}, "max 100000"),  # cpuCFSQuota off
    (20000, None, {"cpu.cfs_quota_us": "20000"}, "20000 100000"),  # a missing period becomes 100000 on v2
    (None, 100000, {"cpu.cfs_period_us": "100000"}, "max 100000"),  # a container without a cpu limit
    (20000, 5000, {"cpu.cfs_period_us": "5000", "cpu.cfs_quota_us": "20000"}, "20000 5000"),
])
def test_cpu_quota_and_period(quota, period, v1, cpu_max):
    config = ResourceConfig(cpu_quota=quota, cpu_period=period)
    assert {k: v for k, v in cgroup_files(config, 1, ()).items()} == v1
    assert cgroup_files(config, 2, ()).get("cpu.max") == cpu_max


def test_unset_fields_write_nothing_and_unified_is_v2_only():
    config = ResourceConfig(unified={"memory.min": "1"})
    assert cgroup_files(config, 1, ()) == {}
    assert cgroup_files(config, 2, ()) == {"memory.min": "1"}
    assert cgroup_files(ResourceConfig(), 2) == {"hugetlb.2MB.max": "0", "hugetlb.1GB.max": "0"}


def test_hugepage_sizes_runc_cannot_name_are_skipped():
    # 1536Ki is not a whole number of MB: HugePageUnitSizeFromByteSize fails and the entry is skipped.
    config = ResourceConfig(huge_page_limit={1536 * 1024: 7, 1 << 30: 2 << 30})
    assert cgroup_files(config, 2, ("2MB", "1GB")) == {"hugetlb.1GB.max": "2147483648", "hugetlb.2MB.max": "0"}


@pytest.mark.parametrize("size, name", [(2097152, "2MB"), (1073741824, "1GB"), (65536, "64KB"), (4194304, "4MB")])
def test_huge_page_unit_size_from_byte_size(size, name):
    assert cgroups.huge_page_unit_size_from_byte_size(size) == name
    assert cgroups.page_size_in_bytes(name) == size


# pkg/kubelet/cm/qos_container_manager_linux_test.go TestQoSContainerCgroup: the same three pods.
# Upstream checks memory.min (MemoryQoS, off by default); with the gates off UpdateCgroups writes cpu
# shares for the Burstable tier (3000m requested -> 3072), 2 for BestEffort, unbounded hugepages on all three.
def test_qos_tier_configs():
    pods = [
        pod("g", ({"cpu": "1", "memory": "128Mi"}, {"cpu": "1", "memory": "128Mi"})),
        pod("b1", ({"cpu": "1", "memory": "128Mi"}, {"cpu": "2", "memory": "256Mi"})),
        pod("b2", ({"cpu": "2", "memory": "256Mi"}, {})),
    ]
    tiers = qos_tier_configs(pods)
    unbounded = {2097152: UNBOUNDED_HUGE_PAGE_LIMIT, 1073741824: UNBOUNDED_HUGE_PAGE_LIMIT}
    assert UNBOUNDED_HUGE_PAGE_LIMIT == 4611686018427387904
    assert tiers["burstable"] == ResourceConfig(cpu_shares=3072, huge_page_limit=unbounded)
    assert tiers["besteffort"] == ResourceConfig(cpu_shares=2, huge_page_limit=unbounded)
    assert tiers["kubepods"] == ResourceConfig(huge_page_limit=unbounded)  # no shares: node allocatable sets them


def test_burstable_tier_counts_overhead_and_init_max_and_gets_2_shares_when_empty():
    assert qos_tier_configs([]).get("burstable").cpu_shares == 2
    p = api.pod_from_manifest({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "x"},
        "spec": {"overhead": {"cpu": "100m"},
                 "initContainers": [{"name": "i", "image": "i", "resources": {"requests": {"cpu": "1"}}}],
                 "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "250m"}}}]},
    })
    # PodRequests: max(250m, 1000m) + 100m overhead = 1100m -> 1126 shares.
    assert qos_tier_configs([p], ())["burstable"] == ResourceConfig(cpu_shares=1126)
