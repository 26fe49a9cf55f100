"""Differential tests of in-place resize under the v1.36 profile: mini_kubelet's allocation manager against v1.36.5's.

The harness (upstream/v1.36/allocation.go, through _shims/pkg/kubelet/allocation/) builds the manager as the
package's tests build one (makeAllocationManager: in-memory allocations, a status manager on a fake client, the
resize admit handler), with the predicate admit handler and the kubelet's critical-pod preemption after it, and
calls the unexported handlePodResourcesResize, or PushPendingResize for each pod then retryPendingResizes.
Pods, nodes, earlier resize conditions, CPU and memory manager policies, swap and gates are drawn by hypothesis;
compared: the resize conditions (reason, message, observedGeneration, whether the transition time was kept),
whether the allocation changed and to what, the events, the pods preempted, and the queue's order after each push.

Left out, found by these tests: a pod with pod-level requests and an overhead. Sorting the queue computes the
pod's requests (PodRequests), which puts the pod-level quantity itself in its sum and adds the overhead to it;
for a quantity Go holds as an inf.Dec (1.5Ki, say) that changes the pod's own spec. mini_kubelet does not.
"""

from __future__ import annotations

import copy
import re
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_kubelet import api, features, lifecycle, qos
from mini_kubelet.allocation.allocation_manager import Manager
from mini_kubelet.allocation.handlers import NodeConfig, new_pod_resizes_admit_handler
from mini_kubelet.clock import Clock
from mini_kubelet.status.status_manager import POD_REASON_DEFERRED, StatusManager

from . import pod_strategies as ps
from . import upstream_harness
from .test_differential import EXAMPLES, agree, amounts, differential

