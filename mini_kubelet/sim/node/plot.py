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
from ..series import format_duration
from ..eviction.timeline import threshold_text, value_text

COLUMNS = {"memory.available": 1, "nodefs.available": 2, "imagefs.available": 3}  # NodeTrace.signals' columns
PANEL_OF = {SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE: SIGNAL_MEMORY_AVAILABLE}  # the pods-level copy shares the node's panel


def _capacity(trace: NodeTrace, signal: str) -> int:
    cap = trace.scenario.capacity
    return cap["memory"] if signal == SIGNAL_MEMORY_AVAILABLE else cap.get(signal.split(".")[0], cap["nodefs"])


# --8<-- [start:node_panels]
def node_panels(trace: NodeTrace) -> list[dict]:
    """The panels to draw: each plotted signal whose threshold was met or that an eviction names, else memory alone.

    Each panel: {"signal", "points": [(time, available)], "lines": [(label, value, style)], "condition"}, with
    style "hard", "soft" or "reclaim" (the threshold plus its minimum reclaim). Upstream: none (a course tool)
    """
    thresholds = [t for t in trace.scenario.config.thresholds if PANEL_OF.get(t.signal, t.signal) in COLUMNS]
    panels = []
    for signal, column in COLUMNS.items():
        capacity = _capacity(trace, signal)
        own = [t for t in thresholds if PANEL_OF.get(t.signal, t.signal) == signal]
        points = [(row[0], row[column]) for row in trace.signals if row[column] is not None]
        met = any(any(t.signal == signal and value < get_threshold_quantity(t.value, capacity) for t in own)
                  for _, value in points)
        if not (met or any(PANEL_OF.get(e["signal"], e["signal"]) == signal for e in trace.evictions)):
            continue
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
    if not panels:
        panels.append({"signal": SIGNAL_MEMORY_AVAILABLE, "condition": signals.MEMORY_PRESSURE, "lines": [],
                       "points": [(row[0], row[1]) for row in trace.signals if row[1] is not None]})
    return panels
# --8<-- [end:node_panels]


def eviction_panel(eviction: dict, shown: list[str]) -> str:
    """The panel an eviction is marked on: its signal's, or the first one for a signal without a panel."""
    signal = PANEL_OF.get(eviction["signal"], eviction["signal"])
    return signal if signal in shown else shown[0]


STYLES = {"hard": ("#c0392b", "-", 1.6), "soft": ("#e67e22", "--", 1.6), "reclaim": ("#7f8c8d", ":", 1.2)}


def plot_node(trace: NodeTrace, path: Union[str, Path]) -> None:
    """Draw node_panels: the signal every pass, its threshold lines, its condition shaded, kills, evictions, rejections.

    Upstream: none (a course tool)
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    sc = trace.scenario
    panels = node_panels(trace)
    shown = [p["signal"] for p in panels]
    scale, unit = (3600, "h") if sc.duration > 3 * 3600 else (60, "min")
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 3.2 * len(panels) + 0.9), sharex=True, squeeze=False)
    for ax, panel in zip(axes[:, 0], panels):
        signal = panel["signal"]
        ax.plot([t / scale for t, _ in panel["points"]], [v / 2**30 for _, v in panel["points"]], color="#1f5f8b",
                lw=1.2, label=f"{signal} (observed every pass)")
        for label, value, style in panel["lines"]:
            colour, dash, width = STYLES[style]
            ax.axhline(value / 2**30, color=colour, ls=dash, lw=width, label=label)
        for i, c in enumerate(c for c in trace.conditions if c["type"] == panel["condition"]):
            stop = c["to"] if c["to"] is not None else sc.duration
            ax.axvspan(c["from"] / scale, stop / scale, color="#f2c14e", alpha=0.25, lw=0,
                       label=f"{c['type']} reported" if i == 0 else None)
        marks = [(trace.evictions, "#8e44ad", "X", "eviction", lambda e: eviction_panel(e, shown) == signal),
                 (trace.oom_kills, "#b03a2e", None, "OOM kill (kernel)", lambda _: signal == SIGNAL_MEMORY_AVAILABLE),
                 (trace.rejections, "#34495e", "v", "rejection", lambda r: f"[{panel['condition']}]" in r["message"])]
        for items, colour, marker, name, here in marks:
            for i, m in enumerate(m for m in items if here(m)):
                ax.axvline(m["time"] / scale, color=colour, lw=1.0, alpha=0.8, label=name if i == 0 else None)
                if marker:  # at the signal's value for an eviction, on the axis for a rejection (as chapter 4 draws them)
                    y = next((v for t, v in panel["points"] if t >= m["time"]), 0) / 2**30 if marker == "X" else 0
                    ax.plot([m["time"] / scale], [y], marker=marker, ms=8, color=colour, clip_on=False, zorder=5)
        ax.set_ylim(0, _capacity(trace, signal) / 2**30 * 1.05)
        ax.set_ylabel(f"{signal} (GiB)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    bottom = axes[-1, 0]
    bottom.set_xlabel(f"time since the start ({unit})")
    bottom.set_xlim(0, sc.duration / scale)
    bottom.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_duration(int(v * scale))))
    fig.suptitle(f"{sc.name}: signals against thresholds", fontsize=12, x=0.02, ha="left")
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
