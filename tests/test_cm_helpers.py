"""Chapter 3: CPU shares and quota, hugepage limits, and the pod cgroup's ResourceConfig.

Tables ported from pkg/kubelet/cm/helpers_linux_test.go, read at sanposhiho/kubernetes@059ce4e8
(a post-1.27, pre-1.29 copy whose helpers_linux.go computes the same as v1.27.7).
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_kubelet import api, cm
from mini_kubelet.cm import helpers

pytestmark = pytest.mark.ch3

DEFAULT_QUOTA_PERIOD = 100000  # 100ms in microseconds
TUNED_QUOTA_PERIOD = 5000  # 5ms
MI = 1024 * 1024


def rl(cpu="", memory=""):
    """Upstream's getResourceList: only the non-empty values."""
    return {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}


def make_pod(containers, init_containers=()):
    """Containers given as (requests, limits) pairs."""
    def spec(prefix, pairs):
        return [{"name": f"{prefix}{i}", "image": "app", "resources": {"requests": r, "limits": lim}}
                for i, (r, lim) in enumerate(pairs)]
    return api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                  "spec": {"containers": spec("c", containers), "initContainers": spec("i", init_containers)}})


BEST_EFFORT = make_pod([(rl(), rl())])
BURSTABLE_NO_LIMITS = make_pod([(rl("100m", "100Mi"), rl())])
BURSTABLE_WITH_LIMITS = make_pod([(rl("100m", "100Mi"), rl("200m", "200Mi"))])
BURSTABLE_PARTIAL_LIMITS = make_pod([(rl("100m", "100Mi"), rl("200m", "200Mi")), (rl("100m", "100Mi"), rl())])
GUARANTEED = make_pod([(rl("100m", "100Mi"), rl("100m", "100Mi"))])
# Requests of memory "100m" are a tenth of a byte, as upstream wrote them.
PARTIAL_LIMITS_WITH_INITS = make_pod(
    [(rl("100m", "100m"), rl("100m", "100Mi")), (rl("100m", "100m"), rl())],
    [(rl("100m", "100m"), rl("100m", "100Mi")), (rl("100m", "100m"), rl())],
)

# Shares are MilliCPUToShares(100) = 102 and (200) = 204; 200Mi = 209715200, 100Mi = 104857600.
# Columns: case, pod, enforceCPULimits, period argument, shares, quota, period, memory (None = not set).
CASES = [
    ("besteffort", BEST_EFFORT, True, DEFAULT_QUOTA_PERIOD, 2, None, None, None),
    ("burstable-no-limits", BURSTABLE_NO_LIMITS, True, DEFAULT_QUOTA_PERIOD, 102, None, None, None),
    ("burstable-with-limits", BURSTABLE_WITH_LIMITS, True, DEFAULT_QUOTA_PERIOD, 102, 20000, 100000, 209715200),
    ("burstable-with-limits-no-cpu-enforcement", BURSTABLE_WITH_LIMITS, False, DEFAULT_QUOTA_PERIOD,
     102, -1, 100000, 209715200),
    ("burstable-partial-limits", BURSTABLE_PARTIAL_LIMITS, True, DEFAULT_QUOTA_PERIOD, 204, None, None, None),
    # The quota is computed over 100000 (gate off) but the period is written as given.
    ("burstable-with-limits-with-tuned-quota", BURSTABLE_WITH_LIMITS, True, TUNED_QUOTA_PERIOD, 102, 20000, 5000, 209715200),
    ("burstable-with-limits-no-cpu-enforcement-with-tuned-quota", BURSTABLE_WITH_LIMITS, False, TUNED_QUOTA_PERIOD,
     102, -1, 5000, 209715200),
    ("burstable-partial-limits-with-tuned-quota", BURSTABLE_PARTIAL_LIMITS, True, TUNED_QUOTA_PERIOD, 204, None, None, None),
    ("guaranteed", GUARANTEED, True, DEFAULT_QUOTA_PERIOD, 102, 10000, 100000, 104857600),
    ("guaranteed-no-cpu-enforcement", GUARANTEED, False, DEFAULT_QUOTA_PERIOD, 102, -1, 100000, 104857600),
    ("guaranteed-with-tuned-quota", GUARANTEED, True, TUNED_QUOTA_PERIOD, 102, 10000, 5000, 104857600),
    ("guaranteed-no-cpu-enforcement-with-tuned-quota", GUARANTEED, False, TUNED_QUOTA_PERIOD, 102, -1, 5000, 104857600),
]


