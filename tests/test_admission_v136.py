"""Chapter 2: the resource fit and the host-port check the kubelet runs at admission, as v1.36 runs them.

Rows ported from pkg/scheduler/framework/plugins/noderesources/fit_test.go #TestEnoughRequests and
#TestRestartableInitContainers, read in a copy of kubernetes/kubernetes from the v1.35-v1.36 development line
(its fit.go has SignPod, DRA-backed extended resources and `k8s.io/kube-scheduler/framework`; the exact tag
could not be pinned), run under `features.release_profile("1.36")`. The same rows under the default profile
give v1.27's answers, which the last column holds. The DRA rows are left out (not modelled).
"""

from __future__ import annotations

import pytest
from kubernetes.client import (V1Container, V1ContainerPort, V1Node, V1ObjectMeta, V1Pod, V1PodSpec,
                               V1ResourceRequirements)

from mini_kubelet import features, lifecycle, scheduler

from .test_scheduler import FIT_NODE, make_node

pytestmark = pytest.mark.ch2

HP = "hugepages-2Mi"


def res(cpu=0, mem=0, **scalars):
    """Upstream's newResourcePod amounts: cpu in millicores and memory in bytes, written even when 0 (as upstream)."""
    out = {"cpu": f"{cpu}m", "memory": str(mem), "pods": "0", "ephemeral-storage": "0"}
    out.update({{"aaa": "example.com/aaa", "hp": HP}[k]: str(v) for k, v in scalars.items()})
    return out


def ctr(requests=None, sidecar=False, name="c", ports=()):
    return V1Container(name=name, resources=V1ResourceRequirements(requests=requests),
                       restart_policy="Always" if sidecar else None,
                       ports=[V1ContainerPort(container_port=p, host_port=p) for p in ports] or None)


def pod(*containers, inits=(), pod_requests=None, name="p") -> V1Pod:
    """containers / inits: lists of requests (upstream's newResourcePod / newResourceInitPod), or V1Containers."""
    as_ctr = lambda r, i, kind: r if isinstance(r, V1Container) else ctr(r, name=f"{kind}{i}")  # noqa: E731
    level = V1ResourceRequirements(requests=pod_requests) if pod_requests is not None else None
    return V1Pod(metadata=V1ObjectMeta(name=name), spec=V1PodSpec(
        containers=[as_ctr(r, i, "c") for i, r in enumerate(containers)],
        init_containers=[as_ctr(r, i, "i") for i, r in enumerate(inits)], resources=level))


def shortfalls(p: V1Pod, node: V1Node, others: list[V1Pod]):
    return sorted((r.resource_name, r.requested, r.used, r.capacity)
                  for r in scheduler.fits(p, scheduler.new_node_info(node, others)))


# fit_test.go#TestEnoughRequests: the rows on zero requests and pod-level resources (podLevelResourcesEnabled).
# (name, pod, the existing pod's requests, v1.36 shortfalls, v1.27 shortfalls)
ENOUGH = [
    ("skip checking resource request with quantity zero", pod(res(aaa=1)), res(20, 30, aaa=1),
     [], [("cpu", 0, 20, 10), ("memory", 0, 30, 20)]),
    ("skip checking extended resource request with quantity zero", pod(res(1, 1, aaa=0)), res(0, 0, aaa=6), [], []),
    ("both pod-level and container-level resources fit", pod(res(1, 1), pod_requests={"cpu": "1m", "memory": "2"}),
     res(5, 5), [], []),
    ("pod-level cpu resource not fit", pod(res(1, 1), pod_requests={"cpu": "7m", "memory": "2"}), res(5, 5),
     [("cpu", 7, 5, 10)], []),
    ("pod-level memory resource not fit", pod(res(1, 1), pod_requests={"cpu": "3m", "memory": "2"}), res(5, 19),
     [("memory", 2, 19, 20)], []),
    ("pod-level hugepages resource fit", pod(pod_requests={"cpu": "3m", "memory": "2", HP: "5"}), None, [], []),
    ("both pod-level and container-level hugepages resource fit",
     pod(res(1, 1, hp=3), pod_requests={"cpu": "3m", "memory": "2", HP: "5"}), None, [], []),
    ("pod-level hugepages resource not fit", pod(pod_requests={"cpu": "3m", "memory": "2", HP: "10"}), None,
     [(HP, 10, 0, 5)], []),
    ("one pod-level cpu resource fits and all init and non-init containers resources fit",
     pod(res(1, 1), inits=[res(1, 1)], pod_requests={"cpu": "3m", "memory": "2"}), res(5, 19), [("memory", 2, 19, 20)], []),
]


