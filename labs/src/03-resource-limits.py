# %% [markdown]
# # Lab 03: resource limits
#
# QoS classes, cgroup settings and OOM scores. A Pod's `requests` and `limits` are only words in a manifest until the kubelet turns them into
# numbers the Linux kernel enforces: a **QoS class**, the **cgroup files** of the Pod (CPU weight,
# CFS quota, memory limit) and an **OOM score adjustment** for each container. In this lab you
# write those rules yourself, as Kubernetes v1.27 applies them, and check your answers against
# the numbers in upstream's own unit tests; the last exercise scores a sidecar as the current
# release, v1.36, does.
#
# **You will be able to**
#
# 1. classify a Pod as Guaranteed, Burstable or BestEffort, init containers and zero quantities included;
# 2. turn millicores into CPU shares and a CFS quota;
# 3. predict the path and the files of a Pod's cgroup on cgroup v2;
# 4. compute a container's `oom_score_adj`, and say why it uses the machine's memory and not allocatable;
# 5. read a plot of that score and invert the formula;
# 6. compute a node's allocatable memory, float32 quirk included;
# 7. score a sidecar container as v1.36 does, never above the Pod's app containers;
# 8. decide a resize as a v1.36 node does: accepted, Deferred or Infeasible;
# 9. put a resize's cgroup writes in the order the kubelet makes them.
#
# **How the exercises work.** Each exercise is a function for you to write, followed by a check
# cell. The check runs your function on cases whose answers come from the upstream Go code (the
# last column names the upstream test or rule) and prints a table: every case passed, or the
# first failing input with what was expected and what your function returned. Until you write
# the function, the check says "not done yet".
#
# The upstream code for this lab: `pkg/apis/core/v1/helper/qos/qos.go` (`GetPodQOS`),
# `pkg/kubelet/cm/helpers_linux.go` (`MilliCPUToShares`, `MilliCPUToQuota`, `ResourceConfigForPod`),
# `pkg/kubelet/cm/cgroup_manager_linux.go` (cgroup names and the v2 files),
# `pkg/kubelet/qos/policy.go` (`GetContainerOOMScoreAdjust`) and
# `pkg/kubelet/cm/node_container_manager_linux.go` (`GetNodeAllocatableReservation`).
# Chapter 3 of the course links them all.

# %%
from decimal import Decimal

import matplotlib.pyplot as plt
import numpy as np
from kubernetes.utils import parse_quantity

from mini_kubelet import api
from mini_kubelet.labs import Raises, case, check, course_path

# %% [markdown]
# ## Pods for the exercises
#
# The upstream tests build a container's requests and limits from pairs of CPU and memory
# amounts. The helper `r` below takes the same pairs, written `cpu/memory` with `-` for "not
# set", so the cases read like upstream's tables: `r("100m/100Mi", "200m/-")` is a container requesting 100m CPU
# and 100Mi memory, limited to 200m CPU with no memory limit. `pod(...)` builds a `V1Pod` from
# such containers through `api.pod_from_manifest`.
#
# These Pods are **not** defaulted by an API server: what you see is what the kubelet's
# functions receive (upstream's tests do the same).

# %%
def r(requests: str = "", limits: str = "", extra: dict | None = None) -> dict:
    """Container resources from "cpu/memory" strings, "-" for a missing one; extra goes in both."""
    resources = {}
    for field, text in (("requests", requests), ("limits", limits)):
        amounts = dict(zip(("cpu", "memory"), text.split("/"))) if text else {}
        amounts = {name: amount for name, amount in amounts.items() if amount != "-"}
        amounts.update(extra or {})
        if amounts:
            resources[field] = amounts
    return resources


def pod(name: str, *containers: dict, init: tuple = (), uid: str = "", annotations: dict | None = None, **spec):
    """A V1Pod with these app (and init) containers' resources; spec adds fields such as priority."""
    metadata = {"name": name, "uid": uid or f"uid-{name}", "annotations": annotations or {}}
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {
        "containers": [{"name": f"app-{i}", "image": "app", "resources": c} for i, c in enumerate(containers)],
        "initContainers": [{"name": f"init-{i}", "image": "init", "resources": c} for i, c in enumerate(init)],
        **spec}}
    return api.pod_from_manifest(manifest)


example = pod("example", r("100m/100Mi", "200m/-"), init=(r("", "1/1Gi"),))
for container in example.spec.init_containers + example.spec.containers:
    print(container.name, container.resources.requests, container.resources.limits)

# %% [markdown]
# ## Exercise 1: the QoS class
#
# `GetPodQOS` in `pkg/apis/core/v1/helper/qos/qos.go` decides the class from the Pod's spec. In
# v1.27 it works on **sums over the whole Pod**:
#
# 1. Look at every container, **app and init** alike.
# 2. Only `cpu` and `memory` count; hugepages, ephemeral storage and extended resources never
#    change the class. A quantity counts only if it is **greater than zero**: `"0"` is invisible.
# 3. Add up the counted requests per resource over all containers, and the counted limits
#    likewise.
# 4. A container that lacks a counted cpu limit **or** a counted memory limit rules out
#    Guaranteed.
# 5. Nothing counted at all (no requests, no limits) → `"BestEffort"`.
# 6. Otherwise `"Guaranteed"` if it was not ruled out, the requests and the limits name the same
#    resources, and each request total equals the limit total; else `"Burstable"`.
#
# Mind rule 6 on a container with limits but **no** requests: here (no API defaulting) its
# requests are empty, so the Pod is Burstable. The API server would have copied the limits into
# the requests (Lab 00, exercise 3), making the same Pod Guaranteed.
#
# Write `pod_qos(pod)` returning `"Guaranteed"`, `"Burstable"` or `"BestEffort"`. Compare
# amounts as numbers (`parse_quantity` gives exact `Decimal`s, so `"1"` equals `"1000m"`).

