"""How fast the course's tools run on its own examples: prints one line a benchmark, no assertions.

Run it with `make bench`. Each figure is the best of several repetitions (wall clock, this machine).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from mini_kubelet import api, stats
from mini_kubelet.cmd import admit, explain
from mini_kubelet.cmd.eviction_rank import rank_pods
from mini_kubelet.sim import run_scenario

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def best_of(function: Callable[[], object], repeat: int = 5, number: int = 1) -> float:
    """The fastest of `repeat` runs of `number` calls, in milliseconds per call."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(number):
            function()
        times.append((time.perf_counter() - started) / number)
    return min(times) * 1000


def main() -> None:
    pods = [pod for path in sorted((EXAMPLES / "pods").glob("*.yaml")) for pod in api.load_manifests(path)]
    node = api.load_manifests(EXAMPLES / "nodes" / "node.yaml")[0]
    small = api.load_manifests(EXAMPLES / "nodes" / "small-worker.yaml")[0]
    running = api.load_manifests(EXAMPLES / "pods" / "admission-running.yaml")
    summary = stats.load_summary(EXAMPLES / "summary" / "memory-pressure.json")
    summary_pods = api.load_manifests(EXAMPLES / "summary" / "memory-pods.yaml")
    scenarios = sorted(p for p in (EXAMPLES / "scenarios").glob("*.yaml") if not p.name.startswith("invalid-"))

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
    width = max(len(name) for name, _ in rows)
    print(f"{'benchmark'.ljust(width)}  ms per run")
    for name, ms in rows:
        print(f"{name.ljust(width)}  {ms:10.2f}")


if __name__ == "__main__":
    main()
