"""MkDocs hooks for the course: upstream links, command output on pages, and the lab pages.

- `[[pkg/kubelet/kubelet.go:NewMainKubelet]]` becomes a link to that file at the upstream tag
  written once in mkdocs.yml (`extra.upstream_tag`); `[[pkg/kubelet/eviction/]]` links a folder;
  `[[pkg/kubelet/kubelet.go:NewMainKubelet|NewMainKubelet]]` sets a shorter link text.
  `[[v1.27.7:pkg/kubelet/runonce.go:Kubelet.RunOnce]]` pins one reference to its own tag, for a note
  on what that release did, so that re-pinning the course leaves it as it is.
- `<!-- run: mini-kubelet show examples/pods/web.yaml -->` becomes the command and its real
  output, run at build time (`<!-- run exit=2: ... -->` when the example shows an error).
- `<!-- releases: mini-kubelet explain examples/pods/sidecar.yaml -->` becomes two content tabs, "v1.27"
  and "v1.36", each the command run with that `--kubernetes-version` and its output; the build fails if the
  two answers are the same (a worked example shows both releases only where they differ). `exit=0,1` gives
  each release's exit code, for a Pod that v1.27 admits and v1.36 rejects.
- `<!-- plot: examples/scenarios/NAME.yaml -->` becomes the figure `mini-kubelet run --plot` draws
  for that scenario, written into the site at build time (no image is committed).
- `<!-- fields: lifecycle -->` becomes the reference tables of that scenario format (eviction, lifecycle,
  node), rendered from the readers' own field definitions (mini_kubelet/sim/fields.py).
- `{{ upstream_tag }}` becomes the tag itself, for prose that names it.
- `{{ repo_url }}` becomes the repository address from mkdocs.yml, so a fork's pages follow it,
  and `{{ repo_dir }}` the folder a clone of it makes.
- Each lab source `labs/src/NN-name.py` becomes the page `labs/NN-name/` (executed by
  mkdocs-jupyter), and the learner notebook `labs/NN-name.ipynb` is published for download.
  With `extra.lab_solutions: false` (the learner edition) the page shows that notebook instead. Each lab
  page links Codespaces and Binder, except in a site built for reading from disk (the offline plugin).
- The learner edition leaves out the instructor notes (`instructor/`, which give the answers) and turns links to them
  into plain text; a page's `<!-- solutions edition -->` ... `<!-- learner edition -->` ... `<!-- end edition -->`
  keeps the part for the edition being built (the learner part is optional).
- A malformed `extra.upstream_tag` (not vMAJOR.MINOR.PATCH) fails the build before any page is read.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from html import escape
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import CombinedEvent, event_priority
from mkdocs.structure.files import File
from mkdocs.utils import get_relative_url

from mini_kubelet.labs import notebooks
from mini_kubelet.sim.figure import NARROW as NARROW_PLOT  # inches: the width a phone's column is shown a plot at

PLOTS = "assets/plots"  # where the scenario plots are published in the site

# A reference: a path in kubernetes/kubernetes ending in .go (optionally :Symbol) or in /.
UPSTREAM_REF = re.compile(r"\[\[([^\[\]\n]*)\]\]")
VALID_REF = re.compile(
    r"(?:(?P<tag>v\d+\.\d+\.\d+):)?"  # optional pin to a tag of its own
    r"(?P<path>(?:pkg|cmd|staging|plugin|test)/(?:[A-Za-z0-9_.-]+/)*(?:[A-Za-z0-9_.-]+\.go|))"
    r"(?::(?P<symbol>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?))?"
    r"(?:\|(?P<label>[^|\]`]+))?"  # optional short link text, for tables and repeated mentions
)
RUN_MARKER = re.compile(r"^<!-- run(?: exit=(\d+))?: (.+?) -->$", re.M)
RELEASES_MARKER = re.compile(r"^<!-- releases(?: exit=(\d+(?:,\d+)?))?: (.+?) -->$", re.M)
ANY_COMMAND_MARKER = re.compile(r"^<!-- (?:run|releases)(?: exit=(\d+(?:,\d+)?))?: (.+?) -->$", re.M)  # either kind
COMPARED = ("1.27", "1.36")  # the reference release and the current one, as a releases marker shows them
PLOT_MARKER = re.compile(r"^<!-- plot: (examples/scenarios/[\w.-]+\.yaml) -->$", re.M)
FIELDS_MARKER = re.compile(r"^<!-- fields: (eviction|lifecycle|node) -->$", re.M)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
RELEASE_TAG = re.compile(r"v\d+\.\d+\.\d+")  # what extra.upstream_tag must be: a release, such as v1.27.7
INSTRUCTOR = "instructor/"  # the instructor notes, left out of the learner edition: they give the answers
EDITION_BLOCK = re.compile(r"^[ \t]*<!-- solutions edition -->\n(.*?)(?:^[ \t]*<!-- learner edition -->\n(.*?))?"
                           r"^[ \t]*<!-- end edition -->\n", re.M | re.S)
INSTRUCTOR_LINK = re.compile(r"\[([^\]]+)\]\((?:\.\./)*" + INSTRUCTOR + r"[^)]*\)")


def upstream_link(ref: str, repo: str, tag: str) -> str:
    """The Markdown link for one `[[path:Symbol]]` reference; PluginError if it is malformed."""
    match = VALID_REF.fullmatch(ref.strip())
    if not match or "/./" in ref or "/../" in ref or ref.strip().endswith(".go/"):
        raise PluginError(f"malformed upstream reference [[{ref}]]: write [[pkg/.../file.go:Function]] or [[pkg/.../dir/]]")
    path, symbol, label, tag = match["path"], match["symbol"], match["label"], match["tag"] or tag
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


def stream_commands(commands: list[str], root: Path):
    """Run `mini-kubelet ...` command lines from the course root in one new interpreter; yield each result, in order, as it comes."""
    argvs = []
    for command in commands:
        argv = shlex.split(command)
        if argv[0] != "mini-kubelet":
            raise PluginError(f"run marker: only mini-kubelet commands run on pages, not {argv[0]!r}")
        argvs.append(argv[1:])
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
    with tempfile.TemporaryFile("w+") as errors:  # read only if it fails
        process = subprocess.Popen([sys.executable, "-m", "mini_kubelet.cmd.batch"], cwd=root, env=env,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True)
        _BUILD["processes"].append(process)
        deadline = threading.Timer(600, process.kill)  # a batch that hangs fails the build instead of holding it
        deadline.start()
        try:
            process.stdin.write(json.dumps(argvs))
            process.stdin.close()
            count = 0
            for line in process.stdout:
                count += 1
                yield json.loads(line)
        finally:
            process.stdout.close()  # a reader that stopped early ends the batch
            process.wait()
            deadline.cancel()
            _BUILD["processes"].remove(process)
        if process.returncode != 0 or count != len(argvs):
            errors.seek(0)
            raise PluginError(f"the page commands could not run:\n{errors.read()[-3000:]}")


def run_commands(commands: list[str], root: Path) -> list[dict]:
    """The results of `mini-kubelet ...` command lines run in one new interpreter, in order."""
    return list(stream_commands(commands, root))


def run_batch(commands: dict[str, str], root: Path, saved: Path, figures: dict, results: dict[str, Future]) -> None:
    """Give each command's future (by key) its result as it comes, running only what another build has not run meanwhile.

    Two builds at once (the site and the offline folder, say) share the cache: the second to come waits
    for the first's batch, then reuses its results, which are saved beside the others.
    """
    results = dict(results)  # the build takes each future out of its copy as a page waits for it
    try:
        with notebooks.held_lock(saved.parent.parent / "locks" / "commands.lock"):
            done = json.loads(saved.read_text(encoding="utf-8")) if saved.exists() else {}
            todo = [key for key in commands if key not in done or (key in figures and not figures[key].exists())]
            for key in commands:
                if key not in todo:
                    results[key].set_result(done[key])
            for number, result in enumerate(stream_commands([commands[key] for key in todo], root)):
                done[todo[number]] = result
                results[todo[number]].set_result(result)
            if todo:
                saved.parent.mkdir(parents=True, exist_ok=True)
                saved.write_text(json.dumps(done), encoding="utf-8")
    except BaseException as err:  # every page still waiting for its output learns why it will not come
        for result in results.values():
            if not result.done():
                result.set_exception(err)


def run_labs(sources: list[Path], cache_dir: Path, digest: str, root: Path) -> dict[str, Future]:
    """Run the labs in one new interpreter (hooks/lab_pages.py); each lab's result, by its file name, as it finishes."""
    job = {"sources": [str(s) for s in sources], "cache_dir": str(cache_dir), "digest": digest}
    results = {source.name: Future() for source in sources}
    worker = [sys.executable, str(Path(__file__).with_name("lab_pages.py"))]

    def run() -> None:
        # Errors go to a file, not a pipe: the kernels write there too, and it is read only at the end.
        with tempfile.TemporaryFile("w+") as errors:
            process = subprocess.Popen(worker, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                                       text=True)
            _BUILD["processes"].append(process)
            try:
                process.stdin.write(json.dumps(job))
                process.stdin.close()
                for line in process.stdout:
                    result = json.loads(line)
                    results[Path(result["source"]).name].set_result(result)
            finally:
                process.wait()
                _BUILD["processes"].remove(process)
                errors.seek(0)
                failed = PluginError(f"the labs could not run:\n{errors.read()[-3000:]}")
                for result in results.values():
                    if not result.done():
                        result.set_exception(failed)

    _WAITING.submit(run)
    return dict(results)  # the build's copy, from which await_labs takes each lab it waits for


