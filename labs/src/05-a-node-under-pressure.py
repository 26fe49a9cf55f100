# %% [markdown]
# # Lab 05: a node under pressure, from its own data
#
# A page in the middle of the night: *worker-5 reports `MemoryPressure`, and Pods are being
# evicted.* You have what a cluster gives you: the node's `/stats/summary` JSON, `kubectl get pods
# -o yaml` for the Pods on it, and the node's kubelet settings. In this lab you read them as the
# kubelet's eviction manager does, predict which Pod goes next and the message it is left with,
# word for word, and then change one setting (or one Pod) and predict again; last, you read the
# same configuration as a kubelet of the current release, v1.36, does. Every answer is
# checked against the course's eviction manager run on the same files, so a check tells you what
# the kubelet would have done.
#
# **You will be able to**
#
# 1. turn a KubeletConfiguration into the thresholds the kubelet enforces, and say which are met;
# 2. read a Pod's ranking keys off the Summary, matching stats by UID;
# 3. rank thirty real Pods under memory pressure, and explain why the first is not the biggest;
# 4. predict the next victim and its eviction message, word for word;
# 5. predict a second pass: the minimum reclaim, and what one changed setting does;
# 6. say which new Pods the node refuses while the pressure lasts, and with what message;
# 7. say which thresholds a v1.36 kubelet enforces on the same node, and which of them it meets.
#
# **How the exercises work.** As in the other labs, each exercise is a function for you to write,
# followed by a check cell that prints a table of cases: every case passed, or the first failing
# input with what was expected and what your function returned. Here the expected answers come
# from running chapter 4's code (`mini_kubelet.eviction`, the eviction manager itself for
# exercises 4 to 6) on the same input, with the change the case names applied.
#
# You may use chapter 4's functions as building blocks (the setup cell imports them), or write the
# rules yourself as in Lab 04. The upstream code: `pkg/kubelet/eviction/helpers.go`
# (`ParseThresholdConfig`, `thresholdsMet`, `rankMemoryPressure`, `evictionMessage`,
# `byEvictionPriority`) and `eviction_manager.go` (`synchronize`, `Admit`). Chapter 4 of the
# course links them all.

# %%
import json
from datetime import timedelta

from kubernetes.utils import parse_quantity

from mini_kubelet import features, stats
from mini_kubelet.eviction import (DEFAULT_EVICTION_HARD, format_quantity, get_threshold_quantity,
                                   make_signal_observations, merge_thresholds, parse_threshold_config,
                                   sort_by_eviction_priority)
from mini_kubelet.eviction.api import quantity_string, threshold_quantity_string
from mini_kubelet.labs import case, check
from mini_kubelet.labs import capstone as node
from mini_kubelet.qos import get_pod_qos
from mini_kubelet.resource import get_resource_request_quantity
from mini_kubelet.types import is_critical_pod

MI = 1024**2
all_pods, summary, kubelet = node.load_node()  # examples/cluster/worker-5-*.*
pods = node.active_pods(all_pods)  # the Pods the eviction manager is given: not Succeeded or Failed
by_name = {p.metadata.name: p for p in all_pods}

memory = summary["node"]["memory"]
print(f"worker-5: memory available {memory['availableBytes'] / MI:.0f}Mi of "
      f"{(memory['availableBytes'] + memory['workingSetBytes']) / MI:.0f}Mi; "
      f"{len(all_pods)} Pods, {len(pods)} of them active")
print("kubelet settings:", json.dumps({k: v for k, v in kubelet.items() if k.startswith(("eviction", "enforce"))}))
working_sets = {p["podRef"]["uid"]: p["memory"]["workingSetBytes"] for p in summary["pods"]}
for p in sorted(all_pods, key=lambda p: -working_sets.get(p.metadata.uid, 0)):
    usage = working_sets.get(p.metadata.uid)
    shown = "no stats" if usage is None else f"{usage / MI:6.0f}Mi"
    print(f"  {p.metadata.namespace}/{p.metadata.name:{55 - len(p.metadata.namespace)}} {get_pod_qos(p):10} "
          f"priority {p.spec.priority or 0:>10}  {p.status.phase:9} {shown}")

