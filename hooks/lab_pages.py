"""Run the course's labs for the site, in a process of their own, each lab in its own kernel, side by side.

The site build (hooks/course.py) starts this once, so that the labs run while the build reads the chapter
pages; each lab page waits only for its own lab, then mkdocs-jupyter renders it. JSON in on stdin, and
out on stdout one line a lab, as each lab finishes:

    in:  {"sources": ["labs/src/00-name.py", ...], "cache_dir": ".cache/lab-pages", "digest": "..."}
    out: {"source": "...", "page": ".cache/lab-pages/00-name.KEY.ipynb"} or {"source": "...", "error": "..."}

Each lab is run (and cached) by notebooks.executed_solutions, its kernel forked by forked_kernels.py on Linux
(macOS can fork, but a fork of a process that has loaded its system frameworks is unsafe there, which is why
Python's multiprocessing spawns on macOS). A lab that raises is reported, never cached.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from forked_kernels import forked_kernels
from mini_kubelet.labs import notebooks

WRITING = threading.Lock()  # one result line at a time


def run(job: dict) -> None:
    def one(source: str) -> None:
        try:
            result = {"page": str(notebooks.executed_solutions(Path(source), Path(job["cache_dir"]), job["digest"]))}
        except notebooks.LabRunError as err:
            result = {"error": str(err)}
        with WRITING:
            print(json.dumps({"source": source, **result}), flush=True)

    with ThreadPoolExecutor(max_workers=max(1, len(job["sources"]))) as pool:
        list(pool.map(one, job["sources"]))


if __name__ == "__main__":
    if hasattr(os, "nice"):
        os.nice(10)  # the labs (and their kernels) give way to the build, which renders each lab page as it is run
    with forked_kernels() if sys.platform.startswith("linux") else contextlib.nullcontext():
        run(json.load(sys.stdin))
