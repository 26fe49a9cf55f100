"""The built site in a real Chromium, continued: readable on a phone and a laptop, in both colour schemes.

These tests share test_site's strict build, server and browser (the fixtures in conftest.py), and sit in a
file of their own so that, in parallel, they can run on the other worker beside test_site.
"""

from __future__ import annotations

import pytest

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
    table = page.locator(".jp-OutputArea-output pre", has_text="rank Pods under memory pressure: all").first
    scroll = table.evaluate("pre => [pre.scrollWidth, pre.clientWidth, getComputedStyle(pre).whiteSpace]")
    assert scroll[0] > scroll[1] and scroll[2] == "pre"  # wider than the phone: it scrolls, whole lines
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
