"""The two errors every command turns into one line and exit status 2 (kept free of imports, so the
command line can catch them without loading the Kubernetes client)."""

from __future__ import annotations


class UsageError(ValueError):
    """A command-line argument the command cannot use, reported as one line."""


class ManifestError(ValueError):
    """A manifest the course cannot use: says which file, which field, and what is wrong."""

    def __init__(self, source: str, path: str, problem: str):
        self.source, self.path, self.problem = source, path, problem
        where = f"{source}: {path}" if path else source
        super().__init__(f"{where}: {problem}")
