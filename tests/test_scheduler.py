"""Chapter 2: the scheduler checks the kubelet reruns at admission (fit, node affinity, taints, ports, node name).

Tables ported from the upstream tests named on each test, read at sanposhiho/kubernetes@059ce4e8 (about
1.28-dev) and checked against the v1.27.7 code (vendored in kubeedge v1.16.0); rows whose answer differs in
v1.27 say so.
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_kubelet import api, scheduler

pytestmark = pytest.mark.ch2

AAA, HP = "example.com/aaa", "hugepages-2Mi"


def rl(cpu=0, mem=0, **scalars):
    """Upstream's framework.Resource in manifest form: cpu in millicores, memory in bytes, scalars by name."""
    out = {}
    if cpu:
        out["cpu"] = f"{cpu}m"
    if mem:
        out["memory"] = str(mem)
    for name, value in scalars.items():
        out[{"aaa": AAA, "bbb": "example.com/bbb", "hp": HP}.get(name, name.replace("__", "/"))] = str(value)
    return out


def make_pod(*requests, init=(), overhead=None, name="p", **spec):
    """A pod with one app container per request list (upstream's newResourcePod / newResourceInitPod)."""
    containers = [{"name": f"c{i}", "image": "x", "resources": {"requests": r}} for i, r in enumerate(requests or [{}])]
    inits = [{"name": f"i{i}", "image": "x", "resources": {"requests": r}} for i, r in enumerate(init)]
    body = {"containers": containers, "initContainers": inits, **spec}
    if overhead:
        body["overhead"] = overhead
    return api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body})


def make_node(allocatable=None, labels=None, name="machine1", taints=None):
    doc = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
           "spec": {"taints": taints or []}, "status": {"allocatable": allocatable or {}}}
    return api.node_from_manifest(doc)


# makeAllocatableResources(10, 20, 32, 5, 20, 5)
FIT_NODE = {"cpu": "10m", "memory": "20", "pods": "32", AAA: "5", "ephemeral-storage": "20", HP: "5"}


def short(name, requested, used, capacity):
    return (name, requested, used, capacity)


