"""Chapter 3: QoS classes, critical pods, and the OOM score adjustment of each container."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_kubelet import api, qos, types

pytestmark = pytest.mark.ch3


def c(req_cpu=None, req_mem=None, lim_cpu=None, lim_mem=None, **extra):
    """Container resources as c(req cpu, req mem, lim cpu, lim mem); None = absent."""
    requests = {k: v for k, v in (("cpu", req_cpu), ("memory", req_mem)) if v is not None}
    limits = {k: v for k, v in (("cpu", lim_cpu), ("memory", lim_mem)) if v is not None}
    for key, value in extra.items():  # e.g. hugepages_2Mi="1Gi" in both requests and limits
        requests[key.replace("_", "-")] = limits[key.replace("_", "-")] = value
    return {"requests": requests, "limits": limits}


def make_pod(containers, init_containers=(), *, annotations=None, priority=None, priority_class_name=None):
    spec = {
        "containers": [{"name": f"c{i}", "image": "app", "resources": r} for i, r in enumerate(containers)],
        "initContainers": [{"name": f"i{i}", "image": "app", "resources": r} for i, r in enumerate(init_containers)],
    }
    if priority is not None:
        spec["priority"] = priority
    if priority_class_name is not None:
        spec["priorityClassName"] = priority_class_name
    metadata = {"name": "p", **({"annotations": annotations} if annotations else {})}
    return api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


GUARANTEED_C = c("100m", "100Mi", "100m", "100Mi")
BEST_EFFORT_C = c()


# pkg/apis/core/v1/helper/qos/qos_test.go TestGetPodQOS (read at sanposhiho/kubernetes@059ce4e8;
# the container-only cases are unchanged in the later TestComputePodQOS)
@pytest.mark.parametrize("name, containers, inits, expected", [
    ("guaranteed", [GUARANTEED_C], [], qos.GUARANTEED),
    ("guaranteed-guaranteed", [GUARANTEED_C, GUARANTEED_C], [], qos.GUARANTEED),
    ("best-effort-best-effort", [BEST_EFFORT_C, BEST_EFFORT_C], [], qos.BEST_EFFORT),
    ("best-effort", [BEST_EFFORT_C], [], qos.BEST_EFFORT),
    ("best-effort-burstable", [BEST_EFFORT_C, c("1", None, "2", None)], [], qos.BURSTABLE),
    ("best-effort-guaranteed", [BEST_EFFORT_C, c("10m", "100Mi", "10m", "100Mi")], [], qos.BURSTABLE),
    ("burstable-cpu-guaranteed-memory", [c(None, "100Mi", None, "100Mi")], [], qos.BURSTABLE),
    ("burstable-no-limits", [c("100m", "100Mi")], [], qos.BURSTABLE),
    ("burstable-guaranteed", [c("1", "100Mi", "2", "100Mi"), GUARANTEED_C], [], qos.BURSTABLE),
    ("burstable-unbounded-but-requests-match-limits", [c("100m", "100Mi", "200m", "200Mi"), c("100m", "100Mi")], [],
     qos.BURSTABLE),
    ("burstable-1", [c("10m", "100Mi", "100m", "200Mi")], [], qos.BURSTABLE),
    ("burstable-2", [c("0", "0", "100m", "200Mi")], [], qos.BURSTABLE),
    ("best-effort-hugepages", [c("0", "0", "0", "0", hugepages_2Mi="1Gi")], [], qos.BEST_EFFORT),
    ("init-container", [BEST_EFFORT_C], [c("10m", "100Mi", "100m", "200Mi")], qos.BURSTABLE),
])
def test_get_pod_qos(name, containers, inits, expected):
    assert qos.get_pod_qos(make_pod(containers, inits)) == expected


# pkg/apis/core/v1/helper/qos/qos.go GetPodQOS edge cases (derived from the source; no upstream test)
@pytest.mark.parametrize("name, containers, inits, expected", [
    ("limits only, no defaulting applied", [c(None, None, "1", "1Gi")], [], qos.BURSTABLE),
    ("zero requests, no limits", [c("0", "0")], [], qos.BEST_EFFORT),
    ("only a zero memory limit", [c(None, None, None, "0")], [], qos.BEST_EFFORT),
    ("guaranteed app, init without limits", [GUARANTEED_C], [c("100m", "100Mi")], qos.BURSTABLE),
    ("equal values in different units", [c("1", "1Gi", "1000m", "1024Mi")], [], qos.GUARANTEED),
])
def test_get_pod_qos_edge_cases(name, containers, inits, expected):
    assert qos.get_pod_qos(make_pod(containers, inits)) == expected


STANDARD_MEMORY_AMOUNT = 8000000000


# pkg/kubelet/qos/policy_test.go TestGetContainerOOMScoreAdjust, read at sanposhiho/kubernetes@059ce4e8,
# whose policy.go equals v1.27's. (Older copies in kubernetes/kubernetes expect -998 and a floor of 2,
# or treat a priority-only critical pod as -997; neither is v1.27, so they are not used.)
# Upstream checks low <= adj <= high on containers[0]; every row here has one exact v1.27 value
# (cpuUnlimitedMemoryLimitedWithRequests: upstream range 495..505, exact 500).
@pytest.mark.parametrize("name, pod_args, memory_capacity, expected", [
    ("cpuLimit", {"containers": [c(None, None, "10", None)]}, 4000000000, 999),
    ("memoryLimitCPURequest", {"containers": [c("0", None, None, "10G")]}, STANDARD_MEMORY_AMOUNT, 999),
    ("zeroMemoryLimit", {"containers": [c(None, None, None, "0")]}, 7230457451, 1000),
    ("noRequestLimit", {"containers": [c()]}, 4000000000, 1000),
    ("equalRequestLimitCPUMemory", {"containers": [c("5m", "10G", "5m", "10G")]}, 123456789, -997),
    ("cpuUnlimitedMemoryLimitedWithRequests", {"containers": [c("5m", str(STANDARD_MEMORY_AMOUNT // 2), None, "10G")]},
     STANDARD_MEMORY_AMOUNT, 500),
    ("requestNoLimit", {"containers": [c("5m", str(STANDARD_MEMORY_AMOUNT - 1))]}, STANDARD_MEMORY_AMOUNT, 3),
    ("clusterCritical", {"containers": [c()], "priority": 2000000000, "priority_class_name": "system-cluster-critical"},
     4000000000, 1000),
    ("nodeCritical", {"containers": [c()], "priority": 2000001000, "priority_class_name": "system-node-critical"},
     4000000000, -997),
])
def test_get_container_oom_score_adjust(name, pod_args, memory_capacity, expected):
    containers = pod_args.pop("containers")
    pod = make_pod(containers, **pod_args)
    assert qos.get_container_oom_score_adjust(pod, pod.spec.containers[0], memory_capacity) == expected


# pkg/kubelet/kuberuntime/kuberuntime_container_linux_test.go TestGenerateLinuxContainerResources
# (MemoryCapacity 17179860387, gate off), plus examples computed from policy.go GetContainerOOMScoreAdjust.
@pytest.mark.parametrize("name, container, memory_capacity, expected", [
    ("guaranteed", c("250m", "500Mi", "250m", "500Mi"), 17179860387, -997),
    ("burstable", c("250m", "500Mi", "500m", "750Mi"), 17179860387, 970),
    ("best-effort", c(), 17179860387, 1000),
    ("1Gi of 3Gi (computed)", c(None, "1Gi"), 3 * 2**30, 667),
    ("request above capacity (computed)", c(None, "16G"), STANDARD_MEMORY_AMOUNT, 3),
])
def test_oom_score_adjust_examples(name, container, memory_capacity, expected):
    pod = make_pod([container])
    assert qos.get_container_oom_score_adjust(pod, pod.spec.containers[0], memory_capacity) == expected


def test_oom_score_adjust_uses_this_containers_request_only():
    pod = make_pod([c(None, "4G"), c(None, "1G")])
    adjs = [qos.get_container_oom_score_adjust(pod, ctr, STANDARD_MEMORY_AMOUNT) for ctr in pod.spec.containers]
    assert adjs == [500, 875]


# pkg/kubelet/types/pod_update.go IsStaticPod / IsMirrorPod / IsCriticalPod / IsNodeCriticalPod
@pytest.mark.parametrize("name, pod_args, static, mirror, critical, node_critical", [
    ("plain", {}, False, False, False, False),
    ("from the API server", {"annotations": {types.CONFIG_SOURCE_ANNOTATION_KEY: "api"}}, False, False, False, False),
    ("static from a file", {"annotations": {types.CONFIG_SOURCE_ANNOTATION_KEY: "file"}}, True, False, True, False),
    ("static with an empty source", {"annotations": {types.CONFIG_SOURCE_ANNOTATION_KEY: ""}}, True, False, True, False),
    ("mirror", {"annotations": {types.CONFIG_MIRROR_ANNOTATION_KEY: "hash"}}, False, True, True, False),
    ("priority just below", {"priority": 1999999999, "priority_class_name": "system-node-critical"},
     False, False, False, False),
    ("system-cluster-critical", {"priority": 2000000000, "priority_class_name": "system-cluster-critical"},
     False, False, True, False),
    ("system-node-critical", {"priority": 2000001000, "priority_class_name": "system-node-critical"},
     False, False, True, True),
    ("static, node-critical class, no priority",
     {"annotations": {types.CONFIG_SOURCE_ANNOTATION_KEY: "file"}, "priority_class_name": "system-node-critical"},
     True, False, True, True),
])
def test_pod_predicates(name, pod_args, static, mirror, critical, node_critical):
    pod = make_pod([c()], **pod_args)
    assert (types.is_static_pod(pod), types.is_mirror_pod(pod), types.is_critical_pod(pod),
            types.is_node_critical_pod(pod)) == (static, mirror, critical, node_critical)


# Properties over generated pods. Quantities include zeros, which must count as "not set".
AMOUNT = st.one_of(st.none(), st.sampled_from(["0", "1m", "100m", "1", "64Mi", "1Gi", "3G"]))


@st.composite
def resources(draw):
    """One container's cpu/memory requests and limits, each limit at least its request (API validation)."""
    r = {}
    for name in ("cpu", "memory"):
        request, extra = draw(AMOUNT), draw(AMOUNT)
        if request is not None:
            r.setdefault("requests", {})[name] = request
        if extra is not None:
            limit = api.parse_quantity(extra) + (api.parse_quantity(request) if request is not None else 0)
            r.setdefault("limits", {})[name] = str(limit)
    return r


