# %% [markdown]
# # Lab 02: admission — why a Pod the scheduler placed can still be rejected
#
# Before the kubelet starts a Pod, its predicate admit handler re-runs the scheduler's basic
# checks against the node and the Pods already on it, and refuses the Pod at the first failure.
# In this lab you write those checks yourself, as Kubernetes v1.27 applies them, and check your
# answers against the cases in upstream's own unit tests; the last exercise computes the request
# as the current release, v1.36, does.
#
# **You will be able to**
#
# 1. compute a Pod's effective request, init containers and overhead included;
# 2. decide whether it fits on a node next to the running Pods, and list what is short with the
#    numbers the kubelet reports;
# 3. match a node against required node-affinity terms, operators and all;
# 4. find which check rejects a Pod, in the kubelet's order;
# 5. write exactly what the kubelet writes for the Pod: status and event;
# 6. compute the request as v1.36 does, with sidecar containers and pod-level resources.
#
# **How the exercises work.** Each exercise is a function for you to write, followed by a check
# cell. The check runs your function on cases whose answers come from the upstream Go code (the
# last column names the upstream test or rule) and prints a table: every case passed, or the
# first failing input with what was expected and what your function returned. Until you write
# the function, the check says "not done yet".
#
# The upstream code for this lab: `pkg/scheduler/framework/plugins/noderesources/fit.go`
# (`computePodResourceRequest`, `fitsRequest`), `k8s.io/component-helpers/scheduling/corev1/nodeaffinity`,
# `pkg/kubelet/lifecycle/predicate.go` (`predicateAdmitHandler.Admit`, `generalFilter`) and
# `pkg/kubelet/kubelet.go` (`rejectPod`). Chapter 2 of the course links them all.

# %%
from kubernetes.client import ApiClient
from kubernetes.utils import parse_quantity

from mini_kubelet import api
from mini_kubelet.labs import case, check, course_path
from mini_kubelet.scheduler import is_scalar_resource_name

# %% [markdown]
# ## Pods and nodes for the exercises
#
# `c(...)` writes one container as a manifest dict: its requests, and optionally host ports as
# `"PROTOCOL/hostIP/port"` strings, the notation of upstream's port tests. `pod(...)` and
# `node(...)` turn them into the client's `V1Pod` and `V1Node` through `api.pod_from_manifest`
# and `api.node_from_manifest`. Amounts in upstream's tests are tiny (`cpu: 10m`, `memory: 20`
# bytes); the helpers take them as written.
#
# `as_dict(obj)` turns a client object back into the camelCase dict of the manifest, which is
# handy for the affinity terms: `as_dict(pod.spec.affinity)`.

# %%
def c(requests: dict | None = None, ports: tuple = ()) -> dict:
    """A container manifest with these requests and host ports ("TCP/0.0.0.0/80")."""
    container = {"name": "c", "image": "app", "resources": {"requests": dict(requests or {})}}
    container["ports"] = []
    for text in ports:
        protocol, host_ip, port = text.split("/")
        container["ports"].append({"containerPort": int(port), "hostPort": int(port),
                                   "protocol": protocol, "hostIP": host_ip})
    return container


def pod(name: str, *containers: dict, init: tuple = (), labels: dict | None = None,
        annotations: dict | None = None, **spec):
    """A V1Pod with these app (and init) containers; spec adds fields such as overhead, nodeName."""
    manifest = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels or {},
                             "annotations": annotations or {}},
                "spec": {"containers": [{**c_, "name": f"app-{i}"} for i, c_ in enumerate(containers or (c(),))],
                         "initContainers": [{**c_, "name": f"init-{i}"} for i, c_ in enumerate(init)],
                         **spec}}
    return api.pod_from_manifest(manifest)


def node(name: str = "machine1", allocatable: dict | None = None, labels: dict | None = None, taints: tuple = ()):
    """A V1Node with this allocatable, labels and taints ("key=value:Effect" or "key:Effect")."""
    taint_list = []
    for text in taints:
        key_value, effect = text.rsplit(":", 1)
        key, _, value = key_value.partition("=")
        taint_list.append({"key": key, "value": value, "effect": effect})
    return api.node_from_manifest({"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": name, "labels": labels or {}},
                                   "spec": {"taints": taint_list},
                                   "status": {"allocatable": {k: str(v) for k, v in (allocatable or {}).items()}}})


def as_dict(obj) -> dict:
    """The client object as the camelCase dict of its manifest (None stays None)."""
    return ApiClient().sanitize_for_serialization(obj)


class Pods(list):
    """A list of V1Pods that the check tables show by name: [<Pod a>, <Pod b>]."""

    def __repr__(self) -> str:
        return "[" + ", ".join(f"<Pod {p.metadata.name}>" for p in self) + "]"


def load(relative: str) -> list:
    """The Pods or Node of a course example, e.g. load("examples/nodes/small-worker.yaml")."""
    return api.load_manifests(course_path(relative))


example = pod("example", c({"cpu": "100m", "memory": "128Mi"}), init=(c({"cpu": "400m"}),),
              overhead={"cpu": "250m"})
print(example.spec.containers[0].resources.requests, example.spec.init_containers[0].resources.requests,
      example.spec.overhead)

# %% [markdown]
# ## Exercise 1: the Pod's effective request
#
# `computePodResourceRequest` in `fit.go` (through `PodRequests` in `pkg/api/v1/resource/helpers.go`)
# computes what a Pod asks of a node:
#
# 1. Add up the **app containers'** requests, per resource.
# 2. For each **init container**, raise each resource to that container's request if it is
#    larger (per resource, independently): init containers run one at a time, before the apps.
# 3. Add every entry of **`spec.overhead`**.
# 4. Turn each amount into an integer, **rounding up**: `cpu` in millicores
#    (`api.milli_value`), everything else in whole units (`api.value`; memory in bytes).
#
# Write `pod_request(pod)` returning a dict from resource name to that integer, with an entry
# for every resource named in any container's requests or in the overhead (and nothing else).
# Limits are never read, and no defaults are added.

