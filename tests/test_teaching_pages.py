"""The instructor pages: the fork checklist names every setting, each lab has its notes, the agendas add up."""

from __future__ import annotations

import re

import pytest

from hooks.course import EDITION_BLOCK, for_edition, lab_links, nav_files
from tools.check_upstream import CLONE

from .conftest import DOCS, LABS, ROOT, mkdocs_config

pytestmark = pytest.mark.teaching

TEACHING = (DOCS / "teaching.md").read_text()
FORK_SETTINGS = ["site_name", "repo_url", "repo_name", "edit_uri", "site_url", "copyright",
                 "extra.upstream_tag", "extra.lab_solutions"]
LAB_SOURCES = sorted((LABS / "src").glob("*.py"))
EXERCISE = re.compile(r"^# #+\s*(Exercise \d+: .+?)\s*$", re.M)  # a heading in a Markdown cell


def table(text: str, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table after a heading."""
    section = text.split(heading, 1)[1]
    rows = re.search(r"^[ \t]*\|.*?(?=\n[ \t]*\n|\Z)", section, re.M | re.S).group(0).splitlines()[2:]
    return [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows]


def minutes(clock: str) -> int:
    hours, mins = clock.split(":")
    return int(hours) * 60 + int(mins)


@pytest.mark.parametrize("setting", FORK_SETTINGS)
def test_the_fork_checklist_names_every_setting(setting):
    rows = table(TEACHING, "1. **Fork and rename.**")
    assert f"`{setting}`" in [row[0] for row in rows]
    config, *keys = mkdocs_config(), *setting.split(".")
    if setting == "site_url" and setting not in config:  # the course leaves it unset, so `make serve` serves at the root
        assert "# site_url:" in (ROOT / "mkdocs.yml").read_text()
    else:
        for key in keys:
            config = config[key]


def test_step_2_gives_the_check_upstream_commands():
    block = re.search(r"2\. \*\*Pin the version you teach\.\*\*.*?```console\n(.*?)```", TEACHING, re.S).group(1)
    clone, check = [line.strip().removeprefix("$ ") for line in block.strip().splitlines()]
    tag = re.search(r"TAG=(\S+)", check).group(1)
    assert clone.startswith(CLONE.format(tag=tag))
    assert check == f"make check-upstream KUBERNETES={clone.split()[-1]} TAG={tag}"


def test_every_make_target_the_page_names_exists():
    targets = set(re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), re.M))
    named = set(re.findall(r"`make ([a-z-]+)", TEACHING)) | set(re.findall(r"^\s*\$ make ([a-z-]+)", TEACHING, re.M))
    assert {"offline", "check-upstream", "test", "lab", "serve", "install"} <= named
    assert named <= targets


def test_every_instructor_page_is_in_the_nav():
    listed = nav_files(mkdocs_config()["nav"])
    pages = sorted(f"instructor/{p.name}" for p in (DOCS / "instructor").glob("*.md"))
    assert [f for f in listed if f.startswith("instructor/")] == ["instructor/index.md", "instructor/agendas.md"] + [
        f"instructor/lab-{source.name[:2]}.md" for source in LAB_SOURCES]
    assert sorted(f for f in listed if f.startswith("instructor/")) == pages


@pytest.mark.parametrize("source", LAB_SOURCES, ids=lambda p: p.stem)
def test_each_lab_has_notes_on_every_exercise(source):
    notes = (DOCS / "instructor" / f"lab-{source.name[:2]}.md").read_text()
    exercises = EXERCISE.findall(source.read_text())
    timings = table(notes, "## Timings")
    assert [row[0] for row in timings] == exercises
    total = sum(int(row[1]) for row in timings)
    assert f"Total: {total} minutes" in notes
    mistakes = notes.split("## The mistakes the checks catch", 1)[1].split("## Discussion questions", 1)[0]
    assert re.findall(r"^\*\*(Exercise \d+: .+?)\.?\*\*", mistakes, re.M) == exercises
    questions = notes.split("## Discussion questions", 1)[1]
    assert len(re.findall(r"^- ", questions, re.M)) >= 3


@pytest.mark.parametrize("heading, limit", [("## Half day", 4 * 60), ("## Full day", 8 * 60)])
def test_the_agendas_add_up(heading, limit):
    text = (DOCS / "instructor" / "agendas.md").read_text()
    rows = table(text, heading)
    for row, following in zip(rows, rows[1:]):
        assert minutes(row[0]) + int(row[1]) == minutes(following[0]), row
    total = minutes(rows[-1][0]) + int(rows[-1][1])
    assert total <= limit
    stated = re.search(r"^Total: (\d+) hours?(?: (\d+) minutes)?", text.split(heading, 1)[1], re.M)
    assert int(stated.group(1)) * 60 + int(stated.group(2) or 0) == total


def test_the_full_day_gives_each_lab_the_time_its_notes_ask_for():
    rows = table((DOCS / "instructor" / "agendas.md").read_text(), "## Full day")
    for source in LAB_SOURCES:
        number = source.name[:2]
        notes = (DOCS / "instructor" / f"lab-{number}.md").read_text()
        asked = int(re.search(r"^Total: (\d+) minutes", notes, re.M).group(1))
        session = next(row for row in rows if row[2].startswith(f"Lab {number}"))
        assert int(session[1]) == asked, number


# --- the learner edition --------------------------------------------------------------------------------

PAGES = sorted(DOCS.rglob("*.md"))
LEARNER_PART = "<!-- solutions edition -->\nBoth.\n<!-- learner edition -->\nLearners.\n<!-- end edition -->\n"


@pytest.mark.parametrize("solutions, shown", [(True, "Both."), (False, "Learners.")])
def test_an_edition_block_shows_the_part_for_the_edition(solutions, shown):
    text = f"Intro.\n{LEARNER_PART}    <!-- solutions edition -->\n    Indented.\n    <!-- end edition -->\nEnd.\n"
    assert for_edition(text, solutions) == f"Intro.\n{shown}\n" + ("    Indented.\n" if solutions else "") + "End.\n"


def test_the_learner_edition_unlinks_the_instructor_notes_outside_code():
    text = "See [the notes](instructor/index.md) and [Lab 00](../instructor/lab-00.md#timings).\n```\n[x](instructor/a.md)\n```\n"
    assert for_edition(text, True) == text
    assert for_edition(text, False) == "See the notes and Lab 00.\n```\n[x](instructor/a.md)\n```\n"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_every_edition_block_is_closed(page):
    text = page.read_text()
    for solutions in (True, False):
        assert "edition -->" not in for_edition(text, solutions)
    assert len(EDITION_BLOCK.findall(text)) == text.count("<!-- solutions edition -->")


@pytest.mark.site
def test_the_learner_editions_site_has_no_instructor_note_and_no_solutions_claim(kit):
    """The offline folder's site is the learner edition (conftest.py's kit): a full build of it, read here."""
    site = kit / "site"
    assert not (site / "instructor").exists()
    pages = {page.relative_to(site).as_posix(): page.read_text(encoding="utf-8") for page in site.rglob("*.html")}
    assert len(pages) > 50
    assert [name for name, html in pages.items() if re.search(r'href="[^"]*instructor/', html)] == []
    assert "Every lab is on this site as you get it" in pages["setup.html"]
    assert [name for name, html in pages.items() if "with its solutions and outputs" in html] == []
    assert "leaves out the instructor notes" in pages["teaching.html"]
    labs = [name for name in pages if name.startswith("labs/")]
    assert len(labs) == len(LAB_SOURCES)
    learner = {**mkdocs_config(), "extra": {"lab_solutions": False}}
    for source in LAB_SOURCES:
        html = pages[f"labs/{source.stem}.html"]
        assert "labs/src/" not in html and f'href="{lab_links(learner, source.name)["edit"]}"' in html  # the notebook
