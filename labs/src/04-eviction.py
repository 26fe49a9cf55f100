# %% [markdown]
# # Lab 04: eviction — thresholds, signals, ranking and a replayed node
#
# When a node runs short of memory, disk or process IDs, the kubelet's **eviction manager** picks
# a Pod and stops it. Every step of that decision is a small rule: how a threshold flag is
# parsed, how a signal is computed from the Summary API, when a threshold counts as met, how
# Pods are ranked, and what message the evicted Pod is left with. In this lab you write those
# rules yourself, as Kubernetes v1.27 applies them, and check your answers against the numbers in
# upstream's own unit tests. Then you replay a whole node on a virtual clock and read the result
# off a plot, and last you work out the grace period an eviction gives, release by release up to
# the current one, v1.36.
#
# **You will be able to**
#
# 1. parse `--eviction-hard` flag strings, percentages in float32 included;
# 2. compute the eviction signals from a `/stats/summary` document;
# 3. decide whether a threshold is met, with its minimum reclaim;
# 4. rank Pods under memory pressure, and see for yourself that the order is not the QoS order;
# 5. predict the evicted Pod and its status message, word for word;
# 6. replay a node under memory pressure and read the timing rules off a plot;
# 7. give the grace period of a hard or a soft eviction in v1.27, in v1.36 and in between.
#
# **How the exercises work.** Each exercise is a function for you to write, followed by a check
# cell. The check runs your function on cases whose answers come from the upstream Go code (the
# last column names the upstream test or rule) and prints a table: every case passed, or the
# first failing input with what was expected and what your function returned. Until you write
# the function, the check says "not done yet".
#
# The upstream code for this lab is in `pkg/kubelet/eviction/`: `helpers.go`
# (`ParseThresholdConfig`, `makeSignalObservations`, `thresholdsMet`, `rankMemoryPressure`,
# `evictionMessage`), `api/types.go` (`GetThresholdQuantity`) and `eviction_manager.go`
# (`synchronize`). Chapter 4 of the course links them all.

# %%
from decimal import Decimal

import matplotlib.pyplot as plt
import numpy as np
from kubernetes.utils import parse_quantity

from mini_kubelet import api
from mini_kubelet.eviction.api import format_quantity, quantity_string
from mini_kubelet.labs import Raises, case, check
from mini_kubelet.qos import get_pod_qos

MI, GI = 1024**2, 1024**3

# %% [markdown]
# ## Exercise 1: parse an eviction flag
#
# `--eviction-hard` and `--eviction-soft` take a list like
# `memory.available<100Mi,nodefs.available<10%`. The kubelet reads it in two stages:
#
# **Splitting** (`LangleSeparatedMapStringString` in `k8s.io/component-base/cli/flag`):
#
# - split the text on `,`; skip items that are **empty** (`""`; an item of spaces is not empty);
# - split each item at its **first** `<`; an item without `<` is an error
#   (`malformed pair, expect string<string`);
# - strip spaces around the signal and the value; a signal given twice keeps its **last** value.
#
# **Each value** (`parseThresholdStatement` in `helpers.go`):
#
# - the signal must be one of the seven in `SIGNALS` below, else `unsupported eviction signal …`;
# - a value ending in `%`: exactly `"0%"` or `"100%"` **drops** the threshold (no error). Otherwise
#   strip the trailing `%`s, read the number (a plain decimal number) as a **float32**, and divide
#   by 100 **in float32** (use `np.float32`); a result below 0 or above 1 is an error. Return the
#   fraction as a Python `float` (so 10% is `0.10000000149011612`, not `0.1`);
# - anything else is a Kubernetes quantity (`parse_quantity` gives an exact `Decimal`, and raises
#   `ValueError` on nonsense); it must be **greater than zero**. Return it as an `int`, rounded up
#   (`api.value` does that).
#
# Write `parse_eviction_flag(text)` returning a dict from signal to value (an `int` for a
# quantity, a `float` for a percentage), raising `ValueError` for every error above.

# %%
SIGNALS = {"memory.available", "allocatableMemory.available", "nodefs.available", "nodefs.inodesFree",
           "imagefs.available", "imagefs.inodesFree", "pid.available"}


def parse_eviction_flag(text: str) -> dict:
    """The thresholds of an --eviction-hard style flag: signal -> bytes (int) or float32 fraction (float)."""
    # BEGIN SOLUTION
    statements = {}
    for item in text.split(","):
        if item == "":
            continue
        if "<" not in item:
            raise ValueError("malformed pair, expect string<string")
        signal, value = item.split("<", 1)
        statements[signal.strip()] = value.strip()
    thresholds = {}
    for signal, value in statements.items():
        if signal not in SIGNALS:
            raise ValueError(f"unsupported eviction signal {signal}")
        if value.endswith("%"):
            if value in ("0%", "100%"):
                continue
            fraction = np.float32(float(value.rstrip("%"))) / np.float32(100)
            if fraction < 0:
                raise ValueError(f"eviction percentage threshold {signal} must be >= 0%: {value}")
            if fraction > 1:
                raise ValueError(f"eviction percentage threshold {signal} must be <= 100%: {value}")
            thresholds[signal] = float(fraction)
        else:
            amount = parse_quantity(value)
            if amount <= 0:
                raise ValueError(f"eviction threshold {signal} must be positive: {value}")
            thresholds[signal] = api.value(amount)
    return thresholds
    # END SOLUTION


