"""Shared test set-up: the course's folders, a rule that in CI nothing may be skipped, the built site and offline folder."""

from __future__ import annotations

import functools
import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from hypothesis import settings

from mini_kubelet.labs.notebooks import held_lock

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
LABS = ROOT / "labs"
DOCS = ROOT / "docs"


class _ConfigLoader(yaml.SafeLoader):
    """YAML as MkDocs reads mkdocs.yml, less its `!!python/name:` values (read as None)."""


_ConfigLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def mkdocs_config() -> dict:
    """The settings in mkdocs.yml, as they are written there: the tests follow a fork's own."""
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_ConfigLoader)

# Property tests check answers, not speed (speed is `make bench`): no per-example deadline that a busy
# machine could miss.
settings.register_profile("course", deadline=None)
settings.load_profile("course")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI a test that cannot run is a failure: turn a skip into a failure there."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"skipped in CI, where every test must run: {reason}"



# The longest test files start first: in parallel (`--dist loadfile`, files kept in this order by
# `--no-loadscope-reorder`, where pytest-xdist would otherwise put the files with the most tests first)
# they run on both workers while the short files fill in around them, instead of starting last and
# running on alone at the end. test_site and test_site_pages share one site build, test_offline and
# test_offline_install one offline folder. The differential and real-API-server tests build upstream's Go the first
# time (minutes).
LONGEST_FIRST = ("test_offline", "test_site", "test_site_pages", "test_labs", "test_offline_install",
                 "test_differential", "test_differential_v1_36", "test_differential_resize_v1_36", "test_watch_apiserver")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        module = item.module.__name__.rsplit(".", 1)[-1]
        return LONGEST_FIRST.index(module) if module in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within each file stays as written


# --- the built site (test_site, test_site_pages) and offline folder (test_offline*), each made once a run;
# one server and one browser a worker ---

try:
    import fcntl
except ImportError:  # Windows: each worker builds its own site
    fcntl = None

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


def run_folder(tmp_path_factory, worker_id) -> Path:
    """The run's own folder, which holds each worker's: where the first worker to ask builds what all of them read."""
    shared = tmp_path_factory.getbasetemp()
    return shared.parent if worker_id != "master" and fcntl is not None else shared


