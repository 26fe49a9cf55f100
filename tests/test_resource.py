"""Chapter 3: a Pod's effective requests and limits, and the requests-from-limits defaulting.

Tables ported from pkg/api/v1/resource/helpers_test.go, read at ashierj/superdemo@c1cf94e9
(a Kubernetes copy from around 1.28/1.29). Cases that need later features are adapted to v1.27
and say so.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubernetes.client import V1EphemeralContainer, V1ResourceRequirements

from mini_kubelet import api, resource

pytestmark = pytest.mark.ch3


def make_pod(containers, init_containers=(), overhead=None, status=None):
    """A pod whose containers have the given resources ({"requests": {...}, "limits": {...}} or {})."""
    spec = {
        "containers": [{"name": f"c{i}", "image": "app", "resources": r} for i, r in enumerate(containers)],
        "initContainers": [{"name": f"i{i}", "image": "app", "resources": r} for i, r in enumerate(init_containers)],
    }
    if overhead is not None:
        spec["overhead"] = overhead
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    if status is not None:
        doc["status"] = status
    return api.pod_from_manifest(doc)


def get_pod(cpu_request="", cpu_limit="", memory_request="", memory_limit="", cpu_overhead="", memory_overhead=""):
    """Upstream's getPod: one app and one init container with identical resources, plus overhead."""
    requests = {k: v for k, v in (("cpu", cpu_request), ("memory", memory_request)) if v}
    limits = {k: v for k, v in (("cpu", cpu_limit), ("memory", memory_limit)) if v}
    overhead = {k: v for k, v in (("cpu", cpu_overhead), ("memory", memory_overhead)) if v}
    r = {"requests": requests, "limits": limits}
    return make_pod([r], [r], overhead=overhead)


def decimals(resource_list):
    return {name: api.parse_quantity(text) for name, text in resource_list.items()}


# pkg/api/v1/resource/helpers_test.go TestGetResourceRequest
@pytest.mark.parametrize("pod_args, name, expected", [
    ({"cpu_request": "9"}, "cpu", 9000),
    ({"memory_request": "90Mi"}, "memory", 94371840),
    ({"cpu_overhead": "5", "memory_overhead": "5"}, "cpu", 0),  # just overhead: not added to a zero total
    ({"memory_overhead": "5"}, "memory", 0),
    ({"cpu_request": "2", "cpu_overhead": "5", "memory_overhead": "5"}, "cpu", 7000),
    ({"cpu_request": "2", "memory_request": "1024", "cpu_overhead": "5", "memory_overhead": "5"}, "memory", 1029),
])
def test_get_resource_request(pod_args, name, expected):
    assert resource.get_resource_request(get_pod(**pod_args), name) == expected


def test_get_resource_request_counts_one_pod():
    assert resource.get_resource_request(get_pod(), "pods") == 1


# pkg/api/v1/resource/helpers_test.go TestPodRequestsAndLimits (default options: overhead included)
@pytest.mark.parametrize("name, pod_args, requests, limits", [
    ("just-limit-no-overhead", {"cpu_limit": "9"}, {}, {"cpu": "9"}),
    ("just-overhead", {"cpu_overhead": "5", "memory_overhead": "5"}, {"cpu": "5", "memory": "5"}, {}),
    ("req-and-overhead", {"cpu_request": "1", "memory_request": "10", "cpu_overhead": "5", "memory_overhead": "5"},
     {"cpu": "6", "memory": "15"}, {}),
    ("all-req-lim-and-overhead", {"cpu_request": "1", "cpu_limit": "2", "memory_request": "10", "memory_limit": "12",
                                  "cpu_overhead": "5", "memory_overhead": "5"},
     {"cpu": "6", "memory": "15"}, {"cpu": "7", "memory": "17"}),
    ("req-some-lim-and-overhead", {"cpu_request": "1", "cpu_limit": "2", "memory_request": "10",
                                   "cpu_overhead": "5", "memory_overhead": "5"},
     {"cpu": "6", "memory": "15"}, {"cpu": "7"}),
])
def test_pod_requests_and_limits(name, pod_args, requests, limits):
    pod = get_pod(**pod_args)
    assert resource.pod_requests(pod) == decimals(requests)
    assert resource.pod_limits(pod) == decimals(limits)


TWO_CONTAINERS = [
    {"requests": {"cpu": "1", "memory": "5"}, "limits": {"cpu": "2", "memory": "10"}},
    {"requests": {"cpu": "4", "memory": "12"}, "limits": {"cpu": "8", "memory": "24"}},
]
INITS = [
    {"requests": {"cpu": "1", "memory": "5"}, "limits": {"cpu": "1", "memory": "5"}},
    {"requests": {"cpu": "40", "memory": "120"}, "limits": {"cpu": "80", "memory": "240"}},
]


