"""The scheduler checks the kubelet reuses at admission: resource fit, node affinity, node name, host ports, taints.

Upstream: pkg/scheduler/framework/types.go (NodeInfo, Resource, HostPortInfo), plugins/noderesources/fit.go,
plugins/nodeports/node_ports.go, plugins/nodename/node_name.go, k8s.io/component-helpers/scheduling/corev1
(nodeaffinity, FindMatchingUntoleratedTaint), k8s.io/api/core/v1/toleration.go (ToleratesTaint) and
pkg/apis/core/v1/helper/helpers.go (resource-name classes).

Amounts are integers: cpu in millicores (MilliValue), everything else in whole units (Value), both rounded up.
"""

from __future__ import annotations

import operator
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from kubernetes.client import V1NodeSelector, V1Pod, V1Toleration

from . import api, features, resource
from .container import is_restartable_init_container

if TYPE_CHECKING:  # a Node's models load when a Node is read, not for every Pod
    from kubernetes.client import V1Node, V1Taint

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"
DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"

# --8<-- [start:plugin_names]
NODE_AFFINITY, NODE_AFFINITY_ERR_REASON = "NodeAffinity", "node(s) didn't match Pod's node affinity/selector"
NODE_NAME, NODE_NAME_ERR_REASON = "NodeName", "node(s) didn't match the requested node name"
NODE_PORTS, NODE_PORTS_ERR_REASON = "NodePorts", "node(s) didn't have free ports for the requested pod ports"
TAINT_TOLERATION, TAINT_TOLERATION_ERR_REASON = "TaintToleration", "node(s) had taints that the pod didn't tolerate"
# --8<-- [end:plugin_names]

_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_INT64 = re.compile(r"[+-]?[0-9]+")


def _is_qualified_name(name: str) -> bool:
    """apimachinery validation.IsQualifiedName: [prefix/]name, name <= 63 chars, prefix a DNS subdomain."""
    parts = name.split("/")
    if len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return False
    elif len(parts) != 1:
        return False
    return 0 < len(name) <= 63 and bool(_NAME.fullmatch(name))


def _is_valid_label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(_NAME.fullmatch(value)))


def _parse_int64(text: str) -> Optional[int]:
    """Go strconv.ParseInt(text, 10, 64), or None where Go returns an error."""
    if not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


# --8<-- [start:is_extended_resource_name]
def is_extended_resource_name(name: str) -> bool:
    """An extended resource: has a domain other than *kubernetes.io, and "requests.<name>" is a qualified name.

    Upstream: pkg/apis/core/v1/helper/helpers.go IsExtendedResourceName
    """
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.") and _is_qualified_name("requests." + name)
# --8<-- [end:is_extended_resource_name]


# --8<-- [start:is_scalar_resource_name]
def is_scalar_resource_name(name: str) -> bool:
    """Counted by the fit check as a plain number: extended, hugepages-*, *kubernetes.io/*, attachable-volumes-*.

    Upstream: pkg/scheduler/util/utils.go IsScalarResourceName
    """
    return (is_extended_resource_name(name) or name.startswith("hugepages-") or "kubernetes.io/" in name
            or name.startswith("attachable-volumes-"))
# --8<-- [end:is_scalar_resource_name]


def _to_resource(requests: resource.ResourceList, combine: Callable[[int, int], int], into: dict[str, int]) -> dict[str, int]:
    for name, quantity in requests.items():
        if name == CPU:
            into[CPU] = combine(into.get(CPU, 0), api.milli_value(quantity))
        elif name in (MEMORY, EPHEMERAL_STORAGE, PODS) or is_scalar_resource_name(name):
            into[name] = combine(into.get(name, 0), api.value(quantity))
    return into


# --8<-- [start:node_info]
@dataclass
class NodeInfo:
    """The node and the pods already on it, with their summed requests and the host ports they hold.

    Upstream: pkg/scheduler/framework/types.go NodeInfo
    """
    node: V1Node
    pods: list[V1Pod] = field(default_factory=list)
    requested: dict[str, int] = field(default_factory=dict)  # cpu milli, bytes, scalar units
    used_ports: set[tuple[str, str, int]] = field(default_factory=set)  # (host IP, protocol, host port)
    allocatable: dict[str, int] = field(default_factory=dict)  # "pods" is the allowed pod number