def console_block(command: str, result: dict, expected_exit: int) -> str:
    """A command and its output as a reader sees them in a terminal; PluginError if it exited otherwise."""
    if result["exit"] != expected_exit:
        raise PluginError(f"run marker `{command}` exited {result['exit']}, expected {expected_exit}:\n{result['stderr']}")
    output = (result["stdout"] + result["stderr"]).rstrip()
    # A plain-text fence: a console lexer would read the output's "#" notes as root prompts.
    return f"```text\n{_wrap_command(command)}\n{output}\n```"


def release_command(command: str, release: str) -> str:
    return f"{command} --kubernetes-version {release}"


def release_answer(result: dict) -> str:
    """What a command answered, less the line naming its release and the note on a Node's own release."""
    text = re.sub(r"\AKubernetes 1\.\d+ \(.*\)\n", "", result["stdout"]) + result["stderr"]
    return re.sub(r"(?m)^ *note: node \S+ runs kubelet .*\n(?: {4}\S.*\n)*", "", text)


def release_tabs(command: str, expected_exit: str) -> str:
    """The command under each compared release, in content tabs; PluginError if the answers do not differ.

    expected_exit is one exit code for both releases ("0") or one for each ("0,1").
    """
    blocks, answers = {}, []
    exits = [int(code) for code in expected_exit.split(",")] * (1 if "," in expected_exit else 2)
    for release, code in zip(COMPARED, exits):
        line = release_command(command, release)
        result = command_outputs(line)[line]
        blocks[release] = console_block(line, result, code)
        answers.append(release_answer(result))
    if answers[0] == answers[1]:
        raise PluginError(f"releases marker `{command}`: the same answer under {' and '.join(COMPARED)}; "
                          "use a run marker")
    indented = {r: "\n".join("    " + line if line else "" for line in b.splitlines()) for r, b in blocks.items()}
    changed = [line for line in difflib.unified_diff(answers[0].splitlines(), answers[1].splitlines(), lineterm="", n=0)
               if not line.startswith(("---", "+++", "@@"))]
    shown = changed[:40] + ([f"  ... and {len(changed) - 40} more lines"] if len(changed) > 40 else [])
    summary = "\n".join("        " + line for line in shown)
    return ("\n\n".join(f'=== "v{release}"\n\n{indented[release]}' for release in COMPARED)
            + f'\n\n??? note "The lines that differ (- v{COMPARED[0]}, + v{COMPARED[1]})"\n\n    ```diff\n{summary}\n    ```')