# %% [markdown]
# The table lists the Pods by memory use. Before you read on, guess: which Pod would you evict?
# The kubelet's answer is in exercise 4.
#
# ## Exercise 1: which thresholds are met?
#
# The kubelet builds its thresholds from the configuration (`ParseThresholdConfig`):
#
# - `evictionHard`, in the order written. **If the field is absent** (or null), the v1.27 defaults apply
#   (`DEFAULT_EVICTION_HARD`: `memory.available<100Mi`, `nodefs.available<10%`,
#   `nodefs.inodesFree<5%`, `imagefs.available<15%`); if it is present, even empty, the signals it
#   leaves out have **no** hard threshold at all.
# - then `evictionSoft`, each with its `evictionSoftGracePeriod`;
# - every threshold gets its signal's `evictionMinimumReclaim`;
# - when `enforceNodeAllocatable` (default `["pods"]`) contains `"pods"`, each `memory.available`
#   threshold whose grace period is 0 gets a copy for `allocatableMemory.available` (the "pods"
#   cgroup's memory, `node.systemContainers[name="pods"]` in the Summary), appended at the end.
#
# `parse_threshold_config(enforce_node_allocatable, hard, soft, grace_periods, min_reclaims)` does
# all but the defaults; each `Threshold` it returns has `signal`, `value`, `grace_period` and
# `min_reclaim`. A threshold is **met** when its quantity (`get_threshold_quantity(value,
# capacity)`, a percentage being of the signal's capacity) is strictly greater than what is
# available; `make_signal_observations(stats.summary_from_json(summary))` gives each signal's
# `available` and `capacity`. Grace periods are ignored here.
#
# Write `kubelet_thresholds(kubelet)` (the thresholds, in the kubelet's order) and
# `thresholds_met(summary, kubelet)`: one tuple `(signal, kind, threshold, available)` per
# threshold met, in that order, where `kind` is `"hard"` when the grace period is 0 (wherever the
# threshold was written) and `"soft"` otherwise, and `threshold` and `available` are `int` bytes.

# %%
def kubelet_thresholds(kubelet: dict) -> list:
    """The node's eviction thresholds, in the order the kubelet keeps them."""
    # BEGIN SOLUTION
    hard = kubelet.get("evictionHard")
    if hard is None:
        hard = DEFAULT_EVICTION_HARD
    return parse_threshold_config(kubelet.get("enforceNodeAllocatable", ["pods"]), hard,
                                  kubelet.get("evictionSoft") or {}, kubelet.get("evictionSoftGracePeriod") or {},
                                  kubelet.get("evictionMinimumReclaim") or {})
    # END SOLUTION


def thresholds_met(summary: dict, kubelet: dict) -> list:
    """Each threshold met now, grace periods ignored: (signal, "hard" or "soft", threshold bytes, available bytes)."""
    # BEGIN SOLUTION
    observations, _ = make_signal_observations(stats.summary_from_json(summary))
    met = []
    for threshold in kubelet_thresholds(kubelet):
        seen = observations.get(threshold.signal)
        if seen is None:
            continue
        quantity = int(get_threshold_quantity(threshold.value, seen.capacity))
        if quantity > seen.available:
            kind = "hard" if threshold.grace_period == timedelta(0) else "soft"
            met.append((threshold.signal, kind, quantity, seen.available))
    return met
    # END SOLUTION


# %%
def met_case(summary, kubelet, note):
    return case(summary, kubelet, expected=node.kubelet_thresholds_met(summary, kubelet), note=note)


check("Exercise 1: which thresholds are met?", thresholds_met, [
    met_case(summary, kubelet, "the node as it is: the hard and the soft memory thresholds"),
    met_case(node.with_memory(summary, node="1Gi"), kubelet, "1Gi available: the soft one only"),
    met_case(node.with_memory(summary, node="750Mi"), kubelet, "exactly the threshold: not met (strictly greater)"),
    met_case(summary, node.with_kubelet(kubelet, "evictionHard removed", evictionHard=None),
             "no evictionHard: the defaults, memory.available<100Mi"),
    met_case(node.with_memory(summary, node="50Mi"), node.with_kubelet(kubelet, "evictionHard {}", evictionHard={}),
             "an empty evictionHard: no hard threshold, not the defaults"),
    met_case(node.with_imagefs(summary, "12Gi"), kubelet, "imagefs below 15% of its capacity"),
    met_case(node.with_imagefs(summary, "12Gi"), node.with_kubelet(kubelet, "evictionHard memory only",
                                                                  evictionHard={"memory.available": "750Mi"}),
             "an evictionHard without imagefs: no imagefs threshold at all"),
    met_case(node.with_memory(summary, pods="700Mi"), kubelet,
             "the pods cgroup low: the allocatableMemory.available copy"),
    met_case(node.with_memory(summary, pods="700Mi"), node.with_kubelet(kubelet, "enforceNodeAllocatable []",
                                                                       enforceNodeAllocatable=[]),
             "nothing enforced on the pods cgroup: no allocatable copy"),
    met_case(summary, node.with_kubelet(kubelet, "soft grace 0s", evictionSoftGracePeriod={"memory.available": "0s"}),
             "a soft threshold with grace 0 is hard, and is copied too"),
])

