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


# Tests that share a costly set-up run on one worker when the suite runs in parallel (pytest-xdist,
# `--dist loadgroup`): the built site and the labs it shows, and the offline folder.
GROUPS = {"test_site": "site", "test_offline": "offline"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        group = GROUPS.get(module)
        if module == "test_labs" and item.originalname == "test_solutions_pass_every_check":
            group = "site"  # it runs the labs the site build then reuses from the cache
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
