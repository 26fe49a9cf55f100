"""The lab system: learner notebooks generated from one source, checks that pass and fail as they should."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

from hooks.forked_kernels import forked_kernels
from mini_kubelet.labs import notebooks
from mini_kubelet.cmd.main import main
from mini_kubelet.labs import LabCheckFailed, Raises, case, check

from .conftest import LABS, ROOT

pytestmark = pytest.mark.labs

SOURCES = sorted((LABS / "src").glob("*.py"))
EXERCISE = re.compile(r"^# ## (Exercise (\d+): .+)$", re.M)  # a heading in a percent-format source


@pytest.fixture(scope="module", autouse=True)
def kernel_path():
    """On Linux the notebooks here run in kernels forked as the site build's are; yields the JUPYTER_PATH before."""
    before = os.environ.get("JUPYTER_PATH")
    with forked_kernels() if sys.platform.startswith("linux") else contextlib.nullcontext():
        yield before


@pytest.fixture
def learner_kernels(kernel_path, monkeypatch):
    """Kernels started as a learner's are, not forked."""
    if kernel_path is None:
        monkeypatch.delenv("JUPYTER_PATH", raising=False)
    else:
        monkeypatch.setenv("JUPYTER_PATH", kernel_path)


def exercises(source) -> list[str]:
    return [m.group(1) for m in EXERCISE.finditer(source.read_text())]


def run(notebook: nbformat.NotebookNode, allow_errors: bool) -> nbformat.NotebookNode:
    notebooks.notebook_client(notebook, LABS, allow_errors=allow_errors, timeout=300).execute()
    return notebook


def fresh(source) -> nbformat.NotebookNode:
    """The learner notebook as the generator writes it: never the copy in labs/, which a learner may be editing."""
    return nbformat.reads(notebooks.render(notebooks.learner_notebook(source)), as_version=4)


def committed_text(path) -> str:
    """The learner notebook as the course ships it, even while a learner edits and runs the copy in labs/.

    The file itself when it is exactly what the generator writes; else git's copy (the index, so a
    regenerated notebook counts once it is added); else, with no git, the file. In a clean checkout
    the file and git's copy are one, so the tests prove that the committed notebooks are current.
    """
    text = path.read_text(encoding="utf-8")
    if text == notebooks.render(notebooks.learner_notebook(path.parent / "src" / f"{path.stem}.py")):
        return text
    try:
        shown = subprocess.run(["git", "show", f":./{path.name}"], cwd=path.parent, capture_output=True, text=True)
    except FileNotFoundError:  # no git: the file is all there is
        return text
    return shown.stdout if shown.returncode == 0 else text


def check_cells(notebook) -> list:
    return [c for c in notebook.cells if c.cell_type == "code" and re.search(r"^check\(", c.source, re.M)]


def test_there_are_labs_with_at_least_four_exercises_each():
    assert SOURCES
    for source in SOURCES:
        assert len(exercises(source)) >= 4, source.name


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_learner_notebook_equals_what_the_generator_writes(source):
    committed = committed_text(LABS / f"{source.stem}.ipynb")
    assert committed == notebooks.render(notebooks.learner_notebook(source)), "run `make labs`"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_learner_notebook_has_a_stub_per_exercise_and_no_solution(source):
    text = notebooks.render(notebooks.learner_notebook(source))
    for title in exercises(source):
        assert f'raise NotImplementedError(\\"{title}\\")' in text
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_notebooks_are_committed_without_outputs(source):
    notebook = nbformat.reads(committed_text(LABS / f"{source.stem}.ipynb"), as_version=4)
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
def test_an_untouched_notebook_runs_top_to_bottom_and_every_check_says_not_done_yet(source):
    notebook = run(fresh(source), allow_errors=False)  # Run All: the first error would stop it here
    cells = check_cells(notebook)
    assert len(cells) == len(exercises(source))
    for title, cell in zip(exercises(source), cells):
        printed = "".join(o.get("text", "") for o in cell.outputs)
        assert re.search(rf"^{re.escape(title)}: not done yet[ .]", printed, re.M), printed  # a stub never passes
        assert "cases passed" not in printed
    assert not [o for c in notebook.cells for o in c.get("outputs", []) if o.output_type == "error" or o.get("name") == "stderr"]