# pkg/scheduler/framework/plugins/noderesources/fit_test.go#TestEnoughRequests (all rows; the scheduler's
# ignored-resource arguments do not exist in the kubelet, so those rows are checked with empty ignore sets)
ENOUGH_REQUESTS = [
    ("no resources requested always fits", make_pod(), rl(10, 20), []),
    ("too many resources fails", make_pod(rl(1, 1)), rl(10, 20), [short("cpu", 1, 10, 10), short("memory", 1, 20, 20)]),
    ("too many resources fails due to init container cpu", make_pod(rl(1, 1), init=[rl(3, 1)]), rl(8, 19),
     [short("cpu", 3, 8, 10)]),
    ("too many resources fails due to highest init container cpu", make_pod(rl(1, 1), init=[rl(3, 1), rl(2, 1)]),
     rl(8, 19), [short("cpu", 3, 8, 10)]),
    ("too many resources fails due to init container memory", make_pod(rl(1, 1), init=[rl(1, 3)]), rl(9, 19),
     [short("memory", 3, 19, 20)]),
    ("too many resources fails due to highest init container memory", make_pod(rl(1, 1), init=[rl(1, 3), rl(1, 2)]),
     rl(9, 19), [short("memory", 3, 19, 20)]),
    ("init container fits because it's the max, not sum", make_pod(rl(1, 1), init=[rl(1, 1)]), rl(9, 19), []),
    ("multiple init containers fit because it's the max, not sum", make_pod(rl(1, 1), init=[rl(1, 1), rl(1, 1)]),
     rl(9, 19), []),
    ("both resources fit", make_pod(rl(1, 1)), rl(5, 5), []),
    ("one resource memory fits", make_pod(rl(2, 1)), rl(9, 5), [short("cpu", 2, 9, 10)]),
    ("one resource cpu fits", make_pod(rl(1, 2)), rl(5, 19), [short("memory", 2, 19, 20)]),
    ("equal edge case", make_pod(rl(5, 1)), rl(5, 19), []),
    ("equal edge case for init container", make_pod(rl(4, 1), init=[rl(5, 1)]), rl(5, 19), []),
    ("extended resource fits", make_pod(rl(aaa=1)), rl(), []),
    ("extended resource fits for init container", make_pod(rl(), init=[rl(aaa=1)]), rl(), []),
    ("extended resource capacity enforced", make_pod(rl(1, 1, aaa=10)), rl(aaa=0), [short(AAA, 10, 0, 5)]),
    ("extended resource capacity enforced for init container", make_pod(rl(), init=[rl(1, 1, aaa=10)]), rl(aaa=0),
     [short(AAA, 10, 0, 5)]),
    ("extended resource allocatable enforced", make_pod(rl(1, 1, aaa=1)), rl(aaa=5), [short(AAA, 1, 5, 5)]),
    ("extended resource allocatable enforced for init container", make_pod(rl(), init=[rl(1, 1, aaa=1)]), rl(aaa=5),
     [short(AAA, 1, 5, 5)]),
    ("extended resource allocatable enforced for multiple containers", make_pod(rl(1, 1, aaa=3), rl(1, 1, aaa=3)),
     rl(aaa=2), [short(AAA, 6, 2, 5)]),
    ("extended resource allocatable admits multiple init containers",
     make_pod(rl(), init=[rl(1, 1, aaa=3), rl(1, 1, aaa=3)]), rl(aaa=2), []),
    ("extended resource allocatable enforced for multiple init containers",
     make_pod(rl(), init=[rl(1, 1, aaa=6), rl(1, 1, aaa=3)]), rl(aaa=2), [short(AAA, 6, 2, 5)]),
    ("extended resource allocatable enforced for unknown resource", make_pod(rl(1, 1, bbb=1)), rl(),
     [short("example.com/bbb", 1, 0, 0)]),
    ("extended resource allocatable enforced for unknown resource for init container",
     make_pod(rl(), init=[rl(1, 1, bbb=1)]), rl(), [short("example.com/bbb", 1, 0, 0)]),
    ("kubernetes.io resource capacity enforced", make_pod(rl(1, 1, **{"kubernetes.io__something": 10})), rl(),
     [short("kubernetes.io/something", 10, 0, 0)]),
    ("kubernetes.io resource capacity enforced for init container",
     make_pod(rl(), init=[rl(1, 1, **{"subdomain.kubernetes.io__something": 10})]), rl(),
     [short("subdomain.kubernetes.io/something", 10, 0, 0)]),
    ("hugepages resource capacity enforced", make_pod(rl(1, 1, hp=10)), rl(hp=0), [short(HP, 10, 0, 5)]),
    ("hugepages resource capacity enforced for init container", make_pod(rl(), init=[rl(1, 1, hp=10)]), rl(hp=0),
     [short(HP, 10, 0, 5)]),
    ("hugepages resource allocatable enforced for multiple containers", make_pod(rl(1, 1, hp=3), rl(1, 1, hp=3)),
     rl(hp=2), [short(HP, 6, 2, 5)]),
    # Upstream ignores example.com/bbb through a scheduler argument; the kubelet has no such argument.
    ("skip checking ignored extended resource (not in the kubelet)", make_pod(rl(1, 1, bbb=1)), rl(),
     [short("example.com/bbb", 1, 0, 0)]),
    ("resources + pod overhead fits", make_pod(rl(1, 1), overhead={"cpu": "3m", "memory": "13"}), rl(5, 5), []),
    ("requests + overhead does not fit for memory", make_pod(rl(1, 1), overhead={"cpu": "1m", "memory": "15"}),
     rl(5, 5), [short("memory", 16, 5, 20)]),
    # Upstream ignores the example.com resource group; the kubelet does not, so bbb is short as well.
    ("skip checking ignored extended resource via resource groups (not in the kubelet)",
     make_pod(rl(1, 1, bbb=1, **{"kubernetes.io__something": 1})), rl(),
     [short("example.com/bbb", 1, 0, 0), short("kubernetes.io/something", 1, 0, 0)]),
    ("skip checking extended resource request with quantity zero via resource groups",
     make_pod(rl(1, 1, aaa=0)), rl(aaa=6), []),
    # The 1.28-dev copy expects [] here: it skips zero cpu/memory requests. v1.27.7's fitsRequest does not, and
    # the existing pod (20m, 30) over-commits the node, so a zero request exceeds the negative free amount.
    ("skip checking resource request with quantity zero (v1.27: zero still compared)", make_pod(rl(aaa=1)),
     rl(20, 30, aaa=1), [short("cpu", 0, 20, 10), short("memory", 0, 30, 20)]),
]


