"""`mini-kubelet eviction rank`: a real node's pods ranked for a signal, as the kubelet would rank them.

`mini-kubelet eviction rank --summary SUMMARY.json --pods PODS.yaml --signal SIGNAL` ranks the pods of a
real node: the Summary is what `kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary` prints, the
pods what `kubectl get pods -A -o yaml --field-selector spec.nodeName=NODE` prints. Pods are matched to
their stats by UID, as the kubelet does; finished pods (Succeeded, Failed) are left out, as they are not
active. The ranking is on the stats given: the kubelet ranks on the Summary it reads at the pass that
evicts, so its last line (and the JSON's "note", with "stats_time") says so.

Upstream: pkg/kubelet/eviction/helpers.go buildSignalToRankFunc (the rank functions); the keys and the
reason the first pod goes are sim.rank_rows and sim.decided_by.
"""

from __future__ import annotations

import argparse
import json
from typing import Optional

from kubernetes.client import V1Pod

from mini_kubelet import api, features, qos, sim, stats
from mini_kubelet.cmd.inputs import profile_json, profile_line, with_profile
from mini_kubelet.cmd.run_report import WIDTH, fit_table, wrap
from mini_kubelet.eviction import ranking, signals
from mini_kubelet.eviction.api import containerfs_signals_known
from mini_kubelet.eviction.manager import SPLIT_DISK_GATE_OFF
from mini_kubelet.sim.eviction.replay import EVICTION_MONITORING_PERIOD

RANK_SCHEMA_VERSION = "mini-kubelet.eviction-rank/v1"
_FINISHED = ("Succeeded", "Failed")


# --8<-- [start:rank_pods]
def rank_pods(summary: stats.Summary, pods: list[V1Pod], signal: str, dedicated_image_fs: Optional[bool] = None) -> dict:
    """Rank the active pods for a signal as the kubelet would, with each pod's keys; JSON-ready.

    From 1.29 a summary whose containerFs differs from its imageFs is a split filesystem: the writable
    layers count on nodefs and containerfs, imagefs ranks by nothing but priority and requests; with
    KubeletSeparateDiskGC off the kubelet refuses to rank at all (UsageError).
    Upstream: pkg/kubelet/eviction/helpers.go buildSignalToRankFunc (and the rank function it picks)
    """
    if dedicated_image_fs is None:
        dedicated_image_fs = _has_dedicated_image_fs(summary)
    split = _has_split_container_fs(summary)
    if split and not features.DEFAULT_FEATURE_GATE.enabled("KubeletSeparateDiskGC"):
        raise api.UsageError(f"--summary: containerFs is not imageFs: {SPLIT_DISK_GATE_OFF}, so the eviction manager "
                             "ranks nothing (--feature-gates KubeletSeparateDiskGC=true)")
    node_name = summary.node.node_name
    active, left_out = [], []
    for pod in pods:
        phase = pod.status.phase if pod.status else None
        where = pod.spec.node_name
        if phase in _FINISHED:
            left_out.append({"pod": sim.pod_label(pod), "reason": f"phase {phase}: not an active pod"})
        elif node_name and where and where != node_name:
            left_out.append({"pod": sim.pod_label(pod), "reason": f"runs on node {where}, not {node_name}"})
        else:
            active.append(pod)
    _, stats_func = signals.make_signal_observations(summary)
    ranked = ranking.build_signal_to_rank_func(dedicated_image_fs, split)[signal](list(active), stats_func)
    rows = sim.rank_rows(signal, ranked, stats_func, dedicated_image_fs, split)
    matched = {pod.metadata.uid for pod in active if stats_func(pod) is not None}
    unmatched = [f"{p.pod_ref.namespace}/{p.pod_ref.name} (uid {p.pod_ref.uid})" for p in summary.pods
                 if p.pod_ref.uid not in matched and p.pod_ref.uid not in {q.metadata.uid for q in pods}]
    first = next((i for i, row in enumerate(rows) if not row.critical), None)
    layout = {"split_container_fs": split} if containerfs_signals_known() else {}  # 1.29+ only
    return {
        "version": RANK_SCHEMA_VERSION, "signal": signal, "node": node_name, "dedicated_image_fs": dedicated_image_fs,
        **layout,
        "pods": [{"rank": i + 1, "pod": row.pod, "uid": pod.metadata.uid or "", "qos_class": qos.get_pod_qos(pod),
                  "critical": row.critical, "keys": row.keys} for i, (row, pod) in enumerate(zip(rows, ranked))],
        "first_evicted": None if first is None else rows[first].pod,
        "decided_by": None if first is None else sim.decided_by(rows, first, signal),
        "left_out": left_out,
        "stats_without_pod": unmatched,
        "stats_time": _stats_time(summary),
        "note": STATS_NOTE,
    }
# --8<-- [end:rank_pods]


STATS_NOTE = ("ranked on the stats given, not on those of the moment of an eviction: the kubelet ranks on the "
              f"Summary it reads at the pass that evicts (a fresh one every {EVICTION_MONITORING_PERIOD} s), when "
              "usage, and with it the order, may differ")