PHONE = "(max-width: 44.984375em)"  # where Material lays a page out for a phone


def plot_command(scenario: str, target: Path, narrow: bool = False) -> str:
    return f"mini-kubelet run {scenario} --plot {target}" + (f" --plot-width {NARROW_PLOT:g}" if narrow else "")


def plot_targets(scenario: str, plots: Path) -> dict[str, Path]:
    """The two drawings of a scenario's plot, by the key the build runs each under: for a laptop, and for a phone."""
    stem = Path(scenario).stem
    return {scenario: plots / f"{stem}.png", f"{scenario} narrow": plots / f"{stem}-narrow.png"}


def plot_figure(scenario: str, page) -> str:
    """The figure `mini-kubelet run --plot` drew for a scenario, as HTML pointing at the site's copies: on a phone the
    one drawn for its width, a tap away from the full-size one; under it, the command that drew what the reader sees."""
    name = Path(scenario).stem + ".png"
    src = "../" * page.file.url.count("/") + f"{PLOTS}/{name}"
    narrow = src.replace(".png", "-narrow.png")
    alt = (f"The replay of {scenario}: the signals in play against their thresholds over time, pressure conditions "
           "shaded, each eviction and rejected admission marked")
    commands = "".join(f'<code class="{kind}">{plot_command(scenario, Path(name), kind == "narrow")}</code>'
                       for kind in ("wide", "narrow"))
    return (f'<figure class="scenario-plot"><a href="{src}"><picture><source media="{PHONE}" srcset="{narrow}">'
            f'<img src="{src}" alt="{alt}"></picture></a><figcaption>Drawn when this site was built, by '
            f'{commands}</figcaption></figure>')


