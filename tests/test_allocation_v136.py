"""Chapter 3: in-place resize on the node, as v1.36 decides it (the allocation manager and the status manager).

Rows ported from pkg/kubelet/allocation/allocation_manager_test.go, read in kubernetes/kubernetes at commit
873c3ca26a00e5230a9584335ab2b5c7cf0c0b37: #TestUpdatePodFromAllocation, #TestRetryPendingResizes,
#TestRetryPendingResizesGuanteedQOSPods, #TestRetryPendingResizesWithSwap,
#TestRetryPendingResizesMultipleConditions, #TestAllocationManagerAddPod, #TestIsResizeIncreasingRequests,
#TestSortPendingResizes and #TestRecordPodDeferredAcceptedResizes. That copy is the newest stored one on the
API v1.36.5 builds against (NewPredicateAdmitHandler with three arguments, Admit without a context: the
harness compiles against both), from the v1.35-v1.36 line; it still holds the 1.35 check that a request beyond
the node's allocatable is Infeasible, which v1.36 dropped (#136043: the API server refuses such a resize), and
its older version (019a8d10a2f427c4a03b6bec0d1909f42b6453cf) a row for static pods, Infeasible until v1.36
(#135856). Those rows carry v1.36's answer, marked CHANGED, and test_changed_rows_are_what_v1_36_5_answers
asks v1.36.5 itself. Status-manager rows: pkg/kubelet/status/status_manager_test.go#TestPodResizeConditions
and #TestClearPodResizeInProgressCondition, read in the v1.36.5 module source (k8s.io/kubernetes@v1.36.5).
Metrics other than the deferred-then-accepted count are not modelled.
"""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from mini_kubelet import api, features, lifecycle
from mini_kubelet.allocation.allocation_manager import (Manager, PodResourceInfo, TRIGGER_REASON_PERIODIC,
                                                        TRIGGER_REASON_POD_RESIZED, TRIGGER_REASON_POD_UPDATED,
                                                        update_pod_from_allocation)
from mini_kubelet.allocation.handlers import NodeConfig, new_pod_resizes_admit_handler
from mini_kubelet.clock import Clock
from mini_kubelet.errors import UsageError
from mini_kubelet.lifecycle import PodAdmitResult
from mini_kubelet.status.status_manager import StatusManager

pytestmark = pytest.mark.ch3

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},  # makeAllocationManager's getNode
        "status": {"capacity": {"cpu": "8", "memory": "8Gi"}, "allocatable": {"cpu": "4", "memory": "4Gi", "pods": "40"}}}


@pytest.fixture(autouse=True)
def v136():
    with features.release_profile("1.36"):
        yield


def pod(uid, name, ns, containers=(), inits=(), generation=0, **spec):
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"uid": uid, "name": name, "namespace": ns,
                                                          "generation": generation},
           "spec": {"containers": list(containers), **({"initContainers": list(inits)} if inits else {}), **spec},
           "status": {"phase": "Running"}}
    return doc


def ctr(name, requests=None, limits=None, sidecar=False, **more):
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return {"name": name, "image": "i1", "resources": resources, **({"restartPolicy": "Always"} if sidecar else {}), **more}


def make_allocation_manager(active: list, node_config=NodeConfig(), swap=None, clock=None) -> Manager:
    """Upstream: allocation_manager_test.go makeAllocationManager (a pod sync is marked, as the annotation there)"""
    synced = []
    sm = StatusManager(clock or Clock())
    manager = Manager(sm, lambda: active, lambda uid: next((p for p in active if p.metadata.uid == uid), None),
                      trigger_pod_sync=lambda p: synced.append(p.metadata.uid))
    node = api.node_from_manifest(NODE)
    swap = swap or {}
    manager.admit_handlers = [new_pod_resizes_admit_handler(manager, node_config, lambda p, c: swap.get(c.name, "NoSwap")),
                              lifecycle.new_predicate_admit_handler(lambda: node)]
    manager.synced = synced
    return manager


def rows(manager, uid):
    return [(c.type, c.reason or "", c.message or "") for c in manager.status_manager.get_pod_resize_conditions(uid)]


def requests_of(resources) -> dict:
    return {k: api.parse_quantity(v) for k, v in ((resources.requests if resources else None) or {}).items()}


def limits_of(resources) -> dict:
    return {k: api.parse_quantity(v) for k, v in ((resources.limits if resources else None) or {}).items()}


def q(amounts: dict | None) -> dict:
    return {k: api.parse_quantity(v) for k, v in (amounts or {}).items()}


# --- #TestUpdatePodFromAllocation ---------------------------------------------------------------------

BASE = pod("12345", "test", "default",
           [ctr("c1", {"cpu": "100m", "memory": "200"}, {"cpu": "300m", "memory": "400"}),
            ctr("c2", {"cpu": "500m", "memory": "600"}, {"cpu": "700m", "memory": "800"})],
           [ctr("c1-restartable-init", {"cpu": "200m", "memory": "300"}, {"cpu": "400m", "memory": "500"}, sidecar=True),
            ctr("c1-init", {"cpu": "500m", "memory": "600"}, {"cpu": "700m", "memory": "800"})])
