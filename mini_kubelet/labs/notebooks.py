"""The learner notebooks in labs/, built from the lab sources in labs/src/ (solutions become stubs), and
the lab sources run with their solutions, cached while nothing they depend on changes."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import sys
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

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


class LabRunError(Exception):
    """A lab whose solutions raise when run: which lab, which cell, and the error."""


def inputs_digest(root: Path) -> str:
    """A digest of everything a lab or a page's command output depends on besides its own text.

    The mini_kubelet package, the course's examples, and the versions of Python and of the libraries
    it runs on: a change to any of them gives a new digest, so nothing stale is reused.
    """
    import mini_kubelet

    hasher = hashlib.sha256(sys.version.encode())
    for name in ("kubernetes", "PyYAML", "matplotlib", "nbclient", "jupytext"):
        hasher.update(f"{name}={_version(name)}".encode())
    package = Path(mini_kubelet.__file__).resolve().parent
    for folder, pattern in ((package, "*.py"), (Path(root) / "examples", "*")):
        for path in sorted(p for p in folder.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts):
            hasher.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return hasher.hexdigest()


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def solutions_path(source: Path, cache_dir: Path, digest: str | None = None) -> Path:
    """Where executed_solutions keeps the run lab: its name changes with the lab and with its inputs."""
    source = Path(source).resolve()
    digest = digest or inputs_digest(source.parent.parent.parent)  # labs/src/NN-name.py -> the course folder
    key = hashlib.sha256(digest.encode() + source.read_bytes()).hexdigest()[:16]
    return Path(cache_dir) / f"{source.stem}.{key}.ipynb"


def executed_solutions(source: Path, cache_dir: Path, digest: str | None = None) -> Path:
    """The lab with its solutions, run; reused from cache_dir while the lab and its inputs are unchanged.

    LabRunError if a cell raises: a lab that fails is never cached, so it fails again on the next run.
    """
    source = Path(source).resolve()
    target = solutions_path(source, cache_dir, digest)
    if target.exists():
        return target
    notebook = jupytext.read(source, fmt="py:percent")
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": str(source.parent.parent)}})
    try:
        client.execute()
    except CellExecutionError as err:
        raise LabRunError(f"{source.name}: a cell raised {err.ename}: {err.evalue}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f"{source.stem}.*.ipynb"):
        stale.unlink()
    partial = target.with_suffix(".partial")
    partial.write_text(nbformat.writes(notebook), encoding="utf-8")
    partial.replace(target)  # whole or not at all, even with two builds at once
    return target
