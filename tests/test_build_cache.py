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


def test_a_lab_run_outside_the_course_folder_finds_the_examples(tmp_path, monkeypatch):
    """course_path falls back to the course folder the package was installed from (`pip install -e .`)."""
    from mini_kubelet.labs import course_path

    monkeypatch.chdir(tmp_path)
    assert course_path("examples/pods/web.yaml") == LABS.parent / "examples" / "pods" / "web.yaml"
