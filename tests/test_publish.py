"""Publishing and running elsewhere: the Pages workflow, the dev container, Binder and the lab page links.

These run on services elsewhere (GitHub Actions, Codespaces, mybinder.org), so their files are checked
here: they parse, they call the README's commands, and they install from requirements.txt as `make` does.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.request import urlopen

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    from pip._vendor import tomli as tomllib

import pytest
import yaml

from hooks.course import lab_links, lab_solutions

from .conftest import ROOT, mkdocs_config

pytestmark = pytest.mark.teaching

WORKFLOW = ROOT / ".github" / "workflows" / "course.yml"
OFFICIAL = {"actions/checkout", "actions/setup-python", "actions/setup-go", "actions/upload-pages-artifact", "actions/deploy-pages"}


def readme_commands() -> set[str]:
    """The commands the README gives: its console block and its table of commands."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```console\n(.*?)```", text, re.S).group(1)
    commands = {line.split("#")[0].strip() for line in block.splitlines() if line.strip()}
    return commands | set(re.findall(r"^\| `(make [a-z-]+)` \|", text, re.M))


def requires_python() -> tuple[int, int]:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    return tuple(int(n) for n in re.fullmatch(r">=(\d+)\.(\d+)", spec).groups())


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def steps(workflow: dict, job: str) -> list[dict]:
    return workflow["jobs"][job]["steps"]


# Whether a run is for the repository's default branch, whatever the fork named it: no branch is written in the workflow.
ON_DEFAULT_BRANCH = "github.ref == format('refs/heads/{0}', github.event.repository.default_branch)"


def test_the_workflow_tests_the_default_branch_and_pull_requests(workflow):
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["push"] is None and "pull_request" in triggers  # no branch filter: the condition below decides
    assert workflow["jobs"]["test"]["if"] == f"github.event_name != 'push' || {ON_DEFAULT_BRANCH}"
    assert not re.search(r"\bmain\b", WORKFLOW.read_text())  # no branch named: a fork's default is whatever it is


def test_the_workflow_runs_the_readme_commands_and_only_those(workflow):
    runs = [step["run"] for step in steps(workflow, "test") if "run" in step]
    assert runs == ["make test", "make build"]
    assert set(runs) <= readme_commands()


def test_the_workflow_uses_only_the_official_actions(workflow):
    used = {step["uses"].split("@")[0] for job in workflow["jobs"] for step in steps(workflow, job) if "uses" in step}
    assert used == OFFICIAL
    python = next(s for s in steps(workflow, "test") if s.get("uses", "").startswith("actions/setup-python"))
    assert tuple(int(n) for n in python["with"]["python-version"].split(".")) >= requires_python()


def test_the_site_is_deployed_to_pages_from_the_default_branch_after_the_tests(workflow):
    upload = next(s for s in steps(workflow, "test") if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == mkdocs_config().get("site_dir", "site")
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "test"
    published = f"{ON_DEFAULT_BRANCH} && github.event_name != 'pull_request'"
    assert deploy["if"] == published and upload["if"] == published
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]


