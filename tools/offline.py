"""Build the offline folder: everything a room with no network needs to read the course and run the labs.

    python tools/offline.py [--out offline] [--requirements requirements-learner.txt] [--solutions true|false]
                            [--platform win_amd64 ...] [--python-version 3.12 ...]

The folder holds:

- `wheels/`: a wheel of the course's package, a wheel (or sdist) of every requirement a learner needs
  (requirements-learner.txt: the labs, not the site's or the tests' tools) and of everything they
  depend on, and the build tools `pip install -e .` needs (setuptools, wheel, pip);
- `requirements.txt`: what to install from `wheels/` (that list, the package by name);
- `site/`: the built course, with links to files (`page.html`), so it opens from disk, search included
  (Material's offline plugin, its worker shim served from the site), with no Codespaces or Binder links;
- `course/`: a copy of the course (its files under version control), whose `labs/` are the learner
  notebooks and `examples/` the manifests they read; in the learner edition without what holds the
  solutions (SOLUTION_HOLDERS), and checked to hold none of them;
- `INSTALL.md`: the one page a learner follows, on Linux, macOS or Windows, with or without make,
  naming the Python versions and systems the wheels were made for.

The wheels fit the Python and system this runs on. For a room of other machines, name their
platforms and Python versions: each pair gets its own binary wheels (`--platform win_amd64
--platform macosx_11_0_arm64 --python-version 3.12`).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip carries the same parser
    from pip._vendor import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
INSTALL_PAGE = Path(__file__).with_name("offline-install.md")
# What holds the labs' solutions, left out of the learner edition's course/: the lab sources, the tests (which run
# them), and the instructor notes (which give the answers).
SOLUTION_HOLDERS = ("labs/src/", "tests/", "docs/instructor/")
SHIM = "assets/vendor/iframe-worker-shim.js"  # in docs/: lets the search worker start from file://
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
TAG = re.compile(r"<[^>]*>")


def project(root: Path) -> dict:
    """The course's pyproject.toml: its [project] and [build-system] tables."""
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))


def kit_requirements(requirements: Path, root: Path) -> str:
    """The requirement list for the folder: the course's, with the package itself (`-e .`) named, other lists inlined."""
    meta = project(root)["project"]
    lines = []
    for line in requirements.read_text(encoding="utf-8").splitlines():
        if re.fullmatch(r"\s*(-e|--editable)\s+\.\s*|\s*\.\s*", line):
            line = f"{meta['name']}=={meta['version']}"
        elif re.match(r"\s*(-r|--requirement)\s", line):
            line = kit_requirements(requirements.parent / line.split(None, 1)[1].strip(), root).rstrip("\n")
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
    """Build the course into `out` with links to files and Material's offline search, so it reads from disk; with or
    without lab solutions."""
    from material.plugins.offline.plugin import OfflinePlugin
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    here = os.getcwd()
    os.chdir(root)  # the snippets the pages include are read from the course folder
    try:
        config = load_config(str(root / "mkdocs.yml"), site_dir=str(Path(here, out)), use_directory_urls=False,
                             strict=True)
        if lab_solutions is not None:
            config["extra"]["lab_solutions"] = lab_solutions
        # The plugin would load its worker shim from a CDN; named here (in docs/, like Mermaid) it loads from the site.
        config["extra"]["polyfills"] = [SHIM]
        offline = OfflinePlugin()
        offline.load_config({})
        config["plugins"]["material/offline"] = offline
        build(config)
    finally:
        os.chdir(here)


