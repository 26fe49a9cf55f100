"""The replay plots, read from the figures the plotting code draws: legends outside the data, no text cut off,
thresholds drawn solid (hard) and dashed (soft) as chapter 4 says, a panel only for a signal that came under pressure
or moved, and an eviction and a kernel OOM kill told apart without colour."""

from __future__ import annotations

import re

import pytest

from mini_kubelet import sim
from mini_kubelet.cmd.main import main
from mini_kubelet.sim import figure
from mini_kubelet.sim.eviction.plot import draw_timeline, shown_signals
from mini_kubelet.sim.node.plot import draw_node

from .conftest import DOCS, EXAMPLES
from .test_node_replay import run_example

pytestmark = pytest.mark.ch4

SCENARIOS = EXAMPLES / "scenarios"
# The plots the site draws, each on the page that shows it.
ON_THE_SITE = sorted({m for page in DOCS.rglob("*.md") for m in re.findall(r"^<!-- plot: examples/scenarios/([\w.-]+)\.yaml -->$",
                                                                           page.read_text(encoding="utf-8"), re.M)})


def drawn(name: str, width: float):
    """The figure `mini-kubelet run NAME.yaml --plot` saves, and the replay it shows."""
    doc = (SCENARIOS / f"{name}.yaml").read_text(encoding="utf-8")
    if "replay: node" in doc:
        trace = run_example(f"{name}.yaml")
        return draw_node(trace, width), trace
    timeline = sim.run_scenario(sim.load_scenario(str(SCENARIOS / f"{name}.yaml")))
    return draw_timeline(timeline, width), timeline


def luminance(colour) -> float:
    """WCAG's relative luminance: what tells two colours apart to a reader who cannot tell their hues apart."""
    from matplotlib.colors import to_rgb

    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in to_rgb(colour)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


@pytest.mark.parametrize("width", [figure.WIDE, figure.NARROW])
@pytest.mark.parametrize("name", ["memory-hard", "node-guaranteed-oom"])
def test_the_legend_is_outside_the_data_and_no_text_is_cut_off(name, width):
    assert {"memory-hard", "node-guaranteed-oom"} <= set(ON_THE_SITE)
    fig, _ = drawn(name, width)
    fig.draw_without_rendering()
    renderer, page = fig.canvas.get_renderer(), fig.bbox
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent(renderer)), "the legend covers a panel"
    texts = [t for ax in fig.axes for t in ax.texts] + fig.texts + legend.get_texts()
    for ax in fig.axes:  # the tick labels drawn: those within the panel's limits
        (left, right), (bottom, top) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        texts += [t for t in ax.get_xticklabels() if left <= t.get_position()[0] <= right and t.get_text()]
        texts += [t for t in ax.get_yticklabels() if bottom <= t.get_position()[1] <= top and t.get_text()]
        texts += [label for label in (ax.xaxis.label, ax.yaxis.label) if label.get_text()]
    for text in texts:
        extent = figure.text_box(text, renderer) if hasattr(text, "xyann") else text.get_window_extent(renderer)
        assert page.x0 - 1 <= extent.x0 and extent.x1 <= page.x1 + 1, f"cut off at the side: {text.get_text()!r}"
        assert page.y0 - 1 <= extent.y0 and extent.y1 <= page.y1 + 1, f"cut off: {text.get_text()!r}"
    assert min(t.get_fontsize() for t in texts) >= figure.FONT


@pytest.mark.parametrize("name", ON_THE_SITE)
def test_each_panel_is_a_signal_under_pressure_or_that_moved_with_its_thresholds_solid_if_hard_dashed_if_soft(name):
    fig, replay = drawn(name, figure.NARROW)
    thresholds = replay.scenario.config.thresholds
    for ax in fig.axes:
        signal = ax.get_ylabel().split(" ")[0]
        values = [y for line in ax.get_lines() if line.get_label().startswith(signal) for y in line.get_ydata()]
        met = any(f"threshold {signal}<" in line.get_label() and min(values) < line.get_ydata()[0]
                  for line in ax.get_lines())
        assert met or len(set(values)) > 1, f"{name}: a panel for {signal}, which neither came under pressure nor moved"
        drawn_lines = {line.get_label().split(" ")[0]: line.get_linestyle() for line in ax.get_lines()
                       if " threshold " in line.get_label()}
        kinds = {"soft" if t.grace_period else "hard" for t in thresholds if t.signal == signal}
        assert kinds and set(drawn_lines) == kinds
        assert all(drawn_lines[kind] == {"hard": "-", "soft": "--"}[kind] for kind in kinds)


def test_a_replay_with_no_pressure_draws_the_signal_that_moved():
    """oom-limit.yaml: the kernel kills the container at its limit before the node comes under pressure; of the
    signals the eviction manager watches, memory is the one that moves."""
    timeline = sim.run_scenario(sim.load_scenario(str(SCENARIOS / "playbook" / "oom-limit.yaml")))
    assert not any(step.thresholds_met for step in timeline.steps)
    assert shown_signals(timeline) == ["memory.available"]


def test_an_eviction_and_a_kernel_oom_kill_differ_in_marker_line_and_lightness_not_only_in_hue():
    fig, trace = drawn("node-guaranteed-oom", figure.WIDE)
    assert trace.evictions and trace.oom_kills
    marks = {text.get_text(): handle for handle, text in zip(fig.legends[0].legend_handles, fig.legends[0].get_texts())}
    eviction, kill = marks["eviction"], marks["OOM kill (kernel)"]
    assert eviction.get_marker() != kill.get_marker() and eviction.get_linestyle() != kill.get_linestyle()
    lighter, darker = sorted((luminance(eviction.get_color()), luminance(kill.get_color())), reverse=True)
    assert (lighter + 0.05) / (darker + 0.05) >= 3  # WCAG's contrast ratio: apart in any colour vision, or in grey
    # The threshold lines carry no marker, and no two kinds of event share one.
    assert all(marks[label].get_marker() in ("None", None, "") for label in marks if " threshold " in label)
    assert len({figure.MARKERS[kind] for kind in figure.MARKERS}) == len(figure.MARKERS)


def test_plot_width_draws_for_a_phone_and_a_width_out_of_range_is_refused(tmp_path, capsys):
    out = tmp_path / "phone.png"
    assert main(["run", str(SCENARIOS / "memory-hard.yaml"), "--plot", str(out), "--plot-width", "4"]) == 0
    header = out.read_bytes()[:24]
    assert header.startswith(b"\x89PNG") and int.from_bytes(header[16:20], "big") == 4 * figure.DPI
    capsys.readouterr()
    assert main(["run", str(SCENARIOS / "memory-hard.yaml"), "--plot", str(out), "--plot-width", "1"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["mini-kubelet: --plot-width: 1: expected inches from 3 to 40"]
