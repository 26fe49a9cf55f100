"""Reading a lifecycle scenario (`replay: lifecycle`): Pods from the API server or static Pods, and what happens to them.

Upstream: none (a course tool). Static pods are decoded as the file source decodes them
(pkg/kubelet/config/common.go tryDecodeSinglePod with applyDefaults); API pods get what the API server
would give them (namespace, UID, nodeName, creation time).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Optional

from kubernetes.client import V1Node, V1Pod, V1PodStatus

from ... import api, features, resource, types
from ...clock import DEFAULT_START
from ...config.common import try_decode_single_pod
from .. import fields
from ..resize import read_resize, read_resize_expect
from ..reader import Reader, read_scenario  # noqa: F401  (read_scenario: for the replay and the command)
from ..series import format_duration

LIFECYCLE = "lifecycle"
DEFAULT_LIFECYCLE_DURATION, MAX_LIFECYCLE_DURATION = fields.DEFAULT_LIFECYCLE_DURATION, fields.MAX_LIFECYCLE_DURATION
DEFAULT_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                           "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}
# The fields of a lifecycle scenario are in mini_kubelet/sim/fields.py (the format "lifecycle"), as read here.
EVENT_KINDS = fields.names(LIFECYCLE, "events[]")[1:]  # after at
EVENT_FIELDS = {kind: fields.names(LIFECYCLE, f"events[].{kind}") for kind in EVENT_KINDS}
EXPECT_KEYS = fields.names(LIFECYCLE, "expect")


@dataclass
class LifecyclePod:
    """One pod of the scenario: the manifest as its source delivers it, where from, and how its containers behave."""

    pod: V1Pod
    source: str  # "api" or "file"
    at: int  # seconds: when the source first delivers it
    run: dict[str, dict]  # container name -> {"after": seconds, "exitCode": int} or {"after", "oomKill": True}
    path: str  # where in the scenario it is written (for messages)
    manifest_name: str = ""  # metadata.name as written (a static pod's name gets the node's as suffix)
    pre_stop: dict[str, int] = field(default_factory=dict)  # container name -> seconds its preStop hook runs


@dataclass
class LifecycleEvent:
    """One thing that happens at a time: a container exit, crash or OOM kill, a probe result, a deletion."""

    at: int
    kind: str  # one of EVENT_KINDS
    args: dict
    path: str


@dataclass
class LifecycleScenario:
    """A checked lifecycle scenario. Upstream: none (a course tool)"""

    name: str
    source: str
    description: str
    duration: int
    node: V1Node
    pods: list[LifecyclePod]
    events: list[LifecycleEvent]
    expect: Optional[dict]
    kind: str = LIFECYCLE
    notes: list[str] = field(default_factory=list)
    kubelet: dict = field(default_factory=dict)  # node.kubelet: {"crashLoopBackOff": {"maxContainerRestartPeriod": s}}

    def find_pod(self, name: str) -> Optional[LifecyclePod]:
        """The pod a scenario names: its metadata.name, or a static pod's manifest name."""
        return next((p for p in self.pods if name in (p.pod.metadata.name, p.manifest_name)), None)


def is_lifecycle(doc: object) -> bool:
    """A lifecycle scenario says `replay: lifecycle`; every other scenario is an eviction scenario."""
    return isinstance(doc, dict) and doc.get("replay") == "lifecycle"


# --8<-- [start:load_lifecycle_scenario]
def load_lifecycle_scenario(doc: Any, where: str, base: Path, name: str) -> LifecycleScenario:
    """Check a decoded lifecycle scenario; ManifestError (file and field) on anything wrong.

    Upstream: none (a course tool)
    """
    r = Reader(where, base)
    doc = r.mapping(doc, "", fields.names(LIFECYCLE, ""))
    duration = r.duration(doc.get("duration", fields.default(LIFECYCLE, "", "duration")), "duration")
    if not 0 < duration <= MAX_LIFECYCLE_DURATION:
        r.fail("duration", f"expected more than 0s and at most {format_duration(MAX_LIFECYCLE_DURATION)}")
    node, kubelet = _node(r, doc.get("node")), _kubelet(r, (doc.get("node") or {}).get("kubelet"))
    pods = [_pod(r, raw, f"pods[{i}]", node.metadata.name, duration) for i, raw in enumerate(r.sequence(doc.get("pods"), "pods"))]
    if not pods:
        r.fail("pods", "a lifecycle scenario needs at least one pod")
    seen: dict[str, str] = {}
    for plan in pods:
        key = f"{plan.pod.metadata.namespace}/{plan.pod.metadata.name}"
        if key in seen:
            r.fail(f"{plan.path}", f"the pod {key} is also {seen[key]}")
        seen[key] = plan.path
    scenario = LifecycleScenario(name, where, str(doc.get("description") or "").strip(), duration, node, pods, [],
                                 None, kubelet=kubelet)
    for i, raw in enumerate(r.sequence(doc.get("events"), "events")):
        scenario.events.append(_event(r, raw, f"events[{i}]", scenario))
    scenario.events.sort(key=lambda e: e.at)  # stable: same-time events keep their written order
    if "expect" in doc:
        scenario.expect = _expect(r, doc["expect"], scenario)
    return scenario
