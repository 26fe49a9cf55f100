"""`mini-kubelet run` on a lifecycle scenario: the timeline as text, or as JSON ("mini-kubelet.lifecycle/v1").

The JSON structure (times are seconds since the start; a back-off is seconds, or null when the restart came at once):

    {"version": "mini-kubelet.lifecycle/v1",
     "profile": {"kubernetesVersion": "1.27", "source": str, "featureGates": {gate: bool}},
     "scenario": {"name", "source", "description", "duration", "node",
                  "pods": [{"name", "namespace", "uid", "source": "api" | "file", "at", "restartPolicy"}],
                  "kubelet": {"crashLoopBackOff": {"maxContainerRestartPeriod": seconds}}},  # only if node.kubelet sets it
     "watch": [{"time", "pod", "ready", "status", "restarts", "phase"}],      # kubectl get pods -w
     "containers": [{"time", "pod", "container", "init", "state", "reason", "exitCode", "restartCount"}],
     "restarts": [{"time", "pod", "container", "count", "exitCode", "reason", "backOff"}],
     "events": [{"time", "type", "reason", "object", "pod", "container", "message"}],   # kubectl describe pod
     "kills": [{"time", "pod", "gracePeriod"}],                                # each killPod, its grace period
     "stops": [{"time", "pod", "container", "preStop", "preStopRuns", "gracePeriod", "sigterm", "sigkillBy"}],
                                  # only if any: container stops with a preStop hook (seconds waited, seconds it runs) or a grace
                                  # period other than their killPod's; sigterm and sigkillBy as a node would send them
     "resizes": [{"time", "pod", "type", "status", "reason", "message"}],   # only if any: resize conditions set or removed
     "cgroups": [{"time", "cgroup", "file", "old", "new"}],                   # only if any: each cgroup file written, in order
     "happenings": [{"time", "text"}],                                         # what the scenario made happen
     "final": {pod: the last status, as kubectl get pod -o yaml shows it (camelCase)},
     "expect": null | {"checked": int, "failures": [str]}}
"""

from __future__ import annotations

import json
import textwrap
from datetime import timedelta
from typing import Optional

from mini_kubelet import features
from mini_kubelet.cmd.inputs import is_sidecar, sidecar_note, with_profile
from mini_kubelet.container import is_restartable_init_container
from mini_kubelet.flowcontrol import crash_loop_back_off_reset

from mini_kubelet.sim.lifecycle.expect import check_lifecycle_expect
from mini_kubelet.sim.lifecycle.timeline import LifecycleTimeline
from mini_kubelet.sim.series import format_duration as d

VERSION = "mini-kubelet.lifecycle/v1"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


# --8<-- [start:render_text]
def resize_lines(resizes: list[dict], cgroups: list[dict]) -> list[str]:
    """The report's resize tables (lifecycle and node replays): each condition set or removed, each cgroup write."""
    lines = []
    if resizes:
        lines += ["", "resize conditions (kubectl get pod -o yaml: status.conditions)"]
        lines += ["  " + line for line in _table([["TIME", "POD", "CONDITION", "STATUS", "REASON", "MESSAGE"]] + [
            [d(r["time"]), r["pod"], r["type"], r["status"], r["reason"] or "-", r["message"] or "-"] for r in resizes])]
    if cgroups:
        lines += ["", "cgroup writes (in order: the pod cgroup, then its containers' through the runtime)"]
        lines += ["  " + line for line in _table([["TIME", "CGROUP", "FILE", "OLD", "NEW"]] + [
            [d(w["time"]), w["cgroup"], w["file"], w["old"], w["new"]] for w in cgroups])]
    return lines


