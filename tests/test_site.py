"""The site: a strict build, then the built pages in a real Chromium with every outside request blocked."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.request import urlopen

import pytest
import yaml

from .conftest import ROOT
from .test_links import mkdocs_extra

pytestmark = pytest.mark.site

CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def find_chromium() -> str | None:
    for candidate in (os.environ.get("CHROMIUM_PATH"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """Build the site once, strictly, and return its folder."""
    out = tmp_path_factory.mktemp("site")
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    seconds = time.perf_counter() - started
    assert result.returncode == 0, result.stderr[-3000:]
    print(f"\nsite build: {seconds:.1f} s")
    return out, result.stderr


def test_build_is_strict_and_clean(site):
    _, log = site
    assert not re.findall(r"^(?:WARNING|ERROR)\s+-.*$", log, re.M)  # MkDocs' own warnings


@pytest.fixture(scope="session")
def base_url(site):
    """Serve the built site on loopback for the browser."""
    handler = functools.partial(QuietHandler, directory=str(site[0]))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")  # not session: a sync Playwright left running blocks test_offline's on the same worker
def browser():
    executable = find_chromium()
    if executable is None:
        pytest.skip("no Chromium found: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def open_page(browser, base_url):
    """Open pages that may reach only the site, at a given viewport and colour scheme; console errors and
    outside requests fail the test."""
    contexts, blocked, errors = [], [], []

    def route(request_route):
        if request_route.request.url.startswith(base_url):
            request_route.continue_()
        else:
            blocked.append(request_route.request.url)
            request_route.abort()

    def open_(width: int = 1280, height: int = 800, scheme: str = "light"):
        context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
        contexts.append(context)
        context.route("**/*", route)
        page = context.new_page()
        page.on("console", lambda message: message.type == "error" and errors.append(message.text))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.base = base_url
        return page

    yield open_
    for context in contexts:
        context.close()
    assert not blocked, f"the page tried to reach the network: {blocked}"
    assert not errors, f"console errors: {errors}"


@pytest.fixture
def page(open_page):
    """A fresh page at a laptop's width, in the light scheme."""
    return open_page()


def test_home_page_renders(page):
    page.goto(page.base + "/")
    assert page.title().startswith("Inside the Kubelet")
    assert page.locator("article h1").inner_text().rstrip("¶") == "Inside the Kubelet"
    assert page.locator("article table").count() >= 1


def test_navigation_reaches_chapter_0(page):
    page.goto(page.base + "/")
    page.locator("nav.md-nav--primary a", has_text="The kubelet at a glance").first.click()
    page.wait_for_url("**/chapter-0/")
    assert "kubelet" in page.locator("article h1").inner_text().lower()


@pytest.mark.parametrize("term", ["eviction", "kubelet"])
def test_search_returns_results(page, term):
    page.goto(page.base + "/")
    search = page.locator("input.md-search__input")
    search.click()
    search.press_sequentially(term, delay=30)  # Material searches on key events, not on a set value
    results = page.locator(".md-search-result__item")
    results.first.wait_for(timeout=15_000)
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
    assert "Exercise 1: CPU in millicores: all 10 cases passed." in article
    link = page.locator("a", has_text="Download the exercise notebook")
    notebook = json.loads(urlopen(page.base + "/labs/" + link.get_attribute("href").split("/")[-1]).read())
    assert any('raise NotImplementedError("Exercise 1: CPU in millicores")' in "".join(c["source"])
               for c in notebook["cells"])


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
        "extra": config["extra"], "nav": [{"Home": "index.md"}, {"Lab": "labs/00-broken.py"}]}))
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode != 0
    assert "00-broken.py: a cell raised RuntimeError: a broken lab" in result.stderr
    assert not list((tmp_path / ".cache" / "lab-pages").glob("*.ipynb"))  # a failed lab is never cached


def test_scenario_plots_are_drawn_at_build_time(page):
    page.goto(page.base + "/chapter-4/scenarios/")
    figures = page.locator("figure.scenario-plot img")
    assert figures.count() >= 3
    for index in range(figures.count()):
        figures.nth(index).scroll_into_view_if_needed()
        assert figures.nth(index).evaluate("img => img.complete && img.naturalWidth > 600")


# --- readable on a phone and in dark mode ------------------------------------------------------------

# What a reader would see as broken, found in the page's layout: the page wider than the screen; an
# element whose content runs past its box without a scroll bar, or is clipped by it (text cut); and
# command or notebook output whose lines wrap (a check table broken mid-word).
LAYOUT_PROBLEMS = """() => {
  const problems = [];
  const page = document.documentElement;
  if (page.scrollWidth > window.innerWidth + 1) problems.push(`the page is ${page.scrollWidth}px wide`);
  const article = document.querySelector("article");
  for (const el of article.querySelectorAll("*")) {
    const style = getComputedStyle(el);
    if (el instanceof SVGElement || style.display === "inline" || !el.checkVisibility()) continue;
    if (el.scrollWidth > el.clientWidth + 1 && !["auto", "scroll"].includes(style.overflowX)) {
      const name = el.tagName.toLowerCase() + (el.className ? "." + String(el.className).trim().split(/\\s+/).join(".") : "");
      problems.push(`${name} overflows its box (${el.scrollWidth}px in ${el.clientWidth}px, overflow ${style.overflowX}): `
                    + JSON.stringify(el.textContent.trim().slice(0, 60)));
    }
  }
  for (const pre of article.querySelectorAll("pre")) {
    if (!pre.checkVisibility() || pre.closest(".mermaid")) continue;
    const range = document.createRange();
    range.selectNodeContents(pre);
    const size = parseFloat(getComputedStyle(pre).fontSize);
    const tops = [...range.getClientRects()]
      .filter(r => r.width > 0 && r.height < 1.6 * size)  // pieces of text, not the code block or its copy button
      .map(r => r.top + r.height / 2).sort((a, b) => a - b);
    const rows = tops.filter((top, i) => i === 0 || top - tops[i - 1] > size / 2).length;
    const lines = pre.textContent.replace(/\\n$/, "").split("\\n").length;
    if (rows > lines) problems.push(`a block of ${lines} lines wraps into ${rows}: ` + JSON.stringify(pre.textContent.slice(0, 60)));
  }
  return problems;
}"""