def cpu_and_memory(config):
    return config.cpu_shares, config.cpu_quota, config.cpu_period, config.memory


# pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPod (gate CPUCFSQuotaPeriod off)
@pytest.mark.parametrize("name, pod, enforce, period, shares, quota, out_period, memory", CASES + [
    ("burstable-partial-limits-with-init-containers", PARTIAL_LIMITS_WITH_INITS, True, TUNED_QUOTA_PERIOD,
     204, None, None, None),
])
def test_resource_config_for_pod(name, pod, enforce, period, shares, quota, out_period, memory):
    config = cm.resource_config_for_pod(pod, enforce, period, False)
    assert cpu_and_memory(config) == (shares, quota, out_period, memory)


# pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPodWithCustomCPUCFSQuotaPeriod (gate on):
# the same cases, except the two tuned-quota rows now use the 5000 period: 200m -> 1000, and
# 100m -> 500, raised to the 1000 minimum.
GATE_ON = {"burstable-with-limits-with-tuned-quota": 1000, "guaranteed-with-tuned-quota": 1000}


@pytest.mark.parametrize("name, pod, enforce, period, shares, quota, out_period, memory", CASES)
def test_resource_config_for_pod_with_custom_cpu_cfs_quota_period(name, pod, enforce, period, shares, quota,
                                                                  out_period, memory):
    config = cm.resource_config_for_pod(pod, enforce, period, False, cpu_cfs_quota_period_gate=True)
    assert cpu_and_memory(config) == (shares, GATE_ON.get(name, quota), out_period, memory)


# pkg/kubelet/cm/helpers_linux_test.go TestResourceConfigForPodWithEnforceMemoryQoS (only Unified compared)
@pytest.mark.parametrize("name, pod, enforce, period", [case[:4] for case in CASES])
def test_resource_config_for_pod_with_enforce_memory_qos(name, pod, enforce, period):
    expected = {"besteffort": {}, "burstable-partial-limits": {"memory.min": "209715200"},
                "burstable-partial-limits-with-tuned-quota": {"memory.min": "209715200"}}
    config = cm.resource_config_for_pod(pod, enforce, period, True)
    assert config.unified == expected.get(name, {"memory.min": "104857600"})


# pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod: overhead counts as a request,
# yet a BestEffort pod still gets only 2 shares;
# its memory overhead does become memory.min when MemoryQoS is enforced.
def test_best_effort_with_overhead_gets_min_shares_and_memory_min():
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "app"}], "overhead": {"cpu": "250m", "memory": "120Mi"}}}
    config = cm.resource_config_for_pod(api.pod_from_manifest(doc), True, DEFAULT_QUOTA_PERIOD, True)
    assert (config.cpu_shares, config.cpu_quota, config.memory) == (2, None, None)
    assert config.unified == {"memory.min": str(120 * MI)}


# helpers_linux.go ResourceConfigForPod: an init container without a cpu limit leaves a Burstable pod without quota.
def test_unlimited_init_container_drops_quota_and_memory():
    pod = make_pod([(rl("1", "1Gi"), rl("2", "2Gi"))], [(rl("1", "1Gi"), rl())])
    config = cm.resource_config_for_pod(pod)
    assert cpu_and_memory(config) == (1024, None, None, None)


# pkg/kubelet/cm/helpers_linux_test.go TestMilliCPUToQuota (gate off; the period argument is ignored)
@pytest.mark.parametrize("milli, period, quota", [
    (0, 0, 0), (5, 100000, 1000), (9, 100000, 1000), (10, 100000, 1000), (200, 100000, 20000),
    (500, 100000, 50000), (1000, 100000, 100000), (1500, 100000, 150000),
    (200, 5000, 20000),  # helpers_linux.go MilliCPUToQuota: gate off forces the period to 100000
])
def test_milli_cpu_to_quota(milli, period, quota):
    assert cm.milli_cpu_to_quota(milli, period) == quota


