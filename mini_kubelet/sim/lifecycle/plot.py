"""Drawing a lifecycle replay: each container's state over time (waiting, running, terminated), with its restarts.

Upstream: none (a course tool); matplotlib is imported only when a plot is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

from .timeline import LifecycleTimeline
from .. import figure
from ..series import format_duration

COLOURS = {"waiting": "#E69F00", "running": "#0072B2", "terminated": "#D55E00"}  # Okabe and Ito: told apart with any colour vision


# --8<-- [start:plot_lifecycle]
def plot_lifecycle(timeline: LifecycleTimeline, path: Union[str, Path], width: float = figure.WIDE) -> None:
    """One row per container: coloured spans for its states, restart counts above, the pod's phase as a label.

    Upstream: none (a course tool)
    """
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    rows = list(dict.fromkeys((c.pod, c.container, c.init) for c in timeline.containers))
    end = timeline.scenario.duration
    with figure.style():
        fig, ax = figure.pyplot().subplots(figsize=(width, 0.7 * max(len(rows), 1) + 2.2), layout="constrained")
        for y, (pod, container, init) in enumerate(reversed(rows)):
            changes = [c for c in timeline.containers if (c.pod, c.container) == (pod, container)]
            for i, c in enumerate(changes):
                stop = changes[i + 1].time if i + 1 < len(changes) else end
                ax.broken_barh([(c.time, max(stop - c.time, 0.3))], (y - 0.35, 0.7), color=COLOURS[c.state])
            for r in (r for r in timeline.restarts if (r.pod, r.container) == (pod, container)):
                ax.annotate(f"#{r.count}", (r.time, y + 0.38), ha="center", va="bottom")
        ax.set_yticks(range(len(rows)), [f"{p}/{c}" + (" (init)" if i else "") for p, c, i in reversed(rows)])
        ax.set_xlim(0, end)
        ax.set_ylim(-0.7, max(len(rows), 1) - 0.1 + 0.5)
        ax.xaxis.set_major_locator(MultipleLocator(figure.time_ticks(end, width, (5, 10, 15, 30, 60, 120, 300, 600, 1800,
                                                                                  3600, 7200))))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _: format_duration(int(t))))
        ax.set_xlabel("time since the start of the replay")
        fig.suptitle(f"{timeline.scenario.name}: container states as the Pod status shows them", x=0.02, ha="left", wrap=True)
        fig.legend(handles=[Patch(color=v, label=k) for k, v in COLOURS.items()], loc="outside lower left", ncols=3,
                   frameon=False)
    figure.save(fig, path)
# --8<-- [end:plot_lifecycle]