# pkg/api/v1/resource/helpers_test.go TestPodRequestsAndLimitsWithoutOverhead (ExcludeOverhead)
@pytest.mark.parametrize("name, pod, requests, limits", [
    ("two container no overhead", make_pod(TWO_CONTAINERS), {"cpu": "5", "memory": "17"}, {"cpu": "10", "memory": "34"}),
    ("two container with overhead", make_pod(TWO_CONTAINERS, overhead={"cpu": "3", "memory": "8"}),
     {"cpu": "5", "memory": "17"}, {"cpu": "10", "memory": "34"}),
    ("massive init", make_pod(TWO_CONTAINERS, INITS, overhead={"cpu": "3", "memory": "8"}),
     {"cpu": "40", "memory": "120"}, {"cpu": "80", "memory": "240"}),
])
def test_pod_requests_and_limits_without_overhead(name, pod, requests, limits):
    assert resource.pod_requests(pod, exclude_overhead=True) == decimals(requests)
    assert resource.pod_limits(pod, exclude_overhead=True) == decimals(limits)


def req(cpu):
    return {"requests": {"cpu": cpu}}


def lim(cpu, memory=None):
    return {"limits": {"cpu": cpu, **({"memory": memory} if memory else {})}}


def sidecar(resources):
    return {**resources, "restartPolicy": "Always"}


# pkg/api/v1/resource/helpers_test.go TestPodResourceRequests. The sidecar cases (restartPolicy
# Always on an init container) are from 1.28+; v1.27 has no such field, so an init container is
# an init container and the plain max rule applies: upstream 2, 7, 8, 210 become 1, 5, 5, 200 here.
RESIZED_STATUS = {"containerStatuses": [{"name": "c0", "image": "app", "imageID": "", "ready": True, "restartCount": 0,
                                         "allocatedResources": {"cpu": "2"}}]}


@pytest.mark.parametrize("name, pod, exclude_overhead, expected", [
    ("nil options, larger init container", make_pod([req("1")], [req("4")]), False, {"cpu": "4"}),
    ("nil options, larger containers", make_pod([req("2"), req("3")], [req("2")]), False, {"cpu": "5"}),
    ("pod overhead excluded", make_pod([req("2"), req("3")], [req("2")], overhead={"cpu": "1"}), True, {"cpu": "5"}),
    ("pod overhead included", make_pod([req("2"), req("3")], [{**req("2"), **lim("2")}],
                                       overhead={"cpu": "1", "memory": "1Gi"}), False, {"cpu": "6", "memory": "1Gi"}),
    # The in-place resize gate is off in v1.27: the spec wins over status.allocatedResources.
    ("resized, infeasible, feature gate disabled",
     make_pod([req("4")], status={**RESIZED_STATUS, "resize": "Infeasible"}), False, {"cpu": "4"}),
    ("restartable init container (1.27: plain init)", make_pod([req("1")], [sidecar(req("1"))]), False, {"cpu": "1"}),
    ("multiple restartable init containers (1.27: plain init)",
     make_pod([req("1")], [req("5"), sidecar(req("1")), sidecar(req("2")), sidecar(req("3"))]), False, {"cpu": "5"}),
    ("multiple restartable and regular init containers (1.27: plain init)",
     make_pod([req("1")], [req("5"), sidecar(req("1")), sidecar(req("2")), req("5"), sidecar(req("3"))]), False,
     {"cpu": "5"}),
    ("restartable-init, init and regular (1.27: plain init)",
     make_pod([req("100")], [sidecar(req("10")), req("200")]), False, {"cpu": "200"}),
])
def test_pod_resource_requests(name, pod, exclude_overhead, expected):
    assert resource.pod_requests(pod, exclude_overhead=exclude_overhead) == decimals(expected)