# A resize case drives the whole admission chain and a queue of up to 30 Pods through both sides: 400 inputs a
# test (about three minutes) already reach Go's full sort many times over, so `make test-upstream` stops there.
queue_differential = settings(differential, max_examples=min(EXAMPLES, 400))
# The sort's inputs are queues of 13 to 30 Pods: a third as many of them.
sort_differential = settings(differential, max_examples=min(EXAMPLES // 3, 400))

pytestmark = [pytest.mark.upstream, pytest.mark.ch3]
upstream_harness.go()  # no Go: the whole file is skipped, with one message


# A failed preemption lists its shortfalls as Go walks a map: with five of them, 120 orders, too many to ask
# upstream for each. Both sides' lists are compared sorted; which shortfalls there are, and their amounts, still count.
SHORTFALLS = re.compile(r"reclaim resources: \[((?:\(res: [^,()]+, q: -?\d+\), )*)\]")


def shortfalls_sorted(text: str) -> str:
    return SHORTFALLS.sub(lambda m: "reclaim resources: [" + "".join(sorted(re.findall(r"\(res: [^,()]+, q: -?\d+\), ", m.group(1)))) + "]", text)


@pytest.fixture(scope="module")
def v136():
    return upstream_harness.harness("1.36")


# --- what is drawn ------------------------------------------------------------------------------------

RESIZED = ("cpu", "memory", "ephemeral-storage")  # what a resize asks for (the API lets only cpu and memory through)
requests = st.dictionaries(st.sampled_from(RESIZED), ps.small_quantities, max_size=3)
policies = st.lists(st.fixed_dictionaries({"resourceName": st.sampled_from(("cpu", "memory")),
                                           "restartPolicy": st.sampled_from(("NotRequired", "RestartContainer"))}),
                    max_size=2, unique_by=lambda p: p["resourceName"])
GATES = ("InPlacePodVerticalScalingInitContainers", "InPlacePodLevelResourcesVerticalScaling",
         "InPlacePodVerticalScalingExclusiveCPUs", "InPlacePodVerticalScalingExclusiveMemory")
gates = st.fixed_dictionaries({}, optional={name: st.booleans() for name in GATES})


@st.composite
def resizes(draw, name="p"):
    """A pod as allocated and as it now asks to be: some containers' (or the pod's) requests and limits redrawn."""
    allocated = draw(ps.placed_pods(name=name))
    allocated["metadata"]["generation"] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        allocated["status"] = {"qosClass": qos.compute_pod_qos(api.pod_from_manifest(allocated))}
    for c in ps.all_containers(allocated):
        if draw(st.booleans()):
            c["resizePolicy"] = draw(policies)
    if draw(st.integers(0, 3)) == 0:
        allocated["spec"]["resources"] = {"requests": draw(requests)}
    desired = copy.deepcopy(allocated)
    desired["metadata"]["generation"] += draw(st.integers(0, 2))
    for c in ps.all_containers(desired):
        if draw(st.booleans()):
            c["resources"] = draw(ps.resource_requirements(ps.small_quantities)) or {}
    if draw(st.integers(0, 3)) == 0:
        desired["spec"]["resources"] = {"requests": draw(requests)}
    if "resources" in desired["spec"] or "resources" in allocated["spec"]:
        for p in (allocated, desired):  # found by this test: Go's sort would add the overhead into the pod (below)
            p["spec"].pop("overhead", None)
    return allocated, desired


conditions = st.one_of(st.none(), st.fixed_dictionaries({
    "reason": st.sampled_from(("", "Deferred", "Infeasible", "Error")),
    "message": st.sampled_from(("", "x", "Node didn't have enough resource: cpu")),
    "observedGeneration": st.integers(0, 3)}))
other_pods = st.integers(0, 2).flatmap(lambda n: st.tuples(*(ps.placed_pods(name=f"q{i}") for i in range(n))))


# --- both sides ---------------------------------------------------------------------------------------


def mini_manager(active: list, node, node_config=NodeConfig(), swap=None, clock=None) -> Manager:
    """The manager the harness builds: the resize admit handler, then the predicate one (with preemption)."""
    sm = StatusManager(clock or Clock())
    manager = Manager(sm, lambda: active, lambda uid: next((p for p in active if p.metadata.uid == uid), None))
    swap = swap or {}
    manager.admit_handlers = [
        new_pod_resizes_admit_handler(manager, node_config, lambda pod, c: swap.get(c.name, "NoSwap")),
        lifecycle.new_predicate_admit_handler(lambda: node)]
    return manager


def condition_row(c) -> tuple:
    """A condition as comparable: from the Go JSON (a dict) or a client model."""
    if isinstance(c, dict):
        return (c["type"], c["status"], c.get("reason", ""), c.get("message", ""), c.get("observedGeneration", 0))
    return c.type, c.status, c.reason or "", c.message or "", c.observed_generation or 0


def resources_row(pod) -> tuple:
    """Every container's requests and limits, and the pod's, as sorted amounts: from Go JSON or a client model."""
    row = _resources_row(pod)
    order = lambda d: None if d is None else tuple(sorted((k, format(v.normalize(), "f")) for k, v in d.items()))  # noqa: E731
    return tuple((name, order(r), order(lim)) for name, r, lim in row[0]), order(row[1])


def _resources_row(pod) -> tuple:
    if isinstance(pod, dict):
        spec = pod["spec"]
        cs = spec.get("initContainers", []) + spec["containers"]
        return (tuple((c["name"], amounts(c.get("resources", {}).get("requests") or {}),
                       amounts(c.get("resources", {}).get("limits") or {})) for c in cs),
                None if spec.get("resources") is None else amounts(spec["resources"].get("requests") or {}))
    cs = (pod.spec.init_containers or []) + pod.spec.containers
    lists = lambda r, f: {k: api.parse_quantity(v) for k, v in ((getattr(r, f) if r else None) or {}).items()}  # noqa: E731
    return (tuple((c.name, lists(c.resources, "requests"), lists(c.resources, "limits")) for c in cs),
            None if pod.spec.resources is None else lists(pod.spec.resources, "requests"))


def events_of(manager: Manager) -> list[str]:
    return [f"{e.type} {e.reason} {e.message}" for e in manager.recorder.events]


# --- one resize ---------------------------------------------------------------------------------------


@queue_differential
@given(resize=resizes(), others=other_pods, node=ps.nodes(), pending=conditions, in_progress=conditions,
       cpu=st.sampled_from(("none", "static")), memory=st.sampled_from(("None", "Static")),
       swapped=st.sets(st.sampled_from(("app-0", "app-1", "init-0", "init-1"))), set_gates=gates)
def test_handle_pod_resources_resize(v136, resize, others, node, pending, in_progress, cpu, memory, swapped, set_gates):
    """The decision on one resize, its conditions, the allocation afterwards, the events and any preemption."""
    allocated, desired = resize
    swap = {name: "LimitedSwap" for name in swapped}

    def theirs():
        got = v136.call("HandlePodResourcesResize", gates=set_gates, allocated=allocated, desired=desired,
                        others=list(others), node=node, allocatable=node["status"]["allocatable"],
                        cpuManagerPolicy=cpu, memoryManagerPolicy=memory, swap=swap, pending=pending,
                        inProgress=in_progress)
        return repr(([condition_row(c) for c in got["conditions"] or []], sorted(got["keptTransition"].items()),
                     got["resizeAllocated"], resources_row(got["allocated"]), got["events"], got["preempted"]))

    with features.release_profile("1.36", set_gates):
        pod = api.pod_from_manifest(desired)
        rest = [api.pod_from_manifest(p) for p in others]
        clock = Clock()
        manager = mini_manager([pod, *rest], api.node_from_manifest(node), NodeConfig(cpu, memory), swap, clock)
        for p in [api.pod_from_manifest(allocated), *rest]:
            manager.set_allocated_resources(p)
        sm, uid = manager.status_manager, pod.metadata.uid
        for condition, set_it in ((pending, sm.set_pod_resize_pending_condition),
                                  (in_progress, sm.set_pod_resize_in_progress_condition)):
            if condition is not None:
                set_it(uid, condition["reason"], condition["message"], condition["observedGeneration"])
        before = {c.type: c.last_transition_time for c in sm.get_pod_resize_conditions(uid)}
        clock.advance(timedelta(seconds=1))
        resized = manager.handle_pod_resources_resize(pod)
        after = sm.get_pod_resize_conditions(uid)
        mine = repr(([condition_row(c) for c in after], sorted((c.type, before.get(c.type) == c.last_transition_time) for c in after),
                     resized, resources_row(manager.update_pod_from_allocation(pod)[0]), events_of(manager),
                     [api.pod_label(p) for p in manager.preempted]))
    agree(shortfalls_sorted(mine), lambda: shortfalls_sorted(theirs()))


# --- the queue of pending resizes ---------------------------------------------------------------------


@st.composite
def pending_resizes(draw, least=1, most=6):
    """Pods with a pending resize each (some Deferred before, in the order drawn), with priorities and QoS."""
    n = draw(st.integers(least, most))
    pods = []
    for i in range(n):
        allocated, desired = draw(resizes(name=f"r{i}"))
        priority = draw(st.sampled_from((None, 0, 100)))
        for p in (allocated, desired):
            p["spec"].pop("priorityClassName", None)
            p["spec"].pop("priority", None)
            if priority is not None:
                p["spec"]["priority"] = priority
        pods.append({"allocated": allocated, "desired": desired,
                     "deferred": draw(st.sampled_from(("", "", "Node didn't have enough resource: cpu")))})
    return pods


def _retry(v136, pods, others, node, trigger):
    def theirs():
        got = v136.call("RetryPendingResizes", pods=pods, others=list(others), node=node,
                        allocatable=node["status"]["allocatable"], trigger=trigger)
        return repr((got["queues"], got["resized"], got["left"] or [],
                     {uid: [condition_row(c) for c in cs or []] for uid, cs in sorted(got["conditions"].items())},
                     {uid: resources_row(p) for uid, p in sorted(got["allocated"].items())},
                     got["events"], got["preempted"]))

    with features.release_profile("1.36"):
        desired = [api.pod_from_manifest(p["desired"]) for p in pods]
        rest = [api.pod_from_manifest(p) for p in others]
        clock = Clock()
        manager = mini_manager([*rest, *desired], api.node_from_manifest(node), clock=clock)
        for p in [*(api.pod_from_manifest(p["allocated"]) for p in pods), *rest]:
            manager.set_allocated_resources(p)
        for p, d in zip(pods, desired):
            if p["deferred"]:
                manager.status_manager.set_pod_resize_pending_condition(
                    d.metadata.uid, POD_REASON_DEFERRED, p["deferred"], d.metadata.generation or 0)
                clock.advance(timedelta(seconds=1))
        queues = []
        for d in desired:
            manager.push_pending_resize(d.metadata.uid)
            queues.append(list(manager.pods_with_pending_resizes))
        resized = [p.metadata.uid for p in manager.retry_pending_resizes(trigger)]
        sm = manager.status_manager
        mine = repr((queues, resized, manager.pods_with_pending_resizes,
                     {uid: [condition_row(c) for c in sm.get_pod_resize_conditions(uid)]
                      for uid in sorted(d.metadata.uid for d in desired)},
                     {d.metadata.uid: resources_row(manager.update_pod_from_allocation(d)[0])
                      for d in sorted(desired, key=lambda d: d.metadata.uid)},
                     events_of(manager), [api.pod_label(p) for p in manager.preempted]))
    agree(shortfalls_sorted(mine), lambda: shortfalls_sorted(theirs()))


@queue_differential
@given(pods=pending_resizes(), others=other_pods, node=ps.nodes(),
       trigger=st.sampled_from(("pod_resized", "pods_removed", "periodic_retry")))
def test_retry_pending_resizes(v136, pods, others, node, trigger):
    """The order resizes are queued in, then each tried in turn against the allocations before it."""
    _retry(v136, pods, others, node, trigger)


@sort_differential
@given(pods=pending_resizes(least=13, most=30), node=ps.nodes())
def test_pending_resizes_sort_as_go_sorts(v136, pods, node):
    """More than 12 pending resizes: Go's pdqsort, not its insertion sort, orders them (the comparison contradicts
    itself, so only the same algorithm gives the same order)."""
    _retry(v136, pods, (), node, "periodic_retry")
