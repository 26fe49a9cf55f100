"""Drawing a replay: each pressured signal against its thresholds, with conditions, reclaims and evictions.

Upstream: none (a course tool); matplotlib is imported only when a plot is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

from ...eviction import signals
from ...eviction.api import SIGNAL_MEMORY_AVAILABLE, get_threshold_quantity
from .. import figure
from ..figure import COLOURS, LINES, MARKERS
from ..series import format_duration
from .timeline import Timeline, format_bytes, threshold_text, value_text


def shown_signals(timeline: Timeline) -> list[str]:
    """The signals drawn, a panel each: those whose threshold was met (up to four), else the first that moved."""
    watched = list(dict.fromkeys(t["signal"] for t in timeline.thresholds))
    pressured = [s for s in watched if any(any(m.split("<")[0] == s for m in step.thresholds_met) for step in timeline.steps)]
    moved = [s for s in watched if len({step.observations[s]["available"] for step in timeline.steps
                                        if s in step.observations}) > 1]
    return (pressured or moved[:1] or watched[:1] or [SIGNAL_MEMORY_AVAILABLE])[:4]


# --8<-- [start:plot_timeline]
def draw_timeline(timeline: Timeline, width: float = figure.WIDE):
    """The figure plot_timeline saves: each shown signal against its thresholds, conditions, reclaims and evictions.

    Upstream: none (a course tool)
    """
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    shown = shown_signals(timeline)
    times = [step.time for step in timeline.steps]
    span = max(times + [1])
    notes = []
    with figure.style():
        fig, axes = figure.panels(len(shown), width, 2.9)
        for ax, signal in zip(axes[:, 0], shown):
            counts = signal in signals.DECIMAL_SIGNALS
            observed = [(s.time, s.observations[signal]) for s in timeline.steps if signal in s.observations]
            capacity = observed[0][1]["capacity"] if observed else 0
            top = max([o["available"] for _, o in observed] + [1])
            unit, unit_name = (1, "") if counts else ((2**30, "Gi") if top >= 2 * 2**30 else (2**20, "Mi"))
            ax.set_xlim(0, span)
            ax.plot([t for t, _ in observed], [o["available"] / unit for _, o in observed], color=COLOURS["signal"],
                    lw=2, marker="o", ms=2.5, label=f"{signal} (observed every pass)")
            for t in [x for x in timeline.scenario.config.thresholds if x.signal == signal]:
                value, kind = get_threshold_quantity(t.value, capacity) / unit, "soft" if t.grace_period else "hard"
                grace = f", grace {format_duration(int(t.grace_period.total_seconds()))}" if t.grace_period else ""
                ax.axhline(value, color=COLOURS[kind], ls=LINES[kind], lw=1.8,
                           label=f"{kind} threshold {threshold_text(t).split(' (')[0]}{grace}")
                if t.min_reclaim is not None:
                    target = value + get_threshold_quantity(t.min_reclaim, capacity) / unit
                    ax.axhline(target, color=COLOURS["reclaim"], ls=LINES["reclaim"], lw=1.3,
                               label=f"threshold + minimum reclaim ({value_text(t.min_reclaim)})")
            condition = signals.SIGNAL_TO_NODE_CONDITION.get(signal)
            for i, interval in enumerate(i for i in timeline.condition_intervals() if i["type"] == condition):
                end = interval["to"] if interval["to"] is not None else times[-1]
                ax.axvspan(interval["from"], end, color=COLOURS["pressure"], alpha=0.3, lw=0,
                           label=f"{condition} reported" if i == 0 else None)
            ymax, evicted, reclaims = max(ax.get_ylim()[1], top / unit), [], []
            for step in timeline.steps:
                if step.reclaimed and condition == signals.DISK_PRESSURE:
                    ax.axvline(step.time, color=COLOURS["gc"], ls=LINES["gc"], lw=1.6)
                    ax.plot([step.time], [ymax], marker=MARKERS["gc"], ms=9, color=COLOURS["gc"], mec="black", mew=0.5,
                            ls=LINES["gc"], clip_on=False, zorder=5, label=None if reclaims else "image garbage collection")
                    reclaims.append(step.time)
                    notes.append((ax, f"GC freed {format_bytes(step.reclaimed['bytes'])}", (step.time, ymax * 0.8),
                                  "#1F5F7A"))
                for eviction in step.evictions:
                    if eviction.signal != signal and not any(eviction.signal == s for s in shown[:1] if s != signal):
                        continue
                    y = step.observations.get(signal, {"available": 0})["available"] / unit
                    ax.axvline(eviction.time, color=COLOURS["eviction"], ls=LINES["eviction"], lw=1.2)
                    ax.plot([eviction.time], [y], marker=MARKERS["eviction"], ms=10, color=COLOURS["eviction"],
                            mec="black", mew=0.6, ls=LINES["eviction"], zorder=5, label=None if evicted else "eviction")
                    evicted.append(eviction.time)
                    notes.append((ax, f"evict {eviction.pod.split('/', 1)[1]} (grace {eviction.grace_period}s)",
                                  (eviction.time, y), "#7A3E65"))
            rejected = [a for a in timeline.admissions if not a.admitted and condition in a.message]
            for i, admission in enumerate(rejected):
                ax.plot([admission.time], [0], marker=MARKERS["rejection"], ms=9, color=COLOURS["rejection"],
                        mec="black", mew=0.5, clip_on=False, zorder=5, ls="none",
                        label="rejected admission" if i == 0 else None)
                notes.append((ax, f"rejected {admission.pod.split('/', 1)[1]}", (admission.time, 0), "#00573F"))
            ax.set_ylim(bottom=0)
            ax.set_ylabel(f"{signal}" + (f" ({unit_name})" if unit_name else ""))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if counts or v >= 10 else f"{v:g}"))
            ax.grid(True, alpha=0.3)
        bottom = axes[-1, 0]
        bottom.xaxis.set_major_locator(MultipleLocator(figure.time_ticks(span, width, (10, 30, 60, 120, 300, 600, 1800,
                                                                                        3600, 7200))))
        bottom.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_duration(int(v))))
        bottom.set_xlabel("time since the start (a pass every 10 s)")
        fig.suptitle(f"{timeline.scenario.name}: signals against thresholds", x=0.02, ha="left", wrap=True)
        figure.finish(fig, width, notes)
    return fig


def plot_timeline(timeline: Timeline, path: Union[str, Path], width: float = figure.WIDE) -> None:
    """Draw each pressured signal against its thresholds over time, with conditions, reclaims and evictions marked.

    Upstream: none (a course tool)
    """
    figure.save(draw_timeline(timeline, width), path)
# --8<-- [end:plot_timeline]