# --8<-- [end:load_lifecycle_scenario]


def _node(r: Reader, raw: Any) -> V1Node:
    if raw is None:
        return api.node_from_manifest(copy.deepcopy(DEFAULT_NODE))
    entry = r.mapping(raw, "node", fields.names(LIFECYCLE, "node"))
    if "file" in entry and "manifest" in entry:
        r.fail("node", "give file: or manifest:, not both")
    if "file" in entry or "manifest" in entry:
        doc = _read_doc(r, entry, "node")
        try:
            node = api.node_from_manifest(doc, r.source)
        except api.ManifestError as err:
            r.fail("node" + (f".{err.path}" if err.path else ""), err.problem)
    else:
        node = api.node_from_manifest(copy.deepcopy(DEFAULT_NODE))
    if "name" in entry:
        if not isinstance(entry["name"], str) or not entry["name"]:
            r.fail("node.name", "expected a node name")
        node.metadata.name = entry["name"]
    return node


def _kubelet(r: Reader, raw: Any) -> dict:
    """node.kubelet: the kubelet config a lifecycle replay reads, checked as the kubelet's validation checks it.

    Upstream: pkg/kubelet/apis/config/validation/validation.go ValidateKubeletConfiguration (crashLoopBackOff)
    """
    if raw is None:
        return {}
    where = "node.kubelet.crashLoopBackOff"
    raw = r.mapping(raw, "node.kubelet", fields.names(LIFECYCLE, "node.kubelet"))
    policy = {}
    if "cpuManagerPolicy" in raw:
        if raw["cpuManagerPolicy"] not in ("none", "static"):
            r.fail("node.kubelet.cpuManagerPolicy", f"expected none or static, got {raw['cpuManagerPolicy']!r}")
        policy = {"cpuManagerPolicy": raw["cpuManagerPolicy"]}
    loop = r.mapping(raw.get("crashLoopBackOff") or {}, where, fields.names(LIFECYCLE, "node.kubelet.crashLoopBackOff"))
    if "maxContainerRestartPeriod" not in loop:
        return policy
    period = r.duration(loop["maxContainerRestartPeriod"], f"{where}.maxContainerRestartPeriod")
    gate = features.DEFAULT_FEATURE_GATE
    if not gate.enabled("KubeletCrashLoopBackOffMax"):
        r.fail(f"{where}.maxContainerRestartPeriod", f"needs the KubeletCrashLoopBackOffMax feature gate, off here "
               f"(Kubernetes {gate.release}; it is beta and on by default from 1.35): the kubelet would refuse this config")
    if not 1 <= period <= 300:
        r.fail(f"{where}.maxContainerRestartPeriod", f"{format_duration(period)}: must be from 1s to 300s")
    return {"crashLoopBackOff": {"maxContainerRestartPeriod": period}, **policy}


def _read_doc(r: Reader, entry: dict, path: str) -> Any:
    """The one document of `file:` (relative to the scenario) or the inline `manifest:`."""
    if "manifest" in entry:
        return copy.deepcopy(entry["manifest"])
    if "file" not in entry:
        r.fail(path, "give either file: (a path) or manifest: (an inline Pod)")
    file = r.base / str(entry["file"])
    if not file.is_file():
        r.fail(f"{path}.file", f"no such file: {file}")
    docs = api.parse_yaml_documents(api.read_text(file), api.source_name(file))
    if len(docs) != 1:
        r.fail(f"{path}.file", f"{entry['file']} must hold exactly one document, found {len(docs)}")
    return docs[0]


