"""The site: a strict build, then the built pages in a real Chromium with every outside request blocked."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html import unescape
from html.parser import HTMLParser
from urllib.request import urlopen

import pytest
import yaml

# The site's fixtures (the one strict build, the server, the browser, pages) are in conftest.py, shared by
# this file and test_site_pages; test_offline reads the browser's settings from here.
from hooks.course import lab_solutions

from .conftest import CHROMIUM_FLAGS, DOCS, ROOT, find_chromium, mkdocs_config  # noqa: F401
from .test_links import mkdocs_extra

SOLUTIONS = lab_solutions(mkdocs_config())  # the edition this course (or fork) publishes
HOME_TITLE = re.search(r"^# (.+)$", (DOCS / "index.md").read_text(encoding="utf-8"), re.M).group(1)

pytestmark = pytest.mark.site

def test_build_is_strict_and_clean(site):
    _, log = site
    assert not re.findall(r"^(?:WARNING|ERROR)\s+-.*$", log, re.M)  # MkDocs' own warnings


def test_home_page_renders(page):
    page.goto(page.base + "/")
    assert page.title().startswith(mkdocs_config()["site_name"])
    assert page.locator("article h1").inner_text().rstrip("¶") == HOME_TITLE
    assert page.locator("article table").count() >= 1


def test_navigation_reaches_chapter_0(page):
    page.goto(page.base + "/")
    page.locator("nav.md-nav--primary a", has_text="The kubelet at a glance").first.click()
    page.wait_for_url("**/chapter-0/")
    assert "kubelet" in page.locator("article h1").inner_text().lower()


def test_the_playbook_is_open_in_the_sidebar_of_every_page_and_other_sections_keep_theirs(page):
    """extra.nav_expanded: the playbook's pages are listed in the sidebar of a page of another chapter, at a laptop's
    width, while a chapter's own pages are not expanded elsewhere (Material's navigation.expand is not on)."""
    page.goto(page.base + "/chapter-2/")
    sidebar = page.locator("nav.md-nav--primary")
    for name in ("evicted", "oomkilled", "stuck-terminating"):
        assert sidebar.locator(f"a[href$='chapter-5/playbook/{name}/']").first.is_visible(), name
    toggles = sidebar.locator("input.md-nav__toggle.md-toggle--indeterminate")
    assert toggles.count() == 1  # the playbook's, and no other


@pytest.mark.parametrize("term", ["eviction", "kubelet"])
def test_search_returns_results(search_page, term):
    page = search_page
    page.goto(page.base + "/")
    search = page.locator("input.md-search__input")
    search.click()
    search.press_sequentially(term, delay=30)  # Material searches on key events, not on a set value
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=60_000)  # the first search builds the index in a worker: slow on a busy machine
    assert results.count() > 0


def test_mermaid_diagram_renders_as_svg(page):
    # Material draws each diagram into a closed shadow root in place of the <pre class="mermaid">
    # source, so the test sees the source disappear and a drawing of real size take its place.
    page.goto(page.base + "/chapter-0/")
    page.wait_for_function("() => !document.querySelector('pre.mermaid')", timeout=15_000)
    drawn = page.locator("div.mermaid")
    assert drawn.count() >= 1
    for index in range(drawn.count()):
        box = drawn.nth(index).bounding_box()
        assert box and box["height"] > 50 and box["width"] > 100


def test_only_pages_with_a_diagram_load_the_sites_own_mermaid(site):
    out, _ = site
    with_diagram = without = 0
    for html in out.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        loads = re.search(r'<script src="[./]*assets/vendor/mermaid\.min\.js"></script>', text) is not None
        drawn = 'class="mermaid"' in text
        assert loads == drawn, html.relative_to(out)
        with_diagram, without = with_diagram + drawn, without + (not drawn)
    assert with_diagram >= 10 and without >= 10
    assert "unpkg.com" not in (out / "chapter-0" / "index.html").read_text(encoding="utf-8")


def test_lab_pages_link_the_notebook_styles_once_written_instead_of_holding_them(site):
    """hooks/lab_styles.py: each lab page links the notebook's stylesheets, which the site holds once."""
    out, _ = site
    sheets = {path.name: path.stat().st_size for path in (out / "assets" / "notebook").glob("*.css")}
    assert sum(sheets.values()) > 500_000  # JupyterLab's stylesheets
    labs = sorted((out / "labs").glob("*/index.html"))
    assert len(labs) >= 6
    for html in labs:
        text = html.read_text(encoding="utf-8")
        linked = re.findall(r'<link rel="stylesheet" href="\.\./\.\./assets/notebook/([0-9a-f]{12}\.css)">', text)
        assert sorted(linked) == sorted(sheets), html.relative_to(out)
        inline = [len(css) for css in re.findall(r"<style[^>]*>(.*?)</style>", text, re.S)]
        assert max(inline, default=0) < 2_000 and "<style>\n        ['" not in text, html.relative_to(out)
        assert len(text) < 600_000, html.relative_to(out)


