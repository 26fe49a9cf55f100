"""Check every upstream reference on the site against a kubernetes checkout at the tag you mean to teach.

    git clone --depth 1 --branch v1.29.4 https://github.com/kubernetes/kubernetes ../kubernetes
    make check-upstream KUBERNETES=../kubernetes TAG=v1.29.4

Reads each `[[path/file.go:Symbol]]` and `[[path/dir/]]` on the pages (docs/**/*.md and the labs,
labs/src/*.py) and looks for it in the checkout at the tag (default: `extra.upstream_tag` in
mkdocs.yml), through git, so the checkout's working tree does not matter. Prints one line for each
reference not found as written, as `page:line: kind detail`: a file that moved (the symbol it names
is defined in a file of the same name elsewhere, or the name is the only one of its kind in the
tree: a common name such as helpers.go is never guessed), a file or folder that vanished (with the
rows of docs/changes.md that name it and their pull requests), or a symbol not found in its file
(with where it is now, when found elsewhere). A symbol is a Go func, type, var or const
(`NewMainKubelet`), a method on a type (`Kubelet.syncLoop`: `func (kl *Kubelet) syncLoop(...)`),
or a field or interface method of a type (`Manager.Admit`). A reference pinned to a tag of its own,
`[[v1.27.7:path:Symbol]]` (a note about what that release did), is checked only against that tag.
Exit status 0 when every reference is found, 1 when some are not, 2 when the checkout is unusable;
`make check-upstream` names the status in its last line (make itself exits 2 on any failure).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The site's own reading of a reference, as in hooks/course.py (a test keeps the two the same); copied so
# this command starts at once, without the site's libraries.
UPSTREAM_REF = re.compile(r"\[\[([^\[\]\n]*)\]\]")
VALID_REF = re.compile(
    r"(?:(?P<tag>v\d+\.\d+\.\d+):)?"
    r"(?P<path>(?:pkg|cmd|staging|plugin|test)/(?:[A-Za-z0-9_.-]+/)*(?:[A-Za-z0-9_.-]+\.go|))"
    r"(?::(?P<symbol>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?))?"
    r"(?:\|(?P<label>[^|\]`]+))?"
)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


CHANGES = "docs/changes.md"  # the page whose table rows name what moved, each with its pull request
PATH_IN_TEXT = re.compile(r"`((?:pkg|cmd|staging|plugin|test)/[^`\s]*)`|\[\[(?:v[\d.]+:)?([^\]:|]+)")
PULL = re.compile(r"#(\d{4,})")
COMMON = 2  # a file name held by this many files of the tree is never taken for where a file moved


def outside_code(markdown: str) -> str:
    """The text between fenced code blocks (the hook makes links there only), each block left as its line breaks."""
    return FENCE.sub(lambda fence: "\n" * fence.group(0).count("\n"), markdown)

CLONE = "git clone --depth 1 --branch {tag} https://github.com/kubernetes/kubernetes"


class CheckoutError(Exception):
    """The checkout cannot be read at the tag."""


@dataclass(frozen=True)
class Ref:
    path: str
    symbol: str | None
    tag: str | None = None  # pinned: checked against this tag alone


def page_refs(root: Path) -> dict[str, list[tuple[int, Ref]]]:
    """Every upstream reference on every page with its line, in order, by page (relative path); pages without any left out."""
    pages = sorted((root / "docs").rglob("*.md")) + sorted((root / "labs" / "src").glob("*.py"))
    found: dict[str, list[tuple[int, Ref]]] = {}
    for page in pages:
        text = outside_code(page.read_text(encoding="utf-8"))
        refs = []
        for match in UPSTREAM_REF.finditer(text):
            valid = VALID_REF.fullmatch(match.group(1).strip())
            if valid:  # a malformed reference fails the site build; nothing to look up
                refs.append((text.count("\n", 0, match.start()) + 1, Ref(valid["path"], valid["symbol"], valid["tag"])))
        if refs:
            found[page.relative_to(root).as_posix()] = refs
    return found


def change_rows(root: Path) -> list[tuple[int, set[str], list[str]]]:
    """The table rows of the changes page: each row's line, the upstream paths it names, its pull request numbers."""
    page = root / CHANGES
    rows = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines() if page.exists() else [], 1):
        if line.startswith("| v"):
            paths = {(a or b).strip() for a, b in PATH_IN_TEXT.findall(line)}
            rows.append((number, paths, PULL.findall(line)))
    return rows