# --- the check function -----------------------------------------------------------------------

def test_check_passes_and_prints_a_table(capsys):
    check("Exercise 9: double", lambda x: 2 * x, [case(1, expected=2), case(5, expected=10, note="five")])
    out = capsys.readouterr().out
    assert "Exercise 9: double: all 2 cases passed." in out
    assert re.search(r"^ok\s+5\s+10\s+10\s+five$", out, re.M)


def test_check_stops_at_the_first_wrong_answer_and_prints_input_expected_and_got_once(capsys):
    with pytest.raises(LabCheckFailed, match=r"^Exercise 9: double: case 2 failed; "):
        check("Exercise 9: double", lambda x: 2 * x + (x == 3), [case(1, expected=2), case(3, expected=6), case(4, expected=8)])
    out = capsys.readouterr().out
    assert re.search(r"^FAIL\s+3\s+\(below\)\s+\(below\)$", out, re.M)
    assert out.endswith("case 2 failed.\n  input:    3\n  expected: 6\n  got:      7\n")
    assert not re.search(r"^\S+\s+4\b", out, re.M)  # no case after the failing one


def test_the_input_line_is_never_cut(capsys):
    key = "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%"  # the end is what a case is about
    with pytest.raises(LabCheckFailed):
        check("Exercise 9: parse", lambda text: {}, [case(key, expected={"imagefs.available": 0.15})])
    assert f"\n  input:    {key!r}\n" in capsys.readouterr().out


def test_a_wrong_string_is_shown_with_a_caret_under_its_first_difference(capsys):
    message = "The node was low on resource: memory. "
    with pytest.raises(LabCheckFailed):
        check("Exercise 9: message", lambda x: message.rstrip(), [case("x", expected=message)])
    lines = capsys.readouterr().out.splitlines()
    got = next(i for i, line in enumerate(lines) if line.startswith("  got:      "))
    assert lines[got - 1] == f"  expected: {message!r}" and lines[got] == f"  got:      {message.rstrip()!r}"
    assert lines[got + 1].index("^") == lines[got].index("'", 14)  # under the closing quote: the string ends early
    assert lines[got + 1].endswith("^ index 37: expected ' ', got the end of the string")


@pytest.mark.parametrize("answer, expected, says", [
    (("evictee", "available: 1500Mi. Container app was using 701Mi, request is 100Mi, has larger consumption of memory. "),
     ("evictee", "available: 1500Mi. Container app was using 700Mi, request is 100Mi, has larger consumption of memory. "),
     "^ index 45: expected '0', got '1'"),
    (["a", "b", "d"], ["a", "b", "c"], "  at [2]: expected 'c', got 'd'"),
    (["a", "b"], ["a", "b", "c"], "  at [2]: expected 'c', got nothing more\n  expected 3 items, got 2"),
    ({"a": 1, "c": 3}, {"a": 1, "b": 2}, "  the keys differ: missing 'b'; extra 'c'"),
])
def test_a_wrong_list_tuple_or_dict_names_its_first_differing_item(capsys, answer, expected, says):
    with pytest.raises(LabCheckFailed):
        check("Exercise 9: items", lambda x: answer, [case("x", expected=expected)])
    out = capsys.readouterr().out
    assert says in out
    if says.startswith("^"):  # a long string inside a tuple: an excerpt of both, the caret under the differing character
        at, expected_line, got_line, caret = out.splitlines()[-4:]
        assert at == "  at [1]:" and expected_line.startswith("    expected: ") and got_line.startswith("    got:      ")
        column = caret.index("^")
        assert (expected_line[column], got_line[column]) == ("0", "1")
        assert expected_line[:column] == got_line[:column].replace("got:     ", "expected:")


