"""MkDocs hook: a lab page links the notebook's stylesheets instead of holding a copy of each.

mkdocs-jupyter writes JupyterLab's stylesheets into every notebook page it renders: 590 KB of CSS, the same
on each lab page, in a page of 900 KB. Here each of them is written once into the site, named by its
content, and each lab page links it where the copy stood, so the cascade (and what a reader sees) stays as
it was, while a reader's browser fetches the CSS once for every lab and caches it. The plugin also appends
a `<style>` holding its list of styles printed as a Python list (`['pre { ...' ]`), which no browser can
read as CSS; that one is dropped.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from mkdocs.utils import get_relative_url

NOTEBOOK = '<div class="jupyter-wrapper">'
STYLE = re.compile(r'<style(?: type="text/css")?>(.*?)</style>', re.S)
FOLDER = "assets/notebook"
_SHEETS: dict[str, str] = {}  # file name in FOLDER -> its CSS, for on_post_build to write


def on_post_page(output: str, page, config) -> str:
    if NOTEBOOK not in output:
        return output

    def link(match: re.Match) -> str:
        css = match.group(1).strip()
        if css.startswith("['"):  # the plugin's list of styles, printed
            return ""
        if len(css) < 2_000:  # a few lines (the notebook's for Mermaid) cost less inline than a request
            return match.group(0)
        name = f"{hashlib.sha256(css.encode()).hexdigest()[:12]}.css"
        _SHEETS[name] = css
        return f'<link rel="stylesheet" href="{get_relative_url(f"{FOLDER}/{name}", page.url)}">'

    return STYLE.sub(link, output)


def on_post_build(config) -> None:
    folder = Path(config["site_dir"], FOLDER)
    folder.mkdir(parents=True, exist_ok=True)
    for name, css in _SHEETS.items():
        path = folder / name
        if not path.exists():
            path.write_text(css, encoding="utf-8")
