"""A lifecycle replay checked against its scenario's expect: block.

Upstream: none (a course tool); `mini-kubelet run` and the tests of the example scenarios use it.

- `pods`: what `kubectl get pods` shows for a pod at a time (phase, status column, ready, restarts);
- `restarts`: every restart in the replay, in order (pod, container, at, count, backOff, exitCode, reason);
- `events`: events that must be seen, in this order (others may come between them);
- `kills`: every killPod in the replay, in order (pod, at, gracePeriod);
- `stops`: every container stop the report lists, in order (pod, container, at, preStop: the seconds the
  kubelet waited for the hook, gracePeriod: StopContainer's, sigterm and sigkillBy: when a node sends them);
- `resizes`: resize conditions that must be seen set (status True) or removed, in this order (pod, at, type, reason);
- `cgroups`: what a cgroup file holds at a time (cgroup, file, at, value): the last write at or before it.
"""

from __future__ import annotations

from .timeline import LifecycleTimeline
from ..resize import check_resize_expect, show as _show
from ..series import format_duration


# --8<-- [start:check_lifecycle_expect]
def check_lifecycle_expect(timeline: LifecycleTimeline) -> tuple[int, list[str]]:
    """Compare the replay with the expect block: (checks made, what differs).

    Upstream: none (a course tool)
    """
    expect, failures, checked = timeline.scenario.expect or {}, [], 0
    for i, want in enumerate(expect.get("pods", [])):
        checked += 1
        line = timeline.at(want["pod"], want["at"])
        got = {} if line is None else {"phase": line.phase, "status": line.status, "ready": line.ready,
                                       "restarts": line.restarts}
        for key in ("phase", "status", "ready", "restarts"):
            if key in want and got.get(key) != want[key]:
                failures.append(f"pods[{i}] ({want['pod']} at {format_duration(want['at'])}).{key}: expected "
                                f"{want[key]!r}, got {got.get(key)!r}")
    for kind, got_items in (("restarts", [{"pod": r.pod, "container": r.container, "at": r.time, "count": r.count,
                                           "backOff": r.back_off, "exitCode": r.exit_code, "reason": r.reason}
                                          for r in timeline.restarts]),
                            ("kills", [{"pod": k["pod"], "at": k["time"], "gracePeriod": k["gracePeriod"]}
                                       for k in timeline.kills]),
                            ("stops", [{"pod": c["pod"], "container": c["container"], "at": c["time"],
                                        "preStop": c["preStop"], "gracePeriod": c["gracePeriod"], "sigterm": c["sigterm"],
                                        "sigkillBy": c["sigkillBy"]} for c in timeline.stops])):
        if kind not in expect:
            continue
        checked += 1
        wanted = expect[kind]
        if len(got_items) != len(wanted):
            brief = "; ".join(" ".join(f"{k}={_show(k, v)}" for k, v in g.items() if v is not None) for g in got_items)
            failures.append(f"{kind}: expected {len(wanted)}, got {len(got_items)}: {brief or 'none'}")
            continue
        for j, (got, want) in enumerate(zip(got_items, wanted)):
            for key, value in want.items():
                if got.get(key) != value:
                    failures.append(f"{kind}[{j}].{key}: expected {_show(key, value)}, got {_show(key, got.get(key))}")
    if "events" in expect:
        checked += 1
        position = 0
        for j, want in enumerate(expect["events"]):
            match = next((k for k in range(position, len(timeline.events))
                          if all(timeline.events[k].get("time" if key == "at" else key) == value
                                 for key, value in want.items())), None)
            if match is None:
                failures.append(f"events[{j}]: not seen{' after the previous one' if j else ''}: "
                                + " ".join(f"{k}={_show(k, v)}" for k, v in want.items()))
                break
            position = match + 1
    more, found = check_resize_expect(expect, timeline.resizes, timeline.cgroups)
    return checked + more, failures + found
# --8<-- [end:check_lifecycle_expect]