# %%
def pod_qos(pod) -> str:
    """The Pod's QoS class, from the sums of its containers' cpu and memory requests and limits."""
    # BEGIN SOLUTION
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for container in pod.spec.containers + (pod.spec.init_containers or []):
        resources = container.resources
        limited = set()
        for field, totals in (("requests", requests), ("limits", limits)):
            for name, text in (getattr(resources, field, None) or {}).items():
                amount = parse_quantity(text)
                if name in ("cpu", "memory") and amount > 0:
                    totals[name] = totals.get(name, 0) + amount
                    if field == "limits":
                        limited.add(name)
        if limited != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests.keys() == limits.keys() and all(requests[n] == limits[n] for n in requests):
        return "Guaranteed"
    return "Burstable"
    # END SOLUTION


# %%
hugepages = {"hugepages-2Mi": "1Gi"}
check("Exercise 1: the QoS class", pod_qos, [
    case(pod("guaranteed", r("100m/100Mi", "100m/100Mi")), expected="Guaranteed", note="TestGetPodQOS"),
    case(pod("guaranteed-guaranteed", r("100m/100Mi", "100m/100Mi"), r("100m/100Mi", "100m/100Mi")),
         expected="Guaranteed", note="TestGetPodQOS"),
    case(pod("best-effort-best-effort", r(), r()), expected="BestEffort", note="TestGetPodQOS"),
    case(pod("best-effort", r()), expected="BestEffort", note="TestGetPodQOS"),
    case(pod("same-amount-other-units", r("1/1Gi", "1000m/1024Mi")), expected="Guaranteed",
         note="GetPodQOS compares quantities by value (Cmp)"),
    case(pod("best-effort-burstable", r(), r("1/-", "2/-")), expected="Burstable", note="TestGetPodQOS"),
    case(pod("best-effort-guaranteed", r(), r("10m/100Mi", "10m/100Mi")), expected="Burstable",
         note="TestGetPodQOS: one container without limits"),
    case(pod("burstable-cpu-guaranteed-memory", r("-/100Mi", "-/100Mi")), expected="Burstable",
         note="TestGetPodQOS: no cpu limit"),
    case(pod("burstable-no-limits", r("100m/100Mi")), expected="Burstable", note="TestGetPodQOS"),
    case(pod("burstable-guaranteed", r("1/100Mi", "2/100Mi"), r("100m/100Mi", "100m/100Mi")),
         expected="Burstable", note="TestGetPodQOS"),
    case(pod("burstable-unbounded-but-requests-match-limits", r("100m/100Mi", "200m/200Mi"), r("100m/100Mi")),
         expected="Burstable", note="TestGetPodQOS: sums match, one container unlimited"),
    case(pod("burstable-1", r("10m/100Mi", "100m/200Mi")), expected="Burstable", note="TestGetPodQOS"),
    case(pod("burstable-2", r("0/0", "100m/200Mi")), expected="Burstable", note="TestGetPodQOS: zero requests"),
    case(pod("best-effort-hugepages", r("0/0", "0/0", extra=hugepages)), expected="BestEffort",
         note="TestGetPodQOS: hugepages ignored"),
    case(pod("init-container", r(), init=(r("10m/100Mi", "100m/200Mi"),)), expected="Burstable",
         note="TestGetPodQOS: init containers count"),
    case(pod("limits-only", r("", "1/1Gi")), expected="Burstable",
         note="GetPodQOS rule 6: limits without requests"),
    case(pod("zero-memory-limit", r("", "-/0")), expected="BestEffort",
         note="GetPodQOS rule 2: a zero limit is invisible"),
    case(pod("extended-only", r(extra={"example.com/gpu": "1"})), expected="BestEffort",
         note="GetPodQOS rule 2: extended resources ignored"),
])

# %% [markdown]
# ## Exercise 2: CPU shares and CFS quota
#
# The kubelet expresses CPU in two cgroup settings, computed in `pkg/kubelet/cm/helpers_linux.go`:
#
# - **Shares** (`MilliCPUToShares`), from the CPU *request*: the relative weight under contention.
#   `shares = milli_cpu * 1024 // 1000` (integer division), then kept between `MinShares = 2` and
#   `MaxShares = 262144`. So 0 millicores (no request) gives 2 shares.
# - **Quota** (`MilliCPUToQuota`), from the CPU *limit*: microseconds of CPU time per period of
#   `QuotaPeriod = 100000` µs (100 ms). `0` millicores means "no limit" and gives quota `0`;
#   otherwise `quota = milli_cpu * 100000 // 1000`, raised to at least `MinQuotaPeriod = 1000` µs.
#   (With the alpha gate `CPUCFSQuotaPeriod` off, as by default, the period is always 100000.)
#
# Write `cpu_shares(milli_cpu)` and `cpu_quota(milli_cpu)`, both returning an `int`. The check
# calls both on each input and compares the pair `(shares, quota)`.

