"""Every chapter's pages, from chapter 1 to the capstone: each has its objectives, key points and upstream links;
the code it includes names sections that exist; the files its run markers name exist; each item of its "Since 1.27"
notes names the release it came in; its closing "Next:" names the page the navigation puts after it.

One check for all chapters (it was written twice, for chapters 1 and 4), each page's test marked with its chapter,
so `pytest -m ch5` runs chapter 5's. The chapters' own facts stay in test_pages_ch1.py, test_pages_ch4.py and
test_playbook.py.
"""

from __future__ import annotations

import posixpath
import re
import shlex

import pytest
import yaml

from hooks.course import ANY_COMMAND_MARKER, VALID_REF

from .conftest import DOCS, ROOT

CHAPTERS = range(1, 6)
SNIPPET = re.compile(r'^\s*--8<-- "([^":]+)(?::([\w.-]+))?"$', re.M)
PAGES = [pytest.param(page, id=page.relative_to(DOCS).as_posix(), marks=getattr(pytest.mark, f"ch{chapter}"))
         for chapter in CHAPTERS for page in sorted((DOCS / f"chapter-{chapter}").rglob("*.md"))]


def test_every_chapter_has_pages():
    for chapter in CHAPTERS:
        assert (DOCS / f"chapter-{chapter}" / "index.md").exists(), chapter
    assert len(PAGES) >= 5 * len(CHAPTERS)


@pytest.mark.parametrize("page", PAGES)
def test_page_has_objectives_key_points_and_upstream_links(page):
    text = page.read_text()
    assert "## What you will learn" in text
    assert "## Key points" in text
    assert VALID_REF.search(" ".join(re.findall(r"\[\[([^\[\]\n]*)\]\]", text))), "no [[upstream]] reference"


@pytest.mark.parametrize("page", PAGES)
def test_snippets_name_sections_that_exist(page):
    for path, section in SNIPPET.findall(page.read_text()):
        source = (ROOT / path).read_text()
        assert not section or f"--8<-- [start:{section}]" in source, f"{page.name}: no section {section} in {path}"


@pytest.mark.parametrize("page", PAGES)
def test_run_markers_name_files_that_exist(page):
    for _, command in ANY_COMMAND_MARKER.findall(page.read_text()):
        for word in shlex.split(command):
            if word.startswith("examples/"):
                assert (ROOT / word).exists(), f"{page.name}: {word} does not exist"


@pytest.mark.parametrize("page", PAGES)
def test_since_notes_name_a_release_in_every_item(page):
    for note in re.findall(r'!!! info "Since 1.27"\n((?:    .*\n|\n)+)', page.read_text()):
        for item in re.split(r"\n    - ", "\n" + note)[1:]:  # the first part is the box's introduction
            assert re.search(r"v1\.\d\d|Later", item), (page.name, item[:80])


def chapters_called_in_preparation(text: str) -> list[str]:
    """The chapter numbers a text says are still in preparation (or will come later)."""
    return re.findall(r"[Cc]hapter (\d)\b[^.]{0,80}?in preparation", text)


@pytest.mark.ch0
def test_no_page_calls_a_chapter_that_ships_in_preparation():
    """Chapter 0's map once said chapter 5 was in preparation; a chapter with pages is not."""
    assert chapters_called_in_preparation("Chapter 5, the capstone (in preparation), will run") == ["5"]
    assert chapters_called_in_preparation("chapter 5 (the capstone) is in\npreparation") == []  # hence the joined lines below
    for page in [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]:
        text = re.sub(r"\s+", " ", page.read_text())
        for chapter in chapters_called_in_preparation(text):
            assert not (DOCS / f"chapter-{chapter}" / "index.md").exists(), f"{page.name}: chapter {chapter} ships"


def nav_files(nav) -> list[str]:
    files = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        files += nav_files(value) if isinstance(value, list) else [value]
    return files


def test_every_next_line_names_the_page_the_navigation_puts_next():
    """A chapter page's closing "Next:" sends the reader, first, to the page after it in mkdocs.yml's nav (the
    footer's "Next" link), so two pages cannot each name the other as next."""
    order = nav_files(yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)["nav"])
    checked = []
    for page, following in zip(order, order[1:]):
        if not page.startswith("chapter-"):
            continue
        endings = re.findall(r"^Next: .*?\]\(([^)#]+)", (DOCS / page).read_text(), re.M | re.S)
        assert endings, f"{page} has no Next: line"
        assert posixpath.normpath(posixpath.join(posixpath.dirname(page), endings[-1])) == following, page
        checked.append(page)
    assert len(checked) >= 50