def _stats_time(summary: stats.Summary) -> Optional[str]:
    """When the node's stats in the Summary were taken (memory's, else cpu's, else nodefs's), RFC 3339; None if not said.

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.synchronize (summaryProvider.Get at each pass)
    """
    node = summary.node
    for part in (node.memory, node.cpu, node.fs):
        if part is not None and part.time is not None:
            return part.time.strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


def _has_dedicated_image_fs(summary: stats.Summary) -> bool:
    """Guess what cadvisor knows: imagefs is dedicated when it is reported with another capacity than nodefs."""
    image_fs = summary.node.runtime.image_fs if summary.node.runtime else None
    node_fs = summary.node.fs
    if image_fs is None or node_fs is None:
        return False
    return (image_fs.capacity_bytes, image_fs.inodes) != (node_fs.capacity_bytes, node_fs.inodes)


def _has_split_container_fs(summary: stats.Summary) -> bool:
    """From 1.29: the runtime reports a containerFs that is not its imageFs (the stats providers report the
    same filesystem twice unless the runtime splits them).

    Upstream: pkg/kubelet/stats/cri_stats_provider.go ImageFsStats (both, or one twice)
    """
    runtime = summary.node.runtime
    if not containerfs_signals_known() or runtime is None or runtime.container_fs is None or runtime.image_fs is None:
        return False
    def key(fs: stats.FsStats) -> tuple:
        return fs.capacity_bytes, fs.available_bytes, fs.inodes, fs.inodes_free
    return key(runtime.container_fs) != key(runtime.image_fs)


def render_rank_text(report: dict) -> str:
    """The ranking as a table, keys in the order the kubelet compares them; lines fit in 80 columns.

    Upstream: none (a course tool)
    """
    signal, pid = report["signal"], report["signal"] == "pid.available"
    lines = wrap(f"Ranking for {signal} on node {report['node'] or '(unnamed)'}"
                 + ("" if pid or signal.startswith("memory") or signal.startswith("allocatable") else
                    f" (imagefs {'dedicated' if report['dedicated_image_fs'] else 'shared with nodefs'}"
                    + ("; containerfs split from it: writable layers on nodefs" if report.get("split_container_fs") else "")
                    + ")"), "", "  ")
    if pid:
        lines.append("Keys, in order: priority (lower first), then processes (more first).")
        header = ["QoS class", "priority", "processes"]
    else:
        resource = report["pods"][0]["keys"]["resource"] if report["pods"] else "memory"
        usage = "working set" if resource == "memory" else f"{resource} used"
        minus = "inodes - ephemeral-storage request" if resource == "inodes" else f"{usage} - request"
        lines += wrap(f"Keys, in order: over its request? (yes first), priority (lower first), {minus} (larger first).",
                      "", "  ")
        header = ["QoS class", "over request?", "priority", "inodes" if resource == "inodes" else "usage", "request",
                  "inodes - eph. req." if resource == "inodes" else "usage - request"]
    rows = [["#", "pod", *header, ""]]
    for entry in report["pods"]:
        k = entry["keys"]
        mark = "critical: never evicted" if entry["critical"] else ("<- evicted first" if entry["pod"] == report["first_evicted"] else "")
        if not k["has_stats"]:
            cells = ["no stats (ranks first)"] + [""] * (len(header) - 2)
        elif pid:
            cells = [str(k["priority"]), str(k["processes"])]
        else:
            show = str if k["resource"] == "inodes" else sim.format_bytes
            cells = ["yes" if k["exceeds_request"] else "no", str(k["priority"]), show(k["usage"]), show(k["request"]),
                     str(k["usage_minus_request"]) if k["resource"] == "inodes" else sim.format_signed_bytes(k["usage_minus_request"])]
        rows.append([f"{entry['rank']}.", entry["pod"], entry["qos_class"], *cells, mark])
    lines += ["  " + line for line in fit_table(rows, WIDTH - 2)]
    if report["decided_by"]:
        lines += wrap(f"Why {report['first_evicted']} first: {report['decided_by']}.", "", "  ")
    if not report["pods"]:
        lines.append("No active pod to rank.")
    lines += wrap("The QoS class is shown for comparison: the kubelet never reads it when ranking.", "", "  ")
    taken = f" (taken {report['stats_time']})" if report["stats_time"] else ""
    lines += wrap(f"Note: {report['note'].replace('stats given', 'stats given' + taken, 1)}.", "", "  ")
    lines += [line for item in report["left_out"] for line in wrap(f"Left out: {item['pod']}: {item['reason']}", "", "  ")]
    lines += [line for item in report["stats_without_pod"]
              for line in wrap(f"Stats for a pod not in the pods file: {item}", "", "  ")]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """`mini-kubelet eviction rank`: bad input raises ManifestError or UsageError (one line, exit 2).

    Upstream: none (a course tool)
    """
    summary = args.inputs.summary(args.summary, "--summary")  # read and checked, --signal too (main: read_inputs)
    pods = [obj for obj in args.inputs.load(args.pods, "--pods") if obj.kind == "Pod"]
    dedicated = {"auto": None, "dedicated": True, "shared": False}[args.imagefs]
    report = rank_pods(summary, pods, args.signal, dedicated)
    if args.output == "json":
        print(json.dumps(with_profile(report, profile_json(args)), indent=2))
    else:
        if profile_line(args):
            print(profile_line(args))
        print(render_rank_text(report))
    return 0
