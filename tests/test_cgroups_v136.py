"""Chapter 3, the current release: the cgroup values Kubernetes 1.36 writes (pod-level resources, OOM group, swap).

Under features.release_profile("1.36"): memory.oom.group on cgroup v2 containers (1.28; singleProcessOOMKill
from 1.32), memory.swap.max (NodeSwap, LimitedSwap), and pod cgroups and container limits from pod-level
resources (PodLevelResources). The default profile, v1.27, writes none of these.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from mini_kubelet import api, features, kuberuntime
from mini_kubelet.cm import helpers
from mini_kubelet.features import DEFAULT_FEATURE_GATE, set_feature_gate_during_test
from mini_kubelet.kuberuntime.kuberuntime_container_linux import (
    LinuxContainerResources, calc_swap_for_burstable_pods, calculate_linux_resources, configure_container_swap_resources)

pytestmark = pytest.mark.ch3

Q = api.parse_quantity


def make_pod(containers, *, pod_resources=None, priority=None):
    spec = {"containers": [{"name": f"c{i}", "image": "app", "resources": r} for i, r in enumerate(containers)]}
    if pod_resources is not None:
        spec["resources"] = pod_resources
    if priority is not None:
        spec["priority"] = priority
    return api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})


def res(cpu=None, memory=None):
    return {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}


# pkg/kubelet/kuberuntime/kuberuntime_container_linux_test.go#TestCalculateLinuxResources, a stored
# kubernetes/kubernetes copy (opencontainers/cgroups imports, singleProcessOOMKill cases: 1.32+). 9 cases:
# (cpu request, cpu limit, memory limit, cgroup version, singleProcessOOMKill) -> shares, quota, memory, unified.
CALCULATE = [
    ("Request128MBLimit256MB", "1", "2", "128Mi", 1, False, 1024, 200000, 134217728, {}),
    ("RequestNoMemory", "2", "8", "0", 1, False, 2048, 800000, 0, {}),
    ("RequestNilCPU", None, "2", "0", 1, False, 2048, 200000, 0, {}),
    ("RequestZeroCPU", "0", "2", "0", 1, False, 2, 200000, 0, {}),
    ("Request128MBLimit256MB", "1", "2", "128Mi", 2, False, 1024, 200000, 134217728, {"memory.oom.group": "1"}),
    ("Request128MBLimit256MBSingleProcess", "1", "2", "128Mi", 2, True, 1024, 200000, 134217728, {}),
    ("RequestNoMemory", "2", "8", "0", 2, False, 2048, 800000, 0, {"memory.oom.group": "1"}),
    ("RequestNilCPU", None, "2", "0", 2, False, 2048, 200000, 0, {"memory.oom.group": "1"}),
    ("RequestZeroCPU", "0", "2", "0", 2, False, 2, 200000, 0, {"memory.oom.group": "1"}),
]


@pytest.mark.parametrize("name, cpu_req, cpu_lim, mem_lim, version, single, shares, quota, memory, unified", CALCULATE)
def test_calculate_linux_resources_v136(name, cpu_req, cpu_lim, mem_lim, version, single, shares, quota, memory,
                                        unified):
    """kuberuntime_container_linux_test.go#TestCalculateLinuxResources (stored copy, 1.32+ form), under 1.36."""
    with features.release_profile("1.36"):
        got = calculate_linux_resources(None if cpu_req is None else Q(cpu_req), Q(cpu_lim), Q(mem_lim),
                                        cgroup_version=version, single_process_oom_kill=single)
    assert got == LinuxContainerResources(cpu_shares=shares, cpu_quota=quota, cpu_period=100000,
                                          memory_limit_in_bytes=memory, unified=unified)


@pytest.mark.parametrize("release, version, single, expected", [
    ("1.27", 2, None, {}),  # before #117793
    ("1.28", 2, None, {"memory.oom.group": "1"}),
    ("1.31", 2, True, {"memory.oom.group": "1"}),  # no singleProcessOOMKill before 1.32
    ("1.32", 2, True, {}),
    ("1.32", 2, None, {"memory.oom.group": "1"}),  # unset is false on cgroup v2 (NewMainKubelet)
    ("1.36", 1, False, {}),  # cgroup v1: forced single-process
])
def test_memory_oom_group_by_release(release, version, single, expected):
    """kubelet.go NewMainKubelet and calculateLinuxResources (read at kubeedge v1.17.0 = 1.28.6, v1.23.0 = 1.32.10)."""
    with features.release_profile(release):
        got = calculate_linux_resources(Q("1"), Q("2"), Q("128Mi"), cgroup_version=version,
                                        single_process_oom_kill=single)
    assert got.unified == expected


