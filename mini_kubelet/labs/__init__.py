"""Checks for the lab exercises: run the learner's function on cases and print a table."""

from __future__ import annotations

import inspect
import linecache
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from mini_kubelet.cmd.text import table
from mini_kubelet.labs.answers import article, compare, cut, show, show_args

HERE = Path(__file__).resolve().parent


class LabCheckFailed(AssertionError):
    """An exercise's function gave a wrong answer, raised, or cannot take the exercise's arguments."""

    def __init__(self, message: str, blame: tuple[str, int] | None = None):
        super().__init__(message)
        self.blame = blame  # (file, line) of the learner's code to show, when no error of theirs has a traceback

    def _render_traceback_(self) -> list[str]:
        """What IPython shows: the learner's own frames (of their error, or the line blamed), then this one line.

        No frame of the check itself: the learner can do nothing about those.
        """
        if self.__cause__ is not None:
            shown = [*_learner_traceback(self.__cause__), ""]
        elif self.blame:
            filename, line = self.blame
            shown = [f"{_cell_label(filename) or filename}, line {line}",
                     f"----> {line} {linecache.getline(filename, line).rstrip()}", ""]
        else:
            shown = []
        return [*shown, f"{type(self).__name__}: {self}"]


@dataclass(frozen=True)
class Checked:
    """What a check that did not fail found: "passed" (every case) or "not done" (the function is still a stub)."""

    exercise: str
    status: str
    passed: int

    def _ipython_display_(self) -> None:
        """Nothing more to show in a notebook: the check has printed what it found."""


@dataclass(frozen=True)
class Raises:
    """An expected outcome: the call raises this exception type."""

    error: type[BaseException]

    def __repr__(self) -> str:
        return f"raises {self.error.__name__}"


@dataclass(frozen=True)
class Case:
    """One input (the arguments of a call) and the answer upstream gives for it."""

    args: tuple
    expected: Any
    note: str = ""


def case(*args: Any, expected: Any, note: str = "") -> Case:
    """Build a Case: `case("250m", expected=250)`."""
    return Case(args, expected, note)


def check(exercise: str, function: Callable, cases: Iterable[Case]) -> Checked:
    """Run `function` on every case and print a table; raise LabCheckFailed at the first wrong answer.

    A stub (NotImplementedError) is not a failure: the check prints "not done yet" and returns, so an
    untouched notebook runs from top to bottom. When the learner's function raises, the LabCheckFailed
    is chained to that error, and a notebook shows the learner's own frames of it (their cell and line).
    """
    __tracebackhide__ = True  # pytest shows the learner's code, not this function
    rows: list[tuple[str, ...]] = []
    for number, item in enumerate(cases, start=1):
        wrong_signature = _signature_mismatch(exercise, function, item.args)
        if wrong_signature:
            raise wrong_signature
        got, error = _call(function, item.args)
        if isinstance(error, NotImplementedError) and not isinstance(item.expected, Raises):
            if rows:
                _print_table(rows)
            print(_not_done(exercise, error))
            return Checked(exercise, "not done", len(rows))
        lines = _difference(item.expected, got, error)
        if lines is None:
            whole = f"raised {type(error).__name__}: {error}" if error else show(got, None)
            rows.append(("ok", show_args(item.args), show(item.expected), cut(whole), item.note))
            continue
        rows.append(("FAIL", show_args(item.args), "(below)", "(below)", item.note))
        _print_table(rows)
        note = f" ({item.note})" if item.note else ""
        # Never cut: the input, the expected answer and the learner's are each printed once, in full.
        print("\n".join([f"\n{exercise}: case {number} failed{note}.", f"  input:    {show_args(item.args, None)}",
                         *lines]))
        raise LabCheckFailed(f"{exercise}: case {number} failed; its input, the expected answer and yours are above") \
            from error  # error: the learner's own (its traceback shows), or None
    _print_table(rows)
    print(f"\n{exercise}: all {len(rows)} cases passed.")
    return Checked(exercise, "passed", len(rows))


