"""Chapter 5: the node replay's quiet stretches tell the same story as a replay that runs every step.

`NodeReplay(skip_quiet_passes=True)` does not run an eviction pass that would find nothing (no threshold met, no
condition ending, no local-storage limit passed): it writes the row of signals the pass would have given and
counts it, and a pass reads the Pods' stats only if it ranks them. `Kubelet(batch_settled_resyncs=True)` does a
quiet stretch's settled resyncs and repeated back-offs in one go. Upstream runs every pass (every 10 s,
pkg/kubelet/eviction/eviction_manager.go managerImpl.Start) and every resync (pkg/kubelet/pod_workers.go
completeWork), so each switch is proven here: off, every pass and every resync is run, and every output of
`mini-kubelet run` (the JSON, the text, the plot's data), the kubelet's logs, its events and every Pod's status
are the same, byte for byte, over every example node scenario and over generated ones.
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Optional

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from mini_kubelet import features, resync_batch
from mini_kubelet.cmd import run_node_report
from mini_kubelet.sim.reader import read_scenario, scenario_profile
from mini_kubelet.sim.node.plot import node_panels
from mini_kubelet.sim.node.replay import NodeReplay
from mini_kubelet.sim.node.scenario import load_node_scenario
from mini_kubelet.sim.node.usage import node_summaries, signal_levels
from mini_kubelet.eviction import signals

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch5

NODE_EXAMPLES = sorted(p for p in [*(EXAMPLES / "scenarios").glob("*.yaml"), *(EXAMPLES / "scenarios" / "playbook").glob("*.yaml")]
                       if (yaml.safe_load(p.read_text()) or {}).get("replay") == "node")
SWITCHES = ({"skip_quiet_passes": False}, {"batch_settled_resyncs": False})


def outcome(scenario, taken: Optional[list] = None, **switches) -> dict:
    """Everything a reader sees of a replay, and the kubelet's own records; `taken` gets how many eviction passes
    ran, how many were counted, and how many resync batches were done."""
    replay = NodeReplay(copy.deepcopy(scenario), **switches)
    run, runs, performed = replay.manager.synchronize, [], []
    replay.manager.synchronize = lambda *args: (runs.append(1), run(*args))[1]
    perform = resync_batch.ResyncPlan.perform
    resync_batch.ResyncPlan.perform = lambda self, before: (performed.append(before), perform(self, before))
    try:
        trace = replay.run()
    finally:
        resync_batch.ResyncPlan.perform = perform
    if taken is not None:
        taken += [len(runs), trace.passes, len(performed)]
    kl = replay.kubelet
    return {"json": run_node_report.render_json(trace), "text": run_node_report.render_text(trace),
            "plot": repr(node_panels(trace)), "kubelet log": kl.handlers.log, "workers log": kl.pod_workers.log,
            "events": [(e.time, e.type, e.reason, e.involved, e.message) for e in kl.recorder.events],
            "statuses": [repr(kl.pod_status(pod)) for pod in kl.pod_manager.get_pods()]}


def example(path: Path):
    doc, where, base, name = read_scenario(path)
    scenario_profile(doc, where)  # taken out: the caller replays under it (in_profile)
    return load_node_scenario(doc, where, base, name)


def in_profile(path: Path):
    """The release and gates the scenario names, for its loading and its replay (none: the reference release)."""
    doc, where, _, _ = read_scenario(path)
    profile = scenario_profile(doc, where)
    return features.release_profile(*profile) if profile else contextlib.nullcontext()


@pytest.mark.parametrize("switch", SWITCHES, ids=lambda s: ",".join(s))
@pytest.mark.parametrize("path", NODE_EXAMPLES, ids=lambda p: p.stem)
def test_every_example_is_the_same_with_every_step_run(path, switch, default_outcomes):
    with in_profile(path):
        scenario = example(path)
        if path not in default_outcomes:  # each example's replay with both shortcuts taken, once for both switches
            default_outcomes[path] = (outcome(scenario, taken := []), taken)
        assert default_outcomes[path][0] == outcome(scenario, **switch)


@pytest.fixture(scope="module")
def default_outcomes() -> dict:
    return {}


@pytest.mark.parametrize("name, batches", [("day-110-pods.yaml", 100), ("node-resize-after-eviction.yaml", 5)])
def test_the_examples_take_both_shortcuts(name, batches, default_outcomes):
    """On the day of 110 Pods, and around a resize Deferred then allocated, most passes are accounted for, not run,
    and the Kubelet's resyncs go in batches (else the equal outcomes above would prove nothing)."""
    path = EXAMPLES / "scenarios" / name
    if path not in default_outcomes:
        with in_profile(path):
            default_outcomes[path] = (outcome(example(path), taken := []), taken)
    runs, passes, performed = default_outcomes[path][1]
    assert runs < passes / 2 and performed >= batches


