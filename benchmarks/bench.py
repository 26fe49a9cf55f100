"""How fast the course's tools run: prints one line a benchmark, no assertions.

Run it with `make bench` (about four minutes: it builds and serves the site and runs the tests).
In-process figures are the best of several repetitions; whole commands are timed as a user sees them,
wall clock, on this machine. The site is built and served from a temporary copy of the course, so the
figures are "from scratch" (nothing cached) and your own cache is left alone. `BENCH_QUICK=1` skips
the site and the test suite.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Callable

from mini_kubelet import api, stats
from mini_kubelet.cmd import admit, explain
from mini_kubelet.cmd.eviction_rank import rank_pods
from mini_kubelet.sim import run_scenario
from mini_kubelet.sim.lifecycle_replay import run_lifecycle

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent
COURSE = ("mkdocs.yml", "docs", "hooks", "labs", "examples", "overrides", "mini_kubelet")  # what the site reads or watches
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def best_of(function: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """The fastest of `repeat` runs of `number` calls, in milliseconds per call."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            function()
        times.append((time.perf_counter() - started) / number)
    return min(times) * 1000


def command_ms(argv: list[str], repeat: int = 5) -> float:
    """The fastest of `repeat` runs of a whole command (a new process each time), in milliseconds."""
    return best_of(lambda: subprocess.run(argv, cwd=ROOT, env=ENV, check=True, capture_output=True), repeat)


def in_process_rows() -> list[tuple[str, str]]:
    pods = [pod for path in sorted((EXAMPLES / "pods").glob("*.yaml")) for pod in api.load_manifests(path)]
    node = api.load_manifests(EXAMPLES / "nodes" / "node.yaml")[0]
    small = api.load_manifests(EXAMPLES / "nodes" / "small-worker.yaml")[0]
    running = api.load_manifests(EXAMPLES / "pods" / "admission-running.yaml")
    summary = stats.load_summary(EXAMPLES / "summary" / "memory-pressure.json")
    summary_pods = api.load_manifests(EXAMPLES / "summary" / "memory-pods.yaml")
    scenarios = sorted(p for p in (EXAMPLES / "scenarios").glob("*.yaml") if not p.name.startswith(("invalid-", "lifecycle-", "node-", "day-")))
    lifecycles = sorted((EXAMPLES / "scenarios").glob("lifecycle-*.yaml"))
    rows = [
        (f"load the {len(pods)} example Pods", best_of(lambda: [api.load_manifests(p) for p in (EXAMPLES / "pods").glob("*.yaml")])),
        ("explain one Pod (cgroup v2)", best_of(lambda: explain.explain(pods[:1], node), number=20)),
        (f"explain all {len(pods)} Pods together", best_of(lambda: explain.explain(pods, node))),
        (f"admit one Pod against {len(running)} running", best_of(lambda: admit.admission_report(pods[:1], small, running), number=20)),
        (f"rank {len(summary_pods)} Pods for memory.available", best_of(lambda: rank_pods(summary, summary_pods, "memory.available"), number=20)),
    ]
    for path in scenarios:
        timeline = run_scenario(path)
        rows.append((f"replay {path.name} ({len(timeline.steps)} passes)", best_of(lambda p=path: run_scenario(p), repeat=3)))
    for path in lifecycles:
        timeline = run_lifecycle(path)
        rows.append((f"replay {path.name} ({timeline.scenario.duration} one-second passes)", best_of(lambda p=path: run_lifecycle(p), repeat=3)))
    return [(name, f"{ms:.2f} ms") for name, ms in rows]


def _node_day(pods: int, duration: str) -> dict:
    """day-110-pods.yaml grown to `pods` Pods (each count: and the node's size scaled alike) and run for `duration`."""
    import yaml
    from mini_kubelet.sim.series import parse_duration
    doc = yaml.safe_load((EXAMPLES / "scenarios" / "day-110-pods.yaml").read_text())
    scale, end = pods / 110, parse_duration(duration)
    for entry in doc["pods"]:
        if "count" in entry:
            entry["count"] = max(1, round(entry["count"] * scale))
    counted = sum(entry.get("count", 1) for entry in doc["pods"]) + sum(1 for e in doc["events"] if "addPod" in e)
    doc["pods"][3]["count"] += pods - counted  # the web replicas make up the rounding
    capacity = doc["node"]["capacity"]
    capacity["memory"], capacity["cpu"] = f"{round(52 * scale)}Gi", str(round(32 * scale))
    doc["node"]["kubelet"]["maxPods"] = pods
    doc.update(duration=duration, expect=None)
    doc["events"] = [e for e in doc["events"] if parse_duration(e["at"]) < end]
    return doc