# %% [markdown]
# ## Exercise 2: a Pod's ranking keys
#
# Under memory pressure the kubelet compares Pods on three keys (`rankMemoryPressure`):
#
# 1. is the Pod's working set **greater than** its memory request? (Pods over their request go first);
# 2. its **priority** (`spec.priority`, 0 when unset; lower goes first);
# 3. its working set **minus** its memory request (larger goes first; it may be negative).
#
# The working set is the Summary's `pods[].memory.workingSetBytes`, found by **`podRef.uid`**, not
# by name: a Pod recreated under the same name is a new Pod. The request is the Pod's, as the
# scheduler counts it: `get_resource_request_quantity(pod, "memory")` (chapter 3: containers summed,
# a larger init container's request instead, plus overhead), 0 for a BestEffort Pod.
#
# Write `memory_keys(pod, summary)` returning the tuple `(over request, priority, working set -
# request)` (a `bool` and two `int`s), or `None` when the Summary has no stats for the Pod.

# %%
def memory_keys(pod, summary: dict):
    """The three keys rankMemoryPressure compares, or None when the summary has no stats for the Pod."""
    # BEGIN SOLUTION
    entry = next((p for p in summary["pods"] if p["podRef"]["uid"] == pod.metadata.uid), None)
    if entry is None:
        return None
    usage = (entry.get("memory") or {}).get("workingSetBytes", 0)
    request = int(get_resource_request_quantity(pod, "memory"))
    return usage > request, pod.spec.priority or 0, usage - request
    # END SOLUTION


# %%
recreated = node.with_new_pod([], {"apiVersion": "v1", "kind": "Pod", "metadata": {
    "name": "jupyter-alice", "namespace": "analytics", "uid": "6f1d3b9a-2c47-4e8d-a5b0-9d7c3e1f4a26"},
    "spec": {"containers": [{"name": "notebook", "image": "quay.io/jupyter/scipy-notebook:2024-05-13"}]}}, "")[0]


def keys_case(pod, note):
    return case(pod, summary, expected=node.kubelet_memory_keys(pod, summary), note=note)


check("Exercise 2: a Pod's ranking keys", memory_keys, [
    keys_case(by_name["nightly-aggregate-28597440-b7xq2"], "Burstable, priority -10, well over its 256Mi"),
    keys_case(by_name["jupyter-alice"], "BestEffort: the request is 0, any use is over it"),
    keys_case(by_name["spark-etl-exec-1"], "Guaranteed under its request: a negative difference"),
    keys_case(by_name["payments-api-84d6f9c7b5-wz6jd"], "two containers: the requests add up"),
    keys_case(by_name["calico-node-9fj3w"], "a CPU request only: its memory request is 0"),
    keys_case(by_name["log-shipper-worker-5"], "a static Pod's mirror: no priority class, priority 0"),
    keys_case(by_name["report-export-28597380-zz9kl"], "a finished Job Pod: no stats"),
    keys_case(recreated, "the same name, another UID: the stats are not its own"),
])

# %% [markdown]
# ## Exercise 3: rank the node's Pods
#
# Sort the Pods, first to be evicted first, by the three keys in turn: a later key only breaks
# ties of the earlier ones. A Pod **without stats** goes before every Pod with stats on the first
# key, and ties with another Pod without stats on the third (so among Pods without stats, only the
# priority counts). Keep Pods that tie on every key in their input order (Python's sort is stable).
#
# The chain is upstream's `orderedBy(exceedMemoryRequests, priority, memory)`: write it as a sort
# key, or as a comparison function with `functools.cmp_to_key`. Note what is not a key: the QoS
# class. Write `rank(pods, summary)` returning the Pods' names in eviction order.

# %%
def rank(pods: list, summary: dict) -> list:
    """The Pods' names, first to be evicted first, under memory pressure."""
    # BEGIN SOLUTION
    def key(pod):
        keys = memory_keys(pod, summary)
        if keys is None:
            return (0, 0, pod.spec.priority or 0, 0)  # no stats: first on the first key, tied on the third
        over, priority, above = keys
        return (1, 0 if over else 1, priority, -above)

    return [p.metadata.name for p in sorted(pods, key=key)]
    # END SOLUTION


