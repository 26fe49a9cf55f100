"""How fast the course's tools run: prints one line a benchmark, no assertions.

Run it with `make bench` (about four minutes: it builds and serves the site and runs the tests).
In-process figures are the best of several repetitions; whole commands are timed as a user sees them,
wall clock, on this machine. The site is built and served from a temporary copy of the course, so the
figures are "from scratch" (nothing cached) and your own cache is left alone. `BENCH_QUICK=1` skips
the site and the test suite; words on the command line run only the sections whose titles start with them
(`python benchmarks/bench.py start-up bad` times the start-up and the errors).
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import resource
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
from mini_kubelet.clock import Clock
from mini_kubelet.cmd import admit, explain
from mini_kubelet.cmd.eviction_rank import rank_pods
from mini_kubelet.eviction import manager as eviction_manager, thresholds as eviction_thresholds
from mini_kubelet.sim import run_scenario
from mini_kubelet.sim.lifecycle.replay import run_lifecycle

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


def _node_of_pods(count: int, available: str) -> tuple[list, stats.Summary]:
    """`count` Pods of mixed QoS classes and priorities, and a Summary of them with `available` memory left.

    Every Pod has stats for its containers (memory, rootfs, logs), its volumes and its ephemeral storage,
    as a real Summary has; a Guaranteed, a Burstable and a BestEffort Pod in turn, priorities -10 to 1000.
    """
    mi = 1024**2
    kinds = [({"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "250m", "memory": "256Mi"}}),
             ({"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}), {}]
    pods, pod_stats = [], []
    for number in range(count):
        name = f"app-{number:03d}"
        manifest = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{number:03d}"},
                    "spec": {"priority": (-10, 0, 100, 1000)[number % 4], "containers": [
                        {"name": "app", "image": "app", "resources": kinds[number % 3]},
                        {"name": "sidecar", "image": "proxy", "resources": kinds[(number + 1) % 3]}],
                        "volumes": [{"name": "scratch", "emptyDir": {}}]}}
        pods.append(api.pod_from_manifest(manifest))
        used = (50 + 37 * number % 400) * mi
        fs = {"usedBytes": 10 * mi, "inodesUsed": 100}
        pod_stats.append({
            "podRef": {"name": name, "namespace": "bench", "uid": f"uid-{number:03d}"},
            "containers": [{"name": c, "memory": {"workingSetBytes": used // 2}, "rootfs": fs, "logs": fs}
                           for c in ("app", "sidecar")],
            "memory": {"workingSetBytes": used}, "volume": [{"name": "scratch", **fs}],
            "ephemeral-storage": {"usedBytes": 30 * mi, "inodesUsed": 300}})
    free = api.value(available)
    node = {"nodeName": "bench-node", "memory": {"availableBytes": free, "workingSetBytes": 64 * 1024 * mi - free},
            "fs": {"availableBytes": 80 * 1024 * mi, "capacityBytes": 100 * 1024 * mi, "inodesFree": 6_000_000,
                   "inodes": 6_553_600},
            "systemContainers": [{"name": "pods", "memory": {"availableBytes": 8 * 1024 * mi, "workingSetBytes": 40 * 1024 * mi}}]}
    return pods, stats.summary_from_json({"node": node, "pods": pod_stats}, "bench")


def eviction_pass_rows() -> list[tuple[str, str]]:
    """One synchronize pass of the eviction manager over 110 Pods: with a threshold met (it ranks and
    evicts), and with none met. Target: at most 2 ms for the pass that evicts."""
    thresholds = eviction_thresholds.parse_threshold_config(["pods"], {"memory.available": "500Mi", "nodefs.available": "10%"},
                                                            {}, {}, {})
    rows = []
    for label, available in (("a threshold met: rank and evict", "300Mi"), ("no threshold met", "4Gi")):
        pods, summary = _node_of_pods(110, available)
        managers = []

        def one_pass() -> None:
            manager = managers.pop()  # a fresh manager each pass: a second pass on one summary would not act
            manager.synchronize(summary, pods)

        repeat, number = 15, 10
        ms = []
        for _ in range(repeat):
            managers[:] = [eviction_manager.Manager(eviction_manager.Config(thresholds=thresholds), Clock())
                           for _ in range(number)]
            ms.append(best_of(one_pass, repeat=1, number=number))
        evicted = eviction_manager.Manager(eviction_manager.Config(thresholds=thresholds), Clock()).synchronize(summary, pods)
        what = f"evicts {evicted[0].pod.metadata.name}" if evicted else "evicts none"
        rows.append((f"one eviction pass over 110 Pods, {label} ({what})", f"{min(ms):.2f} ms"))
    return rows


def steady_kubelet(scenario, seconds: int, skip_settled_resyncs: bool) -> None:
    """One chapter-1 Kubelet running the scenario's Pods from the API server, stepped once a virtual second."""
    from mini_kubelet.clock import Clock
    from mini_kubelet.kubelet_main import Kubelet
    from mini_kubelet.sim.lifecycle.api import APIServer

    clock = Clock()
    kubelet = Kubelet(clock, scenario.node, skip_settled_resyncs=skip_settled_resyncs)
    server = APIServer(kubelet)
    for plan in scenario.pods:
        server.pods[plan.pod.metadata.uid] = copy.deepcopy(plan.pod)
    server.send()
    kubelet.send("file", [])
    for _ in range(seconds):
        clock.advance(1)
        kubelet.step()