@pytest.mark.parametrize("name, p, existing, want_136, want_127", ENOUGH, ids=[row[0] for row in ENOUGH])
def test_enough_requests(name, p, existing, want_136, want_127):
    others = [pod(existing, name="existing")] if existing is not None else []
    with features.release_profile("1.36"):
        assert shortfalls(p, make_node(FIT_NODE), others) == want_136
    assert shortfalls(p, make_node(FIT_NODE), others) == want_127


def sidecar_pod(request_m, sidecar_m):
    return pod(ctr({"cpu": f"{request_m}m"}, name="regular"), inits=[ctr({"cpu": f"{sidecar_m}m"}, sidecar=True,
                                                                          name="restartable-init")])


# fit_test.go#TestRestartableInitContainers: the two rows that check resources, with sidecars enabled;
# node allocatable cpu 2m, memory 0, pods 1. v1.27 reads the sidecar as a plain init container: max, not sum.
@pytest.mark.parametrize("name, p, want_136, want_127", [
    ("allow pod if the total requested resources do not exceed the node's allocatable resources",
     sidecar_pod(1, 1), [], []),
    ("not allow pod if the total requested resources do exceed the node's allocatable resources",
     sidecar_pod(1, 2), [("cpu", 3, 0, 2)], []),
])
def test_restartable_init_containers(name, p, want_136, want_127):
    node = make_node({"cpu": "2m", "memory": "0", "pods": "1", "example.com/aaa": "0", "ephemeral-storage": "0", HP: "0"})
    with features.release_profile("1.36"):
        assert shortfalls(p, node, []) == want_136
    assert shortfalls(p, node, []) == want_127


def test_zero_request_skip_starts_in_1_28():
    # #116408 (1.28): an over-committed node no longer rejects a Pod that asks for none of that resource.
    p, others = pod(res(aaa=1)), [pod(res(20, 30, aaa=1), name="existing")]
    with features.release_profile("1.27"):
        assert shortfalls(p, make_node(FIT_NODE), others) != []
    with features.release_profile("1.28"):
        assert shortfalls(p, make_node(FIT_NODE), others) == []


# ---- host ports of sidecars (#132040, 1.34: pkg/scheduler/util GetHostPorts and NodeInfo.updateUsedPorts) -----

def with_port(port, sidecar, name):
    c = ctr(name="proxy", sidecar=sidecar, ports=[port])
    return pod(ctr(name="app"), inits=[c], name=name) if sidecar else pod(c, name=name)


@pytest.mark.parametrize("release, fits", [("1.27", True), ("1.33", True), ("1.34", False), ("1.36", False)])
@pytest.mark.parametrize("new_is_sidecar, old_is_sidecar", [(True, False), (False, True), (True, True)])
def test_sidecar_host_ports_count_from_1_34(release, fits, new_is_sidecar, old_is_sidecar):
    with features.release_profile(release):
        node_info = scheduler.new_node_info(make_node(), [with_port(8080, old_is_sidecar, "old")])
        assert scheduler.fits_ports(with_port(8080, new_is_sidecar, "new"), node_info) is fits


def test_a_plain_init_containers_host_port_never_counts():
    plain = pod(ctr(name="app"), inits=[ctr(name="setup", ports=[8080])], name="old")
    with features.release_profile("1.36"):
        node_info = scheduler.new_node_info(make_node(), [plain])
        assert node_info.used_ports == set()
        assert scheduler.fits_ports(with_port(8080, False, "new"), node_info)


# ---- the kubelet's admission (predicateAdmitHandler.Admit) with these requests ---------------------------------

NODE = {"cpu": "1", "memory": "1Gi", "pods": "10"}


def test_admission_counts_sidecars_in_the_pod_and_in_the_pods_already_admitted():
    running = pod(ctr({"cpu": "300m"}, name="app"), inits=[ctr({"cpu": "200m"}, sidecar=True, name="proxy")], name="old")
    new = pod(ctr({"cpu": "400m"}, name="app"), inits=[ctr({"cpu": "200m"}, sidecar=True, name="proxy")], name="new")
    assert lifecycle.predicate_admit(new, make_node(NODE), [running]).admit  # v1.27: 300m used, 400m asked
    with features.release_profile("1.36"):
        result = lifecycle.predicate_admit(new, make_node(NODE), [running])
    assert (result.admit, result.reason) == (False, lifecycle.OUT_OF_CPU)
    assert result.message == "Node didn't have enough resource: cpu, requested: 600, used: 500, capacity: 1000"