# %%
thumbnailer = {"apiVersion": "v1", "kind": "Pod", "metadata": {
    "name": "thumbnailer-7d5f9c8b6-n2x4k", "namespace": "shop", "uid": "0b9e2c4d-5f61-4a8b-9c3d-7e1f2a4b6c80"},
    "spec": {"nodeName": "worker-5", "priority": 100000, "priorityClassName": "shop-critical", "containers": [
        {"name": "thumbnailer", "image": "registry.example/thumbnailer:1.2",
         "resources": {"requests": {"cpu": "200m", "memory": "512Mi"}, "limits": {"cpu": "200m", "memory": "512Mi"}}}]}}
with_thumbnailer = node.with_new_pod(pods, thumbnailer, "the active Pods and a Guaranteed Pod still starting")
backwards = node.PodSet(reversed(pods))
backwards.label = "the active Pods, in reverse order"


def rank_case(pods, summary, note):
    return case(pods, summary, expected=node.kubelet_rank(pods, summary), note=note)


check("Exercise 3: rank the node's Pods", rank, [
    rank_case(pods, summary, "rankMemoryPressure on worker-5"),
    rank_case(backwards, summary, "the input order does not matter when no two Pods tie"),
    rank_case(with_thumbnailer, summary, "a Pod without stats yet goes first, whatever its QoS class"),
    rank_case(node.with_pod(pods, "adhoc-query-5d9f8b6c4-kx7tw", "adhoc-query at priority 0", priority=0), summary,
              "one priority changed"),
    rank_case(node.with_pod(pods, "nightly-aggregate-28597440-b7xq2", "nightly-aggregate requesting 1Gi",
                            memory_request="1Gi"), summary, "one request raised above the Pod's use"),
])

# %% [markdown]
# ## Exercise 4: the next victim and its message
#
# Now one whole `synchronize` pass of a kubelet that has just started (so every threshold was
# first seen at this pass):
#
# 1. The thresholds **acted on** are those met now whose grace period has passed: on a first pass,
#    those with a grace period of 0. None: no eviction (return `None`).
# 2. They are put in Go's `byEvictionPriority` order: memory thresholds (`memory.available`,
#    `allocatableMemory.available`) to the front, and, Go's insertion sort being what it is,
#    **in reverse order** among themselves (`sort_by_eviction_priority` does it). The first one
#    is the threshold the kubelet reclaims for; in this lab's cases it is always a memory one.
#    The order they come in is the configuration's (`memory.available`, then its allocatable
#    copy, added last): `thresholds_met_grace_period` keeps it. A real kubelet walks a Go map there, so on a real node the two memory
#    thresholds come in either order, and either may be named; this lab fixes one.
# 3. Rank the Pods (exercise 3) and walk the ranking, **skipping critical Pods**
#    (`is_critical_pod`: static and mirror Pods, and priorities from 2000000000 up). The first
#    other Pod is the victim; if there is none, return `None`.
# 4. Its message (`evictionMessage`), each sentence ending in `". "`:
#     - `The node was low on resource: memory. `
#     - `Threshold quantity: <threshold>, available: <available>. ` for that first threshold:
#       `threshold_quantity_string(threshold.value, capacity)` prints the threshold as Go does, and
#       `format_quantity(available)` the bytes available to **that threshold's signal**;
#     - if the Summary has stats for the Pod, for each container stat (in the Summary's order) that
#       names one of the Pod's app containers and whose `memory.workingSetBytes` is greater than
#       that container's memory request (none is 0):
#       `Container <name> was using <format_quantity(working set)>, request is <request>, has larger consumption of memory. `
#       where the request prints as `quantity_string(text)` of what the manifest says, or `0`.
#
# Write `evict_one(pods, summary, act_on)` for steps 3 and 4 (given the ordered thresholds acted
# on, return `(name, message)` or `None`), and `next_eviction(pods, summary, kubelet)` for the
# whole pass.

