"""Upstream links: one tag in mkdocs.yml, one syntax on the pages, no hand-written links."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml
from mkdocs.exceptions import PluginError

from hooks.course import UPSTREAM_REF, upstream_link, upstream_tag_problem

from .conftest import DOCS, LABS, ROOT

pytestmark = pytest.mark.ch0

REPO = "https://github.com/kubernetes/kubernetes"
PAGES = sorted(DOCS.rglob("*.md")) + sorted((LABS / "src").glob("*.py"))
PINNED = re.compile(r"\[\[v\d+\.\d+\.\d+:")


def mkdocs_extra() -> dict:
    text = (ROOT / "mkdocs.yml").read_text()
    return yaml.load(text, Loader=yaml.BaseLoader)["extra"]  # BaseLoader: no !!python tags


def tag_problems(extra: dict) -> list[str]:
    """What is wrong with the upstream settings: a tag of any release is fine, written nowhere else."""
    wrong = [] if extra["upstream_repo"] == REPO else [f"upstream_repo is {extra['upstream_repo']}, not {REPO}"]
    tag = extra["upstream_tag"]
    if upstream_tag_problem(extra):  # the build's own rule
        wrong.append(upstream_tag_problem(extra))
    for path in PAGES + sorted(ROOT.glob("mini_kubelet/**/*.py")) + [ROOT / "README.md"]:
        if tag in PINNED.sub("[[", path.read_text()):  # a reference pinned to its own tag names it on purpose
            wrong.append(f"{path.relative_to(ROOT)} writes the tag; use {{{{ upstream_tag }}}}")
    return wrong


def test_the_tag_is_written_once_in_mkdocs_yml():
    assert tag_problems(mkdocs_extra()) == []


@pytest.mark.parametrize("tag", ["v1.29.4", "v1.30.0", "v1.28.15"])
def test_any_release_tag_can_be_pinned(tag):
    """A fork that re-pins (step 2 of the teaching page) keeps a green suite: no test names 1.27."""
    assert tag_problems({**mkdocs_extra(), "upstream_tag": tag}) == []


@pytest.mark.parametrize("tag", ["1.29.4", "v1.29", "main", "v1.29.4-rc.0"])
def test_a_tag_that_is_not_a_release_is_refused(tag):
    problems = tag_problems({**mkdocs_extra(), "upstream_tag": tag})
    assert problems[0] == f"mkdocs.yml: extra.upstream_tag {tag!r} is not a release tag (vMAJOR.MINOR.PATCH, such as v1.27.7)"


def test_a_malformed_tag_fails_the_build_with_one_line(tmp_path):
    """Proven on a one-page site that uses the course's hook: no page is built with hundreds of dead links."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("[[pkg/kubelet/kubelet.go]]\n")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump({
        "site_name": "tiny", "hooks": [str(ROOT / "hooks" / "course.py")],
        "extra": {**mkdocs_extra(), "upstream_tag": "v1.29"}}))
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode != 0 and not (tmp_path / "site" / "index.html").exists()
    assert re.findall(r"^ERROR\s+-\s+(.*)$", result.stderr, re.M) == [upstream_tag_problem({"upstream_tag": "v1.29"})]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_hand_written_upstream_links(path):
    text = path.read_text()
    assert not re.search(r"github\.com/kubernetes/kubernetes/(blob|tree)", text), \
        "write [[pkg/.../file.go:Function]] instead of a link"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_upstream_reference_is_well_formed(path):
    for ref in UPSTREAM_REF.findall(path.read_text()):
        upstream_link(ref, REPO, "v1.27.7")  # raises PluginError on a malformed reference


@pytest.mark.parametrize("ref, markdown", [
    ("pkg/kubelet/kubelet.go:NewMainKubelet",
     f'[`NewMainKubelet` in `pkg/kubelet/kubelet.go`]({REPO}/blob/v1.27.7/pkg/kubelet/kubelet.go '
     '"pkg/kubelet/kubelet.go at Kubernetes v1.27.7"){ .upstream }'),
    ("pkg/kubelet/kubelet.go:Kubelet.syncLoop", None),
    ("pkg/kubelet/qos/policy.go", None),
    ("pkg/kubelet/eviction/", f"({REPO}/tree/v1.27.7/pkg/kubelet/eviction "),
    ("staging/src/k8s.io/component-base/configz/configz.go:New", None),
    ("pkg/kubelet/kubelet.go:Kubelet.syncLoop|syncLoop", "[`syncLoop`]("),
])
def test_well_formed_references_become_links_at_the_tag(ref, markdown):
    link = upstream_link(ref, REPO, "v1.27.7")
    assert f"/v1.27.7/{ref.split(':')[0].split('|')[0].rstrip('/')}" in link
    if markdown:
        assert markdown in link


@pytest.mark.parametrize("ref", [
    "kubelet.go:NewMainKubelet",  # not rooted at the repository
    "pkg/kubelet/kubelet:NewMainKubelet",  # no .go
    "pkg/kubelet/kubelet.go:",  # empty symbol
    "pkg/kubelet/kubelet.go#NewMainKubelet",  # wrong separator
    "pkg/kubelet/eviction/:Manager",  # a folder has no symbol
    "pkg/kubelet/../kubelet.go",
    "pkg//kubelet/kubelet.go",
    "pkg/kubelet/kubelet.go/",
    "pkg/kubelet/kubelet.go:New Main",
    "pkg/kubelet/kubelet.go:NewMainKubelet|",  # an empty label
    "https://github.com/kubernetes/kubernetes/blob/master/pkg/kubelet/kubelet.go",
    "",
    "v1.27:pkg/kubelet/runonce.go",  # a pin names a release tag
    "1.27.7:pkg/kubelet/runonce.go",
])
def test_malformed_references_fail_the_build(ref):
    with pytest.raises(PluginError, match="malformed upstream reference"):
        upstream_link(ref, REPO, "v1.27.7")


def test_a_pinned_reference_links_its_own_tag_whatever_the_course_is_pinned_to():
    """`[[v1.27.7:path:Symbol]]`, for a note on what v1.27 did: a fork re-pinned to a later tag keeps it as it is."""
    link = upstream_link("v1.27.7:pkg/kubelet/runonce.go:Kubelet.RunOnce", REPO, "v1.36.0")
    assert link == (f'[`Kubelet.RunOnce` in `pkg/kubelet/runonce.go`]({REPO}/blob/v1.27.7/pkg/kubelet/runonce.go '
                    '"pkg/kubelet/runonce.go at Kubernetes v1.27.7"){ .upstream }')
    assert f"{REPO}/tree/v1.28.0/pkg/kubelet/cri/remote " in upstream_link("v1.28.0:pkg/kubelet/cri/remote/", REPO, "v1.36.0")
    assert f"{REPO}/blob/v1.36.0/pkg/kubelet/kubelet.go " in upstream_link("pkg/kubelet/kubelet.go", REPO, "v1.36.0")
