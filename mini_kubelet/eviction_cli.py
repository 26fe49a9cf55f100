"""`mini-kubelet run` (replay a scenario) and `mini-kubelet eviction rank` (rank real pods for a signal).

`mini-kubelet run SCENARIO.yaml [--plot out.png] [--output text|json]` replays the scenario (the format
is described in mini_kubelet/sim/__init__.py) and prints the timeline: the passes where something changed, then a
summary. If the scenario has an `expect:` block, the outcome is checked against it and the command exits
1 when it differs. The JSON output is a stable structure, version "mini-kubelet.run/v1":

    {"version": "mini-kubelet.run/v1",
     "scenario": {"name", "source", "description", "duration", "node": {"name", "capacity": {...},
                  "dedicated_image_fs": bool}, "kubelet": {the settings, defaults filled in}},
     "thresholds": [{"signal", "text", "hard", "grace_period", "min_reclaim"}],
     "steps": [{"time", "observations": {signal: {"available", "capacity"}}, "thresholds_met": [text],
                "thresholds_acted_on": [text], "conditions": [str], "reclaimed": null | {"bytes", "inodes",
                "images", "sufficient"}, "evictions": [{"time", "pod", "signal", "threshold", "hard",
                "grace_period_override", "grace_period", "stops_at", "message", "annotations",
                "ranking": [{"pod", "keys", "critical"}], "decided_by"}], "notes": [str]}],
     "admissions": [{"time", "pod", "admitted", "reason", "message"}],
     "happenings": [{"time", "text"}],
     "conditions": [{"type", "from", "to"}],
     "expect": null | {"checked": int, "failures": [str]}}

Times are seconds since the start; sizes are bytes.

`mini-kubelet eviction rank --summary SUMMARY.json --pods PODS.yaml --signal SIGNAL` ranks the pods of a
real node: the Summary is what `kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary` prints, the
pods what `kubectl get pods -A -o yaml --field-selector spec.nodeName=NODE` prints. Pods are matched to
their stats by UID, as the kubelet does; finished pods (Succeeded, Failed) are left out, as they are not
active.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kubernetes.client import V1Pod

from . import api, eviction_rank, eviction_report, sim, stats
from .eviction import signals


def _check_plot_path(path: str) -> None:
    """A .png or .svg name; an existing file is replaced only if it is an image (nothing a user wrote is lost)."""
    target = Path(path)
    if target.suffix.lower() not in (".png", ".svg"):
        raise api.UsageError(f"--plot: {path}: expected a file name ending in .png or .svg")
    if target.exists():
        head = target.read_bytes()[:256] if target.is_file() else b""
        if not (head.startswith(b"\x89PNG") or b"<svg" in head):
            raise api.UsageError(f"--plot: {path}: the file exists and is not an image; not overwriting it")


def run(args: argparse.Namespace) -> int:
    """Replay a scenario; print the timeline; exit 1 if it differs from the scenario's expect block.

    Upstream: none (a course tool)
    """
    if args.plot:
        _check_plot_path(args.plot)
    timeline = sim.run_scenario(args.scenario)
    print(eviction_report.render_json(timeline) if args.output == "json" else eviction_report.render_text(timeline))
    if args.plot:
        sim.plot_timeline(timeline, args.plot)
    if timeline.scenario.expect is not None and sim.check_expect(timeline)[1]:
        return 1
    return 0


def rank(args: argparse.Namespace) -> int:
    """`mini-kubelet eviction rank`: bad input raises ManifestError or UsageError (one line, exit 2).

    Upstream: none (a course tool)
    """
    if not signals.valid_signal(args.signal):
        raise api.UsageError(f"--signal: unsupported eviction signal {args.signal} (expected one of: "
                             f"{', '.join(signals.SIGNAL_TO_RESOURCE)})")
    summary = stats.load_summary(args.summary)
    pods = [obj for obj in api.load_manifests(args.pods) if isinstance(obj, V1Pod)]
    if not pods:
        raise api.UsageError(f"{args.pods}: kind: no Pod in this file")
    for pod in pods:
        if not pod.metadata.uid:
            raise api.UsageError(f"{args.pods}: {pod.metadata.name}: metadata.uid: missing; the kubelet matches stats "
                                 "by UID (use the output of kubectl get pods -o yaml)")
    dedicated = {"auto": None, "dedicated": True, "shared": False}[args.imagefs]
    report = eviction_rank.rank_pods(summary, pods, args.signal, dedicated)
    print(json.dumps(report, indent=2) if args.output == "json" else eviction_rank.render_rank_text(report))
    return 0


def register(commands) -> None:
    """Add `mini-kubelet run` and `mini-kubelet eviction rank` to the command line.

    Upstream: none (a course tool)
    """
    parser = commands.add_parser("run", help="replay a node under pressure (a scenario) on a virtual clock")
    parser.add_argument("scenario", metavar="SCENARIO.yaml", help="a scenario file (see examples/scenarios/)")
    parser.add_argument("--plot", metavar="OUT.png", help="also draw the signals against their thresholds (PNG or SVG)")
    parser.add_argument("--output", choices=("text", "json"), default="text", help="text (default) or json")
    parser.set_defaults(run=run)
    eviction = commands.add_parser("eviction", help="the eviction manager's decisions on real data")
    actions = eviction.add_subparsers(required=True, metavar="ACTION")
    ranker = actions.add_parser("rank", help="rank a node's pods for a signal, from /stats/summary and kubectl output")
    ranker.add_argument("--summary", required=True, metavar="SUMMARY.json",
                        help="kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary")
    ranker.add_argument("--pods", required=True, metavar="PODS.yaml",
                        help="kubectl get pods -A -o yaml --field-selector spec.nodeName=NODE")
    ranker.add_argument("--signal", required=True, metavar="SIGNAL",
                        help="memory.available, allocatableMemory.available, nodefs.available, nodefs.inodesFree, "
                             "imagefs.available, imagefs.inodesFree or pid.available")
    ranker.add_argument("--imagefs", choices=("auto", "dedicated", "shared"), default="auto",
                        help="is imagefs its own filesystem? (default: guessed from the summary)")
    ranker.add_argument("--output", choices=("text", "json"), default="text", help="text (default) or json")
    ranker.set_defaults(run=rank)