RESIZED = copy.deepcopy(BASE)
RESIZED["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "200m"
RESIZED["spec"]["initContainers"][0]["resources"]["requests"]["cpu"] = "300m"
POD_LEVEL = {**copy.deepcopy(BASE), "spec": {**copy.deepcopy(BASE["spec"]), "resources": {
    "requests": {"cpu": "1200m", "memory": "1700"}, "limits": {"cpu": "2", "memory": "2500"}}}}
NO_CONTAINER_RESOURCES = copy.deepcopy(BASE)
NO_CONTAINER_RESOURCES["spec"]["containers"][0]["resources"] = {}
NO_CONTAINER_RESOURCES["spec"]["initContainers"][0]["resources"] = {}
RESIZED_POD_LEVEL = {**copy.deepcopy(RESIZED), "spec": {**copy.deepcopy(RESIZED["spec"]), "resources": {
    "requests": {"cpu": "1500m", "memory": "1700"}, "limits": {"cpu": "2200m", "memory": "2500"}}}}


def allocation_of(doc, pod_level=None, names=None) -> PodResourceInfo:
    model = api.pod_from_manifest(doc)
    cs = [*model.spec.containers, *model.spec.init_containers]
    return PodResourceInfo({c.name: c.resources for c in cs if names is None or c.name in names},
                           api.pod_from_manifest(pod_level).spec.resources if pod_level else None)


UPDATE_POD_FROM_ALLOCATION = [  # (name, pod, allocation, expected pod or None for "not updated", pod-level gate)
    ("steady state", BASE, allocation_of(BASE), None, False),
    ("no allocations", BASE, PodResourceInfo(), None, False),
    ("missing container allocation", BASE, allocation_of(BASE, names={"c2"}), None, False),
    ("resized container", BASE, allocation_of(RESIZED), RESIZED, False),
    ("resized pod-level allocation", BASE, allocation_of(RESIZED, RESIZED_POD_LEVEL), RESIZED_POD_LEVEL, True),
    ("resized pod-level resources and allocation", POD_LEVEL, allocation_of(RESIZED, RESIZED_POD_LEVEL),
     RESIZED_POD_LEVEL, True),
    ("resized pod-level resources and no container resources", NO_CONTAINER_RESOURCES,
     allocation_of(RESIZED, RESIZED_POD_LEVEL), RESIZED_POD_LEVEL, True),
    ("resized pod-level resources with feature gate disabled", POD_LEVEL, allocation_of(BASE, RESIZED), None, False),
]


@pytest.mark.parametrize("name, doc, allocated, expected, pod_level", UPDATE_POD_FROM_ALLOCATION,
                         ids=[r[0] for r in UPDATE_POD_FROM_ALLOCATION])
def test_update_pod_from_allocation(name, doc, allocated, expected, pod_level):
    with features.set_feature_gate_during_test(features.DEFAULT_FEATURE_GATE,
                                               "InPlacePodLevelResourcesVerticalScaling", pod_level):
        given = api.pod_from_manifest(doc)
        got, updated = update_pod_from_allocation(given, allocated)
        if expected is None:
            assert not updated and got is given
        else:
            assert updated and got is not given
            assert api.models_equal(got, api.pod_from_manifest(expected))


# --- #TestRetryPendingResizes -------------------------------------------------------------------------

C1G = {"cpu": "1", "memory": "1Gi"}
TEST_POD1 = pod("1111", "pod1", "ns1", [ctr("c1", dict(C1G))])
# Upstream's pod2 and sidecar pods have no regular container, which the API (and api.pod_from_manifest) refuses:
# here they have one that is never resized, with no resources (or, for Guaranteed pods, the sidecar's).
TEST_POD2 = pod("2222", "pod2", "ns2", [ctr("main")], inits=[ctr("c1-init", dict(C1G), sidecar=True)])
TEST_POD3 = {**copy.deepcopy(TEST_POD1), "metadata": {"uid": "3333", "name": "pod3", "namespace": "ns2", "generation": 0}}
IN_PROGRESS = ("PodResizeInProgress", "", "")
ORIGINAL_IN_PROGRESS = ("PodResizeInProgress", "", "original in-progress")
CHANGED_MEMORY = "Node didn't have enough resource: memory, requested: 4718592000, used: 2147483648, capacity: 4294967296"
CHANGED_CPU = "Node didn't have enough resource: cpu, requested: 5000, used: 2000, capacity: 4000"


def deferred(message):
    return ("PodResizePending", "Deferred", message)


# (name, original requests, new requests, original limits, new limits, original pod requests, new pod requests,
#  prepopulate in-progress, prepopulate pending, already allocated, expected allocated requests and limits,
#  expected allocated pod requests, expected conditions (message: a substring, as upstream asserts), sync)
RETRY = [
    ("Request CPU and memory decrease - expect InProgress", C1G, {"cpu": "500m", "memory": "500Mi"}, None, None,
     None, None, False, False, False, {"cpu": "500m", "memory": "500Mi"}, None, None, [IN_PROGRESS], True),
    ("Request CPU increase, memory decrease - expect InProgress", C1G, {"cpu": "1500m", "memory": "500Mi"}, None,
     None, None, None, False, False, False, {"cpu": "1500m", "memory": "500Mi"}, None, None, [IN_PROGRESS], True),
    ("Request CPU decrease, memory increase - expect InProgress", C1G, {"cpu": "500m", "memory": "1500Mi"}, None,
     None, None, None, False, False, False, {"cpu": "500m", "memory": "1500Mi"}, None, None, [IN_PROGRESS], True),
    ("Request CPU and memory increase beyond current capacity - expect Deferred", C1G,
     {"cpu": "2500m", "memory": "2500Mi"}, None, None, None, None, False, False, False, C1G, None, None,
     [deferred("Node didn't have enough resource: cpu")], True),
    ("Request CPU decrease and memory increase beyond current capacity - expect Deferred", C1G,
     {"cpu": "500m", "memory": "2500Mi"}, None, None, None, None, False, False, False, C1G, None, None,
     [deferred("Node didn't have enough resource: memory")], True),
    # CHANGED: Infeasible ("Node didn't have enough capacity: memory, ...") until v1.36.
    ("Request memory increase beyond node capacity - CHANGED, Deferred", C1G, {"cpu": "1", "memory": "4500Mi"},
     None, None, None, None, False, False, False, C1G, None, None, [deferred(CHANGED_MEMORY)], True),
    # CHANGED: Infeasible ("Node didn't have enough capacity: cpu, ...") until v1.36.
    ("Request CPU increase beyond node capacity - CHANGED, Deferred", C1G, {"cpu": "5000m", "memory": "1Gi"},
     None, None, None, None, False, False, False, C1G, None, None, [deferred(CHANGED_CPU)], True),
    ("CPU increase in progress, resources unchanged - expect InProgress", C1G, {"cpu": "1500m", "memory": "1Gi"},
     None, None, None, None, True, True, True, {"cpu": "1500m", "memory": "1Gi"}, None, None, [ORIGINAL_IN_PROGRESS],
     True),
    ("CPU increase in progress, new allocation - expect InProgress reset", C1G, {"cpu": "1500m", "memory": "1Gi"},
     None, None, None, None, True, True, False, {"cpu": "1500m", "memory": "1Gi"}, None, None, [IN_PROGRESS], True),
    ("Deferred resize doesn't clear in-progress status", C1G, {"cpu": "500m", "memory": "2500Mi"}, None, None, None,
     None, True, True, False, C1G, None, None,
     [deferred("Node didn't have enough resource: memory"), ORIGINAL_IN_PROGRESS], True),
    ("No resize", C1G, dict(C1G), None, None, None, None, False, False, False, C1G, None, None, [], False),
    ("Increase CPU from min shares", {"cpu": "2m"}, {"cpu": "1"}, None, None, None, None, False, False, False,
     {"cpu": "1"}, None, None, [IN_PROGRESS], True),
    ("Decrease CPU to min shares", {"cpu": "1"}, {"cpu": "2m"}, None, None, None, None, False, False, False,
     {"cpu": "2m"}, None, None, [IN_PROGRESS], True),
    ("Increase CPU from min limit", {"cpu": "10m"}, {"cpu": "10m"}, {"cpu": "10m"}, {"cpu": "20m"}, None, None,
     False, False, False, {"cpu": "10m"}, {"cpu": "20m"}, None, [IN_PROGRESS], True),
    ("Decrease CPU to min limit", {"cpu": "10m"}, {"cpu": "10m"}, {"cpu": "20m"}, {"cpu": "10m"}, None, None,
     False, False, False, {"cpu": "10m"}, {"cpu": "10m"}, None, [IN_PROGRESS], True),
    ("pod-level: Request CPU and memory increase - expect InProgress", C1G, dict(C1G), None, None,
     {"cpu": "1500m", "memory": "1500Mi"}, {"cpu": "2", "memory": "2Gi"}, False, False, False, C1G, None,
     {"cpu": "2", "memory": "2Gi"}, [IN_PROGRESS], True),
    ("pod-level: Request CPU and memory decrease - expect InProgress", C1G, dict(C1G), None, None,
     {"cpu": "1500m", "memory": "1500Mi"}, {"cpu": "1200m", "memory": "1200Mi"}, False, False, False, C1G, None,
     {"cpu": "1200m", "memory": "1200Mi"}, [IN_PROGRESS], True),
    ("pod-level: Request CPU increase beyond current capacity - expect Deferred", C1G, dict(C1G), None, None,
     {"cpu": "1500m", "memory": "1500Mi"}, {"cpu": "2500m", "memory": "1500Mi"}, False, False, False, C1G, None,
     {"cpu": "1500m", "memory": "1500Mi"}, [deferred("Node didn't have enough resource: cpu")], True),
    # CHANGED: Infeasible until v1.36.
    ("pod-level: Request memory increase beyond node capacity - CHANGED, Deferred", C1G, dict(C1G), None, None,
     {"cpu": "1500m", "memory": "1500Mi"}, {"cpu": "1500m", "memory": "4500Mi"}, False, False, False, C1G, None,
     {"cpu": "1500m", "memory": "1500Mi"}, [deferred(CHANGED_MEMORY)], True),
]
CASES = [(row, sidecar) for row in RETRY for sidecar in (False, True) if not (row[5] and sidecar)]


def retry_case(row, sidecar):
    """The original pod, the resized one, and the manager after PushPendingResize and RetryPendingResizes."""
    (_, old, new, old_lim, new_lim, old_pod, new_pod, in_progress, pending, allocated_new, *_) = row
    original = copy.deepcopy(TEST_POD2 if sidecar else TEST_POD1)
    kind = "initContainers" if sidecar else "containers"
    original["spec"][kind][0]["resources"] = {k: v for k, v in (("requests", old), ("limits", old_lim)) if v}
    if old_pod:
        original["spec"]["resources"] = {"requests": dict(old_pod)}
    desired = copy.deepcopy(original)
    desired["spec"][kind][0]["resources"] = {k: v for k, v in (("requests", new), ("limits", new_lim)) if v}
    if new_pod:
        desired["spec"]["resources"] = {"requests": dict(new_pod)}
    before, after = api.pod_from_manifest(original), api.pod_from_manifest(desired)
    active = [api.pod_from_manifest(p) for p in (TEST_POD1, TEST_POD2, TEST_POD3)]
    manager = make_allocation_manager(active)
    manager.get_pod_by_uid = lambda uid: after
    manager.set_allocated_resources(after if allocated_new else before)
    sm, uid = manager.status_manager, after.metadata.uid
    if in_progress:
        sm.set_pod_resize_in_progress_condition(uid, "", "original in-progress", 0)
    if pending:
        sm.set_pod_resize_pending_condition(uid, "Deferred", "original pending", 0)
    manager.push_pending_resize(uid)
    manager.retry_pending_resizes(TRIGGER_REASON_POD_UPDATED)
    return before, after, manager


@pytest.mark.parametrize("row, sidecar", CASES, ids=[f"{r[0]}/sidecar={s}" for r, s in CASES])
def test_retry_pending_resizes(row, sidecar):
    before, after, manager = retry_case(row, sidecar)
    *_, want_requests, want_limits, want_pod_requests, want_conditions, want_sync = row
    uid, sm = after.metadata.uid, manager.status_manager
    shown = before if sm.is_pod_resize_infeasible(uid) or sm.is_pod_resize_deferred(uid) else after
    container = (shown.spec.init_containers if sidecar else shown.spec.containers)[0]
    assert (requests_of(container.resources), limits_of(container.resources)) == (q(want_requests), q(want_limits))
    stored = manager.get_container_resource_allocation(uid, container.name)
    assert (requests_of(stored), limits_of(stored)) == (q(want_requests), q(want_limits))
    if want_pod_requests:
        assert requests_of(shown.spec.resources) == q(want_pod_requests)
    got = rows(manager, uid)
    assert [(t, r) for t, r, _ in got] == [(t, r) for t, r, _ in want_conditions]
    for (_, _, message), (_, _, wanted) in zip(got, want_conditions):
        assert (wanted in message) if wanted else message == ""
    assert (uid in manager.synced) is want_sync


# --- #TestRetryPendingResizesGuanteedQOSPods, #TestRetryPendingResizesWithSwap ------------------------

G1 = {"cpu": "1", "memory": "1Gi"}
HALF = {"cpu": "500m", "memory": "500Mi"}
GUARANTEED = [  # (name, original, new (requests and limits), exclusive CPUs gate, exclusive memory gate, best effort,
                #  expected condition or None: allocated)
    ("Guaranteed QOS pod - CPU resize, ExclusiveCPUs off: Infeasible due to static cpu policy",
     (G1, G1), ({"cpu": "2", "memory": "1Gi"},) * 2, False, True,
     ("PodResizePending", "Infeasible", 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"')),
    ("Guaranteed QOS pod - Memory resize, ExclusiveMemory off: Infeasible due to static memory policy",
     (G1, G1), ({"cpu": "1", "memory": "2Gi"},) * 2, True, False,
     ("PodResizePending", "Infeasible", 'Resize is infeasible for Guaranteed Pods alongside Memory Manager policy "Static"')),
    ("Guaranteed QOS pod - CPU and Memory resize, both gates off: Infeasible due to static cpu policy",
     (G1, G1), ({"cpu": "2", "memory": "2Gi"},) * 2, False, False,
     ("PodResizePending", "Infeasible", 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"')),
    ("BestEffortPod - CPU and Memory limit resize: in progress, static policies do not matter",
     (HALF, G1), (HALF, {"cpu": "2", "memory": "1Gi"}), False, False, IN_PROGRESS),
]
GUARANTEED_CASES = [(row, s) for row in GUARANTEED for s in (False, True)]


@pytest.mark.parametrize("row, sidecar", GUARANTEED_CASES, ids=[f"{r[0]}/sidecar={s}" for r, s in GUARANTEED_CASES])
def test_retry_pending_resizes_guaranteed_qos_pods(row, sidecar):
    _, (old_req, old_lim), (new_req, new_lim), cpus, memory, want = row
    uid = "2222" if sidecar else "1111"
    c = ctr("c1", dict(old_req), dict(old_lim), sidecar=sidecar)
    main = ctr("main", dict(old_req), dict(old_lim))
    original = pod(uid, f"pod{uid[0]}", "ns", [main], inits=[c]) if sidecar else pod(uid, f"pod{uid[0]}", "ns", [c])
    desired = copy.deepcopy(original)
    (desired["spec"]["initContainers" if sidecar else "containers"][0])["resources"] = {"requests": dict(new_req),
                                                                                      "limits": dict(new_lim)}
    before, after = api.pod_from_manifest(original), api.pod_from_manifest(desired)
    gates = {"InPlacePodVerticalScalingExclusiveCPUs": cpus, "InPlacePodVerticalScalingExclusiveMemory": memory}
    with features.release_profile("1.36", gates):
        manager = make_allocation_manager([after], NodeConfig("static", "Static"))
        manager.set_allocated_resources(before)
        manager.push_pending_resize(uid)
        manager.retry_pending_resizes(TRIGGER_REASON_POD_UPDATED)
        assert rows(manager, uid) == [want]
        stored = manager.get_container_resource_allocation(uid, "c1")
        kept = want[1] == "Infeasible"
        assert (requests_of(stored), limits_of(stored)) == (q(old_req), q(old_lim)) if kept else (q(new_req), q(new_lim))


SWAP = [  # (name, swap behaviour, memory resize policy, expected condition)
    ("NoSwap Request Memory decrease ResizePolicy RestartContainer - expect InProgress", "NoSwap", "RestartContainer",
     IN_PROGRESS),
    ("LimitedSwap Request Memory increase with ResizePolicy RestartContainer - expect InProgress", "LimitedSwap",
     "RestartContainer", IN_PROGRESS),
    ("LimitedSwap Request Memory increase with ResizePolicy NotRequired - expect Infeasible", "LimitedSwap",
     "NotRequired", ("PodResizePending", "Infeasible", "In-place resize of containers with swap is not supported.")),
]


@pytest.mark.parametrize("name, swap, policy, want", SWAP, ids=[r[0] for r in SWAP])
def test_retry_pending_resizes_with_swap(name, swap, policy, want):
    name_of = "test-container-noswap" if swap == "NoSwap" else "test-container-limitedswap"
    original = pod("1111", "pod1", "ns1", [ctr(name_of, dict(C1G), resizePolicy=[
        {"resourceName": "memory", "restartPolicy": policy}])])
    desired = copy.deepcopy(original)
    desired["spec"]["containers"][0]["resources"]["requests"] = dict(HALF)
    after = api.pod_from_manifest(desired)
    manager = make_allocation_manager([after], swap={"test-container-noswap": "NoSwap",
                                                     "test-container-limitedswap": "LimitedSwap"})
    manager.set_allocated_resources(api.pod_from_manifest(original))
    manager.push_pending_resize("1111")
    manager.retry_pending_resizes(TRIGGER_REASON_POD_UPDATED)
    assert rows(manager, "1111") == [want]
    assert "1111" in manager.synced


# --- #TestRetryPendingResizesMultipleConditions --------------------------------------------------------

MULTIPLE = [  # (name, cpu, memory, generation, expected (type, reason, message, observedGeneration), event)
    ("allocated != actuated, pod resize should be in progress", "1", "1Gi", 1,
     [("PodResizeInProgress", "", "", 1)],
     'Normal ResizeStarted Pod resize started: {"containers":[{"name":"c1","resources":{"requests":{"cpu":"1",'
     '"memory":"1Gi"}}}],"generation":1}'),
    # CHANGED: Infeasible ("Node didn't have enough capacity: memory, ...", event ResizeInfeasible) until v1.36.
    ("desired != allocated != actuated, both conditions should be present in the pod status - CHANGED, Deferred",
     "5000m", "4500Mi", 2,
     [("PodResizePending", "Deferred", "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000", 2),
      ("PodResizeInProgress", "", "", 1)],
     'Warning ResizeDeferred Pod resize OutOfcpu: {"containers":[{"name":"c1","resources":{"requests":{"cpu":"5",'
     '"memory":"4500Mi"}}}],"generation":2,"error":"Node didn\'t have enough resource: cpu, requested: 5000, used: 0, '
     'capacity: 4000"}'),
    ("same as previous case to ensure no new event is generated", "5000m", "4500Mi", 2,
     [("PodResizePending", "Deferred", "Node didn't have enough resource: cpu, requested: 5000, used: 0, capacity: 4000", 2),
      ("PodResizeInProgress", "", "", 1)], None),
    ("revert back to the original resize request", "1", "1Gi", 3, [("PodResizeInProgress", "", "", 1)], None),
    ("no changes except generation", "1", "1Gi", 4, [("PodResizeInProgress", "", "", 1)], None),
    ("allocate a new resize", "500m", "500Mi", 5, [("PodResizeInProgress", "", "", 5)],
     'Normal ResizeStarted Pod resize started: {"containers":[{"name":"c1","resources":{"requests":{"cpu":"500m",'
     '"memory":"500Mi"}}}],"generation":5}'),
]


def test_retry_pending_resizes_multiple_conditions():
    """The six cases run in turn on one manager, as upstream runs them."""
    doc = pod("1111", "pod", "ns", [ctr("c1", dict(HALF))], generation=1)
    current = [api.pod_from_manifest(doc)]
    manager = make_allocation_manager(current)
    manager.get_active_pods = lambda: list(current)
    manager.get_pod_by_uid = lambda uid: current[0]
    manager.set_allocated_resources(current[0])
    for name, cpu, memory, generation, want, event in MULTIPLE:
        doc["metadata"]["generation"] = generation
        doc["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": memory}}
        current[0] = api.pod_from_manifest(doc)
        seen = len(manager.recorder.events)
        manager.push_pending_resize("1111")
        manager.retry_pending_resizes(TRIGGER_REASON_POD_UPDATED)
        got = [(c.type, c.reason or "", c.message or "", c.observed_generation or 0)
               for c in manager.status_manager.get_pod_resize_conditions("1111")]
        assert got == want, name
        assert [f"{e.type} {e.reason} {e.message}" for e in manager.recorder.events[seen:]] == ([event] if event else []), name


@pytest.mark.upstream
def test_changed_rows_are_what_v1_36_5_answers():
    """The rows whose answer changed in v1.36, and the static pod row, asked of v1.36.5 through the harness."""
    from . import upstream_harness
    upstream_harness.go()
    node = copy.deepcopy(NODE)
    others = [TEST_POD2, TEST_POD3]
    for row in [r for r in RETRY if "CHANGED" in r[0]]:
        before, after, manager = retry_case(row, False)
        original = copy.deepcopy(TEST_POD1)
        original["spec"]["containers"][0]["resources"] = {"requests": dict(row[1])}
        desired = copy.deepcopy(original)
        desired["spec"]["containers"][0]["resources"] = {"requests": dict(row[2])}
        for p, level in ((original, row[5]), (desired, row[6])):
            if level:
                p["spec"]["resources"] = {"requests": dict(level)}
        theirs = upstream_harness.call("1.36", "HandlePodResourcesResize", allocated=original, desired=desired,
                                       others=others, node=node, allocatable=node["status"]["allocatable"])
        assert [(c["type"], c.get("reason", ""), c.get("message", "")) for c in theirs["conditions"]] == rows(manager, "1111")
    static = copy.deepcopy(TEST_POD1)
    static["metadata"]["annotations"] = {"kubernetes.io/config.source": "file"}
    smaller = copy.deepcopy(static)
    smaller["spec"]["containers"][0]["resources"] = {"requests": dict(HALF)}
    theirs = upstream_harness.call("1.36", "HandlePodResourcesResize", allocated=static, desired=smaller,
                                   others=others, node=node, allocatable=node["status"]["allocatable"])
    assert [c["type"] for c in theirs["conditions"]] == ["PodResizeInProgress"]


def test_static_pod_resizes_in_place_from_1_36():
    """019a8d10's TestHandlePodResourcesResize#"static pod, expect Infeasible" - CHANGED: v1.36 allocates it (#135856)."""
    static = copy.deepcopy(TEST_POD1)
    static["metadata"]["annotations"] = {"kubernetes.io/config.source": "file"}
    smaller = copy.deepcopy(static)
    smaller["spec"]["containers"][0]["resources"] = {"requests": dict(HALF)}
    after = api.pod_from_manifest(smaller)
    manager = make_allocation_manager([after, *(api.pod_from_manifest(p) for p in (TEST_POD2, TEST_POD3))])
    manager.set_allocated_resources(api.pod_from_manifest(static))
    assert manager.handle_pod_resources_resize(after)
    assert rows(manager, "1111") == [IN_PROGRESS]


# --- #TestAllocationManagerAddPod ---------------------------------------------------------------------

C2G = {"cpu": "2", "memory": "2Gi"}


def small(uid, amounts):
    return api.pod_from_manifest(pod(uid, f"pod{uid[0]}", f"ns{uid[0]}", [ctr("c1", dict(amounts))]))


def out_of_cpu(attrs):
    """The test's admitFunc: more than one CPU is refused."""
    cpu = api.parse_quantity(attrs.pod.spec.containers[0].resources.requests["cpu"])
    if cpu > 1:
        return PodAdmitResult(False, "OutOfcpu", f"not enough CPUs available for pod {attrs.pod.metadata.namespace}/"
                                                 f"{attrs.pod.metadata.name}, requested: {int(cpu)}, available:1")
    return PodAdmitResult(True)


ADD_POD = [  # (name, gate, allocations before, active, pod to add, admit func, admit, reason, message, allocations after)
    ("IPPR Enabled - New pod admitted and allocated resources updated", True, {}, [], ("1111", C1G), None, True, "",
     "", {"1111": C1G}),
    ("IPPR Disabled - New pod admitted but allocated resources not updated", False, {}, [], ("1111", C1G), None,
     True, "", "", {}),
    ("IPPR Enabled - New pod not admititted due to insufficient resources", True, {"1111": C1G}, [("1111", C1G)],
     ("2222", C2G), out_of_cpu, False, "OutOfcpu", "not enough CPUs available for pod ns2/pod2, requested: 2, available:1",
     {"1111": C1G}),
    ("IPPR Disabled - New pod not admitted due to insufficient resources", False, {"1111": C1G}, [("1111", C1G)],
     ("2222", C2G), out_of_cpu, False, "OutOfcpu", "not enough CPUs available for pod ns2/pod2, requested: 2, available:1",
     {"1111": C1G}),
    ("IPPR Enabled - no pod resize request. Resource request same as existing allocation", True,
     {"1111": C1G, "2222": C1G}, [("1111", C1G)], ("1111", C1G), None, True, "", "", {"1111": C1G, "2222": C1G}),
    ("IPPR Enabled - current allocation not found for added pod. Allocated resources updated.", True, {},
     [("1111", C1G)], ("1111", C2G), None, True, "", "", {"1111": C2G}),
    ("IPPR Enabled - request different from current allocation. Pod still admitted based on existing allocation, "
     "but allocated resources remains unchanges.", True, {"1111": C1G, "2222": C1G}, [("1111", C1G), ("2222", C1G)],
     ("1111", C2G), out_of_cpu, True, "", "", {"1111": C1G, "2222": C1G}),
    ("IPPR Disabled - request different from current allocation. Admission fails. Allocated resources not updated.",
     False, {"1111": C1G}, [("1111", C1G)], ("1111", C2G), out_of_cpu, False, "OutOfcpu",
     "not enough CPUs available for pod ns1/pod1, requested: 2, available:1", {"1111": C1G}),
]


@pytest.mark.parametrize("row", ADD_POD, ids=[r[0] for r in ADD_POD])
def test_allocation_manager_add_pod(row):
    """Upstream runs these at emulation version 1.34, where the gate can still be turned off."""
    _, gate, initial, active, to_add, admit_func, want_admit, want_reason, want_message, want_after = row
    with features.release_profile("1.34", {"InPlacePodVerticalScaling": gate}):
        manager = make_allocation_manager([])
        manager.admit_handlers = [admit_func] if admit_func else []
        for uid, amounts in initial.items():
            manager.set_allocated_resources(small(uid, amounts))
        result = manager.add_pod([small(*p) for p in active], small(*to_add))
        assert result == (want_admit, want_reason, want_message)
        for uid, amounts in want_after.items():
            assert requests_of(manager.get_container_resource_allocation(uid, "c1")) == q(amounts)
        assert set(manager.allocated) == set(want_after)


# --- #TestIsResizeIncreasingRequests ------------------------------------------------------------------

INCREASING = [  # (name, new pod requests, new container requests by index, expected, pod-level resources)
    ("increase requests, one container", None, {0: {"cpu": "1500m", "memory": "1500Mi"}}, True, False),
    ("decrease requests, one container", None, {0: HALF}, False, False),
    ("increase cpu, decrease memory, one container", None, {0: {"cpu": "1500m", "memory": "500Mi"}}, True, False),
    ("increase memory, decrease cpu, one container", None, {0: {"cpu": "500m", "memory": "1500Mi"}}, True, False),
    ("increase one container, decrease another container, net neutral", None,
     {0: {"cpu": "1500m", "memory": "1500Mi"}, 1: HALF}, False, False),
    ("decrease requests, two containers", None, {0: HALF, 1: HALF}, False, False),
    ("remove requests, set as empty struct", None, {0: {}}, False, False),
    ("remove requests, set as nil", None, {0: None}, False, False),
    ("add requests, set as empty struct", None, {2: G1}, True, False),
    ("add requests, set as nil", None, {3: G1}, True, False),
    ("pod-level: increase cpu", {"cpu": "3000m", "memory": "2500Mi"}, {}, True, True),
    ("pod-level: decrease memory", {"cpu": "2500m", "memory": "2000Mi"}, {}, False, True),
    ("pod-level: increase cpu, decrease memory", {"cpu": "3000m", "memory": "2000Mi"}, {}, True, True),
    ("container-level: increase cpu", None, {0: {"cpu": "1500m", "memory": "1Gi"}}, False, True),
    ("container-level: decrease cpu", None, {0: {"cpu": "500m", "memory": "1Gi"}}, False, True),
    ("pod & container: increase container cpu, increase pod cpu, net increase", {"cpu": "2600m", "memory": "2500Mi"},
     {0: {"cpu": "1500m", "memory": "1Gi"}}, True, True),
    ("pod & container: decrease container cpu, decrease pod cpu, net decrease", {"cpu": "2000m", "memory": "2500Mi"},
     {0: {"cpu": "500m", "memory": "1Gi"}}, False, True),
    ("pod & container: increase container cpu, same pod cpu, net neutral", {"cpu": "2500m", "memory": "2500Mi"},
     {0: {"cpu": "1500m", "memory": "1Gi"}}, False, True),
]


@pytest.mark.parametrize("name, pod_requests, container_requests, expected, pod_level", INCREASING,
                         ids=[r[0] for r in INCREASING])
def test_is_resize_increasing_requests(name, pod_requests, container_requests, expected, pod_level):
    doc = pod("1111", "pod1", "ns1", [ctr("c1", dict(G1)), ctr("c2", dict(G1)), ctr("c3", {}), ctr("c4")])
    if pod_level:
        doc["spec"]["resources"] = {"requests": {"cpu": "2500m", "memory": "2500Mi"}}
    with features.set_feature_gate_during_test(features.DEFAULT_FEATURE_GATE,
                                               "InPlacePodLevelResourcesVerticalScaling", pod_level):
        manager = make_allocation_manager([])
        manager.set_allocated_resources(api.pod_from_manifest(doc))
        if pod_requests is not None:
            doc["spec"]["resources"]["requests"] = pod_requests
        for index, requests in container_requests.items():
            doc["spec"]["containers"][index]["resources"] = {} if requests is None else {"requests": requests}
        assert manager.is_resize_increasing_requests(api.pod_from_manifest(doc)) is expected


# --- #TestSortPendingResizes --------------------------------------------------------------------------


def test_sort_pending_resizes():
    """0 shrinks at pod level, 1 at container level, 2 has the highest priority, 3 is Guaranteed (by status),
    4 has been Deferred longer than 5, and 6 not at all: that order, whichever order they were pushed in."""
    docs = [pod(str(i), f"pod{i}", f"ns{i}", [ctr(f"c{i}", dict(G1))]) for i in range(7)]
    clock = Clock()
    manager = make_allocation_manager([], clock=clock)
    for d in docs:
        manager.set_allocated_resources(api.pod_from_manifest(d))
    docs[0]["spec"]["resources"] = {"requests": dict(HALF)}
    docs[1]["spec"]["containers"][0]["resources"]["requests"] = dict(HALF)
    for d in docs[2:]:
        d["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1500m", "memory": "1500Mi"}
    docs[2]["spec"]["priority"] = 100
    docs[3]["status"]["qosClass"] = "Guaranteed"
    pods = {d["metadata"]["uid"]: api.pod_from_manifest(d) for d in docs}
    manager.get_pod_by_uid = pods.get
    manager.status_manager.set_pod_resize_pending_condition("4", "Deferred", "some-message", 1)
    clock.advance(timedelta(milliseconds=5))
    manager.status_manager.set_pod_resize_pending_condition("5", "Deferred", "some-message", 1)
    for order in (list(pods), list(pods)[::-1]):
        manager.pods_with_pending_resizes = []
        for uid in order:
            manager.push_pending_resize(uid)
        assert manager.pods_with_pending_resizes == [str(i) for i in range(7)]


# --- #TestRecordPodDeferredAcceptedResizes ------------------------------------------------------------

DEFERRED_ACCEPTED = [  # (name, trigger, pending before, expected count by trigger)
    ("trigger reason: pod updated, no pending condition", TRIGGER_REASON_POD_UPDATED, False, {}),
    ("trigger reason: pod resized, pending condition", TRIGGER_REASON_POD_RESIZED, True, {"pod_resized": 1}),
    ("trigger reason: periodic retry, pending condition", TRIGGER_REASON_PERIODIC, True, {"periodic_retry": 1}),
]


@pytest.mark.parametrize("name, trigger, pending, expected", DEFERRED_ACCEPTED, ids=[r[0] for r in DEFERRED_ACCEPTED])
def test_record_pod_deferred_accepted_resizes(name, trigger, pending, expected):
    """Upstream's counter is global, so its rows add up; here each manager counts its own."""
    original = pod("1111", "pod1", "ns1", [ctr("c1", dict(G1))])
    resized = copy.deepcopy(original)
    resized["spec"]["containers"][0]["resources"]["requests"] = dict(HALF)
    after = api.pod_from_manifest(resized)
    manager = make_allocation_manager([api.pod_from_manifest(original)])
    manager.set_allocated_resources(api.pod_from_manifest(original))
    if pending:
        manager.status_manager.set_pod_resize_pending_condition("1111", "Deferred", "message", 1)
    manager.get_pod_by_uid = lambda uid: after
    manager.push_pending_resize("1111")
    assert [p.metadata.uid for p in manager.retry_pending_resizes(trigger)] == ["1111"]
    assert manager.deferred_accepted == expected
    assert [f"{e.type} {e.reason} {e.message}" for e in manager.recorder.events] == [
        'Normal ResizeStarted Pod resize started: {"containers":[{"name":"c1","resources":{"requests":{"cpu":"500m",'
        '"memory":"500Mi"}}}],"generation":0}']


# --- status_manager_test.go#TestPodResizeConditions ---------------------------------------------------

IP, PENDING = "PodResizeInProgress", "PodResizePending"
CONDITIONS = [  # (name, update returning its bool, the bool, expected (type, reason, message, observedGeneration))
    ("initial empty conditions", None, None, []),
    ("set pod resize in progress condition with reason and message",
     lambda sm: sm.set_pod_resize_in_progress_condition("12345", "some-reason", "some-message", 1)[1], True,
     [(IP, "some-reason", "some-message", 1)]),
    ("set pod resize in progress condition without reason and message",
     lambda sm: sm.set_pod_resize_in_progress_condition("12345", "", "", 1)[1], False,
     [(IP, "some-reason", "some-message", 1)]),
    ("attempt to overwrite pod resize in progress condition with a new observedGeneration",
     lambda sm: sm.set_pod_resize_in_progress_condition("12345", "", "", 2)[1], False,
     [(IP, "some-reason", "some-message", 1)]),
    ("clear the pod resize in progress condition and set a new one",
     lambda sm: (sm.clear_pod_resize_in_progress_condition("12345"),
                 sm.set_pod_resize_in_progress_condition("12345", "", "", 2))[1][1], True, [(IP, "", "", 2)]),
    ("set pod resize pending condition to deferred with message",
     lambda sm: sm.set_pod_resize_pending_condition("12345", "some-reason", "some-message", 1), True,
     [(PENDING, "Deferred", "some-message", 1), (IP, "", "", 2)]),
    ("change the deferred message",
     lambda sm: sm.set_pod_resize_pending_condition("12345", "Deferred", "some-other-message", 1), False,
     [(PENDING, "Deferred", "some-other-message", 1), (IP, "", "", 2)]),
    ("set pod resize pending condition to infeasible with message",
     lambda sm: sm.set_pod_resize_pending_condition("12345", "Infeasible", "some-message", 3), True,
     [(PENDING, "Infeasible", "some-message", 3), (IP, "", "", 2)]),
    ("clear pod resize in progress condition", lambda sm: sm.clear_pod_resize_in_progress_condition("12345")[1], True,
     [(PENDING, "Infeasible", "some-message", 3)]),
    ("clear pod resize pending condition", lambda sm: sm.clear_pod_resize_pending_condition("12345") or False, False, []),
]


def test_pod_resize_conditions():
    sm = StatusManager(Clock())
    for name, update, returned, expected in CONDITIONS:
        if update is not None:
            assert update(sm) is returned, name
        got = [(c.type, c.reason or "", c.message or "", c.observed_generation or 0)
               for c in sm.get_pod_resize_conditions("12345")]
        assert got == expected, name
        assert all(c.status == "True" for c in sm.get_pod_resize_conditions("12345"))
        assert sm.is_pod_resize_deferred("12345") == any(e[:2] == (PENDING, "Deferred") for e in expected), name
        assert sm.is_pod_resize_infeasible("12345") == any(e[:2] == (PENDING, "Infeasible") for e in expected), name


@pytest.mark.parametrize("existing, generation, cleared", [(None, 0, False), (1, 1, True)],
                         ids=["no existing conditions", "existing pod resize in progress condition"])
def test_clear_pod_resize_in_progress_condition(existing, generation, cleared):
    """status_manager_test.go#TestClearPodResizeInProgressCondition: the generation the condition had, and whether it was there."""
    sm = StatusManager(Clock())
    if existing is not None:
        sm.set_pod_resize_in_progress_condition("12345", "", "", existing)
    assert sm.clear_pod_resize_in_progress_condition("12345") == (generation, cleared)
    assert sm.get_pod_resize_conditions("12345") == []


# --- the v1.27 profile --------------------------------------------------------------------------------


@pytest.mark.parametrize("release, words", [("1.27", "feature gate, which is alpha and off in Kubernetes 1.27"),
                                            ("1.35", "Kubernetes 1.35 decides resizes by other rules")])
def test_resize_is_refused_where_the_course_does_not_model_it(release, words):
    """v1.27's kubelet does not resize in place (the gate is off); 1.33-1.35 decide by rules not modelled."""
    with features.release_profile(release):
        manager = make_allocation_manager([])
        p = api.pod_from_manifest(TEST_POD1)
        for entry in (lambda: manager.handle_pod_resources_resize(p), lambda: manager.push_pending_resize("1111"),
                      lambda: manager.retry_pending_resizes(TRIGGER_REASON_PERIODIC)):
            with pytest.raises(UsageError, match="InPlacePodVerticalScaling" if release == "1.27" else "1.36") as err:
                entry()
            assert words in str(err.value) and "\n" not in str(err.value)


# --- the periodic retry: allocation_manager.go NewManager, Run and retryPendingResizes (v1.36.5 module source) ---

def test_the_ticker_retries_30_s_after_start_then_3_min_after_every_retry():
    """NewManager starts a 30 s ticker; each retryPendingResizes, whatever its trigger, resets it to 3 min (to 30 s
    while the sources are not ready). A tick with no resize pending does nothing, so none is due then."""
    clock = Clock()
    original = pod("1111", "pod1", "ns1", [ctr("c1", dict(G1))])
    manager = make_allocation_manager([api.pod_from_manifest(original)], clock=clock)
    assert manager.retry_at == clock.now() + timedelta(seconds=30)
    assert manager.next_periodic_retry() is None  # nothing pending: no tick acts
    manager.set_allocated_resources(api.pod_from_manifest(original))
    bigger = copy.deepcopy(original)
    bigger["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "5", "memory": "1Gi"}  # beyond 4 CPUs free
    manager.get_pod_by_uid = lambda uid: api.pod_from_manifest(bigger)
    clock.advance(timedelta(seconds=10))
    manager.push_pending_resize("1111")
    manager.retry_pending_resizes(TRIGGER_REASON_POD_UPDATED)
    assert rows(manager, "1111")[0][:2] == ("PodResizePending", "Deferred")
    assert manager.next_periodic_retry() == clock.now() + timedelta(minutes=3)
    first = manager.status_manager.pod_resize_conditions["1111"].pending
    clock.advance(timedelta(minutes=3))
    manager.synced.clear()
    manager.periodic_retry()
    again = manager.status_manager.pod_resize_conditions["1111"].pending
    assert (again.last_transition_time, again.last_probe_time) == (first.last_transition_time, clock.now())
    assert manager.synced == ["1111"]  # the condition is new (its probe time): triggerPodSync
    assert manager.next_periodic_retry() == clock.now() + timedelta(minutes=3)
    manager.sources_ready = lambda: False
    manager.periodic_retry()
    assert manager.retry_at == clock.now() + timedelta(seconds=30)


def test_pods_removed_retry_once_after_the_batch_even_with_none_pending(monkeypatch):
    """v1.36.5 Kubelet.HandlePodRemoves: each pod leaves the allocation manager (RemovePod), and after the loop
    RetryPendingResizes(pods_removed) runs once, with no check for pending resizes: the ticker is reset then."""
    from mini_kubelet.kubelet_main import Kubelet
    from mini_kubelet.sim.resize import wire_resize
    clock = Clock()
    node = api.node_from_manifest(NODE)
    kubelet = Kubelet(clock, node)
    wire_resize(kubelet, node, 4 * 1024**3)
    manager = kubelet.handlers.allocation
    pods = [api.pod_from_manifest(pod(uid, uid, "ns", [ctr("c", dict(HALF))])) for uid in ("a", "b")]
    for p in pods:
        manager.set_allocated_resources(p)
    calls = []
    retry = Manager.retry_pending_resizes
    monkeypatch.setattr(Manager, "retry_pending_resizes", lambda self, trigger: (calls.append(trigger), retry(self, trigger))[1])
    clock.advance(timedelta(seconds=50))
    kubelet.handlers.handle_pod_removes(pods)
    assert calls == ["pods_removed"] and manager.allocated == {}
    assert manager.retry_at == clock.now() + timedelta(minutes=3)
