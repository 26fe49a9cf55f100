"""`mini-kubelet explain`: a Pod's QoS class, every cgroup file the node writes for it, and who computes each.

The JSON output (`--output json`) is a stable structure, version "mini-kubelet.explain/v1":

    {
      "version": "mini-kubelet.explain/v1",
      "profile": {"kubernetesVersion": "1.27", "source": str, "featureGates": {gate: bool}},
      "cgroup_version": 1 | 2,
      "cgroup_driver": "cgroupfs" | "systemd",
      "node": {"name": str | null, "default": bool, "note": str,
               "capacity": {resource: quantity string}, "memory_capacity": int (bytes)},
      "inactive": [{"pod": "ns/name", "why": str}],
      "notes": [str],
      "pods": [{"name": str, "namespace": str, "uid": str, "qos_class": str, "qos_reason": str,
                "defaulted_requests": bool, "overhead": {resource: amount},
                "requests": {resource: amount}, "limits": {resource: amount},
                "containers": [{"name": str, "kind": "container" | "init container",
                                "requests": {resource: amount}, "limits": {resource: amount},
                                "copied_requests": [resource], "oom_score_adj": int, "cgroup": str}],
                "cgroup": str, "notes": [str]}],
      "cgroups": [{"path": str, "kind": "node" | "qos" | "pod" | "container" | "init container",
                   "pod": str, "container": str, "note": str,
                   "files": [{"name": str, "value": str, "computed_by": str}]}]
    }

An amount is a string as the kubelet reads it: cpu in millicores ("250m", Quantity.MilliValue),
anything else as a whole number (bytes for memory, Quantity.Value). A finished Pod (phase Succeeded or
Failed) is not active (filterOutInactivePods): it has no cgroups and no share in its QoS tier, and is
listed under "inactive" only. A container's requests are
those after API defaulting; copied_requests names the ones copied from its limits. A Pod's requests and
limits are its effective ones (PodRequests, PodLimits: overhead, sidecars and pod-level resources as the
release answered for counts them).
Values are the strings written to the files. computed_by names "path Func" of the upstream
function(s), joined by "; " in the order they apply. The file "/proc/<pid>/oom_score_adj" is a
per-process setting, listed with each container for completeness; it is not a cgroup file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from decimal import Decimal
from typing import TYPE_CHECKING, Optional

from kubernetes.client import V1Pod

from mini_kubelet import api, features, kubelet, qos, resource
from mini_kubelet.cmd.explain_resize import resize_lines, resize_report
from mini_kubelet.cmd.inputs import profile_json, profile_line, resource_notes, use_node_release
from mini_kubelet.cmd.reservations import check_reservations, parse_reserved
from mini_kubelet.cm.tree import DEFAULT_NODE_CAPACITY, DEFAULT_NODE_NOTE, OOM_SCORE_ADJ_FILE, Cgroup, cgroup_tree, node_capacity

if TYPE_CHECKING:  # a Node's models load when a Node is read, not for every Pod
    from kubernetes.client import V1Node

SCHEMA_VERSION = "mini-kubelet.explain/v1"
_QOS_SOURCE = "pkg/apis/core/v1/helper/qos/qos.go GetPodQOS"


# --8<-- [start:qos_reason]
def qos_reason(pod: V1Pod) -> str:
    """One sentence on why GetPodQOS gives this pod its class.

    Upstream: none (a course tool); it retraces pkg/apis/core/v1/helper/qos/qos.go GetPodQOS
    """
    qos_class = qos.get_pod_qos(pod)
    if qos_class != qos.compute_pod_qos(pod):
        return f"status.qosClass says {qos_class}, and GetPodQOS reads it first (from 1.29)"
    if features.DEFAULT_FEATURE_GATE.enabled("PodLevelResources") and pod.spec.resources is not None:
        return (f"pod-level resources (spec.resources) decide it with PodLevelResources on: {qos_class}"
                " from their cpu and memory requests and limits alone")
    if qos_class == qos.BEST_EFFORT:
        return "no container sets a cpu or memory request or limit above 0"
    if qos_class == qos.GUARANTEED:
        return "every container sets cpu and memory limits, and the requests equal the limits"
    kinds = [("container", c) for c in pod.spec.containers or []] + \
            [("init container", c) for c in pod.spec.init_containers or []]
    for kind, container in kinds:
        limits = (container.resources.limits if container.resources else None) or {}
        missing = [name for name in ("cpu", "memory") if api.parse_quantity(limits.get(name, "0")) <= 0]
        if missing:
            return f"{kind} {container.name} has no {' or '.join(missing)} limit"
    for name in ("cpu", "memory"):
        requested = sum((_positive(c, "requests", name) for _, c in kinds), Decimal(0))
        limited = sum((_positive(c, "limits", name) for _, c in kinds), Decimal(0))
        if requested and requested != limited:
            return (f"the pod's {name} requests ({amount(name, requested)}) differ from its limits"
                    f" ({amount(name, limited)}), summed over all containers, init containers included")
    return "some limits have no matching request"


def _positive(container, field: str, name: str) -> Decimal:
    amounts = getattr(container.resources, field, None) if container.resources else None
    amount = api.parse_quantity((amounts or {}).get(name, "0"))
    return amount if amount > 0 else Decimal(0)


def amount(resource_name: str, quantity: Decimal | str) -> str:
    """An amount as the kubelet reads it: cpu in millicores ("250m"), anything else as a whole number.

    Upstream: staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go Quantity.MilliValue, Quantity.Value
    """
    if resource_name == "cpu":
        return f"{api.milli_value(quantity)}m"
    return str(api.value(quantity))
# --8<-- [end:qos_reason]


# --8<-- [start:explain]
def explain(pods: list[V1Pod], node: Optional[V1Node], *, cgroup_version: int = 2, cgroup_driver: str = "cgroupfs",
            system_reserved: Optional[dict] = None, kube_reserved: Optional[dict] = None,
            single_process_oom_kill: Optional[bool] = None, swap_behavior: str = "",
            swap_capacity: int = 0) -> dict:
    """The report for these pods on this node, as the documented JSON-ready structure.

    Pods are first defaulted like the API server does (missing requests copied from limits); only active
    Pods are explained, as only they have cgroups (the QoS tiers count them alone).
    Upstream: none (a course tool)
    """
    given = list(pods)
    active = {id(p) for p in kubelet.filter_out_inactive_pods(given)}
    pods = [p for p in given if id(p) in active]
    defaulted = [resource.set_defaults_pod(pod) for pod in pods]
    tree = cgroup_tree(defaulted, node, cgroup_version=cgroup_version, cgroup_driver=cgroup_driver,
                       system_reserved=system_reserved, kube_reserved=kube_reserved,
                       single_process_oom_kill=single_process_oom_kill, swap_behavior=swap_behavior,
                       swap_capacity=swap_capacity)
    capacity = node_capacity(node)
    report = {
        "version": SCHEMA_VERSION,
        "cgroup_version": cgroup_version,
        "cgroup_driver": cgroup_driver,
        "node": {
            "name": node.metadata.name if node is not None else None,
            "default": node is None,
            "note": DEFAULT_NODE_NOTE if node is None else "",
            "capacity": dict(DEFAULT_NODE_CAPACITY) if node is None else
                        {name: str((node.status.capacity or {})[name]) for name in capacity},
            "memory_capacity": api.value(capacity.get("memory", Decimal(0))),
        },
        "inactive": [{"pod": api.pod_label(p), "why": f"phase {p.status.phase}"} for p in given if id(p) not in active],
        "notes": release_notes(cgroup_version, swap_behavior),
        "pods": [],
        "cgroups": [_cgroup_json(cgroup) for cgroup in tree],
    }
    for original, pod in zip(pods, defaulted):
        label = api.pod_label(pod)
        own = {(c.kind, c.container): c for c in tree if c.pod == label}
        report["pods"].append({
            "name": pod.metadata.name,
            "namespace": pod.metadata.namespace or "default",
            "uid": pod.metadata.uid or "",
            "qos_class": qos.get_pod_qos(pod),
            "qos_reason": qos_reason(pod),
            "defaulted_requests": _requests(original) != _requests(pod),
            "overhead": _amounts(pod.spec.overhead),
            "requests": _amounts(resource.pod_requests(pod)),
            "limits": _amounts(resource.pod_limits(pod)),
            "containers": [_container_json(kind, container, written, own[(kind, container.name)])
                           for (kind, container), (_, written) in zip(_containers(pod), _containers(original))],
            "cgroup": next((c.path for c in own.values() if c.kind == "pod"), ""),
            "notes": resource_notes(original),
            "resize": resize_report(original),
        })
    return report


def release_notes(cgroup_version: int, swap_behavior: str) -> list[str]:
    """What the release answered for does differently on this node: cgroup v1 refused, swap assumptions.

    Upstream: none (a course tool); it reads pkg/kubelet/apis/config/v1beta1/defaults.go (failCgroupV1) and
    pkg/kubelet/kuberuntime/kuberuntime_container_linux.go (swapControllerAvailable)
    """
    gate, notes = features.DEFAULT_FEATURE_GATE, []
    if cgroup_version == 1 and gate.changed("FailCgroupV1"):
        notes.append(f"Kubernetes {gate.release}: failCgroupV1 defaults to true, so this kubelet refuses to start on "
                     "cgroup v1 unless its config sets failCgroupV1: false; the files are what it writes if it does")
    if cgroup_version == 2 and gate.changed("MemoryOOMGroup"):
        notes.append("memory.swap.max: the swap controller is taken to be available (the kubelet checks for "
                     "memory.swap.max in its own cgroup); without it no swap file is written")
    if not gate.changed("MemoryOOMGroup") and gate.enabled("NodeSwap"):
        notes.append(f"NodeSwap in {gate.release}: each container's CRI memory_swap_limit_in_bytes is its memory "
                     f"limit ({swap_behavior or 'LimitedSwap'}): no swap beyond it; no cgroup file is shown for it")
    return notes


def _containers(pod: V1Pod) -> list:
    return [("init container", c) for c in pod.spec.init_containers or []] + \
           [("container", c) for c in pod.spec.containers or []]


def _requests(pod: V1Pod) -> list:
    return [dict((c.resources.requests if c.resources else None) or {}) for _, c in _containers(pod)]


def _amounts(resources: Optional[dict]) -> dict:
    return {name: amount(name, text) for name, text in sorted((resources or {}).items())}


def _container_json(kind: str, container, written, cgroup: Cgroup) -> dict:
    requests = (container.resources.requests if container.resources else None) or {}
    before = (written.resources.requests if written.resources else None) or {}
    return {"name": container.name, "kind": kind, "requests": _amounts(requests),
            "limits": _amounts(container.resources.limits if container.resources else None),
            "copied_requests": sorted(set(requests) - set(before)),
            "oom_score_adj": int(cgroup.files[OOM_SCORE_ADJ_FILE]), "cgroup": cgroup.path}


def _cgroup_json(cgroup: Cgroup) -> dict:
    return {"path": cgroup.path, "kind": cgroup.kind, "pod": cgroup.pod, "container": cgroup.container,
            "note": cgroup.note,
            "files": [{"name": name, "value": value, "computed_by": cgroup.computed_by.get(name, "")}
                      for name, value in cgroup.files.items()]}
# --8<-- [end:explain]


# --8<-- [start:render_json]
def render_json(report: dict) -> str:
    """The report as indented JSON, keys in the documented order.

    Upstream: none (a course tool)
    """
    return json.dumps(report, indent=2)
# --8<-- [end:render_json]


_STYLES = {"bold": "1", "dim": "2", "qos": "1;36", "path": "1;34", "value": "33"}
_WIDTH = 80  # notes and the legend wrap to fit a terminal or a page; the JSON has the full provenance
_SET_DEFAULTS = "pkg/apis/core/v1/defaults.go SetDefaults_Pod"
_OOM_SOURCE = "pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust"


# --8<-- [start:render_text]
def render_text(report: dict, *, color: bool = False) -> str:
    """The report for a terminal: node; each pod's class, resources and OOM scores; the cgroup tree; sources.

    Under each file, the upstream functions that computed it, by name; the legend at the end
    gives each function's file.
    Upstream: none (a course tool)
    """
    def paint(text: str, style: str) -> str:
        return f"\033[{_STYLES[style]}m{text}\033[0m" if color else text

    def wrap(text: str, indent: str) -> list[str]:
        return textwrap.wrap(text, _WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                             break_on_hyphens=False, break_long_words=False)

    sources = {_QOS_SOURCE.rsplit(" ", 1)[1]: _QOS_SOURCE.rsplit(" ", 1)[0]}
    node = report["node"]
    lines = [paint(f"Node {node['name']}" if node["name"] else "Node (default)", "bold")
             + f"  memory capacity {node['memory_capacity']} bytes"
             + f"  cgroup v{report['cgroup_version']}, {report['cgroup_driver']} driver"]
    if node["default"]:
        lines += wrap(f"note: {node['note']}", "  ")
    for item in report["inactive"]:
        lines += wrap(f"not active: {item['pod']} ({item['why']}): no cgroups, not counted in its QoS tier "
                      "(filterOutInactivePods)", "  ")
    for note in report["notes"]:
        lines += wrap(f"note: {note}", "  ")
    for pod in report["pods"]:
        lines.append("")
        lines.append(paint(f"Pod {pod['namespace']}/{pod['name']}", "bold") + "  QoS class "
                     + paint(pod["qos_class"], "qos"))
        lines += wrap(f"why (GetPodQOS): {pod['qos_reason']}", "  ")
        lines += [line for note in pod["notes"] for line in wrap(f"note: {note}", "  ")]
        lines += _resource_table(pod)
        if pod.get("resize"):
            lines += [line for text in resize_lines(pod["resize"]) for line in wrap(text, "  ")]
        if pod["defaulted_requests"]:
            lines.append("  * copied from the limit, as the API server does (SetDefaults_Pod)")
            sources["SetDefaults_Pod"] = _SET_DEFAULTS.rsplit(" ", 1)[0]
        for container in pod["containers"]:
            lines.append(f"  {container['kind']} {container['name']}: oom_score_adj "
                         + paint(str(container["oom_score_adj"]), "value"))
        sources["GetContainerOOMScoreAdjust"] = _OOM_SOURCE.rsplit(" ", 1)[0]
        lines.append(f"  cgroup: {pod['cgroup']}")
    files = [f for cgroup in report["cgroups"] for f in cgroup["files"]]
    name_width = max((len(f["name"]) for f in files), default=0)
    value_width = max((len(f["value"]) for f in files), default=0)
    lines += ["", paint("Cgroup tree", "bold") + "  (under each file: the functions that compute it, in order)"]
    for cgroup in report["cgroups"]:
        lines.append(paint(cgroup["path"], "path"))
        if cgroup["note"]:
            lines += [paint(line, "dim") for line in wrap(f"# {cgroup['note']}", "  ")]
        for f in cgroup["files"]:
            lines.append(f"  {f['name']:<{name_width}}  " + paint(f"{f['value']:>{value_width}}", "value"))
            functions = []
            for source in filter(None, f["computed_by"].split("; ")):
                path, function = source.rsplit(" ", 1)
                sources.setdefault(function, path)
                functions.append(function)
            if functions:
                lines += [paint(line, "dim") for line in textwrap.wrap(
                    "by " + ", ".join(functions), _WIDTH, initial_indent="      ", subsequent_indent="         ")]
    release = report.get("profile", {}).get("kubernetesVersion", "1.27")
    lines += ["", paint(f"Where each function is (Kubernetes v{release}, or runc where it says so)", "bold")]
    by_file: dict[str, list[str]] = {}
    for function, path in sources.items():
        by_file.setdefault(path, []).append(function)
    for path, functions in by_file.items():
        lines.append(f"  {path}")
        lines += wrap(", ".join(functions), "      ")
    return "\n".join(lines)


def _resource_table(pod: dict) -> list[str]:
    """Each container's requests and limits, in millicores and bytes, as `mini-kubelet show` prints them."""
    pad = " " if any(c["copied_requests"] for c in pod["containers"]) else ""  # room for the "*"
    rows = [("container", "resource", "request" + pad, "limit")]
    for container in pod["containers"]:
        label = container["name"] + (" (init)" if container["kind"] == "init container" else "")
        names = sorted(set(container["requests"]) | set(container["limits"])) or ["-"]
        for name in names:
            request = container["requests"].get(name, "-") + ("*" if name in container["copied_requests"] else pad)
            rows.append((label, name, request, container["limits"].get(name, "-")))
            label = ""
    rows += [("(overhead)", name, value + pad, "-") for name, value in pod["overhead"].items()]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return [f"  {a:<{widths[0]}}  {b:<{widths[1]}}  {c:>{widths[2]}}  {d:>{widths[3]}}".rstrip() for a, b, c, d in rows]