def many_pods(pods: int, seconds: int) -> dict:
    """A lifecycle scenario of `pods` single-container Pods that keep running."""
    manifest = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}
    return {"replay": "lifecycle", "duration": f"{seconds}s",
            "pods": [{"manifest": {**manifest, "metadata": {"name": f"pod-{i:03d}"}}} for i in range(pods)]}


def kubelet_rows() -> list[tuple[str, str]]:
    """The chapter-1 Kubelet (kubelet_main) on a full node: what a virtual hour costs, and a day with resyncs settled."""
    from mini_kubelet.sim.lifecycle.scenario import load_lifecycle_scenario

    replay = load_lifecycle_scenario(many_pods(110, 600), "bench", EXAMPLES / "scenarios", "bench")
    hour, day = 3600, 24 * 3600
    rows = [
        ("chapter-1 Kubelet, 110 steady Pods, 1 virtual hour", best_of(lambda: steady_kubelet(replay, hour, False), repeat=3)),
        ("chapter-1 Kubelet, 110 steady Pods, 1 virtual hour, settled resyncs skipped",
         best_of(lambda: steady_kubelet(replay, hour, True), repeat=3)),
        ("chapter-1 Kubelet, 110 steady Pods, 24 virtual hours, settled resyncs skipped",
         best_of(lambda: steady_kubelet(replay, day, True), repeat=1)),
        ("lifecycle replay, 110 Pods, 10 virtual minutes", best_of(lambda: run_lifecycle(replay), repeat=3)),
    ]
    return [(name, f"{ms:.0f} ms") for name, ms in rows]
# The least any command that reads a Pod through the official client's models can cost: read the file, and make
# the client's V1Pod from it as api.load_manifests does (the models for a Pod are built when V1Pod is imported).
ONE_POD = ("import json, sys, yaml; from kubernetes.client import ApiClient; "
           "ApiClient().deserialize(json.dumps(yaml.safe_load(open(sys.argv[1]))), 'V1Pod', 'application/json')")


