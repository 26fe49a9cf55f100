"""`mini-kubelet admit`: would the kubelet admit these Pods on this Node, and if not, what would it write?

Each Pod in POD.yaml goes through HandlePodAdditions: oldest first, each checked against the running Pods
(--running) plus the ones admitted before it. The output says admitted or rejected, which handler and
check decided, the status and event exactly as the kubelet writes them, and the fit numbers.

Running Pods bound to another node (spec.nodeName set to another name) are left out, as they are not in
this kubelet's pod manager, and so is a running Pod with the UID of a Pod being admitted (it is that Pod);
a running mirror Pod stands for its static Pod. The Node's pressure conditions (MemoryPressure, DiskPressure,
PIDPressure with status "True") are what the eviction manager reports, and its admit handler reads them.
The command exits 1 when a Pod is rejected. The JSON output
(`--output json`) is a stable structure, version "mini-kubelet.admit/v1":

    {"version": "mini-kubelet.admit/v1",
     "profile": {"kubernetesVersion": "1.27", "source": str, "featureGates": {gate: bool}},
     "node": {"name": str, "os": "linux", "allocatable": {resource: int}, "conditions": [str]},
     "running": {"counted": ["ns/name", ...], "left_out": [{"pod": "ns/name", "why": str}, ...],
                 "inactive": [{"pod": "ns/name", "why": str}, ...], "admitting": [{"pod": "ns/name", "why": str}]},
     "notes": [str],
     "pods": [{"namespace": str, "name": str, "admitted": bool, "skipped": str, "notes": [str],
               "decided_by": {"handler": str, "upstream": str, "check": str} | null,
               "status": {"phase": str, "reason": str, "message": str},
               "event": {"type": str, "reason": str, "message": str} | null,
               "checks": [{"check": str, "result": "ok" | "failed" | "skipped" | "not reached", "detail": str}],
               "fit": [{"resource": str, "unit": str, "requested": int, "used": int, "allocatable": int,
                        "fits": bool}],
               "ignored_requests": [str], "checked_against": int,
               "preempted": [{"pod": "ns/name", "status": {...}, "event": {...}}]}]}

Amounts are integers: cpu in millicores, memory and storage in bytes, other resources in units.
"""

from __future__ import annotations

import argparse
import copy
import json

from kubernetes.client import V1Node, V1Pod

from mini_kubelet import api, features, kubelet, lifecycle, scheduler, types
from mini_kubelet.cmd.inputs import profile_json, profile_line, resource_notes, use_node_release
from mini_kubelet.eviction import manager as eviction

VERSION = "mini-kubelet.admit/v1"
_UNITS = {scheduler.PODS: "pods", scheduler.CPU: "millicores", scheduler.MEMORY: "bytes",
          scheduler.EPHEMERAL_STORAGE: "bytes"}
_CHECKS = ["resource fit", lifecycle.NODE_AFFINITY, lifecycle.NODE_NAME, lifecycle.NODE_PORTS,
           lifecycle.TAINT_TOLERATION, "OS label", "OS field"]


# --8<-- [start:admission_report]
def admission_report(pods: list[V1Pod], node: V1Node, running: list[V1Pod]) -> dict:
    """Run HandlePodAdditions and describe each pod's outcome with its checks and fit numbers.

    Upstream: none (a course tool around pkg/kubelet/kubelet.go HandlePodAdditions)
    """
    counted, left_out, admitting = [], [], []
    new_uids = {p.metadata.uid for p in pods if p.metadata.uid}
    for pod in running:
        bound = pod.spec.node_name
        if pod.metadata.uid and pod.metadata.uid in new_uids:
            admitting.append({"pod": api.pod_label(pod), "why": "same UID as a Pod being admitted"})
        elif bound and bound != node.metadata.name:
            left_out.append({"pod": api.pod_label(pod), "why": f"bound to node {bound}"})
        else:
            counted.append(pod)
    active = {id(p) for p in kubelet.filter_out_inactive_pods(counted)}
    inactive = [{"pod": api.pod_label(p), "why": f"phase {p.status.phase}"} for p in counted if id(p) not in active]
    outcomes, conditions = admit_on_node(pods, node, counted)
    notes: list[str] = []
    report = {"version": VERSION,
              "node": {"name": node.metadata.name, "os": lifecycle.GOOS,
                       "allocatable": scheduler.new_node_info(node, []).allocatable, "conditions": conditions},
              "running": {"counted": [api.pod_label(p) for p in counted], "left_out": left_out, "inactive": inactive,
                          "admitting": admitting},
              "notes": notes, "pods": []}
    for outcome in outcomes:
        report["pods"].append(_describe(outcome, node, conditions))
    return report