# %%
def pod_request(pod) -> dict:
    """The Pod's effective request per resource: app sum, raised to each init container, plus overhead."""
    # BEGIN SOLUTION
    total = {}
    for container in pod.spec.containers:
        for name, amount in ((container.resources.requests if container.resources else None) or {}).items():
            total[name] = total.get(name, 0) + parse_quantity(amount)
    for container in pod.spec.init_containers or []:
        for name, amount in ((container.resources.requests if container.resources else None) or {}).items():
            total[name] = max(total.get(name, 0), parse_quantity(amount))
    for name, amount in (pod.spec.overhead or {}).items():
        total[name] = total.get(name, 0) + parse_quantity(amount)
    return {name: api.milli_value(amount) if name == "cpu" else api.value(amount) for name, amount in total.items()}
    # END SOLUTION


# %%
aaa, hp = "example.com/aaa", "hugepages-2Mi"
check("Exercise 1: the Pod's effective request", pod_request, [
    case(pod("empty"), expected={}, note="TestEnoughRequests: no resources requested"),
    case(pod("app-only", c({"cpu": "1m", "memory": "1"})), expected={"cpu": 1, "memory": 1},
         note="TestEnoughRequests: both resources fit"),
    case(pod("init-cpu", c({"cpu": "1m", "memory": "1"}), init=(c({"cpu": "3m", "memory": "1"}),)),
         expected={"cpu": 3, "memory": 1}, note="TestEnoughRequests: fails due to init container cpu"),
    case(pod("highest-init-memory", c({"cpu": "1m", "memory": "1"}),
             init=(c({"cpu": "1m", "memory": "3"}), c({"cpu": "1m", "memory": "2"}))),
         expected={"cpu": 1, "memory": 3}, note="TestEnoughRequests: highest init container memory"),
    case(pod("max-not-sum", c({"cpu": "1m", "memory": "1"}),
             init=(c({"cpu": "1m", "memory": "1"}), c({"cpu": "1m", "memory": "1"}))),
         expected={"cpu": 1, "memory": 1}, note="TestEnoughRequests: the max, not the sum"),
    case(pod("two-apps-extended", c({"cpu": "1m", "memory": "1", aaa: "3"}), c({"cpu": "1m", "memory": "1", aaa: "3"})),
         expected={"cpu": 2, "memory": 2, aaa: 6}, note="TestEnoughRequests: extended, multiple containers (R6)"),
    case(pod("init-extended", c(), init=(c({"cpu": "1m", "memory": "1", aaa: "6"}), c({"cpu": "1m", "memory": "1", aaa: "3"}))),
         expected={"cpu": 1, "memory": 1, aaa: 6}, note="TestEnoughRequests: multiple init containers (R6)"),
    case(pod("hugepages", c({"cpu": "1m", "memory": "1", hp: "3"}), c({"cpu": "1m", "memory": "1", hp: "3"})),
         expected={"cpu": 2, "memory": 2, hp: 6}, note="TestEnoughRequests: hugepages, multiple containers (R6)"),
    case(pod("overhead", c({"cpu": "1m", "memory": "1"}), overhead={"cpu": "1m", "memory": "15"}),
         expected={"cpu": 2, "memory": 16}, note="TestEnoughRequests: requests + overhead (memory R16)"),
    case(pod("overhead-fits", c({"cpu": "1m", "memory": "1"}), overhead={"cpu": "3m", "memory": "13"}),
         expected={"cpu": 4, "memory": 14}, note="TestEnoughRequests: resources + pod overhead fits"),
    case(load("examples/pods/admission-init-container.yaml")[0], expected={"cpu": 400, "memory": 268435456},
         note="chapter 2: max(100m, init 400m); max(256Mi, 128Mi)"),
    case(load("examples/pods/admission-overhead.yaml")[0], expected={"cpu": 450, "memory": 436207616},
         note="chapter 2: 200m + overhead 250m; 256Mi + 160Mi"),
    case(pod("rounding", c({"cpu": "0.1m", "memory": "1.5"})), expected={"cpu": 1, "memory": 2},
         note="Quantity.MilliValue / Value round up"),
])

# %% [markdown]
# ## Exercise 2: does it fit?
#
# `fitsRequest` in `fit.go` compares the request with what the node has left. The node's picture
# is its `status.allocatable`, and **used** is the sum of the running Pods' effective requests
# (your `pod_request` on each). Convert allocatable the same way: `cpu` with `api.milli_value`,
# the rest with `api.value`; `pods` is the number of Pods allowed. A missing entry counts as 0.
#
# **Which names count.** `cpu`, `memory` and `ephemeral-storage` always do. Any other name counts
# only if it is a **scalar resource**: an extended resource with a domain prefix
# (`example.com/aaa`), a huge page size (`hugepages-2Mi`), a name containing `kubernetes.io/`, or
# an `attachable-volumes-…` name. The helper `is_scalar_resource_name(name)` (upstream's
# `IsScalarResourceName`) decides. Every other name in a container's requests (`storage`, a bare
# `foo`, `pods`) is ignored, in the Pod's request and in *used* alike: upstream's
# `Resource.SetMaxResource` and `Resource.Add` in `framework/types.go` skip it.
#
# In this order, collect every resource that does not fit, as a tuple
# `(resource, requested, used, capacity)` where capacity is allocatable:
#
# 1. **`pods`**, always: fails if `len(running) + 1 > allocatable pods`, as
#    `("pods", 1, len(running), allowed)`.
# 2. Stop here if the Pod's `cpu`, `memory` and `ephemeral-storage` requests are all 0 **and** it
#    names no scalar resource at all. A scalar resource requested as 0 still counts as named, so
#    it prevents this stop.
# 3. **`cpu`**, **`memory`**, **`ephemeral-storage`**, in that order: fails if
#    `requested > allocatable - used`. So equal fits; a resource the Pod does not request is 0,
#    and a request of 0 fails only where *used* exceeds allocatable (an over-committed node).
# 4. Every scalar resource the Pod requests, in sorted name order, skipping those requested as 0:
#    the same rule. (Upstream visits them in Go's random map order; sorted makes the answer
#    repeatable.)
#
# Write `insufficient_resources(pod, node, running)` returning that list (empty: it fits).