# %%
check("Exercise 1: parse an eviction flag", parse_eviction_flag, [
    case("memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%",
         expected={"memory.available": 104857600, "nodefs.available": 0.10000000149011612,
                   "nodefs.inodesFree": 0.05000000074505806, "imagefs.available": 0.15000000596046448},
         note="defaults_linux.go DefaultEvictionHard; parsePercentage in float32"),
    case("imagefs.available<15%,nodefs.available<10.5%",
         expected={"imagefs.available": 0.15000000596046448, "nodefs.available": 0.10499999672174454},
         note="TestParseThresholdConfig: disk eviction values in percentages"),
    case("memory.available<25.5%", expected={"memory.available": 0.2549999952316284},
         note="TestParsePercentage: 25.5% (float32)"),
    case("memory.available<150Mi", expected={"memory.available": 157286400},
         note="TestParseThresholdConfig: all memory eviction values"),
    case(" memory.available < 1.5Gi ,", expected={"memory.available": 1610612736},
         note="langle parser: spaces trimmed, empty item skipped"),
    case("memory.available<1Gi,memory.available<2Gi", expected={"memory.available": 2147483648},
         note="langle parser: the last value wins"),
    case("memory.available<0%", expected={}, note="TestParseThresholdConfig: disable via 0%"),
    case("memory.available<100%", expected={}, note="TestParseThresholdConfig: disable via 100%"),
    case("memory.available<0.0%", expected={"memory.available": 0.0},
         note="parseThresholdStatement: only the exact string 0% disables"),
    case("", expected={}, note="TestParseThresholdConfig: no values"),
    case("mem.available<150Mi", expected=Raises(ValueError), note="TestParseThresholdConfig: invalid-signal"),
    case("memory.available=150Mi", expected=Raises(ValueError),
         note="langle parser: malformed pair, expect string<string"),
    case("memory.available<-150Mi", expected=Raises(ValueError),
         note="TestParseThresholdConfig: hard-signal-negative"),
    case("memory.available<0", expected=Raises(ValueError), note="parseThresholdStatement: must be positive"),
    case("memory.available<-15%", expected=Raises(ValueError),
         note="TestParseThresholdConfig: hard-signal-negative-percentage"),
    case("memory.available<150%", expected=Raises(ValueError),
         note="TestParseThresholdConfig: hard-signal-percentage-greater-than-100%"),
    case("memory.available<foo%", expected=Raises(ValueError), note="TestParsePercentage: foo%"),
    case("memory.available<12%345", expected=Raises(ValueError), note="TestParsePercentage: 12%345"),
    case("memory.available<150Mi,invalid.foo<150Mi", expected=Raises(ValueError),
         note="TestParseThresholdConfig: valid-and-invalid-signal"),
])

# %% [markdown]
# ## Exercise 2: signals from the Summary API
#
# The eviction manager reads the kubelet's `/stats/summary` JSON (you can fetch a real node's
# with `kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary`) and turns it into one
# observation per signal, a pair `(available, capacity)` (`makeSignalObservations`):
#
# | Signal | available | capacity |
# |---|---|---|
# | `memory.available` | `node.memory.availableBytes` | `availableBytes + workingSetBytes` |
# | `allocatableMemory.available` | the same two fields of the `node.systemContainers` entry named `"pods"` | |
# | `nodefs.available` | `node.fs.availableBytes` | `node.fs.capacityBytes` |
# | `nodefs.inodesFree` | `node.fs.inodesFree` | `node.fs.inodes` |
# | `imagefs.available` | `node.runtime.imageFs.availableBytes` | `…capacityBytes` |
# | `imagefs.inodesFree` | `node.runtime.imageFs.inodesFree` | `…inodes` |
# | `pid.available` | `node.rlimit.maxpid - node.rlimit.curproc` | `maxpid` |
#
# A signal is **left out** when either of its two fields is missing (any object on the way may be
# missing too). One quirk of v1.27: `imagefs.inodesFree` is computed only **inside** the case where
# `imagefs.available` could be computed.
#
# Write `signal_observations(summary)` taking the JSON as a dict and returning a dict from signal
# to an `(available, capacity)` tuple of ints.

# %%
def summary(memory=None, pods_memory=None, fs=None, image_fs=None, rlimit=None) -> dict:
    """A /stats/summary document with only the node fields given (camelCase, as the kubelet writes them)."""
    node = {"nodeName": "node-1", "systemContainers": []}
    if memory is not None:
        node["memory"] = memory
    if pods_memory is not None:
        node["systemContainers"].append({"name": "pods", "memory": pods_memory})
    if fs is not None:
        node["fs"] = fs
    if image_fs is not None:
        node["runtime"] = {"imageFs": image_fs}
    if rlimit is not None:
        node["rlimit"] = rlimit
    return {"node": node, "pods": []}


# %%
def signal_observations(summary: dict) -> dict:
    """Each eviction signal the summary supports, as (available, capacity)."""
    # BEGIN SOLUTION
    node = summary.get("node") or {}
    observations = {}

    def both(stats, available, capacity):
        return stats is not None and available in stats and capacity in stats

    memory = node.get("memory")
    if both(memory, "availableBytes", "workingSetBytes"):
        observations["memory.available"] = (memory["availableBytes"],
                                            memory["availableBytes"] + memory["workingSetBytes"])
    pods = next((c for c in node.get("systemContainers") or [] if c.get("name") == "pods"), None)
    memory = (pods or {}).get("memory")
    if both(memory, "availableBytes", "workingSetBytes"):
        observations["allocatableMemory.available"] = (memory["availableBytes"],
                                                       memory["availableBytes"] + memory["workingSetBytes"])
    fs = node.get("fs")
    if both(fs, "availableBytes", "capacityBytes"):
        observations["nodefs.available"] = (fs["availableBytes"], fs["capacityBytes"])
    if both(fs, "inodesFree", "inodes"):
        observations["nodefs.inodesFree"] = (fs["inodesFree"], fs["inodes"])
    image_fs = (node.get("runtime") or {}).get("imageFs")
    if both(image_fs, "availableBytes", "capacityBytes"):
        observations["imagefs.available"] = (image_fs["availableBytes"], image_fs["capacityBytes"])
        if both(image_fs, "inodesFree", "inodes"):
            observations["imagefs.inodesFree"] = (image_fs["inodesFree"], image_fs["inodes"])
    rlimit = node.get("rlimit")
    if both(rlimit, "maxpid", "curproc"):
        observations["pid.available"] = (rlimit["maxpid"] - rlimit["curproc"], rlimit["maxpid"])
    return observations
    # END SOLUTION


