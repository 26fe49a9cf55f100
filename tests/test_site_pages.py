"""The built site in a real Chromium, continued: readable on a phone and a laptop, in both colour schemes.

These tests share test_site's strict build, server and browser (the fixtures in conftest.py), and sit in a
file of their own so that, in parallel, they can run on the other worker beside test_site.
"""

from __future__ import annotations

import json

import pytest

from .test_site import SOLUTIONS

pytestmark = pytest.mark.site


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
def test_pages_fit_a_phone_and_a_laptop_in_both_schemes(load_page, path, width, scheme):
    page = load_page(path, width, scheme)
    settle(page)
    assert page.locator("body").get_attribute("data-md-color-scheme") == ("slate" if scheme == "dark" else "default")
    assert page.evaluate(LAYOUT_PROBLEMS) == []


def test_lab_check_tables_keep_their_lines_and_scroll_on_a_phone(load_page):
    page = load_page("/labs/04-eviction/", 390)
    tables = page.locator(".jp-OutputArea-output pre", has_text="rank Pods under memory pressure: all")
    if SOLUTIONS:
        scroll = tables.first.evaluate("pre => [pre.scrollWidth, pre.clientWidth, getComputedStyle(pre).whiteSpace]")
        assert scroll[0] > scroll[1] and scroll[2] == "pre"  # wider than the phone: it scrolls, whole lines
    else:
        assert tables.count() == 0  # the learner edition runs no lab: no check table to show
    prompt = page.locator(".jp-InputPrompt", has_text="In [").first.evaluate(
        "p => [p.getBoundingClientRect().width, p.scrollWidth <= p.clientWidth]")
    assert prompt[0] <= 50 and prompt[1]  # a narrow prompt column (64px elsewhere), its text not cut


def test_left_to_right_diagrams_are_drawn_top_to_bottom_at_their_own_size_on_a_phone(load_page):
    sizes = {}
    for width in (1280, 390):
        page = load_page("/chapter-3/memory-oom/", width)
        settle(page)
        sizes[width] = page.locator("div.mermaid").first.bounding_box()
    laptop, phone = sizes[1280], sizes[390]
    assert laptop["width"] > laptop["height"]  # left to right, where there is room
    assert phone["height"] > phone["width"] and phone["height"] > 3 * laptop["height"]  # top to bottom, not shrunk


# --- every page of the built site ----------------------------------------------------------------------

# After a page has loaded: its diagrams' sources still waiting to be drawn (Mermaid leaves a diagram it
# cannot parse as its source, and its error drawing in the body), and the size of each one drawn.
DIAGRAMS = """() => ({
  source: [...document.querySelectorAll('pre.mermaid')].map(pre => pre.textContent.trim().split('\\n')[0]),
  failed: document.querySelectorAll('svg[aria-roledescription=error]').length,
  drawn: [...document.querySelectorAll('div.mermaid')].map(d => { const b = d.getBoundingClientRect(); return [b.width, b.height]; }),
})"""


def built_pages(out) -> list[str]:
    """Every page of the built site, as the path a reader's browser asks for."""
    return sorted("/" + "".join(f"{part}/" for part in html.parent.relative_to(out).parts) for html in out.rglob("index.html"))


def test_every_page_draws_its_diagrams_and_logs_no_error(site, site_pages):
    """Each page of the site, in one page at a laptop's width in the light scheme: no console error, and every
    Mermaid diagram drawn (none left as its source or as Mermaid's error drawing), not only on the pages above.

    A page's scripts have run once its DOM is loaded; one with a diagram is waited for until Mermaid has drawn
    them or failed. What a page logs later is still reported, against the page after it.
    """
    out, _ = site
    paths = built_pages(out)
    assert len(paths) >= 60 and "/chapter-1/termination-and-grace/" in paths
    page = site_pages.load(None)
    # Each page would index the whole site for search again (1.9 MB, in a worker): here the index is empty, with
    # the site's own search settings (the search itself is test_site's).
    index = json.loads((out / "search" / "search_index.json").read_text(encoding="utf-8"))
    empty = json.dumps({**index, "docs": []})
    page.route("**/search/search_index.json", lambda route: route.fulfill(body=empty, content_type="application/json"))
    problems, diagrams = {}, 0
    try:
        for path in paths:
            errors = len(site_pages.errors)
            expected = (out / path.strip("/") / "index.html").read_text(encoding="utf-8").count('<pre class="mermaid">')
            page.goto(page.base + path, wait_until="load" if path == paths[-1] else "domcontentloaded")  # scripts have run
            if expected:
                page.wait_for_function("() => !document.querySelector('pre.mermaid')"
                                       " || document.querySelector('svg[aria-roledescription=error]')", timeout=30_000)
            found = page.evaluate(DIAGRAMS)
            page.evaluate("0")  # a round trip: what the page logged has been reported
            wrong = [f"a diagram left as its source: {first!r}" for first in found["source"]]
            wrong += [f"Mermaid drew {found['failed']} error diagram(s)"] if found["failed"] else []
            wrong += [f"{len(found['drawn'])} diagrams drawn of {expected}"] if len(found["drawn"]) != expected else []
            wrong += [f"a diagram drawn at {w:.0f}x{h:.0f} px" for w, h in found["drawn"] if w < 100 or h < 50]
            wrong += [f"console: {error.splitlines()[0]}" for error in site_pages.errors[errors:]]
            del site_pages.errors[errors:]
            if wrong:
                problems[path] = wrong
            diagrams += expected
    finally:
        page.unroute("**/search/search_index.json")
    assert diagrams >= 15
    assert not problems, "\n".join(f"{path}: {'; '.join(wrong)}" for path, wrong in problems.items())
    site_pages.check()  # and no page reached outside the site