def _within(inner: str, outer: str) -> bool:
    """Whether path `inner` is `outer` or inside the folder `outer` (written with or without its last slash)."""
    outer = outer.rstrip("/")
    return inner.rstrip("/") == outer or inner.startswith(outer + "/")


def where_it_went(path: str, rows, repo: str) -> str:
    """The changes page's rows that name `path`, a folder holding it or a path inside it, with their pull requests."""
    hits = [(line, pulls) for line, paths, pulls in rows if any(_within(path, p) or _within(p, path) for p in paths)]
    return "; ".join(f"see {CHANGES}:{line}" + "".join(f", {repo}/pull/{n}" for n in pulls) for line, pulls in hits)


class Checkout:
    """A kubernetes git repository read at one tag: its file list and, on demand, a file's text."""

    def __init__(self, folder: Path, tag: str):
        self.folder, self.tag = Path(folder), tag
        if not (self.folder / ".git").exists() and not (self.folder / "HEAD").exists():
            raise CheckoutError(f"{folder}: not a git checkout; make one with: {CLONE.format(tag=tag)}")
        if self._git("rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}", check=False) is None:
            raise CheckoutError(f"{folder}: has no tag {tag}; make a checkout of it with: {CLONE.format(tag=tag)}")
        listing = self._git("ls-tree", "-r", "--name-only", "-z", tag)
        self.files = set(filter(None, listing.split("\0")))
        self.folders = {name.rsplit("/", 1)[0] for name in self.files if "/" in name}
        self.folders |= {parent for folder_ in list(self.folders) for parent in _parents(folder_)}
        self._texts: dict[str, str] = {}

    def _git(self, *args: str, check: bool = True) -> str | None:
        result = subprocess.run(["git", "-C", str(self.folder), *args], capture_output=True, text=True)
        if result.returncode != 0:
            if check:
                raise CheckoutError(f"{self.folder}: git {args[0]} failed: {result.stderr.strip()}")
            return None
        return result.stdout

    def text(self, path: str) -> str:
        if path not in self._texts:
            self._texts[path] = self._git("show", f"{self.tag}:{path}") or ""
        return self._texts[path]

    def same_name(self, path: str) -> list[str]:
        """The tag's files with the same name as `path`, outside vendor/."""
        name = path.rsplit("/", 1)[-1]
        return sorted(f for f in self.files if f.rsplit("/", 1)[-1] == name and not f.startswith("vendor/"))

    def moved_to(self, ref: Ref) -> list[str]:
        """Where a file not at its path went: the same-name files that define its symbol, or the one file of a rare name."""
        candidates = self.same_name(ref.path)
        if ref.symbol:
            return [c for c in candidates if defines(self.text(c), ref.symbol)]
        return candidates if len(candidates) < COMMON else []

    def defining(self, symbol: str) -> list[str]:
        """The tag's Go files (outside vendor/) that define `symbol`, found with git grep, then checked."""
        name = symbol.rsplit(".", 1)[-1]
        out = self._git("grep", "-l", "-w", "-F", name, self.tag, "--", "*.go", ":!vendor", check=False) or ""
        paths = [line.split(":", 1)[1] for line in out.splitlines() if ":" in line]
        return sorted(p for p in paths if not p.endswith("_test.go") and defines(self.text(p), symbol))


def _parents(folder: str) -> list[str]:
    parts = folder.split("/")
    return ["/".join(parts[:n]) for n in range(1, len(parts))]


def _blocks(source: str, keyword: str) -> list[str]:
    """The bodies of the grouped declarations `keyword ( ... )` at the top level of a Go file."""
    return re.findall(rf"^{keyword}\s*\((.*?)^\)", source, re.M | re.S)