def read_pod_doc(r: Reader, entry: dict, path: str) -> Any:
    """A pod entry's document; a workload (a Job, a Deployment...) from the API as the Pod its template makes.

    The same reading as show, explain and admit (api.template_pod_document), said in a note on stderr.
    A static pod's file is left as it is: the kubelet's file source reads only Pods.
    """
    doc = _read_doc(r, entry, path)
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if not isinstance(kind, str) or kind not in api.WORKLOAD_TEMPLATES or entry.get("source", "api") != "api":
        return doc
    where = f"{path}.manifest" if "manifest" in entry else f"{path}.file"
    try:
        pod_doc, fields = api.template_pod_document(doc, r.source)
    except api.ManifestError as err:
        r.fail(f"{where}.{err.path}", err.problem)
    meta = pod_doc["metadata"]
    r.note(where, api.template_note(kind, f"{meta.get('namespace') or 'default'}/{meta.get('name')}", fields))
    return pod_doc


def _pod(r: Reader, raw: Any, path: str, node_name: str, duration: int) -> LifecyclePod:
    entry = r.mapping(raw, path, fields.names(LIFECYCLE, "pods[]"))
    if ("file" in entry) == ("manifest" in entry):
        r.fail(path, "give either file: (a path) or manifest: (an inline Pod)")
    source = entry.get("source", fields.default(LIFECYCLE, "pods[]", "source"))
    if source not in ("api", "file"):
        r.fail(f"{path}.source", f"expected api (from the API server) or file (a static pod), got {source!r}")
    doc = read_pod_doc(r, entry, path)
    where = f"{path}.manifest" if "manifest" in entry else f"{path}.file"
    try:
        api.pod_from_manifest(copy.deepcopy(doc), r.source)  # the checks every command makes
        if source == "file":
            pod = try_decode_single_pod(copy.deepcopy(doc), str(entry.get("file", f"{r.source}:{path}")), node_name)
        else:
            pod = api.pod_from_manifest(copy.deepcopy(doc), r.source)
    except api.ManifestError as err:
        r.fail(where + (f".{err.path}" if err.path else ""), err.problem)
    manifest_name = doc.get("metadata", {}).get("name", "") if isinstance(doc, dict) else ""
    pod = resource.set_defaults_pod(pod)
    at = r.duration(entry.get("at", fields.default(LIFECYCLE, "pods[]", "at")), f"{path}.at")
    if at >= duration:
        r.fail(f"{path}.at", f"{format_duration(at)} is not before the end of the replay ({format_duration(duration)})")
    if source == "api":  # what the API server and the scheduler's Binding give it
        r.note(path, types.resolve_system_priority(pod))
        pod.metadata.namespace = pod.metadata.namespace or "default"
        pod.metadata.uid = pod.metadata.uid or pod.metadata.name
        pod.spec.node_name = node_name
    pod.metadata.creation_timestamp = DEFAULT_START + timedelta(seconds=at)
    pod.status = V1PodStatus(phase="Pending")  # just bound: whatever status the manifest shows is not there yet
    if pod.spec.termination_grace_period_seconds is None:
        pod.spec.termination_grace_period_seconds = 30  # the API server's default
    pod.spec.restart_policy = pod.spec.restart_policy or "Always"
    specs = {c.name: c for c in [*(pod.spec.init_containers or []), *pod.spec.containers]}
    names = list(specs)
    run, pre_stop = {}, {}
    for cname, behaviour in r.mapping(entry.get("run", {}), f"{path}.run").items():
        where = f"{path}.run.{cname}"
        if cname not in names:
            r.fail(where, f"no such container (the pod has: {', '.join(names)})")
        behaviour = r.mapping(behaviour, where, fields.names(LIFECYCLE, "pods[].run.CONTAINER"))
        if "preStopDuration" in behaviour:
            pre_stop[cname] = _pre_stop_duration(r, specs[cname], behaviour.pop("preStopDuration"), f"{where}.preStopDuration")
            if not behaviour:
                continue  # only the hook: the process runs until it is stopped
        if "after" not in behaviour:
            r.fail(f"{where}.after", "required: how long each instance runs before it ends")
        if ("exitCode" in behaviour) == bool(behaviour.get("oomKill")):
            r.fail(where, "give exitCode: (the process ends with it) or oomKill: true")
        run[cname] = {"after": r.duration(behaviour["after"], f"{where}.after"),
                      "exitCode": _exit_code(r, behaviour.get("exitCode", 137), f"{where}.exitCode"),
                      "oomKill": bool(behaviour.get("oomKill"))}
    return LifecyclePod(pod, source, at, run, path, manifest_name, pre_stop)


def _pre_stop_duration(r: Reader, spec, raw: Any, path: str) -> int:
    """run.CONTAINER.preStopDuration: how long the preStop hook of the manifest runs, in whole seconds."""
    if spec.lifecycle is None or spec.lifecycle.pre_stop is None:
        r.fail(path, f"container {spec.name} has no lifecycle.preStop hook (exec or httpGet) to run")
    return r.duration(raw, path)