def test_signal_levels_are_what_a_pass_observes():
    """signal_levels reads, for many instants at once, what makeSignalObservations reads from the node's Summary
    (pkg/kubelet/eviction/helpers.go makeSignalObservations), signal for signal."""
    replay = NodeReplay(example(EXAMPLES / "scenarios" / "node-crash-loop-pressure.yaml"))
    replay.run()
    _, terms, _ = replay._usage_terms(replay._active_pods())
    times = list(range(0, 2400, 7))
    wanted = frozenset(signals.SIGNAL_TO_NODE_CONDITION)
    levels = signal_levels(replay.sc, terms, replay.store, replay.node_usage, times, wanted)
    summaries = node_summaries(replay.sc, terms, replay.store, replay.node_usage, times, replay.clock.start)
    for got, summary in zip(levels, summaries):
        observed = signals.make_signal_observations(summary)[0]
        assert {k: (v.available, v.capacity) for k, v in got.items()} == \
            {k: (v.available, v.capacity) for k, v in observed.items() if k in wanted}


def test_the_measured_pods_are_the_active_ones_and_those_still_running():
    """A live Pod found with nothing running is not asked again until StartContainer starts one of its containers:
    at every call the measured Pods are what asking every live Pod gives (an evicted Pod is left out once stopped)."""
    replay = NodeReplay(example(EXAMPLES / "scenarios" / "node-evicted-replacement.yaml"))
    measured, calls = replay._measured, []

    def checked(active):
        got, uids = measured(active), {p.metadata.uid for p in active}
        every = [lp for uid, lp in replay.live.items() if uid in uids or lp.any_running()]
        unstarted = [u for u in uids if u not in replay.live and u in replay.plans]
        assert got[:len(every)] == every and sorted(lp.uid for lp in got[len(every):]) == sorted(unstarted)
        calls.append(len(replay.stopped))
        return got
    replay._measured = checked
    replay.run()
    assert max(calls, default=0) > 0


# --- generated node scenarios: a few Pods, crash loops, kills at the limit, pressure, deletions, usage changes ---

def _pod(i: int, memory, limit, run, replica_set: bool, ephemeral: bool, static: bool) -> dict:
    resources = {"requests": {"cpu": "100m", "memory": "128Mi"}}
    if limit:
        resources["limits"] = {"memory": f"{limit}Mi"}
    if ephemeral:
        resources.setdefault("limits", {})["ephemeral-storage"] = "1Gi"
    entry = {"manifest": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "gen"},
                          "spec": {"containers": [{"name": "app", "image": "registry.example/app:1",
                                                   "resources": resources}]}},
             "usage": {"memory": memory, "logs": {"ramp": {"0s": "0", "30m": "2Gi"}}}}
    if run is not None:
        entry["run"] = {"app": {"after": f"{run[0]}s", "exitCode": run[1]}}
    if static:
        entry["source"] = "file"  # a static Pod: no ReplicaSet owns it
    elif replica_set:
        entry["replicaSet"] = f"rs{i}"
    return entry


memories = st.one_of(st.integers(50, 3000).map(lambda m: f"{m}Mi"),
                     st.tuples(st.integers(0, 9), st.integers(50, 3000), st.integers(10, 20), st.integers(50, 3000))
                     .map(lambda r: {"ramp": {f"{r[0]}m": f"{r[1]}Mi", f"{r[2]}m": f"{r[3]}Mi"}}))
pods = st.builds(lambda *a: a, memories, st.one_of(st.none(), st.integers(200, 2500)),
                 st.one_of(st.none(), st.tuples(st.integers(5, 400), st.sampled_from([0, 1]))),
                 st.booleans(), st.integers(0, 5).map(lambda n: n == 0), st.integers(0, 7).map(lambda n: n == 0))
events = st.tuples(st.integers(1, 19), st.sampled_from(["delete", "set", "pull", "resize"]), st.integers(0, 4))


@settings(max_examples=10, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(pods, min_size=1, max_size=5), st.lists(events, max_size=3), st.sampled_from(["100Mi", "500Mi"]),
       st.booleans(), st.sampled_from(["30s", "5m"]), st.sampled_from(["1.27", "1.36"]))
def test_generated_scenarios_are_the_same_with_every_step_run(entries, happenings, hard, soft, transition, release):
    same_with_every_step_run(generated(entries, happenings, hard, soft, transition, release), release)


@settings(max_examples=6, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(pods, min_size=2, max_size=4), st.lists(events, max_size=2),
       st.lists(st.tuples(st.integers(1, 19), st.just("resize"), st.integers(0, 4)), min_size=1, max_size=2),
       st.sampled_from(["100Mi", "500Mi"]))
