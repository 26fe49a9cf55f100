"""The trace of a one-node replay: what happened when, the events, the node's signals, and the Pods at the end.

Upstream: none (a course tool). The events are those the kubelet records (pkg/kubelet/events/event.go reasons),
folded as client-go's event correlator folds repeats (k8s.io/client-go/tools/record/events_cache.go
EventAggregator: same object, type, reason and message count up one event); `kubectl get pods` columns are
printPod's (pkg/printers/internalversion/printers.go), ages as duration.HumanDuration prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .scenario import NodeScenario
from ..resize import check_resize_expect


@dataclass
class NodeTrace:
    """Everything a replay produced, in time order within each list (times are seconds since the start)."""

    scenario: NodeScenario
    timeline: list[dict] = field(default_factory=list)  # {"time", "kind", "pod", "text"}
    events: list[dict] = field(default_factory=list)  # one per recording: {"time", "type", "reason", "object", "message"}
    oom_kills: list[dict] = field(default_factory=list)  # {"time", "pod", "container", "limit", "oomScoreAdj", "restartCount"}
    evictions: list[dict] = field(default_factory=list)  # {"time", "pod", "signal", "gracePeriod", "message"}
    rejections: list[dict] = field(default_factory=list)  # {"time", "pod", "reason", "message"}
    conditions: list[dict] = field(default_factory=list)  # {"type", "from", "to"} (to: None while still reported)
    containers: list[dict] = field(default_factory=list)  # chapter 3's values for each container, at its first start
    signals: list[list] = field(default_factory=list)  # one row per eviction pass: [time, memory, nodefs, imagefs]
    watch: list[dict] = field(default_factory=list)  # each change of a Pod's kubectl columns
    pods: list[dict] = field(default_factory=list)  # kubectl get pods at the end
    kubectl_events: list[dict] = field(default_factory=list)  # the events folded as kubectl get events lists them
    resizes: list[dict] = field(default_factory=list)  # {"time", "pod", "type", "status": True|removed, "reason", "message"}
    cgroups: list[dict] = field(default_factory=list)  # {"time", "cgroup", "file", "old", "new"}: each resize write
    passes: int = 0
    kubelet_steps: int = 0

    def note(self, t: int, kind: str, pod: Optional[str], text: str) -> None:
        """One line of the timeline."""
        self.timeline.append({"time": t, "kind": kind, "pod": pod, "text": text})


# --8<-- [start:aggregate_events]
def aggregate_events(events: list[dict]) -> list[dict]:
    """Repeats of one event folded into one, with its count and first and last times, ordered by last time.

    Upstream: k8s.io/client-go/tools/record/events_cache.go EventCorrelator (eventObserve: same source, object,
    type, reason and message make one event whose count grows)
    """
    folded: dict[tuple, dict] = {}
    for e in events:
        key = (e["object"], e["type"], e["reason"], e["message"])
        if key in folded:
            folded[key]["count"] += 1
            folded[key]["lastSeen"] = e["time"]
        else:
            folded[key] = {"firstSeen": e["time"], "lastSeen": e["time"], "count": 1, "type": e["type"],
                           "reason": e["reason"], "object": e["object"], "message": e["message"]}
    return sorted(folded.values(), key=lambda e: (e["lastSeen"], e["firstSeen"]))
# --8<-- [end:aggregate_events]


# --8<-- [start:human_duration]
def human_duration(seconds: int) -> str:
    """An age as kubectl prints it: 45s, 5m30s, 3h20m, 2d5h.

    Upstream: k8s.io/apimachinery/pkg/util/duration/duration.go HumanDuration
    """
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 60 * 2:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24 % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"
# --8<-- [end:human_duration]


def check_node_expect(trace: NodeTrace) -> tuple[int, list[str]]:
    """Compare the trace with the scenario's expect block: (items checked, one line per mismatch)."""
    expect, failures, checked = trace.scenario.expect or {}, [], 0

    def match(item: dict, got: dict, keys: tuple[str, ...]) -> bool:
        return all(item[k] == got.get(k) for k in keys if k in item)

    for key, got_list, keys in (("evictions", trace.evictions, ("pod", "at", "signal", "message")),
                                ("oomKills", trace.oom_kills, ("pod", "container", "at")),
                                ("rejected", trace.rejections, ("pod", "at", "reason", "message"))):
        if key not in expect:
            continue
        got = [{**g, "at": g["time"]} for g in got_list]
        checked += 1
        if len(got) != len(expect[key]):
            failures.append(f"{key}: expected {len(expect[key])}, got {len(got)}: " + _brief(got))
            continue
        for i, (item, one) in enumerate(zip(expect[key], got)):
            if not match(item, one, keys):
                failures.append(f"{key}[{i}]: expected {_show(item)}, got {_show({k: one.get(k) for k in item})}")
    if "conditions" in expect:
        checked += 1
        got = [{"type": c["type"], "from": c["from"], "to": c["to"]} for c in trace.conditions]
        wanted = [{"type": c.get("type"), "from": c.get("from"), "to": c.get("to")} for c in expect["conditions"]]
        if got != wanted:
            failures.append(f"conditions: expected {wanted}, got {got}")
    for i, item in enumerate(expect.get("pods", [])):
        checked += 1
        row = next((p for p in trace.pods if p["name"] == item["pod"]), None)
        if row is None:
            failures.append(f"pods[{i}]: no pod {item['pod']!r} at the end")
        elif not match(item, {**row, "pod": row["name"]}, ("status", "restarts", "phase", "ready", "reason")):
            failures.append(f"pods[{i}]: expected {_show(item)}, got {_show({k: row.get(k) for k in item if k != 'pod'})}")
    more, found = check_resize_expect(expect, trace.resizes, trace.cgroups)
    return checked + more, failures + found


def _show(item: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in item.items()) + "}"


def _brief(got: list[dict]) -> str:
    return "[" + ", ".join(f"{g.get('pod')} at {g.get('time')}s" for g in got[:10]) + (", ..." if len(got) > 10 else "") + "]"
