"""Chapter 3: a Pod's effective requests and limits as v1.36 computes them (sidecars, pod-level resources).

Tables ported from k8s.io/component-helpers resource/helpers_test.go at tag v0.36.0 (the staging copy that
Kubernetes v1.36.0 vendors), run under `features.release_profile("1.36")`. Cases that read resized amounts
from the Pod's status (UseStatusResources) are left out: in-place resize is not implemented. The last tests
check that under the default profile (v1.27) the same Pods get v1.27's answers.
"""

from __future__ import annotations

import pytest
from kubernetes.client import V1Container, V1Pod, V1PodSpec, V1ResourceRequirements

from mini_kubelet import api, features, resource

pytestmark = pytest.mark.ch3

SOURCE = "k8s.io/component-helpers resource/helpers_test.go (v0.36.0)"


def ctr(req=None, lim=None, sidecar=False, name="c"):
    """A container with these requests and limits ({"cpu": "1"}); sidecar: restartPolicy Always."""
    return V1Container(name=name, resources=V1ResourceRequirements(requests=req, limits=lim),
                       restart_policy="Always" if sidecar else None)


def side(req=None, lim=None):
    return ctr(req, lim, sidecar=True, name="sidecar")


def pod(containers=(), inits=(), overhead=None, pod_resources=None) -> V1Pod:
    """A Pod (containers may be empty, as in upstream's tables); pod_resources: spec.resources."""
    level = V1ResourceRequirements(**pod_resources) if pod_resources is not None else None
    return V1Pod(spec=V1PodSpec(containers=list(containers), init_containers=list(inits), overhead=overhead,
                                resources=level))


def decimals(resource_list):
    return {name: api.parse_quantity(text) for name, text in resource_list.items()}


@pytest.fixture(autouse=True)
def v136():
    with features.release_profile("1.36"):
        yield


def get_pod(cpu_request="", cpu_limit="", memory_request="", memory_limit="", cpu_overhead="", memory_overhead=""):
    """Upstream's getPod: one app and one init container with the same resources, plus overhead."""
    req = {k: v for k, v in (("cpu", cpu_request), ("memory", memory_request)) if v}
    lim = {k: v for k, v in (("cpu", cpu_limit), ("memory", memory_limit)) if v}
    overhead = {k: v for k, v in (("cpu", cpu_overhead), ("memory", memory_overhead)) if v}
    return pod([ctr(req, lim)], [ctr(req, lim, name="init-c")], overhead=overhead)


# helpers_test.go#TestPodRequestsAndLimits (v0.36.0): 5 cases
@pytest.mark.parametrize("name, pod_args, requests, limits", [
    ("just-limit-no-overhead", {"cpu_limit": "9"}, {}, {"cpu": "9"}),
    ("just-overhead", {"cpu_overhead": "5", "memory_overhead": "5"}, {"cpu": "5", "memory": "5"}, {}),
    ("req-and-overhead", {"cpu_request": "1", "memory_request": "10", "cpu_overhead": "5", "memory_overhead": "5"},
     {"cpu": "6", "memory": "15"}, {}),
    ("all-req-lim-and-overhead", {"cpu_request": "1", "cpu_limit": "2", "memory_request": "10", "memory_limit": "12",
                                  "cpu_overhead": "5", "memory_overhead": "5"},
     {"cpu": "6", "memory": "15"}, {"cpu": "7", "memory": "17"}),
    ("req-some-lim-and-overhead", {"cpu_request": "1", "cpu_limit": "2", "memory_request": "10",
                                   "cpu_overhead": "5", "memory_overhead": "5"}, {"cpu": "6", "memory": "15"}, {"cpu": "7"}),
])
def test_pod_requests_and_limits(name, pod_args, requests, limits):
    p = get_pod(**pod_args)
    assert resource.pod_requests(p) == decimals(requests)
    assert resource.pod_limits(p) == decimals(limits)


TWO = [ctr({"cpu": "1", "memory": "5"}, {"cpu": "2", "memory": "10"}, name="foobar"),
       ctr({"cpu": "4", "memory": "12"}, {"cpu": "8", "memory": "24"}, name="foobar2")]
OVERHEAD = {"cpu": "3", "memory": "8"}
INITS = [ctr({"cpu": "1", "memory": "5"}, {"cpu": "1", "memory": "5"}, name="small-init"),
         ctr({"cpu": "40", "memory": "120"}, {"cpu": "80", "memory": "240"}, name="big-init")]