@pytest.mark.parametrize("name, pod, existing, expected", ENOUGH_REQUESTS, ids=[r[0] for r in ENOUGH_REQUESTS])
def test_enough_requests(name, pod, existing, expected):
    node_info = scheduler.new_node_info(make_node(FIT_NODE), [make_pod(existing, name="existing")])
    got = [(r.resource_name, r.requested, r.used, r.capacity) for r in scheduler.fits(pod, node_info)]
    # Several scalar shortfalls come in Go map order upstream (random), so compare as sets.
    assert sorted(got) == sorted(expected)
    assert all(r.reason == f"Insufficient {r.resource_name}" for r in scheduler.fits(pod, node_info))


# fit_test.go#TestNotEnoughRequests: node allows 1 pod and already has one; every pod fails on the count first.
@pytest.mark.parametrize("pod, existing", [
    (make_pod(), rl(10, 20)), (make_pod(rl(1, 1)), rl(5, 5)), (make_pod(rl(5, 1)), rl(5, 19)),
    (make_pod(rl(5, 1), init=[rl(5, 1)]), rl(5, 19)),
])
def test_not_enough_requests(pod, existing):
    node = make_node({"cpu": "10m", "memory": "20", "pods": "1", AAA: "5", "ephemeral-storage": "20"})
    got = scheduler.fits(pod, scheduler.new_node_info(node, [make_pod(existing)]))
    assert (got[0].resource_name, got[0].reason, got[0].requested, got[0].used, got[0].capacity) == \
        ("pods", "Too many pods", 1, 1, 1)


# fit_test.go#TestStorageRequests
@pytest.mark.parametrize("pod, existing, expected", [
    (make_pod(rl(1, 1)), rl(2, 10), []),
    (make_pod(rl(1, 1, **{"ephemeral-storage": 25})), rl(2, 2), [("ephemeral-storage", 25, 0, 20)]),
    (make_pod(rl(1, 1, **{"ephemeral-storage": 5})), rl(2, 2, **{"ephemeral-storage": 10}), []),
    (make_pod(rl(1, 1, **{"ephemeral-storage": 10})), rl(2, 2), []),
])
def test_storage_requests(pod, existing, expected):
    node_info = scheduler.new_node_info(make_node(FIT_NODE), [make_pod(existing)])
    assert [(r.resource_name, r.requested, r.used, r.capacity) for r in scheduler.fits(pod, node_info)] == expected


def test_missing_pods_allocatable_rejects_every_pod():
    """pkg/scheduler/framework/types.go NewResource: no `pods` in allocatable means AllowedPodNumber 0."""
    [first] = scheduler.fits(make_pod(), scheduler.new_node_info(make_node({"cpu": "1"}), []))
    assert (first.resource_name, first.used, first.capacity) == ("pods", 0, 0)


