# %% [markdown]
# # Lab 00: manifests and quantities
#
# Every number the kubelet works with starts as a string in a manifest: `cpu: 250m`,
# `memory: 64Mi`. Before the kubelet can compare, sum or enforce anything, those strings become
# integers: CPU in **millicores**, memory and storage in **bytes**. This lab has you do that
# conversion exactly as the Kubernetes API machinery does, rounding included, and then add up a
# Pod's requests the way the API server leaves them after defaulting.
#
# **You will be able to**
#
# 1. turn a CPU quantity into millicores, rounding up as `Quantity.MilliValue` does;
# 2. turn a memory quantity into bytes, rounding up as `Quantity.Value` does;
# 3. apply the API server's defaulting of requests from limits to a container;
# 4. sum a Pod's container requests;
# 5. read a real Node and say how much the kubelet keeps back from Pods;
# 6. say which behaviour a release turns on, from its feature gates' versioned specs.
#
# **How the exercises work.** Each exercise is a function for you to write, followed by a check
# cell. The check runs your function on cases whose answers come from the upstream Go code and
# prints a table: every case passed, or the first failing input with what was expected and what
# your function returned. Until you write the function, the check says "not done yet".
#
# The upstream code for this lab is `k8s.io/apimachinery/pkg/api/resource` (the `Quantity` type)
# and `pkg/apis/core/v1/defaults.go` (`SetDefaults_Pod`); chapter 0 of the course links both.

# %%
import math
from decimal import Decimal

from kubernetes.utils import parse_quantity

from mini_kubelet import api
from mini_kubelet.labs import Raises, case, check, course_path

# %% [markdown]
# ## Reading a manifest
#
# `mini_kubelet.api.load_manifests` reads a YAML or JSON file, checks it, and returns the
# official Kubernetes client's models (`V1Pod`, `V1Node`). Resource amounts stay strings, as in
# the API: converting them is your job below.

# %%
web = api.load_manifests(course_path("examples/pods/web.yaml"))[0]
for container in web.spec.containers:
    print(container.name, container.resources.requests, container.resources.limits)

# %% [markdown]
# `kubernetes.utils.parse_quantity` turns a quantity string into an exact `Decimal`: no binary
# floating point, so `0.1` stays exactly one tenth.

# %%
for text in ["250m", "1", "0.5", "64Mi", "32M", "1e3"]:
    print(f"{text:>6} -> {parse_quantity(text)!r}")

# %% [markdown]
# ## Exercise 1: CPU in millicores
#
# The kubelet reads CPU as an integer number of millicores (thousandths of a CPU), through
# `Quantity.MilliValue()`. That method **rounds up**: a request of `0.1m`, or of `100u`
# (100 micro-CPUs), becomes 1 millicore, never 0.
#
# Write `cpu_millicores(quantity)` that returns the millicores of a CPU quantity string as an
# `int`, rounding up. `parse_quantity` does the parsing; you do the scaling and the rounding.

# %%
def cpu_millicores(quantity: str) -> int:
    """The quantity in millicores, rounded up like Quantity.MilliValue."""
    # BEGIN SOLUTION
    return math.ceil(parse_quantity(quantity) * 1000)
    # END SOLUTION


# %%
check("Exercise 1: CPU in millicores", cpu_millicores, [
    case("250m", expected=250),
    case("1", expected=1000),
    case("0.5", expected=500, note="a decimal CPU"),
    case("1.5", expected=1500),
    case("2k", expected=2_000_000, note="k is a thousand CPUs"),
    case("0.1m", expected=1, note="a fraction of a millicore rounds up"),
    case("100u", expected=1, note="100 micro-CPUs round up to 1m"),
    case("1n", expected=1, note="even one nano-CPU rounds up to 1m"),
    case("1e-3", expected=1, note="an exponent is a valid quantity"),
    case("0", expected=0),
])

# %% [markdown]
# ## Exercise 2: memory in bytes
#
# Memory, ephemeral storage and hugepages are read in bytes with `Quantity.Value()`, which also
# rounds up to a whole number. Mind the suffixes: `Mi` is 2<sup>20</sup> bytes, but `M` is
# 10<sup>6</sup>; and `m` is a *thousandth*, so `100m` of memory is a tenth of a byte (a classic
# typo for `100Mi`).
#
# Write `memory_bytes(quantity)` returning an `int`.

# %%
def memory_bytes(quantity: str) -> int:
    """The quantity as a whole number of bytes, rounded up like Quantity.Value."""
    # BEGIN SOLUTION
    return math.ceil(parse_quantity(quantity))
    # END SOLUTION


# %%
check("Exercise 2: memory in bytes", memory_bytes, [
    case("64Mi", expected=67_108_864),
    case("32M", expected=32_000_000, note="M is decimal: 10**6"),
    case("1Gi", expected=1_073_741_824),
    case("1.5Gi", expected=1_610_612_736),
    case("0.5Ki", expected=512),
    case("1e3", expected=1000),
    case("100m", expected=1, note="m is a thousandth: a tenth of a byte rounds up to 1"),
    case("129", expected=129),
])