# helpers_test.go#TestPodRequestsAndLimitsWithoutOverhead (v0.36.0): 3 cases, ExcludeOverhead
@pytest.mark.parametrize("name, p, requests, limits", [
    ("two container no overhead", pod(TWO), {"cpu": "5", "memory": "17"}, {"cpu": "10", "memory": "34"}),
    ("two container with overhead", pod(TWO, overhead=OVERHEAD), {"cpu": "5", "memory": "17"}, {"cpu": "10", "memory": "34"}),
    ("two container with overhead, massive init", pod(TWO, INITS, overhead=OVERHEAD),
     {"cpu": "40", "memory": "120"}, {"cpu": "80", "memory": "240"}),
])
def test_pod_requests_and_limits_without_overhead(name, p, requests, limits):
    assert resource.pod_requests(p, exclude_overhead=True) == decimals(requests)
    assert resource.pod_limits(p, exclude_overhead=True) == decimals(limits)


def cpu(amount):
    return {"cpu": amount}


# The sidecar tables shared by TestPodResourceRequests and TestPodResourceLimits: (containers, inits, cpu)
SIDECAR_CASES = [
    ("restartable init container", [ctr(cpu("1"))], [side(cpu("1"))], "2"),
    # max(5, sidecars 1+2+3 + container 1) = 7
    ("multiple restartable init containers", [ctr(cpu("1"))],
     [ctr(cpu("5"), name="init-1"), side(cpu("1")), side(cpu("2")), side(cpu("3"))], "7"),
    # init-2 needs 5 + the sidecars started before it (1+2) = 8; the sidecar started after it does not count
    ("multiple restartable and regular init containers", [ctr(cpu("1"))],
     [ctr(cpu("5"), name="init-1"), side(cpu("1")), side(cpu("2")), ctr(cpu("5"), name="init-2"), side(cpu("3"))], "8"),
    ("restartable-init, init and regular", [ctr(cpu("100"))], [side(cpu("10")), ctr(cpu("200"), name="init-1")], "210"),
]


# helpers_test.go#TestPodResourceRequests (v0.36.0): the 10 cases that read the spec only
@pytest.mark.parametrize("name, containers, inits, overhead, exclude, expected", [
    ("nil options, larger init container", [ctr(cpu("1"))], [ctr(cpu("4"))], None, False, cpu("4")),
    ("nil options, larger containers", [ctr(cpu("2")), ctr(cpu("3"))], [ctr(cpu("2"))], None, False, cpu("5")),
    ("pod overhead excluded", [ctr(cpu("2")), ctr(cpu("3"))], [ctr(cpu("2"))], cpu("1"), True, cpu("5")),
    ("pod overhead included", [ctr(cpu("2")), ctr(cpu("3"))], [ctr(cpu("2"), cpu("2"))],
     {"cpu": "1", "memory": "1Gi"}, False, {"cpu": "6", "memory": "1Gi"}),
    # the status says 2, but UseStatusResources is false: the spec's 4 counts
    ("resized, infeasible, but don't use status", [ctr(cpu("4"))], [], None, False, cpu("4")),
    ("resized, restartable init container, infeasible, but don't use status", [], [side(cpu("4"))], None, False, cpu("4")),
] + [(name, c, i, None, False, cpu(total)) for name, c, i, total in SIDECAR_CASES])
def test_pod_resource_requests(name, containers, inits, overhead, exclude, expected):
    assert resource.pod_requests(pod(containers, inits, overhead), exclude_overhead=exclude) == decimals(expected)


def lim(amount, memory=None):
    return ctr(lim={"cpu": amount, **({"memory": memory} if memory else {})})