def test_requests_round_up_and_limits_are_ignored():
    pod = api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "0.1m", "memory": "1.5"}, "limits": {"cpu": "9"}}}]}})
    assert scheduler.compute_pod_resource_request(pod) == {"cpu": 1, "memory": 2}


@pytest.mark.parametrize("name, extended, scalar", [
    ("example.com/foo", True, True), ("cpu", False, False), ("hugepages-2Mi", False, True),
    ("kubernetes.io/x", False, True), ("x.kubernetes.io/y", False, True), ("requests.example.com/foo", False, False),
    ("attachable-volumes-aws-ebs", False, True), ("pods", False, False), ("example.com/-bad", False, False),
])
def test_resource_name_classes(name, extended, scalar):
    """pkg/apis/core/v1/helper/helpers.go IsExtendedResourceName; pkg/scheduler/util IsScalarResourceName."""
    assert (scheduler.is_extended_resource_name(name), scheduler.is_scalar_resource_name(name)) == (extended, scalar)


def affinity(*terms):
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}}


def expr(key, op, *values):
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


# pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go#TestNodeAffinity (the required-affinity rows)
NODE_AFFINITY = [
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, {}, "node1", False),
    ("same labels", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "node1", True),
    ("node labels are superset", {"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, "node1", True),
    ("node labels are subset", {"nodeSelector": {"foo": "bar", "baz": "blah"}}, {"foo": "bar"}, "node1", False),
    ("In matches", affinity({"matchExpressions": [expr("foo", "In", "bar", "value2")]}), {"foo": "bar"}, "node1", True),
    ("Gt matches", affinity({"matchExpressions": [expr("kernel-version", "Gt", "0204")]}),
     {"kernel-version": "0206"}, "node1", True),
    ("NotIn matches", affinity({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]}),
     {"mem-type": "DDR3"}, "node1", True),
    ("Exists matches", affinity({"matchExpressions": [expr("GPU", "Exists")]}), {"GPU": "NVIDIA-GRID-K1"}, "node1", True),
    ("affinity not matching", affinity({"matchExpressions": [expr("foo", "In", "value1", "value2")]}),
     {"foo": "bar"}, "node1", False),
    ("empty MatchExpressions", affinity({"matchExpressions": []}), {"foo": "bar"}, "node1", False),
    ("no Affinity", {}, {"foo": "bar"}, "node1", True),
    ("Affinity with nil required selector", {"affinity": {"nodeAffinity": {}}}, {"foo": "bar"}, "node1", True),
    ("multiple matchExpressions ANDed, match",
     affinity({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}),
     {"GPU": "NVIDIA-GRID-K1"}, "node1", True),
    ("multiple matchExpressions ANDed, no match",
     affinity({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}),
     {"GPU": "NVIDIA-GRID-K1"}, "node1", False),
    ("multiple terms ORed", affinity({"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                                     {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]}),
     {"foo": "bar"}, "node1", True),
    ("affinity and nodeSelector both satisfied",
     {"nodeSelector": {"foo": "bar"}, **affinity({"matchExpressions": [expr("foo", "Exists")]})}, {"foo": "bar"}, "node1", True),
    ("affinity ok but nodeSelector not",
     {"nodeSelector": {"foo": "bar"}, **affinity({"matchExpressions": [expr("foo", "Exists")]})},
     {"foo": "barrrrrr"}, "node1", False),
    ("invalid value in term", affinity({"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]}),
     {"foo": "bar"}, "node1", False),
    ("matchFields In matches", affinity({"matchFields": [expr("metadata.name", "In", "node1")]}), {}, "node1", True),
    ("matchFields In does not match", affinity({"matchFields": [expr("metadata.name", "In", "node1")]}), {}, "node2", False),
    ("two terms: matchFields no, matchExpressions yes",
     affinity({"matchFields": [expr("metadata.name", "In", "node1"), expr("metadata.name", "In", "node2")]},
              {"matchExpressions": [expr("foo", "In", "bar")]}), {"foo": "bar"}, "node2", True),
    # component-helpers nodeaffinity: an unparsable term fails alone; other terms can still match; all operators.
    ("unknown operator fails its term only", affinity({"matchExpressions": [expr("foo", "Bogus", "bar")]},
                                                      {"matchExpressions": [expr("foo", "Exists")]}), {"foo": "bar"}, "node1", True),
    ("DoesNotExist", affinity({"matchExpressions": [expr("gpu", "DoesNotExist")]}), {"foo": "bar"}, "node1", True),
    ("Lt on a non-integer label", affinity({"matchExpressions": [expr("v", "Lt", "5")]}), {"v": "abc"}, "node1", False),
    ("Gt needs an integer value", affinity({"matchExpressions": [expr("v", "Gt", "x")]}), {"v": "7"}, "node1", False),
    ("In without values is a parse error", affinity({"matchExpressions": [expr("foo", "In")]}), {"foo": "bar"}, "node1", False),
    ("matchFields NotIn", affinity({"matchFields": [expr("metadata.name", "NotIn", "node1")]}), {}, "node2", True),
    ("matchFields with two values is a parse error",
     affinity({"matchFields": [expr("metadata.name", "In", "node1", "node2")]}), {}, "node1", False),
    ("matchFields ignored on a node without a name", affinity({"matchFields": [expr("metadata.name", "In", "x")]}),
     {}, "", True),
]


@pytest.mark.parametrize("name, spec, labels, node_name, matches", NODE_AFFINITY, ids=[r[0] for r in NODE_AFFINITY])
def test_node_affinity(name, spec, labels, node_name, matches):
    node = make_node(labels=labels, name="placeholder")
    node.metadata.name = node_name
    assert scheduler.pod_matches_node_selector_and_affinity_terms(make_pod(**spec), node) is matches


def taint(key, effect, value=None):
    return api.node_from_manifest({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {
        "taints": [{"key": key, "effect": effect, **({"value": value} if value else {})}]}}).spec.taints[0]


def toleration(key, op, value, effect):
    return make_pod(tolerations=[{"key": key, "operator": op, "value": value, "effect": effect}]).spec.tolerations[0]


# staging/src/k8s.io/api/core/v1/toleration_test.go#TestTolerationToleratesTaint (galal-hussein@0723741b; the rows
# that exist in v1.27 — Gt/Lt toleration operators came much later)
@pytest.mark.parametrize("tol, tnt, expected", [
    (toleration("foo", "Exists", None, "NoSchedule"), taint("foo", "NoSchedule"), True),
    (toleration("foo", "Exists", None, "NoSchedule"), taint("foo", "NoSchedule", "bar"), True),
    (toleration("", "Exists", None, "NoSchedule"), taint("foo", "NoSchedule", "bar"), True),
    (toleration("foo", "Equal", "bar", "NoSchedule"), taint("foo", "NoSchedule", "bar"), True),
    (toleration("foo", "Equal", "value1", "NoSchedule"), taint("foo", "NoSchedule", "value2"), False),
    (toleration("foo", "Equal", "bar", "NoSchedule"), taint("foo", "NoExecute", "bar"), False),
    (toleration("foo", "Gt", "1", "NoSchedule"), taint("foo", "NoSchedule", "2"), False),  # unknown in v1.27
])
def test_toleration_tolerates_taint(tol, tnt, expected):
    assert scheduler.toleration_tolerates_taint(tol, tnt) is expected


def test_find_matching_untolerated_taint_uses_the_filter():
    taints = [taint("a", "NoSchedule"), taint("b", "NoExecute")]
    assert scheduler.find_matching_untolerated_taint(taints, [], lambda t: t.effect == "NoExecute").key == "b"
    assert scheduler.find_matching_untolerated_taint(taints, [toleration("b", "Exists", None, "")],
                                                     lambda t: t.effect == "NoExecute") is None


def ports_pod(*specs, name="p"):
    """Ports as PROTO/hostIP/port strings, each in its own container."""
    containers = [{"name": f"c{i}", "image": "x", "ports": [{"containerPort": int(port), "hostPort": int(port),
                                                             "protocol": proto, "hostIP": ip}]}
                  for i, (proto, ip, port) in enumerate(s.split("/") for s in specs)]
    containers = containers or [{"name": "c", "image": "x"}]
    return api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": containers}})


# pkg/scheduler/framework/plugins/nodeports/node_ports_test.go#TestNodePorts
@pytest.mark.parametrize("name, wanted, existing, fits", [
    ("nothing running", [], [], True),
    ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], True),
    ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
    ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
    ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], True),
    ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
    ("second udp port conflict", ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
    ("first tcp port conflict", ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
     ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"], False),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], False),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP", ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
     ["TCP/127.0.0.1/8001"], False),
    ("second tcp port conflict to 0.0.0.0 hostIP", ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),
    ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], True),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"], False),
])
def test_node_ports(name, wanted, existing, fits):
    node_info = scheduler.new_node_info(make_node(), [ports_pod(*existing, name="existing")])
    assert scheduler.fits_ports(ports_pod(*wanted), node_info) is fits