def scenario_fields(kind: str) -> str:
    """The reference tables of a scenario format, from the readers' own field definitions."""
    # Imported here, on the one page that shows them: the scenario package would cost every build's start half a
    # second, before the page commands and the labs can begin.
    from mini_kubelet.sim import fields

    return fields.markdown(kind)


def _wrap_command(command: str, width: int = 80) -> str:
    """The command as a reader would type it, continued with backslashes before options that overflow."""
    lines = ["$"]
    for word in re.split(r" (?=--)", command):
        if len(lines[-1]) + 1 + len(word) > width and lines[-1] != "$":
            lines[-1] += " \\"
            lines.append("   ")
        lines[-1] += " " + word
    return "\n".join(lines)


def for_edition(markdown: str, solutions: bool) -> str:
    """A page as the edition shows it: each edition block's part for it; in the learner edition, no link to the notes."""
    markdown = EDITION_BLOCK.sub(lambda m: m.group(1) if solutions else m.group(2) or "", markdown)
    return markdown if solutions else _outside_code(markdown, lambda text: INSTRUCTOR_LINK.sub(r"\1", text))


def on_page_markdown(markdown, page, config, files):
    repo, tag = config["extra"]["upstream_repo"], config["extra"]["upstream_tag"]
    repo_url = (config["repo_url"] or "").rstrip("/")
    # Variables apply everywhere, code blocks included (the clone command is in one).
    for name, value in (("repo_url", repo_url), ("upstream_tag", tag), ("repo_dir", repo_url.rsplit("/", 1)[-1])):
        markdown = markdown.replace("{{ %s }}" % name, value)
    markdown = for_edition(markdown, lab_solutions(config))

    def transform(text: str) -> str:
        text = UPSTREAM_REF.sub(lambda m: upstream_link(m.group(1), repo, tag), text)
        text = PLOT_MARKER.sub(lambda m: plot_figure(m.group(1), page), text)
        text = FIELDS_MARKER.sub(lambda m: scenario_fields(m.group(1)), text)
        text = RELEASES_MARKER.sub(lambda m: release_tabs(m.group(2), m.group(1) or "0"), text)
        return RUN_MARKER.sub(lambda m: console_block(m.group(2), command_outputs(m.group(2))[m.group(2)], int(m.group(1) or 0)),
                              text)

    return _outside_code(markdown, transform)


