"""Differential tests under the v1.36 profile: mini_kubelet against upstream v1.36.5's own Go functions.

What mini_kubelet does not model at v1.36 yet is compared all the same, as a strict xfail that names it.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import Phase, assume, example, given, settings
from hypothesis import strategies as st

from mini_kubelet import api, features, lifecycle, qos, resource, scheduler
from mini_kubelet.eviction import thresholds as eviction_thresholds
from mini_kubelet.cm import cgroups, helpers

from . import pod_strategies as ps
from . import upstream_harness
from .test_differential import (GRACE_PERIODS, MIN_RECLAIMS, THRESHOLD_VALUES, _go_fits, _go_thresholds,
                                _mine_thresholds, _oom, _resource_request, _resources, _scalars_sorted, _signal_map, agree, amounts, differential,
                                in_int64, others, outcome)

pytestmark = [pytest.mark.upstream, pytest.mark.ch3]
upstream_harness.go()  # no Go: the whole file is skipped, with one message


@pytest.fixture(scope="module", autouse=True)
def profile():
    with features.release_profile("1.36"):
        yield


@pytest.fixture(scope="module")
def v136():
    return upstream_harness.harness("1.36")


def has_sidecar(pod: dict) -> bool:
    return any(c.get("restartPolicy") == "Always" for c in pod["spec"].get("initContainers", []))


def without_sidecars(pod: dict) -> dict:
    for c in pod["spec"].get("initContainers", []):
        c.pop("restartPolicy", None)
    return pod


def with_a_sidecar(pod: dict) -> dict:
    inits = pod["spec"].setdefault("initContainers", [])
    if not has_sidecar(pod):
        inits.insert(0, {"name": "sidecar", "image": "registry.example/log:1", "restartPolicy": "Always",
                         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}})
    return pod


plain_pods = ps.pods().map(without_sidecars)
sidecar_pods = ps.pods().map(with_a_sidecar)
# An xfail stops at its first disagreement: no shrinking, which only makes the known difference smaller. Each
# also has an @example that shows the difference, so that it fails (as strict wants) whatever the draws.
known_difference = settings(differential, phases=[Phase.explicit, Phase.generate])


def pod_of(containers: list, init_containers: list = ()) -> dict:
    spec = {"containers": containers, **({"initContainers": list(init_containers)} if init_containers else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


CPU_1 = {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}
APP_AND_SIDECAR = pod_of([{"name": "a", "resources": CPU_1}],  # 2 cpus (v1.27's max of inits gave 1)
                         [{"name": "s", "restartPolicy": "Always", "resources": CPU_1}])


# --- QoS ----------------------------------------------------------------------------------------------


@differential
@given(pod=ps.pods())
def test_compute_pod_qos(v136, pod):
    assert qos.get_pod_qos(api.pod_from_manifest(pod)) == v136.call("ComputePodQOS", pod=pod)


@differential
@given(pod=ps.pods(), status=st.sampled_from((qos.GUARANTEED, qos.BURSTABLE, qos.BEST_EFFORT)))
@example(pod=pod_of([{"name": "a"}]), status=qos.GUARANTEED)  # the status wins over the spec's BestEffort
def test_get_pod_qos_reads_the_status(v136, pod, status):
    pod["status"] = {"qosClass": status}
    assert qos.get_pod_qos(api.pod_from_manifest(pod)) == v136.call("GetPodQOS", pod=pod)


# --- effective requests and limits --------------------------------------------------------------------


@differential
@given(pod=plain_pods, exclude_overhead=st.booleans(), fn=st.sampled_from(("PodRequests", "PodLimits")))
def test_pod_resources_without_sidecars(v136, pod, exclude_overhead, fn):
    _resources({"PodRequests": resource.pod_requests, "PodLimits": resource.pod_limits}[fn], fn, v136, pod,
               exclude_overhead)


# These four were strict xfails until main modelled them (sidecar resources, the sidecar OOM cap, GetPodQOS
# reading the status, ZeroRequestFitSkip); each @example is the case that showed the difference.


@differential
@given(pod=sidecar_pods, exclude_overhead=st.booleans())
@example(pod=APP_AND_SIDECAR, exclude_overhead=False)
def test_pod_requests_with_sidecars(v136, pod, exclude_overhead):
    _resources(resource.pod_requests, "PodRequests", v136, pod, exclude_overhead)


@differential
@given(pod=sidecar_pods, exclude_overhead=st.booleans())
@example(pod=APP_AND_SIDECAR, exclude_overhead=False)
def test_pod_limits_with_sidecars(v136, pod, exclude_overhead):
    _resources(resource.pod_limits, "PodLimits", v136, pod, exclude_overhead)


# --- OOM score ------------------------------------------------------------------------------------------

capacities = st.one_of(st.integers(1, 2**40), st.sampled_from((1, 1000, 2**30, 2**63 - 1)))


@differential
@given(pod=plain_pods, index=st.integers(0, 5), capacity=capacities)
# Found with make test-upstream: a 7Ei request makes 1000 x request wrap, and 1000 minus the quotient wraps too;
# upstream gives 3 (mini_kubelet gave 9223372036854776808 before computing the subtraction in int64).
@example(pod=pod_of([{"name": "app-0", "resources": {"requests": {"memory": "7Ei"}}}]), index=0, capacity=1)
def test_oom_score_without_sidecars(v136, pod, index, capacity):
    _oom(v136, pod, index, capacity)


@differential
@given(pod=sidecar_pods, capacity=capacities)
@example(pod=pod_of([{"name": "a", "resources": {"requests": {"memory": "1Gi"}}}], [{"name": "s", "restartPolicy": "Always"}]),
         capacity=4 * 2**30)  # 750, the app container's score (uncapped: 999)
def test_oom_score_of_sidecars(v136, pod, capacity):
    first_sidecar = next(i for i, c in enumerate(ps.all_containers(pod)) if c.get("restartPolicy") == "Always")
    _oom(v136, pod, first_sidecar, capacity)


# --- cgroup values --------------------------------------------------------------------------------------


def quota_gate() -> bool:
    return features.DEFAULT_FEATURE_GATE.enabled("CustomCPUCFSQuotaPeriod")  # GA and on in 1.36


@differential
@given(milli=st.one_of(st.integers(0, 10**7), st.integers(0, 2**63 - 1)),
       period=st.sampled_from((100000, 50000, 1000, 1, 0)))
def test_milli_cpu_to_shares_and_quota(v136, milli, period):
    assert helpers.milli_cpu_to_shares(milli) == v136.call("MilliCPUToShares", milliCPU=milli)
    theirs = v136.call("MilliCPUToQuota", milliCPU=milli, period=period)
    assert helpers.milli_cpu_to_quota(milli, period, cpu_cfs_quota_period_gate=quota_gate()) == theirs


def _resource_config(v136, pod, enforce_cpu_limits, enforce_memory_qos, period):
    theirs = v136.call("ResourceConfigForPod", pod=pod, enforceCPULimits=enforce_cpu_limits, cpuPeriod=period,
                       enforceMemoryQoS=enforce_memory_qos)
    mine = helpers.resource_config_for_pod(api.pod_from_manifest(pod), enforce_cpu_limits, period,
                                           enforce_memory_qos, cpu_cfs_quota_period_gate=quota_gate())
    assert (mine.memory, mine.cpu_shares, mine.cpu_quota, mine.cpu_period, mine.pids_limit) == (
        theirs["Memory"], theirs["CPUShares"], theirs["CPUQuota"], theirs["CPUPeriod"], theirs["PidsLimit"])
    assert mine.huge_page_limit == {int(size): limit for size, limit in (theirs["HugePageLimit"] or {}).items()}
    assert mine.unified == (theirs["Unified"] or {})


@differential
@given(pod=plain_pods, enforce_cpu_limits=st.booleans(), period=st.sampled_from((100000, 50000, 1000)))
def test_resource_config_for_pod_without_sidecars(v136, pod, enforce_cpu_limits, period):
    assume(in_int64(pod))  # see test_differential.in_int64
    _resource_config(v136, pod, enforce_cpu_limits, False, period)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="v1.36's ResourceConfigForPod takes a memoryReservationPolicy: None, the "
                   "default, writes no memory protection (TieredReservation writes memory.low); mini_kubelet writes "
                   "v1.27's memory.min from the memory request")
@known_difference
@given(pod=plain_pods)
@example(pod=pod_of([{"name": "a", "resources": {"requests": {"memory": "1Gi"}}}]))
def test_resource_config_for_pod_with_memory_qos(v136, pod):
    assume(in_int64(pod))
    _resource_config(v136, pod, True, True, 100000)


@differential
@given(shares=st.one_of(st.integers(2, 2**20), st.sampled_from((2, 3, 1024, 262143, 262144, 262145, 2**63))))
@example(shares=1024)  # 39: the straight line of KEP-2254, not the cgroups library's curve (100)
def test_cpu_weight(v136, shares):
    """What v1.36.5's cgroup manager writes to a pod or QoS cgroup's cpu.weight: its own getCPUWeight (a shim).

    The kubelet passes that weight to github.com/opencontainers/cgroups (v0.0.6 in v1.36.5), whose fs2 and
    systemd drivers write it unchanged; the library's own shares-to-weight curve is for callers that pass shares,
    such as runc for a container's cgroup.
    """
    assert cgroups.cpu_shares_to_cpu_weight(shares) == v136.call("CPUWeight", cpuShares=shares)


def test_cpu_weight_of_no_shares(v136):
    """getCPUWeight of no shares is 0: toResources then leaves cpu.weight alone."""
    assert v136.call("CPUWeight", cpuShares=None) == 0


@pytest.mark.parametrize("shares, kubelet, runtime", [(2, 1, 1), (102, 4, 17), (256, 10, 35), (1024, 39, 100),
                                                      (262144, 10000, 10000)])
def test_cpu_weight_is_not_the_runtimes(v136, shares, kubelet, runtime):
    """The two conversions a v1.36 node runs: the kubelet's line for pod and QoS cgroups, the cgroups library's curve
    (v0.0.6 ConvertCPUSharesToCgroupV2Value, used by runc 1.3.2+ and crun 1.23+) for a container's own cgroup."""
    assert (v136.call("CPUWeight", cpuShares=shares), v136.call("CgroupV2Weight", cpuShares=shares)) == (kubelet, runtime)
    assert cgroups.cpu_shares_to_cpu_weight(shares) == kubelet