# kuberuntime_container_linux_test.go#TestGenerateLinuxContainerConfigResources, same stored copy. 3 cases:
# (container resources, pod-level resources) -> period, quota, shares, memory limit.
@pytest.mark.parametrize("name, container, pod_resources, period, quota, shares, memory", [
    ("Request 128M/1C, Limit 256M/3C", {"requests": res("1", "128Mi"), "limits": res("3", "256Mi")}, None,
     100000, 300000, 1024, 256 * 2**20),
    ("Request 128M/2C, No Limit", {"requests": res("2", "128Mi")}, None, 100000, 0, 2048, 0),
    ("Container Level Request 128M/1C, Pod Level Limit 256M/3C", {"requests": res("1", "128Mi")},
     {"limits": res("3", "256Mi")}, 100000, 300000, 1024, 256 * 2**20),
])
def test_generate_linux_container_config_resources_v136(name, container, pod_resources, period, quota, shares,
                                                        memory):
    pod = make_pod([container], pod_resources=pod_resources)
    with features.release_profile("1.36"):
        got = kuberuntime.generate_linux_container_resources(pod, pod.spec.containers[0], 17179860387)
    assert (got.cpu_period, got.cpu_quota, got.cpu_shares, got.memory_limit_in_bytes) == (period, quota, shares, memory)


def test_pod_level_limit_is_not_the_containers_in_v127():
    pod = make_pod([{"requests": res("1", "128Mi")}], pod_resources={"limits": res("3", "256Mi")})
    got = kuberuntime.generate_linux_container_resources(pod, pod.spec.containers[0], 17179860387)
    assert (got.cpu_quota, got.memory_limit_in_bytes) == (0, 0)


MEMORY_40G, SWAP_5G = 42949672960, 5368709120  # the test's machineInfo: 40Gi of memory, 5Gi of swap


def swap_pod(qos_class, *, without_requests=False, guaranteed_container=False, critical=False):
    """The test's two-container pod for a QoS class: Burstable c1 1Gi (c2 2Gi), Guaranteed 1Gi/1 and 2Gi/1."""
    if qos_class == "Burstable":
        c1 = {"requests": res(None, "1Gi")}
        c2 = {} if without_requests else {"requests": res(None, "2Gi")}
        if guaranteed_container and not without_requests:
            c2["limits"] = res(None, "2Gi")
    elif qos_class == "Guaranteed":
        c1 = {"requests": res("1", "1Gi"), "limits": res("1", "1Gi")}
        c2 = {"requests": res("1", "2Gi"), "limits": res("1", "2Gi")}
    else:
        c1, c2 = {}, {}
    return make_pod([c1, c2], priority=2000000000 if critical else None)


# kuberuntime_container_linux_test.go#TestGenerateLinuxContainerResourcesWithSwap, same stored copy. 20 cases
# (names as upstream's, quirks included: "Best-effort QoS, cgroups v2, LimitedSwap" builds a Burstable pod):
# (cgroup version, QoS, swap controller on the node, NodeSwap, swapBehavior, no-request c2, guaranteed c2, critical).
SWAP_CASES = [
    ("cgroups v1, LimitedSwap, Burstable QoS", 1, "Burstable", True, True, "LimitedSwap", False, False, False),
    ("cgroups v1, LimitedSwap, Best-effort QoS", 1, "BestEffort", True, True, "LimitedSwap", False, False, False),
    ("NodeSwap feature gate turned off, cgroups v2, LimitedSwap", 2, "Burstable", True, False, "LimitedSwap",
     False, False, False),
    ("With no swapBehavior - NoSwap should be the default", 2, "BestEffort", True, True, "", False, False, False),
    ("Best-effort QoS, cgroups v2, NoSwap", 2, "BestEffort", True, True, "NoSwap", False, False, False),
    ("Best-effort QoS, cgroups v2, LimitedSwap", 2, "Burstable", True, True, "LimitedSwap", False, False, False),
    ("Guaranteed QoS, cgroups v2, LimitedSwap", 2, "Guaranteed", True, True, "LimitedSwap", False, False, False),
    ("Burstable QoS, cgroups v2, LimitedSwap, with a guaranteed container", 2, "Burstable", True, True,
     "LimitedSwap", False, True, False),
    ("Burstable QoS, cgroups v2, LimitedSwap", 2, "Burstable", True, True, "LimitedSwap", False, False, False),
    ("Burstable QoS, cgroups v2, LimitedSwap, with a container with no requests", 2, "Burstable", True, True,
     "LimitedSwap", True, False, False),
    ("Swap disabled on node, cgroups v1, LimitedSwap, Burstable QoS", 1, "Burstable", False, True, "LimitedSwap",
     False, False, False),
    ("Swap disabled on node, cgroups v1, LimitedSwap, Best-effort QoS", 1, "BestEffort", False, True, "LimitedSwap",
     False, False, False),
    ("Swap disabled on node, NodeSwap feature gate turned off, cgroups v2, LimitedSwap", 2, "Burstable", False,
     False, "LimitedSwap", False, False, False),
    ("Swap disabled on node, With no swapBehavior - NoSwap should be the default", 2, "BestEffort", False, True, "",
     False, False, False),
    ("Swap disabled on node, Best-effort QoS, cgroups v2, LimitedSwap", 2, "Burstable", False, True, "LimitedSwap",
     False, False, False),
    ("Swap disabled on node, Guaranteed QoS, cgroups v2, LimitedSwap", 2, "Guaranteed", False, True, "LimitedSwap",
     False, False, False),
    ("Swap disabled on node, Burstable QoS, cgroups v2, LimitedSwap, with a guaranteed container", 2, "Burstable",
     False, True, "LimitedSwap", False, True, False),
    ("Swap disabled on node, Burstable QoS, cgroups v2, LimitedSwap", 2, "Burstable", False, True, "LimitedSwap",
     False, False, False),
    ("Swap disabled on node, Burstable QoS, cgroups v2, LimitedSwap, with a container with no requests", 2,
     "Burstable", False, True, "LimitedSwap", True, False, False),
    ("Best-effort QoS, cgroups v2, LimitedSwap, critical pod", 2, "Burstable", True, True, "LimitedSwap", False,
     False, True),
]