# %%
upstream_summary = summary(  # helpers_test.go TestMakeSignalObservations
    memory={"availableBytes": GI, "workingSetBytes": GI},
    pods_memory={"availableBytes": GI, "workingSetBytes": GI},
    fs={"availableBytes": 1024, "capacityBytes": 2048, "inodesFree": 1024, "inodes": MI},
    image_fs={"availableBytes": MI, "capacityBytes": 2 * MI, "inodesFree": 1024, "inodes": MI},
    rlimit={"maxpid": 255816, "curproc": 1000},
)
check("Exercise 2: signals from the Summary API", signal_observations, [
    case(upstream_summary, expected={
        "memory.available": (GI, 2 * GI), "allocatableMemory.available": (GI, 2 * GI),
        "nodefs.available": (1024, 2048), "nodefs.inodesFree": (1024, 1048576),
        "imagefs.available": (1048576, 2097152), "imagefs.inodesFree": (1024, 1048576),
        "pid.available": (254816, 255816)}, note="TestMakeSignalObservations"),
    case(summary(memory={"availableBytes": 1500 * MI, "workingSetBytes": 1500 * MI}),
         expected={"memory.available": (1572864000, 3145728000)},
         note="makeMemoryStats: capacity = available + working set; no 'pods' container"),
    case(summary(memory={"availableBytes": 100 * MI}), expected={},
         note="makeSignalObservations: no workingSetBytes, no memory signal"),
    case(summary(pods_memory={"availableBytes": 500 * MI, "workingSetBytes": 3 * GI}),
         expected={"allocatableMemory.available": (524288000, 3745513472)},
         note="makeSignalObservations: the 'pods' system container"),
    case(summary(image_fs={"inodesFree": 1024, "inodes": MI}), expected={},
         note="makeSignalObservations (1.27): imagefs inodes only inside the bytes branch"),
    case(summary(fs={"inodesFree": 3 * MI, "inodes": 4 * MI}), expected={"nodefs.inodesFree": (3145728, 4194304)},
         note="TestInodePressureNodeFsInodes: inodes only"),
    case(summary(rlimit={"maxpid": 1000, "curproc": 1200}), expected={"pid.available": (-200, 1000)},
         note="makeSignalObservations: a signed subtraction"),
    case(summary(rlimit={"maxpid": 32768}), expected={}, note="makeSignalObservations: no curproc"),
])

# %% [markdown]
# ## Exercise 3: is the threshold met?
#
# A threshold's value is a quantity, or a fraction of the signal's capacity (exercise 1's `int`
# or `float`). `GetThresholdQuantity` turns a fraction into a count by multiplying it, **widened
# to float64**, by the capacity and **truncating** to an integer: `int(capacity * fraction)` in
# Python, where the fraction is already the float32 value. A quantity is used as it is.
#
# `thresholdsMet` then says the threshold is met when that count is **strictly greater** than
# what is available. When the manager enforces a **minimum reclaim**, the minimum reclaim (also a
# quantity or a fraction of the same capacity, converted the same way) is **added** to the
# threshold first.
#
# Write `threshold_met(value, available, capacity, min_reclaim=None)` returning a `bool`; apply
# the minimum reclaim only when it is given.

# %%
def threshold_met(value, available: int, capacity: int, min_reclaim=None) -> bool:
    """Whether a threshold (int quantity or float fraction) is met, optionally with its minimum reclaim."""
    # BEGIN SOLUTION
    def quantity(v) -> int:
        return int(capacity * v) if isinstance(v, float) else v

    wanted = quantity(value) + (quantity(min_reclaim) if min_reclaim is not None else 0)
    return wanted > available
    # END SOLUTION


# %%
p5, p10, p20, p30 = (float(np.float32(n) / np.float32(100)) for n in (5, 10, 20, 30))  # float32 fractions
check("Exercise 3: is the threshold met?", threshold_met, [
    case(GI, 500 * MI, 2 * GI, expected=True, note="TestThresholdsMet: threshold-met-memory"),
    case(GI, 2 * GI, 4 * GI, expected=False, note="TestThresholdsMet: threshold-not-met"),
    case(GI, GI, 2 * GI, expected=False, note="thresholdsMet: strictly greater; equal is not met"),
    case(GI, int(1.05 * GI), 2 * GI, 500 * MI, expected=True,
         note="TestThresholdsMet: threshold-met-with-min-reclaim (1.5Gi > 1.05Gi)"),
    case(GI, 2 * GI, 4 * GI, 500 * MI, expected=False, note="TestThresholdsMet: threshold-not-met-with-min-reclaim"),
    case(p20, 100 * MI, 1000 * MI, expected=True, note="TestPercentageThresholdsMet: MemoryMet"),
    case(p20, 300 * MI, 1000 * MI, expected=False, note="TestPercentageThresholdsMet: NoneMet"),
    case(p30, 100 * GI, 1000 * GI, expected=True, note="TestPercentageThresholdsMet: DiskMet"),
    case(p20, 225 * MI, 1000 * MI, p5, expected=True,
         note="TestPercentageThresholdsMet: MemoryMetWithMinReclaim (262144003 > 235929600)"),
    case(p20, 300 * MI, 1000 * MI, p5, expected=False,
         note="TestPercentageThresholdsMet: MemoryNotMetWithMinReclaim"),
    case(p10, 1073741830, 10 * GI, expected=True,
         note="GetThresholdQuantity: 10% of 10Gi is 1073741840 in float32, not 1073741824"),
    case(p20, 209715203, 1000 * MI, expected=False, note="GetThresholdQuantity: 20% of 1000Mi is 209715203"),
    case(p20, 209715202, 1000 * MI, expected=True, note="GetThresholdQuantity: 20% of 1000Mi is 209715203"),
])

# %% [markdown]
# ## Pods for the ranking exercises
#
# The helper `pod` below builds a `V1Pod` the way upstream's eviction tests do (`newPod`): its UID
# is its name, and its priority is set. `mem(...)` gives a container's memory request and limit.
# The cell also gives you `memory_request(pod)`, the request the ranking compares usage with
# (`GetResourceRequestQuantity` in `pkg/api/v1/resource/helpers.go`): the app containers' memory
# requests summed, **replaced** by any init container's request that is larger, plus
# `spec.overhead` memory **only if** the total is not zero. And `is_critical(pod)`: a static Pod,
# a mirror Pod, or a priority of 2000000000 or more.