def admit_on_node(pods: list[V1Pod], node: V1Node, admitted: list[V1Pod] = ()
                  ) -> tuple[list[kubelet.AdmissionOutcome], list[str]]:
    """HandlePodAdditions on this Node, with the eviction manager's handler reading its pressure conditions.

    The one admission path of the commands (admit, watch): new pods oldest first, each against the active
    `admitted` pods and those admitted before it. Returns the outcomes and the conditions read.
    Upstream: pkg/kubelet/kubelet.go Kubelet.HandlePodAdditions, eviction_manager.go managerImpl.Admit first
    """
    conditions = node_pressure_conditions(node)
    manager = eviction.Manager(eviction.Config(), clock=None)
    manager.node_conditions = conditions  # what the eviction manager last reported (the Node's status)
    return kubelet.handle_pod_additions(pods, node, admitted=admitted, eviction_admit=manager.admit), conditions


def bound_elsewhere_note(pod: V1Pod, node: V1Node) -> str:
    """A note when the Pod is bound to another node: this kubelet's API source would never deliver it ("" if not).

    Upstream: pkg/kubelet/config/apiserver.go NewSourceApiserver (the list and watch select spec.nodeName)
    """
    bound, name = pod.spec.node_name, node.metadata.name
    if not bound or bound == name:
        return ""
    return (f"spec.nodeName is {bound}: the kubelet of {name} would never see this Pod, as its API source lists "
            f"only the Pods with spec.nodeName={name}; this verdict is what it would do if handed the Pod anyway")


def node_pressure_conditions(node: V1Node) -> list[str]:
    """The pressure conditions the Node reports ("True"), in its order: what the eviction admit handler reads.

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.nodeConditions (the status setters
    in pkg/kubelet/nodestatus/setters.go write them to the Node)
    """
    pressure = (eviction.NODE_MEMORY_PRESSURE, eviction.NODE_DISK_PRESSURE, eviction.NODE_PID_PRESSURE)
    found = [c.type for c in (node.status.conditions if node.status else None) or []
             if c.type in pressure and c.status == "True"]
    return list(dict.fromkeys(found))
# --8<-- [end:admission_report]