# %%
def evict_one(pods: list, summary: dict, act_on: list):
    """The Pod evicted for the first of these thresholds (already in the kubelet's order), and its message."""
    # BEGIN SOLUTION
    observations, _ = make_signal_observations(stats.summary_from_json(summary))
    threshold = act_on[0]
    seen = observations[threshold.signal]
    named = {p.metadata.name: p for p in pods}
    for name in rank(pods, summary):
        pod = named[name]
        if is_critical_pod(pod):
            continue
        message = "The node was low on resource: memory. "
        message += (f"Threshold quantity: {threshold_quantity_string(threshold.value, seen.capacity)}, "
                    f"available: {format_quantity(seen.available)}. ")
        entry = next((p for p in summary["pods"] if p["podRef"]["uid"] == pod.metadata.uid), None)
        for container_stats in (entry or {}).get("containers", []):
            usage = (container_stats.get("memory") or {}).get("workingSetBytes")
            for container in pod.spec.containers:
                if container.name != container_stats["name"] or usage is None:
                    continue
                written = ((container.resources and container.resources.requests) or {}).get("memory")
                if usage > (parse_quantity(written) if written else 0):
                    message += (f"Container {container.name} was using {format_quantity(usage)}, request is "
                                f"{quantity_string(written) if written else '0'}, has larger consumption of memory. ")
        return name, message
    return None
    # END SOLUTION


def next_eviction(pods: list, summary: dict, kubelet: dict):
    """The Pod a kubelet that has just started evicts on this node, and its message; None if none."""
    # BEGIN SOLUTION
    observations, _ = make_signal_observations(stats.summary_from_json(summary))
    act_on = [t for t in kubelet_thresholds(kubelet) if t.grace_period == timedelta(0) and t.signal in observations
              and get_threshold_quantity(t.value, observations[t.signal].capacity) > observations[t.signal].available]
    if not act_on:
        return None
    return evict_one(pods, summary, sort_by_eviction_priority(act_on))
    # END SOLUTION


# %%
def pass_case(pods, summary, kubelet, note, passes=1):
    evicted = node.kubelet_passes(pods, summary, kubelet, passes)
    return case(pods, summary, kubelet, expected=(evicted[0] if evicted else None) if passes == 1 else evicted, note=note)


check("Exercise 4: the next victim and its message", next_eviction, [
    pass_case(pods, summary, kubelet, "worker-5 as it is: priority -10 and over its request"),
    pass_case(with_thumbnailer, summary, kubelet, "a Pod without stats: first, and a message without containers"),
    pass_case(node.with_pod(pods, "nightly-aggregate-28597440-b7xq2", "nightly-aggregate requesting 1Gi",
                            memory_request="1Gi"), summary, kubelet, "a BestEffort Pod with two containers"),
    pass_case(pods, summary, node.with_kubelet(kubelet, "evictionHard 500Mi", evictionHard={"memory.available": "500Mi"}),
              "hard not met, soft within its grace period: no eviction"),
    pass_case(pods, node.with_memory(summary, pods="700Mi"), kubelet,
              "both memory signals met, in the configuration's order: reversed, the allocatable one is named"),
    pass_case(pods, summary, node.with_kubelet(kubelet, "evictionHard 10%", evictionHard={"memory.available": "10%"}),
              "10%: of each signal's own capacity"),
    pass_case(pods, summary, node.with_kubelet(kubelet, "soft grace 0s", evictionSoftGracePeriod={"memory.available": "0s"}),
              "grace 0: four thresholds acted on, the last copy first"),
    pass_case(node.with_pod(pods, "log-shipper-worker-5", "log-shipper-worker-5 at priority -20", priority=-20), summary,
              kubelet, "a static Pod ranked first is skipped"),
])

# %% [markdown]
# ## Exercise 5: the next pass, and one setting changed
#
# After an eviction the kubelet waits for the Pod to go, then passes again.
# `node.after_eviction(summary, pod)` gives the Summary of that next pass, 30 seconds later: the
# victim's stats gone, its working set added back to what is available, every timestamp moved on.
# On that pass:
#
# 1. The thresholds met are, in this order: those met now (as in exercise 1), then those the
#    previous pass **acted on** that are still met once their **minimum reclaim** is added
#    (`get_threshold_quantity(threshold.min_reclaim, capacity)` on top of the threshold's own
#    quantity), each only once: `merge_thresholds(met_now, met_again)` keeps that order. So the
#    pressure sticks until the kubelet has reclaimed the minimum.
# 2. A threshold is acted on when its grace period has passed since it was **first** seen: one met
#    at both passes was first seen at the first, 30 seconds ago; one met only now, now.
# 3. Then as in exercise 4: `sort_by_eviction_priority`, then `evict_one` with the victim gone.
#
# Write `two_passes(pods, summary, kubelet)` returning the list of the `(name, message)` the first
# and the second pass evict: empty, one or two of them. Each case changes one thing, a setting, a
# Pod's priority or its request: before you run the check, predict each line of its table.

