"""MkDocs hook: the site's search index keeps a lab page's prose, not its code cells and their output.

Nobody searches the site for a line of a lab's code or a check's table, and they were a third of the
index. The search plugin reads a page's HTML as it is handed to the page's template (`on_page_context`):
this hook hands it a lab page without its code cells just before, and gives the page back its whole
HTML just after, so the page itself shows everything. It also drops the notebook's heading anchors (¶),
which the search plugin would otherwise keep in each section's title.
"""

from __future__ import annotations

import re

from mkdocs.plugins import CombinedEvent, event_priority

CODE_CELL = re.compile(r'<div class="jp-Cell jp-CodeCell\b')
DIV = re.compile(r"<div\b|</div>")
ANCHOR = re.compile(r'<a class="anchor-link" href="#[^"]*">¶</a>')
_WHOLE: dict[str, str] = {}  # a lab page's whole HTML by its source, while the search plugin reads the prose


def prose(html: str) -> str:
    """A lab page's HTML without its code cells (input and output) and heading anchors."""
    kept, last = [], 0
    for cell in CODE_CELL.finditer(html):
        if cell.start() < last:  # inside a cell already dropped
            continue
        depth = 0
        for tag in DIV.finditer(html, cell.start()):
            depth += 1 if tag.group() == "<div" else -1
            if depth == 0:
                break
        kept.append(html[last:cell.start()])
        last = tag.end()
    return ANCHOR.sub("", "".join(kept) + html[last:])


def _is_lab(page) -> bool:
    uri = page.file.src_uri
    return uri.startswith("labs/") and uri.endswith(".py")


@event_priority(50)  # before the search plugin
def _show_prose(context, page, config, nav):
    if _is_lab(page):
        _WHOLE[page.file.src_uri] = page.content
        page.content = prose(page.content)
    return context


@event_priority(-50)  # after it
def _show_all(context, page, config, nav):
    if page.file.src_uri in _WHOLE:
        page.content = _WHOLE.pop(page.file.src_uri)
    return context


on_page_context = CombinedEvent(_show_prose, _show_all)
