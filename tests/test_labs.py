"""The lab system: learner notebooks generated from one source, checks that pass and fail as they should."""

from __future__ import annotations

import re
import shutil

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

from mini_kubelet.labs import notebooks
from mini_kubelet.cmd.main import main
from mini_kubelet.labs import LabCheckFailed, Raises, case, check

from .conftest import LABS, ROOT

pytestmark = pytest.mark.labs

SOURCES = sorted((LABS / "src").glob("*.py"))
EXERCISE = re.compile(r"^# ## (Exercise (\d+): .+)$", re.M)  # a heading in a percent-format source


def exercises(source) -> list[str]:
    return [m.group(1) for m in EXERCISE.finditer(source.read_text())]


def run(notebook: nbformat.NotebookNode, allow_errors: bool) -> nbformat.NotebookNode:
    NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=allow_errors,
                   resources={"metadata": {"path": str(LABS)}}).execute()
    return notebook


def check_cells(notebook) -> list:
    return [c for c in notebook.cells if c.cell_type == "code" and re.search(r"^check\(", c.source, re.M)]


def test_there_are_labs_with_at_least_four_exercises_each():
    assert SOURCES
    for source in SOURCES:
        assert len(exercises(source)) >= 4, source.name


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_learner_notebook_equals_what_the_generator_writes(source):
    committed = (LABS / f"{source.stem}.ipynb").read_text(encoding="utf-8")
    assert committed == notebooks.render(notebooks.learner_notebook(source)), "run `make labs`"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_learner_notebook_has_a_stub_per_exercise_and_no_solution(source):
    text = (LABS / f"{source.stem}.ipynb").read_text(encoding="utf-8")
    for title in exercises(source):
        assert f'raise NotImplementedError(\\"{title}\\")' in text
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text


