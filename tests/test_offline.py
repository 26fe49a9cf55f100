"""The offline folder: made once with the network, then read with none (installed and run: test_offline_install.py).

The folder here (the `kit` fixture in conftest.py, made once a run, in the learner edition) is made from a smaller
requirement list than the learners', the package itself (`-e .`) with what it depends on, so the suite stays quick:
the learners' list is some 100 MB of wheels (the course's whole list, with the site's and the tests' tools, some
170 MB) and two minutes of installing. The mechanism is the one `make offline` uses on the learners' list (same
tool, same wheelhouse with the build tools, same commands from the folder's INSTALL.md); what the smaller list
leaves out is JupyterLab, so the lab notebook's code runs as a script instead of in a kernel. Wheels for other
platforms (a room of Windows or macOS laptops) are proven on one package.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit
from urllib.request import urlopen

import pytest
import yaml

from tools.offline import SOLUTION_HOLDERS, copy_course, download, kit_requirements, made_for, solution_blocks, solutions_in
from tools.requirements_met import unmet

from .conftest import ROOT
from .test_site import HOME_TITLE, SOLUTIONS

pytestmark = pytest.mark.teaching
site = pytest.mark.site  # the tests that build the folder (and with it the site)

LAB = "00-manifests-and-quantities"
SOURCES = sorted((ROOT / "labs" / "src").glob("*.py"))


@site
def test_wheels_for_the_platforms_of_the_room(tmp_path):
    """A room of Windows laptops on Python 3.12: their binary wheels beside this machine's (one package, to stay quick)."""
    (tmp_path / "requirements.txt").write_text("PyYAML>=6.0,<7\n")
    download(tmp_path / "requirements.txt", tmp_path / "wheels", platforms=["win_amd64", "macosx_11_0_arm64"],
             pythons=["3.12"])
    names = sorted(p.name for p in (tmp_path / "wheels").iterdir())
    assert any(re.fullmatch(r"pyyaml-.*-cp312-cp312-win_amd64\.whl", name, re.I) for name in names), names
    assert any(re.fullmatch(r"pyyaml-.*-cp312-cp312-macosx_\d+_\d+_arm64\.whl", name, re.I) for name in names), names
    here = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert any(here in name or "none-any" in name or name.endswith(".tar.gz") for name in names), names


def offline_env(home: Path) -> dict:
    """A shell with no index: no pip configuration, no find-links, no PYTHONPATH, and every proxy a closed port."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "VIRTUAL_ENV", "PYTHONPATH"))}
    dead = "http://127.0.0.1:9"
    return {**env, "PIP_CONFIG_FILE": os.devnull, "HOME": str(home), "http_proxy": dead, "https_proxy": dead,
            "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "no_proxy": "", "NO_PROXY": "",
            "PATH": f"{Path(sys.base_prefix) / 'bin'}{os.pathsep}{env['PATH']}"}


def install_commands(kit: Path, heading: str) -> list[str]:
    """The console block under a heading of the folder's INSTALL.md, one command a line."""
    text = (kit / "INSTALL.md").read_text()
    block = re.search(rf"^### {re.escape(heading)}\n.*?```console\n(.*?)```", text, re.M | re.S)
    assert block, f"INSTALL.md has no console block under {heading!r}"
    return block.group(1).strip().splitlines()


def sh(command: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True)


@site
def test_the_folder_holds_wheels_build_tools_site_course_and_its_install_page(kit):
    assert sorted(p.name for p in kit.iterdir()) == ["INSTALL.md", "course", "requirements.txt", "site", "wheels"]
    wheels = [p.name for p in (kit / "wheels").iterdir()]
    for tool in ("setuptools", "wheel", "pip", "mini_kubelet", "kubernetes", "pydantic_core"):
        assert any(name.startswith(f"{tool}-") for name in wheels), tool
    assert (kit / "requirements.txt").read_text() == "mini-kubelet==0.1.0\n"
    assert (kit / "course" / "labs" / f"{LAB}.ipynb").exists() and (kit / "course" / "examples").is_dir()
    assert not (kit / "course" / "build").exists() and not list((kit / "course").glob("*.egg-info"))
    assert [holder for holder in SOLUTION_HOLDERS if (kit / "course" / holder).exists()] == []  # the learner edition
    assert (kit / "site" / "index.html").exists()
    for heading in ("Linux and macOS", "Windows (PowerShell or Command Prompt)", "With make (Linux, macOS, or Windows with make installed)"):
        assert install_commands(kit, heading)