def render_text(timeline: LifecycleTimeline) -> str:
    """The timeline: kubectl get pods -w lines, then restarts, events and what the scenario did, then a summary."""
    sc = timeline.scenario
    pods = ", ".join(f"{p.pod.metadata.name} ({'static, from a file' if p.source == 'file' else 'from the API server'})"
                     for p in sc.pods)
    lines = [f"scenario {sc.name}: {d(sc.duration)} on node {sc.node.metadata.name}; pods: {pods}"]
    period = sc.kubelet.get("crashLoopBackOff", {}).get("maxContainerRestartPeriod")
    if period is not None:  # only what the scenario's node.kubelet sets
        lines.append(f"kubelet config: crashLoopBackOff.maxContainerRestartPeriod {d(period)}")
    if sc.description:
        lines.append(sc.description)
    lines += ["", "kubectl get pods -w"]
    lines += ["  " + line for line in _table([["TIME", "NAME", "READY", "STATUS", "RESTARTS", "PHASE"]] + [
        [d(w.time), w.pod, w.ready, w.status, str(w.restarts), w.phase] for w in timeline.watch])]
    if timeline.restarts:
        lines += ["", "restarts"]
        rows = [["TIME", "CONTAINER", "COUNT", "LAST EXIT", "BACK-OFF WAITED"]]
        for r in timeline.restarts:
            last = f"{r.exit_code} ({r.reason})" if r.exit_code is not None else "-"
            rows.append([d(r.time), f"{r.pod}/{r.container}", str(r.count), last, _waited(r, timeline)])
        lines += ["  " + line for line in _table(rows)]
    if timeline.kills:
        lines += ["", "pods stopped (killPod)"]
        lines += ["  " + line for line in _table([[d(k["time"]), k["pod"], (
            f"grace period {k['gracePeriod']}s" if k["gracePeriod"] is not None else
            "no grace period override: each container gets the pod's terminationGracePeriodSeconds")]
            for k in timeline.kills])]
    if timeline.stops:
        lines += ["", "containers stopped (killContainer: the preStop hook, then StopContainer; times as on a node, "
                  "the replay waits for neither)"]
        rows = [["TIME", "CONTAINER", "PRESTOP HOOK", "GRACE PERIOD", "SIGTERM", "SIGKILL BY"]]
        for c in timeline.stops:
            hook = "-" if c["preStop"] is None else (
                d(c["preStop"]) if c["preStop"] == c["preStopRuns"] else f"{d(c['preStop'])} of {d(c['preStopRuns'])}: cut off")
            rows.append([d(c["time"]), f"{c['pod']}/{c['container']}", hook, d(c["gracePeriod"]), d(c["sigterm"]),
                         f"{d(c['sigkillBy'])} (+{d(c['sigkillBy'] - c['time'])})"])
        lines += ["  " + line for line in _table(rows)]
    lines += resize_lines(timeline.resizes, timeline.cgroups)
    lines += ["", "events (kubectl describe pod; a repeated event is one line with its count)"]
    lines += ["  " + line for line in _table([["TIME", "TYPE", "REASON", "OBJECT", "MESSAGE"]] + [
        [d(first) + (f" (x{count}, last {d(last)})" if count > 1 else ""), e["type"], e["reason"],
         e["pod"] + (f"/{e['container']}" if e["container"] else ""), e["message"]]
        for first, last, count, e in aggregate_events(timeline.events)])]
    if timeline.happenings:
        lines += ["", "what happened"]
        lines += ["  " + line for line in _table([[d(h["time"]), h["text"]] for h in timeline.happenings])]
    notes = lifecycle_notes(timeline)
    if notes:
        lines += [""] + [line for note in notes for line in textwrap.wrap(note, 80, initial_indent="note: ",
                                                                          subsequent_indent="  ", break_on_hyphens=False)]
    lines += [""]
    for name, status in timeline.final.items():
        phase = (status or {}).get("phase", "Pending")
        restarts = sum(c.get("restartCount", 0) for c in (status or {}).get("containerStatuses", []))
        plan = timeline.scenario.find_pod(name)  # a sidecar's restarts count too, as kubectl counts them
        sidecars = {c.name for c in plan.pod.spec.init_containers or [] if is_restartable_init_container(c)} if plan else ()
        restarts += sum(c.get("restartCount", 0) for c in (status or {}).get("initContainerStatuses", [])
                        if c.get("name") in sidecars)
        lines.append(f"{name}: phase {phase} at the end, {restarts} restart{'s' if restarts != 1 else ''}")
    if sc.expect is not None:
        checked, failures = check_lifecycle_expect(timeline)
        lines.append(f"expect: all {checked} checks passed" if not failures else f"expect: {len(failures)} of the checks failed")
        lines += [f"  - {failure}" for failure in failures]
    return "\n".join(lines)
# --8<-- [end:render_text]


