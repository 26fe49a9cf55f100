"""Re-pinning: `make check-upstream` finds, page and line, the upstream files and symbols a new tag lacks.

Proven on a small kubernetes made here (a git repository with a few Go files, tagged), never the network.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hooks import course as hook
from tools import check_upstream
from tools.check_upstream import defines, page_refs

from .conftest import ROOT

pytestmark = pytest.mark.teaching

TAG = "v1.29.4"
GIT = ["git", "-c", "user.name=course", "-c", "user.email=course@example.invalid", "-c", "commit.gpgsign=false"]

FILES = {
    "pkg/kubelet/kubelet.go": """
        package kubelet

        type Kubelet struct {
        \tpodManager   kubepod.Manager
        \tnodeName, hostname string
        }

        func NewMainKubelet(kubeCfg *Config) (*Kubelet, error) { return nil, nil }

        func (kl *Kubelet) syncLoop(ctx context.Context, updates <-chan PodUpdate, handler SyncHandler) {}
        """,
    "pkg/kubelet/lifecycle/interfaces.go": """
        package lifecycle

        type (
        \tPodAdmitResult struct {
        \t\tAdmit bool
        \t}
        \tPodAdmitHandler interface {
        \t\tAdmit(attrs *PodAdmitAttributes) PodAdmitResult
        \t}
        )

        const (
        \tUnexpectedAdmissionError = "UnexpectedAdmissionError"
        )
        """,
    "pkg/kubelet/eviction/eviction_manager.go": """
        package eviction

        func (m *managerImpl) synchronize(diskInfoProvider DiskInfoProvider) ([]*v1.Pod, error) { return nil, nil }
        """,
    # After the move: taint_manager.go under another folder, policy.go's function in oom.go.
    "pkg/controller/tainteviction/taint_manager.go": """
        package tainteviction

        type NoExecuteTaintManager struct{}
        """,
    "pkg/kubelet/qos/oom.go": """
        package qos

        func GetContainerOOMScoreAdjust(pod *v1.Pod, container *v1.Container, memoryCapacity int64) int { return 0 }
        """,
    "pkg/kubelet/cm/helpers_linux.go": "package cm\n",
    "pkg/kubelet/cm/helpers.go": """
        package cm

        func MilliCPUToShares(milliCPU int64) uint64 { return 2 }
        """,
    "pkg/kubelet/container/helpers.go": "package container\n",  # a common name: two files hold it
    "pkg/kubelet/prober/prober_manager.go": "package prober\n",  # a name no other file has
}

PAGES = {
    "docs/chapter-1/loop.md": """
        # The loop

        [[pkg/kubelet/kubelet.go:Kubelet.syncLoop]] starts from [[pkg/kubelet/kubelet.go:NewMainKubelet|NewMainKubelet]];
        it reads [[pkg/kubelet/kubelet.go:Kubelet.podManager]] and [[pkg/kubelet/kubelet.go:Kubelet.hostname]],
        not [[pkg/kubelet/kubelet.go:Kubelet.syncLoopIteration]]. See [[pkg/kubelet/eviction/]] and
        [[pkg/kubelet/dockershim/]].

        ```go
        [[pkg/kubelet/in_a_code_block.go:Ignored]]
        ```
        """,
    "docs/chapter-3/limits.md": """
        [[pkg/kubelet/qos/policy.go:GetContainerOOMScoreAdjust]], [[pkg/kubelet/cm/helpers_linux.go:MilliCPUToShares]],
        [[pkg/controller/nodelifecycle/scheduler/taint_manager.go:NoExecuteTaintManager]] and
        [[pkg/kubelet/gone.go]]; [[pkg/kubelet/util/helpers.go]], [[pkg/kubelet/old/helpers.go:Gone]] and
        [[pkg/kubelet/prober_manager.go]].

        !!! info "Since 1.27"
            v1.27 had [[v1.27.7:pkg/kubelet/runonce.go:Kubelet.RunOnce]]; [[v1.29.4:pkg/kubelet/gone2.go]] is checked.
        """,
    "docs/changes.md": """
        | Release | Stage | Change | Ref | Page | In the commands |
        |---|---|---|---|---|---|
        | v1.24 | removed | `pkg/kubelet/dockershim/` removed | KEP-2221, #97252 | [x](x.md) | – |
        | v1.29 | beta | The taint manager moves from `pkg/controller/nodelifecycle/scheduler/` | KEP-3902, #119208 | [x](x.md) | – |
        | v1.30 | fix | Nothing that moved | #1234567 | [x](x.md) | – |
        """,
    "docs/no-references.md": "Nothing upstream here.\n",
    "labs/src/00-lab.py": """
        # %% [markdown]
        # [[pkg/kubelet/lifecycle/interfaces.go:PodAdmitHandler.Admit]] returns
        # [[pkg/kubelet/lifecycle/interfaces.go:PodAdmitResult]] or [[pkg/kubelet/lifecycle/interfaces.go:UnexpectedAdmissionError]];
        # [[pkg/kubelet/eviction/eviction_manager.go:managerImpl.synchronize]] evicts.
        """,
}


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text).lstrip("\n"))


@pytest.fixture(scope="module")
def kubernetes(tmp_path_factory) -> Path:
    """A kubernetes checkout in miniature: the files above at TAG, then a later commit that removes one."""
    repo = tmp_path_factory.mktemp("kubernetes")
    write(repo, FILES)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qm", "the tag"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "tag", TAG], check=True)
    (repo / "pkg/kubelet/kubelet.go").unlink()  # the working tree is not the tag: the check reads the tag
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qam", "after the tag"], check=True)
    return repo


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("course")
    write(folder, PAGES)
    return folder


def check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "check_upstream.py"), *args],
                          capture_output=True, text=True)


def test_the_report_lists_per_page_what_moved_vanished_or_is_not_found(kubernetes, course):
    result = check("--kubernetes", str(kubernetes), "--tag", TAG, "--root", str(course))
    assert result.returncode == 1, result.stderr
    pulls = "https://github.com/kubernetes/kubernetes/pull"
    assert result.stdout.splitlines() == [
        "docs/chapter-1/loop.md:5: not found Kubelet.syncLoopIteration in pkg/kubelet/kubelet.go",
        f"docs/chapter-1/loop.md:6: vanished pkg/kubelet/dockershim/ (see docs/changes.md:3, {pulls}/97252)",
        "docs/chapter-3/limits.md:1: vanished pkg/kubelet/qos/policy.go (GetContainerOOMScoreAdjust now in "
        "pkg/kubelet/qos/oom.go)",
        "docs/chapter-3/limits.md:1: not found MilliCPUToShares in pkg/kubelet/cm/helpers_linux.go (now in "
        "pkg/kubelet/cm/helpers.go)",
        "docs/chapter-3/limits.md:2: moved pkg/controller/nodelifecycle/scheduler/taint_manager.go -> "
        "pkg/controller/tainteviction/taint_manager.go",
        "docs/chapter-3/limits.md:3: vanished pkg/kubelet/gone.go",
        "docs/chapter-3/limits.md:3: vanished pkg/kubelet/util/helpers.go",  # not a guess among two helpers.go
        "docs/chapter-3/limits.md:3: vanished pkg/kubelet/old/helpers.go",  # neither defines Gone
        "docs/chapter-3/limits.md:4: moved pkg/kubelet/prober_manager.go -> pkg/kubelet/prober/prober_manager.go",
        "docs/chapter-3/limits.md:7: vanished pkg/kubelet/gone2.go",
        f"20 references on 3 pages checked against {TAG} in {kubernetes} (1 pinned to another tag, left as they are): "
        "10 not found as written",
    ]


def test_a_vanished_path_points_at_the_rows_of_the_changes_page_that_name_it(kubernetes, tmp_path):
    """The file inside a moved folder, and the folder holding one, each find the row; no other row is named."""
    write(tmp_path, {"docs/changes.md": PAGES["docs/changes.md"], "docs/index.md": """
        [[pkg/controller/nodelifecycle/scheduler/taint_manager.go:NoSuchThing]]
        [[pkg/controller/nodelifecycle/]] [[pkg/kubelet/dockershim/remote/remote.go]]
        """})
    result = check("--kubernetes", str(kubernetes), "--tag", TAG, "--root", str(tmp_path))
    row = "see docs/changes.md:4, https://github.com/kubernetes/kubernetes/pull/119208"
    assert result.stdout.splitlines()[:3] == [
        f"docs/index.md:1: vanished pkg/controller/nodelifecycle/scheduler/taint_manager.go ({row})",
        f"docs/index.md:2: vanished pkg/controller/nodelifecycle/ ({row})",
        "docs/index.md:2: vanished pkg/kubelet/dockershim/remote/remote.go "
        "(see docs/changes.md:3, https://github.com/kubernetes/kubernetes/pull/97252)",
    ]


def test_a_page_whose_references_are_all_found_passes(kubernetes, tmp_path):
    write(tmp_path, {"docs/index.md": "[[pkg/kubelet/kubelet.go:Kubelet.syncLoop]] and [[pkg/kubelet/cm/]]\n"})
    result = check("--kubernetes", str(kubernetes), "--tag", TAG, "--root", str(tmp_path))
    assert result.returncode == 0
    assert result.stdout == f"2 references on 1 pages checked against {TAG} in {kubernetes}: all found\n"


@pytest.mark.parametrize("source, symbol, found", [
    ("func (kl *Kubelet) syncLoop(ctx context.Context) {}", "Kubelet.syncLoop", True),
    ("func (Kubelet) syncLoop() {}", "Kubelet.syncLoop", True),
    ("func (s *Set[T]) Insert(items ...T) {}", "Set.Insert", True),
    ("func (kl *Kubelet) syncLoop() {}", "Other.syncLoop", False),
    ("func (kl *Kubelet) syncLoop() {}", "syncLoop", False),  # a method is named with its type
    ("func Map[K comparable, V any](m map[K]V) {}", "Map", True),
    ("type Manager interface {\n\tAdmit(attrs *Attrs) Result\n}\n", "Manager.Admit", True),
    ("type Manager interface {\n\tAdmit(attrs *Attrs) Result\n}\n", "Manager", True),
    ("var (\n\tdefaultA, DefaultB = 1, 2\n)\n", "DefaultB", True),
    ("// func NewMainKubelet() is described here\n", "NewMainKubelet", False),
    ("func NewMainKubeletX() {}", "NewMainKubelet", False),
])
def test_what_counts_as_a_go_definition(source, symbol, found):
    assert defines(source, symbol) is found


def test_the_course_pages_are_all_read(kubernetes):
    """Against the miniature, every course page with a reference appears in the report (almost nothing is there)."""
    result = check("--kubernetes", str(kubernetes), "--tag", TAG)
    assert result.returncode == 1
    pages = page_refs(ROOT)
    assert len(pages) >= 10 and sum(map(len, pages.values())) >= 150
    listed = [line.split(":")[0] for line in result.stdout.splitlines()[:-1]]
    assert list(dict.fromkeys(listed)) == [page for page, refs in pages.items() if any(not r.tag for _, r in refs)]
    lines = {page: {line for line, _ in refs} for page, refs in pages.items()}
    assert all(int(line.split(":")[1]) in lines[line.split(":")[0]] for line in result.stdout.splitlines()[:-1])


@pytest.mark.parametrize("args, message", [
    (["--tag", "v9.9.9"], "has no tag v9.9.9; make a checkout of it with: "
                          "git clone --depth 1 --branch v9.9.9 https://github.com/kubernetes/kubernetes"),
    (["--kubernetes", "."], "not a git checkout"),
])
def test_an_unusable_checkout_is_one_line_and_exit_2(kubernetes, tmp_path, args, message):
    if "--kubernetes" not in args:
        args = ["--kubernetes", str(kubernetes), *args]
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "check_upstream.py"), *args],
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2 and result.stdout == ""
    assert message in result.stderr and len(result.stderr.splitlines()) == 1


def test_no_checkout_named_says_how_to_make_one():
    result = check("--kubernetes", "", "--tag", TAG)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("check-upstream: name a kubernetes checkout: KUBERNETES=path (make one with: "
                             f"git clone --depth 1 --branch {TAG} https://github.com/kubernetes/kubernetes)\n")


@pytest.mark.parametrize("tag, status", [(TAG, 1), ("v9.9.9", 2)])
def test_make_check_upstream_runs_it_and_names_its_status(kubernetes, tag, status):
    """The command step 2 of the teaching page gives. GNU make exits 2 whenever a recipe fails, so the tool's own
    status (1: references to fix, 2: nothing could be checked) is the one make names in its last line."""
    result = subprocess.run(["make", "--no-print-directory", "check-upstream", f"KUBERNETES={kubernetes}", f"TAG={tag}"],
                            cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PIP_NO_INDEX": "1"})
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(f"check-upstream] Error {status}")
    if status == 1:
        assert f"references on {len(page_refs(ROOT))} pages checked against {tag}" in result.stdout


def test_references_are_read_as_the_site_reads_them():
    for name in ("UPSTREAM_REF", "VALID_REF", "FENCE"):
        assert getattr(check_upstream, name).pattern == getattr(hook, name).pattern, name
    text = (ROOT / "docs" / "chapter-0" / "index.md").read_text()
    assert check_upstream.outside_code(text).count("[[") == hook._outside_code(text, lambda t: t.replace("[[", "\0")).count("\0")