def test_admission_uses_pod_level_requests():
    big = pod(ctr({"cpu": "100m"}, name="a"), ctr({"cpu": "100m"}, name="b"), pod_requests={"cpu": "1500m"})
    assert lifecycle.predicate_admit(big, make_node(NODE), []).admit
    with features.release_profile("1.36"):
        result = lifecycle.predicate_admit(big, make_node(NODE), [])
        assert result.reason == lifecycle.OUT_OF_CPU and "requested: 1500" in result.message
        with features.set_feature_gate_during_test(features.DEFAULT_FEATURE_GATE, "PodLevelResources", False):
            assert lifecycle.predicate_admit(big, make_node(NODE), []).admit


# ---- the order of the checks and their words (predicate.go: #116892 in 1.29, #125498 and #124273 in 1.31) --------
# Each pinned at its first release and the one before, against the answers upstream v1.36.5 gives in
# tests/test_differential_v1_36.py::test_admit.

def critical(p: V1Pod, **labels) -> V1Pod:
    p.metadata.annotations = {"kubernetes.io/config.source": "file"}  # a static pod: critical
    p.metadata.labels = labels or None
    return p


@pytest.mark.parametrize("release, reason", [("1.28", lifecycle.OUT_OF_CPU),
                                             ("1.29", lifecycle.POD_OS_SELECTOR_NODE_LABEL_DOES_NOT_MATCH)])
def test_the_os_checks_run_first_from_1_29(release, reason):
    p = pod(ctr({"cpu": "2"}))
    p.metadata.labels = {"kubernetes.io/os": "windows"}
    with features.release_profile(release):
        assert lifecycle.predicate_admit(p, make_node(NODE, labels={"kubernetes.io/os": "linux"}), []).reason == reason


@pytest.mark.parametrize("release, preempted", [("1.28", ["victim"]), ("1.29", [])])
def test_no_pod_is_preempted_for_a_pod_of_another_os_from_1_29(release, preempted):
    victim = pod(ctr({"cpu": "900m"}), name="victim")
    p = critical(pod(ctr({"cpu": "500m"})), **{"kubernetes.io/os": "windows"})
    with features.release_profile(release):
        result = lifecycle.predicate_admit(p, make_node(NODE), [victim])
    assert (result.reason, [v.metadata.name for v in result.preempted]) == (
        lifecycle.POD_OS_SELECTOR_NODE_LABEL_DOES_NOT_MATCH, preempted)


@pytest.mark.parametrize("release, message", [
    ("1.30", "Predicate NodeName failed"),
    ("1.31", "Predicate NodeName failed: node(s) didn't match the requested node name")])
def test_the_predicate_message_has_its_description_from_1_31(release, message):
    p = pod(ctr())
    p.spec.node_name = "another-node"
    with features.release_profile(release):
        result = lifecycle.predicate_admit(p, make_node(NODE), [])
    assert (result.reason, result.message) == (lifecycle.NODE_NAME, message)


@pytest.mark.parametrize("release, reason", [("1.30", "OutOfexample.com/gpu"), ("1.31", "")])
def test_init_containers_unknown_extended_resources_are_dropped_from_1_31(release, reason):
    gpu = {"example.com/gpu": "1"}
    p = pod(ctr(), inits=[ctr(gpu, name="setup")])
    with features.release_profile(release):
        assert lifecycle.predicate_admit(p, make_node(NODE), []).reason == reason


@pytest.mark.parametrize("release, victims", [("1.33", ["small", "sidecar"]), ("1.34", ["sidecar"])])
def test_preemption_counts_a_pods_sidecars_from_1_34(release, victims):
    # 1.34 (#132277): GetResourceRequest is PodRequests without overhead, so the sidecar's 600m counts beside its
    # app's 100m (v1.33 takes the larger, 600m, which is not enough, and preempts the other Pod too).
    with_sidecar = pod(ctr({"cpu": "100m"}, name="app"), inits=[ctr({"cpu": "600m"}, sidecar=True, name="proxy")],
                       name="sidecar")
    small = pod(ctr({"cpu": "300m"}), name="small")
    p = critical(pod(ctr({"cpu": "700m"})))
    with features.release_profile(release):
        result = lifecycle.predicate_admit(p, make_node(NODE), [small, with_sidecar])
    assert result.admit and sorted(v.metadata.name for v in result.preempted) == sorted(victims)