# What the build computed, kept while `mkdocs serve` rebuilds: page command output and its inputs' digest;
# and, during a build, what is still running (the page commands, the labs) and the processes running it.
_BUILD: dict = {"digest": None, "outputs": {}, "pending": {}, "processes": []}
_WAITING = ThreadPoolExecutor(max_workers=2, thread_name_prefix="course-hook")  # threads that wait on the processes


def _course_root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def upstream_tag_problem(extra: dict) -> str | None:
    """Why extra.upstream_tag is not a release tag, in one line; None when it is one."""
    tag = extra.get("upstream_tag")
    if isinstance(tag, str) and RELEASE_TAG.fullmatch(tag):
        return None
    return f"mkdocs.yml: extra.upstream_tag {tag!r} is not a release tag (vMAJOR.MINOR.PATCH, such as v1.27.7)"


def nav_files(nav) -> list[str]:
    """Every page a nav (or a part of one) names."""
    found = []
    for entry in nav if isinstance(nav, list) else [nav]:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        found += nav_files(value) if isinstance(value, list) else [value]
    return found


def on_config(config):
    problem = upstream_tag_problem(config["extra"])
    if problem:  # every upstream link would be dead
        raise PluginError(problem)
    if not lab_solutions(config) and config["nav"]:
        config["nav"] = [entry for entry in config["nav"]
                         if not all(str(page).startswith(INSTRUCTOR) for page in nav_files(entry))]
    # The learner edition's lab pages are other notebooks: rendered into a cache of their own, so that a build of
    # one edition (which drops what it did not use from mkdocs-jupyter's cache) never drops the other's.
    plugin = config["plugins"].get("mkdocs-jupyter")
    if plugin is not None and not lab_solutions(config):
        plugin.config["cache_dir"] = str(Path(plugin.config["cache_dir"]).parent / "learner" / "mkdocs-jupyter")
    return config


@event_priority(100)  # before mkdocs-jupyter picks up the lab pages
def _prepare(files, config):
    """Start what the pages show, all at once: the page commands in one interpreter, the labs in another.

    Both run while the build reads the pages: a page waits for the command output only when it shows
    some (command_outputs), and a lab page for its own lab (await_labs). Each result is reused
    until the mini_kubelet package, the examples or the libraries change (notebooks.inputs_digest),
    or until the page or lab asking for it changes.
    """
    root = _course_root(config)
    cache = root / ".cache"
    digest = notebooks.inputs_digest(root)
    if digest != _BUILD["digest"]:
        _BUILD.update(digest=digest, outputs={})
    plots = cache / "plots" / digest[:16]
    commands, figures = {}, {}

    def collect(text: str) -> str:
        for match in RUN_MARKER.finditer(text):
            commands[match.group(2)] = match.group(2)
        for match in RELEASES_MARKER.finditer(text):
            for release in COMPARED:
                commands[release_command(match.group(2), release)] = release_command(match.group(2), release)
        for match in PLOT_MARKER.finditer(text):
            for key, target in plot_targets(match.group(1), plots).items():
                figures[key] = target
                commands[key] = plot_command(match.group(1), target, key != match.group(1))
        return text

    if not lab_solutions(config):
        for file in [f for f in files if f.src_uri.startswith(INSTRUCTOR)]:
            files.remove(file)
    for file in files.documentation_pages():
        if file.src_uri.endswith(".md"):
            _outside_code(file.content_string, collect)
    sources = sorted((root / "labs" / "src").glob("*.py"))
    if lab_solutions(config):
        pages = {s: notebooks.solutions_path(s, cache / "lab-pages", digest) for s in sources}
    else:  # the learner edition: written here, nothing to run
        pages = learner_pages(sources, cache / "learner" / "lab-pages")
    saved = cache / "commands" / f"{digest[:16]}.json"
    outputs = _BUILD["outputs"]
    if not outputs and saved.exists():
        outputs.update(json.loads(saved.read_text(encoding="utf-8")))
    missing = [key for key in commands if key not in outputs or (key in figures and not figures[key].exists())]
    # One interpreter, in the order the build reads the pages, and the plots last: only the end of the build needs
    # them (drawing them is most of the batch's time).
    missing.sort(key=lambda key: key in figures)
    results = {key: Future() for key in missing}
    pending = _BUILD["pending"] = {"figures": {scenario: commands[scenario] for scenario in figures}, "results": results}
    plots.mkdir(parents=True, exist_ok=True)
    if missing:
        _WAITING.submit(run_batch, {key: commands[key] for key in missing}, root, saved, figures, results)
        pending["saved"] = (saved, plots)
    to_run = [s for s in sources if not pages[s].exists()]
    if to_run:
        pending["labs"] = run_labs(to_run, cache / "lab-pages", digest, root)
    for target in figures.values():
        files.append(File.generated(config, f"{PLOTS}/{target.name}", abs_src_path=str(target)))
    for source, page in pages.items():
        files.append(File.generated(config, f"labs/{source.name}", abs_src_path=str(page)))
        # Generated afresh for the download, never the copy in labs/ that a learner may have edited.
        notebook = notebooks.render(notebooks.learner_notebook(source))
        files.append(File.generated(config, f"labs/{source.stem}.ipynb", content=notebook))
    return files