# pkg/api/v1/resource/helpers_test.go TestPodResourceLimits (sidecar cases adapted as above:
# upstream 2, 7, 8, 210 become 1, 5, 5, 200 in v1.27)
@pytest.mark.parametrize("name, pod, exclude_overhead, expected", [
    ("nil options, larger init container", make_pod([lim("1")], [lim("4")]), False, {"cpu": "4"}),
    ("nil options, larger containers", make_pod([lim("2"), lim("3")], [lim("2")]), False, {"cpu": "5"}),
    ("pod overhead excluded", make_pod([lim("2"), lim("3")], [lim("2")], overhead={"cpu": "1"}), True, {"cpu": "5"}),
    # overhead is added only to limits that are set and non-zero: no memory limit appears
    ("pod overhead included", make_pod([lim("2"), lim("3")], [lim("2")], overhead={"cpu": "1", "memory": "1Gi"}),
     False, {"cpu": "6"}),
    ("no limited containers", make_pod([{}]), False, {}),
    ("one limited and one unlimited container", make_pod([lim("2", "2Gi"), {}]), False, {"cpu": "2", "memory": "2Gi"}),
    ("one limited and one unlimited init container", make_pod([lim("1", "1Gi")], [lim("2", "2Gi"), {}]), False,
     {"cpu": "2", "memory": "2Gi"}),
    ("restartable init container (1.27: plain init)", make_pod([lim("1")], [sidecar(lim("1"))]), False, {"cpu": "1"}),
    ("restartable-init, init and regular (1.27: plain init)",
     make_pod([lim("100")], [sidecar(lim("10")), lim("200")]), False, {"cpu": "200"}),
])
def test_pod_resource_limits(name, pod, exclude_overhead, expected):
    assert resource.pod_limits(pod, exclude_overhead=exclude_overhead) == decimals(expected)


# pkg/api/v1/resource/helpers.go maxResourceList sets a key when it is missing, so an init container's explicit "0"
# creates a zero entry that an app container without that key would not.
def test_zero_valued_init_key_creates_a_zero_entry():
    pod = make_pod([req("1")], [{"requests": {"cpu": "0", "memory": "0"}}])
    assert resource.pod_requests(pod) == {"cpu": Decimal(1), "memory": Decimal(0)}


def test_limits_overhead_skips_a_zero_limit():
    pod = make_pod([{"limits": {"cpu": "0", "memory": "1Gi"}}], overhead={"cpu": "1", "memory": "1Mi"})
    assert resource.pod_limits(pod) == decimals({"cpu": "0", "memory": "1025Mi"})