def test_empty_host_ip_and_protocol_mean_all_addresses_and_tcp():
    existing = api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "e"}, "spec": {
        "containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]}]}})
    node_info = scheduler.new_node_info(make_node(), [existing])
    assert node_info.used_ports == {("0.0.0.0", "TCP", 80)}
    assert not scheduler.fits_ports(ports_pod("TCP/10.1.1.1/80"), node_info)


@pytest.mark.parametrize("node_name, fits", [("", True), ("machine1", True), ("machine2", False)])
def test_fits_node_name(node_name, fits):
    """pkg/scheduler/framework/plugins/nodename/node_name_test.go (the three cases)."""
    assert scheduler.fits_node_name(make_pod(**({"nodeName": node_name} if node_name else {})), make_node()) is fits


@given(cpu=st.integers(0, 10**6), mem=st.integers(0, 10**12), running=st.integers(0, 5), extra_pods=st.integers(1, 5))
def test_zero_request_pod_always_fits_with_pods_capacity_left(cpu, mem, running, extra_pods):
    """A pod that requests nothing fits whenever the node can take one more pod, however full it is."""
    node = make_node({"cpu": f"{cpu}m", "memory": str(mem), "pods": str(running + extra_pods)})
    others = [make_pod(rl(cpu + 1, mem + 1), name=f"r{i}") for i in range(running)]
    assert scheduler.fits(make_pod(), scheduler.new_node_info(node, others)) == []


def test_node_info_reuse_adds_up_to_the_same_node_info():
    """Within node_info_reuse() (a batch admitted one by one), a NodeInfo over the last one's pods and more starts
    from the last one's sums; over other pods, or a changed node, it starts afresh: the same NodeInfo either way."""
    node, other_node = make_node({"cpu": "4", "memory": "8Gi", "pods": "10"}), make_node({"cpu": "2", "pods": "3"})
    pods = [make_pod(rl(100 * i, 2**20 * i, aaa=i), name=f"p{i}") for i in range(1, 5)] + [ports_pod("TCP/0.0.0.0/80")]
    calls = [(node, pods[:1]), (node, pods[:3]), (node, pods[:3]), (node, pods[1:4]), (other_node, pods[1:4]),
             (other_node, pods), (node, [])]
    reused = []
    with scheduler.node_info_reuse():
        for n, p in calls:
            info = scheduler.new_node_info(n, list(p))
            reused.append(copy.deepcopy(info))
            info.requested["cpu"], info.pods[:] = -1, []  # a caller's change to one NodeInfo does not reach the next
    fresh = [scheduler.new_node_info(n, list(p)) for n, p in calls]
    assert reused == fresh and fresh[2].requested["cpu"] == 600 and fresh[5].used_ports