def command_outputs(key: str | None = None) -> dict:
    """The page commands' results: once the batch started by _prepare has run `key` (None: every command)."""
    outputs, pending = _BUILD["outputs"], _BUILD["pending"]
    results = pending.get("results", {})
    for waited in [key] if key is not None else list(results):
        if waited in results:
            outputs[waited] = results.pop(waited).result()
    if key is None:
        if "saved" in pending:
            _remove_stale(*pending.pop("saved"))
        for scenario, command in pending.pop("figures", {}).items():
            console_block(command, outputs[scenario], 0)  # the plot command must have succeeded
    return outputs


def await_labs(name: str | None = None) -> None:
    """Wait for the lab `name` (NN-name.py) if _prepare started it (None: every lab); PluginError if one raised."""
    running = _BUILD["pending"].get("labs", {})
    for lab in [name] if name is not None else list(running):
        result = running.pop(lab).result() if lab in running else {}
        if "error" in result:
            raise PluginError(f"lab failed: {result['error']}")


@event_priority(100)  # before mkdocs-jupyter reads the lab page
def on_pre_page(page, config, files):
    if _lab_name(page) is not None:
        await_labs(_lab_name(page))
    return page


def on_env(env, config, files):
    # Every page is read: whatever a page did not wait for (plots, labs off the nav) must be done now.
    command_outputs()
    await_labs()
    return env


def on_build_error(error):
    for process in list(_BUILD["processes"]):
        process.kill()
    _BUILD["pending"] = {}


def _remove_stale(*current: Path) -> None:
    """Drop what earlier digests left in the cache beside each current entry."""
    for keep in current:  # the batch may still be writing its first entry (its folder) as the build ends
        for other in keep.parent.iterdir() if keep.parent.is_dir() else ():
            if other != keep:  # a build running beside this one (the site and the offline folder) may drop it first
                shutil.rmtree(other, ignore_errors=True) if other.is_dir() else other.unlink(missing_ok=True)


@event_priority(-100)  # after mkdocs-jupyter wrapped them
def _pin_lab_sources(files, config):
    # mkdocs-jupyter's wrapper recomputes abs_src_path from src_dir, which a generated file lacks.
    for file in files:
        inner = getattr(file, "file", None)
        if inner is not None and inner.generated_by and inner.abs_src_path:
            file.abs_src_path = inner.abs_src_path
    return files


on_files = CombinedEvent(_prepare, _pin_lab_sources)


def _lab_name(page) -> str | None:
    """The lab source's name (NN-name.py) when the page is a lab, else None."""
    uri = page.file.src_uri
    return uri.split("/", 1)[1] if uri.startswith("labs/") and uri.endswith(".py") else None


def lab_solutions(config) -> bool:
    """Whether the site shows the labs with their solutions (`extra.lab_solutions`, true unless set false)."""
    return (config.get("extra") or {}).get("lab_solutions", True) is not False