# helpers_test.go#TestPodResourceLimits (v0.36.0): the 13 cases that read the spec only
@pytest.mark.parametrize("name, containers, inits, overhead, exclude, expected", [
    ("nil options, larger init container", [lim("1")], [lim("4")], None, False, cpu("4")),
    ("nil options, larger containers", [lim("2"), lim("3")], [lim("2")], None, False, cpu("5")),
    ("pod overhead excluded", [lim("2"), lim("3")], [lim("2")], cpu("1"), True, cpu("5")),
    # overhead goes only on non-zero limits: no memory limit appears
    ("pod overhead included", [lim("2"), lim("3")], [lim("2")], {"cpu": "1", "memory": "1Gi"}, False, cpu("6")),
    ("no limited containers should result in no limits for the pod", [ctr()], [], None, False, {}),
    ("one limited and one unlimited container", [lim("2", "2Gi"), ctr()], [], None, False, {"cpu": "2", "memory": "2Gi"}),
    ("one limited and one unlimited init container", [lim("1", "1Gi")], [lim("2", "2Gi"), ctr()], None, False,
     {"cpu": "2", "memory": "2Gi"}),
    ("pod scaled down, don't use status", [ctr(lim={"memory": "1Gi"})], [], None, False, {"memory": "1Gi"}),
    ("pod scaled down with restartable init containers, don't use status", [], [side(lim={"memory": "1Gi"})], None,
     False, {"memory": "1Gi"}),
] + [(name, [ctr(lim=c.resources.requests) for c in cs],
      [ctr(lim=i.resources.requests, sidecar=i.restart_policy == "Always") for i in ins], None, False, cpu(total))
     for name, cs, ins, total in SIDECAR_CASES])
def test_pod_resource_limits(name, containers, inits, overhead, exclude, expected):
    assert resource.pod_limits(pod(containers, inits, overhead), exclude_overhead=exclude) == decimals(expected)


# helpers_test.go#TestAggregateContainerRequestsAndLimits (v0.36.0): the 8 cases that read the spec only.
# AggregateContainerRequests/Limits is PodRequests/PodLimits without overhead and pod-level resources.
@pytest.mark.parametrize("name, containers, inits, requests, limits", [
    ("one container with limits", [lim("9")], [], {}, cpu("9")),
    ("two containers with limits", [lim("9"), lim("9")], [], {}, cpu("18")),
    ("one container with requests", [ctr(cpu("9"))], [], cpu("9"), {}),
    ("two containers with requests", [ctr(cpu("9")), ctr(cpu("9"))], [], cpu("18"), {}),
    ("regular and init containers with requests", [ctr(cpu("9"))], [ctr(cpu("9"))], cpu("9"), {}),
    ("regular, init and sidecar containers with requests", [ctr(cpu("9"))], [side(cpu("8")), ctr(cpu("6"))], cpu("17"), {}),
    ("regular and init containers with limits", [lim("9")], [lim("9")], {}, cpu("9")),
    ("regular, init and sidecar containers with limits", [lim("9")], [side(lim=cpu("8")), lim("6")], {}, cpu("17")),
])
def test_aggregate_container_requests_and_limits(name, containers, inits, requests, limits):
    p = pod(containers, inits)
    assert resource.pod_requests(p, exclude_overhead=True, skip_pod_level_resources=True) == decimals(requests)
    assert resource.pod_limits(p, exclude_overhead=True, skip_pod_level_resources=True) == decimals(limits)


# helpers_test.go#TestIsPodLevelResourcesSet (v0.36.0): 6 cases
@pytest.mark.parametrize("name, pod_resources, expected", [
    ("nil resources struct", None, False),
    ("empty resources struct", {}, False),
    ("only unsupported resource requests set", {"requests": {"ephemeral-storage": "1Mi"}}, False),
    ("only unsupported resource limits set", {"limits": {"ephemeral-storage": "1Mi"}}, False),
    ("unsupported and suported resources requests set", {"requests": {"ephemeral-storage": "1Mi", "cpu": "1m"}}, True),
    ("unsupported and suported resources limits set", {"limits": {"ephemeral-storage": "1Mi", "cpu": "1m"}}, True),
])
def test_is_pod_level_resources_set(name, pod_resources, expected):
    assert resource.is_pod_level_resources_set(pod(pod_resources=pod_resources)) is expected


# helpers_test.go#TestIsPodLevelLimitsSet (v0.36.0): 5 cases
@pytest.mark.parametrize("name, pod_resources, expected", [
    ("nil resources struct", None, False),
    ("empty resources struct", {}, False),
    ("only resource requests set", {"requests": {"memory": "100Mi"}}, False),
    ("only unsupported resource limits set", {"limits": {"ephemeral-storage": "1Mi"}}, False),
    ("unsupported and suported resources limits set", {"limits": {"ephemeral-storage": "1Mi", "cpu": "1m"}}, True),
])
def test_is_pod_level_limits_set(name, pod_resources, expected):
    assert resource.is_pod_level_limits_set(pod(pod_resources=pod_resources)) is expected


# helpers_test.go#TestIsSupportedPodLevelResource (v0.36.0): 5 cases
@pytest.mark.parametrize("name, expected", [
    ("cpu", True), ("memory", True), ("ephemeral-storage", False), ("hugepages-2Mi", True), ("hugepages-1Gi", True)])