def test_upstream_links_point_at_the_tag(page):
    extra = mkdocs_extra()
    page.goto(page.base + "/chapter-0/")
    hrefs = page.locator("a.upstream").evaluate_all("links => links.map(a => a.href)")
    prefixes = (f"{extra['upstream_repo']}/blob/{extra['upstream_tag']}/", f"{extra['upstream_repo']}/tree/{extra['upstream_tag']}/")
    assert hrefs and all(h.startswith(prefixes) for h in hrefs)


def test_lab_page_shows_code_outputs_and_a_notebook_to_download(page):
    page.goto(page.base + "/labs/00-manifests-and-quantities/")
    assert "Lab 00" in page.locator("h1").first.inner_text()
    article = page.locator("article").inner_text()
    assert "def cpu_millicores" in article
    # The solutions edition shows the lab run; the learner edition, the notebook as learners get it, not run.
    assert ("Exercise 1: CPU in millicores: all 10 cases passed." in article) is SOLUTIONS
    assert ('raise NotImplementedError("Exercise 1: CPU in millicores")' in article) is not SOLUTIONS
    link = page.locator("a", has_text="Download the exercise notebook")
    notebook = json.loads(urlopen(page.base + "/labs/" + link.get_attribute("href").split("/")[-1]).read())
    assert any('raise NotImplementedError("Exercise 1: CPU in millicores")' in "".join(c["source"])
               for c in notebook["cells"])


class LabCells(HTMLParser):
    """The text of a built lab page's notebook cells, a list of pieces by kind: "prose" (Markdown) and "code" (code and output)."""

    def __init__(self, html: str):
        super().__init__()
        self.kinds: list[str | None] = []  # the cell kind each open div is in
        self.text: dict[str, list[str]] = {"prose": [], "code": []}
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "div":
            classes = (dict(attrs).get("class") or "").split()
            kind = "code" if "jp-CodeCell" in classes else "prose" if "jp-MarkdownCell" in classes else None
            self.kinds.append(kind or (self.kinds[-1] if self.kinds else None))

    def handle_endtag(self, tag):
        if tag == "div":
            self.kinds.pop()

    def handle_data(self, data):
        if self.kinds and self.kinds[-1]:
            self.text[self.kinds[-1]].append(data)


def words(text: str) -> str:
    """Text as a search matches it: whitespace collapsed, no heading anchor."""
    return " ".join(text.replace("¶", "").split())


