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