def with_solutions(root: Path, chosen: bool | None) -> bool:
    """The edition the folder is made in: `chosen`, else mkdocs.yml's extra.lab_solutions (true unless false)."""
    if chosen is not None:
        return chosen
    import yaml

    config = yaml.load((root / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)  # no !!python tags
    return str((config.get("extra") or {}).get("lab_solutions", "true")).lower() != "false"


def solution_blocks(sources: list[Path]) -> list[tuple[str, str]]:
    """Every solution of the lab sources, as (where, its code with whitespace collapsed)."""
    blocks = []
    for source in sources:
        inside = None
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip() == BEGIN:
                inside, start = [], number
            elif line.strip() == END and inside is not None:
                blocks.append((f"{source.name}:{start}", " ".join(" ".join(inside).split())))
                inside = None
            elif inside is not None:
                inside.append(line)
    return [(where, code) for where, code in blocks if code]


def readable_text(name: str, data: bytes) -> str:
    """What a file says, as a search of it would read it: the strings of JSON (a notebook, the search index), HTML
    without its tags and entities (code highlighted in spans), whitespace collapsed; empty for binary files."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    texts = [text]
    try:
        texts.append("\n".join(_strings(json.loads(text.split("=", 1)[1] if name.endswith(".js") else text))))
    except (ValueError, IndexError, RecursionError):
        pass
    texts += [html.unescape(TAG.sub("", t)) for t in list(texts) if "<" in t]
    return " ".join(" ".join(texts).split())


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [s for item in items for s in _strings(item)]


def solutions_in(folder: Path, sources: list[Path], package: str = "mini_kubelet") -> list[str]:
    """Each solution of the lab sources found in a file of `folder`, as `where: file`; empty when it holds none.

    Archives are read inside too, except other projects' wheels (from the package index: none of the course's text).
    """
    blocks, found = solution_blocks(sources), []

    def look(name: str, data: bytes) -> None:
        text = readable_text(name, data)
        found.extend(f"{where}: {name}" for where, code in blocks if code in text)

    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.relative_to(folder).as_posix()
        if path.suffix in (".whl", ".zip"):
            if path.name.replace("-", "_").startswith(package + "_") or path.suffix == ".zip":
                with zipfile.ZipFile(path) as archive:
                    for member in archive.namelist():
                        look(f"{name}/{member}", archive.read(member))
        else:
            look(name, path.read_bytes())
    return found


def copy_course(root: Path, target: Path, skip: Path | None = None, leave_out: tuple[str, ...] = ()) -> None:
    """Copy the course's files (those under version control or not ignored, as they are now) into `target`.

    Without git (a course downloaded as an archive), everything but what the course makes itself.
    Nothing under `skip` (the folder being made, when it is inside the course), nor under the folders `leave_out`
    names (relative, ending in /).
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
        if name.startswith(leave_out):
            continue
        if source.is_file() and not (skip and source.resolve().is_relative_to(skip)):
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def build_folder(out: Path, *, root: Path = ROOT, requirements: Path | None = None, solutions: bool | None = None,
                 platforms: list[str] = (), pythons: list[str] = ()) -> Path:
    """Make the whole offline folder at `out` (replacing what an earlier run left there); return it."""
    out = Path(out).resolve()
    if out.exists():
        if not (out / "INSTALL.md").exists():
            raise SystemExit(f"{out}: exists and is not an offline folder; choose another --out")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    listed = out / "requirements.txt"
    listed.write_text(kit_requirements(requirements or root / "requirements-learner.txt", root), encoding="utf-8")
    solutions = with_solutions(root, solutions)
    copy_course(root, out / "course", skip=out, leave_out=() if solutions else SOLUTION_HOLDERS)
    # The wheels (pip, in processes of its own) are fetched while the site builds here: every path is absolute.
    with ThreadPoolExecutor(max_workers=1) as pool:
        # The package's wheel is built from the copy, so the course's own folder gains no build/ left-overs.
        wheels = pool.submit(build_wheels, out / "course", listed, out / "wheels", list(platforms), list(pythons))
        build_site(root, out / "site", lab_solutions=solutions)
        wheels.result()
    for made in ("build", *(p.name for p in (out / "course").glob("*.egg-info"))):
        shutil.rmtree(out / "course" / made, ignore_errors=True)
    if not solutions:
        left = solutions_in(out, sorted((root / "labs" / "src").glob("*.py")))
        if left:
            raise SystemExit(f"{out}: the learner edition holds solutions: {'; '.join(left[:5])}")
    page = INSTALL_PAGE.read_text(encoding="utf-8").replace("{{ made_for }}", made_for(out / "wheels"))
    (out / "INSTALL.md").write_text(page, encoding="utf-8")
    return out