# pkg/kubelet/cm/helpers_linux.go MilliCPUToQuota, gate on: the period argument is used, the result is at least 1000.
@pytest.mark.parametrize("milli, period, quota", [(100, 5000, 1000), (200, 5000, 1000), (1, 0, 1000), (0, 5000, 0),
                                                   (3000, 50000, 150000)])
def test_milli_cpu_to_quota_with_gate(milli, period, quota):
    assert cm.milli_cpu_to_quota(milli, period, cpu_cfs_quota_period_gate=True) == quota


# pkg/kubelet/cm/helpers_linux.go MilliCPUToShares (there is no upstream TestMilliCPUToShares;
# these are computed from the formula)
@pytest.mark.parametrize("milli, shares", [
    (0, 2), (1, 2), (2, 2), (3, 3), (64, 65), (100, 102), (200, 204), (250, 256), (500, 512), (1000, 1024),
    (1500, 1536), (256000, 262144), (257000, 262144),
])
def test_milli_cpu_to_shares(milli, shares):
    assert cm.milli_cpu_to_shares(milli) == shares


# Found by the differential tests: Go multiplies in int64, so past 2**63 / 1024 millicores the product wraps.
@pytest.mark.parametrize("milli, shares, quota", [(2**53, 2, 1000), (2**53 - 1, 262144, 1000), (2**47, 262144, 1000),
                                                  (92233720368547, 262144, 9223372036854700)])
def test_cpu_values_wrap_as_go_int64(milli, shares, quota):
    assert (cm.milli_cpu_to_shares(milli), cm.milli_cpu_to_quota(milli, 100000)) == (shares, quota)


# pkg/kubelet/cm/helpers_linux_test.go TestHugePageLimits, which also checks that
# ResourceConfigForPod(pod with these as requests, false, 0, false) reports the same map.
@pytest.mark.parametrize("name, resource_list, expected", [
    ("no valid hugepages", {"2Mi": "128"}, {}),
    ("2Mi", {"hugepages-2Mi": "128"}, {2 * MI: 128}),
    ("2Mi and 4Mi", {"hugepages-2Mi": "128", "hugepages-2097152": "256", "hugepages-4Mi": "512", "4Mi": "1024"},
     {2 * MI: 384, 4 * MI: 512}),
])
def test_huge_page_limits(name, resource_list, expected):
    assert cm.huge_page_limits(resource_list) == expected
    assert cm.huge_page_limits({k: api.parse_quantity(v) for k, v in resource_list.items()}) == expected
    pod = make_pod([(resource_list, {})])
    assert cm.resource_config_for_pod(pod, False, 0, False).huge_page_limit == expected


# pkg/kubelet/cm/helpers_linux.go HugePageLimits: an unparsable page size is not an error; it becomes page size 0.
def test_huge_page_limits_unparsable_size_is_page_size_zero():
    assert cm.huge_page_limits({"hugepages-2MB": "2Mi", "hugepages-": Decimal(1)}) == {0: 2 * MI + 1}


def test_constants():
    assert (helpers.MIN_SHARES, helpers.MAX_SHARES, helpers.SHARES_PER_CPU, helpers.MILLI_CPU_TO_CPU,
            helpers.QUOTA_PERIOD, helpers.MIN_QUOTA_PERIOD) == (2, 262144, 1024, 1000, 100000, 1000)


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=0, max_value=10**9))
def test_shares_are_bounded_and_monotonic(a, b):
    low, high = sorted((a, b))
    assert cm.MIN_SHARES <= cm.milli_cpu_to_shares(low) <= cm.milli_cpu_to_shares(high) <= cm.MAX_SHARES


@given(st.integers(min_value=1, max_value=10**7), st.integers(min_value=0, max_value=10**6), st.booleans())
def test_quota_of_a_limit_is_at_least_one_millisecond(milli, period, gate):
    assert cm.milli_cpu_to_quota(milli, period, cpu_cfs_quota_period_gate=gate) >= cm.MIN_QUOTA_PERIOD
