"""The built site in a real Chromium, continued: readable on a phone and a laptop, in both colour schemes.

These tests share test_site's strict build, server and browser (the fixtures in conftest.py), and sit in a
file of their own so that, in parallel, they can run on the other worker beside test_site.
"""

from __future__ import annotations

import io
import json
import re

import pytest

from mini_kubelet.sim import figure

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
@pytest.mark.parametrize("path", ["/chapter-2/", "/labs/04-eviction/", "/labs/00-manifests-and-quantities/"])
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


# --- figures that read: diagrams, plots and the playbook's table at both widths, in both schemes ---------------

# Each Mermaid diagram drawn: its kind, its smallest label's size on screen against the body text's, and how wide it
# is against its box (shadow roots are opened for the tests, conftest.py).
DIAGRAM_LABELS = """() => {
  const body = parseFloat(getComputedStyle(document.querySelector("article p")).fontSize);
  return [...document.querySelectorAll("div.mermaid")].map(d => {
    const svg = d.shadowRoot.querySelector("svg");
    const scale = el => { const m = (el.closest("foreignObject") || el).getScreenCTM(); return Math.hypot(m.a, m.b); };
    const sizes = [...svg.querySelectorAll("text, foreignObject span, foreignObject p")]
      .filter(t => t.textContent.trim() && !t.querySelector("span, p, tspan"))
      .map(t => parseFloat(getComputedStyle(t).fontSize) * scale(t));
    const drawn = svg.getBoundingClientRect();
    return {kind: svg.getAttribute("aria-roledescription"), body, smallest: Math.min(...sizes), labels: sizes.length,
            wide: d.scrollWidth, box: d.clientWidth, overflow: getComputedStyle(d).overflowX,
            across: drawn.width > drawn.height};
  });
}"""