# %%
def insufficient_resources(pod, node, running) -> list:
    """Every (resource, requested, used, capacity) that does not fit, in fitsRequest's order."""
    # BEGIN SOLUTION
    first = ["cpu", "memory", "ephemeral-storage"]

    def counted(request: dict) -> dict:
        return {name: amount for name, amount in request.items() if name in first or is_scalar_resource_name(name)}

    allocatable = {name: api.milli_value(amount) if name == "cpu" else api.value(amount)
                   for name, amount in (node.status.allocatable or {}).items()}
    used = {}
    for other in running:
        for name, amount in counted(pod_request(other)).items():
            used[name] = used.get(name, 0) + amount
    short = []
    if len(running) + 1 > allocatable.get("pods", 0):
        short.append(("pods", 1, len(running), allocatable.get("pods", 0)))
    request = counted(pod_request(pod))
    scalars = sorted(name for name in request if name not in first)
    if not any(request.get(name, 0) for name in first) and not scalars:
        return short
    for name in first + scalars:
        wanted = request.get(name, 0)
        if name in scalars and wanted == 0:
            continue
        if wanted > allocatable.get(name, 0) - used.get(name, 0):
            short.append((name, wanted, used.get(name, 0), allocatable.get(name, 0)))
    return short
    # END SOLUTION


# %%
# TestEnoughRequests' node: makeAllocatableResources(10, 20, 32, 5, 20, 5).
machine = node(allocatable={"cpu": "10m", "memory": "20", "pods": 32, aaa: 5, "ephemeral-storage": 20, hp: 5})


def using(cpu_m: int, memory: int, extra: dict | None = None) -> list:
    """One running Pod requesting this much (cpu in millicores, memory in bytes, extra as given)."""
    return Pods([pod("existing", c({"cpu": f"{cpu_m}m", "memory": str(memory), **(extra or {})}))])


small_worker = load("examples/nodes/small-worker.yaml")[0]
running_on_small_worker = Pods(p for p in load("examples/pods/admission-running.yaml") if p.status.phase == "Running")
check("Exercise 2: does it fit?", insufficient_resources, [
    case(pod("empty"), machine, using(10, 20), expected=[], note="TestEnoughRequests: no resources requested"),
    case(pod("too-many", c({"cpu": "1m", "memory": "1"})), machine, using(10, 20),
         expected=[("cpu", 1, 10, 10), ("memory", 1, 20, 20)], note="TestEnoughRequests: too many resources fails"),
    case(pod("init-cpu", c({"cpu": "1m", "memory": "1"}), init=(c({"cpu": "3m", "memory": "1"}),)), machine,
         using(8, 19), expected=[("cpu", 3, 8, 10)], note="TestEnoughRequests: due to init container cpu"),
    case(pod("init-max", c({"cpu": "1m", "memory": "1"}), init=(c({"cpu": "1m", "memory": "1"}),)), machine,
         using(9, 19), expected=[], note="TestEnoughRequests: the max, not the sum"),
    case(pod("memory-fits", c({"cpu": "2m", "memory": "1"})), machine, using(9, 5),
         expected=[("cpu", 2, 9, 10)], note="TestEnoughRequests: one resource memory fits"),
    case(pod("equal", c({"cpu": "5m", "memory": "1"})), machine, using(5, 19), expected=[],
         note="TestEnoughRequests: equal edge case"),
    case(pod("equal-init", c({"cpu": "4m", "memory": "1"}), init=(c({"cpu": "5m", "memory": "1"}),)), machine,
         using(5, 19), expected=[], note="TestEnoughRequests: equal edge case for init container"),
    case(pod("extended-capacity", c({"cpu": "1m", "memory": "1", aaa: "10"})), machine, using(0, 0),
         expected=[(aaa, 10, 0, 5)], note="TestEnoughRequests: extended resource capacity enforced"),
    case(pod("extended-allocatable", c({"cpu": "1m", "memory": "1", aaa: "1"})), machine, using(0, 0, {aaa: "5"}),
         expected=[(aaa, 1, 5, 5)], note="TestEnoughRequests: extended resource allocatable enforced"),
    case(pod("unknown", c({"cpu": "1m", "memory": "1", "example.com/bbb": "1"})), machine, using(0, 0),
         expected=[("example.com/bbb", 1, 0, 0)], note="TestEnoughRequests: unknown resource"),
    case(pod("hugepages", c({"cpu": "1m", "memory": "1", hp: "10"})), machine, using(0, 0),
         expected=[(hp, 10, 0, 5)], note="TestEnoughRequests: hugepages capacity enforced"),
    case(pod("kubernetes-io", c({"cpu": "1m", "memory": "1", "kubernetes.io/something": "10"})), machine,
         using(0, 0), expected=[("kubernetes.io/something", 10, 0, 0)],
         note="TestEnoughRequests: kubernetes.io resource capacity enforced"),
    case(pod("not-scalar", c({"storage": "1", "foo": "2"})), machine, using(12, 5), expected=[],
         note="types.go SetMaxResource: storage and foo are not scalar, so the early stop applies"),
    case(pod("zero-scalar", c({aaa: "0"})), machine, using(12, 5), expected=[("cpu", 0, 12, 10)],
         note="fitsRequest: a scalar named with 0 prevents the early stop; 0 > 10 - 12"),
    case(pod("overhead", c({"cpu": "1m", "memory": "1"}), overhead={"cpu": "1m", "memory": "15"}), machine,
         using(5, 5), expected=[("memory", 16, 5, 20)], note="TestEnoughRequests: requests + overhead"),
    case(pod("zero-extended", c({"cpu": "1m", "memory": "1", aaa: "0"})), machine, using(0, 0, {aaa: "6"}),
         expected=[], note="TestEnoughRequests: extended request with quantity zero"),
    case(pod("storage", c({"ephemeral-storage": "25"})), machine, using(2, 2),
         expected=[("ephemeral-storage", 25, 0, 20)], note="TestStorageRequests: ephemeral 25 > 20"),
    case(pod("one-slot", c({"cpu": "5m", "memory": "1"})), node(allocatable={"cpu": "10m", "memory": "20", "pods": 1}),
         using(5, 19), expected=[("pods", 1, 1, 1)], note="TestNotEnoughRequests: the pod count first"),
    case(pod("no-pods-entry"), node(allocatable={"cpu": "10m", "memory": "20"}), Pods(),
         expected=[("pods", 1, 0, 0)], note="fitsRequest: no allocatable pods allows none"),
    case(load("examples/pods/admission-fits.yaml")[0], small_worker, running_on_small_worker, expected=[],
         note="chapter 2: 230m asked, 1930 - 1700 = 230 free"),
    case(load("examples/pods/admission-out-of-memory.yaml")[0], small_worker, running_on_small_worker,
         expected=[("memory", 2147483648, 2017460224, 3405520896)], note="chapter 2: OutOfmemory"),
])

