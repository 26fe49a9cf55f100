"""Checks for the lab exercises: run the learner's function on cases and print a table."""

from __future__ import annotations

import dataclasses
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from mini_kubelet.cmd.text import table


class LabCheckFailed(AssertionError):
    """An exercise's function gave a wrong answer, raised, or is not written yet."""


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


def check(exercise: str, function: Callable, cases: Iterable[Case]) -> None:
    """Run `function` on every case; print a table; raise LabCheckFailed at the first wrong answer.

    When the learner's function raises, the LabCheckFailed is chained to that error, so the notebook
    shows the learner's own traceback (their cell and line) above the failed check.
    """
    __tracebackhide__ = True  # IPython and pytest show the learner's cell, not this function
    rows: list[tuple[str, ...]] = []
    for number, item in enumerate(cases, start=1):
        shown = ", ".join(_show(arg) for arg in item.args)
        got, error = _call(function, item.args)
        if isinstance(error, NotImplementedError) and not isinstance(item.expected, Raises):
            raise LabCheckFailed(_not_done(exercise, error)) from None
        difference = _difference(item.expected, got, error)
        whole = f"raised {type(error).__name__}: {error}" if error else _show(got, None)
        rows.append(("ok" if difference is None else "FAIL", shown, _show(item.expected), _cut(whole), item.note))
        if difference is not None:
            message = _report_failure(exercise, number, item, rows, whole, difference, error)
            raise LabCheckFailed(message) from error  # error: the learner's own (its traceback shows), or None
    _print_table(rows)
    print(f"\n{exercise}: all {len(rows)} cases passed.")


def _report_failure(exercise: str, number: int, item: Case, rows: list, got: str, difference: str,
                    error: BaseException | None) -> str:
    """Print the table so far and the failed case in full; return the one-line summary."""
    _print_table(rows)
    shown = ", ".join(_show(arg) for arg in item.args)
    note = f" ({item.note})" if item.note else ""
    why = f"\n  {difference}" if difference else ""
    # The detail lines are never cut: a long answer must show where it differs.
    print(f"\n{exercise}: case {number} failed{note}.\n  input:    {shown}\n"
          f"  expected: {_show(item.expected, None)}\n  got:      {got}{why}")
    summary = f"{exercise}: case {number} failed: input {shown}; expected {_show(item.expected, None)}, got {got}"
    return summary + (f" ({difference})" if difference and error is None else "")


def _not_done(exercise: str, error: NotImplementedError) -> str:
    """The one line for an exercise not written yet; it names another exercise only when that one is missing."""
    other = str(error)
    needs = f" (it needs {other} first)" if other and other != exercise and other.startswith("Exercise") else ""
    return f"{exercise}: not done yet{needs}. Write the function above, run its cell, then this one."


def _call(function: Callable, args: Sequence) -> tuple[Any, BaseException | None]:
    __tracebackhide__ = True
    try:
        return function(*args), None
    except Exception as error:  # the learner's code may raise anything; show it as the answer
        return None, error


def _difference(expected: Any, got: Any, error: BaseException | None) -> str | None:
    """None when the answer is right; else why not ("" when the values simply differ).

    A raised error is right only when the case expects that error type; see _compare for values.
    """
    if isinstance(expected, Raises):
        if isinstance(error, expected.error):
            return None
        return ""
    if error is not None:
        return f"raised {_where(error)}; its traceback is below"
    return _compare(expected, got, "")


def _compare(expected: Any, got: Any, path: str) -> str | None:
    """The one rule for every answer, at every depth: same type and equal value.

    Lists, tuples, dicts and dataclasses are compared item by item, so a float where an int is expected
    fails inside a dict or a tuple as it does on its own. Returns None when they match, a sentence when
    only a type differs ("expected an int, got a float"), else "".
    """
    if type(got) is not type(expected):
        at = f"at {path}: " if path else ""
        return f"{at}expected {_a(expected)}, got {_a(got)}" if _loosely_equal(expected, got) else ""
    if isinstance(expected, dict):
        if expected.keys() != got.keys():
            return ""
        pairs = [(expected[key], got[key], f"{path}[{key!r}]") for key in expected]
    elif isinstance(expected, (list, tuple)):
        if len(expected) != len(got):
            return ""
        pairs = [(e, g, f"{path}[{index}]") for index, (e, g) in enumerate(zip(expected, got))]
    elif dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        pairs = [(getattr(expected, f.name), getattr(got, f.name), f"{path}.{f.name}") for f in dataclasses.fields(expected)]
    else:
        return None if got == expected else ""
    for inner in pairs:
        found = _compare(*inner)
        if found is not None:
            return found
    return None


def _loosely_equal(expected: Any, got: Any) -> bool:
    """Equal but for types: 250 and 250.0, ("cpu", 1) and ["cpu", 1]."""
    sequences = (list, tuple)
    if isinstance(expected, sequences) and isinstance(got, sequences):
        return len(expected) == len(got) and all(map(_loosely_equal, expected, got))
    if isinstance(expected, dict) and isinstance(got, dict):
        return expected.keys() == got.keys() and all(_loosely_equal(expected[k], got[k]) for k in expected)
    try:
        return bool(got == expected)
    except Exception:  # a value that cannot be compared is simply different
        return False


def _a(value: Any) -> str:
    """A value's type with its article: "an int", "a float", "None"."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


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


def _show(value: Any, width: int | None = 48) -> str:
    """A value for the table, cut to `width`; Kubernetes objects are shown by kind and name, a labelled list by its label."""
    if isinstance(value, list) and isinstance(getattr(value, "label", None), str):
        return value.label if width is None else _cut(value.label, width)
    if isinstance(value, (list, tuple)) and any(type(v).__name__.startswith("V1") for v in value):
        text = "[" + ", ".join(_show(v, None) for v in value) + "]"
        return text if width is None else _cut(text, width)
    name = getattr(getattr(value, "metadata", None), "name", None) or getattr(value, "name", None)
    if name and type(value).__name__.startswith("V1"):
        return f"<{type(value).__name__[2:]} {name}>"
    text = repr(value)
    return text if width is None else _cut(text, width)


def _cut(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


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
