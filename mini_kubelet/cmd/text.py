"""Plain-text layout shared by the commands and the lab checks."""

from __future__ import annotations

from typing import Sequence


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows of cells as aligned text columns (two spaces apart, no trailing blanks).

    Upstream: none (a course tool)
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