# --8<-- [end:render_text]




def _swap_settings(args: argparse.Namespace, node: Optional[V1Node]) -> tuple[str, int, list[str]]:
    """memorySwap.swapBehavior and the node's swap in bytes from the flags and the Node; UsageError when the
    release cannot take them (NodeSwap off, or NoSwap before 1.30).

    The swap size is the Node's status.nodeInfo.swap.capacity (reported from 1.33) if it has one, else --swap-capacity.
    """
    gate = features.DEFAULT_FEATURE_GATE
    behavior, flag_capacity = getattr(args, "swap_behavior", None), getattr(args, "swap_capacity", None)
    if behavior is None and flag_capacity is None:
        return "", 0, []
    flag = "--swap-behavior" if behavior is not None else "--swap-capacity"
    if not gate.enabled("NodeSwap"):
        raise api.UsageError(f"{flag}: memorySwap needs the NodeSwap feature gate, off in Kubernetes {gate.release} "
                             "(--feature-gates NodeSwap=true turns it on)")
    if behavior == "NoSwap" and int(gate.release.split(".")[1]) < 30:
        raise api.UsageError(f"--swap-behavior: NoSwap is a swapBehavior from Kubernetes 1.30 (this is {gate.release})")
    info = node.status.node_info if node is not None and node.status is not None else None
    reported = info.swap.capacity if info is not None and info.swap is not None else None
    notes = []
    if reported is not None:
        capacity = int(reported)
        notes.append(f"swap: {capacity} bytes, the Node's status.nodeInfo.swap.capacity"
                     + (" (--swap-capacity is not used)" if flag_capacity is not None else ""))
    elif flag_capacity is not None:
        try:
            capacity = api.value(api.parse_quantity(flag_capacity))
        except api.ManifestError:
            raise api.UsageError(f"--swap-capacity: {flag_capacity!r} is not a quantity (e.g. 4Gi)") from None
        notes.append(f"swap: {capacity} bytes, from --swap-capacity")
    else:
        capacity = 0
        notes.append("swap: none known (no status.nodeInfo.swap.capacity, no --swap-capacity): 0 bytes")
    return behavior or "", capacity, notes


