"""Drawing a replay: each pressured signal against its thresholds, with conditions, reclaims and evictions.

Upstream: none (a course tool); matplotlib is imported only when a plot is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

from ...eviction import signals
from ...eviction.api import SIGNAL_MEMORY_AVAILABLE, get_threshold_quantity
from ..series import format_duration
from .timeline import Timeline, format_bytes, threshold_text, value_text


# --8<-- [start:plot_timeline]
def plot_timeline(timeline: Timeline, path: Union[str, Path]) -> None:
    """Draw each pressured signal against its thresholds over time, with conditions, reclaims and evictions marked.

    Upstream: none (a course tool)
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    watched = list(dict.fromkeys(t["signal"] for t in timeline.thresholds))
    pressured = [s for s in watched if any(any(m.split("<")[0] == s for m in step.thresholds_met) for step in timeline.steps)]
    shown = (pressured or watched[:1] or [SIGNAL_MEMORY_AVAILABLE])[:4]
    fig, axes = plt.subplots(len(shown), 1, figsize=(11, 3.6 * len(shown) + 0.9), sharex=True, squeeze=False)
    times = [step.time for step in timeline.steps]
    for ax, signal in zip(axes[:, 0], shown):
        counts = signal in signals.DECIMAL_SIGNALS
        observed = [(s.time, s.observations[signal]) for s in timeline.steps if signal in s.observations]
        capacity = observed[0][1]["capacity"] if observed else 0
        top = max([o["available"] for _, o in observed] + [1])
        unit, unit_name = (1, "") if counts else ((2**30, "Gi") if top >= 2 * 2**30 else (2**20, "Mi"))
        ax.plot([t for t, _ in observed], [o["available"] / unit for _, o in observed], color="#1f5fa8", lw=2,
                marker="o", ms=2.5, label=f"{signal} (observed every pass)")
        for t in [x for x in timeline.scenario.config.thresholds if x.signal == signal]:
            value = get_threshold_quantity(t.value, capacity) / unit
            hard = not t.grace_period
            ax.axhline(value, color="#c0392b" if hard else "#e67e22", ls="-" if hard else "--", lw=1.6,
                       label=f"hard threshold {threshold_text(t)}" if hard else
                       f"soft threshold {threshold_text(t).split(' (')[0]}, grace {format_duration(int(t.grace_period.total_seconds()))}")
            if t.min_reclaim is not None:
                target = value + get_threshold_quantity(t.min_reclaim, capacity) / unit
                ax.axhline(target, color="#7f8c8d", ls=":", lw=1.2, label=f"threshold + minimum reclaim ({value_text(t.min_reclaim)})")
        condition = signals.SIGNAL_TO_NODE_CONDITION.get(signal)
        for i, interval in enumerate(i for i in timeline.condition_intervals() if i["type"] == condition):
            end = interval["to"] if interval["to"] is not None else times[-1]
            ax.axvspan(interval["from"], end, color="#e74c3c", alpha=0.08, label=f"{condition} reported" if i == 0 else None)
        ymax, span, labelled, reclaims = ax.get_ylim()[1], max(times + [1]), [], []
        for step in timeline.steps:
            if step.reclaimed and condition == signals.DISK_PRESSURE:
                ax.axvline(step.time, color="#27ae60", ls=":", lw=1.4)
                stack = sum(1 for x in reclaims if step.time - x < span / 6)
                reclaims.append(step.time)
                ax.annotate(f"GC freed {format_bytes(step.reclaimed['bytes'])}", (step.time, ymax * 0.97), fontsize=8,
                            color="#1e8449", ha="left", va="top", xytext=(4, -16 * stack), textcoords="offset points",
                            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "#27ae60", "lw": 0.6})
            for eviction in step.evictions:
                if eviction.signal != signal and not any(eviction.signal == s for s in shown[:1] if s != signal):
                    continue
                y = step.observations.get(signal, {"available": 0})["available"] / unit
                ax.axvline(eviction.time, color="#8e44ad", lw=1.2, alpha=0.7)
                ax.plot([eviction.time], [y], marker="X", ms=10, color="#8e44ad", zorder=5)
                stack = sum(1 for x in labelled if eviction.time - x < span / 6)  # labels close in time stack up
                labelled.append(eviction.time)
                ax.annotate(f"evict {eviction.pod.split('/', 1)[1]} (grace {eviction.grace_period}s)", (eviction.time, y),
                            xytext=(8, 14 + 20 * stack), textcoords="offset points", fontsize=8.5, color="#5b2c6f",
                            arrowprops={"arrowstyle": "-", "color": "#8e44ad", "lw": 0.6},
                            bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "#8e44ad", "lw": 0.8})
        for admission in (a for a in timeline.admissions if not a.admitted and condition in a.message):
            ax.plot([admission.time], [0], marker="v", ms=8, color="#34495e", clip_on=False, zorder=5)
            ax.annotate(f"rejected {admission.pod.split('/', 1)[1]}", (admission.time, 0), xytext=(6, 6),
                        textcoords="offset points", fontsize=8, color="#34495e",
                        bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "#34495e", "lw": 0.6})
        ax.set_ylim(bottom=0)
        ax.set_ylabel(f"{signal}" + (f" ({unit_name})" if unit_name else ""))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if counts or v >= 10 else f"{v:g}"))
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    bottom = axes[-1, 0]
    bottom.set_xlim(0, max(times + [1]))
    span = max(times + [1])
    step_seconds = next((s for s in (10, 30, 60, 120, 300, 600, 1800, 3600) if span / s <= 12), 7200)
    bottom.xaxis.set_major_locator(MultipleLocator(step_seconds))
    bottom.xaxis.set_major_formatter(FuncFormatter(lambda v, _: format_duration(int(v))))
    bottom.set_xlabel("time since the start of the replay (one synchronize pass every 10 s)")
    fig.suptitle(f"{timeline.scenario.name}: signals against thresholds", fontsize=12, x=0.02, ha="left")
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
# --8<-- [end:plot_timeline]