# %% [markdown]
# ## Exercise 3: requests after defaulting
#
# When a Pod is created, the API server fills in defaults (`SetDefaults_Pod` in
# `pkg/apis/core/v1/defaults.go`). One of them matters for everything that follows: for each
# container (and each init container), **every resource that has a limit but no request gets a
# request equal to its limit**. A request that was written stays as it is. A container with a memory limit of
# `128Mi` and no request is therefore scheduled, admitted and classified as if it had asked for
# `128Mi`.
#
# Write `requests_after_defaulting(container)`, taking a client `V1Container` and returning its
# requests after defaulting, as a dict of resource name to quantity string (an empty dict when
# there are none).

# %%
def requests_after_defaulting(container) -> dict:
    """The container's requests with each missing one defaulted from its limit."""
    # BEGIN SOLUTION
    resources = container.resources
    requests = dict(resources.requests or {}) if resources else {}
    for name, limit in ((resources.limits or {}) if resources else {}).items():
        requests.setdefault(name, limit)
    return requests
    # END SOLUTION


# %%
def one_container(resources: dict):
    """A Pod with one container that has these resources, read through the client's models."""
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "app", "image": "app", "resources": resources}]}}
    return api.pod_from_manifest(manifest).spec.containers[0]


check("Exercise 3: requests after defaulting", requests_after_defaulting, [
    case(one_container({"limits": {"cpu": "1", "memory": "128Mi"}}),
         expected={"cpu": "1", "memory": "128Mi"}, note="limits only: requests copy them"),
    case(one_container({"requests": {"cpu": "250m"}, "limits": {"cpu": "1", "memory": "128Mi"}}),
         expected={"cpu": "250m", "memory": "128Mi"}, note="a written request is kept"),
    case(one_container({"requests": {"memory": "64Mi"}}),
         expected={"memory": "64Mi"}, note="no limits: nothing to copy"),
    case(one_container({}), expected={}, note="no resources at all"),
    case(web.spec.containers[1], expected={"cpu": "0.05", "memory": "32M"}),
])

# %% [markdown]
# ## Exercise 4: a Pod's requests
#
# The scheduler and the kubelet both need the total a Pod asks for. For a Pod with only app
# containers and no overhead, that total is the **sum of its containers' requests** after
# defaulting. (Init containers and Pod overhead change the rule; chapter 3 takes them on.)
#
# Write `pod_requests(pod)` that returns a dict with the Pod's total `cpu` in millicores and
# `memory` in bytes, both always present (0 when nothing asks for them). Use your functions from
# exercises 1 to 3: note that each container is converted, rounded up, and *then* summed.

# %%
def pod_requests(pod) -> dict:
    """The sum of the app containers' defaulted requests: cpu in millicores, memory in bytes."""
    # BEGIN SOLUTION
    total = {"cpu": 0, "memory": 0}
    for container in pod.spec.containers:
        requests = requests_after_defaulting(container)
        total["cpu"] += cpu_millicores(requests.get("cpu", "0"))
        total["memory"] += memory_bytes(requests.get("memory", "0"))
    return total
    # END SOLUTION


# %%
def pod_of(*containers: dict):
    """A Pod whose containers have these resources."""
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
        {"name": f"c{i}", "image": "app", "resources": resources} for i, resources in enumerate(containers)]}}
    return api.pod_from_manifest(manifest)


check("Exercise 4: a Pod's requests", pod_requests, [
    case(web, expected={"cpu": 300, "memory": 99_108_864}, note="examples/pods/web.yaml"),
    case(pod_of({"limits": {"cpu": "500m", "memory": "1Gi"}}, {"requests": {"cpu": "100m"}}),
         expected={"cpu": 600, "memory": 1_073_741_824}, note="the first container's requests default"),
    case(pod_of({}, {}), expected={"cpu": 0, "memory": 0}, note="best effort: nothing requested"),
    case(pod_of({"requests": {"cpu": "0.1m"}}, {"requests": {"cpu": "0.1m"}}),
         expected={"cpu": 2, "memory": 0}, note="each container rounds up before the sum"),
])

# %% [markdown]
# ## Exercise 5: what the node keeps back
#
# A Node reports two sets of figures. `status.capacity` is what the machine has;
# `status.allocatable` is what the kubelet offers to Pods once it has set aside `kube-reserved`,
# `system-reserved` and the hard eviction thresholds (`memory.available` for memory,
# `nodefs.available` for ephemeral storage). The difference is what the node keeps for itself
# (chapter 3 computes it from the kubelet's flags).
#
# Write `node_reserved(node)` that returns capacity minus allocatable for `cpu` (millicores) and
# `memory` (bytes), read from a client `V1Node`.

# %%
def node_reserved(node) -> dict:
    """Capacity minus allocatable, for cpu in millicores and memory in bytes."""
    # BEGIN SOLUTION
    capacity, allocatable = node.status.capacity, node.status.allocatable
    return {
        "cpu": cpu_millicores(capacity["cpu"]) - cpu_millicores(allocatable["cpu"]),
        "memory": memory_bytes(capacity["memory"]) - memory_bytes(allocatable["memory"]),
    }
    # END SOLUTION