def run(args: argparse.Namespace) -> int:
    """Explain each Pod in the file; bad input raises ManifestError or UsageError (one line, exit 2)."""
    inputs = args.inputs  # every file read, the Pods and the Node checked (main: read_inputs)
    pods = [obj for obj in inputs.load(args.pod_file, "POD.yaml") if obj.kind == "Pod"]
    nodes = [obj for obj in inputs.load(args.node, "--node") if obj.kind == "Node"] if args.node else []
    for pod in pods:
        if not pod.metadata.uid:
            pod.metadata.uid = "<uid>"  # a hand-written Pod: the API server would assign one
    try:
        reserved = {flag: parse_reserved(getattr(args, flag.replace("-", "_")), f"--{flag}")
                    for flag in ("system-reserved", "kube-reserved")}
        check_reservations(node_capacity(nodes[0] if nodes else None), reserved)
    except ValueError as err:
        raise api.UsageError(str(err)) from None
    use_node_release(args, nodes[0] if nodes else None)
    swap_behavior, swap_capacity, swap_notes = _swap_settings(args, nodes[0] if nodes else None)
    single = getattr(args, "single_process_oom_kill", None)
    if single and not features.DEFAULT_FEATURE_GATE.changed("SingleProcessOOMKill"):
        raise api.UsageError(f"--single-process-oom-kill: the kubelet config singleProcessOOMKill is from Kubernetes "
                             f"1.32 (this is {features.DEFAULT_FEATURE_GATE.release})")
    report = explain(pods, nodes[0] if nodes else None, cgroup_version=args.cgroup_version,
                             cgroup_driver=args.cgroup_driver, system_reserved=reserved["system-reserved"],
                             kube_reserved=reserved["kube-reserved"], single_process_oom_kill=single,
                             swap_behavior=swap_behavior, swap_capacity=swap_capacity)
    report["notes"] += swap_notes
    report = {"version": report["version"], "profile": profile_json(args), **report}
    if args.output == "json":
        print(render_json(report))
    else:
        if profile_line(args):
            print(profile_line(args))
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
        print(render_text(report, color=color))
    return 0