def commands_ms(commands: dict[str, list[str]], repeat: int = 7) -> dict[str, tuple[float, float]]:
    """The fastest run of each command (a new process each time): wall clock and CPU time, in milliseconds.

    The commands are taken in turn, rather than each `repeat` times in a row, so that each gets the same share
    of a busy machine; the CPU time (user and system, of the process and its children) is what the command
    costs, whatever else the machine is doing.
    """
    best = {name: (float("inf"), float("inf")) for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run(argv, cwd=ROOT, env=ENV, capture_output=True)
            wall, after = (time.perf_counter() - started) * 1000, resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


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
    """Chapter 5: the day of 110 Pods, the same node for a week, a 500-Pod node for a day (best of 3), and one pass.

    The week and the 500-Pod day are made from day-110-pods.yaml (_node_day): its scenario events, run for longer,
    or its Pods' counts and the node's size scaled up, with maxPods raised to match.
    """
    from pathlib import Path as _Path

    from mini_kubelet.clock import Clock
    from mini_kubelet.eviction import manager as mgr
    from mini_kubelet.sim.node.replay import NodeReplay
    from mini_kubelet.sim.node.scenario import load_node_scenario

    def replay(pods: int, duration: str) -> tuple[float, NodeReplay]:
        """The fastest of three replays, in seconds, and the last replay."""
        times = []
        for _ in range(3):
            with contextlib.redirect_stderr(io.StringIO()):  # the example's notes, said once by `mini-kubelet run`
                scenario = load_node_scenario(_node_day(pods, duration), "day-110-pods.yaml", _Path("."), "day")
            started = time.perf_counter()
            node = NodeReplay(scenario)
            node.run()
            times.append(time.perf_counter() - started)
        return min(times), node

    rows = []
    for label, pods, duration, target in (("day-110-pods.yaml, 24 h", 110, "24h", 2), ("110 Pods, 7 days", 110, "168h", 10),
                                          ("500 Pods, 24 h", 500, "24h", 6)):
        seconds, node = replay(pods, duration)
        span = node.sc.duration
        rows.append((label, f"{seconds:.1f} s ({span / seconds:,.0f} x real time; {node.trace.passes} eviction passes, "
                            f"{len(node.kubelet.pod_manager.get_pods())} Pods held at the end; target {target} s)"))
        if pods == 110 and duration == "24h":
            day = node
    active = day._active_pods()
    summary = day._summary(active)
    manager = mgr.Manager(day.sc.config, Clock())
    rows.append((f"one eviction pass over {len(active)} Pods, every Pod's stats",
                 f"{best_of(lambda: manager.synchronize(summary, active), number=20):.2f} ms (target 2 ms)"))
    rows.append((f"one eviction pass over {len(active)} Pods, as the replay runs it without pressure",
                 f"{best_of(lambda: manager.synchronize(day._pass_summary(active), active), number=20):.2f} ms"))
    return rows


def start_up_rows() -> list[tuple[str, str]]:
    """explain beside the floor (ONE_POD on the same file), measured in turn; target: at most 1.15 x the floor."""
    pod = "examples/pods/burstable.yaml"
    ms = commands_ms({"bare": [sys.executable, "-c", "import kubernetes"], "floor": [sys.executable, "-c", ONE_POD, pod],
                      "explain": [str(BIN / "mini-kubelet"), "explain", pod], "help": [str(BIN / "mini-kubelet"), "--help"]})
    (floor, floor_cpu), (wall, cpu) = ms["floor"], ms["explain"]
    return [
        ("python -c 'import kubernetes' (for comparison)", "{:.0f} ms (CPU {:.0f} ms)".format(*ms["bare"])),
        ("mini-kubelet --help", "{:.0f} ms (CPU {:.0f} ms)".format(*ms["help"])),
        ("the floor: one Pod file read into the client's V1Pod, python", f"{floor:.0f} ms (CPU {floor_cpu:.0f} ms)"),
        ("mini-kubelet explain FILE, cold start", f"{wall:.0f} ms (CPU {cpu:.0f} ms): {wall / floor:.2f} x the floor "
                                                 f"(CPU {cpu / floor_cpu:.2f} x; target 1.15 x)"),
    ]


SCENARIO_MISTAKES = {  # one bad field in a scenario of each kind: (the example, the line, the line that replaces it)
    "eviction": ("over-limit.yaml", "duration: 6m", "duration: 6 minutes"),
    "lifecycle": ("lifecycle-crash-loop.yaml", "app: {after: 5s, exitCode: 1}", "app: {after: 5s, exitcode: 1}"),
    "node": ("node-guaranteed-oom.yaml", "capacity: {memory: 4Gi,", "capacity: {memory: 4G1,"),
}


def error_rows() -> list[tuple[str, str]]:
    """How long each command takes to refuse bad input (one line, exit 2): the slowest of the commands, per mistake.

    Target: at most 200 ms each. Every command that reads files is tried: show, explain, admit, eviction rank,
    run and watch (its kubeconfig).
    """
    mk, pod, node = str(BIN / "mini-kubelet"), "examples/pods/burstable.yaml", "examples/nodes/node.yaml"
    summary = "examples/summary/memory-pressure.json"
    with tempfile.TemporaryDirectory() as folder:
        files = {"missing": str(Path(folder) / "missing.yaml"), "empty": str(Path(folder) / "empty.yaml"),
                 "non-YAML": str(Path(folder) / "broken.yaml")}
        Path(files["empty"]).write_text("")
        Path(files["non-YAML"]).write_text("kind: Pod\nspec: [containers\n")
        readers = {"show": lambda f: ["show", f], "explain": lambda f: ["explain", f],
                   "admit": lambda f: ["admit", pod, "--node", f], "eviction rank": lambda f: [
                       "eviction", "rank", "--summary", summary, "--pods", f, "--signal", "memory.available"],
                   "run": lambda f: ["run", f], "watch": lambda f: ["watch", "--kubeconfig", f, "--node", "n", "--once"]}
        kinds = {kind: {name: [mk, *argv(path)] for name, argv in readers.items()} for kind, path in files.items()}
        kinds["bad flag"] = {
            "show": [mk, "show", pod, "--kubernetes-version", "1.99"], "explain": [mk, "explain", pod, "--cgroup-version", "3"],
            "admit": [mk, "admit", pod, "--node", node, "--feature-gates", "NoSuchGate=true"],
            "eviction rank": [mk, "eviction", "rank", "--summary", summary, "--pods", pod, "--signal", "memory.free"],
            "run": [mk, "run", "examples/scenarios/over-limit.yaml", "--plot", "out.txt"],
            "watch": [mk, "watch", "--kubeconfig", files["missing"], "--node", "n", "--connections", "-1"]}
        kinds["bad scenario field"] = {}
        for kind, (example, line, replacement) in SCENARIO_MISTAKES.items():
            text = (EXAMPLES / "scenarios" / example).read_text()
            assert line in text, f"{example} has no line {line!r}"
            path = Path(folder) / example
            path.write_text(text.replace(line, replacement, 1).replace("../pods/", f"{EXAMPLES / 'pods'}/"))
            kinds["bad scenario field"][f"run ({kind})"] = [mk, "run", str(path)]
        rows = []
        for kind, commands in kinds.items():
            ms = commands_ms(commands, repeat=3)
            slowest = max(ms, key=lambda name: ms[name][0])
            rows.append((f"{kind}: the slowest of {len(ms)} commands", f"{ms[slowest][0]:.0f} ms (CPU {ms[slowest][1]:.0f} "
                         f"ms; {slowest}; the fastest {min(wall for wall, _ in ms.values()):.0f} ms; target 200 ms)"))
    return rows


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
    sections = [("In-process (best of several runs)", in_process_rows),
                ("The eviction manager (best of several runs; target: at most 2 ms a pass)", eviction_pass_rows),
                ("The chapter-1 Kubelet", kubelet_rows),
                ("One node, every chapter (chapter 5)", node_replay_rows),
                ("Start-up (best of 7, the commands in turn)", start_up_rows),
                ("Bad input: one line and exit 2 (best of 3)", error_rows)]
    if not os.environ.get("BENCH_QUICK"):
        sections += [("The site", build_rows), ("Serving while editing", serve_rows), ("The tests", test_rows)]
    if sys.argv[1:]:  # only the sections whose titles start with these words: `bench.py start-up bad`
        sections = [s for s in sections if any(s[0].lower().startswith(word.lower()) for word in sys.argv[1:])]
    for title, rows_of in sections:
        rows = rows_of()
        width = max(len(name) for name, _ in rows)
        print(f"\n{title}")
        for name, figure in rows:
            print(f"  {name.ljust(width)}  {figure}")


if __name__ == "__main__":
    main()