def _describe(outcome: kubelet.AdmissionOutcome, node: V1Node, conditions: list[str]) -> dict:
    pod, result = outcome.pod, outcome.result
    entry = {"namespace": pod.metadata.namespace or "default", "name": pod.metadata.name,
             "admitted": result.admit, "skipped": outcome.skipped, "decided_by": None,
             "status": {"phase": _phase(outcome), "reason": outcome.status_reason,
                        "message": outcome.status_message},
             "event": dict(zip(("type", "reason", "message"), outcome.event)) if outcome.event else None,
             "notes": [note for note in (bound_elsewhere_note(pod, node),) if note] + resource_notes(pod),
             "checks": [], "fit": [], "ignored_requests": [], "checked_against": len(outcome.active_pods),
             "preempted": [{"pod": api.pod_label(v.pod),
                            "status": {"phase": v.status_phase, "reason": v.status_reason, "message": v.status_message},
                            "event": dict(zip(("type", "reason", "message"), v.event))} for v in outcome.preempted]}
    if outcome.skipped:
        return entry
    if outcome.handler:
        upstream = dict(kubelet.ADMIT_HANDLER_ORDER)[outcome.handler]
        check = result.reason
        if result.reason.startswith(lifecycle.INSUFFICIENT_RESOURCE_PREFIX) and outcome.handler == "predicate":
            check = "resource fit: " + result.reason[len(lifecycle.INSUFFICIENT_RESOURCE_PREFIX):]
        if outcome.handler == "eviction":
            check = (f"node condition {conditions[0]}: a BestEffort Pod is refused" if conditions == ["MemoryPressure"]
                     else f"node condition{'s' if len(conditions) > 1 else ''} {', '.join(conditions)}: "
                          "only critical Pods are admitted")
        entry["decided_by"] = {"handler": outcome.handler, "upstream": upstream, "check": check}
    node_info = scheduler.new_node_info(node, outcome.active_pods)
    filtered = lifecycle.remove_missing_extended_resources(pod, node_info)
    entry["ignored_requests"] = sorted(_requested(pod) - _requested(filtered))
    reasons = lifecycle.general_filter(filtered, node_info)
    short = {r.resource_name for r in reasons if isinstance(r, lifecycle.InsufficientResourceError)}
    failed = {r.predicate_name for r in reasons if isinstance(r, lifecycle.PredicateFailureError)}
    request = scheduler.compute_pod_resource_request(filtered)
    names = [scheduler.PODS, scheduler.CPU, scheduler.MEMORY, scheduler.EPHEMERAL_STORAGE]
    names += sorted(set(request) - set(names))
    for name in names:
        used = len(node_info.pods) if name == scheduler.PODS else node_info.requested.get(name, 0)
        unit = "bytes" if name.startswith("hugepages-") else _UNITS.get(name, "units")
        entry["fit"].append({"resource": name, "unit": unit,
                             "requested": 1 if name == scheduler.PODS else request.get(name, 0), "used": used,
                             "allocatable": node_info.allocatable.get(name, 0), "fits": name not in short})
    predicates_failed = bool(reasons)
    os_node = copy.deepcopy(node)  # the OS label check corrects the node's label in place
    os_first = features.DEFAULT_FEATURE_GATE.changed("AdmissionOSChecksFirst")  # 1.29: the OS checks come first
    os_failed = os_first and lifecycle.os_rejection(pod, copy.deepcopy(node)) is not None
    for check in _CHECKS[-2:] + _CHECKS[:-2] if os_first else _CHECKS:
        if outcome.handler == "eviction":
            result_, detail = "not reached", ""
        elif os_failed and not check.startswith("OS"):
            result_, detail = "not reached", "runs only after the OS checks pass"
        elif check == "resource fit":
            result_, detail = ("failed", "short of " + ", ".join(sorted(short))) if short else ("ok", "")
        elif check == lifecycle.TAINT_TOLERATION and types.is_static_pod(pod):
            result_, detail = "skipped", "static pods are not checked against taints"
        elif check in failed:
            result_, detail = "failed", next(r.predicate_desc for r in reasons
                                             if isinstance(r, lifecycle.PredicateFailureError) and r.predicate_name == check)
        elif check.startswith("OS") and predicates_failed and not outcome.preempted and not os_first:
            result_, detail = "not reached", "runs only after the predicates pass"
        elif check == "OS label":
            bad = lifecycle.reject_pod_admission_based_on_os_selector(pod, os_node)
            result_, detail = ("failed", f"Pod label {lifecycle.LABEL_OS_STABLE} is not {lifecycle.GOOS}") if bad else ("ok", "")
        elif check == "OS field":
            bad = lifecycle.reject_pod_admission_based_on_os_field(pod)
            result_, detail = ("failed", f"spec.os.name is not {lifecycle.GOOS}") if bad else ("ok", "")
        else:
            result_, detail = "ok", ""
        entry["checks"].append({"check": check, "result": result_, "detail": detail})
    return entry