# %%
def mem(request: str = "", limit: str = "") -> dict:
    """A container's resources: this memory request and limit ("" for none), with 100m CPU (Guaranteed if equal)."""
    resources = {}
    if request:
        resources["requests"] = {"cpu": "100m", "memory": request}
    if limit:
        resources["limits"] = {"cpu": "100m" if request == limit else "200m", "memory": limit}
    return resources


def pod(name: str, priority: int | None = 0, *containers: dict, init: tuple = (), overhead: str = "",
        annotations: dict | None = None):
    """A V1Pod named and UID'd `name`, with this priority and these containers' resources."""
    containers = containers or ({},)
    spec = {"containers": [{"name": name if i == 0 else f"{name}-{i}", "image": "app", "resources": c}
                           for i, c in enumerate(containers)],
            "initContainers": [{"name": f"init-{i}", "image": "init", "resources": c} for i, c in enumerate(init)]}
    if priority is not None:
        spec["priority"] = priority
    if overhead:
        spec["overhead"] = {"memory": overhead}
    metadata = {"name": name, "namespace": "default", "uid": name, "annotations": annotations or {}}
    return api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


class Pods(list):
    """A list of Pods that prints as their names, so the check tables stay readable."""

    def __repr__(self) -> str:
        return "[" + ", ".join(p.metadata.name for p in self) + "]"


def memory_request(pod) -> int:
    """GetResourceRequestQuantity(pod, memory) in bytes."""
    def request(container) -> int:
        return api.value(((container.resources and container.resources.requests) or {}).get("memory", "0"))

    total = sum(request(c) for c in pod.spec.containers)
    for container in pod.spec.init_containers or []:
        total = max(total, request(container))
    if total and pod.spec.overhead and "memory" in pod.spec.overhead:
        total += api.value(pod.spec.overhead["memory"])
    return total


def is_critical(pod) -> bool:
    """IsCriticalPod: static, mirror, or system-critical priority."""
    annotations = pod.metadata.annotations or {}
    static = annotations.get("kubernetes.io/config.source", "api") != "api"
    mirror = "kubernetes.io/config.mirror" in annotations
    return static or mirror or (pod.spec.priority is not None and pod.spec.priority >= 2_000_000_000)


