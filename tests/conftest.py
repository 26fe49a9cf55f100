"""Shared test set-up: the course's folders, and a rule that in CI nothing may be skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
LABS = ROOT / "labs"
DOCS = ROOT / "docs"

# Property tests check answers, not speed (speed is `make bench`): no per-example deadline that a busy
# machine could miss.
settings.register_profile("course", deadline=None)
settings.load_profile("course")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI a test that cannot run is a failure: turn a skip into a failure there."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"skipped in CI, where every test must run: {reason}"



# The longest test files start first: in parallel (`--dist loadfile`) each runs on its own worker while
# the short files fill the other, instead of starting last and running on alone at the end.
LONGEST_FIRST = ("test_offline", "test_site")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        module = item.module.__name__.rsplit(".", 1)[-1]
        return LONGEST_FIRST.index(module) if module in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within each file stays as written
