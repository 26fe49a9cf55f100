"""Check every upstream reference on the site against a kubernetes checkout at the tag you mean to teach.

    git clone --depth 1 --branch v1.29.4 https://github.com/kubernetes/kubernetes ../kubernetes
    make check-upstream KUBERNETES=../kubernetes TAG=v1.29.4

Reads each `[[path/file.go:Symbol]]` and `[[path/dir/]]` on the pages (docs/**/*.md and the labs,
labs/src/*.py) and looks for it in the checkout at the tag (default: `extra.upstream_tag` in
mkdocs.yml), through git, so the checkout's working tree does not matter. Prints, page by page,
the files that moved (a file of the same name elsewhere), the files and folders that vanished, and
the symbols not found where the page says (with where they are now, when found elsewhere). A
symbol is a Go func, type, var or const (`NewMainKubelet`), a method on a type (`Kubelet.syncLoop`:
`func (kl *Kubelet) syncLoop(...)`), or a field or interface method of a type (`Manager.Admit`).
Exit status 0 when every reference is found, 1 when some are not, 2 when the checkout is unusable.
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
    r"(?P<path>(?:pkg|cmd|staging|plugin|test)/(?:[A-Za-z0-9_.-]+/)*(?:[A-Za-z0-9_.-]+\.go|))"
    r"(?::(?P<symbol>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?))?"
    r"(?:\|(?P<label>[^|\]`]+))?"
)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def outside_code(markdown: str) -> str:
    """The text between fenced code blocks (the hook makes links there only)."""
    return FENCE.sub("", markdown)

CLONE = "git clone --depth 1 --branch {tag} https://github.com/kubernetes/kubernetes"


class CheckoutError(Exception):
    """The checkout cannot be read at the tag."""


@dataclass(frozen=True)
class Ref:
    path: str
    symbol: str | None


def page_refs(root: Path) -> dict[str, list[Ref]]:
    """Every upstream reference on every page, in order, by page (relative path); pages without any left out."""
    pages = sorted((root / "docs").rglob("*.md")) + sorted((root / "labs" / "src").glob("*.py"))
    found: dict[str, list[Ref]] = {}
    for page in pages:
        refs: list[Ref] = []
        for match in UPSTREAM_REF.finditer(outside_code(page.read_text(encoding="utf-8"))):
            valid = VALID_REF.fullmatch(match.group(1).strip())
            if valid:  # a malformed reference fails the site build; nothing to look up
                refs.append(Ref(valid["path"], valid["symbol"]))
        if refs:
            found[page.relative_to(root).as_posix()] = refs
    return found


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


def problems(ref: Ref, checkout: Checkout) -> list[tuple[str, str]]:
    """What is wrong with one reference at the tag, as (kind, detail) pairs; none when it is found."""
    path = ref.path
    if path.endswith("/"):
        return [] if path.rstrip("/") in checkout.folders else [("vanished", path)]
    if path not in checkout.files:
        candidates = checkout.same_name(path)
        if ref.symbol:
            candidates = [c for c in candidates if defines(checkout.text(c), ref.symbol)] or candidates
        if candidates:
            return [("moved", f"{path} -> {' or '.join(candidates)}")]
        elsewhere = checkout.defining(ref.symbol) if ref.symbol else []
        return [("vanished", path + (f" ({ref.symbol} now in {', '.join(elsewhere)})" if elsewhere else ""))]
    if ref.symbol and not defines(checkout.text(path), ref.symbol):
        elsewhere = checkout.defining(ref.symbol)
        where = f" (now in {', '.join(elsewhere)})" if elsewhere else ""
        return [("not found", f"{ref.symbol} in {path}{where}")]
    return []


def report(root: Path, checkout: Checkout) -> tuple[list[str], int]:
    """The report's lines, page by page, and the number of references with a problem."""
    lines, bad, seen, total = [], 0, {}, 0
    pages = page_refs(root)
    for page, refs in pages.items():
        found = []
        for ref in dict.fromkeys(refs):
            total += 1
            if ref not in seen:
                seen[ref] = problems(ref, checkout)
            found += seen[ref]
            bad += bool(seen[ref])
        if found:
            lines.append(page)
            lines += [f"  {kind:<10} {detail}" for kind, detail in found]
    verdict = "all found" if not bad else f"{bad} not found as written"
    lines.append(f"{total} references on {len(pages)} pages checked against {checkout.tag} in {checkout.folder}: {verdict}")
    return lines, bad


def mkdocs_tag(root: Path) -> str:
    import yaml

    config = yaml.load((root / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)  # no !!python tags
    return config["extra"]["upstream_tag"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubernetes", required=True, help="a git checkout of kubernetes/kubernetes")
    parser.add_argument("--tag", help="the tag to check against (default: extra.upstream_tag in mkdocs.yml)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the course folder (default: this one)")
    args = parser.parse_args(argv)
    tag = args.tag or mkdocs_tag(args.root)
    if not args.kubernetes:
        print(f"check-upstream: name a kubernetes checkout: KUBERNETES=path (make one with: {CLONE.format(tag=tag)})",
              file=sys.stderr)
        return 2
    try:
        lines, bad = report(args.root, Checkout(Path(args.kubernetes), tag))
    except CheckoutError as err:
        print(f"check-upstream: {err}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
