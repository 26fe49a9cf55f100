"""The report of a replay, as `mini-kubelet run` prints it: a text timeline for a reader, or JSON for tools.

Upstream: none (a course tool). The JSON structure ("mini-kubelet.run/v1") is described in
mini_kubelet/cmd/run.py.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Optional

from mini_kubelet import features, sim
from mini_kubelet.cmd.inputs import with_profile
from mini_kubelet.cmd.text import table
from mini_kubelet.eviction import signals
from mini_kubelet.kuberuntime.kuberuntime_container import stop_timeout_without_hook

SCHEMA_VERSION = "mini-kubelet.run/v1"
WIDTH = 80  # the text output fits a terminal and a page's code block; longer lines wrap with a hanging indent
_TIME_COLUMN = 10  # "  4m50s   ": where a timeline entry's text starts


# --8<-- [start:render_text]
def render_text(timeline: sim.Timeline) -> str:
    """The timeline for a reader: the setting, each pass where something changed, then a summary.

    Upstream: none (a course tool)
    """
    sc, d = timeline.scenario, sim.format_duration
    lines = [f"Scenario {sc.name}"]
    lines += wrap(sc.description, "  ", "  ")
    cap = sc.capacity
    disks = f"nodefs {sim.format_bytes(cap['nodefs'])} ({cap['inodes']} inodes)"
    disks += f", imagefs {sim.format_bytes(cap['imagefs'])} ({cap['imagefsInodes']} inodes)" if sc.dedicated_image_fs \
        else ", images on nodefs"
    lines += [""] + wrap(f"Node {sc.node_name}: memory {sim.format_bytes(cap['memory'])}, {disks}, maxpid {cap['maxpid']}",
                         "", "  ")
    defaulted = "evictionHard" in sc.kubelet["defaulted"]
    release = features.DEFAULT_FEATURE_GATE.release
    lines.append("Thresholds" + (f" (evictionHard not set, so the v{release} Linux default)" if defaulted else "") + ":")
    width = max((len(t["text"].split(" (")[0]) for t in timeline.thresholds), default=0)
    for t in timeline.thresholds:
        extra = "hard" if t["hard"] else f"soft, grace period {sim.format_duration(t['grace_period'])}"
        if t["signal"] == "allocatableMemory.available":
            extra += "; added by enforceNodeAllocatable"
        if t["signal"].startswith("containerfs."):
            extra += "; copied by the manager (1.29+)"
        if t["min_reclaim"]:
            extra += f", minimum reclaim {t['min_reclaim']}"
        lines.append(f"  {t['text'].split(' (')[0]:<{width}}  {extra}")
    if not timeline.thresholds:
        lines.append("  (none)")
    lines += wrap(f"Transition period {sc.kubelet['evictionPressureTransitionPeriod']}, "
                  f"evictionMaxPodGracePeriod {sc.kubelet['evictionMaxPodGracePeriod']}s; "
                  f"a pass every {sim.EVICTION_MONITORING_PERIOD}s for {d(sc.duration)}.", "", "  ")
    lines += ["", "Timeline (only the passes where something changed)"]
    entries = _entries(timeline)
    for time in sorted(entries):
        label = d(time)
        for i, text in enumerate(entries[time]):
            prefix = f"  {label if i == 0 else '':<7} "
            if text.startswith(" "):  # a ranking row: already laid out to fit
                lines.append((prefix + text).rstrip())
            else:
                lines += wrap(text, prefix, " " * (_TIME_COLUMN + _hang(text)))
    lines += ["", "Summary"] + [line for item in _summary(timeline) for line in wrap(item, "  ", "    ")]
    return "\n".join(lines)
# --8<-- [end:render_text]


def _entries(timeline: sim.Timeline) -> dict[int, list[str]]:
    """The lines for each moment, keyed by time in seconds."""
    entries: dict[int, list[str]] = {}
    watched = list(dict.fromkeys(t["signal"] for t in timeline.thresholds))
    previous: Optional[sim.Step] = None
    for step in timeline.steps:
        lines = []
        changed = previous is None or step.thresholds_met != previous.thresholds_met or \
            step.conditions != previous.conditions or step.thresholds_acted_on != previous.thresholds_acted_on
        if changed or step.evictions or step.reclaimed or step.notes:
            involved = watched if previous is None else list(dict.fromkeys(
                [t.split("<")[0] for t in step.thresholds_met + previous.thresholds_met]))
            shown = [s for s in involved if s in step.observations]
            width = max((len(s) for s in shown), default=0)
            for s in shown:
                o = step.observations[s]
                lines.append(f"{s:<{width}}  {_quantity(s, o['available'])} available of {_quantity(s, o['capacity'])}")
            if step.thresholds_met:
                lines.append("threshold met: " + ", ".join(step.thresholds_met))
            elif previous is not None and previous.thresholds_met:
                lines.append("no threshold met any more")
            waiting = [t for t in step.thresholds_met if t not in step.thresholds_acted_on]
            if waiting and any("(soft" in t for t in waiting):
                lines.append("grace period running for: " + ", ".join(t for t in waiting if "(soft" in t))
            over = [t for t in step.thresholds_acted_on if "(soft" in t and (previous is None or t not in previous.thresholds_acted_on)]
            if over:
                lines.append("grace period over, acting on: " + ", ".join(over))
            lines += _condition_lines(step, previous, timeline)
            lines += [f"note: {note}" for note in step.notes]
            if step.reclaimed:
                r = step.reclaimed
                what = ", ".join(r["images"]) or "nothing old enough or unused"
                lines.append(f"node-level reclaim: container GC, then image GC freed {sim.format_bytes(r['bytes'])} ({what})")
                lines.append("enough: every threshold is clear with its minimum reclaim, no pod evicted" if r["sufficient"]
                             else "not enough: a pod must go")
            for eviction in step.evictions:
                lines += _eviction_lines(eviction)
            entries.setdefault(step.time, []).extend(lines)
        previous = step
    before: dict[int, list[str]] = {}  # what happened at a pass's time happened before the pass
    for admission in timeline.admissions:
        verdict = "admitted" if admission.admitted else f"rejected ({admission.reason}): {admission.message.strip()}"
        before.setdefault(admission.time, []).append(f"admission of {admission.pod}: {verdict}")
    for happening in timeline.happenings:
        before.setdefault(happening.time, []).append(happening.text)
    for time, lines in before.items():
        entries[time] = lines + entries.get(time, [])
    return entries


def _condition_lines(step: sim.Step, previous: Optional[sim.Step], timeline: sim.Timeline) -> list[str]:
    before = previous.conditions if previous else []
    lines = [f"condition {c}: True" for c in step.conditions if c not in before]
    lines += [f"condition {c}: False ({timeline.scenario.kubelet['evictionPressureTransitionPeriod']} "
              f"transition period over)" for c in before if c not in step.conditions]
    met_conditions = {signals.SIGNAL_TO_NODE_CONDITION.get(t.split("<")[0]) for t in step.thresholds_met}
    held = [c for c in step.conditions if c in before and c not in met_conditions]
    if held and (previous is None or held != [c for c in before if c not in {
            signals.SIGNAL_TO_NODE_CONDITION.get(t.split("<")[0]) for t in previous.thresholds_met}]):
        lines.append(f"condition {', '.join(held)} still reported: held for the transition period")
    return lines


def _eviction_lines(e: sim.Eviction) -> list[str]:
    lines = []
    if e.ranking:
        pid = e.signal == "pid.available"
        resource = e.ranking[0].keys.get("resource")
        header = ["priority", "processes"] if pid else ["over request?", "priority", "inodes - eph. request"
                                                        if resource == "inodes" else "usage - request"]
        lines.append(f"ranked for {e.signal}:")
        rows = [["", "", *header, ""]]
        for i, row in enumerate(e.ranking, 1):
            k = row.keys
            if pid:
                cells = [str(k["priority"]), str(k["processes"])]
            else:
                show = str if k["resource"] == "inodes" else sim.format_signed_bytes
                cells = ["yes" if k["exceeds_request"] else "no", str(k["priority"]), show(k["usage_minus_request"])]
            if not k["has_stats"]:
                cells = ["no stats"] + [""] * (len(cells) - 1)
            mark = "<- evicted" if row.pod == e.pod else ("critical: never evicted" if row.critical else "")
            rows.append([f"{i}.", row.pod, *cells, mark])
        lines += ["  " + line for line in fit_table(rows, WIDTH - _TIME_COLUMN - 2)]
        lines.append(f"why: {e.decided_by}")
    else:
        lines.append(f"local storage limit: {e.signal}")
    floor = stop_timeout_without_hook(e.grace_period)
    containers = f", its containers {floor}s (killContainer's minimum)" if floor != e.grace_period else ""
    lines.append(f"evicted {e.pod}: {_grace_text(e)}{containers}; it stops at {sim.format_duration(e.stops_at)}")
    lines.append(f"message: {json.dumps(e.message)}")
    return lines


def _grace_text(e: sim.Eviction) -> str:
    """How the grace period came about (pod_workers.go calculateEffectiveGracePeriod, of the release)."""
    gate = features.DEFAULT_FEATURE_GATE
    soft = ("soft threshold: the smaller of evictionMaxPodGracePeriod and the pod's terminationGracePeriodSeconds"
            if gate.changed("SoftEvictionGraceMin") and not gate.enabled("AllowOverwriteTerminationGracePeriodSeconds")
            else "soft threshold: evictionMaxPodGracePeriod")
    why = "hard threshold" if e.hard and e.ranking else ("local storage limit" if not e.ranking else soft)
    if e.grace_period_override == 0 and not gate.changed("HardEvictionOneSecondGrace"):
        return f"grace override 0 ({why}), so the pod's terminationGracePeriodSeconds: {e.grace_period}s"
    if e.grace_period_override < 1:
        return f"grace override {e.grace_period_override} ({why}), raised to the minimum: {e.grace_period}s"
    return f"grace override {e.grace_period_override} ({why}): {e.grace_period}s"


def _summary(timeline: sim.Timeline) -> list[str]:
    d = sim.format_duration
    evictions = timeline.evictions
    lines = [f"evictions: {len(evictions)}" + (": " + ", ".join(f"{e.pod} at {d(e.time)} ({e.signal})" for e in evictions)
                                               if evictions else "")]
    intervals = timeline.condition_intervals()
    lines.append("conditions: " + (", ".join(f"{i['type']} {d(i['from'])}-{d(i['to']) if i['to'] is not None else 'end'}"
                                             for i in intervals) or "none"))
    rejected = [a for a in timeline.admissions if not a.admitted]
    if timeline.admissions:
        lines.append(f"admissions: {len(timeline.admissions) - len(rejected)} admitted, {len(rejected)} rejected"
                     + (" (" + ", ".join(a.pod for a in rejected) + ")" if rejected else ""))
    reclaims = [s for s in timeline.steps if s.reclaimed]
    if reclaims:
        lines.append("node-level reclaim: " + ", ".join(f"{d(s.time)} freed {sim.format_bytes(s.reclaimed['bytes'])}" for s in reclaims))
    if timeline.scenario.expect is not None:
        checked, failures = sim.check_expect(timeline)
        lines.append(f"expect: all {checked} checks passed" if not failures else f"expect: {len(failures)} of the checks failed")
        lines += [f"  - {failure}" for failure in failures]
    return lines


def _quantity(signal: str, n: int) -> str:
    return str(n) if signal in signals.DECIMAL_SIGNALS else sim.format_bytes(n)


def fit_table(rows: list[list[str]], width: int) -> list[str]:
    """A ranking as aligned columns; if wider than width, each pod's name on a line of its own above its keys.

    rows: [number, pod, key cells..., mark]. Upstream: none (a course tool)
    """
    lines = table(rows)
    if max(len(line) for line in lines) <= width:
        return lines
    number = max(len(row[0]) for row in rows)
    keys = table([row[2:-1] for row in rows])
    out = []
    for row, cells in zip(rows, keys):
        name = f"{row[0]:<{number}}  {row[1]}  {row[-1]}".rstrip()
        if name:  # a header row has no name line
            out.append(name)
        out.append((" " * (number + 2) + cells).rstrip())
    return out


def wrap(text: str, first: str, rest: str, width: int = WIDTH) -> list[str]:
    """The text in lines of at most width characters (a longer word gets a line of its own), broken at spaces.

    first and rest prefix the first and the following lines; a closing quote never starts a line, so a
    message's trailing space stays visible. Upstream: none (a course tool)
    """
    words = text.split(" ")
    for i in range(len(words) - 1, 0, -1):
        if words[i] in ('"', '".', '",'):
            words[i - 1] += " " + words.pop(i)
    lines, line = [], first
    for word in words:
        if len(line) + len(word) > width and line.strip():
            lines.append(line.rstrip())
            line = rest
        line += word + " "
    lines.append(line[:-1] if line.endswith(" ") else line)
    return lines


def _hang(text: str) -> int:
    """How far a timeline entry's continuation lines are indented: under the message's first letter, else 2."""
    if text.startswith('message: "'):
        return len('message: "')
    return len("why: ") if text.startswith("why: ") else 2


# --8<-- [start:render_json]
def render_json(timeline: sim.Timeline, profile: Optional[dict] = None) -> str:
    """The timeline as the documented JSON structure.

    Upstream: none (a course tool)
    """
    sc = timeline.scenario
    checked, failures = sim.check_expect(timeline) if sc.expect is not None else (0, [])
    report = {
        "version": SCHEMA_VERSION,
        "scenario": {"name": sc.name, "source": sc.source, "description": sc.description, "duration": sc.duration,
                     "node": {"name": sc.node_name, "capacity": sc.capacity, "dedicated_image_fs": sc.dedicated_image_fs},
                     "kubelet": sc.kubelet},
        "thresholds": timeline.thresholds,
        "steps": [asdict(step) for step in timeline.steps],
        "admissions": [asdict(a) for a in timeline.admissions],
        "happenings": [asdict(h) for h in timeline.happenings],
        "conditions": timeline.condition_intervals(),
        "expect": None if sc.expect is None else {"checked": checked, "failures": failures},
    }
    return json.dumps(with_profile(report, profile), indent=2)
# --8<-- [end:render_json]
