"""The differential harness: upstream's own Go functions, built once per Go version and sources, one process a release."""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = ROOT / "upstream"
VERSIONS = ("1.27", "1.36")  # each a Go module in upstream/v<version>/
NO_GO = "the differential tests need Go 1.22+ on PATH; they are for the course's maintainers"


class UpstreamError(Exception):
    """The Go function returned an error; its text is the message."""


class UpstreamPanic(Exception):
    """The Go function panicked; the panic's text is the message."""


class HarnessFault(Exception):
    """The harness could not carry out the request (unknown function, bad arguments)."""


def go() -> str:
    """The go command, else a skip of the calling test module with NO_GO (a failure in CI, where every test must run)."""
    found = shutil.which("go")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"go is not on PATH in CI: {NO_GO}", pytrace=False)
        pytest.skip(NO_GO, allow_module_level=True)
    return found


def cache_root() -> Path:
    """Where built harnesses are kept: outside the clone, under the user's cache folder."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "inside-the-kubelet" / "harness"


def build_key(module: Path, go_version: str) -> str:
    """A hash of the Go version, the module's go.mod and go.sum, its Go sources and shims, and jsonserve's sources."""
    digest = hashlib.sha256(go_version.encode())
    shared = module.parent / "jsonserve"
    for path in sorted([module / "go.mod", module / "go.sum", *module.glob("*.go"), *shims(module), shared / "go.mod",
                        *shared.glob("*.go")]):
        digest.update(str(path.relative_to(module.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def shims(module: Path) -> list[Path]:
    """The files the module adds to upstream's own packages (`_shims/<package path>/`), which go's patterns skip."""
    return sorted((module / "_shims").rglob("*.go"))


def modfile_with_shims(command: str, module: Path, scratch: Path) -> list[str]:
    """`-modfile` flags that build against a copy of k8s.io/kubernetes with the shims added; none without shims.

    Go refuses to add files to a package in its module cache, even through -overlay, so the shims go into a
    copy of the module (kept in the cache, once per release and shims) that a generated go.mod points at.
    """
    files = shims(module)
    if not files:
        return []
    # `go mod download -json` fetches the module on a fresh machine (`go list -m` would print an empty Dir).
    found = json.loads(subprocess.run([command, "mod", "download", "-json", "k8s.io/kubernetes"], cwd=module,
                                      capture_output=True, text=True, check=True).stdout)["Dir"]
    digest = hashlib.sha256(found.encode())
    for path in files:
        digest.update(str(path.relative_to(module)).encode() + b"\0" + path.read_bytes() + b"\0")
    copy = cache_root() / "src" / f"{Path(found).name}-{digest.hexdigest()[:12]}"
    if not copy.exists():
        partial = Path(tempfile.mkdtemp(dir=scratch)) / "kubernetes"
        shutil.copytree(found, partial, copy_function=shutil.copyfile)  # copyfile: the cache's files are read-only
        for folder, _, _ in os.walk(partial):
            os.chmod(folder, 0o755)  # copytree gave the folders the cache's read-only mode
        for path in files:
            shutil.copyfile(path, partial / path.relative_to(module / "_shims"))
        copy.parent.mkdir(parents=True, exist_ok=True)
        partial.replace(copy)
    text = (module / "go.mod").read_text().replace("=> ../jsonserve", f"=> {module.parent / 'jsonserve'}")
    (scratch / "go.mod").write_text(text + f"\nreplace k8s.io/kubernetes => {copy}\n")
    shutil.copyfile(module / "go.sum", scratch / "go.sum")
    return [f"-modfile={scratch / 'go.mod'}"]


def build(version: str) -> Path:
    """The harness binary for one release, built with `go build` unless the cache already has it."""
    command = go()
    module = UPSTREAM / f"v{version}"
    go_version = subprocess.run([command, "version"], capture_output=True, text=True, check=True).stdout.strip()
    folder = cache_root() / build_key(module, go_version)
    binary = folder / "harness"
    if binary.exists():
        return binary
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test worker may be building the same key
        if not binary.exists():
            partial = Path(tempfile.mkdtemp(dir=folder)) / "harness"
            done = subprocess.run([command, "build", *modfile_with_shims(command, module, partial.parent),
                                   "-o", str(partial), "."], cwd=module, capture_output=True, text=True)
            if done.returncode != 0:
                raise HarnessFault(f"go build in {module.relative_to(ROOT)} failed:\n{done.stderr}")
            partial.replace(binary)
            shutil.rmtree(partial.parent)
    return binary


class Harness:
    """One running harness program: a JSON request a line in, a JSON answer a line out."""

    def __init__(self, binary: Path):
        self.process = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1)
        self.lock = threading.Lock()
        self.calls = 0

    def call(self, fn: str, gates: dict | None = None, **args):
        line = json.dumps({"fn": fn, "args": args, "gates": gates or {}})
        with self.lock:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
            reply = self.process.stdout.readline()
            self.calls += 1
        if not reply:
            raise HarnessFault(f"the harness exited (code {self.process.poll()}) on {line[:200]}")
        answer = json.loads(reply)
        if "result" in answer:
            return answer["result"]
        kind, text = next(iter(answer.items()))
        raise {"error": UpstreamError, "panic": UpstreamPanic}.get(kind, HarnessFault)(text)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=10)


_RUNNING: dict[str, Harness] = {}


def harness(version: str) -> Harness:
    """The running harness for a release ("1.27" or "1.36"), built and started on first use."""
    if version not in _RUNNING:
        _RUNNING[version] = Harness(build(version))
    return _RUNNING[version]


def call(version: str, fn: str, gates: dict | None = None, **args):
    """Upstream's answer: fn called with args in the release's harness (gates set for this call only)."""
    return harness(version).call(fn, gates, **args)


@atexit.register
def _stop_all() -> None:
    for running in _RUNNING.values():
        running.close()