# --- eviction thresholds and the fit check ----------------------------------------------------------------


@differential
@given(hard=_signal_map(THRESHOLD_VALUES), soft=_signal_map(THRESHOLD_VALUES), grace=_signal_map(GRACE_PERIODS),
       reclaim=_signal_map(MIN_RECLAIMS), allocatable=st.sampled_from(([], ["pods"])))
def test_parse_threshold_config(v136, hard, soft, grace, reclaim, allocatable):
    mine = outcome(lambda: _mine_thresholds(
        eviction_thresholds.parse_threshold_config(allocatable, hard, soft, grace, reclaim)))
    agree(mine, lambda: outcome(lambda: _go_thresholds(v136.call(
        "ParseThresholdConfig", allocatableConfig=allocatable, evictionHard=hard, evictionSoft=soft,
        evictionSoftGracePeriod=grace, evictionMinimumReclaim=reclaim))))


OVERCOMMITTED = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"},
                 "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}}
BUSY = pod_of([{"name": "a", "resources": {"requests": {"cpu": "2"}}}])  # more cpu than the node has
BUSY["metadata"]["name"] = "busy"


@differential
@given(pod=ps.placed_pods(), node=ps.nodes(), pods=others)
@example(pod=pod_of([{"name": "a", "resources": {"requests": {"memory": "1Mi"}}}]), node=OVERCOMMITTED,
         pods=(BUSY,))  # fits (without the skip: Insufficient cpu)