example = pod("example", 0, mem("100Mi"), mem("50Mi"), init=(mem("200Mi"),), overhead="10Mi")
print("memory request of 100Mi + 50Mi, an init container of 200Mi, overhead 10Mi:", memory_request(example) // MI, "Mi")

# %% [markdown]
# ## Exercise 4: rank Pods under memory pressure
#
# `rankMemoryPressure` sorts the active Pods, **first to be evicted first**, by three keys in turn
# (a later key only breaks ties of the earlier ones):
#
# 1. Pods whose working set is **greater than** `memory_request(pod)` come first;
# 2. then **lower priority** first (a Pod without a priority counts as 0);
# 3. then **larger** `working set - memory_request(pod)` first.
#
# The working sets come from the Summary API's `pods[].memory.workingSetBytes`, matched by UID;
# here they are a dict from UID to bytes. A Pod **missing** from that dict has no stats, and the
# keys that read stats (1 and 3) put a Pod without stats **before** one with stats. Use a stable
# sort, so that Pods that tie on every key keep their input order.
#
# Note what is **not** a key: the QoS class. Write `rank_memory_pressure(pods, working_sets)`
# returning the Pods' names in eviction order.

# %%
def rank_memory_pressure(pods: list, working_sets: dict) -> list:
    """The Pods' names, first to be evicted first, under memory pressure."""
    # BEGIN SOLUTION
    def key(p):
        priority = p.spec.priority or 0
        if p.metadata.uid not in working_sets:
            return (0, priority, 0)  # no stats: ahead of every Pod with stats on both stats keys
        usage = working_sets[p.metadata.uid]
        request = memory_request(p)
        return (1 if usage > request else 2, priority, -(usage - request))

    return [p.metadata.name for p in sorted(pods, key=key)]
    # END SOLUTION


# %%
# TestOrderedByPriorityMemory: (name, priority, request, working set)
by_priority = [("p1", -1, "", 500), ("p2", -1, "", 50), ("p3", 1, "100Mi", 600), ("p4", 1, "100Mi", 150),
               ("p5", -1, "1Gi", 800), ("p6", -1, "1Gi", 200), ("p7", 1, "1Gi", 800), ("p8", 1, "1Gi", 200)]
by_priority_pods = Pods([pod(n, prio, mem(req, req)) for n, prio, req, _ in reversed(by_priority)])
by_priority_usage = {n: ws * MI for n, _, _, ws in by_priority}
# TestOrderedByMemory: all priority 0
by_memory = [("best-effort-high", "", 500), ("best-effort-low", "", 300), ("burstable-high", "100Mi", 800),
             ("burstable-low", "100Mi", 300), ("guaranteed-high", "1Gi", 800), ("guaranteed-low", "1Gi", 200)]
by_memory_pods = Pods([pod(n, 0, mem(req, "1Gi" if req else "")) for n, req, _ in by_memory])
# TestMemoryPressure's five Pods
pressure_pods = Pods([
    pod("guaranteed-low-priority-high-usage", -1, mem("1Gi", "1Gi")),
    pod("burstable-below-requests", 0, mem("100Mi", "1Gi")),
    pod("burstable-above-requests", 0, mem("100Mi", "1Gi")),
    pod("best-effort-high-priority-high-usage", 1),
    pod("best-effort-low-priority-low-usage", -1),
])
pressure_usage = {"guaranteed-low-priority-high-usage": 900 * MI, "burstable-below-requests": 50 * MI,
                  "burstable-above-requests": 400 * MI, "best-effort-high-priority-high-usage": 400 * MI,
                  "best-effort-low-priority-low-usage": 100 * MI}

for p in pressure_pods:
    print(f"{p.metadata.name:38} {get_pod_qos(p):11} priority {p.spec.priority:2}  working set {pressure_usage[p.metadata.uid] // MI}Mi")

check("Exercise 4: rank Pods under memory pressure", rank_memory_pressure, [
    case(by_priority_pods, by_priority_usage, expected=[n for n, *_ in by_priority],
         note="TestOrderedByPriorityMemory"),
    case(by_memory_pods, {n: ws * MI for n, _, ws in by_memory},
         expected=["burstable-high", "best-effort-high", "best-effort-low", "burstable-low",
                   "guaranteed-high", "guaranteed-low"], note="TestOrderedByMemory"),
    case(Pods([pod("below-requests", -1, mem("200Mi")), pod("exceeds-requests", 1, mem("100Mi"))]),
         {"below-requests": 199 * MI, "exceeds-requests": 101 * MI},
         expected=["exceeds-requests", "below-requests"], note="TestOrderedByExceedsRequestMemory"),
    case(pressure_pods, pressure_usage,
         expected=["best-effort-low-priority-low-usage", "burstable-above-requests",
                   "best-effort-high-priority-high-usage", "guaranteed-low-priority-high-usage",
                   "burstable-below-requests"],
         note="rankMemoryPressure on TestMemoryPressure's Pods (it evicts the first)"),
    case(Pods([pod("has-stats", -1, mem("100Mi")), pod("no-stats", 5, mem("1Gi"))]), {"has-stats": 900 * MI},
         expected=["no-stats", "has-stats"], note="exceedMemoryRequests: a Pod without stats first"),
    case(Pods([pod("init-heavy", 0, mem("100Mi"), init=(mem("1Gi"),)), pod("plain", 0, mem("100Mi"))]),
         {"init-heavy": 500 * MI, "plain": 150 * MI}, expected=["plain", "init-heavy"],
         note="GetResourceRequestQuantity: a larger init request replaces the sum"),
    case(Pods([pod("no-priority", None), pod("negative", -5)]), {"no-priority": MI, "negative": MI},
         expected=["negative", "no-priority"], note="PodPriority: no priority counts as 0"),
])

# %% [markdown]
# ## Exercise 5: the victim and its message
#
# Now the whole decision for a hard `memory.available` threshold. Given the active Pods, their
# stats, the threshold as written in the flag (e.g. `"2Gi"`) and the bytes available:
#
# 1. **Rank** the Pods with your `rank_memory_pressure` (using the Pods' working sets).
# 2. Walk the ranking and **skip critical Pods** (`is_critical`); the first other Pod is the
#    victim. If there is none, return `None`.
# 3. Build its **message** (`evictionMessage`), each sentence ending in `". "` (a period and a
#    space):
#     - first `The node was low on resource: memory. `
#     - then `Threshold quantity: <threshold>, available: <available>. `
#     - then, for each container stat of the Pod that names one of its **app** containers and whose
#       working set is **greater than** that container's memory request (none counts as 0):
#       `Container <name> was using <working set>, request is <request>, has larger consumption of memory. `
#
# Every quantity prints in Go's **canonical form** (`Quantity.String()`), not as it was written:
# the largest suffix of its own family that leaves a whole number. `quantity_string(text)` gives
# it for a quantity written as text (`"2048Mi"` prints `2Gi`, `"1.5Gi"` prints `1536Mi`), and
# `format_quantity(n)` for a byte count (1572864000 prints `1500Mi`). Print the threshold and the
# container's request that way; a container with no request prints its request as `0`.
#
# The stats for each Pod UID are a dict `{"pod": working set, "containers": {name: working set}}`;
# upstream's test fixtures give containers no memory stats (`"containers": {}`), which is why their
# messages have no container sentence. Write `predict_eviction(pods, stats, threshold, available)`
# returning `(victim name, message)` or `None`.

# %%
def predict_eviction(pods: list, stats: dict, threshold: str, available: int):
    """The Pod a hard memory.available threshold evicts, and its status message."""
    # BEGIN SOLUTION
    ranked = rank_memory_pressure(pods, {uid: s["pod"] for uid, s in stats.items()})
    by_name = {p.metadata.name: p for p in pods}
    for name in ranked:
        victim = by_name[name]
        if is_critical(victim):
            continue
        message = "The node was low on resource: memory. "
        message += f"Threshold quantity: {quantity_string(threshold)}, available: {format_quantity(available)}. "
        for container_name, usage in stats.get(victim.metadata.uid, {}).get("containers", {}).items():
            for container in victim.spec.containers:
                if container.name != container_name:
                    continue
                written = ((container.resources and container.resources.requests) or {}).get("memory", "0")
                if usage > api.value(written):
                    message += (f"Container {container.name} was using {format_quantity(usage)}, "
                                f"request is {quantity_string(written)}, has larger consumption of memory. ")
        return name, message
    return None
    # END SOLUTION


# %%
verify = Pods([pod("below-requests", 0, mem("1Gi", "1Gi")), pod("above-requests", 0, mem("100Mi", "1Gi"))])
verify_stats = {"below-requests": {"pod": 900 * MI, "containers": {}},
                "above-requests": {"pod": 700 * MI, "containers": {}}}
with_containers = {"below-requests": {"pod": 900 * MI, "containers": {"below-requests": 900 * MI}},
                   "above-requests": {"pod": 700 * MI, "containers": {"above-requests": 700 * MI}}}
static = pod("critical", 2_000_000_000, mem("1Gi", "1Gi"), annotations={"kubernetes.io/config.source": "file"})
static_no_priority = pod("critical", None, mem("1Gi", "1Gi"), annotations={"kubernetes.io/config.source": "file"})
resized = pod("testpod", 0, mem("200Mi"))
best_effort = pod("report", 0, {})
pressure_stats = {name: {"pod": usage, "containers": {}} for name, usage in pressure_usage.items()}

check("Exercise 5: the victim and its message", predict_eviction, [
    case(verify, verify_stats, "2Gi", 1500 * MI,
         expected=("above-requests",
                   "The node was low on resource: memory. Threshold quantity: 2Gi, available: 1500Mi. "),
         note="TestMemoryPressure_VerifyPodStatus"),
    case(verify, with_containers, "2Gi", 1500 * MI,
         expected=("above-requests",
                   "The node was low on resource: memory. Threshold quantity: 2Gi, available: 1500Mi. "
                   "Container above-requests was using 700Mi, request is 100Mi, has larger consumption of memory. "),
         note="evictionMessage containerMessageFmt, with a container stat"),
    case(pressure_pods, pressure_stats, "1Gi", 500 * MI,
         expected=("best-effort-low-priority-low-usage",
                   "The node was low on resource: memory. Threshold quantity: 1Gi, available: 500Mi. "),
         note="TestMemoryPressure: the hard eviction at 500Mi"),
    case(Pods([static]), {"critical": {"pod": 800 * MI, "containers": {}}}, "1Gi", 500 * MI, expected=None,
         note="TestStaticCriticalPodsAreNotEvicted"),
    case(Pods([static_no_priority, *verify]), {"critical": {"pod": 3 * GI, "containers": {}}, **verify_stats}, "2Gi", 1500 * MI,
         expected=("above-requests",
                   "The node was low on resource: memory. Threshold quantity: 2Gi, available: 1500Mi. "),
         note="TestStaticCriticalPodsAreNotEvicted (no priority, static): ranked first, skipped"),
    case(Pods([resized]), {"testpod": {"pod": 150 * MI, "containers": {"testpod": 150 * MI}}}, "1Gi", 100 * MI,
         expected=("testpod", "The node was low on resource: memory. Threshold quantity: 1Gi, available: 100Mi. "),
         note="TestEvictonMessageWithResourceResize, gate off: 150Mi is not over 200Mi"),
    case(Pods([best_effort]), {"report": {"pod": 64 * MI, "containers": {"report": 64 * MI, "sidecar": 10 * MI}}},
         "100Mi", 50 * MI,
         expected=("report", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
                   "Container report was using 64Mi, request is 0, has larger consumption of memory. "),
         note="evictionMessage: no request prints 0; stats of unknown containers ignored"),
    case(Pods([pod("half", 0, mem("0.5Gi"))]), {"half": {"pod": 700 * MI, "containers": {"half": 700 * MI}}},
         "1.5Gi", 1000 * MI,
         expected=("half", "The node was low on resource: memory. Threshold quantity: 1536Mi, available: 1000Mi. "
                   "Container half was using 700Mi, request is 512Mi, has larger consumption of memory. "),
         note="Quantity.String(): canonical form, 1.5Gi prints 1536Mi and 0.5Gi 512Mi"),
    case(verify, verify_stats, "2048Mi", 1500 * MI,
         expected=("above-requests",
                   "The node was low on resource: memory. Threshold quantity: 2Gi, available: 1500Mi. "),
         note="Quantity.String(): 2048Mi prints 2Gi"),
])

# %% [markdown]
# ## Replaying a node
#
# The rules above run every 10 seconds in the eviction manager's `synchronize` pass.
# `mini_kubelet.sim` replays a node on a virtual clock: you describe the node, its eviction
# settings and its Pods' memory use over time, and `run_scenario` runs the course's eviction
# manager on it, one pass every 10 seconds (chapter 4, *Replaying a node*, documents the format).
#
# This node has 4Gi of memory, 512Mi of it used by the system, a **soft** threshold
# `memory.available<1Gi` with a **2-minute** grace period and a hard one at 300Mi; the other
# settings are the v1.27 defaults (a 5-minute transition period, `evictionMaxPodGracePeriod: 0`).
# Three Pods run on it: `cache` (Guaranteed, 1Gi, using 900Mi, priority -1), `web` (Burstable,
# requesting 512Mi, using 400Mi) and `batch` (BestEffort), whose memory grows from 1Gi to 1400Mi
# one minute in. At 4 minutes someone creates `report`, another BestEffort Pod.
#
# The next cell replays it and plots what the manager saw and did: the signal at every pass, the
# two thresholds, the time `MemoryPressure` was reported (shaded), each eviction (a vertical line)
# and each attempt to add a Pod (a dot). The plot names neither the evicted Pod nor the verdict on
# `report`: you will work them out from it. Study the plot.

# %%
from mini_kubelet import sim


def manifest(name: str, priority: int, resources: dict | None = None) -> dict:
    """A Pod manifest with one container."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"priority": priority, "containers": [{"name": name, "image": "app", "resources": resources or {}}]}}


scenario = {
    "duration": "10m",
    "node": {
        "name": "lab-node",
        "capacity": {"memory": "4Gi", "nodefs": "100Gi", "inodes": 1000000, "maxpid": 32768},
        "usage": {"memory": "512Mi", "nodefs": "10Gi"},
        "kubelet": {"evictionHard": "memory.available<300Mi", "evictionSoft": "memory.available<1Gi",
                    "evictionSoftGracePeriod": "memory.available=2m"},
    },
    "pods": [
        {"manifest": manifest("cache", -1, {"requests": {"cpu": "500m", "memory": "1Gi"},
                                            "limits": {"cpu": "500m", "memory": "1Gi"}}),
         "usage": {"memory": "900Mi"}},
        {"manifest": manifest("web", 0, {"requests": {"memory": "512Mi"}}), "usage": {"memory": "400Mi"}},
        {"manifest": manifest("batch", 0), "usage": {"memory": {"0s": "1Gi", "1m": "1400Mi"}}},
    ],
    "events": [{"at": "4m", "addPod": {"manifest": manifest("report", 0), "usage": {"memory": "100Mi"}}}],
}
timeline = sim.run_scenario(scenario)

minutes = [step.time / 60 for step in timeline.steps]
available = [step.observations["memory.available"]["available"] / MI for step in timeline.steps]
plt.rcParams["font.size"] = 12  # text that reads where the page shrinks the plot to its column
figure, axes = plt.subplots(figsize=(8, 6), layout="constrained")
# Colours told apart with any colour vision (Okabe and Ito); the hard threshold solid, the soft one dashed.
axes.step(minutes, available, where="post", color="#0072B2", label="memory.available (MiB), one point per pass")
axes.plot(minutes, available, ".", color="#0072B2", markersize=3)
axes.axhline(1024, color="#E69F00", linestyle="--", linewidth=2, label="soft threshold 1Gi (grace 2m)")
axes.axhline(300, color="#D55E00", linestyle="-", linewidth=2, label="hard threshold 300Mi")
for interval in timeline.condition_intervals():
    end = interval["to"] if interval["to"] is not None else timeline.steps[-1].time
    axes.axvspan(interval["from"] / 60, end / 60, color="#F0E442", alpha=0.3, linewidth=0,
                 label=f"{interval['type']} reported")
for eviction in timeline.evictions:
    axes.axvline(eviction.time / 60, color="black", linewidth=1)
    axes.annotate("an eviction", xy=(eviction.time / 60, 1900), xytext=(0.3, 2450), arrowprops={"arrowstyle": "->"})
for admission in timeline.admissions:
    axes.plot(admission.time / 60, 1500, "o", color="#CC79A7", markeredgecolor="black", markersize=10)
    axes.annotate(f"{admission.pod.split('/')[1]} created", xy=(admission.time / 60, 1500),
                  xytext=(admission.time / 60 + 0.2, 1600))
axes.set(title="A node under memory pressure, one synchronize pass every 10 s", xlabel="time (minutes)",
         ylabel="memory.available (MiB)", xlim=(0, 10), ylim=(0, 2600))
axes.xaxis.set_major_locator(plt.MultipleLocator(1))
axes.xaxis.set_minor_locator(plt.MultipleLocator(0.5))
axes.yaxis.set_major_locator(plt.MultipleLocator(500))
axes.yaxis.set_minor_locator(plt.MultipleLocator(100))
axes.grid(which="both", alpha=0.3)
figure.legend(loc="outside lower left", ncols=2, frameon=False)  # under the plot, off the data
plt.show()

# %% [markdown]
# ## Exercise 6: read the replay
#
# Answer from the plot (the grid has a line every 30 seconds and every 100 MiB) and the rules of
# chapter 4. Write `answer(question)` returning, for each question below, an `int` (seconds from
# the start, or MiB **rounded to the nearest 100**), a Pod name, or a `bool`:
#
# | Question | Kind of answer |
# |---|---|
# | `"MemoryPressure raised at"` | seconds |
# | `"first eviction at"` | seconds |
# | `"memory.available before the eviction"` | MiB, to the nearest 100 |
# | `"victim's memory freed at"` | seconds (when `memory.available` jumps back) |
# | `"memory freed"` | MiB, to the nearest 100 (the size of that jump) |
# | `"victim"` | the Pod's name: whose memory use matches the jump? |
# | `"ExceededGracePeriod recorded at"` | seconds (not on the plot: apply `killPodNow`'s rule to the eviction) |
# | `"MemoryPressure cleared at"` | seconds |
# | `"report admitted"` | `True` or `False` (the plot shows the attempt, not the verdict) |
#
# Then check each answer against the rules: when is a condition raised for a soft threshold? How
# long after the crossing may the manager evict? Why that Pod, when `cache` uses more memory? Why
# is the memory freed 30 seconds after the eviction, although the override passed is 0, and why
# does the Pod get an `ExceededGracePeriod` warning before that? Why is `report` refused after the
# memory came back?

# %%
def answer(question: str):
    """The answer to one question about the replay above."""
    # BEGIN SOLUTION
    pressure = timeline.condition_intervals()[0]
    first = timeline.evictions[0]

    def available_at(seconds: int) -> float:
        step = next(s for s in timeline.steps if s.time >= seconds)
        return step.observations["memory.available"]["available"] / MI

    before, after = available_at(first.time), available_at(first.stops_at)
    timeout = max(10, first.grace_period_override + first.grace_period_override // 2)  # killPodNow
    return {
        "MemoryPressure raised at": pressure["from"],
        "first eviction at": first.time,
        "memory.available before the eviction": round(before / 100) * 100,
        "victim's memory freed at": first.stops_at,
        "memory freed": round((after - before) / 100) * 100,
        "victim": first.pod.split("/")[1],
        "ExceededGracePeriod recorded at": first.time + timeout,
        "MemoryPressure cleared at": pressure["to"],
        "report admitted": timeline.admissions[0].admitted,
    }[question]
    # END SOLUTION


# %%
check("Exercise 6: read the replay", answer, [
    case("MemoryPressure raised at", expected=60,
         note="synchronize: conditions ignore grace periods (TestMemoryPressure)"),
    case("first eviction at", expected=180, note="thresholdsMetGracePeriod: 60 s + 2m grace"),
    case("memory.available before the eviction", expected=900,
         note="4096 - 512 - 900 - 400 - 1400 = 884Mi, under the soft 1Gi"),
    case("victim's memory freed at", expected=210,
         note="calculateEffectiveGracePeriod: override 0 -> the pod's 30 s"),
    case("memory freed", expected=1400, note="884Mi -> 2284Mi: batch's working set"),
    case("victim", expected="batch", note="rankMemoryPressure: only batch exceeds its request"),
    case("ExceededGracePeriod recorded at", expected=190,
         note="killPodNow: waits max(10, 0 + 0/2) s from the raw override"),
    case("MemoryPressure cleared at", expected=480,
         note="nodeConditionsObservedSince: last met at 180 s + 5m transition"),
    case("report admitted", expected=False,
         note="Admit: BestEffort under MemoryPressure (TestAdmitUnderNodeConditions)"),
])

# %% [markdown]
# ## Exercise 7: an eviction's grace period, by release
#
# *The current release.* Exercise 6 ended on a v1.27 quirk: the eviction manager passed an override
# of 0, and `batch` still had 30 seconds. Two pieces decide the grace period an evicted Pod gets,
# and both changed after 1.27.
#
# **The override the eviction manager asks for** (`synchronize`):
#
# - a hard threshold (grace period 0) asks for 0 in v1.27; from v1.31
#   (kubernetes/kubernetes#124063) it asks for 1;
# - a soft threshold asks for `evictionMaxPodGracePeriod`; from v1.32
#   (kubernetes/kubernetes#122890) it asks for the **smaller** of that and the Pod's own
#   `terminationGracePeriodSeconds`, when the Pod sets one. (A deprecated gate,
#   `AllowOverwriteTerminationGracePeriodSeconds`, brought the old rule back until it was locked
#   off in 1.35.)
#
# **What the pod worker makes of it** (`calculateEffectiveGracePeriod`, for a running Pod): the
# override is the grace period, except that in v1.27 an override of 0 reads as "none", so the
# Pod's own `terminationGracePeriodSeconds` (30 when the manifest leaves it out) is used instead.
# From v1.31 (the same #124063) an override that was given is kept, and 0 becomes 1 s.
#
# Write `eviction_grace_period(release, kind, max_pod_grace, pod_grace)` returning the pair
# `(override, seconds)`: `release` is a string like `"1.27"` or `"1.36"`, `kind` is `"hard"` or
# `"soft"`, `max_pod_grace` is the node's `evictionMaxPodGracePeriod` and `pod_grace` the Pod's
# `terminationGracePeriodSeconds` (`None` when not set). Compare releases as numbers: `"1.31"` is
# `(1, 31)`.
#
# (`seconds` is the Pod's grace period. A container without a `preStop` hook is then stopped with
# at least 2 s: from v1.28 `killContainer` raises a stop below its 2-second minimum *after* applying
# the override, so a v1.36 hard eviction's 1 s stops the container 2 s later; chapter 1's
# "Termination and grace" shows why.)

# %%
def eviction_grace_period(release: str, kind: str, max_pod_grace: int, pod_grace) -> tuple:
    """The override an eviction asks for and the grace period the pod worker gives the Pod, by release."""
    # BEGIN SOLUTION
    version = tuple(int(part) for part in release.split("."))
    if kind == "hard":
        override = 1 if version >= (1, 31) else 0
    else:
        override = max_pod_grace
        if version >= (1, 32) and pod_grace is not None:
            override = min(override, pod_grace)
    own = 30 if pod_grace is None else pod_grace
    if override == 0:
        return override, (1 if version >= (1, 31) else own)
    return override, override
    # END SOLUTION


# %%
check("Exercise 7: an eviction's grace period, by release", eviction_grace_period, [
    case("1.27", "hard", 0, None, expected=(0, 30),
         note="memory-hard.yaml: leaky evicted at 4m50s, its containers stop at 5m20s"),
    case("1.36", "hard", 0, None, expected=(1, 1),
         note="memory-hard.yaml --kubernetes-version 1.36: 1 s at 4m50s, stopped at 4m52s (the 2 s minimum)"),
    case("1.31", "hard", 0, None, expected=(1, 1), note="TestMemoryPressure (1.31+): the hard eviction asks for 1"),
    case("1.30", "hard", 0, 60, expected=(0, 60), note="calculateEffectiveGracePeriod before #124063: the Pod's own"),
    case("1.36", "hard", 90, 60, expected=(1, 1), note="synchronize: evictionMaxPodGracePeriod is for soft ones only"),
    case("1.36", "soft", 5, None, expected=(5, 5),
         note="TestMemoryPressure: MaxPodGracePeriodSeconds 5, pods without their own"),
    case("1.27", "soft", 90, 60, expected=(90, 90),
         note="memory-soft-grace-1.36.yaml --kubernetes-version 1.27: more than the Pod asked for"),
    case("1.31", "soft", 90, 60, expected=(90, 90), note="synchronize (v1.31.12): still the max"),
    case("1.36", "soft", 90, 60, expected=(60, 60), note="memory-soft-grace-1.36.yaml: min(90, 60)"),
    case("1.36", "soft", 20, 60, expected=(20, 20), note="synchronize (#122890): min(20, 60)"),
    case("1.36", "soft", 90, None, expected=(90, 90), note="synchronize: no terminationGracePeriodSeconds, no min"),
    case("1.27", "soft", 0, None, expected=(0, 30), note="exercise 6's replay: batch's memory freed 30 s after"),
    case("1.36", "soft", 0, None, expected=(0, 1),
         note="Test_calculateEffectiveGracePeriod: use 1 when grace period override is zero (the replay: freed at 182 s, the 2 s minimum)"),
    case("1.36", "soft", 0, 60, expected=(0, 1), note="synchronize: min(0, 60) is 0, which becomes 1 s"),
])

# %% [markdown]
# ## What you learned
#
# - Eviction thresholds are `signal<value`; a percentage is a float32 fraction of the signal's
#   capacity, so 10% of 10Gi is 1073741840 bytes; `0%` and `100%` switch a threshold off.
# - Each signal is an (available, capacity) pair computed from a few fields of the Summary API;
#   a signal whose fields are missing is simply not observed.
# - A threshold is met when its quantity is strictly greater than what is available; a minimum
#   reclaim raises the bar once the threshold's grace period has passed.
# - Under memory pressure Pods are ranked by usage over requests, then priority, then usage minus
#   requests: the QoS class is not a key, and a Guaranteed Pod can go before a Burstable one.
# - The evicted Pod's message names the starved resource, the threshold and what was available,
#   then each container over its request; critical Pods are skipped.
# - A soft threshold raises its node condition at once and evicts only after its grace period;
#   the condition stays for the transition period, and keeps refusing BestEffort Pods meanwhile.
# - An override of 0 gives the Pod its own grace period in v1.27, while `killPodNow` waits only
#   10 seconds before recording `ExceededGracePeriod`. From v1.31 a hard eviction gives 1 s and
#   an override of 0 means 1 s; from v1.32 a soft eviction gives at most the Pod's own grace period.
#
# The `mini_kubelet.eviction` package implements these same rules with the upstream names, and
# `mini-kubelet run SCENARIO.yaml` replays your own scenarios.
