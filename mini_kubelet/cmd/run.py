"""`mini-kubelet run`: replay a scenario on a virtual clock and print its timeline.

`mini-kubelet run SCENARIO.yaml [--plot out.png [--plot-width INCHES]] [--output text|json]` replays the scenario (the format
is described in mini_kubelet/sim/__init__.py). A lifecycle scenario (`replay: lifecycle`, chapter 1) prints
what `kubectl get pods -w` and `kubectl describe pod` would show; its JSON, "mini-kubelet.lifecycle/v1", is
described in mini_kubelet/cmd/run_lifecycle_report.py. A one-node scenario (`replay: node`, chapter 5) prints
its timeline, `kubectl get events` and `kubectl get pods`; its JSON, "mini-kubelet.node/v1", is described in
mini_kubelet/cmd/run_node_report.py. A node-under-pressure scenario (chapter 4) prints the
passes where something changed, then a summary. If the scenario has an `expect:` block, the outcome is checked
against it and the command exits 1 when it differs. The eviction JSON is a stable structure, version
"mini-kubelet.run/v1":

    {"version": "mini-kubelet.run/v1",
     "profile": {"kubernetesVersion": "1.27", "source": str, "featureGates": {gate: bool}},
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
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from mini_kubelet import api


def _check_plot_path(path: str) -> None:
    """A .png or .svg name; an existing file is replaced only if it is an image (nothing a user wrote is lost)."""
    target = Path(path)
    if target.suffix.lower() not in (".png", ".svg"):
        raise api.UsageError(f"--plot: {path}: expected a file name ending in .png or .svg")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        problem = f"{folder} is not a directory" if folder.exists() else f"no such directory {folder}"
        raise api.UsageError(f"--plot: {path}: {problem}")
    if target.exists():
        head = target.read_bytes()[:256] if target.is_file() and os.access(target, os.R_OK) else b""
        if not (head.startswith(b"\x89PNG") or b"<svg" in head):
            raise api.UsageError(f"--plot: {path}: the file exists and is not an image; not overwriting it")
        if not os.access(target, os.W_OK):
            raise api.UsageError(f"--plot: {path}: the file cannot be written (permission denied)")
    else:
        import tempfile

        try:  # a trial file proves the directory can be written (permissions, a read-only mount)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".plot-", suffix=target.suffix):
                pass
        except OSError as err:
            raise api.UsageError(f"--plot: {path}: cannot write in the directory {folder} "
                                 f"({err.strerror or err})") from None


def run(args: argparse.Namespace) -> int:
    """Replay a scenario; print the timeline; exit 1 if it differs from the scenario's expect block.

    Upstream: none (a course tool)
    """
    if args.plot:
        _check_plot_path(args.plot)
    if not 3 <= args.plot_width <= 40:
        raise api.UsageError(f"--plot-width: {args.plot_width:g}: expected inches from 3 to 40")
    from mini_kubelet.sim.check import check_fields
    from mini_kubelet.sim.reader import read_scenario

    doc, where, base, name = read_scenario(args.scenario)
    use_scenario_release(args, doc, where)
    refusal = refuses_to_start(doc, where)
    if refusal:
        from mini_kubelet.cmd.inputs import profile_json, profile_line

        if args.output == "json":
            import json
            print(json.dumps({"version": "mini-kubelet.refused/v1", "profile": profile_json(args), "refused": refusal},
                             indent=2))
        else:
            print("\n".join(filter(None, [profile_line(args), refusal])))
        return 1
    kind = doc.get("replay") if isinstance(doc, dict) and doc.get("replay") in ("lifecycle", "node") else "eviction"
    if kind == "eviction" and not isinstance(doc, dict):
        raise api.ManifestError(where, "", f"expected a mapping, got {api.type_name(doc)}")
    check_fields(doc, kind, where, base)  # from the field tables: a bad field is one line before the client loads
    if kind == "lifecycle":
        return _run_lifecycle(args, doc, where, base, name)
    if kind == "node":
        return _run_node(args, doc, where, base, name)
    from mini_kubelet import sim
    from mini_kubelet.cmd import run_report

    timeline = sim.run_scenario(sim.load_scenario(doc, name=name, where=where, base=base))
    return _report(args, timeline, run_report, sim.plot_timeline, sim.check_expect)


def _run_lifecycle(args: argparse.Namespace, doc, where: str, base: Path, name: str) -> int:
    """A lifecycle scenario (`replay: lifecycle`): replay it, print the timeline, check its expect block."""
    from mini_kubelet.cmd import run_lifecycle_report
    from mini_kubelet.sim.lifecycle.expect import check_lifecycle_expect
    from mini_kubelet.sim.lifecycle.plot import plot_lifecycle
    from mini_kubelet.sim.lifecycle.replay import run_lifecycle
    from mini_kubelet.sim.lifecycle.scenario import load_lifecycle_scenario

    timeline = run_lifecycle(load_lifecycle_scenario(doc, where, base, name))
    return _report(args, timeline, run_lifecycle_report, plot_lifecycle, check_lifecycle_expect)


def _run_node(args: argparse.Namespace, doc, where: str, base: Path, name: str) -> int:
    """A one-node scenario (`replay: node`): replay it, print the report, check its expect block."""
    from mini_kubelet.cmd import run_node_report
    from mini_kubelet.sim.node.replay import run_node
    from mini_kubelet.sim.node.scenario import load_node_scenario
    from mini_kubelet.sim.node.trace import check_node_expect

    trace = run_node(load_node_scenario(doc, where, base, name))
    return _report(args, trace, run_node_report, run_node_report.plot_node, check_node_expect)


def use_scenario_release(args: argparse.Namespace, doc, where: str) -> None:
    """Answer for the release a scenario names (kubernetesVersion:, featureGates:), unless a flag chose one.

    The two fields are taken out of the document, so each kind's reader sees only its own fields. An expect
    block states what the scenario's own release does (v1.27 unless it names one): under another release it
    is still checked, but a difference is news about that release, not a failure (args.expect_release).
    """
    from mini_kubelet import features
    from mini_kubelet.cmd.main import release_from_input_missing, use_profile
    from mini_kubelet.sim.reader import scenario_profile

    named = scenario_profile(doc, where)
    own = named[0] if named else features.REFERENCE_RELEASE
    if not named:
        release_from_input_missing(args)
    if named and not args.kubernetes_version:
        gates = ",".join(f"{k}={str(v).lower()}" for k, v in named[1].items())
        args.feature_gates = ",".join(filter(None, [gates, args.feature_gates]))
        try:
            use_profile(args, own, f"scenario {where}")
        except api.UsageError as err:  # --feature-gates names a gate the scenario's release lacks
            raise api.ManifestError(where, "featureGates", str(err).split(": ", 1)[1]) from None
    release = features.DEFAULT_FEATURE_GATE.release
    if named and release != own:
        print(f"note: {where} names Kubernetes {own}; answering for {release}, as --kubernetes-version asks",
              file=sys.stderr)
    args.expect_release = own


def refuses_to_start(doc, where: str) -> str:
    """Why the scenario's kubelet would not start ("" if it starts): cgroup v1 with failCgroupV1 true (1.35's default).

    A scenario's node may say `cgroupVersion: 1` (2 by default) and its kubelet `failCgroupV1:` (from 1.31);
    both are taken out of the document. Upstream: pkg/kubelet/cm/container_manager_linux.go (the check at
    start-up, KEP-4569) and pkg/kubelet/apis/config/v1beta1/defaults.go (failCgroupV1's default, #134298)
    """
    from mini_kubelet import features

    node = doc.get("node") if isinstance(doc, dict) else None
    if not isinstance(node, dict):
        return ""
    version = node.pop("cgroupVersion", 2)
    if version not in (1, 2) or isinstance(version, bool):
        raise api.ManifestError(where, "node.cgroupVersion", f"expected 1 or 2, got {version!r}")
    kubelet = node.get("kubelet") if isinstance(node.get("kubelet"), dict) else {}
    gate = features.DEFAULT_FEATURE_GATE
    fail = kubelet.pop("failCgroupV1", None)
    if fail is not None and (not isinstance(fail, bool) or gate.release in features.RELEASES[:4]):
        problem = "expected true or false" if not isinstance(fail, bool) else f"not a setting of Kubernetes {gate.release} " \
                  "(failCgroupV1 arrived in 1.31)"
        raise api.ManifestError(where, "node.kubelet.failCgroupV1", problem)
    if version == 2:
        return ""
    if fail if fail is not None else gate.changed("FailCgroupV1"):
        why = "as its kubelet config says" if fail else "its default from 1.35, #134298"
        return (f"{where}: the node is on cgroup v1 and failCgroupV1 is true ({why}): the kubelet refuses to start, so "
                "nothing in this scenario runs. Set failCgroupV1: false to run it on cgroup v1.")
    if gate.release not in features.RELEASES[:4]:
        print(f"note: {where}: cgroup v1 is in maintenance mode from 1.31 (KEP-4569): the kubelet warns and records a "
              "CgroupV1 event", file=sys.stderr)
    return ""


def _report(args: argparse.Namespace, result, report, plot, check_expect) -> int:
    """Print the replay's report (text or JSON), draw its plot, and exit 1 if it differs from its expect block."""
    from mini_kubelet.cmd.inputs import profile_json, profile_line

    if args.output == "json":
        print(report.render_json(result, profile_json(args)))
    else:
        if profile_line(args):
            print(profile_line(args))
        print(report.render_text(result))
    if args.plot:
        try:
            plot(result, args.plot, args.plot_width)
        except OSError as err:  # the directory changed while the replay ran
            raise api.UsageError(f"--plot: {args.plot}: cannot write ({err.strerror or err})") from None
    if result.scenario.expect is None or not check_expect(result)[1]:
        return 0
    from mini_kubelet import features

    release, own = features.DEFAULT_FEATURE_GATE.release, getattr(args, "expect_release", features.REFERENCE_RELEASE)
    if release == own:
        return 1
    print(f"note: the scenario's expect: block is what Kubernetes {own} does; the checks that fail above are what "
          f"{release} does otherwise", file=sys.stderr)
    return 0
