"""Build the offline folder: everything a room with no network needs to read the course and run the labs.

    python tools/offline.py [--out offline] [--requirements requirements.txt] [--solutions true|false]
                            [--platform win_amd64 ...] [--python-version 3.12 ...]

The folder holds:

- `wheels/`: a wheel of the course's package, a wheel (or sdist) of every requirement and of
  everything they depend on, and the build tools `pip install -e .` needs (setuptools, wheel, pip);
- `requirements.txt`: what to install from `wheels/` (the course's list, the package by name);
- `site/`: the built course, with links to files (`page.html`), so it opens from disk too;
- `course/`: a copy of the course (its files under version control), whose `labs/` are the learner
  notebooks and `examples/` the manifests they read;
- `INSTALL.md`: the one page a learner follows, on Linux, macOS or Windows, with or without make.

The wheels fit the Python and system this runs on. For a room of other machines, name their
platforms and Python versions: each pair gets its own binary wheels (`--platform win_amd64
--platform macosx_11_0_arm64 --python-version 3.12`).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip carries the same parser
    from pip._vendor import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
INSTALL_PAGE = Path(__file__).with_name("offline-install.md")


def project(root: Path) -> dict:
    """The course's pyproject.toml: its [project] and [build-system] tables."""
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))


def kit_requirements(requirements: Path, root: Path) -> str:
    """The requirement list for the folder: the course's, with the package itself (`-e .`) named."""
    meta = project(root)["project"]
    lines = []
    for line in requirements.read_text(encoding="utf-8").splitlines():
        if re.fullmatch(r"\s*(-e|--editable)\s+\.\s*|\s*\.\s*", line):
            line = f"{meta['name']}=={meta['version']}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def build_wheels(root: Path, requirements: Path, wheels: Path, platforms: list[str], pythons: list[str]) -> None:
    """The package's wheel, then every requirement and build tool, for this machine and each platform named."""
    wheels.mkdir(parents=True, exist_ok=True)
    pip("wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), str(root))
    build = project(root)["build-system"]["requires"]  # pure Python: the same wheels on every platform
    download(requirements, wheels, [*build, "wheel", "pip"], platforms, pythons)


def download(requirements: Path, wheels: Path, extra: list[str] = (), platforms: list[str] = (),
             pythons: list[str] = ()) -> None:
    """Fetch the requirements (and `extra`) into `wheels`: for this machine, then binary wheels for each platform named."""
    common = ["download", "--quiet", "--dest", str(wheels), "--find-links", str(wheels), "-r", str(requirements)]
    pip(*common, *extra)
    for platform in platforms:
        for version in pythons or [f"{sys.version_info.major}.{sys.version_info.minor}"]:
            pip(*common, "--only-binary=:all:", "--platform", platform, "--python-version", version,
                "--implementation", "cp")


def build_site(root: Path, out: Path, *, lab_solutions: bool | None = None) -> None:
    """Build the course into `out` with links to files, so it reads from disk; with or without lab solutions."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    here = os.getcwd()
    os.chdir(root)  # the snippets the pages include are read from the course folder
    try:
        config = load_config(str(root / "mkdocs.yml"), site_dir=str(Path(here, out)), use_directory_urls=False,
                             strict=True)
        if lab_solutions is not None:
            config["extra"]["lab_solutions"] = lab_solutions
        build(config)
    finally:
        os.chdir(here)


def copy_course(root: Path, target: Path, skip: Path | None = None) -> None:
    """Copy the course's files (those under version control or not ignored, as they are now) into `target`.

    Without git (a course downloaded as an archive), everything but what the course makes itself.
    Nothing under `skip` (the folder being made, when it is inside the course).
    """
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                                capture_output=True, check=True).stdout.decode()
        names = filter(None, listed.split("\0"))
    except (OSError, subprocess.CalledProcessError):
        made = {".git", ".venv", ".cache", "site", "offline", "build", "__pycache__", ".pytest_cache", ".hypothesis"}
        names = (p.relative_to(root).as_posix() for p in sorted(root.rglob("*"))
                 if p.is_file() and not made & set(p.relative_to(root).parts))
    for name in names:
        source = root / name
        if source.is_file() and not (skip and source.resolve().is_relative_to(skip)):
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def build_folder(out: Path, *, root: Path = ROOT, requirements: Path | None = None, lab_solutions: bool | None = None,
                 platforms: list[str] = (), pythons: list[str] = ()) -> Path:
    """Make the whole offline folder at `out` (replacing what an earlier run left there); return it."""
    out = Path(out).resolve()
    if out.exists():
        if not (out / "INSTALL.md").exists():
            raise SystemExit(f"{out}: exists and is not an offline folder; choose another --out")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    listed = out / "requirements.txt"
    listed.write_text(kit_requirements(requirements or root / "requirements.txt", root), encoding="utf-8")
    copy_course(root, out / "course", skip=out)
    # The wheels (pip, in processes of its own) are fetched while the site builds here: every path is absolute.
    with ThreadPoolExecutor(max_workers=1) as pool:
        # The package's wheel is built from the copy, so the course's own folder gains no build/ left-overs.
        wheels = pool.submit(build_wheels, out / "course", listed, out / "wheels", list(platforms), list(pythons))
        build_site(root, out / "site", lab_solutions=lab_solutions)
        wheels.result()
    for made in ("build", *(p.name for p in (out / "course").glob("*.egg-info"))):
        shutil.rmtree(out / "course" / made, ignore_errors=True)
    shutil.copy2(INSTALL_PAGE, out / "INSTALL.md")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="offline", help="the folder to make (default: offline)")
    parser.add_argument("--requirements", type=Path, help="the requirement list (default: requirements.txt)")
    parser.add_argument("--solutions", choices=["true", "false"],
                        help="labs on the site with solutions or without (default: extra.lab_solutions in mkdocs.yml)")
    parser.add_argument("--platform", nargs="*", default=[], help="other platforms to fetch wheels for, e.g. win_amd64")
    parser.add_argument("--python-version", nargs="*", default=[], help="their Python versions, e.g. 3.12")
    args = parser.parse_args(argv)
    solutions = None if args.solutions is None else args.solutions == "true"
    out = build_folder(Path(args.out), requirements=args.requirements, lab_solutions=solutions,
                       platforms=args.platform, pythons=args.python_version)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 1e6
    print(f"{out}: ready ({size:.0f} MB). Carry the whole folder; learners follow its INSTALL.md.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