def _swap_of(resources, version):
    """What the upstream helpers compare: memory + swap on v1, the memory.swap.max entry (or None) on v2."""
    return resources.memory_swap_limit_in_bytes if version == 1 else resources.unified.get("memory.swap.max")


@pytest.mark.parametrize("name, version, qos_class, controller, gate, behavior, no_requests, guaranteed_c2, critical",
                         SWAP_CASES, ids=[row[0] for row in SWAP_CASES])
def test_generate_linux_container_resources_with_swap_v136(name, version, qos_class, controller, gate, behavior,
                                                           no_requests, guaranteed_c2, critical):
    """kuberuntime_container_linux_test.go#TestGenerateLinuxContainerResourcesWithSwap (stored copy), under 1.36
    with NodeSwap as each case sets it (set through the profile: the gate is locked on from 1.34)."""
    pod = swap_pod(qos_class, without_requests=no_requests, guaranteed_container=guaranteed_c2, critical=critical)
    with features.release_profile("1.36"):
        DEFAULT_FEATURE_GATE.enabled_gates["NodeSwap"] = gate  # upstream's SetFeatureGateDuringTest, past the lock
        got = [kuberuntime.generate_linux_container_resources(
            pod, c, MEMORY_40G, cgroup_version=version, swap_behavior=behavior, swap_capacity=SWAP_5G,
            swap_controller=controller) for c in pod.spec.containers]
    if not controller:  # expectSwapDisabled
        expected = [0, 0] if version == 1 else [None, None]
    elif critical or not gate or version == 1 or (behavior == "LimitedSwap" and qos_class != "Burstable") \
            or behavior in ("NoSwap", ""):  # expectNoSwap
        expected = [r.memory_limit_in_bytes for r in got] if version == 1 else ["0", "0"]
    else:
        c1 = calc_swap_for_burstable_pods(2**30, MEMORY_40G, SWAP_5G)
        c2 = 0 if no_requests or guaranteed_c2 else calc_swap_for_burstable_pods(2 * 2**30, MEMORY_40G, SWAP_5G)
        expected = [str(c1), str(c2)]
    assert [_swap_of(r, version) for r in got] == expected


@pytest.mark.parametrize("request_bytes, memory, swap, expected", [
    (2**30, MEMORY_40G, SWAP_5G, 134217728),  # 1/40 of 5Gi
    (2 * 2**30, MEMORY_40G, SWAP_5G, 268435456),
    (1, 3, 10, 3),  # float64 1/3 * 10 = 3.333..., truncated
    (0, MEMORY_40G, SWAP_5G, 0),
    (MEMORY_40G, MEMORY_40G, SWAP_5G, SWAP_5G),
])
def test_calc_swap_for_burstable_pods(request_bytes, memory, swap, expected):
    """calcSwapForBurstablePods: float64 proportion times swap, truncated (read in the stored v1.36-era copy)."""
    assert calc_swap_for_burstable_pods(request_bytes, memory, swap) == expected


@pytest.mark.parametrize("memory, request_bytes", [(0, 1), (-1, 0), (10, 11)])
def test_calc_swap_refuses_no_memory_and_requests_above_it(memory, request_bytes):
    with pytest.raises(ValueError):
        calc_swap_for_burstable_pods(request_bytes, memory, SWAP_5G)


