"""Reading a one-node scenario (`replay: node`): the node and its kubelet settings, Pods with their usage and behaviour.

Upstream: none (a course tool). It reuses the eviction scenarios' readers (node capacity and usage, kubelet
eviction settings, a Pod's usage series, images, `set:` events) and the lifecycle scenarios' Pod decoding
(a static Pod as the file source decodes it; an API Pod as the API server and the scheduler leave it).
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Optional

from kubernetes.client import V1Node, V1ObjectMeta, V1OwnerReference, V1PodStatus

from ... import api, resource
from ...clock import DEFAULT_START
from ...config.common import try_decode_single_pod
from ...eviction import manager as mgr
from .. import fields
from ..eviction import scenario as ev
from ..lifecycle.scenario import read_pod_doc
from ..reader import Reader
from ..resize import read_resize, read_resize_expect
from ..series import Series, format_duration
from ..settings import KUBELET_KEYS, kubelet_settings

NODE = "node"
DEFAULT_NODE_DURATION, MAX_NODE_DURATION = fields.DEFAULT_NODE_DURATION, fields.MAX_NODE_DURATION
MAX_PODS_DEFAULT = fields.MAX_PODS_DEFAULT
IMAGE_GC_HIGH_DEFAULT, IMAGE_GC_LOW_DEFAULT = fields.IMAGE_GC_HIGH_DEFAULT, fields.IMAGE_GC_LOW_DEFAULT
# The fields of a `replay: node` scenario are in mini_kubelet/sim/fields.py (the format "node"), as read here.
NODE_KUBELET_KEYS = fields.names(NODE, "node.kubelet")[len(KUBELET_KEYS):]  # maxPods and the image GC thresholds
POD_KEYS = fields.names(NODE, "pods[]")
EVENT_KINDS = fields.names(NODE, "events[]")[1:]  # after at
EXPECT_KEYS = fields.names(NODE, "expect")
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand: the letters generated names use


@dataclass
class NodePod:
    """One Pod of the scenario: its manifest as its source delivers it, its usage, how its containers end."""

    plan: ev.PodPlan  # the Pod (plan.pod) and its usage series (memory per container instance, the rest per Pod)
    source: str  # "api" or "file"
    at: int
    run: dict[str, dict]  # container -> {"after": seconds, "exitCode": int}: each instance ends after that long
    replica_set: str = ""  # the owning ReplicaSet: its controller recreates a Pod that failed or was deleted
    path: str = ""
    _local_limits: Optional[bool] = None

    @property
    def local_limits(self) -> bool:
        """Whether a local-storage limit applies: an ephemeral-storage limit, or an emptyDir sizeLimit."""
        if self._local_limits is None:
            self._local_limits = self._has_local_limits()
        return self._local_limits

    def _has_local_limits(self) -> bool:
        spec = self.plan.pod.spec
        return any("ephemeral-storage" in ((c.resources.limits if c.resources else None) or {})
                   for c in spec.containers + (spec.init_containers or [])) or any(
            v.empty_dir is not None and v.empty_dir.size_limit is not None for v in spec.volumes or [])

    @property
    def name(self) -> str:
        return self.plan.pod.metadata.name


@dataclass
class NodeEvent:
    """Something that happens at a time: a Pod arrives, is deleted or resized, usage changes, an image is pulled."""

    at: int
    kind: str  # one of EVENT_KINDS
    payload: Any
    path: str


@dataclass
class NodeScenario:
    """A checked one-node scenario. Upstream: none (a course tool)"""

    name: str
    source: str
    description: str
    duration: int
    node: V1Node  # capacity and allocatable as the kubelet reports them
    node_name: str
    capacity: dict[str, int]
    node_usage: dict[str, Series]
    config: mgr.Config
    pods_memory_limit: int
    dedicated_image_fs: bool
    kubelet: dict
    images: list[dict]
    pods: list[NodePod]
    events: list[NodeEvent]
    expect: Optional[dict]
    kind: str = NODE
    notes: list[str] = field(default_factory=list)

    def find_pod(self, name: str) -> Optional[NodePod]:
        """The Pod a scenario names, among its Pods and addPod events."""
        plans = self.pods + [e.payload for e in self.events if e.kind == "addPod"]
        return next((p for p in plans if name == p.name or name == p.plan.where), None)


def is_node(doc: object) -> bool:
    """A one-node scenario says `replay: node`."""
    return isinstance(doc, dict) and doc.get("replay") == NODE


# --8<-- [start:load_node_scenario]
def load_node_scenario(doc: Any, where: str, base: Path, name: str) -> NodeScenario:
    """Check a decoded `replay: node` scenario; ManifestError (file and field) on anything wrong.

    Upstream: none (a course tool)
    """
    r = Reader(where, base)
    doc = r.mapping(doc, "", fields.names(NODE, ""))
    duration = r.duration(doc.get("duration", fields.default(NODE, "", "duration")), "duration")
    if not 0 < duration <= MAX_NODE_DURATION:
        r.fail("duration", f"expected more than 0s and at most {format_duration(MAX_NODE_DURATION)}")
    raw_node = r.mapping(doc.get("node"), "node", fields.names(NODE, "node"))
    node_name = str(raw_node.get("name", fields.default(NODE, "node", "name")))
    capacity_raw = r.mapping(raw_node.get("capacity"), "node.capacity", fields.names(NODE, "node.capacity"))
    for key in fields.required(NODE, "node.capacity"):
        if key not in capacity_raw:
            r.fail(f"node.capacity.{key}", "required")
    capacity = {k: r.amount(v, f"node.capacity.{k}") for k, v in capacity_raw.items()}
    usage_raw = r.mapping(raw_node.get("usage", {}), "node.usage", ev.NODE_KEYS)
    node_usage = {k: r.series(usage_raw.get(k, 0), f"node.usage.{k}") for k in ev.NODE_KEYS}
    kubelet_raw = dict(r.mapping(raw_node.get("kubelet") or {}, "node.kubelet", fields.names(NODE, "node.kubelet")))
    extra = {k: kubelet_raw.pop(k) for k in NODE_KUBELET_KEYS if k in kubelet_raw}
    config, kubelet, pods_limit = kubelet_settings(r, kubelet_raw, capacity)
    kubelet.update(_node_kubelet(r, extra))
    node = _node(node_name, capacity_raw, kubelet, pods_limit, capacity)
    images = []
    for i, raw in enumerate(r.sequence(doc.get("images"), "images")):
        image = r.mapping(raw, f"images[{i}]", fields.names(NODE, "images[]"))
        images.append(ev._image(r, image, f"images[{i}]"))
    pods = [p for i, raw in enumerate(r.sequence(doc.get("pods"), "pods"))
            for p in _pods(r, raw, f"pods[{i}]", node_name, duration)]
    events = [_event(r, raw, f"events[{i}]", node_name, duration) for i, raw in enumerate(r.sequence(doc.get("events"), "events"))]
    added = [p for e in events if e.kind == "addPod" for p in e.payload]
    events = [NodeEvent(e.at, e.kind, p, e.path) for e in events for p in (e.payload if e.kind == "addPod" else [e.payload])]
    ev._check_unique_pods(r, [p.plan for p in pods + added])
    ev._check_set_targets(r, [ev.Event(e.at, "set", e.payload, e.path) for e in events if e.kind == "set"],
                          [p.plan for p in pods + added])
    named = {p.name: p for p in pods + added}
    for e in events:
        if e.kind in ("deletePod", "resize") and e.payload["pod"] not in named:
            r.fail(f"{e.path}.{e.kind}.pod", f"no pod named {e.payload['pod']!r} in pods: or addPod events")
        if e.kind == "resize":
            plan = named[e.payload["pod"]]
            e.payload = read_resize(r, e.payload, f"{e.path}.resize", plan.plan.pod, plan.source, NODE)
    scenario = NodeScenario(name, where, str(doc.get("description") or "").strip(), duration, node, node_name, capacity,
                            node_usage, config, pods_limit, "imagefs" in capacity, kubelet, images, pods,
                            sorted(events, key=lambda e: e.at), None)
    if doc.get("expect") is not None:
        scenario.expect = _expect(r, doc["expect"], scenario)
    return scenario
# --8<-- [end:load_node_scenario]


def _node_kubelet(r: Reader, raw: dict) -> dict:
    """maxPods and the image GC thresholds, checked as the kubelet's config validation checks them.

    Upstream: pkg/kubelet/apis/config/validation/validation.go ValidateKubeletConfiguration
    """
    out = {key: raw.get(key, fields.default(NODE, "node.kubelet", key)) for key in NODE_KUBELET_KEYS}
    for key, value in out.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= (2**31 - 1 if key == "maxPods" else 100):
            r.fail(f"node.kubelet.{key}", f"expected a whole number{' from 0 to 100' if key != 'maxPods' else ''}, got {value!r}")
    if out["imageGCLowThresholdPercent"] >= out["imageGCHighThresholdPercent"]:
        r.fail("node.kubelet.imageGCLowThresholdPercent",
               f"must be less than imageGCHighThresholdPercent ({out['imageGCHighThresholdPercent']})")
    return out


def _node(name: str, capacity_raw: dict, kubelet: dict, pods_limit: int, capacity: dict) -> V1Node:
    """The Node object the kubelet reports: capacity, and allocatable after reservations and the hard eviction threshold.

    Upstream: pkg/kubelet/nodestatus/setters.go MachineInfo (allocatable = capacity - reservations - hard eviction)
    """
    from ...cm.node_allocatable import node_allocatable
    cap = {"cpu": str(capacity_raw["cpu"]), "memory": str(capacity_raw["memory"]), "pods": str(kubelet["maxPods"]),
           "ephemeral-storage": str(capacity_raw["nodefs"])}
    allocatable = node_allocatable(cap, kubelet["systemReserved"], kubelet["kubeReserved"], kubelet["evictionHard"])
    alloc = {k: _quantity(k, v) for k, v in allocatable.items()}
    alloc["pods"] = cap["pods"]
    return api.node_from_manifest({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                                   "status": {"capacity": cap, "allocatable": alloc}})


def _quantity(name: str, amount) -> str:
    """An allocatable amount as the kubelet reports it: bytes in Ki when whole, CPU in millicores when not whole."""
    if name == "cpu":
        milli = api.milli_value(amount)
        return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
    whole = api.value(amount)
    return f"{whole // 1024}Ki" if name != "pods" and whole % 1024 == 0 and whole else str(whole)


def _pods(r: Reader, raw: Any, path: str, node_name: str, duration: int) -> list[NodePod]:
    """One pods: entry, which `count:` turns into several Pods named from its `{i}` (1, 2, ...)."""
    entry = r.mapping(raw, path, POD_KEYS)
    count = entry.get("count", fields.default(NODE, "pods[]", "count"))
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 5000:
        r.fail(f"{path}.count", f"expected a whole number from 1 to 5000, got {count!r}")
    doc = read_pod_doc(r, entry, path)
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        r.fail(f"{path}.{'manifest' if 'manifest' in entry else 'file'}.metadata.name", "required")
    if count > 1 and "{i}" not in meta["name"]:
        r.fail(f"{path}.count", f"the name {meta['name']!r} needs {{i}} where the number goes (e.g. web-{{i}})")
    out = []
    for i in range(1, count + 1):
        one = copy.deepcopy(doc)
        one["metadata"]["name"] = meta["name"].replace("{i}", str(i))
        for key in ("uid",):
            if key in one["metadata"]:
                one["metadata"][key] = str(one["metadata"][key]).replace("{i}", str(i))
        out.append(_pod(r, entry, one, path, node_name, duration))
        if i > 1:  # the copies share the first one's series (read only): equal usage is computed once a pass
            first, plan = out[0].plan, out[-1].plan
            plan.containers = {c: dict(v) for c, v in first.containers.items()}
            plan.volumes, plan.pids = dict(first.volumes), first.pids
    return out


def _pod(r: Reader, entry: dict, doc: dict, path: str, node_name: str, duration: int) -> NodePod:
    source = entry.get("source", fields.default(NODE, "pods[]", "source"))
    if source not in ("api", "file"):
        r.fail(f"{path}.source", f"expected api (from the API server) or file (a static pod), got {source!r}")
    plan = ev._pod(r, {"manifest": doc, **({"usage": entry["usage"]} if "usage" in entry else {})}, path,
                   static=source == "file")
    if source == "file":
        try:
            pod = resource.set_defaults_pod(try_decode_single_pod(copy.deepcopy(doc), f"{r.source}:{path}", node_name))
        except api.ManifestError as err:
            r.fail(f"{path}.manifest" + (f".{err.path}" if err.path else ""), err.problem)
        plan.pod = pod  # a static pod: no API server resolves its priorityClassName (types.resolve_system_priority)
    at = r.duration(entry.get("at", fields.default(NODE, "pods[]", "at")), f"{path}.at")
    if at >= duration:
        r.fail(f"{path}.at", f"{format_duration(at)} is not before the end of the replay ({format_duration(duration)})")
    api_defaults(plan.pod, node_name, at, source)
    rs = entry.get("replicaSet", "")
    if rs and (not isinstance(rs, str) or source == "file"):
        r.fail(f"{path}.replicaSet", "expected the name of the ReplicaSet owning this API Pod")
    if rs:
        plan.pod.metadata.owner_references = [V1OwnerReference(api_version="apps/v1", kind="ReplicaSet", name=rs,
                                                               uid=f"{rs}-uid", controller=True)]
    names = [c.name for c in plan.pod.spec.containers]
    run = {}
    for cname, behaviour in r.mapping(entry.get("run", {}), f"{path}.run").items():
        where = f"{path}.run.{cname}"
        if cname not in names:
            r.fail(where, f"no such container (the pod has: {', '.join(names)})")
        behaviour = r.mapping(behaviour, where, fields.names(NODE, "pods[].run.CONTAINER"))
        if "after" not in behaviour:
            r.fail(f"{where}.after", "required: how long each instance runs before it ends")
        code = behaviour.get("exitCode", fields.default(NODE, "pods[].run.CONTAINER", "exitCode"))
        if not isinstance(code, int) or isinstance(code, bool) or not 0 <= code <= 255:
            r.fail(f"{where}.exitCode", f"expected an exit code from 0 to 255, got {code!r}")
        run[cname] = {"after": r.duration(behaviour["after"], f"{where}.after"), "exitCode": code}
    return NodePod(plan, source, at, run, rs, path)


def api_defaults(pod, node_name: str, at: int, source: str) -> None:
    """What the API server and the scheduler give a new Pod: nodeName, creation time, grace period, a Pending status."""
    if source == "api":
        pod.spec.node_name = node_name
    pod.metadata.creation_timestamp = DEFAULT_START + timedelta(seconds=at)
    pod.status = V1PodStatus(phase="Pending")
    if pod.spec.termination_grace_period_seconds is None:
        pod.spec.termination_grace_period_seconds = 30
    pod.spec.restart_policy = pod.spec.restart_policy or "Always"


def replacement(original: NodePod, number: int, at: int, node_name: str) -> NodePod:
    """The Pod a ReplicaSet's controller creates in place of a failed or deleted one: same template, a new name.

    Upstream: pkg/controller/replicaset/replica_set.go manageReplicas (a generated name from the ReplicaSet's)
    """
    rs = original.replica_set
    digest = hashlib.sha256(f"{rs}/{number}".encode()).digest()
    name = f"{rs}-" + "".join(NAME_ALPHABET[b % len(NAME_ALPHABET)] for b in digest[:5])
    pod = api.deep_copy(original.plan.pod)
    pod.metadata = V1ObjectMeta(name=name, namespace=pod.metadata.namespace, uid=f"{name}-uid",
                                labels=pod.metadata.labels, owner_references=pod.metadata.owner_references)
    api_defaults(pod, node_name, at, "api")
    containers = {name: dict(usage) for name, usage in original.plan.containers.items()}  # a `set:` names one Pod
    plan = ev.PodPlan(pod, containers, dict(original.plan.volumes), original.plan.pids, original.plan.where)
    return NodePod(plan, "api", at, original.run, rs, original.path)


def _event(r: Reader, raw: Any, path: str, node_name: str, duration: int) -> NodeEvent:
    entry = r.mapping(raw, path, ("at",) + EVENT_KINDS)
    kinds = [k for k in EVENT_KINDS if k in entry]
    if "at" not in entry or len(kinds) != 1:
        r.fail(path, f"an event is `at: TIME` and one of: {', '.join(EVENT_KINDS)}")
    kind, at = kinds[0], r.duration(entry["at"], f"{path}.at")
    if at >= duration:
        r.fail(f"{path}.at", f"{format_duration(at)} is not before the end of the replay ({format_duration(duration)})")
    where = f"{path}.{kind}"
    if kind == "addPod":
        body = dict(r.mapping(entry[kind], where, tuple(k for k in POD_KEYS if k != "at")))
        body["at"] = entry["at"]
        payload: Any = _pods(r, body, where, node_name, duration)
    elif kind == "deletePod":
        payload = dict(r.mapping(entry[kind], where, fields.names(NODE, "events[].deletePod")))
        if not isinstance(payload.get("pod"), str):
            r.fail(f"{where}.pod", "required: the name of a pod")
        grace = payload.get("gracePeriod")
        if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool) or grace < 0):
            r.fail(f"{where}.gracePeriod", f"expected whole seconds (0 or more), got {grace!r}")
    elif kind == "resize":
        payload = dict(r.mapping(entry[kind], where, fields.names(NODE, "events[].resize")))
        if not isinstance(payload.get("pod"), str):
            r.fail(f"{where}.pod", "required: the name of a pod")
    elif kind == "pullImage":
        payload = ev._image(r, r.mapping(entry[kind], where, fields.names(NODE, "events[].pullImage")), where)
    else:
        payload = ev._set_event(r, entry[kind], where)
    return NodeEvent(at, kind, payload, path)


def _expect(r: Reader, raw: Any, scenario: NodeScenario) -> dict:
    allowed = {key: fields.names(NODE, f"expect.{key}[]") for key in EXPECT_KEYS}
    checked: dict[str, list] = {}
    for key, entries in r.expect_lists(raw, EXPECT_KEYS, allowed):
        items = checked[key] = []
        for where, item in entries:
            if key in ("resizes", "cgroups"):
                read_resize_expect(r, key, where, item)
                items.append(item)
                continue
            for time_key in ("at", "from", "to"):
                if item.get(time_key) is not None:
                    item[time_key] = r.duration(item[time_key], f"{where}.{time_key}")
            if key != "conditions" and not isinstance(item.get("pod"), str):
                r.fail(f"{where}.pod", "required: a pod's name")
            items.append(item)
    return checked
