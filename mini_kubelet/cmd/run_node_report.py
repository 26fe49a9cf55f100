"""`mini-kubelet run` on a one-node scenario: the timeline, `kubectl get events`, `kubectl get pods`, or JSON.

The JSON structure, "mini-kubelet.node/v1" (times are seconds since the start, sizes bytes):

    {"version": "mini-kubelet.node/v1",
     "profile": {"kubernetesVersion": "1.27", "source": str, "featureGates": {gate: bool}},
     "scenario": {"name", "source", "description", "duration", "node": {"name", "capacity", "allocatable"},
                  "kubelet": {the settings, defaults filled in}, "pods": int},
     "timeline": [{"time", "kind", "pod", "text"}],        # kind: arrive, exit, oomKill, evict, reject, condition,
                                                            # recreate, pending, delete, removed, set, pullImage, imageGC,
                                                            # resize
     "oomKills": [{"time", "pod", "container", "limit", "oomScoreAdj", "restartCount"}],
     "evictions": [{"time", "pod", "signal", "gracePeriod", "message"}],
     "rejections": [{"time", "pod", "reason", "message", "handler"}],
     "conditions": [{"type", "from", "to"}],               # to: null while still reported at the end
     "containers": [{"pod", "container", "qosClass", "priority", "cpuShares", "cpuQuota", "cpuPeriod",
                     "memoryLimit", "oomScoreAdj"}],       # chapter 3's values, at each container's first start
     "signals": [[time, memory.available, nodefs.available, imagefs.available]],   # one row per eviction pass
     "events": [{"firstSeen", "lastSeen", "count", "type", "reason", "object", "message"}],  # repeats folded
     "watch": [{"time", "pod", "ready", "status", "restarts", "phase"}],
     "pods": [{"name", "ready", "status", "restarts", "lastRestart", "age", "phase", "reason", "message"}],
     "resizes": [{"time", "pod", "type", "status", "reason", "message"}],   # only if any: resize conditions set or removed
     "cgroups": [{"time", "cgroup", "file", "old", "new"}],                   # only if any: each cgroup file a resize wrote
     "passes": int,
     "expect": null | {"checked": int, "failures": [str]}}
"""

from __future__ import annotations

import json
from typing import Optional

from mini_kubelet.cmd.inputs import with_profile
from mini_kubelet.cmd.run_lifecycle_report import resize_lines

from mini_kubelet.sim.node.trace import NodeTrace, check_node_expect, human_duration
from mini_kubelet.sim.series import format_duration as d

VERSION = "mini-kubelet.node/v1"
EVENT_TTL = 3600  # seconds: the API server keeps events an hour (kube-apiserver --event-ttl default)
QUIET_KINDS = ("arrive", "exit")  # timeline kinds left to the JSON: every Pod's arrival, every ordinary exit


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def _restarts(row: dict) -> str:
    """kubectl's RESTARTS column: the count, and how long ago the last one ended (printPod's lastRestartDate)."""
    if row["lastRestart"] is None:
        return str(row["restarts"])
    return f"{row['restarts']} ({human_duration(row['lastRestart'])} ago)"


# --8<-- [start:render_text]
def render_text(trace: NodeTrace) -> str:
    """The timeline's notable lines, the events of the last hour (at the timeline's times), the Pods at the end, a summary."""
    sc, end = trace.scenario, trace.scenario.duration
    cap, alloc = sc.node.status.capacity, sc.node.status.allocatable
    lines = [f"scenario {sc.name}: {d(end)} on node {sc.node_name} (memory {cap['memory']}, allocatable "
             f"{alloc['memory']}; cpu {cap['cpu']}; maxPods {sc.kubelet['maxPods']}); {len(trace.pods)} pods in the API at the end"]
    if sc.description:
        lines.append(sc.description)
    quiet = sum(1 for e in trace.timeline if e["kind"] in QUIET_KINDS)
    lines += ["", f"timeline ({quiet} arrivals and container exits are in --output json)"]
    rows = [["TIME", "WHAT"]] + [[d(e["time"]), e["text"]] for e in trace.timeline if e["kind"] not in QUIET_KINDS]
    lines += ["  " + line for line in _table(rows)] if len(rows) > 1 else ["  nothing but arrivals and exits"]
    lines += resize_lines(trace.resizes, trace.cgroups)
    recent = [e for e in trace.kubectl_events if e["lastSeen"] >= end - EVENT_TTL]
    lines += ["", f"kubectl get events (at {d(end)}: the last hour's, repeats folded; {len(trace.kubectl_events) - len(recent)} "
                  "older ones have expired)"]
    rows = [["LAST SEEN AT", "TYPE", "REASON", "OBJECT", "MESSAGE"]]  # one clock for the whole report
    rows += [[d(e["lastSeen"]), e["type"], e["reason"], e["object"],
              e["message"] + (f" (x{e['count']} over {human_duration(e['lastSeen'] - e['firstSeen'])})" if e["count"] > 1 else "")]
             for e in recent]
    lines += ["  " + line for line in _table(rows)]
    lines += ["", f"kubectl get pods (at {d(end)})"]
    rows = [["NAME", "READY", "STATUS", "RESTARTS", "AGE"]]
    rows += [[p["name"], p["ready"], p["status"], _restarts(p), human_duration(p["age"])] for p in trace.pods]
    lines += ["  " + line for line in _table(rows)]
    conditions = ", ".join(f"{c['type']} {d(c['from'])}-{d(c['to']) if c['to'] is not None else 'end'}"
                           for c in trace.conditions) or "none"
    lines += ["", f"summary: {trace.passes} eviction passes; {len(trace.oom_kills)} OOM kills by the kernel; "
                  f"{len(trace.evictions)} evictions; {len(trace.rejections)} rejections; conditions: {conditions}"]
    if sc.expect is not None:
        checked, failures = check_node_expect(trace)
        lines.append(f"expect: {checked} checks, " + ("all met" if not failures else f"{len(failures)} not met:"))
        lines += ["  " + f for f in failures]
    return "\n".join(lines)
# --8<-- [end:render_text]


def as_json(trace: NodeTrace) -> dict:
    """The trace as a JSON-ready mapping (VERSION's structure)."""
    sc = trace.scenario
    expect = None
    if sc.expect is not None:
        checked, failures = check_node_expect(trace)
        expect = {"checked": checked, "failures": failures}
    return {"version": VERSION,
            "scenario": {"name": sc.name, "source": sc.source, "description": sc.description, "duration": sc.duration,
                         "node": {"name": sc.node_name, "capacity": dict(sc.node.status.capacity),
                                  "allocatable": dict(sc.node.status.allocatable)},
                         "kubelet": sc.kubelet, "pods": len(trace.pods)},
            "timeline": trace.timeline, "oomKills": trace.oom_kills, "evictions": trace.evictions,
            "rejections": trace.rejections, "conditions": trace.conditions, "containers": trace.containers,
            "signals": trace.signals, "events": trace.kubectl_events, "watch": trace.watch, "pods": trace.pods,
            **({"resizes": trace.resizes} if trace.resizes else {}), **({"cgroups": trace.cgroups} if trace.cgroups else {}),
            "passes": trace.passes, "expect": expect}


def render_json(trace: NodeTrace, profile: Optional[dict] = None) -> str:
    return json.dumps(with_profile(as_json(trace), profile), indent=1, sort_keys=False)


def plot_node(trace: NodeTrace, path, width: float) -> None:
    """The signals in play against their thresholds, conditions shaded, kills, evictions and rejections marked."""
    from mini_kubelet.sim.node.plot import plot_node as draw
    draw(trace, path, width)
