"""Chapter 2: the predicate admit handler — general predicates, the OS checks, reasons and messages, preemption.

Tables from pkg/kubelet/lifecycle/predicate_test.go, read at sanposhiho/kubernetes@059ce4e8, whose
predicate.go is byte-identical to v1.27.7's. Preemption cases follow pkg/kubelet/preemption/preemption.go
CriticalPodAdmissionHandler.HandleAdmissionFailure (derived from the source; no upstream test).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_kubelet import api, lifecycle, scheduler

from .test_scheduler import make_node, make_pod, rl

pytestmark = pytest.mark.ch2

GOOS = "linux"
MACHINE1 = {"cpu": "10m", "memory": "20", "pods": "32"}  # TestGeneralPredicates' node


def named_pod(name, labels=None, annotations=None, **spec):
    pod = make_pod(name=name, **spec)
    pod.metadata.labels, pod.metadata.annotations = labels, annotations
    return pod


def failure(reason):
    if isinstance(reason, lifecycle.InsufficientResourceError):
        return (reason.resource_name, reason.requested, reason.used, reason.capacity)
    return (reason.predicate_name, reason.predicate_desc)


# predicate_test.go#TestGeneralPredicates (node machine1: cpu 10m, memory 20, pods 32)
GENERAL = [
    ("no resources/port/host requested always fits", make_pod(), [make_pod(rl(9, 19))], [], []),
    ("not enough cpu and memory resource", make_pod(rl(8, 10)), [make_pod(rl(5, 19))], [],
     [("cpu", 8, 5, 10), ("memory", 10, 19, 20)]),
    ("host not match", make_pod(nodeName="machine2"), [], [],
     [("NodeName", "node(s) didn't match the requested node name")]),
    ("hostport conflict", make_pod(**{"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 123, "hostPort": 123}]}]}),
     [make_pod(**{"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 123, "hostPort": 123}]}]})], [],
     [("NodePorts", "node(s) didn't have free ports for the requested pod ports")]),
    ("taint/toleration match", make_pod(tolerations=[{"key": "foo"}, {"key": "bar"}]), [],
     [{"key": "foo", "effect": "NoSchedule"}, {"key": "bar", "effect": "NoExecute"}], []),
    ("NoSchedule taint/toleration not match", make_pod(), [], [{"key": "foo", "effect": "NoSchedule"}], []),
    ("NoExecute taint/toleration not match", make_pod(), [], [{"key": "bar", "effect": "NoExecute"}],
     [("TaintToleration", "node(s) had taints that the pod didn't tolerate")]),
    ("PreferNoSchedule taint/toleration not match", make_pod(), [], [{"key": "baz", "effect": "PreferNoSchedule"}], []),
    ("static pods ignore taints", named_pod("s", annotations={"kubernetes.io/config.source": "file"}), [],
     [{"key": "foo", "effect": "NoSchedule"}, {"key": "bar", "effect": "NoExecute"}], []),
]


@pytest.mark.parametrize("name, pod, existing, taints, expected", GENERAL, ids=[g[0] for g in GENERAL])
def test_general_predicates(name, pod, existing, taints, expected):
    node_info = scheduler.new_node_info(make_node(MACHINE1, taints=taints), existing)
    assert [failure(r) for r in lifecycle.general_filter(pod, node_info)] == expected


def container_pod(requests=None, limits=None):
    return make_pod(containers=[{"name": "c", "image": "x", "resources": {"requests": requests or {}, "limits": limits or {}}}])


# predicate_test.go#TestRemoveMissingExtendedResources
@pytest.mark.parametrize("desc, pod, allocatable, requests, limits", [
    ("requests in Limits should be ignored", container_pod(limits={"foo.com/bar": "1"}), {"foo.com/baz": "1"},
     {}, {"foo.com/bar": "1"}),
    ("requests for resources available in node should not be removed", container_pod({"foo.com/bar": "1"}),
     {"foo.com/bar": "1"}, {"foo.com/bar": "1"}, {}),
    ("requests for resources unavailable in node should be removed", container_pod({"foo.com/bar": "1"}),
     {"foo.com/baz": "1"}, {}, {}),
    ("allocatable 0 is kept (predicate.go removeMissingExtendedResources)", container_pod({"foo.com/bar": "1"}), {"foo.com/bar": "0"}, {"foo.com/bar": "1"}, {}),
])
def test_remove_missing_extended_resources(desc, pod, allocatable, requests, limits):
    got = lifecycle.remove_missing_extended_resources(pod, scheduler.new_node_info(make_node(allocatable), []))
    resources = got.spec.containers[0].resources
    assert ((resources.requests or {}), (resources.limits or {})) == (requests, limits)
    assert pod.spec.containers[0].resources.requests == (container_pod(pod.spec.containers[0].resources.requests)
                                                         .spec.containers[0].resources.requests)  # original untouched


def test_init_containers_keep_missing_extended_resources():
    """v1.27 filters app containers only: an init container's unknown resource is short with capacity 0."""
    node = make_node({"pods": "10"})
    app = lifecycle.predicate_admit(make_pod(rl(**{"example.com__gpu": 1})), node, [])
    init = lifecycle.predicate_admit(make_pod(init=[rl(**{"example.com__gpu": 1})]), node, [])
    assert app.admit and (init.reason, init.message) == (
        "OutOfexample.com/gpu", "Node didn't have enough resource: example.com/gpu, requested: 1, used: 0, capacity: 0")