# --8<-- [start:new_node_info]
def new_node_info(node: V1Node, pods: list[V1Pod]) -> NodeInfo:
    """A NodeInfo for the node: each pod's requests added up, its host ports recorded, allocatable parsed.

    Upstream: pkg/scheduler/framework/types.go NewNodeInfo, NodeInfo.SetNode, calculateResource
    """
    info = _reused(node, pods)  # empty, or within node_info_reuse() the last one's sums if its pods come first
    for pod in pods[len(info.pods):]:
        info.pods.append(pod)
        _to_resource(resource.pod_requests(pod), operator.add, info.requested)  # Resource.Add
        info.requested.pop(PODS, None)  # Add puts a "pods" request in a field the fit never reads
        for ip, protocol, port in _container_ports(pod):
            if port > 0:
                info.used_ports.add(_sanitize(ip, protocol, port))
    if _reuse:
        _reuse[-1] = _copy(info)  # kept apart from the caller's, who may change it
    allocatable = (node.status.allocatable if node.status else None) or {}
    _to_resource({k: api.parse_quantity(v) for k, v in allocatable.items()}, operator.add, info.allocatable)
    return info
# --8<-- [end:new_node_info]


_reuse: list[Optional[NodeInfo]] = []  # within node_info_reuse(): the last NodeInfo made (before its allocatable)


@contextmanager
def node_info_reuse():
    """While a batch of pods is admitted one by one, each against the pods before it (none of which changes
    meanwhile): a NodeInfo over the last one's pods and more adds up only the new pods' requests."""
    _reuse.append(None)
    try:
        yield
    finally:
        _reuse.pop()


def _reused(node: V1Node, pods: list[V1Pod]) -> NodeInfo:
    last = _reuse[-1] if _reuse else None
    if last is None or last.node is not node or len(last.pods) > len(pods) or any(
            a is not b for a, b in zip(last.pods, pods)):
        return NodeInfo(node=node)
    return last  # a copy no caller holds: the one made is kept as a copy of its own


def _copy(info: NodeInfo) -> NodeInfo:
    return NodeInfo(node=info.node, pods=list(info.pods), requested=dict(info.requested), used_ports=set(info.used_ports))
# --8<-- [end:node_info]


# --8<-- [start:compute_pod_resource_request]
def compute_pod_resource_request(pod: V1Pod) -> dict[str, int]:
    """The pod's request as the fit check sees it: app sum, raised to each init container, plus overhead.

    Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go computePodResourceRequest (from 1.29 it is
    component-helpers PodRequests, with sidecars; pod-level requests count when PodLevelResources is on)
    """
    request = _to_resource(resource.pod_requests(pod), max, {})  # Resource.SetMaxResource on an empty Resource
    request.pop(PODS, None)  # SetMaxResource ignores "pods"
    return request
# --8<-- [end:compute_pod_resource_request]


# --8<-- [start:insufficient_resource]
@dataclass
class InsufficientResource:
    """One resource the node is short of: what the pod asks, what is in use, and the allocatable capacity.

    Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go InsufficientResource
    """
    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
# --8<-- [end:insufficient_resource]


# --8<-- [start:fits_request]
def fits_request(pod_request: dict[str, int], node_info: NodeInfo) -> list[InsufficientResource]:
    """Every resource that does not fit: the pod count first, then cpu, memory, ephemeral-storage, scalars.

    Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest (from 1.28, #116408, a Pod
    asking 0 of cpu, memory or ephemeral-storage is not checked for it, as scalars never were)
    """
    short: list[InsufficientResource] = []
    allowed_pods = node_info.allocatable.get(PODS, 0)
    if len(node_info.pods) + 1 > allowed_pods:
        short.append(InsufficientResource(PODS, "Too many pods", 1, len(node_info.pods), allowed_pods))
    scalars = {k: v for k, v in pod_request.items() if k not in (CPU, MEMORY, EPHEMERAL_STORAGE)}
    if not any(pod_request.get(k, 0) for k in (CPU, MEMORY, EPHEMERAL_STORAGE)) and not scalars:
        return short
    skip_zero = features.DEFAULT_FEATURE_GATE.changed("ZeroRequestFitSkip")  # 1.28: cpu, memory, storage too
    # Upstream walks the scalars in Go map order (random); sorted here so the answer is repeatable.
    for name in [CPU, MEMORY, EPHEMERAL_STORAGE] + sorted(scalars):
        wanted = pod_request.get(name, 0)
        if wanted == 0 and (name in scalars or skip_zero):  # a resource asked for 0 is not checked
            continue
        used, capacity = node_info.requested.get(name, 0), node_info.allocatable.get(name, 0)
        if wanted > capacity - used:  # a request equal to what is free still fits
            short.append(InsufficientResource(name, f"Insufficient {name}", wanted, used, capacity))
    return short