# %%
def two_passes(pods: list, summary: dict, kubelet: dict) -> list:
    """What a kubelet that has just started evicts in its first two passes on this node: [(name, message)]."""
    # BEGIN SOLUTION
    thresholds = kubelet_thresholds(kubelet)

    def met(summary: dict, candidates: list, with_min_reclaim: bool) -> list:
        observations, _ = make_signal_observations(stats.summary_from_json(summary))
        found = []
        for threshold in candidates:
            seen = observations.get(threshold.signal)
            if seen is None:
                continue
            quantity = get_threshold_quantity(threshold.value, seen.capacity)
            if with_min_reclaim and threshold.min_reclaim is not None:
                quantity += get_threshold_quantity(threshold.min_reclaim, seen.capacity)
            if quantity > seen.available:
                found.append(threshold)
        return found

    first_met = met(summary, thresholds, False)
    acted = [t for t in first_met if t.grace_period == timedelta(0)]
    first = evict_one(pods, summary, sort_by_eviction_priority(acted)) if acted else None
    if first is None:
        return []
    victim = next(p for p in pods if p.metadata.name == first[0])
    later = node.after_eviction(summary, victim)
    met_later = merge_thresholds(met(later, thresholds, False), met(later, acted, True))
    waited = timedelta(seconds=node.NEXT_PASS)
    act_on = [t for t in met_later if t.grace_period <= (waited if t in first_met else timedelta(0))]
    rest = [p for p in pods if p is not victim]
    second = evict_one(rest, later, sort_by_eviction_priority(act_on)) if act_on else None
    return [first] if second is None else [first, second]
    # END SOLUTION


# %%
def settings(label: str, **fields):
    return node.with_kubelet(kubelet, label, **fields)


check("Exercise 5: the next pass, and one setting changed", two_passes, [
    pass_case(pods, summary, kubelet, "min reclaim 1Gi: 1324Mi available after it, short of 750Mi + 1Gi", passes=2),
    pass_case(pods, summary, settings("no evictionMinimumReclaim", evictionMinimumReclaim=None),
              "no minimum reclaim: one eviction is enough", passes=2),
    pass_case(pods, summary, settings("evictionMinimumReclaim 500Mi", evictionMinimumReclaim={"memory.available": "500Mi"}),
              "750Mi + 500Mi is now below what is available", passes=2),
    pass_case(node.with_pod(pods, "nightly-aggregate-28597440-b7xq2", "nightly-aggregate requesting 1Gi",
                            memory_request="1Gi"), summary, kubelet, "a request raised: two others go", passes=2),
    pass_case(node.with_pod(pods, "adhoc-query-5d9f8b6c4-kx7tw", "adhoc-query at priority 0", priority=0), summary,
              kubelet, "a priority raised: the BestEffort Pod is spared, the next one is not", passes=2),
    pass_case(pods, summary, settings("soft grace 30s, no minimum reclaim", evictionSoftGracePeriod={"memory.available": "30s"},
                                      evictionMinimumReclaim=None),
              "the soft threshold, first met 30 s ago, acts on the second pass", passes=2),
    pass_case(pods, summary, settings("evictionHard 500Mi", evictionHard={"memory.available": "500Mi"}),
              "no hard threshold met, the soft one waits: nothing", passes=2),
    pass_case(with_thumbnailer, summary, kubelet, "a Pod without stats frees nothing it is seen to use", passes=2),
])

# %% [markdown]
# ## Exercise 6: who gets in while the pressure lasts?
#
# The eviction manager is also the first of the kubelet's admit handlers (chapter 2). While the
# node reports a pressure condition it refuses new Pods (`Admit`):
#
# - the conditions come from the thresholds met, grace periods ignored (exercise 1): a memory
#   signal gives `MemoryPressure`, `nodefs.*` and `imagefs.*` give `DiskPressure`, `pid.available`
#   gives `PIDPressure`; each condition once, in the order of the thresholds met;
# - no condition, or a critical Pod (`is_critical_pod`): admitted;
# - `MemoryPressure` **alone**: a Pod that is not BestEffort (`get_pod_qos`) is admitted, and so is
#   a BestEffort Pod that tolerates the taint `node.kubernetes.io/memory-pressure:NoSchedule` (a
#   toleration whose effect is empty or `NoSchedule`, whose key is empty or that taint's, and whose
#   operator is `Exists`, or empty or `Equal` with an empty value);
# - otherwise refused, with the message `The node had condition: [<the conditions, separated by a space>]. `
#
# Write `admit(pod, summary, kubelet)` returning `(admitted, message)`, the message `""` when the
# Pod is admitted.