PODS = st.tuples(st.lists(resources(), min_size=1, max_size=3), st.lists(resources(), max_size=2))


def has_positive_limit(r, name):
    return name in r.get("limits", {}) and api.parse_quantity(r["limits"][name]) > 0


@given(PODS)
def test_guaranteed_only_if_every_container_limits_cpu_and_memory(containers_and_inits):
    containers, inits = containers_and_inits
    if any(not (has_positive_limit(r, "cpu") and has_positive_limit(r, "memory")) for r in containers + inits):
        assert qos.get_pod_qos(make_pod(containers, inits)) != qos.GUARANTEED


@given(PODS, st.integers(min_value=1, max_value=10**13))
def test_burstable_oom_score_adjust_is_between_3_and_999(containers_and_inits, memory_capacity):
    pod = make_pod(*containers_and_inits)
    if qos.get_pod_qos(pod) == qos.BURSTABLE:
        for container in pod.spec.containers + (pod.spec.init_containers or []):
            assert 3 <= qos.get_container_oom_score_adjust(pod, container, memory_capacity) <= 999


@given(PODS, st.sampled_from(["file", "http", "", "kubeadm"]), st.one_of(st.none(), st.integers(-10, 2 * 10**9)),
       st.integers(min_value=1, max_value=10**13))
def test_static_node_critical_pod_always_gets_minus_997(containers_and_inits, source, priority, memory_capacity):
    pod = make_pod(*containers_and_inits, annotations={types.CONFIG_SOURCE_ANNOTATION_KEY: source},
                   priority=priority, priority_class_name="system-node-critical")
    for container in pod.spec.containers + (pod.spec.init_containers or []):
        assert qos.get_container_oom_score_adjust(pod, container, memory_capacity) == -997