def os_node(os_label):
    return make_node({"pods": "10"}, labels={"kubernetes.io/os": os_label})


# predicate_test.go#TestRejectPodAdmissionBasedOnOSSelector (GOOS = linux)
@pytest.mark.parametrize("name, pod_label, node_label, reject", [
    ("OS label match", GOOS, GOOS, False),
    ("dummyOS label, but the underlying OS matches", GOOS, "dummyOS", False),
    ("dummyOS label, but the underlying OS doesn't match", "dummyOS", "dummyOS", True),
    ("dummyOS label, but the underlying OS doesn't match (duplicate row)", "dummyOS", "dummyOS", True),
    ("OS field mismatch, OS label on node object would be reset to correct value", "dummyOS", "dummyOS", True),
    ("No label selector on the pod, should be admitted", None, "dummyOS", False),
])
def test_reject_pod_admission_based_on_os_selector(name, pod_label, node_label, reject):
    pod = named_pod("p", labels={"kubernetes.io/os": pod_label} if pod_label else None)
    node = os_node(node_label)
    assert lifecycle.reject_pod_admission_based_on_os_selector(pod, node) is reject
    assert node.metadata.labels["kubernetes.io/os"] == GOOS  # the Go quirk: the node's label is corrected in place


# predicate_test.go#TestRejectPodAdmissionBasedOnOSField
@pytest.mark.parametrize("os_name, reject", [(GOOS, False), ("dummyOS", True), (None, False)])
def test_reject_pod_admission_based_on_os_field(os_name, reject):
    pod = make_pod(**({"os": {"name": os_name}} if os_name else {}))
    assert lifecycle.reject_pod_admission_based_on_os_field(pod) is reject


# pkg/kubelet/lifecycle/predicate.go Admit and kubelet.go rejectPod: the reasons and messages, word for word
@pytest.mark.parametrize("pod, node, others, reason, message", [
    (make_pod(rl(8)), make_node({"cpu": "10m", "pods": "5"}), [make_pod(rl(5))], "OutOfcpu",
     "Node didn't have enough resource: cpu, requested: 8, used: 5, capacity: 10"),
    (make_pod(rl(8, 30)), make_node({"cpu": "10m", "memory": "20", "pods": "1"}), [make_pod(rl(5))], "OutOfpods",
     "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"),
    (make_pod(nodeSelector={"disk": "ssd"}, nodeName="other"), make_node({"pods": "5"}), [], "NodeAffinity",
     "Predicate NodeAffinity failed"),
    (make_pod(nodeName="other"), make_node({"pods": "5"}), [], "NodeName", "Predicate NodeName failed"),
    (make_pod(), make_node({"pods": "5"}, taints=[{"key": "k", "effect": "NoExecute"}]), [], "TaintToleration",
     "Predicate TaintToleration failed"),
    (named_pod("p", labels={"kubernetes.io/os": "windows"}), make_node({"pods": "5"}), [],
     "PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"),
    (make_pod(os={"name": "windows"}), make_node({"pods": "5"}), [], "PodOSNotSupported",
     "Failed to admit pod as the OS field doesn't match node OS"),
    (make_pod(os={"name": "windows"}, nodeName="other"), make_node({"pods": "5"}), [], "NodeName",
     "Predicate NodeName failed"),  # the OS checks run last in v1.27
    (make_pod(), None, [], "InvalidNodeInfo", "Kubelet cannot get node info."),
])
def test_predicate_admit_reason_and_message(pod, node, others, reason, message):
    result = lifecycle.predicate_admit(pod, node, others)
    assert (result.admit, result.reason, result.message) == (False, reason, message)