# %%
worker = api.load_manifests(course_path("examples/nodes/node.yaml"))[0]


def node_with(capacity: dict, allocatable: dict):
    """A Node with these capacity and allocatable figures."""
    manifest = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                "status": {"capacity": capacity, "allocatable": allocatable}}
    return api.node_from_manifest(manifest)


check("Exercise 5: what the node keeps back", node_reserved, [
    case(worker, expected={"cpu": 70, "memory": 2_014_838_784}, note="examples/nodes/node.yaml"),
    case(node_with({"cpu": "4", "memory": "16Gi"}, {"cpu": "3800m", "memory": "15Gi"}),
         expected={"cpu": 200, "memory": 1_073_741_824}),
    case(node_with({"cpu": "2", "memory": "4Gi"}, {"cpu": "2", "memory": "4Gi"}),
         expected={"cpu": 0, "memory": 0}, note="nothing reserved"),
])

# %% [markdown]
# ## Exercise 6: which release turns a feature on
#
# *The current release.* The course reads v1.27, and your cluster probably runs something newer.
# Between the two, the kubelet's behaviour changes **gate by gate**. From v1.32 each feature gate
# in `pkg/features/kube_features.go` lists its specs, one for each release that changed it, each
# with a default and a stage (KEP-4330, versioned feature gates). The spec in force at a version is
# the newest one at or before that version; before the first one the feature does not exist
# (upstream calls that stage PreAlpha) and is off. Every `mini-kubelet` command's
# `--kubernetes-version` reads the gates this way.
#
# Write `spec_at(specs, release)` that takes a gate's specs, a list of
# `(version, default, stage)` tuples in any order, such as `("1.29", True, "beta")`, and a release
# such as `"1.36"`, and returns the `(default, stage)` in force then, or `(False, "prealpha")`
# before the first spec. Compare versions as numbers: `1.9` comes before `1.10`.

# %%
def spec_at(specs: list, release: str) -> tuple:
    """The (default, stage) of a gate at a release: the newest spec at or before it, else off."""
    # BEGIN SOLUTION
    def number(version: str) -> tuple:
        return tuple(int(part) for part in version.split("."))
    held = [s for s in specs if number(s[0]) <= number(release)]
    if not held:
        return (False, "prealpha")
    version, default, stage = max(held, key=lambda s: number(s[0]))
    return (default, stage)
    # END SOLUTION


# %%
# The table of component-base's featuregate/feature_gate_test.go#TestFeatureSpecAtEmulationVersion,
# then real gates as each release's kube_features.go has them.
test_feature = [("1.29", True, "GA"), ("1.28", False, "beta"), ("1.25", False, "alpha")]
sidecars = [("1.28", False, "alpha"), ("1.29", True, "beta"), ("1.33", True, "GA")]
pod_level = [("1.32", False, "alpha"), ("1.34", True, "beta")]
swap = [("1.27", False, "alpha"), ("1.28", False, "beta"), ("1.30", True, "beta"), ("1.34", True, "GA")]

check("Exercise 6: which release turns a feature on", spec_at, [
    case(test_feature, "1.30", expected=(True, "GA"), note="after the last spec"),
    case(test_feature, "1.29", expected=(True, "GA")),
    case(test_feature, "1.28", expected=(False, "beta")),
    case(test_feature, "1.27", expected=(False, "alpha"), note="between two specs: the older one"),
    case(test_feature, "1.24", expected=(False, "prealpha"), note="before the first spec"),
    case(sidecars, "1.27", expected=(False, "prealpha"), note="SidecarContainers: v1.27 has no sidecars"),
    case(sidecars, "1.29", expected=(True, "beta"), note="SidecarContainers: on by default from 1.29"),
    case(pod_level, "1.36", expected=(True, "beta"), note="PodLevelResources"),
    case(swap, "1.29", expected=(False, "beta"), note="NodeSwap: beta, yet off"),
    case([("1.9", False, "alpha"), ("1.10", True, "beta")], "1.10", expected=(True, "beta"),
         note="1.10 comes after 1.9"),
])

# %% [markdown]
# The same table drives the course's commands. Ask for the current release, and the answer
# names the gates that differ from v1.27's defaults:

# %%
from mini_kubelet import features

with features.release_profile("1.36") as gate:
    print(sorted(gate.differences()))

# %% [markdown]
# ## What you learned
#
# - Quantities are exact decimals; the kubelet reads CPU with `MilliValue()` and bytes with
#   `Value()`, and both round **up**.
# - `M` and `Mi` differ by about 5%, and `m` on memory is almost always a typo.
# - The API server copies limits into missing requests, so "limit only" means
#   "request = limit".
# - A Pod's request is a sum of per-container figures, each rounded first.
# - Allocatable is capacity less what the node keeps back.
# - A release is a set of feature-gate defaults: the spec in force at a version is the newest at
#   or before it, and a gate that does not exist yet is off.
#
# The chapters that follow build on these conversions: every figure in them is a millicore or a
# byte count made this way.
