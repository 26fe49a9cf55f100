"""Numbers a page writes in its prose about a run's output must be in that output, so the two cannot drift.

The output itself is produced at build time by the page's `<!-- run: ... -->` marker; these tests tie the
prose around it to the same command.
"""

from __future__ import annotations

import re

import pytest

from mini_kubelet.cmd.main import main

from .conftest import DOCS

pytestmark = pytest.mark.ch4


def section(page: str, heading: str) -> str:
    text = (DOCS / page).read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def run_output(capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_the_timeline_commentary_names_times_the_replay_prints(capsys):
    """synchronize.md, "A timeline": every time the bullets name (**3m6s, 3m12s:** ...) is a line of the replay."""
    prose = section("chapter-4/synchronize.md", "A timeline")
    marker = re.search(r"<!-- (?:run|releases): mini-kubelet (run \S+) -->", prose)
    out = run_output(capsys, *marker.group(1).split())
    printed = {line.split()[0] for line in out.splitlines() if re.match(r"  \d+(m|s)", line)}
    named = [t for bold in re.findall(r"^- \*\*([^*]+):\*\*", prose, re.M) for t in bold.split(", ")]
    named += re.findall(r"\bat (\d+m\d+s)\b", prose)  # "it stops at 5m38s", "refused at 6m10s"
    assert len(named) >= 8
    assert [t for t in named if t not in printed] == []


def test_the_timeline_commentary_names_the_victims_the_replay_evicts(capsys):
    """The soft eviction takes the ranking's first Pod at 3m; the hard one at 5m8s takes the Guaranteed Pod."""
    out = run_output(capsys, "run", "examples/scenarios/memory-soft.yaml")
    by_time, current = {}, None
    for line in out.splitlines():
        if re.match(r"  \d+(m|s)", line):
            current = line.split()[0]
        match = re.match(r"\s+evicted default/(\S+):", line)
        if match:
            by_time[current] = match.group(1)
    assert by_time["3m"] == "best-effort-low-priority-low-usage"
    assert by_time["5m8s"].startswith("guaranteed-")
    prose = section("chapter-4/synchronize.md", "A timeline")
    assert "**3m:**" in prose and "**5m8s:**" in prose and "the **Guaranteed** Pod" in prose
