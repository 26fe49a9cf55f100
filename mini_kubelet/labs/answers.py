"""How a learner's answer differs from the expected one, said where it does, and values shown for the check's table."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

WIDTH = 70  # the most of a string shown above a caret: a longer line may wrap in the notebook, and the caret with it


def compare(expected: Any, got: Any, path: str = "") -> list[str] | None:
    """The one rule for every answer, at every depth: same type and equal value. None when they match.

    Else the lines that say where, to print under the expected and the got lines: a type that differs
    ("expected an int, got a float"), the first differing item of a list, tuple or dict with both items,
    a caret under the first differing character of a string; none when those two lines say it all.
    """
    at = f"  at {path}: " if path else "  "
    if type(got) is not type(expected):
        if _loosely_equal(expected, got):
            return [f"{at}expected {article(expected)}, got {article(got)}"]
        return [f"{at}expected {show(expected, None)}, got {show(got, None)}"] if path else []
    if isinstance(expected, str):
        return None if got == expected else _strings(expected, got, path)
    lengths = []
    if isinstance(expected, dict):
        if expected.keys() != got.keys():
            missing = ", ".join(repr(key) for key in expected if key not in got)
            extra = ", ".join(repr(key) for key in got if key not in expected)
            return [f"{at}the keys differ: " + "; ".join(p for p in (missing and f"missing {missing}", extra and f"extra {extra}") if p)]
        pairs = [(expected[key], got[key], f"{path}[{key!r}]") for key in expected]
    elif isinstance(expected, (list, tuple)):
        pairs = [(e, g, f"{path}[{index}]") for index, (e, g) in enumerate(zip(expected, got))]
        if len(expected) != len(got):
            lengths = [f"{at}expected {len(expected)} items, got {len(got)}"]
    elif dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        pairs = [(getattr(expected, f.name), getattr(got, f.name), f"{path}.{f.name}") for f in dataclasses.fields(expected)]
    elif got == expected:
        return None
    else:
        return [f"{at}expected {show(expected, None)}, got {show(got, None)}"] if path else []
    for inner in pairs:
        found = compare(*inner)
        if found is not None:
            return found + lengths
    if lengths:
        index = len(pairs)
        extra = f"got {show(got[index], None)}" if index < len(got) else "got nothing more"
        missing = f"expected {show(expected[index], None)}" if index < len(expected) else "expected nothing more"
        return [f"  at {path}[{index}]: {missing}, {extra}", *lengths]
    return None


def _strings(expected: str, got: str, path: str) -> list[str]:
    """A caret under the first character where two strings differ; both shown as repr, so spaces and newlines show."""
    index = next((i for i, (e, g) in enumerate(zip(expected, got)) if e != g), min(len(expected), len(got)))
    if index == 0:  # nothing in common to point past
        return [f"  at {path}: expected {expected!r}, got {got!r}"] if path else []
    said = [f"{word} {text[index]!r}" if index < len(text) else f"{word} the end of the string"
            for word, text in (("expected", expected), ("got", got))]
    what = f"^ index {index}: {', '.join(said)}"
    shown, column = _excerpts(expected, got, index)
    if not path and shown == [repr(expected), repr(got)]:  # the caret goes under the whole "got:" line above
        return [" " * (12 + column) + what]
    return [f"  at {path}:" if path else "  where they first differ:",
            f"    expected: {shown[0]}", f"    got:      {shown[1]}", " " * (14 + column) + what]


def _excerpts(expected: str, got: str, index: int) -> tuple[list[str], int]:
    """Both strings as repr, cut alike to about WIDTH characters around character `index`; the column it is at in got."""
    texts = [repr(expected), repr(got)]
    quote = texts[1][0]
    column = 1 + sum(len("\\" + c if c == quote else repr(c)[1:-1]) for c in got[:index])
    start = max(0, min(column - WIDTH // 2, max(map(len, texts)) - WIDTH))
    cut = ["..." * (start > 0) + text[start:start + WIDTH] + "..." * (start + WIDTH < len(text)) for text in texts]
    return cut, column - start + 3 * (start > 0)


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


def article(value: Any) -> str:
    """A value's type with its article: "an int", "a float", "None"."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


def show_args(args: Sequence, width: int | None = 48) -> str:
    """A case's arguments as the table (cut to `width` each) or the "input:" line (never cut) shows them."""
    return ", ".join(show(arg, width) for arg in args)


def show(value: Any, width: int | None = 48) -> str:
    """A value for the table, cut to `width`; Kubernetes objects are shown by kind and name, a labelled list by its label."""
    if isinstance(value, list) and isinstance(getattr(value, "label", None), str):
        return value.label if width is None else cut(value.label, width)
    if isinstance(value, (list, tuple)) and any(type(v).__name__.startswith("V1") for v in value):
        text = "[" + ", ".join(show(v, None) for v in value) + "]"
        return text if width is None else cut(text, width)
    name = getattr(getattr(value, "metadata", None), "name", None) or getattr(value, "name", None)
    if name and type(value).__name__.startswith("V1"):
        return f"<{type(value).__name__[2:]} {name}>"
    text = repr(value)
    return text if width is None else cut(text, width)


def cut(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