# %%
def admit(pod, summary: dict, kubelet: dict) -> tuple:
    """Whether the eviction manager lets a new Pod onto this node now, and the message when it does not."""
    # BEGIN SOLUTION
    condition_of = {"memory.available": "MemoryPressure", "allocatableMemory.available": "MemoryPressure",
                    "nodefs.available": "DiskPressure", "nodefs.inodesFree": "DiskPressure",
                    "imagefs.available": "DiskPressure", "imagefs.inodesFree": "DiskPressure",
                    "pid.available": "PIDPressure"}
    conditions = []
    for signal, *_ in thresholds_met(summary, kubelet):
        if condition_of[signal] not in conditions:
            conditions.append(condition_of[signal])
    if not conditions or is_critical_pod(pod):
        return True, ""
    if conditions == ["MemoryPressure"]:
        if get_pod_qos(pod) != "BestEffort":
            return True, ""
        for toleration in pod.spec.tolerations or []:
            if (toleration.effect or "NoSchedule") == "NoSchedule" \
                    and (toleration.key or "node.kubernetes.io/memory-pressure") == "node.kubernetes.io/memory-pressure" \
                    and (toleration.operator == "Exists" or (toleration.operator or "Equal") == "Equal" and not toleration.value):
                return True, ""
    return False, f"The node had condition: [{' '.join(conditions)}]. "
    # END SOLUTION


# %%
def new_pod(name: str, resources: dict | None = None, **spec):
    """A Pod not yet on the node, with one container."""
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "analytics", "uid": f"new-{name}"},
                "spec": {"containers": [{"name": name, "image": "registry.example/app:1", "resources": resources or {}}], **spec}}
    return node.with_new_pod([], manifest, "")[0]


def admit_case(pod, summary, note):
    return case(pod, summary, kubelet, expected=node.kubelet_admit(pod, summary, kubelet), note=note)


tolerant = new_pod("backfill", tolerations=[{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists",
                                             "effect": "NoSchedule"}])
disk_low = node.with_imagefs(summary, "12Gi")
check("Exercise 6: who gets in while the pressure lasts?", admit, [
    admit_case(new_pod("report"), summary, "BestEffort under MemoryPressure: refused"),
    admit_case(new_pod("api", {"requests": {"memory": "64Mi"}}), summary, "Burstable under MemoryPressure alone: admitted"),
    admit_case(tolerant, summary, "BestEffort, tolerating the memory-pressure taint: admitted"),
    admit_case(new_pod("agent", tolerations=[{"operator": "Exists"}]), summary, "a toleration of every taint"),
    admit_case(new_pod("node-agent", priority=2000001000), summary, "critical: admitted under any pressure"),
    admit_case(new_pod("api", {"requests": {"memory": "64Mi"}}), disk_low, "DiskPressure too: every other Pod refused"),
    admit_case(new_pod("report"), node.with_memory(disk_low, node="4Gi"), "DiskPressure alone"),
    admit_case(new_pod("report"), node.with_memory(summary, node="4Gi"), "no pressure: admitted"),
])

# %% [markdown]
# ## Exercise 7: the node's thresholds in v1.36
#
# *The current release.* Exercise 1 read worker-5's configuration as a v1.27 kubelet does. Two
# things about `evictionHard` changed since, both in how the kubelet fills it in:
#
# - From v1.30 (kubernetes/kubernetes#121834) the Linux defaults have a fifth threshold,
#   `imagefs.inodesFree<5%`, after the four of v1.27. A configuration without `evictionHard` gets
#   all five.
# - From v1.33 (kubernetes/kubernetes#127577) the KubeletConfiguration has a field
#   `mergeDefaultEvictionSettings` (false unless set). When it is `true` and `evictionHard` is
#   given, every default signal the map leaves out is added after the given ones, with its default
#   value; the signals the map names keep their values, `0%` (switched off) included. An empty
#   map is then all the defaults. Without the field, a given map still replaces the defaults as a
#   whole, as in v1.27.
#
# Nothing else in exercise 1 changes. Write `thresholds_met_v136(summary, kubelet)`, the same
# answer as `thresholds_met` for a v1.36 kubelet. One way: work out the `evictionHard` map the
# v1.36 kubelet ends up with and give exercise 1 a copy of the configuration with that map.
# `node.with_inodes(summary, free)` sets the free inodes of the node's filesystem (the image
# filesystem is the same one on worker-5, so both move). The check's expected answers come from
# the course's eviction manager run as v1.36.

