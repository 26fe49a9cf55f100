"""MkDocs hooks for the course: upstream links, command output on pages, and the lab pages.

- `[[pkg/kubelet/kubelet.go:NewMainKubelet]]` becomes a link to that file at the upstream tag
  written once in mkdocs.yml (`extra.upstream_tag`); `[[pkg/kubelet/eviction/]]` links a folder;
  `[[pkg/kubelet/kubelet.go:NewMainKubelet|NewMainKubelet]]` sets a shorter link text.
- `<!-- run: mini-kubelet show examples/pods/web.yaml -->` becomes the command and its real
  output, run at build time (`<!-- run exit=2: ... -->` when the example shows an error).
- `<!-- plot: examples/scenarios/NAME.yaml -->` becomes the figure `mini-kubelet run --plot` draws
  for that scenario, written into the site at build time (no image is committed).
- `{{ upstream_tag }}` becomes the tag itself, for prose that names it.
- `{{ repo_url }}` becomes the repository address from mkdocs.yml, so a fork's pages follow it,
  and `{{ repo_dir }}` the folder a clone of it makes.
- Each lab source `labs/src/NN-name.py` becomes the page `labs/NN-name/` (executed by
  mkdocs-jupyter), and the learner notebook `labs/NN-name.ipynb` is published for download.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import CombinedEvent, event_priority
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
LABS = ROOT / "labs"

# A reference: a path in kubernetes/kubernetes ending in .go (optionally :Symbol) or in /.
UPSTREAM_REF = re.compile(r"\[\[([^\[\]\n]*)\]\]")
VALID_REF = re.compile(
    r"(?P<path>(?:pkg|cmd|staging|plugin|test)/(?:[A-Za-z0-9_.-]+/)*(?:[A-Za-z0-9_.-]+\.go|))"
    r"(?::(?P<symbol>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?))?"
    r"(?:\|(?P<label>[^|\]`]+))?"  # optional short link text, for tables and repeated mentions
)
RUN_MARKER = re.compile(r"^<!-- run(?: exit=(\d+))?: (.+?) -->$", re.M)
PLOT_MARKER = re.compile(r"^<!-- plot: (examples/scenarios/[\w.-]+\.yaml) -->$", re.M)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def upstream_link(ref: str, repo: str, tag: str) -> str:
    """The Markdown link for one `[[path:Symbol]]` reference; PluginError if it is malformed."""
    match = VALID_REF.fullmatch(ref.strip())
    if not match or "/./" in ref or "/../" in ref or ref.strip().endswith(".go/"):
        raise PluginError(f"malformed upstream reference [[{ref}]]: write [[pkg/.../file.go:Function]] or [[pkg/.../dir/]]")
    path, symbol, label = match["path"], match["symbol"], match["label"]
    if not path.endswith((".go", "/")):
        raise PluginError(f"malformed upstream reference [[{ref}]]: a path ends in .go or /")
    if symbol and path.endswith("/"):
        raise PluginError(f"malformed upstream reference [[{ref}]]: a folder has no symbol")
    kind = "tree" if path.endswith("/") else "blob"
    url = f"{repo}/{kind}/{tag}/{path.rstrip('/')}"
    text = f"`{label.strip()}`" if label else f"`{symbol}` in `{path}`" if symbol else f"`{path}`"
    return f'[{text}]({url} "{path} at Kubernetes {tag}"){{ .upstream }}'


def _outside_code(markdown: str, transform) -> str:
    """Apply `transform` to the text between fenced code blocks only."""
    parts, last = [], 0
    for fence in FENCE.finditer(markdown):
        parts += [transform(markdown[last : fence.start()]), fence.group(0)]
        last = fence.end()
    return "".join(parts + [transform(markdown[last:])])


def run_example(command: str, expected_exit: int) -> str:
    """Run a `mini-kubelet ...` command from the course root; return a console block of its output."""
    argv = shlex.split(command)
    if argv[0] != "mini-kubelet":
        raise PluginError(f"run marker: only mini-kubelet commands run on pages, not {argv[0]!r}")
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    result = subprocess.run(
        [sys.executable, "-m", "mini_kubelet", *argv[1:]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    if result.returncode != expected_exit:
        raise PluginError(
            f"run marker `{command}` exited {result.returncode}, expected {expected_exit}:\n{result.stderr}"
        )
    output = (result.stdout + result.stderr).rstrip()
    # A plain-text fence: a console lexer would read the output's "#" notes as root prompts.
    return f"```text\n{_wrap_command(command)}\n{output}\n```"


def plot_scenario(scenario: str, page, site_dir: str) -> str:
    """Replay a scenario with `mini-kubelet run --plot` into the built site; return the figure's HTML."""
    name = Path(scenario).stem + ".png"
    target = Path(site_dir) / "assets" / "plots" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)  # --plot keeps an existing file it did not write; this one is the build's
    run_example(f"mini-kubelet run {scenario} --plot {target}", 0)
    depth = page.file.url.count("/")
    src = "../" * depth + f"assets/plots/{name}"
    return (f'<figure class="scenario-plot"><img src="{src}" alt="The replay of {scenario}: signals against '
            f'their thresholds over time, with evictions marked"><figcaption><code>mini-kubelet run {scenario} '
            f'--plot {name}</code>, drawn when this site was built</figcaption></figure>')