def test_is_supported_pod_level_resource(name, expected):
    assert resource.is_supported_pod_level_resource(name) is expected


M = {"memory": "3Mi", "cpu": "2m"}  # the container most pod-level cases use
HP2, HP1 = "hugepages-2Mi", "hugepages-1Gi"

# helpers_test.go#TestPodLevelResourceRequests (v0.36.0): 17 cases: (name, pod level, containers, inits, skip, expected)
POD_LEVEL_CASES = [
    ("nil", {}, [], [], False, {}),
    ("pod level memory resource with SkipPodLevelResources true", {"requests": {"memory": "2Mi"}}, [], [], True, {}),
    ("pod level memory resource with SkipPodLevelResources false", {"requests": {"memory": "2Mi"}}, [], [], False,
     {"memory": "2Mi"}),
    ("pod level memory and container level cpu resources", {"requests": {"memory": "2Mi"}}, [ctr(cpu("2m"))], [], False,
     {"memory": "2Mi", "cpu": "2m"}),
    ("pod level unsupported resources set at both pod-level and container-level", {"requests": {"storage": "2Mi"}},
     [ctr({"storage": "3Mi"})], [], False, {"storage": "3Mi"}),
    ("pod level unsupported resources set at pod-level", {"requests": {"storage": "2Mi"}}, [ctr({"memory": "3Mi"})], [],
     False, {"memory": "3Mi"}),
    ("only container level resources set", {}, [ctr(M)], [], False, M),
    ("both container-level and pod-level resources set", {"requests": {"memory": "6Mi", "cpu": "8m"}}, [ctr(M)], [],
     False, {"memory": "6Mi", "cpu": "8m"}),
    ("container-level resources and init container set", {}, [ctr(M)], [ctr({"memory": "5Mi", "cpu": "4m"})], False,
     {"memory": "5Mi", "cpu": "4m"}),
    ("container-level resources and init container set, SkipPodLevelResources true", {}, [ctr(M)],
     [ctr({"memory": "5Mi", "cpu": "4m"})], True, {"memory": "5Mi", "cpu": "4m"}),
    ("container-level resources and sidecar container set", {}, [ctr(M)], [side({"memory": "5Mi", "cpu": "4m"})], False,
     {"memory": "8Mi", "cpu": "6m"}),
    ("container-level resources, init and sidecar container set", {}, [ctr(M)],
     [side({"memory": "5Mi", "cpu": "4m"}), ctr({"memory": "6Mi", "cpu": "8m"})], False, {"memory": "11Mi", "cpu": "12m"}),
    ("pod-level resources, container-level resources, init and sidecar container set",
     {"requests": {"memory": "15Mi", "cpu": "18m"}}, [ctr(M)],
     [side({"memory": "5Mi", "cpu": "4m"}), ctr({"memory": "6Mi", "cpu": "8m"})], False, {"memory": "15Mi", "cpu": "18m"}),
    ("pod-level resources, hugepage request/limit single page size",
     {"limits": {HP2: "2Mi"}, "requests": {"memory": "10Mi", HP2: "2Mi"}}, [], [], False, {"memory": "10Mi", HP2: "2Mi"}),
    ("pod-level resources, hugepage request/limit multiple page sizes",
     {"limits": {HP2: "2Mi", HP1: "1Gi"}, "requests": {"cpu": "1", HP2: "2Mi", HP1: "1Gi"}}, [], [], False,
     {"cpu": "1", HP2: "2Mi", HP1: "1Gi"}),
    ("pod-level resources, container-level resources, hugepage request/limit single page size",
     {"limits": {HP2: "10Mi"}, "requests": {"cpu": "1", HP2: "10Mi"}}, [ctr({HP2: "6Mi"}, {HP2: "6Mi"})], [], False,
     {"cpu": "1", HP2: "10Mi"}),
    ("pod-level resources, container-level resources, hugepage request/limit multiple page sizes",
     {"limits": {HP2: "10Mi", HP1: "2Gi"}, "requests": {"cpu": "1", HP2: "10Mi", HP1: "2Gi"}},
     [ctr({"cpu": "1", HP1: "2Gi"}, {HP1: "2Gi"})], [], False, {"cpu": "1", HP2: "10Mi", HP1: "2Gi"}),
    ("pod-level resources, container-level resources, hugepage sizes between pod-level and container-level",
     {"limits": {HP2: "10Mi"}, "requests": {"cpu": "1", HP2: "10Mi"}}, [ctr({"memory": "4Mi", HP1: "1Gi"}, {HP1: "1Gi"})],
     [], False, {"cpu": "1", "memory": "4Mi", HP2: "10Mi", HP1: "1Gi"}),
]