def test_container_fn_sees_every_container_raw():
    pod = make_pod([{"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}, {}], [{"limits": {"memory": "1Gi"}}],
                   overhead={"cpu": "1"})
    seen_requests, seen_limits = [], []
    resource.pod_requests(pod, container_fn=lambda r, kind: seen_requests.append((r, kind)))
    resource.pod_limits(pod, container_fn=lambda r, kind: seen_limits.append((r, kind)))
    assert seen_requests == [({"cpu": 1}, "containers"), ({}, "containers"), ({}, "initContainers")]
    assert seen_limits == [({"cpu": 2}, "containers"), ({}, "containers"), ({"memory": 1073741824}, "initContainers")]


# pkg/apis/core/v1/defaults.go SetDefaults_Pod: missing requests are copied from limits, for
# containers and init containers; an explicit request (even "0") is kept; the input is not changed.
def test_set_defaults_pod_copies_missing_requests_from_limits():
    pod = make_pod([{"limits": {"cpu": "1", "memory": "1Gi"}},
                    {"requests": {"cpu": "0"}, "limits": {"cpu": "2", "memory": "2Gi"}}, {}],
                   [{"limits": {"memory": "64Mi"}}])
    defaulted = resource.set_defaults_pod(pod)
    assert [c.resources.requests for c in defaulted.spec.containers] == [
        {"cpu": "1", "memory": "1Gi"}, {"cpu": "0", "memory": "2Gi"}, None]
    assert defaulted.spec.init_containers[0].resources.requests == {"memory": "64Mi"}
    assert pod.spec.containers[0].resources.requests is None


# Rows of pkg/apis/core/v1/defaults_test.go (read at kubernetes/kubernetes, a copy newer than v1.27; these two
# tests are the same in v1.27): each row's resources are given to one app container AND one init container, as
# upstream does, and both must come out with the expected requests and limits. Values compare as quantities
# (upstream's Cmp) and, where upstream checks String(), as text too.
DEFAULTS_TEST_ROWS = [
    # TestSetMinimumScalePod: 1n of memory is rounded up to 1m; the 2n cpu limit (and the request copied from it)
    # to 1m as well.
    ("TestSetMinimumScalePod", {"requests": {"memory": "1n"}, "limits": {"cpu": "2n"}},
     {"memory": "1m", "cpu": "1m"}, {"cpu": "1m"}),
    # TestSetDefaultRequestsPod: requests default to limits, and an explicit request of 0 is kept.
    ("TestSetDefaultRequestsPod/limits", {"requests": {"memory": "0"}, "limits": {"cpu": "100m", "memory": "1Gi"}},
     {"cpu": "100m", "memory": "0"}, {"cpu": "100m", "memory": "1Gi"}),
    # TestSetDefaultRequestsPod: nothing is defaulted when no limits are given.
    ("TestSetDefaultRequestsPod/no limits", {}, None, None),
]


@pytest.mark.parametrize("name, resources, requests, limits", DEFAULTS_TEST_ROWS, ids=[r[0] for r in DEFAULTS_TEST_ROWS])
def test_set_defaults_pod_upstream_rows(name, resources, requests, limits):
    defaulted = resource.set_defaults_pod(make_pod([resources], [resources]))
    for container in (defaulted.spec.containers[0], defaulted.spec.init_containers[0]):
        assert (container.resources.requests or None) == requests
        assert (container.resources.limits or None) == limits
        for name_, text in (requests or {}).items():
            assert api.parse_quantity(container.resources.requests[name_]) == api.parse_quantity(text)


# k8s.io/apimachinery quantity_test.go#TestQuantityRoundUp, the rows at scale -3 (the scale SetDefaults_ResourceList
# uses), then amounts that need rounding, each with the string Go prints afterwards (CanonicalizeBytes: decimal SI
# for a fraction, the written binary or exponent format when the rounded value can keep it).
@pytest.mark.parametrize("written, stored", [
    ("9.01", "9.01"), ("-9.01", "-9.01"),  # already whole milli-units: unchanged
    ("1n", "1m"), ("999999n", "1m"), ("1000001n", "2m"), ("1.5n", "1m"),
    ("0.0015", "2m"), ("0.9999", "1"), ("999.9999", "1k"), ("1000.0000001", "1000001m"),
    ("-1n", "-1m"),  # away from zero, as Go's RoundUp does
    ("1e-4", "1e-3"), ("1.0001Ki", "1024103m"), ("1023.9999999Ki", "1Mi"),
    ("100m", "100m"), ("1Gi", "1Gi"), ("0", "0"), (2, 2),
])
def test_set_defaults_resource_list_rounds_up_to_milli(written, stored):
    """pkg/apis/core/v1/defaults.go SetDefaults_ResourceList: every amount rounded up to a whole milli-unit."""
    resources = {"memory": written}
    resource.set_defaults_resource_list(resources)
    assert resources == {"memory": stored}
    assert api.parse_quantity(stored) * 1000 == int(api.parse_quantity(stored) * 1000)


def test_set_defaults_pod_rounds_overhead_and_ephemeral_containers():
    """SetObjectDefaults_Pod also rounds spec.overhead and each ephemeral container's resources."""
    pod = make_pod([{}], overhead={"memory": "1n"})
    pod.spec.ephemeral_containers = [V1EphemeralContainer(name="debug", resources=V1ResourceRequirements(
        limits={"cpu": "0.5m"}))]
    defaulted = resource.set_defaults_pod(pod)
    assert defaulted.spec.overhead == {"memory": "1m"}
    assert defaulted.spec.ephemeral_containers[0].resources.limits == {"cpu": "1m"}
    assert defaulted.spec.ephemeral_containers[0].resources.requests is None  # no requests-from-limits for them
    assert pod.spec.overhead == {"memory": "1n"}


def test_rounding_changes_what_the_kubelet_computes():
    """Three containers requesting 1n of CPU: 1 millicore as written (the sum rounded once), 3m once stored."""
    pod = make_pod([{"requests": {"cpu": "1n"}}] * 3)
    assert resource.get_resource_request(pod, "cpu") == 1
    assert resource.get_resource_request(resource.set_defaults_pod(pod), "cpu") == 3


QUANTITY = st.integers(min_value=0, max_value=10**6).map(lambda n: f"{n}m")
RESOURCES = st.fixed_dictionaries({}, optional={
    "requests": st.dictionaries(st.sampled_from(["cpu", "memory", "hugepages-2Mi"]), QUANTITY, max_size=3),
})


@given(st.lists(RESOURCES, min_size=1, max_size=4), st.lists(RESOURCES, max_size=3))
def test_pod_requests_are_at_least_every_container_and_the_app_sum(containers, inits):
    pod = make_pod(containers, inits)
    total = resource.pod_requests(pod)
    for r in containers + inits:
        for name, text in r.get("requests", {}).items():
            assert total[name] >= api.parse_quantity(text)
    for name in total:
        app_sum = sum((api.parse_quantity(r.get("requests", {}).get(name, "0")) for r in containers), Decimal(0))
        assert total[name] >= app_sum
