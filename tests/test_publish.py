"""Publishing and running elsewhere: the Pages workflow, the dev container, Binder and the lab page links.

These run on services elsewhere (GitHub Actions, Codespaces, mybinder.org), so their files are checked
here: they parse, they call the README's commands, and they install from requirements.txt as `make` does.
"""

from __future__ import annotations

import json
import re
import subprocess

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    from pip._vendor import tomli as tomllib

import pytest
import yaml

from hooks.course import lab_links, lab_solutions

from .conftest import ROOT

pytestmark = pytest.mark.teaching

WORKFLOW = ROOT / ".github" / "workflows" / "course.yml"
OFFICIAL = {"actions/checkout", "actions/setup-python", "actions/setup-go", "actions/upload-pages-artifact", "actions/deploy-pages"}


def readme_commands() -> set[str]:
    """The commands the README gives: its console block and its table of commands."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```console\n(.*?)```", text, re.S).group(1)
    commands = {line.split("#")[0].strip() for line in block.splitlines() if line.strip()}
    return commands | set(re.findall(r"^\| `(make [a-z-]+)` \|", text, re.M))


def mkdocs_config() -> dict:
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)  # BaseLoader: no !!python tags


def requires_python() -> tuple[int, int]:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    return tuple(int(n) for n in re.fullmatch(r">=(\d+)\.(\d+)", spec).groups())


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def steps(workflow: dict, job: str) -> list[dict]:
    return workflow["jobs"][job]["steps"]


def test_the_workflow_runs_on_main_and_pull_requests(workflow):
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["push"]["branches"] == ["main"] and "pull_request" in triggers


def test_the_workflow_runs_the_readme_commands_and_only_those(workflow):
    runs = [step["run"] for step in steps(workflow, "test") if "run" in step]
    assert runs == ["make test", "make build"]
    assert set(runs) <= readme_commands()


def test_the_workflow_uses_only_the_official_actions(workflow):
    used = {step["uses"].split("@")[0] for job in workflow["jobs"] for step in steps(workflow, job) if "uses" in step}
    assert used == OFFICIAL
    python = next(s for s in steps(workflow, "test") if s.get("uses", "").startswith("actions/setup-python"))
    assert tuple(int(n) for n in python["with"]["python-version"].split(".")) >= requires_python()


def test_the_site_is_deployed_to_pages_from_main_after_the_tests(workflow):
    upload = next(s for s in steps(workflow, "test") if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == mkdocs_config().get("site_dir", "site")
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "test"
    assert "github.ref == 'refs/heads/main'" in deploy["if"] and "github.ref == 'refs/heads/main'" in upload["if"]
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
    assert lab_links(config, "00-manifests-and-quantities.py") == {
        "edit": f"{config['repo_url']}/edit/{branch}/labs/src/00-manifests-and-quantities.py",
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


@pytest.mark.parametrize("extra, shown", [({}, True), ({"lab_solutions": True}, True), ({"lab_solutions": False}, False)])
def test_the_edition_setting(extra, shown):
    assert lab_solutions({"extra": extra}) is shown


def test_the_course_publishes_the_solutions_edition_unless_told_otherwise():
    assert mkdocs_config()["extra"]["lab_solutions"] == "true"
