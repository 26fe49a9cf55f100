"""What the replay plots share: a palette told apart with any colour vision, a marker for each kind of event, text
sized for the column a page shows the figure in, and one legend under the panels, outside the data.

Upstream: none (a course tool); matplotlib is imported only when a plot is asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

# Inches wide: at these widths a laptop's column (about 690 px) and a phone's (about 360 px) show FONT at 13 px.
WIDE, NARROW = 7.5, 4.0
FONT = 10.5  # points: every text of a figure, ticks and legend included (the title a point larger)
DPI = 150  # sharp on a high-density screen at the size the column shows it

# Okabe and Ito's palette. What differs in hue alone differs in lightness, line or marker too, so that a reader who
# cannot tell the hues apart still can: the eviction (purple, a cross, a solid line) and the kernel's OOM kill
# (black, a star, a dash-dotted line), the hard threshold (solid) and the soft one (dashed).
COLOURS = {"signal": "#0072B2", "hard": "#D55E00", "soft": "#E69F00", "reclaim": "#6E6E6E", "pressure": "#F0E442",
           "eviction": "#CC79A7", "oom": "#000000", "rejection": "#009E73", "gc": "#56B4E9"}
LINES = {"hard": "-", "soft": "--", "reclaim": ":", "eviction": "-", "oom": "-.", "rejection": ":", "gc": ":"}
MARKERS = {"eviction": "X", "oom": "*", "rejection": "v", "gc": "^"}

RC = {"font.size": FONT, "axes.labelsize": FONT, "xtick.labelsize": FONT, "ytick.labelsize": FONT,
      "legend.fontsize": FONT, "figure.titlesize": FONT + 1, "axes.titlesize": FONT}


def pyplot():
    """matplotlib's pyplot on the file-only backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def style():
    """The figures' text sizes, for the artists made inside it."""
    return pyplot().rc_context(RC)


def panels(count: int, width: float, panel_height: float):
    """A figure of `count` panels one above the other, sharing the time axis, laid out to leave room for the legend."""
    plt = pyplot()
    return plt.subplots(count, 1, figsize=(width, panel_height * count + 1.1), sharex=True, squeeze=False,
                        layout="constrained")


def time_ticks(span: float, width: float, steps: tuple[float, ...]) -> float:
    """The first step that puts no more ticks on the time axis than its width has room for (two an inch)."""
    room = max(int(width * 1.5), 3)
    return next((s for s in steps if span / s <= room), steps[-1])


def finish(fig, width: float, notes: list) -> None:
    """One legend for every panel, under them (each entry once, in two columns where the figure is wide); then, once
    the panels are laid out, each note (ax, text, xy, colour) beside the point it names: to its right if it fits
    inside the panel, else to its left, and lifted above the notes it would cover."""
    import textwrap

    columns = 1 if width < 6 else 2
    room = int((width * 72 / columns - 45) / (FONT * 0.56))  # the characters a legend line holds, its handle aside
    entries = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            head, comma, tail = label.rpartition(", ")  # a threshold's grace period goes on a line of its own
            folded = (label if len(label) <= room else f"{head},\n  {tail}" if comma and len(head) < room
                      else textwrap.fill(label, room, subsequent_indent="  "))
            entries.setdefault(folded, handle)
    lines = sum(label.count("\n") + 1 for label in entries) / columns + 1
    fig.set_size_inches(width, fig.get_size_inches()[1] + lines * FONT * 1.9 / 72)  # the panels keep their height
    fig.legend(entries.values(), entries.keys(), loc="outside lower left", ncols=columns, frameon=False,
               handlelength=2.6)
    fig.draw_without_rendering()
    renderer, placed = fig.canvas.get_renderer(), []
    for ax, text, xy, colour in notes:
        inside = ax.get_window_extent(renderer)
        for side, dx in (("left", 8), ("right", -8)):
            note = ax.annotate(text, xy, xytext=(dx, 14), textcoords="offset points", ha=side, color=colour,
                               arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.6}, annotation_clip=False,
                               bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": colour, "lw": 0.8})
            note.set_in_layout(False)  # placed after the layout, which must not move the panels for it
            box = text_box(note, renderer)
            if side == "right" or box.x1 <= inside.x1:
                break
            note.remove()
        while any(box.overlaps(other) for other in placed):
            note.xyann = (note.xyann[0], note.xyann[1] + box.height * 72 / fig.dpi + 3)
            box = text_box(note, renderer)
        placed.append(box)


def text_box(note, renderer):
    """Where a note's text and its frame are drawn, without the line to its point."""
    from matplotlib.text import Text
    note.update_positions(renderer)
    return Text.get_window_extent(note, renderer).expanded(1.1, 1.3)


def save(fig, path: Union[str, Path]) -> None:
    """Write the figure (PNG or SVG, by the name) and free it."""
    fig.savefig(path, dpi=DPI)
    pyplot().close(fig)
