"""The learner notebooks in labs/, built from the lab sources in labs/src/ (solutions become stubs), and
the lab sources run with their solutions, cached while nothing they depend on changes."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import sys
from pathlib import Path

import jupytext
import nbformat
import zmq
from jupyter_client import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from traitlets.config import Config

try:
    import fcntl
except ImportError:  # Windows: no lock, and two runs of one lab at once simply both run it
    fcntl = None

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


def build_all(labs_dir: str | Path = "labs", *, force: bool = False, check: bool = False,
              backups: Path | None = None) -> int:
    """Write every learner notebook that is missing or out of date; 1 if one is left out of date, else 0.

    A notebook the learner has edited is never overwritten: when its lab has not changed it is kept as
    it is, and when the lab has changed it is left out of date and named (a notebook only run keeps its
    outputs while its lab is unchanged). With force, each edited notebook is first copied into `backups`
    (backup_dir(), outside the course folder) and then replaced by a fresh copy. With check, nothing is
    written and every notebook out of date is named.
    """
    labs = Path(labs_dir)
    sources = sorted((labs / "src").glob("*.py"))
    if not sources:
        raise LabBuildError(f"{labs / 'src'}: no lab sources (*.py) found")
    notebooks = [(labs / f"{source.stem}.ipynb", learner_notebook(source)) for source in sources]
    left, kept = 0, False
    for target, fresh in notebooks:
        text = render(fresh)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text or (current is not None and not force and _only_run(current, fresh)):
            continue  # up to date, or run by the learner: its outputs stay while its lab is unchanged
        edited = current is not None and _edited(current)
        lab_unchanged = edited and _started_from(current) == cells_digest(fresh)
        if check:
            if not lab_unchanged:
                print(f"out of date: {target}")
                left += 1
        elif edited and not force:
            kept = True
            if lab_unchanged:
                print(f"kept {target}: you have edited it, and its lab has not changed since")
            else:
                print(f"not updated {target}: its lab has changed, but you have edited your copy")
                left += 1
        else:
            if edited:
                backup = _free_name(Path(backups or backup_dir()), target)
                backup.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(target, backup)
                print(f"kept your edited {target.name} as {backup}")
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target}")
    if kept:
        print("For a fresh copy of a notebook, move yours out of the course folder and run `make labs` again;\n"
              "for fresh copies of them all, run `.venv/bin/mini-kubelet labs build --force`, which first copies\n"
              f"each edited notebook into {backups or backup_dir()}.")
    return 1 if left else 0


def backup_dir() -> Path:
    """Where `labs build --force` copies the notebooks it replaces: a folder of the user's, outside the course.

    Outside the clone, so that no `git clean` (which deletes untracked and, with -x, ignored files
    in the clone) and no fresh clone can take the learner's work with it. LAB_BACKUP_DIR overrides it;
    else $XDG_DATA_HOME (by default ~/.local/share)/inside-the-kubelet/lab-backups.
    """
    if os.environ.get("LAB_BACKUP_DIR"):
        return Path(os.environ["LAB_BACKUP_DIR"]).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "inside-the-kubelet" / "lab-backups"


def _read(text: str) -> nbformat.NotebookNode | None:
    try:
        return nbformat.reads(text, as_version=4)
    except Exception:  # unreadable: the learner's own file
        return None


def _started_from(text: str) -> str | None:
    """The digest recorded when this notebook was generated: which version of its lab it began as."""
    notebook = _read(text)
    return None if notebook is None else notebook.metadata.get(METADATA_KEY, {}).get("generated")


def _edited(text: str) -> bool:
    """Whether a learner changed the cells of a notebook (outputs alone are not an edit)."""
    notebook = _read(text)
    return notebook is None or _started_from(text) != cells_digest(notebook)


def _only_run(text: str, fresh: nbformat.NotebookNode) -> bool:
    """Whether a notebook is the fresh one run, with outputs, but not edited."""
    notebook = _read(text)
    ran = notebook is not None and any(c.get("outputs") or c.get("execution_count") for c in notebook.cells)
    return ran and not _edited(text) and cells_digest(notebook) == cells_digest(fresh)


def _free_name(folder: Path, target: Path) -> Path:
    for number in range(1, 10_000):
        candidate = folder / f"{target.stem}.edited-{number}.ipynb"
        if not candidate.exists():
            return candidate
    raise LabBuildError(f"{folder}: too many backups of {target.name}")


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


def notebook_client(notebook: nbformat.NotebookNode, path: Path, *, allow_errors: bool = False,
                    timeout: int = 600) -> NotebookClient:
    """A client that runs `notebook` in a new python3 kernel started in `path` (the labs folder).

    The kernel's sockets are encrypted with keys the client provisions (CurveZMQ), where pyzmq and
    jupyter_client support it: then ipykernel has no reason to print its warning that the kernel
    runs over TCP without encryption, which a learner would otherwise see on every run.
    """
    config = Config()
    if zmq.has("curve") and KernelManager.class_traits().get("transport_encryption") is not None:
        config.KernelManager.transport_encryption = "auto"
    return NotebookClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
                          resources={"metadata": {"path": str(path)}}, config=config)


def executed_solutions(source: Path, cache_dir: Path, digest: str | None = None) -> Path:
    """The lab with its solutions, run; reused from cache_dir while the lab and its inputs are unchanged.

    LabRunError if a cell raises: a lab that fails is never cached, so it fails again on the next run.
    """
    source = Path(source).resolve()
    target = solutions_path(source, cache_dir, digest)
    if target.exists():
        return target
    with held_lock(target.parent / f"{source.stem}.lock"):
        return target if target.exists() else _execute(source, target)


def join_streams(notebook: nbformat.NotebookNode) -> None:
    """Join each cell's consecutive outputs on one stream into one output, as Jupyter shows them.

    How a kernel cuts what a cell prints into messages depends on timing (a flush every 0.2 s): joined,
    the same run gives the same page on a busy machine and on an idle one.
    """
    for cell in notebook.cells:
        joined = []
        for output in cell.get("outputs", []):
            last = joined[-1] if joined else None
            if last is not None and output.output_type == last.output_type == "stream" and output.name == last.name:
                last.text += output.text
            else:
                joined.append(output)
        if "outputs" in cell:
            cell.outputs = joined


@contextlib.contextmanager
def held_lock(lock: Path):
    """Hold a lock file (where the system has them): one run of a lab, or of the site's commands, at a time.

    A second build or test asking meanwhile waits, then reuses that run.
    """
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as held:
        if fcntl is not None:
            fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
        yield


def _execute(source: Path, target: Path) -> Path:
    """Run the lab's source with its solutions in a new kernel and keep the run notebook at `target`."""
    notebook = jupytext.read(source, fmt="py:percent")
    client = notebook_client(notebook, source.parent.parent)
    try:
        client.execute()
    except CellExecutionError as err:
        raise LabRunError(f"{source.name}: a cell raised {err.ename}: {err.evalue}") from None
    join_streams(notebook)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in target.parent.glob(f"{source.stem}.*.ipynb"):
        stale.unlink()
    partial = target.with_suffix(".partial")
    partial.write_text(nbformat.writes(notebook), encoding="utf-8")
    partial.replace(target)  # whole or not at all, even with two builds at once
    return target
