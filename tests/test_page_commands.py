"""Command output on pages: run in one interpreter at build time, byte for byte what the command prints alone."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from hooks.course import COMPARED, RUN_MARKER, release_answer, run_commands

from .conftest import DOCS, EXAMPLES, ROOT

pytestmark = pytest.mark.ch0

MARKERS = sorted({m.group(2) for page in DOCS.rglob("*.md") for m in RUN_MARKER.finditer(page.read_text())})
ONE_OF_EACH = sorted({next(c for c in MARKERS if c.split()[1] == name) for name in {c.split()[1] for c in MARKERS}})
ERRORS = ["mini-kubelet show examples/invalid/memory-limit-12Zi.yaml", "mini-kubelet explain --cgroup-version 3 x.yaml",
          "mini-kubelet run examples/scenarios/invalid-threshold.yaml", "mini-kubelet --help"]


def test_pages_run_every_kind_of_command():
    assert {c.split()[1] for c in MARKERS} >= {"show", "admit", "explain", "run", "eviction"}


@pytest.fixture(scope="module")
def batched() -> dict:
    """Every command below run in one batch, as the site build runs them: each result beside its command."""
    return dict(zip(ONE_OF_EACH + ERRORS, run_commands(ONE_OF_EACH + ERRORS, ROOT)))


@pytest.mark.parametrize("command", ONE_OF_EACH + ERRORS)
def test_the_batch_prints_what_the_command_prints_alone(command, batched):
    """One command per kind from the pages, and error paths (bad input, argparse, --help), among the others."""
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    alone = subprocess.run([sys.executable, "-m", "mini_kubelet", *shlex.split(command)[1:]], cwd=ROOT, env=env,
                           capture_output=True, text=True)
    batched = batched[command]
    assert (batched["exit"], batched["stdout"], batched["stderr"]) == (alone.returncode, alone.stdout, alone.stderr)


def test_a_batch_keeps_commands_apart():
    """Output from one command never leaks into the next, whatever the first one did."""
    first, second, third = run_commands(["mini-kubelet show examples/invalid/memory-limit-12Zi.yaml",
                                         "mini-kubelet show examples/pods/web.yaml", "mini-kubelet --help"], ROOT)
    assert first["exit"] == 2 and first["stdout"] == "" and "12Zi" in first["stderr"]
    assert second["exit"] == 0 and second["stderr"] == "" and second["stdout"].startswith("Pod shop/web\n")
    assert third["exit"] == 0 and third["stdout"].startswith("usage: mini-kubelet")


# YAML the pure-Python parser and libyaml might read apart: aliases, a bomb, deep nesting, a huge number, tabs, BOM.
TRICKY = ["a: &x [1, 2]\nb: *x\n", "a: &a [1,1,1,1,1,1,1,1,1,1]\n" + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
          for p, c in zip("abcdefg", "bcdefgh")), "[" * 5000 + "]" * 5000, "n: " + "9" * 5000 + "\n", "a:\n\tb: 1\n",
          "\ufeffkind: Pod\n", "a: 1\n---\n---\nb: [1,\n", "a: 'x\n", "- : :\n", "a: b: c\n", "key: value\nkey: other\n"]


def test_the_batch_reads_every_example_as_the_command_alone_does():
    """The batch parses with libyaml: the same documents as a command alone, or for a bad text the same one-line error."""
    from mini_kubelet.cmd import batch
    from mini_kubelet.errors import ManifestError

    def read(parse, text):
        try:
            return parse(text, "f.yaml")
        except ManifestError as err:
            return str(err)

    texts = [path.read_text(encoding="utf-8") for path in sorted(EXAMPLES.rglob("*")) if path.is_file()] + TRICKY
    assert len(texts) > 100
    assert [read(batch.parse_fast, text) for text in texts] == [read(batch.PARSE_ALONE, text) for text in texts]


def test_only_mini_kubelet_commands_run_on_pages():
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match="only mini-kubelet commands"):
        run_commands(["rm -rf /"], ROOT)


def test_main_inside_another_process_leaves_its_signals_alone():
    """Only the program sets SIGPIPE to its default; a test worker or the site build must keep theirs."""
    import signal

    from mini_kubelet.cmd.main import main

    before = signal.getsignal(signal.SIGPIPE)
    assert main(["show", "examples/pods/web.yaml"]) == 0
    assert signal.getsignal(signal.SIGPIPE) == before


def test_the_program_ends_quietly_when_its_reader_goes():
    """`mini-kubelet ... | head -1`: no traceback on a closed pipe."""
    head = subprocess.run(f"{sys.executable} -m mini_kubelet run examples/scenarios/memory-hard.yaml --output json"
                          " | head -c 10", shell=True, cwd=ROOT, capture_output=True, text=True)
    assert head.stdout == '{\n  "versi' and "Traceback" not in head.stderr and "BrokenPipe" not in head.stderr


# --- worked examples and the current release ---

NAMES_A_RELEASE = ("--kubernetes-version", "--feature-gates", "node-v1.")  # the example already picks its release


def test_every_example_that_differs_between_releases_shows_both():
    """A run marker whose answer under v1.36 is not v1.27's must be a releases marker, which shows the two in tabs."""
    plain = [c for c in MARKERS if not any(flag in c for flag in NAMES_A_RELEASE)]
    reference = run_commands(plain, ROOT)
    current = run_commands([f"{c} --kubernetes-version {COMPARED[1]}" for c in plain], ROOT)
    differ = [c for c, a, b in zip(plain, reference, current) if (a["exit"], release_answer(a)) != (b["exit"], release_answer(b))]
    assert differ == [], "these examples answer otherwise under v1.36: write them <!-- releases: ... -->"


def test_a_releases_marker_shows_both_releases_or_fails_the_build():
    from mkdocs.exceptions import PluginError

    import hooks.course as course
    lines = [course.release_command(c, r) for c in ("mini-kubelet explain examples/cluster/deployment.yaml",
                                                    "mini-kubelet show examples/pods/web.yaml") for r in COMPARED]
    course._BUILD["outputs"].update(zip(lines, run_commands(lines, ROOT)))
    tabs = course.release_tabs("mini-kubelet explain examples/cluster/deployment.yaml", "0")
    assert tabs.startswith('=== "v1.27"\n\n    ```text\n    $ mini-kubelet explain examples/cluster/deployment.yaml')
    assert '\n=== "v1.36"\n\n    ```text\n' in tabs and "    Kubernetes 1.36 (--kubernetes-version)" in tabs
    with pytest.raises(PluginError, match="the same answer under 1.27 and 1.36"):
        course.release_tabs("mini-kubelet show examples/pods/web.yaml", "0")
    flip = "mini-kubelet show examples/pods/web.yaml --feature-gates SidecarContainers=true"  # no such gate in v1.27
    lines = [course.release_command(flip, r) for r in COMPARED]
    course._BUILD["outputs"].update(zip(lines, run_commands(lines, ROOT)))
    assert "unrecognized feature gate: SidecarContainers" in course.release_tabs(flip, "2,0")
    with pytest.raises(PluginError, match="exited 2, expected 0"):
        course.release_tabs(flip, "0")