# --8<-- [end:fits_request]


# --8<-- [start:fits]
def fits(pod: V1Pod, node_info: NodeInfo) -> list[InsufficientResource]:
    """The resources the pod's requests do not fit into on this node (empty: it fits).

    Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go Fits
    """
    return fits_request(compute_pod_resource_request(pod), node_info)
# --8<-- [end:fits]


def _requirement_error(key: str, op: Optional[str], values: list[str]) -> bool:
    """True if labels.NewRequirement would refuse this node selector requirement."""
    if op in ("In", "NotIn"):
        bad = not values
    elif op in ("Exists", "DoesNotExist"):
        bad = bool(values)
    elif op in ("Gt", "Lt"):
        bad = len(values) != 1 or any(_parse_int64(v) is None for v in values)
    else:
        return True
    return bad or not _is_qualified_name(key) or not all(_is_valid_label_value(v) for v in values)


def _requirement_matches(key: str, op: str, values: list[str], labels: dict[str, str]) -> bool:
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if key not in labels:
        return False
    have, want = _parse_int64(labels[key]), _parse_int64(values[0])
    if have is None or want is None:
        return False
    return have > want if op == "Gt" else have < want


def _term_matches(term, labels: dict[str, str], fields: dict[str, str]) -> bool:
    """One nodeSelectorTerm: all its expressions and fields hold. A term that does not parse matches nothing."""
    expressions = [(e.key or "", e.operator, list(e.values or [])) for e in term.match_expressions or []]
    field_reqs = [(e.key or "", e.operator, list(e.values or [])) for e in term.match_fields or []]
    if any(_requirement_error(*e) for e in expressions):
        return False
    if any(op not in ("In", "NotIn") or len(values) != 1 for _, op, values in field_reqs):
        return False
    if not all(_requirement_matches(*e, labels) for e in expressions):
        return False
    if field_reqs and fields:  # a node without a name has no fields: matchFields is then ignored
        return all((fields.get(key, "") == values[0]) == (op == "In") for key, op, values in field_reqs)
    return True


# --8<-- [start:node_matches_node_selector_terms]
def node_matches_node_selector_terms(node: V1Node, node_selector: Optional[V1NodeSelector]) -> bool:
    """The node satisfies at least one non-empty term (terms are ORed; a term's requirements are ANDed).

    Upstream: k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go LazyErrorNodeSelector.Match
    """
    labels = (node.metadata.labels if node.metadata else None) or {}
    fields = {"metadata.name": node.metadata.name} if node.metadata and node.metadata.name else {}
    terms = [t for t in (node_selector.node_selector_terms or []) if t.match_expressions or t.match_fields]
    return any(_term_matches(term, labels, fields) for term in terms)
# --8<-- [end:node_matches_node_selector_terms]


# --8<-- [start:pod_matches_node_selector_and_affinity_terms]
def pod_matches_node_selector_and_affinity_terms(pod: V1Pod, node: V1Node) -> bool:
    """The node has every spec.nodeSelector label, and matches the required node affinity if there is one.

    Upstream: k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go GetRequiredNodeAffinity, Match
    """
    labels = (node.metadata.labels if node.metadata else None) or {}
    if any(labels.get(key) != value for key, value in (pod.spec.node_selector or {}).items()):
        return False
    affinity = pod.spec.affinity.node_affinity if pod.spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    return required is None or node_matches_node_selector_terms(node, required)
# --8<-- [end:pod_matches_node_selector_and_affinity_terms]