def lifecycle_notes(timeline: LifecycleTimeline) -> list[str]:
    """What the tables alone do not say: a sidecar the release does not know, a startup probe that holds READY back.

    Upstream: the sidecar note is show's and explain's (cmd/inputs.py sidecar_note), for a release without
    SidecarContainers; a container with a startupProbe is not started, so not ready, and its readiness and
    liveness probes do not run, until the startup probe succeeds (pkg/kubelet/prober/worker.go doProbe,
    prober_manager.go manager.UpdatePodStatus)
    """
    notes = []
    for plan in timeline.scenario.pods:
        pod, name = plan.pod, plan.pod.metadata.name
        sidecar = sidecar_note(pod) if not features.DEFAULT_FEATURE_GATE.enabled("SidecarContainers") else None
        if sidecar:
            inits = pod.spec.init_containers
            first = next(i for i, c in enumerate(inits) if is_sidecar(c))
            notes.append(f"{name}: {sidecar}. Here {inits[first].name} must exit before the app containers start: "
                         f"while it runs, the Pod stays at Init:{first}/{len(inits)}")
        statuses = {c.get("name"): c for c in (timeline.final.get(name) or {}).get("containerStatuses", [])}
        for c in pod.spec.containers:
            status = statuses.get(c.name, {})
            if c.startup_probe is not None and "running" in status.get("state", {}) and not status.get("started"):
                notes.append(f"{name}/{c.name} is not ready: readiness waits for its startupProbe, which has not "
                             "succeeded, and its readiness and liveness probes do not run before it does (the replay "
                             f"runs no probe: an event {{probe: {{pod: {name}, container: {c.name}, startup: success}}}} "
                             "passes it)")
    return notes


def _waited(restart, timeline: LifecycleTimeline) -> str:
    """The BACK-OFF WAITED cell: the delay, or why there was none (the first restart, or the back-off started over).

    Upstream: kuberuntime_manager.go doBackOff with flowcontrol Backoff.IsInBackOffSince and Next: the first exit
    has no entry; an exit more than the reset period (600 s in v1.27) after the entry's last update (the
    restart before) finds it expired, and the restart is immediate again, the next delay back at the first.
    """
    if restart.back_off is not None:
        return d(restart.back_off)
    before = next((r for r in timeline.restarts if (r.pod, r.container, r.count) ==
                   (restart.pod, restart.container, restart.count - 1)), None)
    if restart.count <= 1 or before is None:
        return "none (first restart)"
    period = timeline.scenario.kubelet.get("crashLoopBackOff", {}).get("maxContainerRestartPeriod")
    reset = int(crash_loop_back_off_reset(timedelta(seconds=period) if period is not None else None).total_seconds())
    if restart.time - before.time > reset:
        return f"none (back-off reset: it ran over {d(reset)})"
    return "none"


def aggregate_events(events: list[dict]) -> list[tuple[int, int, int, dict]]:
    """(first time, last time, count, event) for each distinct event, in order of first appearance.

    Upstream: k8s.io/client-go/tools/record events_cache.go EventCorrelator (an identical event raises the
    count of the one already recorded, which `kubectl describe` shows as "(x3 over 2m)")
    """
    seen: dict[tuple, list] = {}
    for e in events:
        key = (e["type"], e["reason"], e["object"], e["message"])
        if key in seen:
            seen[key][1], seen[key][2] = e["time"], seen[key][2] + 1
        else:
            seen[key] = [e["time"], e["time"], 1, e]
    return [tuple(v) for v in seen.values()]


def render_json(timeline: LifecycleTimeline, profile: Optional[dict] = None) -> str:
    """The timeline as the documented JSON structure."""
    sc = timeline.scenario
    checked, failures = check_lifecycle_expect(timeline) if sc.expect is not None else (0, [])
    doc = {
        "version": VERSION,
        "scenario": {"name": sc.name, "source": sc.source, "description": sc.description, "duration": sc.duration,
                     "node": sc.node.metadata.name,
                     "pods": [{"name": p.pod.metadata.name, "namespace": p.pod.metadata.namespace, "uid": p.pod.metadata.uid,
                               "source": p.source, "at": p.at, "restartPolicy": p.pod.spec.restart_policy} for p in sc.pods],
                     **({"kubelet": sc.kubelet} if sc.kubelet else {})},
        "watch": [{"time": w.time, "pod": w.pod, "ready": w.ready, "status": w.status, "restarts": w.restarts,
                   "phase": w.phase} for w in timeline.watch],
        "containers": [{"time": c.time, "pod": c.pod, "container": c.container, "init": c.init, "state": c.state,
                        "reason": c.reason, "exitCode": c.exit_code, "restartCount": c.restart_count}
                       for c in timeline.containers],
        "restarts": [{"time": r.time, "pod": r.pod, "container": r.container, "count": r.count, "exitCode": r.exit_code,
                      "reason": r.reason, "backOff": r.back_off} for r in timeline.restarts],
        "events": timeline.events,
        "kills": timeline.kills,
        **({"stops": timeline.stops} if timeline.stops else {}),
        **({"resizes": timeline.resizes} if timeline.resizes else {}),
        **({"cgroups": timeline.cgroups} if timeline.cgroups else {}),
        "happenings": timeline.happenings,
        "final": timeline.final,
        "expect": None if sc.expect is None else {"checked": checked, "failures": failures},
    }
    return json.dumps(with_profile(doc, profile), indent=2)
