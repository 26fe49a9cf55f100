"""A scenario loaded and checked: the node, its kubelet settings, the pods and their usage, the events.

Upstream: none (a course tool); the kubelet settings are read as pkg/kubelet/eviction/helpers.go
ParseThresholdConfig reads them. The format is described in mini_kubelet/sim/__init__.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

import yaml
from kubernetes.client import V1Pod

from ... import api, resource, types
from ...eviction import manager as mgr
from .. import fields
from ..check import eviction_top
from ..reader import Reader, read_scenario
from ..series import Series
from ..settings import kubelet_settings

DEFAULT_DURATION, MAX_DURATION = fields.DEFAULT_DURATION, fields.MAX_DURATION
PRIORITY_CLASSES = types.SYSTEM_PRIORITY_CLASSES  # the built-in classes' values, resolved by types.resolve_system_priority
CONTAINER_KEYS = tuple(f.name for f in fields.CONTAINER_USAGE)  # a container's usage series
POD_KEYS = tuple(f.name for f in fields.POD_USAGE)  # a pod's own usage
NODE_KEYS = tuple(f.name for f in fields.NODE_USAGE)  # what the OS uses, not pods
_CAPACITY_KEYS = tuple(f.name for f in fields.CAPACITY)
EVICTION = "eviction"  # the format's name in mini_kubelet/sim/fields.py


@dataclass
class PodPlan:
    """A pod of the scenario: its manifest (as the kubelet would receive it) and its usage over time."""

    pod: V1Pod
    containers: dict[str, dict[str, Series]]  # container name -> memory/rootfs/logs/inodes
    volumes: dict[str, Series]
    pids: Series
    where: str  # the scenario field it came from, for messages


@dataclass
class Event:
    """Something that happens at a time: addPod (a PodPlan), pullImage (a dict), set (a dict)."""

    at: int
    kind: str
    payload: Any
    where: str


@dataclass
class Scenario:
    """A loaded scenario: everything the replay needs, checked."""

    name: str
    description: str
    duration: int
    node_name: str
    capacity: dict[str, int]
    node_usage: dict[str, Series]
    config: mgr.Config
    pods_memory_limit: int  # the "pods" cgroup's memory limit
    dedicated_image_fs: bool
    images: list[dict]
    pods: list[PodPlan]
    events: list[Event]
    expect: Optional[dict]
    source: str
    kubelet: dict[str, Any] = field(default_factory=dict)  # the settings as written, defaults filled in


# --8<-- [start:load_scenario]
def load_scenario(source: Union[str, Path, dict], *, name: str = "scenario", where: str = "", base: Path = Path(".")
                  ) -> Scenario:
    """Read and check a scenario (a YAML file, or its already-decoded mapping); ManifestError on bad input.

    Upstream: none (a course tool); the kubelet settings are read as pkg/kubelet/eviction/helpers.go
    ParseThresholdConfig reads them.
    """
    if isinstance(source, dict):
        doc, where = source, where or f"<{name}>"
    else:
        doc, where, base, name = read_scenario(source)
    r = Reader(where, base)
    doc = eviction_top(r, doc)
    node = r.mapping(doc.get("node"), "node", fields.names(EVICTION, "node"))
    capacity_raw = r.mapping(node.get("capacity"), "node.capacity", _CAPACITY_KEYS)
    for key in fields.required(EVICTION, "node.capacity"):
        if key not in capacity_raw:
            r.fail(f"node.capacity.{key}", "required")
    capacity = {k: r.amount(v, f"node.capacity.{k}") for k, v in capacity_raw.items()}
    if ("imagefs" in capacity) != ("imagefsInodes" in capacity):
        r.fail("node.capacity.imagefs", "a dedicated imagefs needs both imagefs and imagefsInodes")
    usage_raw = r.mapping(node.get("usage", {}), "node.usage", NODE_KEYS)
    node_usage = {k: r.series(usage_raw.get(k, 0), f"node.usage.{k}") for k in NODE_KEYS}
    config, kubelet, pods_limit = kubelet_settings(r, node.get("kubelet", {}), capacity)
    images_list = []
    for i, raw in enumerate(r.sequence(doc.get("images"), "images")):
        image = r.mapping(raw, f"images[{i}]", fields.names(EVICTION, "images[]"))
        if not isinstance(image.get("name"), str) or not image["name"]:
            r.fail(f"images[{i}].name", "required")
        images_list.append(_image(r, image, f"images[{i}]"))
    pods = [_pod(r, raw, f"pods[{i}]") for i, raw in enumerate(r.sequence(doc.get("pods"), "pods"))]
    events = []
    for i, raw in enumerate(r.sequence(doc.get("events"), "events")):
        path = f"events[{i}]"
        entry = r.mapping(raw, path, fields.names(EVICTION, "events[]"))
        kinds = [k for k in fields.names(EVICTION, "events[]")[1:] if k in entry]
        if "at" not in entry or len(kinds) != 1:
            r.fail(path, "an event is `at: TIME` and one of addPod, pullImage, set")
        kind = kinds[0]
        at = r.duration(entry["at"], f"{path}.at")
        payload: Any = entry[kind]
        if kind == "addPod":
            payload = _pod(r, payload, f"{path}.addPod")
        elif kind == "pullImage":
            payload = _image(r, r.mapping(payload, f"{path}.pullImage", fields.names(EVICTION, "events[].pullImage")),
                             f"{path}.pullImage")
        else:
            payload = _set_event(r, payload, f"{path}.set")
        events.append(Event(at, kind, payload, path))
    _check_unique_pods(r, pods + [e.payload for e in events if e.kind == "addPod"])
    _check_set_targets(r, events, pods + [e.payload for e in events if e.kind == "addPod"])
    duration = r.duration(doc["duration"], "duration") if "duration" in doc else DEFAULT_DURATION
    if duration > MAX_DURATION:
        r.fail("duration", f"{doc['duration']} is longer than the replay's limit of {MAX_DURATION // 3600}h "
                           f"({MAX_DURATION // 10} passes, one every 10s); replay a shorter stretch")
    expect = r.mapping(doc["expect"], "expect", fields.names(EVICTION, "expect")) \
        if doc.get("expect") is not None else None
    return Scenario(name=name, description=str(doc.get("description", "")).strip(), duration=duration,
                    node_name=str(node.get("name", fields.default(EVICTION, "node", "name"))), capacity=capacity, node_usage=node_usage, config=config,
                    pods_memory_limit=pods_limit, dedicated_image_fs="imagefs" in capacity, images=images_list,
                    pods=pods, events=sorted(events, key=lambda e: e.at), expect=expect, source=where, kubelet=kubelet)
# --8<-- [end:load_scenario]


def _pod(r: Reader, raw: Any, path: str, *, static: bool = False) -> PodPlan:
    """One pod entry: its manifest (a file or inline) as the kubelet sees it, and its usage series.

    static: a static pod's manifest, which the API server never sees (so nothing resolves its priority).
    """
    entry = r.mapping(raw, path, fields.names(EVICTION, "pods[]"))
    if ("file" in entry) == ("manifest" in entry):
        r.fail(path, "give either file: (a path) or manifest: (an inline Pod)")
    if "file" in entry:
        file = r.base / str(entry["file"])
        if not file.is_file():
            r.fail(f"{path}.file", f"no such file: {file}")
        notes: list[str] = []
        objects = api.load_manifests(file, notes)
        pods = [obj for obj in objects if isinstance(obj, V1Pod)]
        read = [note for note in notes if api.TEMPLATE_READ in note]  # a workload, read as show and admit read it
        if len(pods) != 1 or len(objects) != 1 or len(notes) != len(read):
            r.fail(f"{path}.file", f"{entry['file']} must hold exactly one Pod (or one workload with a Pod template)")
        for note in read:
            r.note(f"{path}.file", note.split(": ", 1)[1])
        pod = pods[0]
    else:
        try:
            pod = api.pod_from_manifest(entry["manifest"], r.source)
        except api.ManifestError as err:
            r.fail(f"{path}.manifest" + (f".{err.path}" if err.path else ""), err.problem)
    pod = _as_kubelet_sees_it(pod, r, path, static)
    usage = r.mapping(entry.get("usage", {}), f"{path}.usage", fields.names(EVICTION, "pods[].usage"))
    names = [c.name for c in pod.spec.containers]
    containers: dict[str, dict[str, Series]] = {name: {} for name in names}
    if "containers" in usage:
        if any(key in usage for key in CONTAINER_KEYS):
            r.fail(f"{path}.usage", "give container usage either at the top or under containers:, not both")
        for name, values in r.mapping(usage["containers"], f"{path}.usage.containers").items():
            if name not in containers:
                r.fail(f"{path}.usage.containers.{name}", f"no such container (the pod has: {', '.join(names)})")
            values = r.mapping(values, f"{path}.usage.containers.{name}", CONTAINER_KEYS)
            containers[name] = {k: r.series(v, f"{path}.usage.containers.{name}.{k}") for k, v in values.items()}
    else:
        containers[names[0]] = {k: r.series(usage[k], f"{path}.usage.{k}") for k in CONTAINER_KEYS if k in usage}
    volume_names = {v.name: v for v in pod.spec.volumes or []}
    volumes = {}
    for name, value in r.mapping(usage.get("volumes", {}), f"{path}.usage.volumes").items():
        if name not in volume_names:
            r.fail(f"{path}.usage.volumes.{name}", f"the pod has no volume named {name!r}")
        if volume_names[name].host_path is not None:
            r.fail(f"{path}.usage.volumes.{name}", "a hostPath volume has no stats in the Summary")
        volumes[name] = r.series(value, f"{path}.usage.volumes.{name}")
    pids = r.series(usage.get("pids", 0), f"{path}.usage.pids")
    return PodPlan(pod, containers, volumes, pids, path)


def _as_kubelet_sees_it(pod: V1Pod, r: Reader, path: str, static: bool = False) -> V1Pod:
    """The pod after API-server defaulting and admission: requests from limits, uid, priority, grace period."""
    pod = resource.set_defaults_pod(pod)
    pod.metadata.namespace = pod.metadata.namespace or "default"
    pod.metadata.uid = pod.metadata.uid or pod.metadata.name
    if not static:
        r.note(path, types.resolve_system_priority(pod))
    return pod


def _image(r: Reader, image: dict, path: str) -> dict:
    if not isinstance(image.get("name"), str) or not image["name"]:
        r.fail(f"{path}.name", "required")
    if "size" not in image:
        r.fail(f"{path}.size", "required")
    return {"name": image["name"], "size": r.amount(image["size"], f"{path}.size"),
            "inodes": r.amount(image.get("inodes", 0), f"{path}.inodes"), "pinned": bool(image.get("pinned", False)),
            "lastUsed": r.duration(image["lastUsed"], f"{path}.lastUsed", negative=True) if "lastUsed" in image else None,
            "detected": r.duration(image["detected"], f"{path}.detected", negative=True) if "detected" in image else None}


def _set_event(r: Reader, raw: Any, path: str) -> dict:
    raw = r.mapping(raw, path, fields.names(EVICTION, "events[].set"))
    if "node" in raw:
        if len(raw) != 1:
            r.fail(path, "set either node: {...} or pod: NAME with its usage, not both")
        values = r.mapping(raw["node"], f"{path}.node", NODE_KEYS)
        return {"node": {k: r.amount(v, f"{path}.node.{k}") for k, v in values.items()}}
    if not isinstance(raw.get("pod"), str):
        r.fail(f"{path}.pod", "required: the name of a pod (or node: {...})")
    values = {k: r.amount(v, f"{path}.{k}") for k, v in raw.items() if k in CONTAINER_KEYS + ("pids",)}
    volumes = {k: r.amount(v, f"{path}.volumes.{k}") for k, v in r.mapping(raw.get("volumes", {}), f"{path}.volumes").items()}
    if not values and not volumes:
        r.fail(path, f"nothing to set (give one of: {', '.join(CONTAINER_KEYS + POD_KEYS)})")
    return {"pod": raw["pod"], "container": raw.get("container"), "values": values, "volumes": volumes}


def _check_unique_pods(r: Reader, plans: list[PodPlan]) -> None:
    seen: dict[str, str] = {}
    for plan in plans:
        for key in (f"uid {plan.pod.metadata.uid}", f"name {plan.pod.metadata.namespace}/{plan.pod.metadata.name}"):
            if key in seen:
                r.fail(plan.where, f"two pods with the same {key} (also {seen[key]})")
            seen[key] = plan.where


def _check_set_targets(r: Reader, events: list[Event], plans: list[PodPlan]) -> None:
    by_name = {plan.pod.metadata.name: plan for plan in plans}
    for event in events:
        if event.kind != "set" or "node" in event.payload:
            continue
        plan = by_name.get(event.payload["pod"])
        if plan is None:
            r.fail(f"{event.where}.set.pod", f"no pod named {event.payload['pod']!r} in pods: or addPod events")
        container = event.payload["container"] or plan.pod.spec.containers[0].name
        if container not in plan.containers:
            r.fail(f"{event.where}.set.container", f"the pod has no container named {container!r}")
        for volume in event.payload["volumes"]:
            if volume not in {v.name for v in plan.pod.spec.volumes or []}:
                r.fail(f"{event.where}.set.volumes.{volume}", f"the pod has no volume named {volume!r}")
        event.payload["container"] = container
