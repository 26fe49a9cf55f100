"""Build the learner notebooks in labs/ from the lab sources in labs/src/ (solutions become stubs)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import jupytext
import nbformat

BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
_EXERCISE_HEADING = re.compile(r"^#+\s*(Exercise (\d+): .+?)\s*$", re.M)
METADATA_KEY = "inside_the_kubelet"


class LabBuildError(Exception):
    """A lab source that cannot be built, or a learner notebook that must not be overwritten."""


def learner_notebook(source: Path) -> nbformat.NotebookNode:
    """The learner's notebook for one lab source: solutions replaced by stubs, no outputs."""
    notebook = jupytext.read(source, fmt="py:percent")
    exercise = None
    for index, cell in enumerate(notebook.cells):
        cell.id = f"cell-{index}"
        if cell.cell_type == "markdown":
            found = _EXERCISE_HEADING.findall(cell.source)
            exercise = found[-1][0] if found else exercise
        elif cell.cell_type == "code":
            cell.source = _stub_solutions(cell.source, exercise, f"{source.name}, cell {index}")
            cell.outputs, cell.execution_count = [], None
        cell.metadata = {}
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        METADATA_KEY: {"source": f"src/{source.name}", "generated": cells_digest(notebook)},
    }
    return notebook


def _stub_solutions(code: str, exercise: str | None, where: str) -> str:
    lines, out, inside = code.splitlines(), [], False
    for line in lines:
        marker = line.strip()
        if marker == BEGIN:
            if inside or exercise is None:
                raise LabBuildError(f"{where}: {BEGIN} needs a preceding 'Exercise N: title' heading and no open block")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}raise NotImplementedError({json.dumps(exercise)})")
        elif marker == END:
            if not inside:
                raise LabBuildError(f"{where}: {END} without {BEGIN}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise LabBuildError(f"{where}: {BEGIN} is never closed")
    return "\n".join(out)


def cells_digest(notebook: nbformat.NotebookNode) -> str:
    """A digest of what a learner writes (cell types and sources), to tell an edited notebook."""
    content = json.dumps([[c.cell_type, c.source] for c in notebook.cells])
    return hashlib.sha256(content.encode()).hexdigest()


def render(notebook: nbformat.NotebookNode) -> str:
    """The notebook file's exact text, the same on every run."""
    return nbformat.writes(notebook) + "\n"


def build_all(labs_dir: str | Path = "labs", *, force: bool = False, check: bool = False) -> int:
    """Write every learner notebook; with check, write nothing and return 1 if any is out of date."""
    labs = Path(labs_dir)
    sources = sorted((labs / "src").glob("*.py"))
    if not sources:
        raise LabBuildError(f"{labs / 'src'}: no lab sources (*.py) found")
    stale = 0
    for source in sources:
        target = labs / f"{source.stem}.ipynb"
        text = render(learner_notebook(source))
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        if check:
            print(f"out of date: {target}")
            stale += 1
            continue
        if current is not None and _edited(target, current):
            if not force:
                raise LabBuildError(f"{target}: edited since it was generated; not overwritten "
                                    "(rename it to keep your work, or use --force to keep a backup)")
            backup = _free_name(target)
            target.rename(backup)
            print(f"kept your edited notebook as {backup}")
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    return 1 if stale else 0


def _edited(target: Path, text: str) -> bool:
    try:
        notebook = nbformat.reads(text, as_version=4)
    except Exception:  # unreadable: treat as the learner's own file
        return True
    recorded = notebook.metadata.get(METADATA_KEY, {}).get("generated")
    return recorded != cells_digest(notebook)


def _free_name(target: Path) -> Path:
    for number in range(1, 1000):
        candidate = target.with_name(f"{target.stem}.edited-{number}.ipynb")
        if not candidate.exists():
            return candidate
    raise LabBuildError(f"{target}: too many backups beside it")
