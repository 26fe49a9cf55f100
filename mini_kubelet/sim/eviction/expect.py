"""A replay checked against its scenario's expect: block (the outcome the scenario's author states).

Upstream: none (a course tool); `mini-kubelet run` and the tests of the example scenarios use it.
"""

from __future__ import annotations

from typing import Any

from ... import api
from ..series import format_duration, parse_duration
from .timeline import Timeline


# --8<-- [start:check_expect]
def check_expect(timeline: Timeline) -> tuple[int, list[str]]:
    """Compare the timeline with the scenario's expect block: (checks made, what differs).

    Upstream: none (a course tool)
    """
    expect, failures, checked = timeline.scenario.expect or {}, [], 0

    def same_pod(label: str, name: str) -> bool:
        return label == name or label.split("/", 1)[1] == name

    def compare(kind: str, got: list[dict], wanted: list) -> None:
        nonlocal checked
        checked += 1
        wanted = [w if isinstance(w, dict) else {"pod": w} for w in wanted or []]
        if len(got) != len(wanted):
            failures.append(f"{kind}: expected {len(wanted)}, got {len(got)}: {_brief(kind, got)}")
            return
        for i, (g, w) in enumerate(zip(got, wanted)):
            for key, value in w.items():
                actual, wanted_value = g.get(key), value
                if key in ("at", "from", "to") and value is not None:
                    wanted_value = parse_duration(value)
                elif key == "bytes":
                    wanted_value = api.value(api.parse_quantity(value))
                ok = same_pod(actual, str(value)) if key == "pod" else actual == wanted_value
                if not ok:
                    failures.append(f"{kind}[{i}].{key}: expected {value!r}, got {_show(key, actual)}")

    if "evictions" in expect:
        compare("evictions", [{"pod": e.pod, "at": e.time, "signal": e.signal, "grace": e.grace_period_override}
                              for e in timeline.evictions], expect["evictions"])
    if "conditions" in expect:
        compare("conditions", timeline.condition_intervals(), expect["conditions"])
    if "rejected" in expect:
        compare("rejected", [{"pod": a.pod, "at": a.time, "message": a.message, "reason": a.reason}
                             for a in timeline.admissions if not a.admitted], expect["rejected"])
    if "admitted" in expect:
        compare("admitted", [{"pod": a.pod, "at": a.time} for a in timeline.admissions if a.admitted],
                expect["admitted"])
    if "reclaimed" in expect:
        compare("reclaimed", [{"at": s.time, "bytes": s.reclaimed["bytes"], "sufficient": s.reclaimed["sufficient"],
                               "images": s.reclaimed["images"]} for s in timeline.steps if s.reclaimed],
                expect["reclaimed"])
    return checked, failures
# --8<-- [end:check_expect]


def _show(key: str, value: Any) -> str:
    return format_duration(value) if key in ("at", "from", "to") and isinstance(value, int) else repr(value)


def _brief(kind: str, got: list[dict]) -> str:
    items = [" ".join(f"{k}={'end' if v is None else _show(k, v) if k in ('at', 'from', 'to') else v}" for k, v in g.items()
                      if k in ("pod", "at", "type", "from", "to", "bytes")) for g in got]
    return "; ".join(items) or "none"