@pytest.mark.parametrize("name, pod_resources, containers, inits, skip, expected", POD_LEVEL_CASES)
def test_pod_level_resource_requests(name, pod_resources, containers, inits, skip, expected):
    p = pod(containers, inits, pod_resources=pod_resources)
    assert resource.pod_requests(p, skip_pod_level_resources=skip) == decimals(expected)


# Not an upstream table: PodLimits at v0.36.0 overlays pod-level limits when any pod-level resource is set,
# and overhead still goes only on the non-zero limits.
def test_pod_level_limits_win_and_take_overhead():
    p = pod([lim("1", "1Gi"), ctr(lim={"ephemeral-storage": "1Gi"})], overhead={"cpu": "100m", "memory": "1Mi"},
            pod_resources={"requests": {"cpu": "500m"}, "limits": {"memory": "2Gi"}})
    assert resource.pod_limits(p) == decimals({"cpu": "1100m", "memory": "2049Mi", "ephemeral-storage": "1Gi"})
    assert resource.pod_limits(p, skip_pod_level_resources=True) == decimals(
        {"cpu": "1100m", "memory": "1025Mi", "ephemeral-storage": "1Gi"})


def test_the_pod_level_default_follows_the_gate():
    p = pod([ctr(cpu("1"))], pod_resources={"requests": {"cpu": "3"}})
    assert resource.pod_requests(p) == decimals(cpu("3"))
    with features.set_feature_gate_during_test(features.DEFAULT_FEATURE_GATE, "PodLevelResources", False):
        assert resource.pod_requests(p) == decimals(cpu("1"))


def test_container_fn_sees_each_init_containers_need():
    # AggregateContainerRequests passes ContainerFn a sidecar's running sidecar total and a regular init
    # container's own amounts plus the sidecars started before it.
    p = pod([ctr(cpu("1"))], [side(cpu("1")), ctr(cpu("5"), name="init"), side(cpu("2"))])
    seen = []
    resource.pod_requests(p, container_fn=lambda amounts, kind: seen.append((dict(amounts), kind)))
    assert seen == [(decimals(cpu("1")), "containers"), (decimals(cpu("1")), "initContainers"),
                    (decimals(cpu("6")), "initContainers"), (decimals(cpu("3")), "initContainers")]


# ---- the same Pods under the default profile: v1.27's answers -------------------------------------------

V127_SIDECAR = {"restartable init container": "1", "multiple restartable init containers": "5",
                "multiple restartable and regular init containers": "5", "restartable-init, init and regular": "200"}


@pytest.mark.parametrize("name, containers, inits, total", SIDECAR_CASES)
def test_v1_27_computes_sidecars_as_plain_init_containers(name, containers, inits, total):
    p = pod(containers, inits)
    with features.release_profile("1.27"):
        assert resource.pod_requests(p) == decimals(cpu(V127_SIDECAR[name]))
    assert resource.pod_requests(p) == decimals(cpu(total))


@pytest.mark.parametrize("name, pod_resources, containers, inits, skip, expected", POD_LEVEL_CASES)
def test_v1_27_ignores_pod_level_resources(name, pod_resources, containers, inits, skip, expected):
    p = pod(containers, inits, pod_resources=pod_resources)
    with features.release_profile("1.27"):
        assert resource.pod_requests(p) == resource.pod_requests(p, skip_pod_level_resources=True)
        assert resource.pod_limits(p) == resource.pod_limits(p, skip_pod_level_resources=True)
        assert not features.DEFAULT_FEATURE_GATE.enabled("PodLevelResources")


def test_an_unsupported_pod_level_resource_beside_a_supported_one_is_ignored():
    # Not an upstream row: PodRequests copies only IsSupportedPodLevelResource names from spec.resources.
    p = pod([ctr({"cpu": "100m", "ephemeral-storage": "2Gi"})],
            pod_resources={"requests": {"cpu": "1", "ephemeral-storage": "1Gi"}, "limits": {"ephemeral-storage": "3Gi"}})
    assert resource.pod_requests(p) == decimals({"cpu": "1", "ephemeral-storage": "2Gi"})
    assert resource.pod_limits(p) == {}