def test_generated_resizes_are_the_same_with_every_step_run(entries, happenings, resizes, hard):
    """A resize ends a quiet stretch (its conditions, cgroup writes and the kernel's limit) as every step run would."""
    doc = generated(entries, sorted(happenings + resizes), hard, False, "30s", "1.36")
    assert any("resize" in e for e in doc["events"]) or all(e[-1] for e in entries)  # only static Pods: nothing to resize
    same_with_every_step_run(doc, "1.36")


def same_with_every_step_run(doc: dict, release: str) -> None:
    with features.release_profile(release):
        scenario = load_node_scenario(doc, "<generated>", Path("."), "generated")
        quick = outcome(scenario)
        for switch in SWITCHES:
            assert outcome(scenario, **switch) == quick


def generated(entries, happenings, hard, soft, transition, release) -> dict:
    """A generated node scenario: the Pods, the happenings (a resize only under 1.36), the eviction settings."""
    doc = {"replay": "node", "duration": "20m",
           "node": {"name": "gen", "capacity": {"memory": "6Gi", "cpu": "8", "nodefs": "40Gi", "inodes": 2000000,
                                                "maxpid": 4194304},
                    "usage": {"memory": "1Gi", "nodefs": "20Gi", "inodes": 300000, "pids": 300},
                    "kubelet": {"evictionHard": {"memory.available": hard, "nodefs.available": "10%"},
                                "evictionPressureTransitionPeriod": transition}},
           "images": [{"name": "registry.example/old:1", "size": "8Gi", "lastUsed": "-48h", "detected": "-72h"}],
           "pods": [_pod(i, *entry) for i, entry in enumerate(entries)], "events": []}
    if soft:
        doc["node"]["kubelet"].update(evictionSoft={"memory.available": "1500Mi"},
                                      evictionSoftGracePeriod={"memory.available": "1m"})
    api_pods = [f"p{i}" for i, entry in enumerate(entries) if not entry[-1]]
    for at, kind, target in happenings:
        if (kind != "pull" and not api_pods) or (kind == "resize" and release != "1.36"):
            continue
        name = api_pods[target % len(api_pods)] if api_pods else ""
        # a resize: allocated at once or Deferred (more memory requested than the node has), a memory limit added or raised
        resize = {"requests": {"cpu": f"{200 * (target + 1)}m", "memory": f"{target + 1}Gi"},
                  "limits": {"memory": f"{target + 2}Gi"}}
        doc["events"].append({"at": f"{at}m", **({"deletePod": {"pod": name}} if kind == "delete" else
                                                  {"set": {"pod": name, "container": "app", "memory": "2Gi"}}
                                                  if kind == "set" else
                                                  {"resize": {"pod": name, "containers": {"app": resize}}}
                                                  if kind == "resize" else
                                                  {"pullImage": {"name": f"registry.example/big:{at}", "size": "10Gi"}})})
    return doc


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.sampled_from([resync_batch.SETTLED] * 4 + [resync_batch.REPEATED,
                                                                                          resync_batch.DROPPED])),
                max_size=12), st.integers(1, 70), st.integers(0, 300), st.integers(-5, 140))
def test_a_perform_looks_only_at_the_takes_in_its_window(takes, step, done, length):
    """ResyncPlan._in_window leaves out only settled takes with no tick in the window: every take with one is there,
    in the pod manager's order."""
    from types import SimpleNamespace

    plan = resync_batch.ResyncPlan.__new__(resync_batch.ResyncPlan)
    plan.pods = [resync_batch._Takes(f"u{i}", kind, first, step if kind == resync_batch.SETTLED else 3, 0.0,
                                     first + 9 if kind == resync_batch.REPEATED else None)
                 for i, (first, kind) in enumerate(takes)]
    pods = {f"u{i}": SimpleNamespace(metadata=SimpleNamespace(namespace="ns", name=f"p{i}")) for i in range(len(takes))}
    order = {uid: rank for rank, uid in enumerate(reversed(list(pods)))}
    plan.kubelet = SimpleNamespace(pod_manager=SimpleNamespace(generation=1, order=order, pod_by_uid=pods))
    plan._ordered = None
    count = done + length

    def has_a_take(entry) -> bool:
        t = entry[0]
        first = t.first + max(0, -(-(done - t.first) // t.step)) * t.step
        return t.kind != resync_batch.SETTLED or bool(range(first, count, t.step))
    window = plan._in_window(done, count)
    everything = plan._ordered[1]
    assert [e for e in everything if has_a_take(e)] == [e for e in window if has_a_take(e)]
    assert [e[2] for e in window] == sorted(e[2] for e in window)