# --8<-- [start:tolerates_taint]
# --8<-- [start:toleration_tolerates_taint]
def toleration_tolerates_taint(toleration: V1Toleration, taint: V1Taint) -> bool:
    """Effect and key match (empty means any), then Equal compares values and Exists accepts any value.

    Upstream: k8s.io/api/core/v1/toleration.go Toleration.ToleratesTaint
    """
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in (None, "", "Equal"):
        return (toleration.value or "") == (taint.value or "")
    return toleration.operator == "Exists"  # any other operator tolerates nothing in v1.27
# --8<-- [end:toleration_tolerates_taint]


# --8<-- [start:tolerations_tolerate_taint]
def tolerations_tolerate_taint(tolerations: Optional[list[V1Toleration]], taint: V1Taint) -> bool:
    """At least one of the tolerations tolerates the taint.

    Upstream: k8s.io/component-helpers/scheduling/corev1/helpers.go TolerationsTolerateTaint
    """
    return any(toleration_tolerates_taint(t, taint) for t in tolerations or [])
# --8<-- [end:tolerations_tolerate_taint]


# --8<-- [start:find_matching_untolerated_taint]
def find_matching_untolerated_taint(taints: Optional[list[V1Taint]], tolerations: Optional[list[V1Toleration]],
                                    taint_filter: Optional[Callable[[V1Taint], bool]] = None) -> Optional[V1Taint]:
    """The first taint (passing the filter) that no toleration tolerates, or None.

    Upstream: k8s.io/component-helpers/scheduling/corev1/helpers.go FindMatchingUntoleratedTaint
    """
    for taint in taints or []:
        if (taint_filter is None or taint_filter(taint)) and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None
# --8<-- [end:find_matching_untolerated_taint]
# --8<-- [end:tolerates_taint]


# --8<-- [start:container_ports]
def _container_ports(pod: V1Pod) -> list[tuple[str, str, int]]:
    """(host IP, protocol, host port) of every port of the app containers, and from 1.34 of the sidecars first.

    Upstream: pkg/scheduler/util/utils.go GetHostPorts (1.34, #132040); v1.27 reads spec.containers only
    """
    containers = list(pod.spec.containers or [])
    if features.DEFAULT_FEATURE_GATE.changed("SidecarHostPorts"):
        containers = [c for c in pod.spec.init_containers or [] if is_restartable_init_container(c)] + containers
    return [(p.host_ip or "", p.protocol or "", p.host_port or 0) for c in containers for p in c.ports or []]
# --8<-- [end:container_ports]


def _sanitize(ip: str, protocol: str, port: int) -> tuple[str, str, int]:
    return (ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP", port)


# --8<-- [start:fits_ports]
# --8<-- [start:check_conflict]
def check_conflict(used_ports: set[tuple[str, str, int]], ip: str, protocol: str, port: int) -> bool:
    """The host port is taken: on any IP if asked for 0.0.0.0, else on the same IP or on 0.0.0.0.

    Upstream: pkg/scheduler/framework/types.go HostPortInfo.CheckConflict
    """
    if port <= 0:
        return False
    ip, protocol, port = _sanitize(ip, protocol, port)
    if ip == DEFAULT_BIND_ALL_HOST_IP:
        return any((p, n) == (protocol, port) for _, p, n in used_ports)
    return any((used_ip, p, n) == (candidate, protocol, port)
               for used_ip, p, n in used_ports for candidate in (DEFAULT_BIND_ALL_HOST_IP, ip))
# --8<-- [end:check_conflict]


def fits_ports(pod: V1Pod, node_info: NodeInfo) -> bool:
    """None of the pod's host ports conflicts with one already used on the node.

    Upstream: pkg/scheduler/framework/plugins/nodeports/node_ports.go Fits
    """
    return not any(check_conflict(node_info.used_ports, *port) for port in _container_ports(pod))
# --8<-- [end:fits_ports]


# --8<-- [start:fits_node_name]
def fits_node_name(pod: V1Pod, node: V1Node) -> bool:
    """The pod names no node, or names this one.

    Upstream: pkg/scheduler/framework/plugins/nodename/node_name.go Fits
    """
    return not pod.spec.node_name or pod.spec.node_name == node.metadata.name
# --8<-- [end:fits_node_name]