@pytest.mark.parametrize("answer, expected, says", [
    (250.0, 250, "expected an int, got a float"),
    (True, 1, "expected an int, got a bool"),
    ({"cpu": 250.0, "memory": 1}, {"cpu": 250, "memory": 1}, "at ['cpu']: expected an int, got a float"),
    ([("cpu", 1, 10.0, 10)], [("cpu", 1, 10, 10)], "at [0][2]: expected an int, got a float"),
    ([["cpu", 1]], [("cpu", 1)], "at [0]: expected a tuple, got a list"),
    ({"cpu": (1, 2.0)}, {"cpu": (1, 2)}, "at ['cpu'][1]: expected an int, got a float"),
])
def test_check_applies_one_type_rule_at_every_depth_and_names_the_types(capsys, answer, expected, says):
    with pytest.raises(LabCheckFailed):
        check("Exercise 9: types", lambda x: answer, [case("x", expected=expected)])
    assert capsys.readouterr().out.endswith(f"\n  {says}\n")


def test_check_says_nothing_of_types_when_the_values_differ(capsys):
    with pytest.raises(LabCheckFailed):
        check("Exercise 9: types", lambda x: {"cpu": 3.0}, [case("x", expected={"cpu": 250})])
    out = capsys.readouterr().out
    assert "expected an int" not in out and out.endswith("  at ['cpu']: expected 250, got 3.0\n")


def test_check_reports_an_exception_as_the_answer_chained_to_it_and_accepts_expected_errors(capsys):
    def lookup(key):
        return {}[key]

    with pytest.raises(LabCheckFailed) as failed:
        check("Exercise 9: lookup", lookup, [case("a", expected=1)])
    assert isinstance(failed.value.__cause__, KeyError)  # the learner's own error, with its traceback
    out = capsys.readouterr().out
    assert "\n  got:      raised KeyError: 'a'\n" in out
    assert re.search(r"^  raised in lookup, .*test_labs\.py, line \d+; its traceback is below$", out, re.M)
    assert check("Exercise 9: parse", int, [case("x", expected=Raises(ValueError)), case("3", expected=3)]).status == "passed"


def test_a_function_with_the_wrong_signature_is_blamed_on_its_definition_with_the_arguments_expected():
    def double(x, y):
        return 2 * x

    with pytest.raises(LabCheckFailed) as failed:
        check("Exercise 9: double", double, [case(1, expected=2)])
    line = double.__code__.co_firstlineno
    assert str(failed.value) == (
        f"Exercise 9: double: your double(x, y) (in {__file__}, line {line}) cannot take what the exercise passes it "
        "(missing a required argument: 'y'). The exercise expects double to take 1 argument, and calls double(1).")
    assert failed.value.blame == (__file__, line)


def test_a_stub_is_not_done_yet_not_a_failure_naming_the_exercise_once(capsys):
    def stub(x):
        raise NotImplementedError("Exercise 9: double")

    result = check("Exercise 9: double", stub, [case(1, expected=2)])
    assert (result.status, result.passed) == ("not done", 0)
    out = capsys.readouterr().out
    assert out.startswith("Exercise 9: double: not done yet.") and out.count("Exercise 9") == 1


def test_check_names_the_earlier_exercise_a_function_still_needs(capsys):
    def needs_exercise_1(x):
        raise NotImplementedError("Exercise 1: CPU in millicores")

    assert check("Exercise 2: memory", needs_exercise_1, [case(1, expected=2)]).status == "not done"
    assert capsys.readouterr().out.startswith(
        "Exercise 2: memory: not done yet (it needs Exercise 1: CPU in millicores first)")