def _requested(pod: V1Pod) -> set[str]:
    """The resource names the containers request (from 1.31 the init containers' too, which admission filters)."""
    containers = list(pod.spec.containers or [])
    if features.DEFAULT_FEATURE_GATE.changed("InitContainerExtendedResourcesDropped"):
        containers += pod.spec.init_containers or []
    return {name for c in containers for name in ((c.resources.requests if c.resources else None) or {})}


def _phase(outcome: kubelet.AdmissionOutcome) -> str:
    """The phase after admission: Failed if rejected; an admitted Pod keeps the phase it has (Pending if none)."""
    given = outcome.pod.status.phase if outcome.pod.status else None
    return given if outcome.result.admit and not outcome.skipped and given else outcome.status_phase


WIDTH = 80  # a terminal, and a code block on the course site


def _wrap(first: str, text: str, *, hang: int = 2, width: int = WIDTH) -> list[str]:
    """`first` + text in lines of at most width, continuation lines hanging `hang` columns under the text.

    Breaks after a comma where it can, else at a space; a word longer than a line is left whole.
    Joining the lines with single spaces gives the text back (a trailing space included).
    """
    indent = " " * (len(first) + hang)
    lines, line, fresh = [], first, True

    def put(piece: str, whole: bool) -> bool:
        nonlocal line, fresh
        candidate = line + ("" if fresh else " ") + piece
        if len(candidate) <= width or (fresh and not whole):
            line, fresh = candidate, False
            return True
        if not fresh and (not whole or len(indent) + len(piece) <= width):
            lines.append(line)
            line, fresh = indent + piece, False
            return True
        return False

    chunks = text.split(", ")
    for piece in [c + "," for c in chunks[:-1]] + chunks[-1:]:
        if not put(piece, whole=True):
            for word in piece.split(" "):
                put(word, whole=False)
    return lines + [line]


def _rows(rows: list[tuple[str, str]]) -> list[str]:
    """Label/text rows with the texts aligned, long texts wrapped."""
    width = max(len(label) for label, _ in rows)
    lines = []
    for label, text in rows:
        lines += _wrap(f"  {label:<{width}}  ", text)
    return lines


def _verdict(pod: dict) -> list[tuple[str, str]]:
    status, rows = pod["status"], []
    rows.append(("status", f"phase {status['phase']}" + (f", reason {status['reason']}" if status["reason"] else "")))
    if status["message"]:
        rows.append(("", f"message: {status['message']}"))
    if pod["event"]:
        event = pod["event"]
        rows.append(("event", f"{event['type']} {event['reason']}: {event['message']}"))
    return rows


def _failed_checks(pod: dict) -> list[str]:
    """The failed checks, the reported one first; a resource failure with its fit numbers."""
    texts = []
    for c in pod["checks"]:
        if c["result"] != "failed":
            continue
        if c["check"] == "resource fit":
            texts += [f"resource fit, {f['resource']}: requested {f['requested']}, used {f['used']}, "
                      f"allocatable {f['allocatable']}" for f in pod["fit"] if not f["fits"]]
        else:
            texts.append(f"{c['check']}: {c['detail']}")
    return texts