def test_the_dev_container_installs_with_the_makefile(tmp_path):
    config = json.loads((ROOT / ".devcontainer" / "devcontainer.json").read_text())
    assert config["postCreateCommand"] == "make install"
    version = re.search(r"python:(?:\d+-)?(\d+)\.(\d+)", config["image"]).groups()
    assert tuple(map(int, version)) >= requires_python()
    for name in config["customizations"]["codespaces"]["openFiles"]:
        assert (ROOT / name).is_file()
    # What `make install` does on a fresh container: make the venv, then pip install requirements.txt.
    recipe = subprocess.run(["make", "--no-print-directory", "-n", "-B", "install"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout
    assert "python3 -m venv .venv" in recipe
    assert re.search(r"\.venv/bin/python -m pip install --quiet\s+-r requirements\.txt", recipe)


def make_lab(*assignments: str) -> list[str]:
    """The command line `make lab` runs (with the Python running the tests), as its arguments."""
    recipe = subprocess.run(["make", "--no-print-directory", "-n", "-o", ".venv/.installed", "lab",
                             f"BIN={Path(sys.executable).parent}", *assignments],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return shlex.split(recipe)


def test_make_lab_allows_root_exactly_when_run_as_root():
    """JupyterLab will not start as root (a container's usual user) without --allow-root, nor should it otherwise."""
    assert ("--allow-root" in make_lab()) is (os.getuid() == 0)
    assert "--allow-root" in make_lab("USER_ID=0")
    assert "--allow-root" not in make_lab("USER_ID=1000")


def test_make_lab_leaves_the_solutions_out_of_the_file_browser(tmp_path):
    """`make lab`'s own command, started on loopback: its file browser lists the notebooks, not labs/src/."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "run")}
    server = subprocess.Popen(make_lab() + ["--no-browser", "--ip=127.0.0.1", f"--port={port}", "--port-retries=0",
                                            "--IdentityProvider.token=t"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                listing = json.load(urlopen(f"http://127.0.0.1:{port}/api/contents?token=t", timeout=2))
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, server.stderr and server.stderr.read()[-2000:]
                time.sleep(0.05)
    finally:
        server.terminate()
        server.communicate(timeout=30)
    names = {entry["name"] for entry in listing["content"]}
    assert "src" not in names and (ROOT / "labs" / "src").is_dir()
    assert {path.name for path in (ROOT / "labs").glob("*.ipynb")} <= names


def test_binder_installs_the_course_requirements():
    lines = [line for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines == ["-r ../requirements.txt"]  # relative to binder/: the course's own list
    assert (ROOT / "binder" / lines[0].split()[1]).resolve() == ROOT / "requirements.txt"
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    assert tuple(map(int, re.fullmatch(r"python-(\d+)\.(\d+)", runtime).groups())) >= requires_python()


def test_lab_links_follow_repo_url_and_the_edit_branch():
    config = mkdocs_config()
    owner_repo = config["repo_url"].removeprefix("https://github.com/")
    branch = re.match(r"edit/([^/]+)/", config["edit_uri"]).group(1)
    edited = "labs/src/00-manifests-and-quantities.py" if lab_solutions(config) else "labs/00-manifests-and-quantities.ipynb"
    assert lab_links(config, "00-manifests-and-quantities.py") == {
        "edit": f"{config['repo_url']}/edit/{branch}/{edited}",
        "codespaces": f"https://codespaces.new/{owner_repo}/tree/{branch}?quickstart=1",
        "binder": f"https://mybinder.org/v2/gh/{owner_repo}/{branch}?labpath=labs%2F00-manifests-and-quantities.ipynb",
    }


def test_a_fork_on_another_branch_gets_links_to_that_branch():
    fork = {"repo_url": "https://github.com/someone/kubelet-workshop/", "edit_uri": "edit/spring-2026/docs/"}
    assert lab_links(fork, "02-admission.py") == {
        "edit": "https://github.com/someone/kubelet-workshop/edit/spring-2026/labs/src/02-admission.py",
        "codespaces": "https://codespaces.new/someone/kubelet-workshop/tree/spring-2026?quickstart=1",
        "binder": "https://mybinder.org/v2/gh/someone/kubelet-workshop/spring-2026?labpath=labs%2F02-admission.ipynb",
    }


def test_a_fork_off_github_gets_only_the_edit_link():
    fork = {"repo_url": "https://gitlab.example.org/team/kubelet", "edit_uri": "edit/main/docs/"}
    assert lab_links(fork, "02-admission.py") == {"edit": "https://gitlab.example.org/team/kubelet/edit/main/labs/src/02-admission.py"}


def test_the_learner_editions_edit_link_opens_the_notebook_not_the_solutions():
    fork = {"repo_url": "https://github.com/someone/kubelet-workshop", "edit_uri": "edit/main/docs/",
            "extra": {"lab_solutions": False}}
    assert lab_links(fork, "02-admission.py")["edit"] == "https://github.com/someone/kubelet-workshop/edit/main/labs/02-admission.ipynb"


@pytest.mark.parametrize("extra, shown", [({}, True), ({"lab_solutions": True}, True), ({"lab_solutions": False}, False)])
def test_the_edition_setting(extra, shown):
    assert lab_solutions({"extra": extra}) is shown
