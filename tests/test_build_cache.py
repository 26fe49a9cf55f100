"""What the site build reuses: a run lab and page output, kept only while nothing they depend on changed."""

from __future__ import annotations

import shutil

import pytest

import mini_kubelet
from mini_kubelet.labs import notebooks

from .conftest import LABS

pytestmark = pytest.mark.labs


@pytest.fixture
def course(tmp_path):
    """A course folder with one lab and one example, as the digest sees it."""
    (tmp_path / "labs" / "src").mkdir(parents=True)
    shutil.copy(next((LABS / "src").glob("00-*.py")), tmp_path / "labs" / "src" / "00-lab.py")
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "pod.yaml").write_text("kind: Pod\n")
    return tmp_path


def test_the_cached_run_changes_name_when_the_lab_changes(course):
    lab = course / "labs" / "src" / "00-lab.py"
    before = notebooks.solutions_path(lab, course / "cache")
    lab.write_text(lab.read_text() + "\n# %%\nprint('one more cell')\n")
    assert notebooks.solutions_path(lab, course / "cache") != before


def test_the_digest_changes_when_an_example_changes(course):
    before = notebooks.inputs_digest(course)
    (course / "examples" / "pod.yaml").write_text("kind: Pod\nmetadata: {name: x}\n")
    assert notebooks.inputs_digest(course) != before
    (course / "examples" / "new.yaml").write_text("kind: Node\n")
    assert len({before, notebooks.inputs_digest(course)}) == 2


def test_the_digest_covers_every_module_of_the_package(course, monkeypatch):
    """mkdocs-jupyter's own cache would miss a change to imported code; this digest reads the package."""
    seen = []
    real = type(course).read_bytes
    monkeypatch.setattr(type(course), "read_bytes", lambda self: seen.append(self) or real(self))
    notebooks.inputs_digest(course)
    package = type(course)(mini_kubelet.__file__).resolve().parent
    modules = {p for p in package.rglob("*.py") if "__pycache__" not in p.parts}
    assert modules and modules <= set(seen)


def test_a_cells_output_cut_into_several_messages_is_kept_as_one_as_jupyter_shows_it():
    """A kernel flushes what a cell prints every 0.2 s: a slow cell's output comes in pieces, as many as timing gives."""
    import nbformat

    stream = lambda name, text: nbformat.v4.new_output("stream", name=name, text=text)  # noqa: E731
    picture = nbformat.v4.new_output("display_data", data={"text/plain": "<Figure>"})
    cell = nbformat.v4.new_code_cell("...", outputs=[stream("stdout", "a\n"), stream("stdout", "b\n"), stream("stderr", "!\n"),
                                                     stream("stderr", "?\n"), picture, stream("stdout", "c\n")])
    notebook = nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_markdown_cell("prose")])
    notebooks.join_streams(notebook)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in cell.outputs] == [
        ("stream", "stdout", "a\nb\n"), ("stream", "stderr", "!\n?\n"), ("display_data", None, None), ("stream", "stdout", "c\n")]
    assert "outputs" not in notebook.cells[1]


def test_a_lab_run_outside_the_course_folder_finds_the_examples(tmp_path, monkeypatch):
    """course_path falls back to the course folder the package was installed from (`pip install -e .`)."""
    from mini_kubelet.labs import course_path

    monkeypatch.chdir(tmp_path)
    assert course_path("examples/pods/web.yaml") == LABS.parent / "examples" / "pods" / "web.yaml"


def test_the_kernels_start_from_a_kernelspec_naming_python_with_the_environment_not_activated(tmp_path, monkeypatch):
    """`.venv/bin/mkdocs build` with ipykernel's own kernelspec (argv[0] `python`): the `python` on PATH is not ours.

    forked_kernels resolves a bare python as jupyter_client's KernelManager.format_kernel_cmd does
    (to sys.executable), so the process the kernels are forked from, and the kernels, are this Python.
    """
    import json
    import os
    import signal
    import sys
    import time

    from jupyter_client.manager import start_new_kernel

    from hooks.forked_kernels import forked_kernels, kernel_python

    native = tmp_path / "kernels" / "python3"
    native.mkdir(parents=True)
    native.joinpath("kernel.json").write_text(json.dumps({
        "argv": ["python", "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    venv = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                                if p and os.path.realpath(p) != os.path.realpath(venv)) or "/usr/bin:/bin")
    assert kernel_python("python") == kernel_python("python3") == sys.executable
    assert kernel_python("/opt/other/python") == "/opt/other/python"
    with forked_kernels():
        folder = os.environ["JUPYTER_PATH"].split(os.pathsep)[0]  # the forked kernels' spec, ahead of ours
        forked = json.loads((type(tmp_path)(folder) / "kernels" / "python3" / "kernel.json").read_text())
        assert forked["argv"][0] == sys.executable
        manager, client = start_new_kernel(kernel_name="python3", startup_timeout=60)
        try:
            printed = []
            reply = client.execute_interactive("import mini_kubelet, os; print(os.getpid())", timeout=60,
                                               output_hook=lambda m: printed.append(m["content"].get("text", "")))
            assert reply["content"]["status"] == "ok"
            kernel = int("".join(printed))
            # Its kernel command killed (as a stopped build or a shutdown that took too long leaves it), the
            # forked kernel ends too, instead of running on reparented to init.
            os.kill(manager.provisioner.process.pid, signal.SIGKILL)
            deadline = time.monotonic() + 20
            while _alive(kernel) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not _alive(kernel), f"the forked kernel {kernel} outlived its kernel command"
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie, ended but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