def test_plugin_resource_update_error_is_unexpected():
    def fail(node_info, pod):
        raise RuntimeError("Allocation failed")
    result = lifecycle.predicate_admit(make_pod(), make_node({"pods": "5"}), [], update_plugin_resources=fail)
    assert (result.reason, result.message) == (
        "UnexpectedAdmissionError", "Update plugin resources failed due to Allocation failed, which is unexpected.")


def critical(*requests, name="critical", **spec):
    pod = make_pod(*requests, name=name, **spec)
    pod.metadata.annotations = {"kubernetes.io/config.source": "file"}
    return pod


def guaranteed(cpu, mem, name):
    res = {"cpu": f"{cpu}m", "memory": str(mem)}
    return make_pod(containers=[{"name": "c", "image": "x", "resources": {"requests": res, "limits": res}}], name=name)


def test_critical_pod_preempts_the_fewest_and_least_important_pods():
    """preemption.go getPodsToPreempt: BestEffort/Burstable before Guaranteed; the closest pod first."""
    node = make_node({"cpu": "1000m", "memory": "1000", "pods": "10"})
    running = [make_pod(rl(300, 100), name="burstable-300"), make_pod(rl(500, 100), name="burstable-500"),
               guaranteed(200, 100, "guaranteed")]
    result = lifecycle.predicate_admit(critical(rl(400, 100)), node, running)
    assert result.admit and [p.metadata.name for p in result.preempted] == ["burstable-500"]


def test_critical_pod_with_a_non_resource_failure_is_not_preempting():
    node = make_node({"cpu": "100m", "pods": "10"})
    result = lifecycle.predicate_admit(critical(rl(400), nodeName="other"), node, [make_pod(rl(100))])
    assert (result.admit, result.reason, result.preempted) == (False, "NodeName", [])


def test_critical_pod_without_enough_victims_is_an_unexpected_error():
    node = make_node({"cpu": "100m", "pods": "10"})
    other_critical = critical(rl(100), name="other-critical")
    result = lifecycle.predicate_admit(critical(rl(400)), node, [other_critical])
    assert (result.reason, result.message) == (
        "UnexpectedAdmissionError",
        "Unexpected error while attempting to recover from admission failure: preemption: error finding a set of "
        "pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 400), ]")


def test_preemption_counts_the_pods_resource():
    node = make_node({"cpu": "1", "pods": "1"})
    result = lifecycle.predicate_admit(critical(), node, [make_pod(name="victim")])
    assert result.admit and [p.metadata.name for p in result.preempted] == ["victim"]


def test_priorities_decide_preemptability_between_non_critical_pods():
    high, low = make_pod(priority=10), make_pod(priority=5)
    assert lifecycle.preemptable(high, low) and not lifecycle.preemptable(low, high)
    assert not lifecycle.preemptable(make_pod(), low)  # no priority on the preemptor


@settings(max_examples=60, deadline=None)
@given(pod_req=st.tuples(st.integers(0, 12), st.integers(0, 25)),
       running=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 12)), max_size=4),
       extra=st.tuples(st.integers(0, 6), st.integers(0, 12)), port=st.booleans(), extra_port=st.booleans(),
       pods_cap=st.integers(1, 5))
def test_admission_is_monotone_in_running_pods(pod_req, running, extra, port, extra_port, pods_cap):
    """Adding a running pod never turns a rejection into an admission (for a pod that is not critical)."""
    def pod(cpu, mem, with_port, name):
        ports = [{"containerPort": 80, "hostPort": 80}] if with_port else []
        return make_pod(containers=[{"name": "c", "image": "x", "ports": ports,
                                     "resources": {"requests": rl(cpu, mem)}}], name=name)
    node = make_node({"cpu": "10m", "memory": "20", "pods": str(pods_cap)})
    candidate = pod(*pod_req, port, "new")
    others = [pod(c, m, False, f"r{i}") for i, (c, m) in enumerate(running)]
    before = lifecycle.predicate_admit(candidate, node, others)
    after = lifecycle.predicate_admit(candidate, node, others + [pod(*extra, extra_port, "extra")])
    assert before.admit or not after.admit