@pytest.fixture(scope="session")
def site(tmp_path_factory, worker_id):
    """Build the site once, strictly, and return its folder and the build's log.

    In parallel, the test files that read the site (test_site, test_site_pages) share that one build: the
    first worker to ask builds it while another waits, then both read the same folder.
    """
    shared = run_folder(tmp_path_factory, worker_id)
    out, log = shared / "site", shared / "site-build.log"
    with held_lock(shared / "site.lock"):
        if not log.exists():
            started = time.perf_counter()
            result = subprocess.run(
                [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
            )
            seconds = time.perf_counter() - started
            assert result.returncode == 0, result.stderr[-3000:]
            print(f"\nsite build: {seconds:.1f} s")
            log.write_text(result.stderr, encoding="utf-8")
    return out, log.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def kit(tmp_path_factory, worker_id) -> Path:
    """`make offline` with the smaller list of test_offline.py and the learner edition, made once a run like the site.

    The tests only read it: a test that installs from it works on a copy.
    """
    shared = run_folder(tmp_path_factory, worker_id)
    out, requirements = shared / "offline", shared / "offline-requirements.txt"
    with held_lock(shared / "offline.lock"):
        if not (out / "INSTALL.md").exists():  # the tool writes it last
            requirements.write_text("-e .\n")
            result = subprocess.run(
                [sys.executable, str(ROOT / "tools" / "offline.py"), "--out", str(out), "--requirements",
                 str(requirements), "--solutions", "false"],
                cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
            assert result.returncode == 0, result.stderr[-3000:]
            assert "Carry the whole folder" in result.stdout
    return out


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


@pytest.fixture(scope="session")
def browser():
    executable = find_chromium()
    if executable is None:
        pytest.skip("no Chromium found: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


# Material draws each diagram into a closed shadow root; opened, it lets a test measure the drawing (its labels' size),
# and nothing else about the page changes.
OPEN_SHADOW_ROOTS = """(() => {
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) { return attach.call(this, {...init, mode: "open"}); };
})()"""


# Every page starts Material's search: it fetches the site's index (1.6 MB) and builds it in a worker, which took
# half of each page's load. Pages tested for something else are given an empty index and a worker that waits
# for ever, so the search box stays as it is while the index loads; the search itself is tested with the real
# worker and index (test_site, `search_page`).
EMPTY_INDEX = json.dumps({"config": {"lang": ["en"], "separator": "[\\s\\-]+", "pipeline": []}, "docs": []})
IDLE_WORKER = "// the search is left out of this page's test; test_site's search tests load the real worker\n"


class SitePages:
    """Pages that may reach only the site, one kept for each path asked for (and search, with or without), each in
    a browser context of its own; what they tried to reach outside the site and their console errors are kept
    until `check`."""

    def __init__(self, browser, base_url: str):
        self.browser, self.base, self.contexts, self.kept, self.blocked, self.errors = browser, base_url, [], {}, [], []

    def block(self, request_route):
        self.blocked.append(request_route.request.url)
        request_route.abort()

    def load(self, path: str | None, width: int = 1280, scheme: str = "light", search: bool = False):
        """The page kept for `path`, loaded anew at that width and scheme as a page of a new context is: with no
        storage (where the site keeps its colour scheme). Kept, a page compiles its scripts (Mermaid's 3.5 MB)
        once. With no path, the page is left blank for the test to load. Without `search`, the page's search has
        an empty index and an idle worker (EMPTY_INDEX)."""
        page = self.kept.get((path, search))
        if page is None:
            context = self.browser.new_context()
            self.contexts.append(context)
            # Only what is outside the site is routed to this process: a pattern the browser matches itself, where
            # "**/*" would bring every request of every page here and back.
            context.route(re.compile(f"^(?!{re.escape(self.base)}/)"), self.block)
            if not search:
                context.route(re.compile(re.escape(self.base) + r"/(.*/)?search/search_index\.json$"),
                              lambda route: route.fulfill(body=EMPTY_INDEX, content_type="application/json"))
                context.route(re.compile(re.escape(self.base) + r"/(.*/)?workers/search\.[0-9a-f]+\.min\.js$"),
                              lambda route: route.fulfill(body=IDLE_WORKER, content_type="text/javascript"))
            context.add_init_script(OPEN_SHADOW_ROOTS)
            page = self.kept[(path, search)] = context.new_page()
            page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
            page.on("pageerror", lambda error: self.errors.append(str(error)))
            page.base = self.base
        else:
            if page.url.startswith(self.base):
                page.evaluate("() => { localStorage.clear(); sessionStorage.clear(); }")
            page.goto("about:blank")  # the site's page would store a scheme changed under it
            page.context.clear_cookies()
        page.set_viewport_size({"width": width, "height": 800})
        page.emulate_media(color_scheme=scheme)
        if path is not None:
            page.goto(self.base + path)
        return page

    def check(self):
        for page in self.kept.values():
            page.evaluate("0")  # a round trip: what the page did before it has been reported
        blocked, errors = self.blocked[:], self.errors[:]
        self.blocked.clear(), self.errors.clear()
        assert not blocked, f"the page tried to reach the network: {blocked}"
        assert not errors, f"console errors: {errors}"


@pytest.fixture(scope="session")
def site_pages(browser, base_url):
    """The pages this worker's browser tests keep (SitePages)."""
    pages = SitePages(browser, base_url)
    yield pages
    for context in pages.contexts:
        context.close()


@pytest.fixture
def load_page(site_pages):
    """SitePages.load; console errors and outside requests fail the test."""
    yield site_pages.load
    site_pages.check()


@pytest.fixture
def page(load_page):
    """A blank page at a laptop's width, in the light scheme, with no storage (its search idle: EMPTY_INDEX)."""
    return load_page(None)


@pytest.fixture
def search_page(load_page):
    """A blank page as `page`, whose search loads the site's index into Material's own worker."""
    return load_page(None, search=True)


@pytest.fixture
def stdin(monkeypatch):
    """Feed text to standard input as `kubectl ... | mini-kubelet CMD -` would."""
    def feed(text: str) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    return feed