def test_fits(v136, pod, node, pods):
    info = scheduler.new_node_info(api.node_from_manifest(node), [api.pod_from_manifest(p) for p in pods])
    mine = [(r.resource_name, r.reason, r.requested, r.used, r.capacity)
            for r in scheduler.fits(api.pod_from_manifest(pod), info)]
    assert mine == _go_fits(v136.call("Fits", pod=pod, node=node, pods=list(pods)))


# --- pod-level resources (PodLevelResources, beta and on from 1.34) -------------------------------------------


def with_pod_resources(pod: dict, pod_resources: dict) -> dict:
    if pod_resources:
        pod["spec"]["resources"] = pod_resources
    return pod


pod_level = st.builds(with_pod_resources, ps.pods(), ps.resource_requirements(ps.small_quantities).map(
    lambda r: {kind: {k: v for k, v in amounts_.items() if k in ("cpu", "memory")}
               for kind, amounts_ in (r or {}).items()}))


@differential
@given(pod=pod_level)
def test_qos_with_pod_level_resources(v136, pod):
    assert qos.get_pod_qos(api.pod_from_manifest(pod)) == v136.call("ComputePodQOS", pod=pod)


@differential
@given(pod=pod_level, exclude_overhead=st.booleans())
def test_pod_requests_with_pod_level_resources(v136, pod, exclude_overhead):
    _resources(resource.pod_requests, "PodRequests", v136, pod, exclude_overhead)


