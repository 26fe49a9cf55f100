"""Checks for the lab exercises: run the learner's function on cases and print a table."""

from __future__ import annotations

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
    """Run `function` on every case; print a table; raise LabCheckFailed at the first wrong answer."""
    __tracebackhide__ = True  # IPython and pytest show the learner's cell, not this function
    rows: list[tuple[str, ...]] = []
    for number, item in enumerate(cases, start=1):
        shown = ", ".join(_show(arg) for arg in item.args)
        got, error = _call(function, item.args)
        if isinstance(error, NotImplementedError):
            print(f"{exercise}: not done yet. Write the function above, run its cell, then this one.")
            raise LabCheckFailed(f"{exercise}: not done yet: {error}") from None
        ok = _matches(item.expected, got, error)
        whole = f"raised {type(error).__name__}: {error}" if error else _show(got, None)
        rows.append(("ok" if ok else "FAIL", shown, _show(item.expected), _cut(whole), item.note))
        if not ok:
            _print_table(rows)
            note = f" ({item.note})" if item.note else ""
            # The detail lines are never cut: a long answer must show where it differs.
            print(f"\n{exercise}: case {number} failed{note}.\n  input:    {shown}\n"
                  f"  expected: {_show(item.expected, None)}\n  got:      {whole}")
            raise LabCheckFailed(f"{exercise}: case {number} failed: input {shown}; "
                                 f"expected {_show(item.expected, None)}, got {whole}")
    _print_table(rows)
    print(f"\n{exercise}: all {len(rows)} cases passed.")


def _call(function: Callable, args: Sequence) -> tuple[Any, BaseException | None]:
    try:
        return function(*args), None
    except Exception as error:  # the learner's code may raise anything; show it as the answer
        return None, error


def _matches(expected: Any, got: Any, error: BaseException | None) -> bool:
    if isinstance(expected, Raises):
        return isinstance(error, expected.error)
    return error is None and type(got) is type(expected) and got == expected


def _show(value: Any, width: int | None = 48) -> str:
    """A value for the table, cut to `width`; Kubernetes objects are shown by kind and name."""
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
    package_root = Path(__file__).resolve().parent.parent  # the course folder, when installed with -e
    for folder in (here, *here.parents, package_root):
        if (folder / relative).exists():
            return folder / relative
    raise FileNotFoundError(f"{relative}: not found in {here} or its parents; run the lab from the course folder")