# --8<-- [start:render_text]
def render_text(report: dict, *, brief: bool = False) -> str:
    """The report for an 80-column terminal: the node, then per pod the verdict, status, event, checks, fit table.

    brief: per pod only the verdict, status, event, the failed checks and any preempted Pods.
    Upstream: none (a course tool)
    """
    lines = []
    if not brief:
        node = report["node"]
        alloc = ", ".join(f"{k} {v}{'m' if k == 'cpu' else ''}" for k, v in node["allocatable"].items())
        lines.append(f"Node {node['name']} ({node['os']})")
        lines += _wrap("  allocatable: ", alloc or "nothing", hang=-11)
        if node["conditions"]:
            lines += _wrap("  conditions: ", ", ".join(node["conditions"]) + " (the eviction admit handler reads them)",
                           hang=-10)
        running = report["running"]
        given = len(running["counted"]) + len(running["left_out"]) + len(running["admitting"])
        lines.append(f"Running Pods: {given} given, "
                     f"{len(running['counted']) - len(running['inactive'])} active on this node"
                     + (" (filterOutInactivePods)" if running["inactive"] else ""))
        for item in running["left_out"]:
            lines += _wrap("  not on this node: ", f"{item['pod']} ({item['why']})")
        for item in running["inactive"]:
            lines += _wrap("  not active: ", f"{item['pod']} ({item['why']})")
        for item in running["admitting"]:
            lines += _wrap("  left out: ", f"{item['pod']} ({item['why']})")
    for note in report["notes"]:
        lines += _wrap("note: ", note, hang=0)
    for pod in report["pods"]:
        if lines:
            lines.append("")
        head = f"Pod {pod['namespace']}/{pod['name']}: "
        if pod["skipped"]:
            lines += _wrap(head, f"admission skipped ({pod['skipped']})")
            continue
        decided = pod["decided_by"]
        lines += _wrap(head, "ADMITTED" if pod["admitted"] else f"REJECTED by the {decided['handler']} handler",
                       hang=2 - len(head))
        rows = _verdict(pod)
        if brief:
            rows += [("failed" if i == 0 else "", text) for i, text in enumerate(_failed_checks(pod))]
        elif decided:
            rows += [("decided by", decided["check"]), ("upstream", decided["upstream"])]
        for victim in pod["preempted"]:
            rows.append(("preempted", f"{victim['pod']}: phase {victim['status']['phase']}, reason "
                                      f"{victim['status']['reason']} ({victim['status']['message']})"))
        if brief and pod["ignored_requests"]:
            rows.append(("ignored", ", ".join(pod["ignored_requests"]) + " (extended, not listed by the node)"))
        rows += [("note", note) for note in pod["notes"]]
        lines += _rows(rows)
        if brief:
            continue
        check_width = max(len(c["check"]) for c in pod["checks"])
        if decided and decided["handler"] == "eviction":
            lines.append("  predicate checks (not run: the eviction handler rejected the Pod first):")
        else:
            lines.append("  predicate checks (all run; the kubelet reports only the first failure):")
        for c in pod["checks"]:
            lines += _wrap(f"    {c['check']:<{check_width}}  ", c["result"] + (f"  {c['detail']}" if c["detail"] else ""))
        lines.append(f"  fit against {pod['checked_against']} active Pod(s); "
                     "fits while requested <= allocatable - used:")
        table = [("resource", "requested", "used", "allocatable", "fits")]
        table += [(f"{f['resource']} ({f['unit']})", str(f["requested"]), str(f["used"]), str(f["allocatable"]),
                   "yes" if f["fits"] else "NO") for f in pod["fit"]]
        widths = [max(len(row[i]) for row in table) for i in range(5)]
        for row in table:
            lines.append("    " + "  ".join(cell.ljust(w) if i in (0, 4) else cell.rjust(w)
                                           for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
        if pod["ignored_requests"]:
            lines += _wrap("  ", "ignored (extended resources the node does not list): "
                           + ", ".join(pod["ignored_requests"]))
    return "\n".join(lines)
# --8<-- [end:render_text]


def run(args: argparse.Namespace) -> int:
    """Check each Pod in the file; exit 1 if one is rejected; bad input raises ManifestError or UsageError (exit 2)."""
    inputs = args.inputs  # every file read and its kinds checked (main: read_inputs)
    pods = inputs.load(args.pod_file, "POD.yaml")
    nodes = inputs.load(args.node, "--node")
    running = inputs.load(args.running, "--running") if args.running else []
    use_node_release(args, nodes[0])
    report = admission_report(pods, nodes[0], running)
    report = {"version": report["version"], "profile": profile_json(args), **report}
    if args.output == "text" and profile_line(args):
        print(profile_line(args))
    print(json.dumps(report, indent=2) if args.output == "json" else render_text(report, brief=args.brief))
    return 1 if any(not pod["admitted"] and not pod["skipped"] for pod in report["pods"]) else 0