def test_a_failed_check_in_a_notebook_shows_the_learners_frames_only():
    learner = "def double(x):\n    half = x / 2\n    return x + undefined_name\n"
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from mini_kubelet.labs import case, check"),
        nbformat.v4.new_code_cell(learner),
        nbformat.v4.new_code_cell('check("Exercise 9: double", double, [case(1, expected=2)])'),
        nbformat.v4.new_code_cell("def triple(x, y):\n    return 3 * x\n"),
        nbformat.v4.new_code_cell('check("Exercise 9: triple", triple, [case(1, expected=3)])'),
        nbformat.v4.new_code_cell('check("Exercise 9: lower", str.upper, [case("Ab", expected="ab")])'),
    ])
    cells = run(notebook, allow_errors=True).cells
    errors = [next(o for o in cells[n].outputs if o.output_type == "error") for n in (2, 4, 5)]
    shown = [re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error.traceback)) for error in errors]
    assert all(error.ename == "LabCheckFailed" for error in errors)
    assert not [text for text in shown if "mini_kubelet" in text or "in check" in text or "in _call" in text]

    printed = "".join(o.get("text", "") for o in cells[2].outputs)
    assert "  raised in double, Cell In[2], line 3; its traceback is below" in printed
    assert "NameError" in shown[0] and "Cell In[2], line 3" in shown[0] and "undefined_name" in shown[0]
    assert shown[0].endswith("\nLabCheckFailed: " + errors[0].evalue)

    assert shown[1].startswith("Cell In[4], line 1\n----> 1 def triple(x, y):")  # the learner's definition
    assert "The exercise expects triple to take 1 argument, and calls triple(1)." in errors[1].evalue

    assert shown[2] == f"LabCheckFailed: {errors[2].evalue}"  # a wrong answer: one line, the rest is printed above
    printed = "".join(o.get("text", "") for o in cells[5].outputs)
    assert "  got:      'AB'\n" in printed and "^ index 0" not in printed


def test_kernels_the_course_starts_print_no_warning_about_tcp_without_encryption(learner_kernels, capfd):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('ran')")])
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()  # a kernel as nbclient starts it
    assert "without encryption" in capfd.readouterr().err  # what learners saw on every run
    notebooks.notebook_client(notebook, LABS, timeout=120).execute()
    assert "without encryption" not in capfd.readouterr().err
    assert notebook.cells[0].outputs[0].text == "ran\n"


# --- the generator protects learners' work -----------------------------------------------------

@pytest.fixture
def lab_copy(tmp_path, monkeypatch):
    """A fresh copy of the labs (sources, and notebooks as generated), and a backup folder outside it."""
    shutil.copytree(LABS / "src", tmp_path / "labs" / "src")
    for source in SOURCES:
        (tmp_path / "labs" / f"{source.stem}.ipynb").write_text(notebooks.render(notebooks.learner_notebook(source)))
    monkeypatch.setenv("LAB_BACKUP_DIR", str(tmp_path / "backups"))
    return tmp_path / "labs"


def learner_edits(path, run_it=True):
    """What a learner does in JupyterLab: write code in a cell, run it (outputs, counts), save."""
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[3].source += "\n# my own work"
    if run_it:
        for number, cell in enumerate(c for c in notebook.cells if c.cell_type == "code"):
            cell.execution_count = number + 1
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="out\n")]
    nbformat.write(notebook, path)
    return path.read_bytes()


def test_build_is_a_no_op_when_up_to_date(lab_copy):
    before = {p.name: p.read_bytes() for p in lab_copy.glob("*.ipynb")}
    assert main(["labs", "build", "--labs-dir", str(lab_copy), "--check"]) == 0
    assert notebooks.build_all(lab_copy) == 0
    assert {p.name: p.read_bytes() for p in lab_copy.glob("*.ipynb")} == before


def test_build_keeps_an_edited_notebook_whose_lab_has_not_changed_and_says_how_to_start_afresh(lab_copy, capsys):
    target = lab_copy / f"{SOURCES[0].stem}.ipynb"
    edited = learner_edits(target)
    assert main(["labs", "build", "--labs-dir", str(lab_copy)]) == 0
    out = capsys.readouterr().out
    assert f"kept {target}: you have edited it, and its lab has not changed since" in out
    assert "For a fresh copy of a notebook, move yours out of the course folder" in out and "labs build --force" in out
    assert target.read_bytes() == edited
    assert main(["labs", "build", "--labs-dir", str(lab_copy), "--check"]) == 0  # nothing is out of date