@differential
@given(pod=pod_level, index=st.integers(0, 5), capacity=capacities)
def test_oom_score_with_pod_level_resources(v136, pod, index, capacity):
    _oom(v136, pod, index, capacity)


# --- admission (the predicate admit handler and critical-pod preemption) ----------------------------------


@st.composite
def admitted_pods(draw, name="p"):
    """A Pod as admission sees it at v1.36: maybe sidecars with host ports, pod-level resources, an OS label."""
    pod = draw(ps.placed_pods(name=name))
    sidecars = [c for c in pod["spec"].get("initContainers", []) if c.get("restartPolicy") == "Always"]
    if sidecars:
        ports = draw(ps.host_ports)
        if ports:
            sidecars[0]["ports"] = ports
    pod_resources = draw(st.one_of(st.none(), ps.resource_requirements(ps.small_quantities)))
    if pod_resources:
        pod["spec"]["resources"] = {kind: {k: v for k, v in amounts_.items() if k in ("cpu", "memory")}
                                    for kind, amounts_ in pod_resources.items()}
    os_label = draw(st.sampled_from((None, None, "linux", "windows")))
    if os_label:
        pod["metadata"]["labels"] = {"kubernetes.io/os": os_label}
    return pod


@st.composite
def admitting_nodes(draw):
    """A Node as above, sometimes with conditions (which the predicate handler does not read) and extended resources."""
    node = draw(ps.nodes())
    conditions = draw(st.lists(st.sampled_from(("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")),
                               unique=True, max_size=2))
    if conditions:
        node["status"]["conditions"] = [{"type": c, "status": "True"} for c in conditions]
    return node


admission_others = st.integers(0, 3).flatmap(lambda n: st.tuples(*(admitted_pods(name=f"q{i}") for i in range(n))))