@pytest.mark.parametrize("path", sorted(LABS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebooks_are_committed_without_outputs(path):
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_solutions_pass_every_check(source):
    # The same run the site shows: executed once, then reused from the cache while nothing changes.
    notebook = nbformat.read(notebooks.executed_solutions(source, ROOT / ".cache" / "lab-pages"), as_version=4)
    printed = "".join(o.get("text", "") for c in check_cells(notebook) for o in c.outputs)
    for title in exercises(source):
        assert re.search(rf"^{re.escape(title)}: all \d+ cases passed\.$", printed, re.M), title


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_every_stub_fails_its_check(source):
    notebook = run(nbformat.read(LABS / f"{source.stem}.ipynb", as_version=4), allow_errors=True)
    cells = check_cells(notebook)
    assert len(cells) == len(exercises(source))
    for title, cell in zip(exercises(source), cells):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors and errors[0].ename == "LabCheckFailed", title
        assert errors[0].evalue.startswith(f"{title}: not done yet"), errors[0].evalue
    others = [c for c in notebook.cells if c.cell_type == "code" and c not in cells]
    assert not [o for c in others for o in c.outputs if o.output_type == "error"]


# --- the check function -----------------------------------------------------------------------

def test_check_passes_and_prints_a_table(capsys):
    check("Exercise 9: double", lambda x: 2 * x, [case(1, expected=2), case(5, expected=10, note="five")])
    out = capsys.readouterr().out
    assert "Exercise 9: double: all 2 cases passed." in out
    assert re.search(r"^ok\s+5\s+10\s+10\s+five$", out, re.M)


def test_check_stops_at_the_first_wrong_answer_with_input_expected_and_got(capsys):
    with pytest.raises(LabCheckFailed, match=r"case 2 failed: input 3; expected 6, got 7"):
        check("Exercise 9: double", lambda x: 2 * x + (x == 3), [case(1, expected=2), case(3, expected=6), case(4, expected=8)])
    out = capsys.readouterr().out
    assert "FAIL" in out and "  expected: 6\n  got:      7" in out
    assert "4" not in out.split("case 2 failed")[0].splitlines()[-1]


def test_check_wants_the_same_type_not_just_an_equal_value():
    with pytest.raises(LabCheckFailed):
        check("Exercise 9: millicores", lambda x: 250.0, [case("250m", expected=250)])


def test_check_reports_an_exception_as_the_answer_and_accepts_expected_errors():
    with pytest.raises(LabCheckFailed, match=r"got raised KeyError"):
        check("Exercise 9: lookup", lambda k: {}[k], [case("a", expected=1)])
    check("Exercise 9: parse", int, [case("x", expected=Raises(ValueError)), case("3", expected=3)])


def test_check_says_not_done_yet_for_a_stub():
    def stub(x):
        raise NotImplementedError("Exercise 9: double")

    with pytest.raises(LabCheckFailed, match=r"^Exercise 9: double: not done yet"):
        check("Exercise 9: double", stub, [case(1, expected=2)])


# --- the generator protects learners' work -----------------------------------------------------

@pytest.fixture
def lab_copy(tmp_path):
    shutil.copytree(LABS, tmp_path / "labs", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return tmp_path / "labs"


def test_build_is_a_no_op_when_up_to_date(lab_copy):
    before = {p.name: p.read_bytes() for p in lab_copy.glob("*.ipynb")}
    assert main(["labs", "build", "--labs-dir", str(lab_copy), "--check"]) == 0
    assert notebooks.build_all(lab_copy) == 0
    assert {p.name: p.read_bytes() for p in lab_copy.glob("*.ipynb")} == before


def test_build_refuses_to_overwrite_an_edited_notebook(lab_copy, capsys):
    target = lab_copy / f"{SOURCES[0].stem}.ipynb"
    notebook = nbformat.read(target, as_version=4)
    notebook.cells[3].source += "\n# my own work"
    nbformat.write(notebook, target)
    edited = target.read_bytes()
    source = lab_copy / "src" / SOURCES[0].name
    source.write_text(source.read_text() + "\n# %%\nprint('a new cell')\n")

    assert main(["labs", "build", "--labs-dir", str(lab_copy)]) == 2
    assert "edited since it was generated; not overwritten" in capsys.readouterr().err
    assert target.read_bytes() == edited

    assert main(["labs", "build", "--labs-dir", str(lab_copy), "--force"]) == 0
    assert (lab_copy / f"{SOURCES[0].stem}.edited-1.ipynb").read_bytes() == edited
    assert "print('a new cell')" in target.read_text()


def test_build_updates_an_unedited_notebook_and_check_reports_it(lab_copy):
    source = lab_copy / "src" / SOURCES[0].name
    source.write_text(source.read_text() + "\n# %%\nprint('a new cell')\n")
    assert main(["labs", "build", "--labs-dir", str(lab_copy), "--check"]) == 1
    assert main(["labs", "build", "--labs-dir", str(lab_copy)]) == 0
    assert "print('a new cell')" in (lab_copy / f"{SOURCES[0].stem}.ipynb").read_text()
    assert not list(lab_copy.glob("*.edited-*.ipynb"))


@pytest.mark.parametrize("code, problem", [
    ("# %% [markdown]\n# ## Exercise 1: x\n\n# %%\ndef f():\n    # BEGIN SOLUTION\n    return 1\n", "is never closed"),
    ("# %%\ndef f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION\n", "needs a preceding 'Exercise N: title' heading"),
    ("# %% [markdown]\n# ## Exercise 1: x\n\n# %%\ndef f():\n    return 1\n    # END SOLUTION\n", "without # BEGIN SOLUTION"),
])
def test_a_malformed_lab_source_is_refused_with_its_place(tmp_path, code, problem):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "99-bad.py").write_text(code)
    with pytest.raises(notebooks.LabBuildError, match=re.escape(problem)):
        notebooks.build_all(tmp_path)
    assert not (tmp_path / "99-bad.ipynb").exists()


def test_stub_keeps_the_solution_indentation():
    stubbed = notebooks._stub_solutions("def f():\n    # BEGIN SOLUTION\n    return 1\n    # END SOLUTION", "Exercise 1: x", "here")
    assert stubbed == 'def f():\n    raise NotImplementedError("Exercise 1: x")'