LINUX_ALIASES = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def platform_of(tag: str) -> tuple[str, str, tuple[str, tuple[int, int]] | None]:
    """A wheel's platform tag as (system, machine, the oldest system release it runs on, when it says)."""
    for alias, version in LINUX_ALIASES.items():
        if tag.startswith(alias + "_"):
            return "Linux", tag[len(alias) + 1:], ("glibc", version)
    if found := re.fullmatch(r"(many|musl)linux_(\d+)_(\d+)_(\w+)", tag):
        libc = "glibc" if found[1] == "many" else "musl"
        return f"Linux ({libc})" if libc == "musl" else "Linux", found[4], (libc, (int(found[2]), int(found[3])))
    if found := re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", tag):
        return "macOS", found[3], ("macOS", (int(found[1]), int(found[2])))
    if tag.startswith("win"):
        return "Windows", {"win32": "x86"}.get(tag, tag.removeprefix("win_")), None
    return "Linux", tag.removeprefix("linux_"), None


def made_for(wheels: Path) -> str:
    """The Pythons and systems the folder's binary wheels were made for, as INSTALL.md names them."""
    systems: dict[tuple[str, str], dict] = {}
    for wheel in wheels.glob("*.whl"):
        _, abi, tags = wheel.stem.split("-")[-3:]
        if tags == "any":
            continue
        platforms = [platform_of(tag) for tag in tags.split(".")]
        entry = systems.setdefault(platforms[0][:2], {"pythons": set(), "floor": None})
        if version := re.fullmatch(r"cp(\d)(\d+)", abi):
            entry["pythons"].add((int(version[1]), int(version[2])))
        floors = [floor for *_, floor in platforms if floor]
        if floors:  # a wheel runs from its oldest tag's release; the folder, from the newest of those
            oldest = min(floors, key=lambda floor: floor[1])
            entry["floor"] = max(entry["floor"] or oldest, oldest, key=lambda floor: floor[1])
    if not systems:
        return "any system: every wheel here is pure Python"
    said = []
    for (system, machine), entry in sorted(systems.items()):
        pythons = " and ".join(f"{major}.{minor}" for major, minor in sorted(entry["pythons"])) or "3"
        floor = entry["floor"]
        since = f", {floor[0]} {floor[1][0]}.{floor[1][1]} or newer" if floor and floor[0] != "macOS" else \
            f" {floor[1][0]}.{floor[1][1]} or newer" if floor else ""
        said.append(f"Python {pythons} on {system}{since} ({machine})")
    return "; ".join(said)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="offline", help="the folder to make (default: offline)")
    parser.add_argument("--requirements", type=Path,
                        help="the requirement list (default: requirements-learner.txt, what learners need)")
    parser.add_argument("--solutions", choices=["true", "false"],
                        help="labs on the site with solutions or without (default: extra.lab_solutions in mkdocs.yml)")
    parser.add_argument("--platform", nargs="*", default=[], help="other platforms to fetch wheels for, e.g. win_amd64")
    parser.add_argument("--python-version", nargs="*", default=[], help="their Python versions, e.g. 3.12")
    args = parser.parse_args(argv)
    solutions = None if args.solutions is None else args.solutions == "true"
    out = build_folder(Path(args.out), requirements=args.requirements, solutions=solutions,
                       platforms=args.platform, pythons=args.python_version)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 1e6
    print(f"{out}: ready ({size:.0f} MB). Carry the whole folder; learners follow its INSTALL.md.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