def learner_pages(sources: list[Path], folder: Path) -> dict[Path, Path]:
    """The learner edition's lab pages: each lab's exercise notebook, unexecuted, written into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = {}
    for source in sources:
        text = notebooks.render(notebooks.learner_notebook(source))
        pages[source] = page = folder / f"{source.stem}.{hashlib.sha256(text.encode()).hexdigest()[:16]}.ipynb"
        if not page.exists():
            for stale in folder.glob(f"{source.stem}.*.ipynb"):
                stale.unlink()
            page.write_text(text, encoding="utf-8")
    return pages


def lab_links(config, name: str) -> dict[str, str]:
    """A lab's edit link, and its Codespaces and Binder links when repo_url is on GitHub, from mkdocs.yml.

    The branch is edit_uri's (`edit/BRANCH/docs/`), so a fork that publishes another branch needs no edit here.
    The edit link opens the lab's source, solutions and all; in the learner edition, its exercise notebook.
    """
    repo_url = (config.get("repo_url") or "").rstrip("/")
    if not repo_url:
        return {}
    found = re.match(r"(?:edit|blob)/([^/]+)/", config.get("edit_uri") or "")
    branch = found.group(1) if found else "main"
    edited = f"labs/src/{name}" if lab_solutions(config) else f"labs/{name[:-3]}.ipynb"
    links = {"edit": f"{repo_url}/edit/{branch}/{edited}"}
    github = re.fullmatch(r"https://github\.com/([^/]+/[^/]+?)(?:\.git)?", repo_url)
    if github:
        notebook = f"labs%2F{name[:-3]}.ipynb"
        links["codespaces"] = f"https://codespaces.new/{github.group(1)}/tree/{branch}?quickstart=1"
        links["binder"] = f"https://mybinder.org/v2/gh/{github.group(1)}/{branch}?labpath={notebook}"
    return links


CARDS = re.compile(r'<div class="cards">.*?</div>', re.S)


def card_labels(html: str) -> str:
    """Each cell of a table in a `<div class="cards" markdown>` block labelled with its column's heading: on a phone
    each row is a card (course.css), its cells one under the other, each with its heading."""
    def label(block: re.Match) -> str:
        heads = [escape(re.sub(r"<[^>]+>", "", head).strip()) for head in re.findall(r"<th[^>]*>(.*?)</th>", block[0], re.S)]

        def row(tr: re.Match) -> str:
            names = iter(heads)
            return re.sub(r"<td(?=[\s>])", lambda td: f'<td data-label="{next(names, "")}"', tr[0])
        return re.sub(r"<tr>.*?</tr>", row, block[0], flags=re.S)
    return CARDS.sub(label, html)


def on_page_content(html, page, config, files):
    html = card_labels(html)
    name = _lab_name(page)
    if name is None:
        return html
    stem = name[:-3]
    notebook = get_relative_url(f"labs/{stem}.ipynb", page.url)
    setup_page = files.get_file_from_path("setup.md")
    setup = get_relative_url(setup_page.url, page.url) if setup_page else get_relative_url("", page.url)
    shown = ("the lab with its solutions, run when the site was built" if lab_solutions(config)
             else "the lab as you get it: the exercises, without their solutions")
    # The offline folder's site (Material's offline plugin) is read with no network: no Codespaces or Binder there.
    links = {} if "material/offline" in config["plugins"] else lab_links(config, name)
    online = " · ".join(f'<a class="lab-open" href="{links[key]}">{label}</a>' for key, label in
                        (("codespaces", "Open in Codespaces"), ("binder", "Open in Binder")) if key in links)
    banner = (
        '<div class="admonition tip lab-download"><p class="admonition-title">Run this lab yourself</p>'
        f'<p>This page shows {shown}. '
        f'<a href="{notebook}" download>Download the exercise notebook</a> '
        f'(<code>{stem}.ipynb</code>, solutions left for you), or clone the course and run '
        f'<code>make lab</code>: see <a href="{setup}">Set up the labs</a>.</p>'
        + (f'<p>Or run it in your browser, nothing to install: {online}</p>' if online else "") + '</div>'
    )
    return banner + html


def on_page_context(context, page, config, nav):
    name = _lab_name(page)
    if name is not None and config.get("repo_url"):
        page.edit_url = lab_links(config, name)["edit"]
    return context