def node_replay_rows() -> list[tuple[str, str]]:
    """Chapter 5: the day of 110 Pods, one eviction pass, and the replay's cost as the node and the day grow.

    A cell of the table whose estimate (from the cells measured, growing as Pods x passes) is above
    BENCH_NODE_BUDGET seconds (default 120) is printed as an estimate, not run; BENCH_NODE_BUDGET=0 runs all.
    """
    from pathlib import Path as _Path

    from mini_kubelet.clock import Clock
    from mini_kubelet.eviction import manager as mgr
    from mini_kubelet.sim.node_replay import NodeReplay
    from mini_kubelet.sim.node_scenario import load_node_scenario

    def replay(pods: int, duration: str) -> tuple[float, NodeReplay]:
        scenario = load_node_scenario(_node_day(pods, duration), "day-110-pods.yaml", _Path("."), "day")
        started = time.perf_counter()
        node = NodeReplay(scenario)
        node.run()
        return time.perf_counter() - started, node

    rows = []
    seconds, day = replay(110, "24h")
    rows.append(("day-110-pods.yaml, 24 h at the kubelet's periods", f"{seconds:.1f} s ({86400 / seconds:,.0f} x real time; "
                 f"{day.trace.passes} eviction passes; target 2 s)"))
    active = day._active_pods()
    summary = day._summary(active)
    manager = mgr.Manager(day.sc.config, Clock())
    rows.append((f"one eviction pass over {len(active)} Pods, every Pod's stats",
                 f"{best_of(lambda: manager.synchronize(summary, active), number=20):.2f} ms (target 2 ms)"))
    rows.append((f"one eviction pass over {len(active)} Pods, as the replay runs it without pressure",
                 f"{best_of(lambda: manager.synchronize(day._pass_summary(active), active), number=20):.2f} ms"))
    budget = float(os.environ.get("BENCH_NODE_BUDGET", "120"))
    cost = {(110, 86400): seconds}  # seconds per cell, by (pods, virtual seconds)
    for pods in (110, 250, 500):
        for label, span in (("1 h", 3600), ("24 h", 86400), ("7 days", 7 * 86400)):
            if (pods, span) not in cost:
                known = max(cost, key=lambda k: k[0] * k[1] if k[0] * k[1] <= pods * span else 0)
                estimate = cost[known] * pods * span / (known[0] * known[1])
                if budget and estimate > budget:
                    rows.append((f"{pods} Pods, {label}", f"~{estimate:.0f} s estimated from {known[0]} Pods x "
                                 f"{known[1] // 3600} h (not run: over BENCH_NODE_BUDGET={budget:.0f} s)"))
                    continue
                cost[(pods, span)] = replay(pods, {3600: "1h", 86400: "24h"}.get(span, "168h"))[0]
            per = cost[(pods, span)] / (pods * span / 10) * 1e6
            rows.append((f"{pods} Pods, {label}", f"{cost[(pods, span)]:.1f} s ({span / cost[(pods, span)]:,.0f} x real time; "
                         f"{per:.1f} us per Pod and pass)"))
    return rows


def start_up_rows() -> list[tuple[str, str]]:
    bare = command_ms([sys.executable, "-c", "import kubernetes"])
    explain_ms = command_ms([str(BIN / "mini-kubelet"), "explain", "examples/pods/burstable.yaml"])
    return [
        ("python -c 'import kubernetes' (for comparison)", f"{bare:.0f} ms"),
        ("mini-kubelet --help", f"{command_ms([str(BIN / 'mini-kubelet'), '--help']):.0f} ms"),
        ("mini-kubelet explain FILE, cold start", f"{explain_ms:.0f} ms ({explain_ms / bare:.2f} x import kubernetes)"),
    ]


def copy_course(into: Path) -> Path:
    """A copy of what the site build reads, with no cache: a build there starts from scratch."""
    for part in COURSE:
        source = ROOT / part
        (shutil.copytree if source.is_dir() else shutil.copy)(source, into / part)
    return into


def build_rows() -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory() as folder:
        course = copy_course(Path(folder))
        build = [str(BIN / "mkdocs"), "build", "--strict", "--site-dir", str(course / "site")]
        timed = []
        for _ in range(2):  # from scratch, then again with the caches the first build left
            started = time.perf_counter()
            subprocess.run(build, cwd=course, env=ENV, check=True, capture_output=True)
            timed.append(time.perf_counter() - started)
    return [("mkdocs build --strict, from scratch", f"{timed[0]:.1f} s"),
            ("mkdocs build --strict, again (caches warm)", f"{timed[1]:.1f} s")]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(url: str, predicate: Callable[[str], bool], timeout: float = 300) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if predicate(response.read().decode("utf-8", "replace")):
                    return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url} did not answer as expected within {timeout:.0f} s")


def serve_rows() -> list[tuple[str, str]]:
    with tempfile.TemporaryDirectory() as folder:
        course = copy_course(Path(folder))
        port = _free_port()
        server = subprocess.Popen([str(BIN / "mkdocs"), "serve", "--dirty", "--no-strict", "--dev-addr", f"127.0.0.1:{port}"],
                                  cwd=course, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            first = _wait_for(f"http://127.0.0.1:{port}/", lambda html: "Inside the Kubelet" in html)
            page = course / "docs" / "chapter-3" / "qos.md"
            marker = f"An edit made at {time.time():.0f}."
            page.write_text(page.read_text() + f"\n{marker}\n")
            edit = _wait_for(f"http://127.0.0.1:{port}/chapter-3/qos/", lambda html: marker in html)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return [("make serve: first page served, from scratch", f"{first:.1f} s"),
            ("make serve: a one-line page edit visible", f"{edit:.1f} s")]


def test_rows() -> list[tuple[str, str]]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT, env=ENV,
                            capture_output=True, text=True)
    seconds = time.perf_counter() - started
    last = (result.stdout.strip().splitlines() or ["no output"])[-1].strip("= ")
    return [("make test (the whole suite)", f"{seconds:.0f} s ({last})")]


def main() -> None:
    sections = [("In-process (best of several runs)", in_process_rows), ("Start-up", start_up_rows),
                ("One node, every chapter (chapter 5)", node_replay_rows)]
    if not os.environ.get("BENCH_QUICK"):
        sections += [("The site", build_rows), ("Serving while editing", serve_rows), ("The tests", test_rows)]
    for title, rows_of in sections:
        rows = rows_of()
        width = max(len(name) for name, _ in rows)
        print(f"\n{title}")
        for name, figure in rows:
            print(f"  {name.ljust(width)}  {figure}")


if __name__ == "__main__":
    main()