# %% [markdown]
# ## Exercise 3: required node-affinity terms
#
# `nodeaffinity.go` in `k8s.io/component-helpers` matches a Pod's
# `requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms` against a node. The terms
# arrive as manifest dicts:
# `[{"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}]`.
#
# - The node must match **at least one** term. A term with neither `matchExpressions` nor
#   `matchFields` (or empty lists) is dropped: it matches nothing.
# - Within a term, **every** requirement must hold. Operators on labels: `In` (label present,
#   value in `values`), `NotIn` (label absent, or value not in `values`), `Exists`,
#   `DoesNotExist`, `Gt` / `Lt` (label present, and both it and the single value parse as
#   integers, compared strictly).
# - A requirement that is **invalid** makes its whole term fail: an unknown operator; `In` /
#   `NotIn` without values; `Exists` / `DoesNotExist` with values; `Gt` / `Lt` without exactly
#   one integer value; a key that is not a valid label key (an optional DNS-subdomain prefix and
#   `/`, then a name of 1 to 63 letters, digits, `-`, `_`, `.`, starting and ending with a letter
#   or digit; the helper `valid_label_key` checks that); or a value that is not a valid label
#   value (empty, or up to 63 characters of the same kind; the helper `valid_label_value`).
# - `matchFields` requirements compare the field `metadata.name` (any other key: the empty
#   string) with `In` / `NotIn` and **exactly one** value (else invalid). If the node has no
#   name, `matchFields` is ignored.
#
# Write `matches_node_selector_terms(terms, labels, name)`: `labels` is the node's label dict,
# `name` its name.

# %%
import re

_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def valid_label_value(value: str) -> bool:
    """A valid label value: empty, or up to 63 of [A-Za-z0-9-_.], alphanumeric at both ends."""
    return len(value) <= 63 and bool(_LABEL_VALUE.fullmatch(value))