def _exit_code(r: Reader, raw: Any, path: str) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool) or not 0 <= raw <= 255:
        r.fail(path, f"expected an exit code from 0 to 255, got {raw!r}")
    return raw


def _event(r: Reader, raw: Any, path: str, scenario: LifecycleScenario) -> LifecycleEvent:
    entry = r.mapping(raw, path, ("at",) + EVENT_KINDS)
    if "at" not in entry:
        r.fail(f"{path}.at", "required: when it happens (a duration such as 30s)")
    kinds = [k for k in EVENT_KINDS if k in entry]
    if len(kinds) != 1:
        ch4 = " (addPod, pullImage and set belong to eviction scenarios)" if not kinds else ""
        r.fail(path, f"give exactly one of: {', '.join(EVENT_KINDS)}{ch4}")
    kind = kinds[0]
    at = r.duration(entry["at"], f"{path}.at")
    if at >= scenario.duration:
        r.fail(f"{path}.at", f"{format_duration(at)} is not before the end of the replay ({format_duration(scenario.duration)})")
    where = f"{path}.{kind}"
    args = dict(r.mapping(entry[kind], where, EVENT_FIELDS[kind]))
    plan = scenario.find_pod(str(args.get("pod", "")))
    if plan is None:
        r.fail(f"{where}.pod", f"no pod {args.get('pod')!r} in pods: (names: "
               f"{', '.join(p.manifest_name or p.pod.metadata.name for p in scenario.pods)})")
    args["pod"] = plan.pod.metadata.name
    if "container" in EVENT_FIELDS[kind]:
        names = [c.name for c in [*(plan.pod.spec.init_containers or []), *plan.pod.spec.containers]]
        args.setdefault("container", plan.pod.spec.containers[0].name)
        if args["container"] not in names:
            r.fail(f"{where}.container", f"no such container (the pod has: {', '.join(names)})")
    if kind in ("exit", "crash"):
        args["code"] = _exit_code(r, args.get("code", fields.default(LIFECYCLE, f"events[].{kind}", "code")), f"{where}.code")
        if kind == "crash" and args["code"] == 0:
            r.fail(f"{where}.code", "a crash has a non-zero exit code (use exit: for code 0)")
    if kind == "delete":
        grace = args.get("gracePeriod")
        if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool) or grace < 0):
            r.fail(f"{where}.gracePeriod", f"expected whole seconds (0 or more), got {grace!r}")
    if kind == "resize":
        args = read_resize(r, args, where, plan.pod, plan.source, LIFECYCLE)
    if kind == "probe":
        probes = [k for k in ("liveness", "readiness", "startup") if k in args]
        if len(probes) != 1:
            r.fail(where, "give one of liveness:, readiness:, startup: (failure or success)")
        if str(args[probes[0]]).lower() not in ("failure", "success"):
            r.fail(f"{where}.{probes[0]}", f"expected failure or success, got {args[probes[0]]!r}")
        args["probe"], args["result"] = probes[0], str(args.pop(probes[0])).capitalize()
    return LifecycleEvent(at, kind, args, path)


def _expect(r: Reader, raw: Any, scenario: LifecycleScenario) -> dict:
    allowed = {key: fields.names(LIFECYCLE, f"expect.{key}[]") for key in EXPECT_KEYS}
    checked: dict[str, list] = {}
    for key, entries in r.expect_lists(raw, EXPECT_KEYS, allowed):
        items = checked[key] = []
        for where, item in entries:
            if "pod" in item:
                plan = scenario.find_pod(str(item["pod"]))
                if plan is None:
                    r.fail(f"{where}.pod", f"no pod {item['pod']!r} in pods:")
                item["pod"] = plan.pod.metadata.name
            elif key in ("pods", "restarts", "kills", "stops"):
                r.fail(f"{where}.pod", "required")
            if key in ("resizes", "cgroups"):
                read_resize_expect(r, key, where, item)
            elif "at" in item:
                item["at"] = r.duration(item["at"], f"{where}.at")
            elif key == "pods":
                r.fail(f"{where}.at", "required: the time the pod is looked at")
            for time_key in ("preStop", "sigterm", "sigkillBy"):
                if item.get(time_key) is not None:
                    item[time_key] = r.duration(item[time_key], f"{where}.{time_key}")
            if "gracePeriod" in item and key == "stops":
                item["gracePeriod"] = r.duration(item["gracePeriod"], f"{where}.gracePeriod")
            if "backOff" in item and item["backOff"] is not None:
                item["backOff"] = r.duration(item["backOff"], f"{where}.backOff")
            items.append(item)
    return checked
