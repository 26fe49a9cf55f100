"""Drawing a one-node replay as chapter 4's `--plot` draws an eviction scenario: each signal in play against its
thresholds, the pressure condition shaded, and every kernel kill, eviction and rejection marked.

Upstream: none (a course tool); matplotlib is imported only when a plot is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

from ...eviction import signals
from ...eviction.api import SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, SIGNAL_MEMORY_AVAILABLE, get_threshold_quantity
from .trace import NodeTrace
from .. import figure
from ..figure import COLOURS, LINES, MARKERS
from ..series import format_duration
from ..eviction.timeline import threshold_text, value_text

COLUMNS = {"memory.available": 1, "nodefs.available": 2, "imagefs.available": 3}  # NodeTrace.signals' columns
PANEL_OF = {SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE: SIGNAL_MEMORY_AVAILABLE}  # the pods-level copy shares the node's panel


def _capacity(trace: NodeTrace, signal: str) -> int:
    cap = trace.scenario.capacity
    return cap["memory"] if signal == SIGNAL_MEMORY_AVAILABLE else cap.get(signal.split(".")[0], cap["nodefs"])


# --8<-- [start:node_panels]
def node_panels(trace: NodeTrace) -> list[dict]:
    """The panels to draw: each plotted signal whose threshold was met or that an eviction names, else the first that
    moved, else memory.

    Each panel: {"signal", "points": [(time, available)], "lines": [(label, value, style)], "condition"}, with
    style "hard", "soft" or "reclaim" (the threshold plus its minimum reclaim). Upstream: none (a course tool)
    """
    thresholds = [t for t in trace.scenario.config.thresholds if PANEL_OF.get(t.signal, t.signal) in COLUMNS]
    panels, pressured = [], []
    for signal, column in COLUMNS.items():
        capacity = _capacity(trace, signal)
        own = [t for t in thresholds if PANEL_OF.get(t.signal, t.signal) == signal]
        points = [(row[0], row[column]) for row in trace.signals if row[column] is not None]
        met = any(any(t.signal == signal and value < get_threshold_quantity(t.value, capacity) for t in own)
                  for _, value in points)
        lines = []
        for t in (t for t in own if t.signal == signal):
            value = int(get_threshold_quantity(t.value, capacity))
            grace = f", grace {format_duration(int(t.grace_period.total_seconds()))}" if t.grace_period else ""
            lines.append((f"{'soft' if grace else 'hard'} threshold {threshold_text(t).split(' (')[0]}{grace}",
                          value, "soft" if grace else "hard"))
            if t.min_reclaim is not None:
                lines.append((f"threshold + minimum reclaim ({value_text(t.min_reclaim)})",
                              value + int(get_threshold_quantity(t.min_reclaim, capacity)), "reclaim"))
        panels.append({"signal": signal, "points": points, "lines": lines,
                       "condition": signals.SIGNAL_TO_NODE_CONDITION.get(signal)})
        if met or any(PANEL_OF.get(e["signal"], e["signal"]) == signal for e in trace.evictions):
            pressured.append(panels[-1])
    moved = [p for p in panels if len({v for _, v in p["points"]}) > 1]
    return pressured or moved[:1] or panels[:1]
# --8<-- [end:node_panels]


def eviction_panel(eviction: dict, shown: list[str]) -> str:
    """The panel an eviction is marked on: its signal's, or the first one for a signal without a panel."""
    signal = PANEL_OF.get(eviction["signal"], eviction["signal"])
    return signal if signal in shown else shown[0]


def draw_node(trace: NodeTrace, width: float = figure.WIDE):
    """The figure plot_node saves: node_panels, each signal's threshold lines, its condition shaded, and the kernel's
    OOM kills, the evictions and the rejections marked.

    Upstream: none (a course tool)
    """
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    sc = trace.scenario
    panels = node_panels(trace)
    shown = [p["signal"] for p in panels]
    scale, unit = (3600, "h") if sc.duration > 3 * 3600 else (60, "min")
    with figure.style():
        fig, axes = figure.panels(len(panels), width, 2.7)
        for ax, panel in zip(axes[:, 0], panels):
            signal = panel["signal"]
            ax.plot([t / scale for t, _ in panel["points"]], [v / 2**30 for _, v in panel["points"]],
                    color=COLOURS["signal"], lw=1.4, label=f"{signal} (observed every pass)")
            for label, value, style in panel["lines"]:
                ax.axhline(value / 2**30, color=COLOURS[style], ls=LINES[style], lw=1.8 if style != "reclaim" else 1.3,
                           label=label)
            for i, c in enumerate(c for c in trace.conditions if c["type"] == panel["condition"]):
                stop = c["to"] if c["to"] is not None else sc.duration
                ax.axvspan(c["from"] / scale, stop / scale, color=COLOURS["pressure"], alpha=0.3, lw=0,
                           label=f"{c['type']} reported" if i == 0 else None)
            marks = [(trace.evictions, "eviction", "eviction", lambda e: eviction_panel(e, shown) == signal),
                     (trace.oom_kills, "oom", "OOM kill (kernel)", lambda _: signal == SIGNAL_MEMORY_AVAILABLE),
                     (trace.rejections, "rejection", "rejected admission",
                      lambda r: f"[{panel['condition']}]" in r["message"])]
            for items, kind, name, here in marks:
                for i, m in enumerate(m for m in items if here(m)):
                    x = m["time"] / scale
                    ax.axvline(x, color=COLOURS[kind], ls=LINES[kind], lw=1.1, alpha=0.85)
                    # At the signal's value after it for an eviction or a kill, on the axis for a rejection.
                    y = 0 if kind == "rejection" else next((v for t, v in panel["points"] if t >= m["time"]), 0) / 2**30
                    ax.plot([x], [y], marker=MARKERS[kind], ms=11 if kind == "oom" else 9, color=COLOURS[kind],
                            mec="black" if kind != "oom" else "white", mew=0.6, ls=LINES[kind], clip_on=False,
                            zorder=5, label=name if i == 0 else None)
            ax.set_ylim(0, _capacity(trace, signal) / 2**30 * 1.05)
            ax.set_ylabel(f"{signal} (GiB)")
            ax.grid(True, alpha=0.3)
        bottom = axes[-1, 0]
        bottom.set_xlabel(f"time since the start ({unit})")
        bottom.set_xlim(0, sc.duration / scale)
        bottom.xaxis.set_major_locator(MaxNLocator(nbins=max(int(width * 1.2), 3), steps=[1, 2, 2.5, 5, 10]))
        bottom.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_duration(int(v * scale))))
        fig.suptitle(f"{sc.name}: signals against thresholds", x=0.02, ha="left", wrap=True)
        figure.finish(fig, width, [])
    return fig


def plot_node(trace: NodeTrace, path: Union[str, Path], width: float = figure.WIDE) -> None:
    """Draw node_panels: the signal every pass, its threshold lines, its condition shaded, kills, evictions, rejections.

    Upstream: none (a course tool)
    """
    figure.save(draw_node(trace, width), path)