def _admit(harness, pod, node, pods):
    """The predicate admit handler's answer and the pods it preempted, by mini_kubelet and upstream."""
    goos = harness.call("GOOS")
    result = lifecycle.predicate_admit(api.pod_from_manifest(pod), node and api.node_from_manifest(node),
                                       [api.pod_from_manifest(p) for p in pods], goos=goos)
    mine = json.dumps({"admit": result.admit, "reason": result.reason, "message": result.message,
                       "preempted": [f"{p.metadata.namespace}/{p.metadata.name}" for p in result.preempted]},
                      sort_keys=True)
    agree(_scalars_sorted(mine), lambda: _scalars_sorted(
        json.dumps(harness.call("Admit", pod=pod, node=node, pods=list(pods)), sort_keys=True)))


STATIC = {"kubernetes.io/config.source": "file"}  # a static pod: critical, so it may preempt
FULL_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a", "labels": {"kubernetes.io/os": "linux"}},
             "status": {"allocatable": {}, "capacity": {"pods": "0"}}}


def critical(pod: dict, **metadata) -> dict:
    pod["metadata"].update(namespace="default", annotations=STATIC, **metadata)
    return pod


POD_LEVEL_Q0 = pod_of([{"name": "a"}])
POD_LEVEL_Q0["metadata"].update(name="q0", namespace="default")
POD_LEVEL_Q0["spec"]["resources"] = {"requests": {"cpu": "1n"}, "limits": {"cpu": "1n"}}


@differential
@given(pod=admitted_pods(), node=st.one_of(admitting_nodes(), admitting_nodes(), st.none()), pods=admission_others)
# Found by this test: v1.29 (#116892) runs the OS checks first; mini_kubelet tried preemption first, as v1.27 does,
# and answered UnexpectedAdmissionError (no pods to preempt for the pod count).
@example(pod=critical(pod_of([{"name": "a"}]), labels={"kubernetes.io/os": "windows"}), node=FULL_NODE, pods=())
# Found by this test: the preemption reads each Pod's request with GetResourceRequest, which from v1.34 (#132277)
# counts pod-level requests: q0's 1n of cpu is 1m, so 1m is still short, not 2m.
@example(pod=critical(pod_of([{"name": "a", "resources": {"requests": {"cpu": "1n"}}}])), node=FULL_NODE,
         pods=(POD_LEVEL_Q0,))
# v1.31 (#125498): the message ends with the check's description.
@example(pod=pod_of([{"name": "a"}]) | {"spec": {"containers": [{"name": "a"}], "nodeName": "node-b"}},
         node=OVERCOMMITTED, pods=())
# v1.31 (#124273): an init container's request for an extended resource the node does not list is dropped too.
@example(pod=pod_of([{"name": "a"}], [{"name": "i", "resources": {"requests": {"example.com/gpu": "1"},
                                                                    "limits": {"example.com/gpu": "1"}}}]),
         node=OVERCOMMITTED, pods=())
def test_admit(v136, pod, node, pods):
    _admit(v136, pod, node, pods)


@differential
@given(pod=st.one_of(ps.pods(), sidecar_pods, pod_level), name=st.sampled_from(ps.RESOURCES + ("pods",)))
# Found by this test: from v1.34 (#132277) a Pod with pod-level resources counts only those (1n of cpu: 1m).
@example(pod=POD_LEVEL_Q0, name="cpu")
@example(pod=APP_AND_SIDECAR, name="cpu")  # the sidecar adds: 2 cpus (v1.27's max of inits: 1)
# A Pod-level request of memory only: the containers' cpu no longer counts at all.
@example(pod=pod_of([{"name": "a", "resources": CPU_1}]) | {"spec": {"containers": [{"name": "a", "resources": CPU_1}],
                                                                      "resources": {"requests": {"memory": "1Gi"}}}},
         name="cpu")
def test_get_resource_request(v136, pod, name):
    """Upstream: pkg/api/v1/resource/helpers.go GetResourceRequestQuantity and GetResourceRequest, v1.36.5."""
    assume(in_int64(pod))
    _resource_request(v136, pod, name)