# %%
def thresholds_met_v136(summary: dict, kubelet: dict) -> list:
    """Exercise 1's answer for a v1.36 kubelet: the five defaults, and mergeDefaultEvictionSettings."""
    # BEGIN SOLUTION
    defaults = dict(DEFAULT_EVICTION_HARD, **{"imagefs.inodesFree": "5%"})
    hard = kubelet.get("evictionHard")
    if hard is None:
        hard = defaults
    elif kubelet.get("mergeDefaultEvictionSettings"):
        hard = {**hard, **{signal: value for signal, value in defaults.items() if signal not in hard}}
    return thresholds_met(summary, {**kubelet, "evictionHard": hard})
    # END SOLUTION


# %%
def met_case_v136(summary, kubelet, note):
    with features.release_profile("1.36"):
        return case(summary, kubelet, expected=node.kubelet_thresholds_met(summary, kubelet), note=note)


few_inodes = node.with_inodes(summary, 300000)
check("Exercise 7: the node's thresholds in v1.36", thresholds_met_v136, [
    met_case_v136(summary, kubelet, "worker-5 as it is: its evictionHard is given, the same as in v1.27"),
    met_case_v136(few_inodes, kubelet, "inodes below 5%: worker-5 lists nodefs.inodesFree only, as in v1.27"),
    met_case_v136(few_inodes, settings("evictionHard removed", evictionHard=None),
                  "DefaultEvictionHard (1.30+, #121834): imagefs.inodesFree<5% too (v1.27: nodefs only)"),
    met_case_v136(few_inodes, settings("mergeDefaultEvictionSettings", mergeDefaultEvictionSettings=True),
                  "loadConfigFile (1.33+, #127577): the fifth default added after worker-5's four"),
    met_case_v136(node.with_imagefs(summary, "12Gi"),
                  settings("evictionHard memory only, merged", evictionHard={"memory.available": "750Mi"},
                           mergeDefaultEvictionSettings=True),
                  "merged: imagefs.available<15% comes back (exercise 1: no imagefs threshold at all)"),
    met_case_v136(node.with_imagefs(summary, "12Gi"),
                  settings("evictionHard memory only", evictionHard={"memory.available": "750Mi"}),
                  "not merged: a given map still replaces the defaults"),
    met_case_v136(node.with_memory(summary, node="50Mi"),
                  settings("evictionHard {}, merged", evictionHard={}, mergeDefaultEvictionSettings=True),
                  "merged: an empty map is all the defaults, memory.available<100Mi (v1.27: no hard one)"),
    met_case_v136(few_inodes, settings("nodefs.inodesFree 0%, merged",
                                       evictionHard={"memory.available": "750Mi", "nodefs.inodesFree": "0%"},
                                       mergeDefaultEvictionSettings=True),
                  "merged: a signal switched off stays off; imagefs.inodesFree still catches it"),
])

# %% [markdown]
# ## What you learned
#
# - A KubeletConfiguration's `evictionHard` replaces the defaults as a whole; a soft threshold with
#   a grace period of 0 is a hard one; with `enforceNodeAllocatable: [pods]` every hard memory
#   threshold is enforced on the "pods" cgroup too, and a message may then report the cgroup's
#   memory rather than the node's.
# - Stats are matched by UID. The first Pod ranked is the one over its request with the lowest
#   priority and the most memory above its request, not the largest Pod, and not a BestEffort one
#   because it is BestEffort; a Pod with no stats yet goes first of all.
# - The eviction message names the threshold the kubelet acted on first, in Go's order, what its
#   signal had available, and each container above its request, every quantity printed as Go does.
# - A minimum reclaim keeps a threshold met after the eviction that relieved it, so one setting
#   decides whether a second Pod goes; a priority or a request decides which.
# - While the pressure lasts, the node refuses BestEffort Pods (memory) or every Pod that is not
#   critical (disk, PIDs), with a message that lists the conditions.
# - In v1.36 a missing `evictionHard` means five defaults (`imagefs.inodesFree<5%` since 1.30), and
#   `mergeDefaultEvictionSettings: true` (since 1.33) adds the defaults a given map leaves out;
#   without it, worker-5's own map still decides alone.
#
# `mini-kubelet eviction rank --summary SUMMARY.json --pods PODS.yaml --signal memory.available`
# ranks your own node's Pods from the same two files, and chapter 4's *Replaying a node* replays a
# node over time.