def settle(page):
    """Wait until the diagrams are drawn (Material replaces each diagram's source once drawn)."""
    page.wait_for_function("() => !document.querySelector('pre.mermaid')", timeout=15_000)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("path", ["/chapter-3/memory-oom/", "/chapter-2/", "/labs/04-eviction/", "/labs/00-manifests-and-quantities/"])
def test_pages_fit_a_phone_and_a_laptop_in_both_schemes(open_page, path, width, scheme):
    page = open_page(width=width, scheme=scheme)
    page.goto(page.base + path)
    settle(page)
    assert page.locator("body").get_attribute("data-md-color-scheme") == ("slate" if scheme == "dark" else "default")
    assert page.evaluate(LAYOUT_PROBLEMS) == []


def test_lab_check_tables_keep_their_lines_and_scroll_on_a_phone(open_page):
    page = open_page(width=390)
    page.goto(page.base + "/labs/04-eviction/")
    table = page.locator(".jp-OutputArea-output pre", has_text="rank Pods under memory pressure: all").first
    scroll = table.evaluate("pre => [pre.scrollWidth, pre.clientWidth, getComputedStyle(pre).whiteSpace]")
    assert scroll[0] > scroll[1] and scroll[2] == "pre"  # wider than the phone: it scrolls, whole lines
    prompt = page.locator(".jp-InputPrompt", has_text="In [").first.evaluate(
        "p => [p.getBoundingClientRect().width, p.scrollWidth <= p.clientWidth]")
    assert prompt[0] <= 50 and prompt[1]  # a narrow prompt column (64px elsewhere), its text not cut


def test_left_to_right_diagrams_are_drawn_top_to_bottom_at_their_own_size_on_a_phone(open_page):
    sizes = {}
    for width in (1280, 390):
        page = open_page(width=width)
        page.goto(page.base + "/chapter-3/memory-oom/")
        settle(page)
        sizes[width] = page.locator("div.mermaid").first.bounding_box()
    laptop, phone = sizes[1280], sizes[390]
    assert laptop["width"] > laptop["height"]  # left to right, where there is room
    assert phone["height"] > phone["width"] and phone["height"] > 3 * laptop["height"]  # top to bottom, not shrunk


def test_scenario_plots_link_their_full_size_image_and_are_not_white_in_dark_mode(open_page):
    page = open_page(scheme="dark")
    page.goto(page.base + "/chapter-4/scenarios/")
    figures = page.locator("figure.scenario-plot")
    assert figures.count() >= 3
    for index in range(figures.count()):
        link = figures.nth(index).locator("a:has(img)")
        img = link.locator("img")
        assert link.evaluate("a => a.href") == img.evaluate("img => img.src")
        assert urlopen(link.evaluate("a => a.href")).read(8) == b"\x89PNG\r\n\x1a\n"
        assert "invert" in img.evaluate("img => getComputedStyle(img).filter")


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
    # Every chapter's pages end by sending the reader to its lab (a lab whose chapter has pages: Lab 05,
    # the capstone, follows chapter 4 in the navigation until chapter 5 has pages of its own).
    labs = sorted(p.stem for p in (ROOT / "labs" / "src").glob("*.py") if (ROOT / "docs" / f"chapter-{int(p.stem[:2])}").is_dir())
    linked = {m for html in out.glob("chapter-*/**/index.html")
              for m in re.findall(r'<p>Next: the lab, <a href="\.\./\.\./labs/([\w-]+)/"', html.read_text(encoding="utf-8"))}
    assert set(labs) - {"04-eviction"} <= linked  # chapter 4 ends on its scenarios page, which links Lab 04


def test_lab_plots_link_their_full_size_image_and_are_not_white_in_dark_mode(open_page):
    page = open_page(width=390, scheme="dark")
    page.goto(page.base + "/labs/03-resource-limits/")
    plots = page.locator(".jp-RenderedImage a img")
    assert plots.count() >= 1
    for index in range(plots.count()):
        img = plots.nth(index)
        opened = img.evaluate("""async img => {
            const response = await fetch(img.closest('a').href);
            const picture = await createImageBitmap(await response.blob());
            return [response.headers.get('content-type'), picture.width, img.getBoundingClientRect().width];
        }""")
        assert opened[0] == "image/png" and opened[1] > 2 * opened[2]  # the full size, larger than shown
        assert "invert" in img.evaluate("img => getComputedStyle(img).filter")
