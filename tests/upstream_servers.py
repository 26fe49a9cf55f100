"""A real control plane for the watch tests: etcd and kube-apiserver, built once from upstream/servers/, on loopback.

Both are built with `go build` into the harness's cache folder, keyed on the Go version and
upstream/servers/go.mod and go.sum (the servers' versions), like tests/upstream_harness.py's programs.
`ControlPlane` starts etcd on free loopback ports with a fresh data folder, then kube-apiserver on a free
loopback port with RBAC, a static token file and a serving certificate it makes itself in --cert-dir,
and waits until /readyz says ok. `stop()` ends both (terminate, then kill after a bounded wait).
"""

from __future__ import annotations

import atexit
import fcntl
import os
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from .upstream_harness import UPSTREAM, HarnessFault, build_key, cache_root, go

MODULE = UPSTREAM / "servers"
PROGRAMS = {"etcd": "go.etcd.io/etcd/server/v3", "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver"}
USERS = ("admin", "watcher", "no-watch", "no-list", "no-node", "nobody")  # admin is in system:masters
TOKENS = {user: f"{user}-token" for user in USERS}  # user -> bearer token, from the static token file
START_TIMEOUT = 90  # seconds for each server to answer ready
STOP_TIMEOUT = 15  # seconds for each server to exit once terminated, before it is killed


def build() -> dict[str, Path]:
    """The two server binaries, built with `go build` unless the cache already has them; {name: path}."""
    command = go()
    go_version = subprocess.run([command, "version"], capture_output=True, text=True, check=True).stdout.strip()
    folder = cache_root() / ("servers-" + build_key(MODULE, go_version))
    binaries = {name: folder / name for name in PROGRAMS}
    if all(path.exists() for path in binaries.values()):
        return binaries
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test worker may be building the same key
        for name, package in PROGRAMS.items():
            if binaries[name].exists():
                continue
            partial = Path(tempfile.mkdtemp(dir=folder)) / name
            done = subprocess.run([command, "build", "-o", str(partial), package], cwd=MODULE,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise HarnessFault(f"go build {package} in upstream/servers failed:\n{done.stderr}")
            partial.replace(binaries[name])
            partial.parent.rmdir()
    return binaries


def free_ports(count: int) -> list[int]:
    """count different TCP ports on 127.0.0.1 that nothing listens on now."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _wait(url: str, process: subprocess.Popen, log: Path, token: str = "", context=None) -> None:
    """Poll url until it answers 200 "ok"; a HarnessFault with the log's tail if the process exits or time runs out."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
        try:
            with urllib.request.urlopen(request, timeout=2, context=context) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
    state = f"exited with {process.returncode}" if process.poll() is not None else f"not ready in {START_TIMEOUT}s"
    raise HarnessFault(f"{url}: {Path(process.args[0]).name} {state}; the end of its log:\n{tail}")


class ControlPlane:
    """etcd and kube-apiserver running on 127.0.0.1, with a token for an admin and for each plain user in USERS."""

    def __init__(self, folder: Path):
        self.folder, self.processes = folder, []
        atexit.register(self.stop)  # a session that ends without the fixture's teardown leaves no server behind
        binaries = build()
        started = time.monotonic()
        try:
            self._start_etcd(binaries["etcd"])
            self._start_apiserver(binaries["kube-apiserver"])
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started

    def _spawn(self, args: list[str], name: str) -> tuple[subprocess.Popen, Path]:
        log = self.folder / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.processes.append(process)
        return process, log

    def _start_etcd(self, binary: Path) -> None:
        client, peer = (f"http://127.0.0.1:{port}" for port in free_ports(2))
        process, log = self._spawn([str(binary), "--name", "test", "--data-dir", str(self.folder / "etcd"),
                                    "--listen-client-urls", client, "--advertise-client-urls", client,
                                    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                                    "--initial-cluster", f"test={peer}", "--log-level", "warn"], "etcd")
        _wait(client + "/health", process, log)
        self.etcd_url = client

    def _start_apiserver(self, binary: Path) -> None:
        key = self.folder / "service-account.key"
        subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
        tokens = self.folder / "tokens.csv"
        tokens.write_text("".join(f'{TOKENS[user]},{user},uid-{user}' + (',"system:masters"' if user == "admin" else "")
                                  + "\n" for user in USERS))
        port, = free_ports(1)
        process, log = self._spawn([
            str(binary), "--bind-address=127.0.0.1", f"--secure-port={port}", "--advertise-address=127.0.0.1",
            f"--cert-dir={self.folder / 'certs'}", f"--etcd-servers={self.etcd_url}",
            "--service-account-issuer=https://kubernetes.default.svc", f"--service-account-key-file={key}",
            f"--service-account-signing-key-file={key}", "--authorization-mode=RBAC",
            f"--token-auth-file={tokens}", "--service-cluster-ip-range=10.0.0.0/24",
            "--endpoint-reconciler-type=none",  # no Endpoints for the kubernetes Service: nothing to reach
            "--disable-admission-plugins=ServiceAccount",  # no controller manager makes the default accounts
        ], "kube-apiserver")
        self.url = f"https://127.0.0.1:{port}"
        self.ca_file = self.folder / "certs" / "apiserver.crt"
        deadline = time.monotonic() + START_TIMEOUT
        while not self.ca_file.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        context = ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file.exists() else None
        _wait(self.url + "/readyz", process, log, TOKENS["admin"], context)

    def kubeconfig(self, user: str) -> Path:
        """A kubeconfig file for one of TOKENS' users, trusting the server's own self-signed certificate."""
        path = self.folder / f"kubeconfig-{user}"
        path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {{server: "{self.url}", certificate-authority: "{self.ca_file}"}}
users:
- name: {user}
  user: {{token: {TOKENS[user]}}}
contexts:
- name: {user}
  context: {{cluster: test, user: {user}}}
current-context: {user}
""")
        return path

    def stop(self) -> None:
        """End kube-apiserver, then etcd: terminate, wait a bounded time, kill if still running."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=STOP_TIMEOUT)
        self.processes.clear()