def _wrap_command(command: str, width: int = 80) -> str:
    """The command as a reader would type it, continued with backslashes before options that overflow."""
    lines = ["$"]
    for word in re.split(r" (?=--)", command):
        if len(lines[-1]) + 1 + len(word) > width and lines[-1] != "$":
            lines[-1] += " \\"
            lines.append("   ")
        lines[-1] += " " + word
    return "\n".join(lines)


def on_page_markdown(markdown, page, config, files):
    repo, tag = config["extra"]["upstream_repo"], config["extra"]["upstream_tag"]
    repo_url = (config["repo_url"] or "").rstrip("/")
    # Variables apply everywhere, code blocks included (the clone command is in one).
    for name, value in (("repo_url", repo_url), ("upstream_tag", tag), ("repo_dir", repo_url.rsplit("/", 1)[-1])):
        markdown = markdown.replace("{{ %s }}" % name, value)

    def transform(text: str) -> str:
        text = UPSTREAM_REF.sub(lambda m: upstream_link(m.group(1), repo, tag), text)
        text = PLOT_MARKER.sub(lambda m: plot_scenario(m.group(1), page, config["site_dir"]), text)
        return RUN_MARKER.sub(lambda m: run_example(m.group(2), int(m.group(1) or 0)), text)

    return _outside_code(markdown, transform)


@event_priority(100)  # before mkdocs-jupyter turns lab sources into notebook pages
def _add_labs(files, config):
    for source in sorted((LABS / "src").glob("*.py")):
        files.append(File.generated(config, f"labs/{source.name}", abs_src_path=str(source)))
        notebook = LABS / f"{source.stem}.ipynb"
        if notebook.exists():
            files.append(File.generated(config, f"labs/{notebook.name}", abs_src_path=str(notebook)))
    return files


@event_priority(-100)  # after mkdocs-jupyter wrapped them
def _pin_lab_sources(files, config):
    # mkdocs-jupyter's wrapper recomputes abs_src_path from src_dir, which a generated file lacks.
    for file in files:
        inner = getattr(file, "file", None)
        if inner is not None and inner.generated_by and inner.abs_src_path:
            file.abs_src_path = inner.abs_src_path
    return files


on_files = CombinedEvent(_add_labs, _pin_lab_sources)


def _lab_source(page) -> Path | None:
    path = Path(page.file.abs_src_path or "")
    return path if path.parent == LABS / "src" else None


def on_page_content(html, page, config, files):
    source = _lab_source(page)
    if source is None:
        return html
    notebook = f"../{source.stem}.ipynb"
    banner = (
        '<div class="admonition tip lab-download"><p class="admonition-title">Run this lab yourself</p>'
        f'<p>This page shows the lab with its solutions, run when the site was built. '
        f'<a href="{notebook}" download>Download the exercise notebook</a> '
        f'(<code>{source.stem}.ipynb</code>, solutions left for you), or clone the course and run '
        '<code>make lab</code>: see <a href="../../setup/">Set up the labs</a>.</p></div>'
    )
    return banner + html


def on_page_context(context, page, config, nav):
    source = _lab_source(page)
    if source is not None and config.get("repo_url"):
        page.edit_url = f"{config['repo_url'].rstrip('/')}/edit/main/labs/src/{source.name}"
    return context