def test_the_search_index_has_each_labs_prose_and_none_of_its_code(site):
    """Every piece of a lab page's Markdown cells is searchable; no line of its code cells (code or output) is,
    unless the prose says it too."""
    out, _ = site
    index = json.loads((out / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    labs = sorted(p.stem for p in (ROOT / "labs" / "src").glob("*.py"))
    assert labs
    for lab in labs:
        cells = LabCells((out / "labs" / lab / "index.html").read_text(encoding="utf-8")).text
        entries = " ".join(f"{e['title']} {e['text']}" for e in index if e["location"].startswith(f"labs/{lab}/"))
        indexed = words(unescape(re.sub(r"<[^>]+>", "", entries)))
        prose = [words(piece) for piece in cells["prose"] if words(piece)]
        said = words("".join(cells["prose"]))
        code = {words(line) for piece in cells["code"] for line in piece.splitlines() if len(line.split()) >= 3}
        assert prose and code, lab
        assert [piece for piece in prose if piece not in indexed] == [], lab
        assert sorted(line for line in code if line in indexed and line not in said) == [], lab


def test_run_markers_show_real_command_output(page):
    page.goto(page.base + "/setup/")
    text = page.locator("article").inner_text()
    repo_url = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)["repo_url"]
    assert f"$ git clone {repo_url}.git\n$ cd {repo_url.rsplit('/', 1)[-1]}" in text  # variables fill code blocks too
    assert "$ mini-kubelet show examples/pods/web.yaml" in text
    assert "memory    67108864 (64Mi)" in text
    assert 'invalid quantity "12Zi"' in text


def test_dark_mode_toggles(page):
    page.goto(page.base + "/")
    body = page.locator("body")
    before = body.get_attribute("data-md-color-scheme")
    page.locator("form[data-md-component='palette'] label:visible").first.click()
    page.wait_for_function(f"() => document.body.dataset.mdColorScheme !== {json.dumps(before)}")
    assert {before, body.get_attribute("data-md-color-scheme")} == {"default", "slate"}


def test_a_lab_that_raises_fails_the_build(tmp_path):
    """mkdocs-jupyter lets errors through by default; the course's hook runs each lab and fails on an error.

    Proven on a minimal site (one page, one lab) that uses the course's own hook.
    """
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# A page\n")
    (tmp_path / "labs" / "src").mkdir(parents=True)
    (tmp_path / "labs" / "src" / "00-broken.py").write_text(
        "# %% [markdown]\n# # A broken lab\n\n# %%\nraise RuntimeError('a broken lab')\n")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().split("\nnav:")[0].split("\nmarkdown_extensions:")[0])
    plugins = [p for p in config["plugins"] if p == "search" or (isinstance(p, dict) and "mkdocs-jupyter" in p)]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump({
        "site_name": "broken", "hooks": [str(ROOT / "hooks" / "course.py")], "plugins": plugins,
        "extra": {**config["extra"], "lab_solutions": True},  # the edition that runs the labs, whichever the course's
        "nav": [{"Home": "index.md"}, {"Lab": "labs/00-broken.py"}]}))
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode != 0
    assert "00-broken.py: a cell raised RuntimeError: a broken lab" in result.stderr
    assert not list((tmp_path / ".cache" / "lab-pages").glob("*.ipynb"))  # a failed lab is never cached


def test_lab_04_table_of_contents_has_no_empty_entry(page):
    page.goto(page.base + "/labs/04-eviction/")
    entries = page.locator("nav.md-nav--secondary a.md-nav__link").evaluate_all(
        "links => links.map(a => [a.getAttribute('href'), a.textContent.trim()])")
    assert entries and all(href != "#-" and text.strip("-") for href, text in entries)
    assert ["#exercise-5-the-victim-and-its-message", "Exercise 5: the victim and its message"] in entries


def test_every_next_line_links_the_page_it_names(site):
    """A page that ends "Next: ..." links where it sends the reader (for a lab: the lab's own page)."""
    out, _ = site
    endings = 0
    for html in out.glob("**/index.html"):
        text = html.read_text(encoding="utf-8")
        for paragraph in re.findall(r"<p>(Next: .*?)</p>", text, re.S):
            endings += 1
            assert "<a " in paragraph, f"{html.relative_to(out)}: {paragraph}"
            for href in (h.split("#")[0] for h in re.findall(r'href="([^"]+)"', paragraph)):
                assert not href or (html.parent / href / "index.html").resolve().exists(), f"{html}: {href}"
    assert endings >= 20
    # Every chapter's pages end by sending the reader to its lab (from a page at any depth).
    labs = sorted(p.stem for p in (ROOT / "labs" / "src").glob("*.py") if (ROOT / "docs" / f"chapter-{int(p.stem[:2])}").is_dir())
    linked = {m for html in out.glob("chapter-*/**/index.html")
              for m in re.findall(r'<p>Next: the lab, <a href="(?:\.\./)+labs/([\w-]+)/"', html.read_text(encoding="utf-8"))}
    assert set(labs) - {"04-eviction"} <= linked  # chapter 4 ends on its scenarios page, which links Lab 04


def test_lab_plots_link_their_full_size_image_and_are_not_white_in_dark_mode(load_page):
    page = load_page("/labs/03-resource-limits/", 390, "dark")
    plots = page.locator(".jp-RenderedImage a img")
    assert plots.count() >= 1 if SOLUTIONS else plots.count() == 0  # the learner edition runs no lab: nothing drawn
    for index in range(plots.count()):
        img = plots.nth(index)
        opened = img.evaluate("""async img => {
            const response = await fetch(img.closest('a').href);
            const picture = await createImageBitmap(await response.blob());
            return [response.headers.get('content-type'), picture.width, img.getBoundingClientRect().width];
        }""")
        assert opened[0] == "image/png" and opened[1] > 2 * opened[2]  # the full size, larger than shown
        assert "invert" in img.evaluate("img => getComputedStyle(img).filter")