def _not_done(exercise: str, error: NotImplementedError) -> str:
    """The one line for an exercise not written yet; it names another exercise only when that one is missing."""
    other = str(error)
    needs = f" (it needs {other} first)" if other and other != exercise and other.startswith("Exercise") else ""
    return f"{exercise}: not done yet{needs}. Write the function above, run its cell, then this one."


def _signature_mismatch(exercise: str, function: Callable, args: Sequence) -> LabCheckFailed | None:
    """The failure of a function that cannot take a case's arguments, blamed on where the learner defined it."""
    if not callable(function):
        return LabCheckFailed(f"{exercise}: expects a function, got {article(function)}")
    try:
        signature = inspect.signature(function)
        signature.bind(*args)
    except ValueError:  # a built-in with no signature to read: calling it will tell
        return None
    except TypeError as error:
        name, code = getattr(function, "__name__", "the function"), getattr(function, "__code__", None)
        where = f" (in {_cell_label(code.co_filename) or code.co_filename}, line {code.co_firstlineno})" if code else ""
        count = f"{len(args)} argument{'' if len(args) == 1 else 's'}"
        return LabCheckFailed(f"{exercise}: your {name}{signature}{where} cannot take what the exercise passes it "
                              f"({error}). The exercise expects {name} to take {count}, and calls "
                              f"{name}({show_args(args)}).", code and (code.co_filename, code.co_firstlineno))
    return None


def _call(function: Callable, args: Sequence) -> tuple[Any, BaseException | None]:
    __tracebackhide__ = True
    try:
        return function(*args), None
    except Exception as error:  # the learner's code may raise anything; show it as the answer
        return None, error


def _difference(expected: Any, got: Any, error: BaseException | None) -> list[str] | None:
    """None when the answer is right; else the lines that show it: expected, got, and where they differ.

    A raised error is right only when the case expects that error type; see answers.compare for values.
    """
    answer = f"raised {type(error).__name__}: {error}" if error else show(got, None)
    shown = [f"  expected: {show(expected, None)}", f"  got:      {answer}"]
    if isinstance(expected, Raises):
        return None if isinstance(error, expected.error) else shown
    if error is not None:
        return [*shown, f"  raised {_where(error)}; its traceback is below"]
    found = compare(expected, got)
    return None if found is None else shown + found


def _where(error: BaseException) -> str:
    """Where the learner's code raised: its deepest frame in a notebook cell ("in f, Cell In[4], line 7"),
    else the deepest frame of all."""
    frames = traceback.extract_tb(error.__traceback__)[1:] or traceback.extract_tb(error.__traceback__)
    labelled = [(frame, _cell_label(frame.filename)) for frame in frames]
    frame, label = next(((f, name) for f, name in reversed(labelled) if name), labelled[-1])
    return f"in {frame.name}, {label or frame.filename}, line {frame.lineno}"


def _cell_label(filename: str) -> str | None:
    """"Cell In[4]" for code run in a notebook cell, else None."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    formatted = getattr(getattr(shell, "compile", None), "format_code_name", lambda name: None)(filename)
    return " ".join(formatted) if formatted else None


def _learner_traceback(error: BaseException) -> list[str]:
    """The error's traceback as IPython would show it, without the frames of this package (the check's own)."""
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    kept = None
    for frame in reversed(frames):
        if not Path(frame.tb_frame.f_code.co_filename).resolve().is_relative_to(HERE):
            kept = types.TracebackType(kept, frame.tb_frame, frame.tb_lasti, frame.tb_lineno)
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is None:
        return traceback.format_exception(type(error), error, kept)
    return shell.InteractiveTB.structured_traceback(type(error), error, kept)


def _print_table(rows: list[tuple[str, ...]]) -> None:
    print("\n".join(table([("", "input", "expected", "got", "case"), *rows])))


def course_path(relative: str) -> Path:
    """A file of the course (e.g. "examples/pods/web.yaml"), found from wherever the lab runs."""
    here = Path.cwd().resolve()
    package_root = Path(__file__).resolve().parents[2]  # the course folder, when installed with -e
    for folder in (here, *here.parents, package_root):
        if (folder / relative).exists():
            return folder / relative
    raise FileNotFoundError(f"{relative}: not found in {here} or its parents; run the lab from the course folder")