def valid_label_key(key: str) -> bool:
    """A valid label key: [DNS subdomain prefix "/"] name, the name a non-empty valid label value."""
    prefix, slash, name = key.rpartition("/")
    if slash and not (0 < len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return name != "" and valid_label_value(name)


def matches_node_selector_terms(terms: list, labels: dict, name: str) -> bool:
    """The node matches at least one non-empty, valid term (terms ORed, requirements ANDed)."""
    # BEGIN SOLUTION
    def integer(text):
        return int(text) if re.fullmatch(r"[+-]?[0-9]+", text or "") else None

    def expression_ok(e) -> bool | None:  # None: invalid
        key, op, values = e.get("key", ""), e.get("operator"), e.get("values") or []
        if not valid_label_key(key) or not all(valid_label_value(v) for v in values):
            return None
        if op in ("In", "NotIn"):
            if not values:
                return None
            inside = key in labels and labels[key] in values
            return inside if op == "In" else not inside
        if op in ("Exists", "DoesNotExist"):
            if values:
                return None
            return (key in labels) == (op == "Exists")
        if op in ("Gt", "Lt"):
            if len(values) != 1 or integer(values[0]) is None:
                return None
            have = integer(labels.get(key)) if key in labels else None
            if have is None:
                return False
            return have > integer(values[0]) if op == "Gt" else have < integer(values[0])
        return None

    def term_ok(term) -> bool:
        results = [expression_ok(e) for e in term.get("matchExpressions") or []]
        fields = term.get("matchFields") or []
        if any(f.get("operator") not in ("In", "NotIn") or len(f.get("values") or []) != 1 for f in fields):
            return False
        if None in results or not all(results):
            return False
        if fields and name:
            for f in fields:
                value = name if f.get("key") == "metadata.name" else ""
                if (value == f["values"][0]) != (f["operator"] == "In"):
                    return False
        return True

    return any(term_ok(t) for t in terms if t.get("matchExpressions") or t.get("matchFields"))
    # END SOLUTION


# %%
def expr(key: str, operator: str, *values: str) -> dict:
    return {"key": key, "operator": operator, "values": list(values)}


check("Exercise 3: required node-affinity terms", matches_node_selector_terms, [
    case([{"matchExpressions": [expr("foo", "In", "bar", "value2")]}], {"foo": "bar"}, "n", expected=True,
         note="TestNodeAffinity: In matches"),
    case([{"matchExpressions": [expr("kernel-version", "Gt", "0204")]}], {"kernel-version": "0206"}, "n",
         expected=True, note="TestNodeAffinity: Gt matches"),
    case([{"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]}], {"mem-type": "DDR3"}, "n",
         expected=True, note="TestNodeAffinity: NotIn matches"),
    case([{"matchExpressions": [expr("GPU", "Exists")]}], {"GPU": "NVIDIA-GRID-K1"}, "n", expected=True,
         note="TestNodeAffinity: Exists matches"),
    case([{"matchExpressions": [expr("foo", "In", "value1", "value2")]}], {"foo": "bar"}, "n", expected=False,
         note="TestNodeAffinity: affinity not matching"),
    case([{"matchExpressions": []}], {"foo": "bar"}, "n", expected=False,
         note="TestNodeAffinity: empty MatchExpressions"),
    case([{"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}],
         {"GPU": "NVIDIA-GRID-K1"}, "n", expected=True, note="TestNodeAffinity: ANDed, match"),
    case([{"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}],
         {"GPU": "NVIDIA-GRID-K1"}, "n", expected=False, note="TestNodeAffinity: ANDed, no match"),
    case([{"matchExpressions": [expr("foo", "In", "bar", "value2")]},
          {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]}], {"foo": "bar"}, "n", expected=True,
         note="TestNodeAffinity: multiple terms ORed"),
    case([{"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]}], {"foo": "bar"}, "n",
         expected=False, note="TestNodeAffinity: invalid value in term"),
    case([{"matchFields": [expr("metadata.name", "In", "node1")]}], {}, "node1", expected=True,
         note="TestNodeAffinity: matchFields In matches"),
    case([{"matchFields": [expr("metadata.name", "In", "node1")]}], {}, "node2", expected=False,
         note="TestNodeAffinity: matchFields In does not match"),
    case([{"matchFields": [expr("metadata.name", "In", "node1")], "matchExpressions": [expr("foo", "In", "bar")]}],
         {"foo": "bar"}, "node2", expected=False, note="TestNodeAffinity: matchFields and matchExpressions ANDed"),
    case([{"matchFields": [expr("metadata.name", "In", "node1"), expr("metadata.name", "In", "node2")]},
          {"matchExpressions": [expr("foo", "In", "bar")]}], {"foo": "bar"}, "node2", expected=True,
         note="TestNodeAffinity: two terms, matchFields no, matchExpressions yes"),
    case([{"matchExpressions": [expr("foo", "Gt", "1", "2")]}, {"matchExpressions": [expr("foo", "Exists")]}],
         {"foo": "3"}, "n", expected=True, note="nodeaffinity: an invalid term fails alone"),
    case([{"matchExpressions": [expr("zone", "Oops", "a")]}], {"zone": "a"}, "n", expected=False,
         note="nodeaffinity: unknown operator"),
    case([{"matchExpressions": [expr("-zone", "Exists")]}, {"matchExpressions": [expr("zone", "In", "a")]}],
         {"-zone": "a", "zone": "b"}, "n", expected=False, note="labels.NewRequirement: an invalid key fails its term"),
    case([{"matchExpressions": [expr("example.com/zone", "In", "a")]}], {"example.com/zone": "a"}, "n",
         expected=True, note="labels.NewRequirement: a prefixed key is valid"),
    case([{"matchFields": [expr("metadata.name", "In", "node1")]}], {}, "", expected=True,
         note="nodeaffinity: no node name, matchFields ignored"),
    case([{"matchExpressions": [expr("topology.kubernetes.io/zone", "In", "eu-west-1b", "eu-west-1c")]}],
         small_worker.metadata.labels, "small-worker", expected=False, note="chapter 2: admission-node-affinity"),
])

# %% [markdown]
# ## Exercise 4: which check rejects the Pod?
#
# `predicateAdmitHandler.Admit` in `predicate.go` runs the general predicates and reports only
# the **first** failure, in this order (treat every Pod in `running` as active):
#
# 1. **resource fit**: your `insufficient_resources`; the first entry `(name, …)` gives
#    `"OutOf" + name`, e.g. `"OutOfcpu"`, `"OutOfpods"`. (Ignore extended resources the node
#    does not list; the cases here have none.)
# 2. **`"NodeAffinity"`**: every `spec.nodeSelector` label must be on the node with the same
#    value, and the required node-affinity terms, if any, must match (your exercise 3; get the
#    terms with `as_dict(pod.spec.affinity)`).
# 3. **`"NodeName"`**: `spec.nodeName` set and different from the node's name.
# 4. **`"NodePorts"`**: a host port of the Pod's app containers conflicts with one of the running
#    Pods' app containers. Only ports with `hostPort > 0`; an empty `hostIP` is `0.0.0.0`, an
#    empty protocol `TCP`. Same protocol and port conflict if either IP is `0.0.0.0` or both IPs
#    are equal.
# 5. **`"TaintToleration"`**: unless the Pod is static (annotation `kubernetes.io/config.source`
#    present and not `"api"`), a node taint with effect **`NoExecute`** that none of the Pod's
#    tolerations tolerates. A toleration tolerates a taint if its effect is empty or equal, its
#    key empty or equal, and then: operator `Exists` → yes; operator `Equal` or empty → the
#    values are equal; any other operator → no.
# 6. Only if 1–5 all pass: **`"PodOSSelectorNodeLabelDoesNotMatch"`** if the Pod's own
#    `metadata.labels` has `kubernetes.io/os` and it is not `"linux"` (the kubelet's OS here);
#    then **`"PodOSNotSupported"`** if `spec.os.name` is set and not `"linux"`.
#
# Write `rejection_reason(pod, node, running)` returning the reason, or `""` if admitted.

# %%
def rejection_reason(pod, node, running) -> str:
    """The reason of the first failed check in predicateAdmitHandler.Admit's order, or "" to admit."""
    # BEGIN SOLUTION
    short = insufficient_resources(pod, node, running)
    if short:
        return "OutOf" + short[0][0]
    labels = node.metadata.labels or {}
    affinity = (as_dict(pod.spec.affinity) or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if any(labels.get(k) != v for k, v in (pod.spec.node_selector or {}).items()) or (
            required is not None and not matches_node_selector_terms(required.get("nodeSelectorTerms") or [],
                                                                     labels, node.metadata.name)):
        return "NodeAffinity"
    if pod.spec.node_name and pod.spec.node_name != node.metadata.name:
        return "NodeName"

    def host_ports(p):
        return [(port.host_ip or "0.0.0.0", port.protocol or "TCP", port.host_port)
                for container in p.spec.containers for port in container.ports or [] if (port.host_port or 0) > 0]

    used = [port for other in running for port in host_ports(other)]
    for ip, protocol, number in host_ports(pod):
        if any(p == protocol and n == number and "0.0.0.0" in (ip, u_ip) or (u_ip, p, n) == (ip, protocol, number)
               for u_ip, p, n in used):
            return "NodePorts"
    source = (pod.metadata.annotations or {}).get("kubernetes.io/config.source")
    if source is None or source == "api":
        def tolerates(t, taint):
            if t.effect and t.effect != taint.effect or t.key and t.key != taint.key:
                return False
            if t.operator == "Exists":
                return True
            return t.operator in (None, "", "Equal") and (t.value or "") == (taint.value or "")

        for taint in (node.spec.taints if node.spec else None) or []:
            if taint.effect == "NoExecute" and not any(tolerates(t, taint) for t in pod.spec.tolerations or []):
                return "TaintToleration"
    if (pod.metadata.labels or {}).get("kubernetes.io/os", "linux") != "linux":
        return "PodOSSelectorNodeLabelDoesNotMatch"
    if pod.spec.os is not None and pod.spec.os.name != "linux":
        return "PodOSNotSupported"
    return ""
    # END SOLUTION


# %%
general = node(allocatable={"cpu": "10m", "memory": "20", "pods": 32})  # TestGeneralPredicates' node
tolerate_foo_bar = [{"key": "foo"}, {"key": "bar"}]
check("Exercise 4: which check rejects the Pod?", rejection_reason, [
    case(pod("empty"), general, using(9, 19), expected="", note="TestGeneralPredicates: no resources/port/host"),
    case(pod("cpu-and-memory", c({"cpu": "8m", "memory": "10"})), general, using(5, 19), expected="OutOfcpu",
         note="TestGeneralPredicates: not enough cpu and memory (the first wins)"),
    case(pod("host", nodeName="machine2"), general, Pods(), expected="NodeName",
         note="TestGeneralPredicates: host not match"),
    case(pod("port", c(ports=("TCP/0.0.0.0/123",))), general, Pods([pod("holder", c(ports=("TCP/0.0.0.0/123",)))]),
         expected="NodePorts", note="TestGeneralPredicates: hostport conflict"),
    case(pod("tolerates", tolerations=tolerate_foo_bar), node(allocatable={"pods": 32}, taints=("foo:NoSchedule", "bar:NoExecute")),
         Pods(), expected="", note="TestGeneralPredicates: taint/toleration match"),
    case(pod("noschedule"), node(allocatable={"pods": 32}, taints=("foo:NoSchedule",)), Pods(), expected="",
         note="TestGeneralPredicates: NoSchedule taint not checked"),
    case(pod("noexecute"), node(allocatable={"pods": 32}, taints=("bar:NoExecute",)), Pods(), expected="TaintToleration",
         note="TestGeneralPredicates: NoExecute taint/toleration not match"),
    case(pod("prefer"), node(allocatable={"pods": 32}, taints=("baz:PreferNoSchedule",)), Pods(), expected="",
         note="TestGeneralPredicates: PreferNoSchedule not checked"),
    case(pod("static", annotations={"kubernetes.io/config.source": "file"}),
         node(allocatable={"pods": 32}, taints=("foo:NoSchedule", "bar:NoExecute")), Pods(), expected="",
         note="TestGeneralPredicates: static pods ignore taints"),
    case(pod("other-ip", c(ports=("TCP/127.0.0.1/8080",))), general, Pods([pod("h", c(ports=("TCP/127.0.0.2/8080",)))]),
         expected="", note="TestNodePorts: different host ip"),
    case(pod("other-protocol", c(ports=("UDP/127.0.0.1/8080",))), general, Pods([pod("h", c(ports=("TCP/127.0.0.1/8080",)))]),
         expected="", note="TestNodePorts: different protocol"),
    case(pod("all-ips", c(ports=("TCP/0.0.0.0/8001",))), general, Pods([pod("h", c(ports=("TCP/127.0.0.1/8001",)))]),
         expected="NodePorts", note="TestNodePorts: conflict due to 0.0.0.0 hostIP"),
    case(pod("pod-a", nodeSelector={"key": "A"}), node(allocatable={"pods": 110}, labels={"key": "B"}), Pods(),
         expected="NodeAffinity", note="TestHandleNodeSelector: podA"),
    case(pod("os-selector", nodeSelector={"kubernetes.io/os": "dummyOS"}),
         node(allocatable={"pods": 110}, labels={"kubernetes.io/os": "linux"}), Pods(), expected="NodeAffinity",
         note="TestHandleNodeSelectorBasedOnOS: a nodeSelector is node affinity"),
    case(pod("os-label", labels={"kubernetes.io/os": "dummyOS"}),
         node(allocatable={"pods": 110}, labels={"kubernetes.io/os": "dummyOS"}), Pods(),
         expected="PodOSSelectorNodeLabelDoesNotMatch", note="TestRejectPodAdmissionBasedOnOSSelector"),
    case(pod("os-label-linux", labels={"kubernetes.io/os": "linux"}),
         node(allocatable={"pods": 110}, labels={"kubernetes.io/os": "dummyOS"}), Pods(), expected="",
         note="TestRejectPodAdmissionBasedOnOSSelector: the underlying OS matches"),
    case(pod("os-field", os={"name": "dummyOS"}), node(allocatable={"pods": 110}), Pods(), expected="PodOSNotSupported",
         note="TestRejectPodAdmissionBasedOnOSField"),
    case(load("examples/pods/admission-two-failures.yaml")[0], small_worker, running_on_small_worker,
         expected="OutOfcpu", note="chapter 2: cpu and nodeSelector fail; resources come first"),
    case(load("examples/pods/admission-taint.yaml")[0], small_worker, running_on_small_worker,
         expected="TaintToleration", note="chapter 2: dedicated=batch:NoExecute"),
    case(load("examples/pods/admission-host-port.yaml")[0], small_worker, running_on_small_worker,
         expected="NodePorts", note="chapter 2: node-exporter holds 9100/TCP"),
])

# %% [markdown]
# ## Exercise 5: what the kubelet writes
#
# When a handler refuses a Pod, `rejectPod` in `pkg/kubelet/kubelet.go` writes an event and a
# status. The handler's **message** depends on the reason:
#
# - a resource: `Node didn't have enough resource: <name>, requested: <R>, used: <U>, capacity: <C>`
#   with the numbers of the first entry of your `insufficient_resources`;
# - `NodeAffinity`, `NodeName`, `NodePorts`, `TaintToleration`: `Predicate <reason> failed`;
# - `PodOSSelectorNodeLabelDoesNotMatch`: ``Failed to admit pod as the `kubernetes.io/os` label doesn't match node label``
#   (the backticks are in the message);
# - `PodOSNotSupported`: `Failed to admit pod as the OS field doesn't match node OS`.
#
# The kubelet then records a `Warning` event with the reason and that message, and sets the
# status to phase `Failed`, the reason, and the message with `Pod was rejected: ` in front.
#
# Write `kubelet_writes(pod, node, running)` returning, for a rejected Pod,
# `{"phase": "Failed", "reason": …, "message": "Pod was rejected: …", "event": ("Warning", reason, message)}`,
# and for an admitted Pod `{"phase": "Pending"}` (its containers have not started yet).

# %%
def kubelet_writes(pod, node, running) -> dict:
    """The status (and event) the kubelet writes for the Pod after admission."""
    # BEGIN SOLUTION
    reason = rejection_reason(pod, node, running)
    if not reason:
        return {"phase": "Pending"}
    if reason.startswith("OutOf"):
        name, requested, used, capacity = insufficient_resources(pod, node, running)[0]
        message = (f"Node didn't have enough resource: {name}, requested: {requested}, "
                   f"used: {used}, capacity: {capacity}")
    elif reason == "PodOSSelectorNodeLabelDoesNotMatch":
        message = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
    elif reason == "PodOSNotSupported":
        message = "Failed to admit pod as the OS field doesn't match node OS"
    else:
        message = f"Predicate {reason} failed"
    return {"phase": "Failed", "reason": reason, "message": "Pod was rejected: " + message,
            "event": ("Warning", reason, message)}
    # END SOLUTION


# %%
def rejected(reason: str, message: str) -> dict:
    return {"phase": "Failed", "reason": reason, "message": "Pod was rejected: " + message,
            "event": ("Warning", reason, message)}


mem_node = node("127.0.0.1", allocatable={"cpu": "10m", "memory": "100", "pods": 40})
old_pod = pod("oldpod", c({"memory": "90"}))
check("Exercise 5: what the kubelet writes", kubelet_writes, [
    case(pod("newpod", c({"memory": "90"})), mem_node, Pods([old_pod]),
         expected=rejected("OutOfmemory", "Node didn't have enough resource: memory, requested: 90, used: 90, capacity: 100"),
         note="TestHandleMemExceeded: the newer Pod"),
    case(old_pod, mem_node, Pods(), expected={"phase": "Pending"}, note="TestHandleMemExceeded: the older Pod"),
    case(pod("empty"), node(allocatable={"cpu": "10m", "memory": "20", "pods": 1}), using(10, 20),
         expected=rejected("OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"),
         note="TestNotEnoughRequests: an empty Pod"),
    case(pod("podA", nodeSelector={"key": "A"}), node("127.0.0.1", allocatable={"pods": 110}, labels={"key": "B"}), Pods(),
         expected=rejected("NodeAffinity", "Predicate NodeAffinity failed"), note="TestHandleNodeSelector"),
    case(pod("notfittingpod", nodeName="127.0.0.2"), node("127.0.0.1", allocatable={"pods": 110}), Pods(),
         expected=rejected("NodeName", "Predicate NodeName failed"), note="TestHandleHostNameConflicts"),
    case(pod("newpod", c(ports=("TCP/0.0.0.0/80",))), node("127.0.0.1", allocatable={"pods": 110}),
         Pods([pod("oldpod", c(ports=("TCP/0.0.0.0/80",)))]),
         expected=rejected("NodePorts", "Predicate NodePorts failed"), note="TestHandlePortConflicts"),
    case(pod("os-label", labels={"kubernetes.io/os": "dummyOS"}), node(allocatable={"pods": 110}), Pods(),
         expected=rejected("PodOSSelectorNodeLabelDoesNotMatch",
                           "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"),
         note="predicateAdmitHandler.Admit: the OS label message"),
    case(load("examples/pods/admission-out-of-cpu.yaml")[0], small_worker, running_on_small_worker,
         expected=rejected("OutOfcpu", "Node didn't have enough resource: cpu, requested: 500, used: 1700, capacity: 1930"),
         note="chapter 2: admission-out-of-cpu"),
])

# %% [markdown]
# ## Exercise 6: the effective request in v1.36
#
# *The current release.* Exercise 1 is v1.27's rule. Two features added since then change the
# request of some Pods in v1.36, the current release:
#
# - **Sidecar containers** (KEP-753: alpha in v1.28 with kubernetes/kubernetes#116429, on by
#   default from v1.29, GA in v1.33). An init container with `restartPolicy: Always` is a
#   sidecar. It starts in its place among the init containers but does not exit: it keeps
#   running beside every init container after it and, later, beside the app containers. So the
#   Pod needs the most it ever runs at once, phase by phase:
#   1. **the steady state**: the app containers and **all** the sidecars, added up;
#   2. **each regular init container**: its own request plus the sidecars listed **before** it
#      (they have started already; the ones after it have not).
#
#   The request of each resource is the largest over these phases, overhead added as before. A
#   Pod without sidecars has only the steady state and the init containers, alone: Exercise 1.
# - **Pod-level resources** (KEP-2837: alpha in v1.32 with kubernetes/kubernetes#128407, beta
#   and on by default from v1.34). A Pod may set `spec.resources.requests` itself. For `cpu`,
#   `memory` and `hugepages-<size>` that amount **replaces** what the containers add up to, with
#   the overhead's entry for it still added; any other name there is ignored, and a resource the
#   Pod level leaves out still comes from the containers.
#
# No need to redo Exercise 1's arithmetic: `side_by_side(pod, containers)` below makes a copy of
# the Pod that runs just these containers, together, as its app containers (no init containers,
# the overhead kept), and your `pod_request` of that copy is the request of one phase.
#
# Write `pod_request_v136(pod)` returning a dict like `pod_request`'s. In the cases, `sidecar(...)`
# writes an init container with `restartPolicy: Always`, and `resources={"requests": {...}}` sets
# the Pod-level requests.

# %%
def side_by_side(pod, containers):
    """A copy of the Pod whose app containers are these, running together, with no init containers."""
    copy = api.deep_copy(pod)
    copy.spec.containers, copy.spec.init_containers = list(containers), []
    return copy


def sidecar(requests: dict | None = None) -> dict:
    """An init container manifest that is a sidecar: restartPolicy Always."""
    return {**c(requests), "restartPolicy": "Always"}


# %%
def pod_request_v136(pod) -> dict:
    """The Pod's effective request in v1.36: sidecars run beside what follows them; pod-level amounts win."""
    # BEGIN SOLUTION
    inits = pod.spec.init_containers or []
    sidecars = [container for container in inits if container.restart_policy == "Always"]
    total = pod_request(side_by_side(pod, pod.spec.containers + sidecars))
    started = []
    for container in inits:
        if container.restart_policy == "Always":
            started.append(container)
            continue
        for name, amount in pod_request(side_by_side(pod, started + [container])).items():
            total[name] = max(total.get(name, 0), amount)
    level = (pod.spec.resources.requests if pod.spec.resources else None) or {}
    overhead = pod.spec.overhead or {}
    for name, amount in level.items():
        if name in ("cpu", "memory") or name.startswith("hugepages-"):
            exact = parse_quantity(amount) + parse_quantity(overhead.get(name, "0"))
            total[name] = api.milli_value(exact) if name == "cpu" else api.value(exact)
    return total
    # END SOLUTION


# %%
mi = 1024 * 1024
small = {"memory": "3Mi", "cpu": "2m"}  # the app container most of TestPodLevelResourceRequests uses
check("Exercise 6: the effective request in v1.36", pod_request_v136, [
    case(pod("restartable", c({"cpu": "1"}), init=(sidecar({"cpu": "1"}),)), expected={"cpu": 2000},
         note="TestPodResourceRequests: restartable init container"),
    case(pod("sidecars", c({"cpu": "1"}),
             init=(c({"cpu": "5"}), sidecar({"cpu": "1"}), sidecar({"cpu": "2"}), sidecar({"cpu": "3"}))),
         expected={"cpu": 7000}, note="TestPodResourceRequests: multiple restartable init containers"),
    case(pod("mixed", c({"cpu": "1"}), init=(c({"cpu": "5"}), sidecar({"cpu": "1"}), sidecar({"cpu": "2"}),
                                             c({"cpu": "5"}), sidecar({"cpu": "3"}))),
         expected={"cpu": 8000}, note="TestPodResourceRequests: multiple restartable and regular init containers"),
    case(pod("sidecar-then-init", c({"cpu": "100"}), init=(sidecar({"cpu": "10"}), c({"cpu": "200"}))),
         expected={"cpu": 210000}, note="TestPodResourceRequests: restartable-init, init and regular"),
    case(pod("larger-init", c({"cpu": "1"}), init=(c({"cpu": "4"}),)), expected={"cpu": 4000},
         note="TestPodResourceRequests: nil options, larger init container (no sidecar)"),
    case(pod("overhead", c({"cpu": "2"}), c({"cpu": "3"}), init=(c({"cpu": "2"}),), overhead={"cpu": "1", "memory": "1Gi"}),
         expected={"cpu": 6000, "memory": 1024 * mi}, note="TestPodResourceRequests: pod overhead included"),
    case(pod("with-sidecar", c(small), init=(sidecar({"memory": "5Mi", "cpu": "4m"}),)),
         expected={"memory": 8 * mi, "cpu": 6},
         note="TestPodLevelResourceRequests: container-level resources and sidecar container set"),
    case(pod("sidecar-and-init", c(small), init=(sidecar({"memory": "5Mi", "cpu": "4m"}), c({"memory": "6Mi", "cpu": "8m"}))),
         expected={"memory": 11 * mi, "cpu": 12},
         note="TestPodLevelResourceRequests: container-level resources, init and sidecar container set"),
    case(pod("pod-level-wins", c(small), init=(sidecar({"memory": "5Mi", "cpu": "4m"}), c({"memory": "6Mi", "cpu": "8m"})),
             resources={"requests": {"memory": "15Mi", "cpu": "18m"}}), expected={"memory": 15 * mi, "cpu": 18},
         note="TestPodLevelResourceRequests: pod-level resources, container-level resources, init and sidecar container set"),
    case(pod("pod-level-memory", c({"cpu": "2m"}), resources={"requests": {"memory": "2Mi"}}),
         expected={"cpu": 2, "memory": 2 * mi},
         note="TestPodLevelResourceRequests: pod level memory and container level cpu resources"),
    case(pod("pod-level-storage", c({"memory": "3Mi"}), resources={"requests": {"storage": "2Mi"}}),
         expected={"memory": 3 * mi}, note="TestPodLevelResourceRequests: pod level unsupported resources set at pod-level"),
    case(pod("storage-both", c({"storage": "3Mi"}), resources={"requests": {"storage": "2Mi"}}),
         expected={"storage": 3 * mi},
         note="TestPodLevelResourceRequests: pod level unsupported resources set at both pod-level and container-level"),
    case(pod("hugepages-between", c({"memory": "4Mi", "hugepages-1Gi": "1Gi"}),
             resources={"requests": {"cpu": "1", hp: "10Mi"}, "limits": {hp: "10Mi"}}),
         expected={"memory": 4 * mi, "hugepages-1Gi": 1024 * mi, "cpu": 1000, hp: 10 * mi},
         note="TestPodLevelResourceRequests: pod-level resources, container-level resources, "
              "hugepage sizes between pod-level and container-level"),
    case(pod("pod-level-and-overhead", c({"cpu": "1"}), resources={"requests": {"cpu": "500m"}}, overhead={"cpu": "100m"}),
         expected={"cpu": 600}, note="PodRequests (v0.36.0): the overhead goes on top of the pod-level amount"),
    case(load("examples/cluster/deployment.yaml")[0], expected={"cpu": 600, "memory": 640 * mi},
         note="deployment.yaml: mesh-proxy adds 200m, 128Mi (v1.27: 500m, 512Mi)"),
])

# %% [markdown]
# ## What you learned
#
# - A Pod's request is its app containers' sum, raised per resource to any larger init
#   container, plus `spec.overhead`, rounded up to millicores and bytes; limits play no part.
# - It fits if `requested ≤ allocatable − used` for every resource, where *used* is what the
#   running Pods request; the Pod count comes first, then cpu, memory, ephemeral storage, then
#   other resources.
# - Required node affinity is ORed terms of ANDed requirements; an empty or invalid term
#   matches nothing.
# - The kubelet reports only the first failure: resources, `NodeAffinity`, `NodeName`,
#   `NodePorts`, `TaintToleration` (only `NoExecute`, never for static Pods), then the OS checks.
# - A rejected Pod gets a Warning event and a `Failed` status whose message starts with
#   `Pod was rejected: `.
# - In v1.36 a sidecar (an init container with `restartPolicy: Always`) keeps running, so it adds
#   to the app containers' sum and to every init container after it; and a Pod-level
#   `spec.resources.requests` replaces the containers' cpu, memory and huge pages, overhead still
#   on top.
#
# `mini_kubelet`'s `scheduler`, `lifecycle` and `kubelet` modules implement these same rules with
# the upstream names, and `mini-kubelet admit POD.yaml --node NODE.yaml --running PODS.yaml`
# runs them on your own manifests (`--kubernetes-version 1.36` for the current release's rules).