@pytest.mark.parametrize("release, expected", [("1.30", "134217728"), ("1.31", "0"), ("1.36", "0")])
def test_no_swap_for_critical_pods_from_131(release, expected):
    """#125277: node- and cluster-critical pods get no swap from 1.31 (configureContainerSwapResources, kubeedge v1.22.0)."""
    pod = swap_pod("Burstable", critical=True)
    got = LinuxContainerResources()
    with features.release_profile(release):
        configure_container_swap_resources(got, pod, pod.spec.containers[0], "LimitedSwap", MEMORY_40G, SWAP_5G)
    assert got.unified == {"memory.swap.max": expected}


@pytest.mark.parametrize("release, gates, behavior, expected", [
    ("1.28", {}, "", "0"),  # NodeSwap beta off: ConfigureNoSwap
    ("1.28", {"NodeSwap": True}, "", "max"),  # 1.28-1.29: anything but LimitedSwap is UnlimitedSwap
    ("1.29", {"NodeSwap": True}, "LimitedSwap", "134217728"),
    ("1.30", {}, "", "0"),  # NoSwap is the default, the gate on
])
def test_swap_by_release(release, gates, behavior, expected):
    """configureContainerSwapResources at kubeedge v1.17.0 (1.28.6), v1.18.0 (1.29.6), v1.20.0 (1.30.7)."""
    pod = swap_pod("Burstable")
    got = LinuxContainerResources()
    with features.release_profile(release, gates):
        configure_container_swap_resources(got, pod, pod.spec.containers[0], behavior, MEMORY_40G, SWAP_5G)
    assert got.unified == {"memory.swap.max": expected}


def test_v127_node_swap_sets_memory_plus_swap_to_the_limit():
    """v1.27 generateLinuxContainerResources (kubeedge v1.16.0): with NodeSwap, memory + swap = the memory limit."""
    pod = make_pod([{"requests": res(None, "1Gi"), "limits": res(None, "2Gi")}])
    with features.release_profile("1.27", {"NodeSwap": True}):
        got = kuberuntime.generate_linux_container_resources(pod, pod.spec.containers[0], MEMORY_40G,
                                                             swap_behavior="LimitedSwap", swap_capacity=SWAP_5G)
    assert (got.memory_swap_limit_in_bytes, got.unified) == (2 * 2**30, {})
    assert kuberuntime.generate_linux_container_resources(pod, pod.spec.containers[0], MEMORY_40G) == \
        LinuxContainerResources(cpu_shares=2, cpu_period=100000, memory_limit_in_bytes=2 * 2**30, oom_score_adj=975,
                                hugepage_limits=got.hugepage_limits)


# pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod with pod-level resources (v1.36-era stored copy; no upstream
# table with pod-level cases was found, so these are derived from the source). The amounts come from
# resource.pod_requests / pod_limits, which take the pod-level values under PodLevelResources.
POD_LEVEL = [
    ("guaranteed pod-level, best-effort containers", [{}], {"requests": res("1", "1Gi"), "limits": res("1", "1Gi")},
     1024, 100000, 1073741824),
    ("burstable pod-level overrides the containers", [{"requests": res("100m", "100Mi")}],
     {"requests": res("1", "1Gi"), "limits": res("2", "2Gi")}, 1024, 200000, 2147483648),
    ("a pod-level memory limit declares memory for unlimited containers", [{"requests": res("100m", "100Mi")}],
     {"limits": res(None, "1Gi")}, 102, None, 1073741824),
    ("pod-level requests only: no limits", [{"requests": res("100m", "100Mi")}], {"requests": res("500m", "1Gi")},
     512, None, None),
]


@pytest.mark.parametrize("name, containers, pod_resources, shares, quota, memory", POD_LEVEL,
                         ids=[row[0] for row in POD_LEVEL])
def test_resource_config_for_pod_with_pod_level_resources(name, containers, pod_resources, shares, quota, memory):
    pod = make_pod(containers, pod_resources=pod_resources)
    with features.release_profile("1.36"):
        config = helpers.resource_config_for_pod(pod)
    assert (config.cpu_shares, config.cpu_quota, config.memory) == (shares, quota, memory)


def test_pod_level_resources_ignored_with_the_gate_off():
    pod = make_pod([{"requests": res("100m", "100Mi")}], pod_resources={"limits": res(None, "1Gi")})
    for profile in (features.release_profile("1.27"), features.release_profile("1.33")):
        with profile:
            config = helpers.resource_config_for_pod(pod)
        assert (config.cpu_shares, config.cpu_quota, config.memory) == (102, None, None)
    with features.release_profile("1.36"), set_feature_gate_during_test(DEFAULT_FEATURE_GATE, "PodLevelResources", False):
        config = helpers.resource_config_for_pod(pod)
    assert (config.cpu_shares, config.memory) == (102, None)


def test_parsed_quantities_stay_decimal():
    assert isinstance(Q("1Gi"), Decimal)