def defines(source: str, symbol: str) -> bool:
    """Whether Go source declares `symbol`: Name (func, type, var, const) or Type.Name (method, field)."""
    if "." in symbol:
        owner, name = symbol.split(".")
        receiver = rf"\(\s*(?:\w+\s+)?\*?\s*{owner}(?:\[[^\]]*\])?\s*\)"
        if re.search(rf"^func\s*{receiver}\s*{name}\s*[\[(]", source, re.M):
            return True
        bodies = re.findall(rf"^type\s+{owner}(?:\[[^\]]*\])?\s+(?:struct|interface)\s*\{{(.*?)^\}}", source, re.M | re.S)
        bodies += [m for block in _blocks(source, "type")
                   for m in re.findall(rf"^\s*{owner}\s+(?:struct|interface)\s*\{{(.*?)^\s*\}}", block, re.M | re.S)]
        return any(re.search(rf"^\s*(?:\w+\s*,\s*)*{name}\b", body, re.M) for body in bodies)
    name = symbol
    if re.search(rf"^func\s+{name}\s*[\[(]", source, re.M):
        return True
    if re.search(rf"^(?:type|var|const)\s+{name}\b", source, re.M):
        return True
    return any(re.search(rf"^\s*(?:\w+\s*,\s*)*{name}\b", block, re.M)
               for keyword in ("type", "var", "const") for block in _blocks(source, keyword))


def _listed(paths: list[str], most: int = 3) -> str:
    return ", ".join(paths[:most]) + (f" and {len(paths) - most} more" if len(paths) > most else "")


def problem(ref: Ref, checkout: Checkout, rows, repo: str) -> str | None:
    """What is wrong with one reference at the tag, as `kind detail`; None when it is found."""
    path = ref.path
    if path.endswith("/"):
        found = path.rstrip("/") in checkout.folders
    else:
        found = path in checkout.files
        moved = [] if found else checkout.moved_to(ref)
        if moved:
            return f"moved {path} -> {' or '.join(moved)}"
        if found and ref.symbol and not defines(checkout.text(path), ref.symbol):
            elsewhere = checkout.defining(ref.symbol)
            return f"not found {ref.symbol} in {path}" + (f" (now in {_listed(elsewhere)})" if elsewhere else "")
    if found:
        return None
    elsewhere = checkout.defining(ref.symbol) if ref.symbol else []
    notes = [f"{ref.symbol} now in {_listed(elsewhere)}"] if elsewhere else []
    notes += [went] if (went := where_it_went(path, rows, repo)) else []
    return f"vanished {path}" + (f" ({'; '.join(notes)})" if notes else "")


def report(root: Path, checkout: Checkout, repo: str = "https://github.com/kubernetes/kubernetes") -> tuple[list[str], int]:
    """The report's lines, one for each reference not found as written (`page:line: ...`), then a summary; and their count."""
    lines, seen, total, pinned = [], {}, 0, 0
    pages, rows = page_refs(root), change_rows(root)
    for page, refs in pages.items():
        for line, ref in refs:
            total += 1
            if ref.tag and ref.tag != checkout.tag:
                pinned += 1
                continue
            if ref not in seen:
                seen[ref] = problem(ref, checkout, rows, repo)
            if seen[ref]:
                lines.append(f"{page}:{line}: {seen[ref]}")
    bad = len(lines)
    verdict = "all found" if not bad else f"{bad} not found as written"
    kept = f" ({pinned} pinned to another tag, left as they are)" if pinned else ""
    lines.append(f"{total} references on {len(pages)} pages checked against {checkout.tag} in {checkout.folder}{kept}: "
                 f"{verdict}")
    return lines, bad


def mkdocs_extra(root: Path) -> dict:
    """mkdocs.yml's `extra` (read without its !!python tags), empty when the course has no mkdocs.yml."""
    import yaml

    if not (root / "mkdocs.yml").exists():
        return {}
    return yaml.load((root / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader).get("extra") or {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubernetes", required=True, help="a git checkout of kubernetes/kubernetes")
    parser.add_argument("--tag", help="the tag to check against (default: extra.upstream_tag in mkdocs.yml)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the course folder (default: this one)")
    args = parser.parse_args(argv)
    extra = mkdocs_extra(args.root)
    tag = args.tag or extra.get("upstream_tag")
    if not tag:
        print(f"check-upstream: {args.root / 'mkdocs.yml'}: no extra.upstream_tag; name one with TAG=", file=sys.stderr)
        return 2
    if not args.kubernetes:
        print(f"check-upstream: name a kubernetes checkout: KUBERNETES=path (make one with: {CLONE.format(tag=tag)})",
              file=sys.stderr)
        return 2
    try:
        lines, bad = report(args.root, Checkout(Path(args.kubernetes), tag),
                            extra.get("upstream_repo", "https://github.com/kubernetes/kubernetes").rstrip("/"))
    except CheckoutError as err:
        print(f"check-upstream: {err}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