# %%
def cpu_shares(milli_cpu: int) -> int:
    """The cgroup CPU shares for a CPU request in millicores."""
    # BEGIN SOLUTION
    return min(max(milli_cpu * 1024 // 1000, 2), 262144)
    # END SOLUTION


def cpu_quota(milli_cpu: int) -> int:
    """The CFS quota in microseconds per 100 ms period for a CPU limit in millicores (0: no limit)."""
    # BEGIN SOLUTION
    if milli_cpu == 0:
        return 0
    return max(milli_cpu * 100000 // 1000, 1000)
    # END SOLUTION


# %%
def shares_and_quota(milli_cpu: int) -> tuple:
    return cpu_shares(milli_cpu), cpu_quota(milli_cpu)


check("Exercise 2: CPU shares and CFS quota", shares_and_quota, [
    case(0, expected=(2, 0), note="TestMilliCPUToQuota (0 -> 0); TestCalculateLinuxResources (0 -> 2 shares)"),
    case(5, expected=(5, 1000), note="TestMilliCPUToQuota: raised to the 1000 minimum"),
    case(9, expected=(9, 1000), note="TestMilliCPUToQuota"),
    case(10, expected=(10, 1000), note="TestMilliCPUToQuota: exactly the minimum"),
    case(1, expected=(2, 1000), note="MilliCPUToShares: 1024 // 1000 = 1, raised to 2"),
    case(100, expected=(102, 10000), note="helpers_linux_test: MilliCPUToShares(100); guaranteed quota"),
    case(200, expected=(204, 20000), note="helpers_linux_test: MilliCPUToShares(200); TestMilliCPUToQuota"),
    case(250, expected=(256, 25000), note="TestGenerateLinuxContainerResources: 256 shares"),
    case(500, expected=(512, 50000), note="TestMilliCPUToQuota"),
    case(1000, expected=(1024, 100000), note="TestCalculateLinuxResources; TestMilliCPUToQuota"),
    case(1500, expected=(1536, 150000), note="TestMilliCPUToQuota"),
    case(2000, expected=(2048, 200000), note="TestCalculateLinuxResources"),
    case(257000, expected=(262144, 25700000), note="MilliCPUToShares: clamped to MaxShares"),
])

# %% [markdown]
# ## Exercise 3: the Pod's cgroup on cgroup v2
#
# When a Pod starts, the kubelet creates a cgroup for it under the cgroup of its QoS class
# (`podContainerManagerImpl.EnsureExists` creates it, with the values that `ResourceConfigForPod`
# in `pkg/kubelet/cm/helpers_linux.go` computes). With the defaults
# (`cgroupsPerQOS: true`, the `cgroupfs` driver, `cpuCFSQuota: true`, a 100 ms period), on
# **cgroup v2**:
#
# **Path.** Guaranteed Pods live directly in `/kubepods`; the other classes have their own tier:
# `/kubepods/pod<uid>`, `/kubepods/burstable/pod<uid>`, `/kubepods/besteffort/pod<uid>`, where
# `<uid>` is `pod.metadata.uid`.
#
# **Pod totals.** Per resource, the Pod's request (or limit) is the **sum over its app
# containers**, raised to the value of any **init container** that has more (init containers
# run one at a time, before the app containers). The helper `pod_total` below does this for you.
#
# **Files** (values as strings, as they are written):
#
# - `cpu.weight` — always written. Shares are `cpu_shares(total cpu request)` (exercise 2), except
#   for a BestEffort Pod, which always gets 2. cgroup v2 has weights, not shares; the conversion
#   (the kubelet's `getCPUWeight`; runc 1.1 uses the same formula for containers) is
#   `weight = 1 + (shares - 2) * 9999 // 262142`, and 10000 for shares of 262144 or more.
# - `cpu.max` — `"<quota> <period>"`, e.g. `"20000 100000"`, with `quota = cpu_quota(total cpu
#   limit)` and period 100000. Written for a Guaranteed Pod; for a Burstable Pod only if
#   **every** container, app and init, has a non-zero cpu limit (one unlimited container leaves
#   the whole Pod unlimited); never for BestEffort.
# - `memory.max` — the total memory limit in bytes, under the same rule with memory limits.
#
# The kubelet also writes `hugetlb.<size>.max` files (0 for every huge page size the Pod does not
# request), as the chapter shows; leave those out here, and `pids.max` too.
#
# Write `pod_cgroup_files(pod)` returning a dict with the key `"path"`, and `cpu.weight`,
# `cpu.max` and `memory.max` when they are written; nothing else:
# `{"path": "/kubepods/burstable/pod<uid>", "cpu.weight": "4"}` for a Burstable Pod without
# limits. Use `pod_qos`, `cpu_shares` and `cpu_quota` from the exercises
# above, and `api.milli_value` / `api.value` to read a total in millicores / bytes (rounded up).

# %%
def pod_total(pod, field: str, resource: str) -> Decimal:
    """The Pod's total of one resource ("cpu", "memory") in its containers' "requests" or "limits"."""
    def amount(container) -> Decimal:
        return parse_quantity((getattr(container.resources, field, None) or {}).get(resource, "0"))

    total = sum((amount(c) for c in pod.spec.containers), Decimal(0))
    return max([total] + [amount(c) for c in pod.spec.init_containers or []])


print(pod_total(example, "requests", "cpu"), pod_total(example, "limits", "cpu"))

# %%
def pod_cgroup_files(pod) -> dict:
    """The path of the Pod's cgroup (cgroup v2, cgroupfs driver) and the files the kubelet writes in it."""
    # BEGIN SOLUTION
    qos = pod_qos(pod)
    tier = {"Guaranteed": "/kubepods", "Burstable": "/kubepods/burstable", "BestEffort": "/kubepods/besteffort"}[qos]
    files = {"path": f"{tier}/pod{pod.metadata.uid}"}
    shares = 2 if qos == "BestEffort" else cpu_shares(api.milli_value(pod_total(pod, "requests", "cpu")))
    files["cpu.weight"] = str(10000 if shares >= 262144 else 1 + (shares - 2) * 9999 // 262142)
    containers = pod.spec.containers + (pod.spec.init_containers or [])

    def all_limited(resource: str) -> bool:
        return all(parse_quantity((getattr(c.resources, "limits", None) or {}).get(resource, "0")) > 0
                   for c in containers)

    if qos == "Guaranteed" or (qos == "Burstable" and all_limited("cpu")):
        files["cpu.max"] = f"{cpu_quota(api.milli_value(pod_total(pod, 'limits', 'cpu')))} 100000"
    if qos == "Guaranteed" or (qos == "Burstable" and all_limited("memory")):
        files["memory.max"] = str(api.value(pod_total(pod, "limits", "memory")))
    return files
    # END SOLUTION


# %%
check("Exercise 3: the Pod's cgroup on cgroup v2", pod_cgroup_files, [
    case(pod("besteffort", r(), uid="fake-uid-5"),
         expected={"path": "/kubepods/besteffort/podfake-uid-5", "cpu.weight": "1"},
         note="TestResourceConfigForPod besteffort (2 shares); TestGetPodContainerName"),
    case(pod("burstable-no-limits", r("100m/100Mi"), uid="fake-uid-3"),
         expected={"path": "/kubepods/burstable/podfake-uid-3", "cpu.weight": "4"},
         note="TestResourceConfigForPod (102 shares); TestGetPodContainerName"),
    case(pod("burstable-with-limits", r("100m/100Mi", "200m/200Mi"), uid="fake-uid-7"),
         expected={"path": "/kubepods/burstable/podfake-uid-7", "cpu.weight": "4",
                   "cpu.max": "20000 100000", "memory.max": "209715200"},
         note="TestResourceConfigForPod burstable-with-limits"),
    case(pod("burstable-partial-limits", r("100m/100Mi", "200m/200Mi"), r("100m/100Mi"), uid="fake-uid-8"),
         expected={"path": "/kubepods/burstable/podfake-uid-8", "cpu.weight": "8"},
         note="TestResourceConfigForPod burstable-partial-limits (204 shares)"),
    case(pod("guaranteed", r("100m/100Mi", "100m/100Mi"), uid="fake-uid-1"),
         expected={"path": "/kubepods/podfake-uid-1", "cpu.weight": "4",
                   "cpu.max": "10000 100000", "memory.max": "104857600"},
         note="TestResourceConfigForPod guaranteed; TestGetPodContainerName"),
    case(pod("burstable-partial-limits-with-init-containers", r("100m/100m", "100m/100Mi"), r("100m/100m"),
             init=(r("100m/100m", "100m/100Mi"), r("100m/100m")), uid="fake-uid-9"),
         expected={"path": "/kubepods/burstable/podfake-uid-9", "cpu.weight": "8"},
         note="TestResourceConfigForPod (204 shares: the init max is smaller than the sum)"),
    case(pod("guaranteed-big-init", r("1/1Gi", "1/1Gi"), init=(r("2/2Gi", "2/2Gi"),), uid="fake-uid-10"),
         expected={"path": "/kubepods/podfake-uid-10", "cpu.weight": "79",
                   "cpu.max": "200000 100000", "memory.max": "2147483648"},
         note="PodLimits rule (TestPodResourceLimits): init 2 beats app 1; 2048 shares -> weight 79"),
])

# %% [markdown]
# ## Exercise 4: the OOM score adjustment
#
# When memory runs out, the kernel kills the process with the highest OOM score. The kubelet
# steers that choice by giving each container an `oom_score_adj` between -1000 and 1000
# (`GetContainerOOMScoreAdjust` in `pkg/kubelet/qos/policy.go`):
#
# 1. A **node-critical** Pod gets **-997**. (The helper `is_node_critical` below tells which Pods
#    are: critical — static, mirror, or priority ≥ 2000000000 — *and* of priority class
#    `system-node-critical`. A `system-cluster-critical` Pod is not.)
# 2. A Guaranteed Pod's containers get **-997**; a BestEffort Pod's get **1000**.
# 3. A Burstable container gets `1000 - (1000 * request) // capacity`, where `request` is **this
#    container's** memory request in bytes (0 if it has none) and `capacity` is the **machine's**
#    memory, the node's `status.capacity["memory"]`, **not** its allocatable.
# 4. Then the clamps: a result below `1000 + (-997) = 3` becomes **3**, so a Burstable container
#    never looks safer than a Guaranteed one; exactly **1000** becomes **999**, so it always
#    looks safer than a BestEffort one.
#
# Write `oom_score_adj(pod, container, node)` returning an `int`. The cases build their nodes
# with an allocatable memory of 90% of capacity, as a node with reservations has: using
# allocatable gives a different (wrong) number.

# %%
def is_node_critical(pod) -> bool:
    """Static, mirror or system-critical priority, and of priority class system-node-critical."""
    annotations = pod.metadata.annotations or {}
    static = annotations.get("kubernetes.io/config.source", "api") != "api"
    mirror = "kubernetes.io/config.mirror" in annotations
    critical = static or mirror or (pod.spec.priority or 0) >= 2_000_000_000
    return critical and pod.spec.priority_class_name == "system-node-critical"


def node(memory_capacity: int):
    """A V1Node with this memory capacity in bytes and 90% of it allocatable."""
    status = {"capacity": {"cpu": "8", "memory": str(memory_capacity)},
              "allocatable": {"cpu": "8", "memory": str(memory_capacity * 9 // 10)}}
    manifest = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"mem-{memory_capacity}"}, "status": status}
    return api.node_from_manifest(manifest)


# %%
def oom_score_adj(pod, container, node) -> int:
    """The oom_score_adj the kubelet gives this container of this Pod on this node."""
    # BEGIN SOLUTION
    if is_node_critical(pod):
        return -997
    qos = pod_qos(pod)
    if qos == "Guaranteed":
        return -997
    if qos == "BestEffort":
        return 1000
    request = api.value((getattr(container.resources, "requests", None) or {}).get("memory", "0"))
    capacity = api.value(node.status.capacity["memory"])
    score = 1000 - (1000 * request) // capacity
    if score < 3:
        return 3
    return 999 if score == 1000 else score
    # END SOLUTION


# %%
def first(p):
    """The Pod and its first app container, the two arguments upstream's test passes."""
    return p, p.spec.containers[0]


two = pod("two-containers", r("-/2G"), r())  # a Burstable Pod whose second container requests nothing
check("Exercise 4: the OOM score adjustment", oom_score_adj, [
    case(*first(pod("cpu-limit", r("", "10/-"))), node(4000000000), expected=999,
         note="TestGetContainerOOMScoreAdjust cpuLimit"),
    case(*first(pod("memory-limit-cpu-request", r("0/-", "-/10G"))), node(8000000000), expected=999,
         note="TestGetContainerOOMScoreAdjust memoryLimitCPURequest"),
    case(*first(pod("zero-memory-limit", r("", "-/0"))), node(7230457451), expected=1000,
         note="TestGetContainerOOMScoreAdjust zeroMemoryLimit"),
    case(*first(pod("no-request-limit", r())), node(4000000000), expected=1000,
         note="TestGetContainerOOMScoreAdjust noRequestLimit"),
    case(*first(pod("equal-request-limit", r("5m/10G", "5m/10G"))), node(123456789), expected=-997,
         note="TestGetContainerOOMScoreAdjust equalRequestLimitCPUMemory"),
    case(*first(pod("half-the-memory", r("5m/4000000000", "-/10G"))), node(8000000000), expected=500,
         note="TestGetContainerOOMScoreAdjust cpuUnlimitedMemoryLimitedWithRequests"),
    case(*first(pod("request-no-limit", r("5m/7999999999"))), node(8000000000), expected=3,
         note="TestGetContainerOOMScoreAdjust requestNoLimit: clamped to 3"),
    case(*first(pod("cluster-critical", r(), priority=2000000000, priorityClassName="system-cluster-critical")),
         node(4000000000), expected=1000, note="TestGetContainerOOMScoreAdjust clusterCritical"),
    case(*first(pod("node-critical", r(), priority=2000001000, priorityClassName="system-node-critical")),
         node(4000000000), expected=-997, note="TestGetContainerOOMScoreAdjust nodeCritical"),
    case(*first(pod("burstable", r("250m/500Mi", "500m/750Mi"))), node(17179860387), expected=970,
         note="TestGenerateLinuxContainerResources: machine capacity, not allocatable"),
    case(two, two.spec.containers[1], node(8000000000), expected=999,
         note="policy.go: this container's request only, not the Pod's"),
])

# %% [markdown]
# ## Reading the score as a plot
#
# The cell below draws rule 3 and 4 for a Burstable container on a machine with 16Gi of memory,
# for memory requests from 0 to 20Gi, beyond the machine's capacity. The left panel shows the
# whole range; the right one zooms into the first 80Mi, where the integer division shows as
# steps. Study both before the next exercise.

# %%
GI, MI = 1024**3, 1024**2
capacity_16gi = 16 * GI


def burstable_score(request: int, capacity: int) -> int:
    """Upstream's Burstable formula with its clamps (the answer to exercise 4, rules 3 and 4)."""
    score = 1000 - (1000 * request) // capacity
    return 3 if score < 3 else 999 if score == 1000 else score


figure, (whole, zoom) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [3, 2]})
requests = np.linspace(0, 20 * GI, 2001).astype(np.int64)
whole.plot(requests / GI, [burstable_score(int(b), capacity_16gi) for b in requests], color="tab:blue",
           label="Burstable container")
whole.axhline(1000, color="tab:red", linestyle="--", linewidth=1, label="BestEffort: 1000")
whole.axhline(-997, color="tab:green", linestyle="--", linewidth=1, label="Guaranteed: -997")
whole.axvline(16, color="grey", linestyle=":", linewidth=1)
whole.text(16.15, 700, "machine\ncapacity\n16Gi", color="grey")
whole.annotate("clamped to 3 from 99.7% of\ncapacity on, and above it", xy=(17.5, 3), xytext=(11.5, -450),
               arrowprops={"arrowstyle": "->"})
whole.annotate("no request: 999", xy=(0, 999), xytext=(1.5, 650), arrowprops={"arrowstyle": "->"})
whole.set(title="oom_score_adj of a Burstable container, 16Gi machine", xlabel="memory request (GiB)",
          ylabel="oom_score_adj", xlim=(-0.3, 20), ylim=(-1050, 1080))
whole.legend(loc="lower left")
whole.grid(alpha=0.3)

steps = np.arange(0, 80 * MI, 256 * 1024)
zoom.step(steps / MI, [burstable_score(int(b), capacity_16gi) for b in steps], where="post", color="tab:blue")
zoom.axvspan(0, capacity_16gi / 1000 / MI, color="tab:orange", alpha=0.15)
zoom.axvline(capacity_16gi / 1000 / MI, color="grey", linestyle=":", linewidth=1)
zoom.annotate("raw score 1000 here,\nclamped to 999: so the\n999 step is twice as wide", xy=(8, 999),
              xytext=(38, 998.35), arrowprops={"arrowstyle": "->"})
zoom.text(capacity_16gi / 1000 / MI + 0.8, 995, "capacity / 1000\n(about 16.4Mi):\none step", color="grey")
zoom.set(title="zoom: the first 80Mi", xlabel="memory request (MiB)", ylabel="oom_score_adj",
         xlim=(0, 80), ylim=(994.5, 999.5))
zoom.grid(alpha=0.3)
figure.tight_layout()
plt.show()

# %% [markdown]
# ## Exercise 5: the request for a target score
#
# Read the plot backwards. An operator wants a Burstable container to have an `oom_score_adj`
# of **at most** some target, so that the kernel prefers other victims. What is the smallest
# memory request that achieves it?
#
# - Each step in the zoom is `capacity / 1000` bytes wide: the score drops by one each time
#   `1000 * request` passes another multiple of the capacity. Solve rule 3 for `request` and
#   round **up** to whole bytes (integer arithmetic only: floats lose bytes at this size).
# - A target of 999 or more needs no request at all: the answer is 0.
# - The plot never goes below 3: for a target below 3 raise `ValueError`.
#
# Write `request_for_score(target_score, memory_capacity)` returning the smallest request in
# bytes (an `int`) whose score is at most `target_score`.

# %%
def request_for_score(target_score: int, memory_capacity: int) -> int:
    """The smallest memory request in bytes that gives a Burstable container at most this oom_score_adj."""
    # BEGIN SOLUTION
    if target_score < 3:
        raise ValueError(f"a Burstable container never scores below 3, asked for {target_score}")
    if target_score >= 999:
        return 0
    return -(-(1000 - target_score) * memory_capacity // 1000)  # ceiling division
    # END SOLUTION


# %%
check("Exercise 5: the request for a target score", request_for_score, [
    case(500, 8000000000, expected=4000000000,
         note="TestGetContainerOOMScoreAdjust: 4000000000 of 8000000000 -> 500"),
    case(3, 8000000000, expected=7976000000, note="requestNoLimit: 7999999999 is above this, -> 3"),
    case(999, 8000000000, expected=0, note="cpuLimit: no memory request -> 999"),
    case(970, 17179860387, expected=515395812,
         note="TestGenerateLinuxContainerResources: 500Mi -> 970; the step starts here"),
    case(500, capacity_16gi, expected=8 * GI, note="policy.go formula: half the machine -> 500"),
    case(998, capacity_16gi, expected=34359739, note="policy.go formula: the first step, rounded up"),
    case(1000, capacity_16gi, expected=0, note="policy.go: never above 999"),
    case(2, capacity_16gi, expected=Raises(ValueError), note="policy.go: the lower clamp is 3"),
])

# %% [markdown]
# ## Exercise 6: allocatable memory
#
# The memory a Node offers to Pods, `status.allocatable["memory"]`, is its capacity minus a
# **reservation**: `system-reserved` plus `kube-reserved` plus the **hard eviction threshold**
# for `memory.available` (`GetNodeAllocatableReservation` in
# `pkg/kubelet/cm/node_container_manager_linux.go`), floored at 0.
#
# The threshold is either a quantity (`"100Mi"`) or a percentage of capacity (`"5%"`). A
# percentage has a quirk: the kubelet parses it into a **float32** (`float32(5) / 100`, as a
# float32), then multiplies `float(capacity)` by it in double precision and truncates to an
# integer. float32 cannot hold 0.05 exactly, so 5% of 10Gi is 536870920 bytes, not 536870912.
# `numpy.float32` reproduces the rounding.
#
# Write `allocatable_memory(capacity, system_reserved, kube_reserved, hard_threshold)` returning
# the allocatable memory in bytes (an `int`). The first three are quantity strings;
# `hard_threshold` is a quantity or percentage string, or `None` for no threshold. (Hugepages,
# which are also subtracted, are left out of this exercise.)

# %%
def allocatable_memory(capacity: str, system_reserved: str, kube_reserved: str, hard_threshold: str | None) -> int:
    """Capacity minus system-reserved, kube-reserved and the memory.available hard threshold, in bytes."""
    # BEGIN SOLUTION
    total = api.value(capacity)
    reserved = api.value(system_reserved) + api.value(kube_reserved)
    if hard_threshold is not None and hard_threshold.endswith("%"):
        percentage = np.float32(float(hard_threshold[:-1])) / np.float32(100)
        reserved += int(float(total) * float(percentage))
    elif hard_threshold is not None:
        reserved += api.value(hard_threshold)
    return max(total - reserved, 0)
    # END SOLUTION


# %%
check("Exercise 6: allocatable memory", allocatable_memory, [
    case("10Gi", "50Mi", "100Mi", None, expected=10580131840,
         note="TestNodeAllocatableReservationForScheduling: reservation 150Mi"),
    case("10Gi", "50Mi", "100Mi", "100Mi", expected=10475274240,
         note="TestNodeAllocatableReservationForScheduling: reservation 250Mi"),
    case("10Gi", "50Mi", "100Mi", "5%", expected=10043260920,
         note="TestNodeAllocatableReservationForScheduling: reservation 694157320 (float32)"),
    case("10Gi", "0", "0", None, expected=10737418240,
         note="TestNodeAllocatableReservationForScheduling: nothing reserved"),
    case("100Gi", "0", "0", "10%", expected=96636764000,
         note="GetThresholdQuantity: 10% of 100Gi is 10737418400 (float32)"),
    case("11Gi", "10Gi", "10Gi", "2Gi", expected=0,
         note="MachineInfo floors at 0 (a real kubelet refuses this config: TestNodeAllocatableInputValidation)"),
])

# %% [markdown]
# ## Exercise 7: a sidecar's OOM score in v1.36
#
# *The current release.* Exercise 4 is v1.27's rule, and it scores every container from its own
# memory request. A sidecar (an init container with `restartPolicy: Always`, on by default from
# v1.29; Lab 02 has the details) often asks for little memory, a proxy or a log shipper beside
# a big app. So it got a **higher** score than the app it serves: when memory ran out, the
# kernel killed the sidecar first, and the app lost its network or its logs while it kept running.
#
# From v1.32 (kubernetes/kubernetes#128029, still the rule in v1.36) the kubelet caps a
# sidecar's score. Its Burstable formula (exercise 4, rule 3) uses the **larger** of the
# sidecar's own memory request and the **smallest** memory request among the Pod's regular
# containers (`pod.spec.containers`; init containers do not count). A sidecar is therefore never
# more killable than the most killable app container. The same in terms of scores: a sidecar
# gets the **smaller** of its own score and the **highest** score among the regular containers,
# and since the clamps of rule 4 never reorder scores, your `oom_score_adj` gives all the numbers
# you need. Nothing else changes: node-critical, Guaranteed and BestEffort Pods score as before,
# and so does every container that is not a sidecar.
#
# A container is a sidecar when it is one of `pod.spec.init_containers` (compare names) and its
# `restart_policy` is `"Always"`. v1.36 also shares out pod-level memory requests in this score
# (Lab 02 exercise 6 has pod-level resources); the cases here set none.
#
# Write `oom_score_adj_v136(pod, container, node)`. In the cases, `sidecars(p, 1)` makes the
# Pod's init container at position 1 a sidecar, and `init_container(p, 1)` passes that Pod and
# container.

# %%
def sidecars(p, *positions):
    """The Pod p with its init containers at these positions made sidecars (restartPolicy: Always)."""
    for position in positions:
        p.spec.init_containers[position].restart_policy = "Always"
    return p


def init_container(p, position: int):
    """The Pod and its init container at this position, the two arguments the check passes."""
    return p, p.spec.init_containers[position]


# %%
def oom_score_adj_v136(pod, container, node) -> int:
    """The oom_score_adj in v1.36: a sidecar is never more killable than the Pod's most killable app container."""
    # BEGIN SOLUTION
    score = oom_score_adj(pod, container, node)
    is_sidecar = container.restart_policy == "Always" and any(
        c.name == container.name for c in pod.spec.init_containers or [])
    if not is_sidecar:
        return score
    return min(score, max(oom_score_adj(pod, regular, node) for regular in pod.spec.containers))
    # END SOLUTION


# %%
# TestGetContainerOOMScoreAdjust's sample Burstable container: 1000000000 bytes requested, 1000 more as the limit.
sample = r("-/1000000000", "-/1000001000")
checkout = api.load_manifests(course_path("examples/cluster/deployment.yaml"))[0]  # its template's Pod
check("Exercise 7: a sidecar's OOM score in v1.36", oom_score_adj_v136, [
    case(*init_container(pod("plain-init", sample, init=(sample,)), 0), node(8000000000), expected=875,
         note="TestGetContainerOOMScoreAdjust burstable-mixed-unique-main-container-pod: not a sidecar"),
    case(*init_container(sidecars(pod("small-sidecar", sample, init=(sample, r("-/400000000", "-/1000001000"))), 1), 1),
         node(8000000000), expected=875,
         note="TestGetContainerOOMScoreAdjust burstable-mixed-multi-container-small-sidecar-pod (own: 950)"),
    case(*first(sidecars(pod("small-sidecar", sample, init=(sample, r("-/400000000", "-/1000001000"))), 1)),
         node(8000000000), expected=875,
         note="TestGetContainerOOMScoreAdjust burstable-mixed-multi-container-small-sidecar-pod: main-1"),
    case(*init_container(sidecars(pod("sample-sidecar", sample, init=(sample, sample)), 1), 1), node(8000000000), expected=875,
         note="TestGetContainerOOMScoreAdjust burstable-mixed-multi-container-sample-request-pod"),
    # (upstream then lowers this sidecar's limit below its request; the Pod is Burstable either way)
    case(*init_container(sidecars(pod("big-sidecar", sample, init=(sample, r("-/4000000000", "-/4000000000"))), 1), 1),
         node(8000000000), expected=500,
         note="TestGetContainerOOMScoreAdjust burstable-mixed-multi-container-big-sidecar-container-pod"),
    case(*init_container(sidecars(pod("two-apps", sample, r("-/2000000000"), init=(r("-/400000000"),)), 0), 0),
         node(8000000000), expected=875, note="policy.go minRegularContainerMemory: the smallest app request, 875 not 750"),
    case(*first(pod("unique", sample)), node(8000000000), expected=875,
         note="TestGetContainerOOMScoreAdjust burstable-unique-container-pod"),
    case(*first(pod("request-no-limit", r("5m/7999999999"))), node(8000000000), expected=3,
         note="TestGetContainerOOMScoreAdjust request-no-limit: unchanged"),
    case(*first(pod("node-critical", r(), priority=2000001000, priorityClassName="system-node-critical")),
         node(4000000000), expected=-997, note="TestGetContainerOOMScoreAdjust node-critical: unchanged"),
    case(checkout, checkout.spec.init_containers[1], node(16 * 1024**3), expected=969,
         note="deployment.yaml: mesh-proxy capped at app's 969 (v1.27: 993)"),
    case(checkout, checkout.spec.init_containers[0], node(16 * 1024**3), expected=985,
         note="deployment.yaml: migrate is no sidecar, 985 as in v1.27"),
])

# %% [markdown]
# ## Exercise 8: the node's resize decision in v1.36
#
# *The current release.* From v1.33 a running Pod's requests and limits can change in place
# (`kubectl patch pod NAME --subresource resize`; the gate `InPlacePodVerticalScaling`, GA from
# 1.35). The kubelet decides whether to apply the new values
# (`pkg/kubelet/allocation/allocation_manager.go`, `handlePodResourcesResize`, in v1.36):
#
# 1. **Infeasible** (never on this node) for a Guaranteed Pod whose CPU request changes while the
#    CPU manager's policy is `"static"`, or whose memory request changes while the memory manager's
#    is `"Static"` (the exclusive-CPU and exclusive-memory resize gates are off in v1.36);
# 2. otherwise **accepted** if the new requests fit beside the **other** Pods' allocated requests:
#    for cpu and for memory, others + wanted <= allocatable;
# 3. otherwise **Deferred**: kept, and tried again when Pods leave. Since v1.36 a request larger
#    than the whole node is Deferred too (the API server now refuses such a patch).
#
# Write `resize_decision(allocatable, others, current, wanted, qos_class, cpu_policy, memory_policy)`
# returning `"accepted"`, `"Deferred"` or `"Infeasible"`. `allocatable`, `others` (the sum of
# the other Pods' allocated requests), `current` and `wanted` (the Pod's requests) are
# `{"cpu": ..., "memory": ...}` quantity strings; `parse_quantity` reads them. The cases are the
# rows of upstream's `TestRetryPendingResizes` (a node of 4 CPUs and 4Gi, two other Pods of 1 CPU
# and 1Gi each) and `TestRetryPendingResizesGuanteedQOSPods`.

# %%
def resize_decision(allocatable: dict, others: dict, current: dict, wanted: dict, qos_class: str,
                    cpu_policy: str, memory_policy: str) -> str:
    """accepted, Deferred or Infeasible, as a v1.36 kubelet answers a resize."""
    # BEGIN SOLUTION
    if qos_class == "Guaranteed":
        for name, policy, static in (("cpu", cpu_policy, "static"), ("memory", memory_policy, "Static")):
            if policy == static and parse_quantity(wanted[name]) != parse_quantity(current[name]):
                return "Infeasible"
    fits = all(parse_quantity(others[name]) + parse_quantity(wanted[name]) <= parse_quantity(allocatable[name])
               for name in ("cpu", "memory"))
    return "accepted" if fits else "Deferred"
    # END SOLUTION


# %%
NODE_4 = {"cpu": "4", "memory": "4Gi"}
OTHERS_2 = {"cpu": "2", "memory": "2Gi"}  # TestRetryPendingResizes: pod2 and pod3, 1 CPU and 1Gi each
ONE = {"cpu": "1", "memory": "1Gi"}
check("Exercise 8: the node's resize decision in v1.36", resize_decision, [
    case(NODE_4, OTHERS_2, ONE, {"cpu": "500m", "memory": "500Mi"}, "Burstable", "none", "None", expected="accepted",
         note="TestRetryPendingResizes: CPU and memory decrease"),
    case(NODE_4, OTHERS_2, ONE, {"cpu": "1500m", "memory": "500Mi"}, "Burstable", "none", "None", expected="accepted",
         note="TestRetryPendingResizes: CPU increase, memory decrease"),
    case(NODE_4, OTHERS_2, ONE, {"cpu": "2500m", "memory": "2500Mi"}, "Burstable", "none", "None",
         expected="Deferred", note="TestRetryPendingResizes: beyond current capacity (cpu)"),
    case(NODE_4, OTHERS_2, ONE, {"cpu": "500m", "memory": "2500Mi"}, "Burstable", "none", "None",
         expected="Deferred", note="TestRetryPendingResizes: memory beyond current capacity"),
    case(NODE_4, OTHERS_2, ONE, {"cpu": "1", "memory": "4500Mi"}, "Burstable", "none", "None", expected="Deferred",
         note="TestRetryPendingResizes: beyond the node (Infeasible until v1.36)"),
    case(NODE_4, OTHERS_2, ONE, {"cpu": "5000m", "memory": "1Gi"}, "Burstable", "none", "None", expected="Deferred",
         note="TestRetryPendingResizes: CPU beyond the node (Infeasible until v1.36)"),
    case(NODE_4, OTHERS_2, {"cpu": "2m", "memory": "0"}, {"cpu": "1", "memory": "0"}, "Burstable", "none", "None",
         expected="accepted", note="TestRetryPendingResizes: increase CPU from min shares"),
    case(NODE_4, OTHERS_2, ONE, {"cpu": "2", "memory": "1Gi"}, "Guaranteed", "static", "None",
         expected="Infeasible", note="TestRetryPendingResizesGuanteedQOSPods: CPU under static cpu policy"),
    case(NODE_4, OTHERS_2, ONE, {"cpu": "1", "memory": "2Gi"}, "Guaranteed", "none", "Static",
         expected="Infeasible", note="TestRetryPendingResizesGuanteedQOSPods: memory under Static memory policy"),
    case(NODE_4, OTHERS_2, {"cpu": "500m", "memory": "500Mi"}, {"cpu": "500m", "memory": "500Mi"}, "Burstable",
         "static", "Static", expected="accepted",
         note="TestRetryPendingResizesGuanteedQOSPods: its 'BestEffortPod' (requests below limits): policies do not matter"),
])

# %% [markdown]
# ## Exercise 9: the order of the cgroup writes
#
# An accepted resize is written by the runtime manager (`doPodResizeAction` in v1.36), one
# resource at a time. For a memory limit, the pod cgroup's `memory.max` is the sum of its
# containers' limits, and no container may ever have more than its pod. So:
#
# - the pod cgroup is written **before** the containers if its limit grows, **after** them if it
#   shrinks, not at all if it stays;
# - the containers whose limit goes **down** come first, each put in front of those already
#   listed (so in reverse spec order), then those whose limit goes **up**, each added at the end
#   (in spec order); an unchanged container is not written (`computePodResizeAction`).
#
# Write `write_order(containers)`: `containers` is a list of `(name, current_limit, new_limit)` in
# spec order (bytes, or any unit); return the list of cgroups written, `"pod"` for the pod's.

# %%
def write_order(containers: list) -> list:
    """The cgroups written for one memory limit resize, in order ("pod" for the pod cgroup)."""
    # BEGIN SOLUTION
    order = []
    for name, current, new in containers:
        if new < current:
            order.insert(0, name)
        elif new > current:
            order.append(name)
    before, after = sum(c[1] for c in containers), sum(c[2] for c in containers)
    if after > before:
        return ["pod"] + order
    return order + ["pod"] if after < before else order
    # END SOLUTION


# %%
check("Exercise 9: the order of the cgroup writes", write_order, [
    case([("foo1", 200, 300), ("foo2", 200, 100), ("foo3", 200, 50)], expected=["foo3", "foo2", "foo1", "pod"],
         note="TestComputePodActionsForPodResize order: decreases prepended; the pod shrinks, last"),
    case([("foo1", 200, 300), ("foo2", 200, 100), ("foo3", 200, 300)], expected=["pod", "foo2", "foo1", "foo3"],
         note="the same order for cpu; the pod grows, first"),
    case([("a", 200, 300), ("b", 100, 50)], expected=["pod", "b", "a"],
         note="kuberuntime resize replay: memory.max of the pod, then b, then a"),
    case([("redis", 512, 300)], expected=["redis", "pod"],
         note="lifecycle-resize-memory-down.yaml: a limit lowered, the pod after"),
    case([("a", 100, 100), ("b", 100, 200)], expected=["pod", "b"], note="an unchanged container is not written"),
    case([("a", 100, 200), ("b", 200, 100)], expected=["b", "a"], note="the pod's sum is the same: not written"),
])

# %% [markdown]
# ## What you learned
#
# - The QoS class is computed from **sums** over all containers, init containers included; only
#   non-zero cpu and memory count, and limits without requests make a Pod Burstable until the
#   API server defaults the requests.
# - A CPU request becomes **shares** (×1024/1000, between 2 and 262144); a CPU limit becomes a
#   **CFS quota** per 100 ms period (at least 1000 µs, 0 for none).
# - A Pod's cgroup sits under its QoS tier, `/kubepods[/burstable|/besteffort]/pod<uid>`; on
#   cgroup v2 shares become `cpu.weight`, and one container without a limit removes the Pod's
#   `cpu.max` or `memory.max`.
# - `oom_score_adj` is -997 for Guaranteed and node-critical Pods, 1000 for BestEffort, and for
#   Burstable containers a linear function of the container's own memory request over the
#   **machine's** memory, clamped to 3..999. From v1.32 a sidecar's score is capped at the
#   highest score of the Pod's app containers, so the kernel never picks it before them.
# - Allocatable is capacity minus reservations and the hard eviction threshold, and a percentage
#   threshold carries float32 rounding into the bytes.
# - In v1.36 a resize is admitted like a Pod against the others' allocated requests: accepted,
#   Deferred (retried as Pods leave) or Infeasible (a static CPU or memory manager); its cgroup
#   writes grow the pod's limit first and shrink it last.
#
# The `mini_kubelet` modules of chapter 3 (`qos`, `cm`, `kuberuntime`) implement these same rules
# with the upstream names, and `mini-kubelet explain POD.yaml` prints them for your own Pods
# (`--kubernetes-version 1.36` for the current release's numbers).
