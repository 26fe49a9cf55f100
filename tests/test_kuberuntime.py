"""Chapter 3: the CRI resources the kubelet sends the runtime for each container."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_kubelet import api
from mini_kubelet.kuberuntime import (
    LinuxContainerResources,
    calculate_linux_resources,
    generate_linux_container_resources,
    get_hugepage_limits_from_resources,
    milli_cpu_to_quota,
)

pytestmark = pytest.mark.ch3


def pod(*containers, **spec):
    """A pod whose containers are (requests, limits) pairs."""
    return api.pod_from_manifest({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"},
        "spec": {"containers": [{"name": f"c{i}", "image": "i", "resources": {"requests": req, "limits": lim}}
                                for i, (req, lim) in enumerate(containers)], **spec},
    })


def q(text):
    return None if text is None else api.parse_quantity(text)


# pkg/kubelet/kuberuntime/kuberuntime_container_linux_test.go TestGenerateLinuxContainerConfigResources
@pytest.mark.parametrize("requests, limits, expected", [
    ({"cpu": "1", "memory": "128Mi"}, {"cpu": "3", "memory": "256Mi"}, (100000, 300000, 1024, 268435456)),
    ({"cpu": "2", "memory": "128Mi"}, {}, (100000, 0, 2048, 0)),
])
def test_generate_linux_container_config_resources(requests, limits, expected):
    p = pod((requests, limits))
    got = generate_linux_container_resources(p, p.spec.containers[0], 17179860387)
    assert (got.cpu_period, got.cpu_quota, got.cpu_shares, got.memory_limit_in_bytes) == expected


# pkg/kubelet/kuberuntime/kuberuntime_container_linux_test.go TestCalculateLinuxResources
@pytest.mark.parametrize("cpu_request, cpu_limit, memory_limit, expected", [
    ("1", "2", "128Mi", (100000, 200000, 1024, 134217728)),
    ("2", "8", "0", (100000, 800000, 2048, 0)),
    (None, "2", "0", (100000, 200000, 2048, 0)),  # no request key: shares from the limit
    ("0", "2", "0", (100000, 200000, 2, 0)),  # an explicit 0 request: the minimum 2 shares
])
def test_calculate_linux_resources(cpu_request, cpu_limit, memory_limit, expected):
    got = calculate_linux_resources(q(cpu_request), q(cpu_limit), q(memory_limit))
    assert (got.cpu_period, got.cpu_quota, got.cpu_shares, got.memory_limit_in_bytes) == expected


# pkg/kubelet/kuberuntime/kuberuntime_container_linux_test.go TestGenerateLinuxContainerResources
# (the test's manager has cpuCFSQuota off; MemoryCapacity = 17179860387; gate-on cases are not v1.27 defaults)
@pytest.mark.parametrize("requests, limits, expected", [
    ({"cpu": "250m", "memory": "500Mi"}, {"cpu": "250m", "memory": "500Mi"}, (256, 524288000, -997)),
    ({"cpu": "250m", "memory": "500Mi"}, {"cpu": "500m", "memory": "750Mi"}, (256, 786432000, 970)),
    ({}, {}, (2, 0, 1000)),
    ({"cpu": "200m", "memory": "500Mi"}, {"cpu": "200m", "memory": "500Mi"}, (204, 524288000, -997)),
])
def test_generate_linux_container_resources(requests, limits, expected):
    p = pod((requests, limits))
    got = generate_linux_container_resources(p, p.spec.containers[0], 17179860387, cpu_cfs_quota=False)
    assert (got.cpu_shares, got.memory_limit_in_bytes, got.oom_score_adj) == expected
    assert (got.cpu_quota, got.cpu_period) == (0, 0)  # cpuCFSQuota off: neither is set


# pkg/kubelet/kuberuntime/kuberuntime_container_linux_test.go TestGetHugepageLimitsFromResources
# (host sizes 2MB and 1GB; every host size appears, 0 unless the container has a valid limit for it)
@pytest.mark.parametrize("limits, expected", [
    ({"hugepages-2Mi": "2Mi"}, {"2MB": 2097152, "1GB": 0}),
    ({"hugepages-1Gi": "2Gi"}, {"2MB": 0, "1GB": 2147483648}),
    ({"hugepages-2MB": "2Mi"}, {"2MB": 0, "1GB": 0}),  # "2MB" is not a quantity: skipped
    ({"hugepages-1GB": "2Gi"}, {"2MB": 0, "1GB": 0}),
    ({"cpu": "0", "hugepages-2Mi": "2Mi", "hugepages-1Gi": "2Gi"}, {"2MB": 2097152, "1GB": 2147483648}),
    ({"cpu": "0", "hugepages-2MB": "2Mi", "hugepages-1GB": "2Gi"}, {"2MB": 0, "1GB": 0}),
])
def test_get_hugepage_limits_from_resources(limits, expected):
    assert get_hugepage_limits_from_resources(limits, ("2MB", "1GB")) == expected


def test_hugepage_sizes_the_host_lacks_are_dropped():
    assert get_hugepage_limits_from_resources({"hugepages-1Gi": "2Gi"}, ("2MB",)) == {"2MB": 0}


# pkg/kubelet/kuberuntime/helpers_linux.go milliCPUToQuota: same numbers as cm's TestMilliCPUToQuota table
# with the gate off, but the period argument is always used.
@pytest.mark.parametrize("milli, period, quota", [
    (0, 0, 0), (5, 100000, 1000), (9, 100000, 1000), (10, 100000, 1000), (200, 100000, 20000),
    (500, 100000, 50000), (1000, 100000, 100000), (1500, 100000, 150000), (200, 5000, 1000), (100, 5000, 1000),
])
def test_milli_cpu_to_quota(milli, period, quota):
    assert milli_cpu_to_quota(milli, period) == quota


def test_oom_score_uses_the_machine_memory_and_each_containers_own_request():
    # pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust: 500Mi of 17179860387 -> 970;
    # the sibling without a memory request -> 999.
    p = pod(({"cpu": "250m", "memory": "500Mi"}, {"cpu": "500m", "memory": "750Mi"}), ({"cpu": "10m"}, {}))
    adjs = [generate_linux_container_resources(p, c, 17179860387).oom_score_adj for c in p.spec.containers]
    assert adjs == [970, 999]


def test_defaults_are_all_zero():
    assert LinuxContainerResources() == LinuxContainerResources(0, 0, 0, 0, 0, {})


@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_quota_is_zero_only_without_a_limit_and_at_least_1ms_otherwise(cpu_limit_milli, cpu_request_milli):
    got = calculate_linux_resources(Decimal(cpu_request_milli) / 1000, Decimal(cpu_limit_milli) / 1000, Decimal(0))
    assert got.cpu_period == 100000
    assert (got.cpu_quota == 0) == (cpu_limit_milli == 0)
    assert got.cpu_quota == 0 or got.cpu_quota >= 1000
    assert 2 <= got.cpu_shares <= 262144
