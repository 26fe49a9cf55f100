"""Exit 0 if this Python already has everything a requirements file asks for, 1 if pip has work to do.

    .venv/bin/python tools/requirements_met.py requirements.txt

The Makefile asks this before it runs pip, so a `make` target with nothing to install needs no
network. A requirement counts as met when an installed distribution satisfies its version bounds;
the course itself (`-e .`) when it is installed in editable mode from this folder at the version
in pyproject.toml, with its own dependencies met; `-r other.txt` reads that list too. It reads
only what is installed: no index.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip carries the same parser
    from pip._vendor import tomli as tomllib
try:
    from packaging.requirements import InvalidRequirement, Requirement
except ModuleNotFoundError:  # a fresh venv: pip carries packaging
    from pip._vendor.packaging.requirements import InvalidRequirement, Requirement


def unmet(requirements: Path) -> list[str]:
    """What the requirements file asks for that is not installed, one line each (empty: all met)."""
    missing = []
    for line in requirements.read_text(encoding="utf-8").splitlines():
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-e ", "--editable ")):
            missing += _unmet_project(requirements.parent / line.split(None, 1)[1])
        elif line.startswith(("-r ", "--requirement ")):  # another list, named from this one's folder
            missing += unmet(requirements.parent / line.split(None, 1)[1])
        elif line.startswith("-"):
            missing.append(f"{line}: an option this check does not read")
        else:
            missing += _unmet(line)
    return missing


def _unmet(text: str) -> list[str]:
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return [f"{text}: not a requirement this check reads"]
    if requirement.marker and not requirement.marker.evaluate():
        return []
    try:
        version = metadata.version(requirement.name)
    except metadata.PackageNotFoundError:
        return [f"{text}: not installed"]
    if not requirement.specifier.contains(version, prereleases=True):
        return [f"{text}: {version} is installed"]
    return []


def _unmet_project(folder: Path) -> list[str]:
    meta = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    name = meta["name"]
    try:
        installed = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return [f"-e {folder}: {name} not installed"]
    direct = json.loads(installed.read_text("direct_url.json") or "{}")
    if installed.version != meta["version"] or not direct.get("dir_info", {}).get("editable") \
            or direct.get("url") != folder.resolve().as_uri():
        return [f"-e {folder}: {name} {installed.version} is installed, not editable from this folder"]
    return [item for dependency in meta.get("dependencies", []) for item in _unmet(dependency)]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: requirements_met.py REQUIREMENTS", file=sys.stderr)
        return 2
    missing = unmet(Path(argv[0]))
    for item in missing:
        print(f"to install: {item}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
