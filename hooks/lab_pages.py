"""Run the course's labs for the site, and render each run lab into the page mkdocs-jupyter shows.

The site build (hooks/course.py) starts this once, in its own process, so that the labs run and render
while the build goes on reading and rendering the chapter pages. Input on stdin, output on stdout, JSON:

    in:  {"sources": ["labs/src/00-name.py", ...], "cache_dir": ".cache/lab-pages", "digest": "...",
          "render": {the mkdocs-jupyter settings} or null}
    out: [{"source": "...", "page": ".cache/lab-pages/00-name.KEY.ipynb"} or {"source": "...", "error": "..."}, ...]

Each lab is run (and cached) by notebooks.executed_solutions, all of them side by side, each in its own
kernel. With "render", each run lab is then converted to HTML exactly as mkdocs-jupyter converts it
(its own functions, its own settings) and left in mkdocs-jupyter's cache under the key mkdocs-jupyter
computes, so the build finds the page rendered. A lab that raises is reported, never cached.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mini_kubelet.labs import notebooks

RENDERED = threading.Lock()  # one conversion at a time: nbconvert's exporters are not shared between threads


def render_page(page: Path, options: dict) -> None:
    """Leave the HTML mkdocs-jupyter would make for `page` in its cache, where it looks for it."""
    from mkdocs_jupyter import convert, plugin

    source = str(page)
    cached = plugin._get_cache_path(options["cache_dir"], plugin._compute_cache_key(source, options, False))
    if cached.exists():
        return
    with RENDERED:
        body = convert.nb2html(
            source, execute=False, kernel_name=options["kernel_name"], theme=options["theme"],
            allow_errors=options["allow_errors"], show_input=options["show_input"], no_input=options["no_input"],
            no_prompt=options["no_prompt"], remove_tag_config=options["remove_tag_config"],
            highlight_extra_classes=options["highlight_extra_classes"],
            include_requirejs=options["include_requirejs"], custom_mathjax_url=options["custom_mathjax_url"])
        toc_tokens, title = plugin._get_nb_toc_tokens(source, options["toc_depth"])
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps({"content": body, "toc_tokens": toc_tokens, "title": title}), encoding="utf-8")
    partial.replace(cached)  # whole or not at all


def run(job: dict) -> list[dict]:
    def one(source: str) -> dict:
        try:
            page = notebooks.executed_solutions(Path(source), Path(job["cache_dir"]), job["digest"])
        except notebooks.LabRunError as err:
            return {"source": source, "error": str(err)}
        if job.get("render"):
            render_page(page, job["render"])
        return {"source": source, "page": str(page)}

    with ThreadPoolExecutor(max_workers=max(1, len(job["sources"]))) as pool:
        return list(pool.map(one, job["sources"]))


if __name__ == "__main__":
    if hasattr(os, "nice"):
        os.nice(10)  # the labs (and their kernels) give way to the build and the page commands, which wait on nothing
    json.dump(run(json.load(sys.stdin)), sys.stdout)