def test_build_runs_past_an_edited_notebook_and_never_overwrites_it_without_force(lab_copy, capsys):
    first, second = (lab_copy / f"{s.stem}.ipynb" for s in SOURCES[:2])
    edited = learner_edits(first)
    for source in SOURCES[:2]:
        copy = lab_copy / "src" / source.name
        copy.write_text(copy.read_text() + "\n# %%\nprint('a new cell')\n")

    assert main(["labs", "build", "--labs-dir", str(lab_copy)]) == 1
    out = capsys.readouterr().out
    assert f"not updated {first}: its lab has changed, but you have edited your copy" in out
    assert first.read_bytes() == edited
    assert "print('a new cell')" in second.read_text()  # the next notebook was still brought up to date

    assert main(["labs", "build", "--labs-dir", str(lab_copy), "--force"]) == 0
    backup = lab_copy.parent / "backups" / f"{first.stem}.edited-1.ipynb"
    assert backup.read_bytes() == edited
    assert f"kept your edited {first.name} as {backup}" in capsys.readouterr().out
    assert "print('a new cell')" in first.read_text()
    assert not list(lab_copy.glob("*.edited-*"))


def test_a_notebook_only_run_keeps_its_outputs_until_its_lab_changes(lab_copy):
    target = lab_copy / f"{SOURCES[0].stem}.ipynb"
    notebook = nbformat.read(target, as_version=4)
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="out\n")]
    nbformat.write(notebook, target)
    ran = target.read_bytes()
    assert notebooks.build_all(lab_copy) == 0 and notebooks.build_all(lab_copy, check=True) == 0
    assert target.read_bytes() == ran
    source = lab_copy / "src" / SOURCES[0].name
    source.write_text(source.read_text() + "\n# %%\nprint('a new cell')\n")
    assert notebooks.build_all(lab_copy) == 0  # nothing of the learner's to keep: brought up to date
    assert target.read_text() == notebooks.render(notebooks.learner_notebook(source))
    assert not list(lab_copy.parent.glob("backups/*"))


def test_build_updates_an_unedited_notebook_and_check_reports_it(lab_copy):
    source = lab_copy / "src" / SOURCES[0].name
    source.write_text(source.read_text() + "\n# %%\nprint('a new cell')\n")
    assert main(["labs", "build", "--labs-dir", str(lab_copy), "--check"]) == 1
    assert main(["labs", "build", "--labs-dir", str(lab_copy)]) == 0
    assert "print('a new cell')" in (lab_copy / f"{SOURCES[0].stem}.ipynb").read_text()
    assert not list(lab_copy.parent.glob("backups/*"))


def _labs_in_a_git_repository(tmp_path, *, commit: bool):
    """A copy of the labs with their notebooks built, in a new git repository (added, and committed if asked)."""
    clone = tmp_path / "course"
    shutil.copytree(LABS / "src", clone / "labs" / "src")
    notebooks.build_all(clone / "labs")
    git = {"cwd": clone, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **git)
    subprocess.run(["git", "add", "."], **git)
    if commit:
        subprocess.run(["git", "-c", "user.name=learner", "-c", "user.email=learner@example.com", "commit", "-qm", "labs"],
                       **git)
    return clone, git


def test_backups_are_kept_outside_the_course_where_git_clean_cannot_reach_them(tmp_path, monkeypatch):
    """`git clean -fdx` removes untracked and ignored files alike; the backup is not in the clone at all."""
    monkeypatch.delenv("LAB_BACKUP_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    clone, git = _labs_in_a_git_repository(tmp_path, commit=True)
    target = clone / "labs" / f"{SOURCES[0].stem}.ipynb"
    edited = learner_edits(target)
    assert notebooks.build_all(clone / "labs", force=True) == 0
    subprocess.run(["git", "clean", "-fdxq"], **git)
    backup = notebooks.backup_dir() / f"{target.stem}.edited-1.ipynb"
    assert backup.is_relative_to(tmp_path / "data") and backup.read_bytes() == edited


def test_a_learners_edited_and_run_notebook_does_not_change_what_the_tests_read(tmp_path):
    """The tests read git's copy of a notebook the learner has changed, so `make test` passes while they work."""
    clone, git = _labs_in_a_git_repository(tmp_path, commit=False)
    target = clone / "labs" / f"{SOURCES[0].stem}.ipynb"
    generated = target.read_text()
    learner_edits(target)
    assert committed_text(target) == generated
    # a notebook that is stale in git is still caught: the test compares git's copy with the generator
    subprocess.run(["git", "add", "."], **git)
    assert committed_text(target) != generated


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
