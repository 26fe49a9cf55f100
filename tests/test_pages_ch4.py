"""Chapter 4's pages: every page is in the nav (test_pages.py checks their objectives, key points, links and
examples); the misconceptions the course promised to settle are settled where the pages say."""

from __future__ import annotations

import re

import pytest
import yaml

from .conftest import DOCS, ROOT

pytestmark = pytest.mark.ch4

CHAPTER = DOCS / "chapter-4"
PAGES = sorted(CHAPTER.glob("*.md"))


def nav_entries() -> list[str]:
    text = (ROOT / "mkdocs.yml").read_text()
    nav = yaml.load(text, Loader=yaml.BaseLoader)["nav"]  # BaseLoader: no !!python tags
    section = next(item for item in nav if isinstance(item, dict) and "4 · Eviction under node pressure" in item)
    entries = []
    for entry in section["4 · Eviction under node pressure"]:
        entries += list(entry.values()) if isinstance(entry, dict) else [entry]
    return entries


def test_every_page_is_in_the_nav_and_the_lab_follows_them():
    entries = nav_entries()
    assert entries[0] == "chapter-4/index.md" and entries[-1] == "labs/04-eviction.py"
    assert sorted(e for e in entries if e.startswith("chapter-4/")) == sorted(f"chapter-4/{p.name}" for p in PAGES)
    assert (ROOT / "labs" / "src" / "04-eviction.py").exists()


def test_eviction_order_is_not_qos_order_is_settled_on_the_ranking_page():
    # Chapter 3 left this misconception open and sends the reader to chapter 4.
    ranking = (CHAPTER / "ranking.md").read_text()
    assert '!!! warning "Misconception: the kubelet evicts BestEffort first' in ranking
    assert "eviction rank --summary examples/summary/memory-pressure.json" in ranking
    assert "../chapter-3/" in ranking


@pytest.mark.parametrize("misconception, page", [
    ("a soft threshold waits for its grace period before raising the condition", "conditions-admission.md"),
    ("limits are enforced by the kubelet", "eviction-vs-oom.md"),
    ("static and mirror Pods can never be stopped", "eviction-vs-oom.md"),
    ("eviction order is QoS order", "eviction-vs-oom.md"),
])
def test_misconceptions_are_stated_head_on(misconception, page):
    assert f'!!! warning "Misconception: {misconception}"' in (CHAPTER / page).read_text()


def test_since_notes_date_the_grace_period_changes():
    # The post-1.27 grace-period changes carry the release whose source first has them: the 1-second
    # hard-eviction override (#124063, immediateEvictionGracePeriodSeconds) is in v1.31's eviction_manager.go
    # and not v1.30's; the soft-eviction minimum (#122890, AllowOverwriteTerminationGracePeriodSeconds) is in
    # v1.32's and not v1.31's.
    for page in PAGES:
        for note in re.findall(r'!!! info "Since 1.27"\n((?:    .*\n|\n)+)', page.read_text()):
            for pr, release in (("#124063", "v1.31"), ("#122890", "v1.32")):
                for item in re.split(r"\n    - ", note):
                    if pr in item:
                        assert release in item and "a later release" not in item, (page.name, pr)