@site
def test_the_install_page_gives_the_same_steps_on_windows(kit):
    unix = install_commands(kit, "Linux and macOS")
    windows = install_commands(kit, "Windows (PowerShell or Command Prompt)")
    assert [line.replace("python3", "py").replace(".venv/bin/", ".venv\\Scripts\\") for line in unix] == windows


def test_make_reruns_no_pip_when_nothing_needs_installing(tmp_path):
    """With requirements.txt newer than the stamp and no index, `make install` checks, finds all there, and passes."""
    env = {**offline_env(tmp_path), "PIP_NO_INDEX": "1"}
    result = subprocess.run(["make", "--no-print-directory", "-W", "requirements.txt", "install"], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert ".venv has everything in requirements.txt" in result.stdout.splitlines()


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.found += [value for name, value in attrs if name in ("href", "src") and value]


@site
def test_every_link_of_the_site_opens_a_file_from_disk(kit):
    site = kit / "site"
    # 404.html is for a web server to send on a missing page; it links from the server's root.
    pages = sorted(p for p in site.rglob("*.html") if p.name != "404.html")
    assert len(pages) > 30
    broken = []
    for page in pages:
        parser = Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for link in parser.found:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:
                continue  # outside links, and anchors in the same page
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {link}")
    assert not broken, broken[:20]


@site
def test_the_learner_edition_shows_the_labs_without_their_solutions(kit):
    html = (kit / "site" / "labs" / f"{LAB}.html").read_text(encoding="utf-8")
    assert "Exercise 1: CPU in millicores" in html
    assert "NotImplementedError" in html
    assert "math.ceil(parse_quantity(quantity) * 1000)" not in html  # the solution
    assert "all 10 cases passed" not in html  # nothing was run
    assert "the exercises, without their solutions" in html
    assert f'href="{LAB}.ipynb" download' in html and (kit / "site" / "labs" / f"{LAB}.ipynb").exists()


@site
def test_the_folder_links_no_codespaces_or_binder(kit):
    """Read with no network: the lab pages' "Open in Codespaces" and "Open in Binder" are left out (the published
    site has them: test_site.py)."""
    pages = [p.relative_to(kit) for p in (kit / "site").rglob("*.html")
             if re.search(r'href="https://(codespaces\.new|mybinder\.org)/|class="lab-open"', p.read_text(encoding="utf-8"))]
    assert pages == []


@site
def test_the_learner_folder_holds_no_solution(kit):
    """Every solution block of every lab source, looked for in every file of the folder (the site's pages and search
    index, the notebooks, the course's files, the course's own wheel)."""
    blocks = solution_blocks(SOURCES)
    assert len(blocks) == sum(source.read_text().count("# BEGIN SOLUTION") for source in SOURCES) > 30
    assert solutions_in(kit, SOURCES) == []


@site
def test_the_search_for_solutions_finds_them_in_the_site_that_shows_them(site):
    """The same search over the site with its solutions (the published edition's build, test_site's) finds each one;
    over a fork's learner edition, none."""
    found = solutions_in(site[0], SOURCES)
    shown = {where for where, _ in solution_blocks(SOURCES)} if SOLUTIONS else set()
    assert {where for where, _ in (line.split(": ", 1) for line in found)} == shown


def test_the_search_for_solutions_reads_each_way_a_file_can_hold_one(tmp_path):
    """A lab source's solution as text, in a notebook's JSON, highlighted in HTML, in the search index's script,
    inside the course's wheel; not in another project's wheel, whose text is never the course's."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    source = ROOT / "labs" / "src" / f"{LAB}.py"
    (where, _), *_ = solution_blocks([source])
    code = source.read_text().split("# BEGIN SOLUTION\n", 1)[1].split("    # END SOLUTION", 1)[0]
    forms = {
        "a.py": code,
        "b.ipynb": json.dumps({"cells": [{"source": code.splitlines(keepends=True)}]}, indent=1),
        "c.html": highlight(f"def f(quantity):\n{code}", PythonLexer(), HtmlFormatter()),
        "search_index.js": "var __index = " + json.dumps({"docs": [{"text": f"<p>{code}</p>"}]}),
    }
    for name, text in forms.items():
        folder = tmp_path / name.replace(".", "_")
        write_file(folder / name, text)
        assert solutions_in(folder, [source]) == [f"{where}: {name}"], name
    (tmp_path / "wheels").mkdir(), (tmp_path / "other").mkdir()
    with zipfile.ZipFile(tmp_path / "wheels" / "mini_kubelet-0.1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("mini_kubelet/x.py", code)
    with zipfile.ZipFile(tmp_path / "other" / "other_project-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("other/x.py", code)
    assert solutions_in(tmp_path / "wheels", [source]) == [f"{where}: mini_kubelet-0.1.0-py3-none-any.whl/mini_kubelet/x.py"]
    assert solutions_in(tmp_path / "other", [source]) == []


def write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("wheels, said", [
    (["pyyaml-6.0-cp312-cp312-win_amd64.whl", "six-1.16-py2.py3-none-any.whl"], "Python 3.12 on Windows (amd64)"),
    (["numpy-2-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
      "debugpy-1-cp311-cp311-manylinux_2_34_x86_64.whl", "psutil-7-cp36-abi3-manylinux2010_x86_64.whl"],
     "Python 3.11 on Linux, glibc 2.34 or newer (x86_64)"),  # the newest of the oldest glibc each wheel runs on
    (["pyyaml-6.0-cp312-cp312-macosx_11_0_arm64.whl", "pyyaml-6.0-cp313-cp313-macosx_11_0_arm64.whl"],
     "Python 3.12 and 3.13 on macOS 11.0 or newer (arm64)"),
    (["six-1.16-py2.py3-none-any.whl"], "any system: every wheel here is pure Python"),
])
def test_the_install_page_names_the_pythons_and_systems_of_the_wheels(tmp_path, wheels, said):
    for name in wheels:
        (tmp_path / name).write_text("")
    assert made_for(tmp_path) == said


@site
def test_the_folders_install_page_names_this_machines_python(kit):
    text = (kit / "INSTALL.md").read_text()
    assert "{{" not in text
    assert f"Its wheels were made for {made_for(kit / 'wheels')}." in text.replace("\n", " ")
    assert f"Python {sys.version_info.major}.{sys.version_info.minor} on " in text.replace("\n", " ")


@site
def test_the_install_page_starts_jupyterlab_as_make_lab_does(kit):
    recipe = re.search(r"^lab:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    options = [o for o in re.findall(r"--[\w.]+=\S+", recipe) if not o.startswith("--notebook-dir=")]
    start = install_commands(kit, "Linux and macOS")[-1]
    assert start.startswith(".venv/bin/jupyter lab --notebook-dir=course/labs ")
    assert options and all(option in start.split() for option in options), (options, start)
    assert "--ContentsManager.hide_globs=src" in start.split()  # the solutions folder, where there is one
    assert "`--allow-root`" in (kit / "INSTALL.md").read_text()


def test_the_learners_list_holds_no_test_or_site_tools_and_the_courses_holds_it_whole():
    learner = kit_requirements(ROOT / "requirements-learner.txt", ROOT)
    names = {re.split(r"[<>=!~ ]", line)[0].lower() for line in learner.splitlines() if line and line[0] not in "#-"}
    assert {"jupyterlab", "ipykernel", "kubernetes", "matplotlib", "mini-kubelet"} <= names
    assert not names & {"pytest", "pytest-xdist", "hypothesis", "playwright", "mkdocs", "mkdocs-material"}
    whole = kit_requirements(ROOT / "requirements.txt", ROOT)
    assert learner.rstrip("\n") in whole and "pytest" in whole and "-r " not in whole


def test_an_unmet_requirement_in_a_list_the_list_names_is_found(tmp_path):
    (tmp_path / "all.txt").write_text("-r learner.txt\nPyYAML>=6\n")
    (tmp_path / "learner.txt").write_text("# the labs\nno-such-course-package>=1\n")
    assert unmet(tmp_path / "all.txt") == ["no-such-course-package>=1: not installed"]


@site
def test_the_serve_command_on_the_install_page_serves_the_site(kit):
    text = (kit / "INSTALL.md").read_text()
    command = re.search(r"```console\n(python3 -m http\.server .*)\n```", text).group(1)
    argv = shlex.split(command)
    assert argv[-1] == "8000"
    server = subprocess.Popen([sys.executable, "-u", *argv[1:-1], "0"], cwd=kit, stdout=subprocess.PIPE, text=True)
    try:
        port = re.search(r"port (\d+)", server.stdout.readline()).group(1)
        home = urlopen(f"http://127.0.0.1:{port}/index.html").read().decode()
        assert "<h1" in home and HOME_TITLE in home
        assert urlopen(f"http://127.0.0.1:{port}/search/search_index.json").status == 200
    finally:
        server.terminate()
        server.wait(timeout=10)


@site
def test_the_site_reads_from_disk_in_a_browser(kit, browser):
    # The one browser of this worker (conftest.py): a second sync Playwright cannot run in the same process.
    blocked, errors = [], []
    context = browser.new_context()
    try:
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
                      else (blocked.append(route.request.url), route.abort()))
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto((kit / "site" / "index.html").as_uri())
        assert page.locator("article h1").inner_text().rstrip("¶") == HOME_TITLE
        page.locator("nav.md-nav--primary a", has_text="The kubelet at a glance").first.click()
        page.wait_for_url("**/chapter-0/index.html")
        assert "kubelet" in page.locator("article h1").inner_text().lower()
        page.wait_for_function("() => !document.querySelector('pre.mermaid')", timeout=15_000)
        assert page.locator("div.mermaid").count() >= 1  # the diagrams draw from disk
        page.goto((kit / "site" / "labs" / f"{LAB}.html").as_uri())
        assert "Lab 00" in page.locator("h1").first.inner_text()
        page.locator("a", has_text="Set up the labs").last.click()
        page.wait_for_url("**/setup.html")
        # Search from disk: the index as a script, its worker started through the site's own shim.
        search = page.locator("input.md-search__input")
        search.click()
        search.press_sequentially("eviction", delay=30)
        results = page.locator(".md-search-result__item")
        results.first.wait_for(timeout=15_000)
        assert results.count() >= 3
        results.first.locator("a").first.click()
        page.wait_for_load_state()
        assert page.url.startswith("file://") and "eviction" in page.locator("article").inner_text().lower()
    finally:
        context.close()
    assert not blocked, f"the site tried to reach the network: {blocked}"
    assert errors == []


def test_the_folder_lists_the_learners_requirements_with_the_package_by_name():
    text = kit_requirements(ROOT / "requirements-learner.txt", ROOT)
    assert "-e ." not in text and "mini-kubelet==0.1.0" in text.splitlines()
    assert [line for line in text.splitlines() if "jupyterlab" in line] == [
        line for line in (ROOT / "requirements-learner.txt").read_text().splitlines() if "jupyterlab" in line]


def test_a_course_without_git_is_copied_without_what_it_made(tmp_path):
    course, target = tmp_path / "course", tmp_path / "copy"
    for name in ("Makefile", "labs/00-x.ipynb", "examples/pods/web.yaml", ".venv/bin/python", "site/index.html",
                 ".cache/lab-pages/x.ipynb", "mini_kubelet/__pycache__/api.pyc", "offline/wheels/a.whl"):
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text(name)
    copy_course(course, target, skip=course / "offline")
    copied = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert copied == ["Makefile", "examples/pods/web.yaml", "labs/00-x.ipynb"]


@site
def test_the_setting_in_mkdocs_yml_alone_makes_the_learner_edition(tmp_path):
    """`extra.lab_solutions: false`, and nothing else, on a minimal site that uses the course's hook."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# A page\n")
    (tmp_path / "docs" / "setup.md").write_text("# Set up\n")
    (tmp_path / "labs" / "src").mkdir(parents=True)
    (tmp_path / "labs" / "src" / "00-tiny.py").write_text(
        "# %% [markdown]\n# # A tiny lab\n#\n# ## Exercise 1: double it\n\n"
        "# %%\ndef double(n):\n    # BEGIN SOLUTION\n    return n * 2\n    # END SOLUTION\n\n"
        "# %%\nassert double(2) == 4\n")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text().split("\nnav:")[0].split("\nmarkdown_extensions:")[0])
    plugins = [p for p in config["plugins"] if p == "search" or (isinstance(p, dict) and "mkdocs-jupyter" in p)]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump({
        "site_name": "tiny", "hooks": [str(ROOT / "hooks" / "course.py")], "plugins": plugins,
        "extra": {**config["extra"], "lab_solutions": False},
        "nav": [{"Home": "index.md"}, {"Set up": "setup.md"}, {"Lab": "labs/00-tiny.py"}]}))
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    html = (tmp_path / "site" / "labs" / "00-tiny" / "index.html").read_text()
    assert "NotImplementedError" in html and "Exercise 1: double it" in html
    assert "n * 2" not in html and "the exercises, without their solutions" in html
    assert not (tmp_path / ".cache" / "lab-pages").exists()  # nothing was run