def edge_shade(page, element) -> tuple[float, float]:
    """How much darker or lighter than the page each side edge of an element is drawn, in its top rows (where a
    diagram has drawn nothing): a scroll shadow shows as a difference of tens of levels."""
    from PIL import Image

    element.evaluate("e => { e.scrollIntoView({block: 'start'}); scrollBy(0, -200); }")  # clear of the sticky header
    box = element.bounding_box()
    shot = Image.open(io.BytesIO(page.screenshot(clip={"x": box["x"], "y": box["y"] + 1, "width": box["width"], "height": 5})))
    grey = shot.convert("L")
    column = lambda x: sum(grey.getpixel((x, y)) for y in range(grey.height)) / grey.height  # noqa: E731
    inside = column(grey.width // 2)
    return abs(column(1) - inside), abs(column(grey.width - 2) - inside)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("path", ["/chapter-2/hand-off/", "/chapter-3/memory-oom/"])
def test_diagrams_have_labels_as_large_as_the_text_or_a_visible_sideways_scroll(load_page, path, width, scheme):
    """A sequence diagram is drawn at its own size, its labels as large as the text: one of seven lanes is wider than a
    laptop's column too, and scrolls, a shadow marking each edge with more of the diagram beyond it. On a phone every
    diagram is drawn so, a left-to-right flowchart laid out top to bottom; on a laptop the flowchart is fitted."""
    page = load_page(path, width, scheme)
    settle(page)
    assert page.evaluate(LAYOUT_PROBLEMS) == []
    (diagram,) = page.evaluate(DIAGRAM_LABELS)
    assert diagram["labels"] >= 4  # labels were found and measured
    if diagram["kind"] == "sequence" or width == 390:
        assert diagram["smallest"] >= diagram["body"] - 0.01, diagram
    if diagram["kind"] != "sequence":
        assert diagram["across"] == (width == 1280)  # left to right where there is room, else top to bottom
    if diagram["wide"] <= diagram["box"]:
        return
    assert diagram["overflow"] == "auto"
    drawn = page.locator("div.mermaid")
    left, right = edge_shade(page, drawn)
    assert right > 10 and left < 3, (left, right)  # more to the right only
    drawn.evaluate("d => { d.scrollLeft = d.scrollWidth; }")
    left, right = edge_shade(page, drawn)
    assert left > 10 and right < 3, (left, right)  # scrolled to its end: more to the left only


# Each scenario plot as shown: the picture chosen, its size against its own, the column's width, and its caption.
PLOTS_SHOWN = """() => [...document.querySelectorAll("figure.scenario-plot")].map(f => {
  const img = f.querySelector("img");
  return {src: img.currentSrc, natural: img.naturalWidth, shown: img.getBoundingClientRect().width,
          column: f.closest("article").clientWidth, link: f.querySelector("a").href, full: img.src,
          filter: getComputedStyle(img).filter, caption: f.querySelector("figcaption").innerText,
          command: [...f.querySelectorAll("figcaption code")].filter(c => c.checkVisibility()).map(c => c.textContent)};
})"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
def test_scenario_plots_are_drawn_for_the_screen_with_text_that_reads(load_page, width, scheme):
    """A phone is shown the plot drawn for its width (`--plot-width 4`), a laptop the wide one, each at a size that makes
    its text at least 12 px; a tap opens the full-size one; the caption is the command that drew what is shown."""
    page = load_page("/chapter-4/scenarios/", width, scheme)
    for img in page.locator("figure.scenario-plot img").all():
        img.scroll_into_view_if_needed()
        img.evaluate("img => img.decode()")
    plots = page.evaluate(PLOTS_SHOWN)
    assert len(plots) >= 3
    for plot in plots:
        assert plot["src"].endswith("-narrow.png") == (width == 390), plot["src"]
        assert plot["shown"] <= plot["column"] + 1  # fitted to the column
        assert figure.FONT * figure.DPI / 72 * plot["shown"] / plot["natural"] >= 12, plot
        assert plot["link"] == plot["full"] and not plot["full"].endswith("-narrow.png")
        assert not re.search(r"(^|\n)\s*[,.;:]", plot["caption"]), plot["caption"]
        (command,) = plot["command"]
        assert command.startswith("mini-kubelet run examples/scenarios/")
        assert command.endswith(" --plot-width 4") == (width == 390)
        assert ("invert" in plot["filter"]) == (scheme == "dark")  # drawn on white: not a white block in dark mode
    assert page.evaluate(f"async () => (await fetch({json.dumps(plots[0]['link'])})).headers.get('content-type')") == "image/png"
    assert page.evaluate(LAYOUT_PROBLEMS) == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
def test_the_playbooks_symptom_table_shows_every_link_on_a_phone(load_page, width, scheme):
    """On a phone each row of the symptom table is a card, each cell headed by its column's name; nothing is
    scrolled out of sight, its links least of all."""
    page = load_page("/chapter-5/", width, scheme)
    table = page.locator("article table", has=page.locator("th", has_text="Who acts"))
    heads = table.locator("th").all_inner_texts()
    assert heads == ["Symptom", "Who acts", "The one change shown", "Page"]
    links = table.locator("td a").all()
    assert len(links) >= 10
    for link in links:  # inside the screen as laid out (scrolled down to, never sideways), and what a tap there reaches
        assert link.evaluate("""a => { scrollTo(0, scrollY + a.getBoundingClientRect().top - innerHeight / 2); const b = a.getBoundingClientRect(),
            line = a.getClientRects()[0], at = document.elementFromPoint((line.left + line.right) / 2, (line.top + line.bottom) / 2);
            return b.left >= 0 && b.right <= innerWidth && a.contains(at); }"""), link.inner_text()
    labels = table.locator("tr").nth(1).locator("td").evaluate_all(
        "cells => cells.map(td => getComputedStyle(td, '::before').content)")
    assert labels == ([f'"{head}: "' for head in heads] if width == 390 else ["none"] * 4)
    assert table.locator("thead").is_visible() == (width == 1280)
    assert page.evaluate(LAYOUT_PROBLEMS) == []


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
    Mermaid diagram drawn (none left as its source or as Mermaid's error drawing), a sequence diagram's labels at least
    as large as the text, not only on the pages above.

    A page's scripts have run once its DOM is loaded; one with a diagram is waited for until Mermaid has drawn
    them or failed. What a page logs later is still reported, against the page after it.
    """
    out, _ = site
    paths = built_pages(out)
    assert len(paths) >= 60 and "/chapter-1/termination-and-grace/" in paths
    page = site_pages.load(None)  # its search idle, as on every page tested for something else (conftest.py)
    problems, diagrams = {}, 0
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
        wrong += [f"a sequence diagram's labels drawn at {d['smallest']:.1f} px, the text at {d['body']:g} px"
                  for d in (page.evaluate(DIAGRAM_LABELS) if expected else []) if d["kind"] == "sequence"
                  and d["smallest"] < d["body"] - 0.01]
        wrong += [f"console: {error.splitlines()[0]}" for error in site_pages.errors[errors:]]
        del site_pages.errors[errors:]
        if wrong:
            problems[path] = wrong
        diagrams += expected
    assert diagrams >= 15
    assert not problems, "\n".join(f"{path}: {'; '.join(wrong)}" for path, wrong in problems.items())
    site_pages.check()  # and no page reached outside the site
