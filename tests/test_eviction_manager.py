"""Chapter 4: the eviction manager's synchronize pass, its node conditions, and admission.

The multi-step scenarios are ported from pkg/kubelet/eviction/eviction_manager_test.go (read at
kubeedge/kubernetes@bc4729965bfd, a v1.26 copy with the same manager logic as v1.27). Each step
advances the virtual clock, feeds a new Summary, synchronizes, and asserts what upstream asserts:
pressure reported or not, which pod was killed and with which grace-period override, and admission.
As in upstream's tests, the manager runs with localStorageCapacityIsolation off and no dedicated
imagefs, and PodDisruptionConditions on (its 1.27 default).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_kubelet import api, stats
from mini_kubelet.clock import Clock
from mini_kubelet.eviction import images
from mini_kubelet.eviction.api import (OP_LESS_THAN, SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, SIGNAL_MEMORY_AVAILABLE,
                                       SIGNAL_NODEFS_AVAILABLE, SIGNAL_NODEFS_INODES_FREE, SIGNAL_PID_AVAILABLE,
                                       Threshold, ThresholdValue)
from mini_kubelet.eviction.manager import Config, Manager
from mini_kubelet.eviction.records import effective_grace_period

pytestmark = pytest.mark.ch4

LOW, DEFAULT, HIGH = -1, 0, 1  # lowPriority, defaultPriority, highPriority
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
MINUTE = timedelta(minutes=1)


# ---- fixtures: upstream's newPod / newContainer / newResourceList / new*Stats / make*Stats ----

def resource_list(cpu="", memory="", disk=""):
    """newResourceList: empty strings are left out; disk is ephemeral-storage."""
    named = {"cpu": cpu, "memory": memory, "ephemeral-storage": disk}
    return {name: amount for name, amount in named.items() if amount}


def new_pod(name, priority, requests=None, limits=None, *, volumes=None, annotations=None, namespace=None,
            termination_grace_period=None, container_name=None):
    """newPod with one container newContainer(name, requests, limits): the UID is the name."""
    metadata = {"name": name, "uid": name}
    if annotations:
        metadata["annotations"] = annotations
    if namespace:
        metadata["namespace"] = namespace
    container = {"name": container_name or name, "image": "app",
                 "resources": {"requests": requests or {}, "limits": limits or {}}}
    spec = {"containers": [container], "volumes": volumes or []}
    if priority is not None:
        spec["priority"] = priority
    if termination_grace_period is not None:
        spec["terminationGracePeriodSeconds"] = termination_grace_period
    return api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


def b(text):
    """A quantity's Value() in bytes (or inodes): Go's MustParse(text).Value(), rounded up."""
    return api.value(text or "0")


def pod_ref(pod):
    return {"name": pod.metadata.name, "namespace": pod.metadata.namespace or "", "uid": pod.metadata.uid}


def pod_memory_stats(pod, working_set):
    """newPodMemoryStats: pod working set, one container stat (no memory) with logs/rootfs, a volume, ephemeral-storage."""
    ws = b(working_set)
    return {"podRef": pod_ref(pod), "memory": {"workingSetBytes": ws},
            "containers": [{"name": pod.metadata.name, "logs": {"usedBytes": ws}, "rootfs": {"usedBytes": ws}}],
            "volume": [{"name": "local-volume", "usedBytes": ws}], "ephemeral-storage": {"usedBytes": ws}}


def pod_disk_stats(pod, rootfs="", logs="", per_volume=""):
    """newPodDiskStats: one unnamed container stat per container; one volume stat per local volume (none here)."""
    containers = [{"rootfs": {"usedBytes": b(rootfs)}, "logs": {"usedBytes": b(logs)}} for _ in pod.spec.containers]
    volumes = [{"name": v.name, "usedBytes": b(per_volume)} for v in pod.spec.volumes or [] if v.empty_dir is not None]
    return {"podRef": pod_ref(pod), "containers": containers, "volume": volumes}


def pod_inode_stats(pod, rootfs_inodes="", logs_inodes="", per_volume_inodes=""):
    """newPodInodeStats: the same shape as the disk stats, with inodesUsed."""
    containers = [{"rootfs": {"inodesUsed": b(rootfs_inodes)}, "logs": {"inodesUsed": b(logs_inodes)}}
                  for _ in pod.spec.containers]
    return {"podRef": pod_ref(pod), "containers": containers}


def memory_summary(available, pod_stats):
    """makeMemoryStats: node memory and the "pods" system container both at available = working set."""
    avail = b(available)
    memory = {"availableBytes": avail, "workingSetBytes": avail}
    doc = {"node": {"memory": memory, "systemContainers": [{"name": "pods", "memory": memory}]}, "pods": list(pod_stats)}
    return stats.summary_from_json(doc, "makeMemoryStats")


def disk_summary(rootfs_available, imagefs_available, pod_stats):
    """makeDiskStats: nodefs and imagefs with capacity = 2 x available."""
    root, image = b(rootfs_available), b(imagefs_available)
    doc = {"node": {"fs": {"availableBytes": root, "capacityBytes": 2 * root},
                    "runtime": {"imageFs": {"availableBytes": image, "capacityBytes": 2 * image}}},
           "pods": list(pod_stats)}
    return stats.summary_from_json(doc, "makeDiskStats")


def inode_summary(inodes_free, inodes, pod_stats):
    """TestInodePressureNodeFsInodes's summaryStatsMaker: only node.fs inodesFree and inodes."""
    doc = {"node": {"fs": {"inodesFree": b(inodes_free), "inodes": b(inodes)}}, "pods": list(pod_stats)}
    return stats.summary_from_json(doc, "inodeSummary")


def hard(signal, quantity, min_reclaim=None):
    return Threshold(signal, OP_LESS_THAN, ThresholdValue(quantity=quantity),
                     min_reclaim=ThresholdValue(quantity=min_reclaim) if min_reclaim else None)


def soft(signal, quantity, grace):
    return Threshold(signal, OP_LESS_THAN, ThresholdValue(quantity=quantity), grace_period=grace)


class Killer:
    """mockPodKiller: remembers the last pod killed and its override."""

    def __init__(self):
        self.killed = []

    def __call__(self, evicted):
        self.killed.append(evicted)


def make_manager(thresholds, **kwargs):
    clock = Clock()
    killer = Killer()
    config = Config(max_pod_grace_period_seconds=5, pressure_transition_period=5 * MINUTE, thresholds=thresholds)
    kwargs.setdefault("local_storage_capacity_isolation", False)  # the tests' struct literal leaves it false
    manager = Manager(config, clock, kill_pod=killer, **kwargs)
    return manager, clock, killer


# The memory pod set (TestMemoryPressure, TestMinReclaim, TestAllocatableMemoryPressure).
MEMORY_PODS = [
    ("guaranteed-low-priority-high-usage", LOW, resource_list("100m", "1Gi"), resource_list("100m", "1Gi"), "900Mi"),
    ("burstable-below-requests", DEFAULT, resource_list("100m", "100Mi"), resource_list("200m", "1Gi"), "50Mi"),
    ("burstable-above-requests", DEFAULT, resource_list("100m", "100Mi"), resource_list("200m", "1Gi"), "400Mi"),
    ("best-effort-high-priority-high-usage", HIGH, {}, {}, "400Mi"),
    ("best-effort-low-priority-low-usage", LOW, {}, {}, "100Mi"),
]

# The disk pod set (TestDiskPressureNodeFs, TestNodeReclaimFuncs): (rootfs, logs, per-local-volume) used.
DISK_PODS = [
    ("low-priority-high-usage", LOW, resource_list("100m", "1Gi"), resource_list("100m", "1Gi"), ("900Mi", "", "")),
    ("below-requests", DEFAULT, resource_list("100m", "100Mi"), resource_list("200m", "1Gi"), ("", "50Mi", "")),
    ("above-requests", DEFAULT, resource_list("100m", "100Mi"), resource_list("200m", "1Gi"), ("400Mi", "", "")),
    ("high-priority-high-usage", HIGH, {}, {}, ("", "", "400Mi")),
    ("low-priority-low-usage", LOW, {}, {}, ("100Mi", "", "")),
]


def memory_pods():
    pods = [new_pod(name, prio, req, lim) for name, prio, req, lim, _ws in MEMORY_PODS]
    pod_stats = [pod_memory_stats(pod, ws) for pod, (*_, ws) in zip(pods, MEMORY_PODS)]
    return pods, pod_stats


def disk_pods():
    pods = [new_pod(name, prio, req, lim) for name, prio, req, lim, _use in DISK_PODS]
    pod_stats = [pod_disk_stats(pod, *use) for pod, (*_, use) in zip(pods, DISK_PODS)]
    return pods, pod_stats


def admission_probes():
    """The best-admit (BestEffort) and burst-admit (Burstable) pods the memory tests try to admit."""
    return [new_pod("best-admit", DEFAULT), new_pod("burst-admit", DEFAULT, resource_list("100m", "100Mi"),
                                                    resource_list("200m", "200Mi"))]


def admits(manager, pods):
    return [manager.admit(pod).admit for pod in pods]


def sync(manager, summary, pods):
    """One pass; returns the names of the pods evicted and their grace-period overrides."""
    evicted = manager.synchronize(summary, pods)
    return [(e.pod.metadata.name, e.grace_period_override) for e in evicted]


def run_steps(manager, clock, pods, steps, under_pressure, probes=()):
    """Replay (advance, summary, pressure?, evicted [(name, override)], admit results or None) step by step."""
    for number, (advance, summary, pressure, evicted, admitted) in enumerate(steps):
        clock.advance(advance)
        got = sync(manager, summary, pods)
        where = f"step {number} at +{clock.elapsed()}"
        assert under_pressure() == pressure, where
        assert got == evicted, where
        if admitted is not None:
            assert admits(manager, probes) == admitted, where


# eviction_manager_test.go#TestMemoryPressure
def test_memory_pressure():
    pods, pod_stats = memory_pods()
    manager, clock, killer = make_manager([hard(SIGNAL_MEMORY_AVAILABLE, "1Gi"),
                                           soft(SIGNAL_MEMORY_AVAILABLE, "2Gi", 2 * MINUTE)])
    victim = "best-effort-low-priority-low-usage"
    steps = [
        (0, memory_summary("2Gi", pod_stats), False, [], [True, True]),
        (1 * MINUTE, memory_summary("1500Mi", pod_stats), True, [], None),  # soft threshold met: grace running
        (3 * MINUTE, memory_summary("1500Mi", pod_stats), True, [(victim, 5)], None),  # soft: MaxPodGracePeriodSeconds
        (20 * MINUTE, memory_summary("3Gi", pod_stats), False, [], None),
        (1 * MINUTE, memory_summary("500Mi", pod_stats), True, [(victim, 0)], [False, True]),  # hard: override 0
        (1 * MINUTE, memory_summary("2Gi", pod_stats), True, [], [False, True]),  # transition period holds the condition
        (5 * MINUTE, memory_summary("2Gi", pod_stats), False, [], [True, True]),
    ]
    run_steps(manager, clock, pods, steps, manager.is_under_memory_pressure, admission_probes())
    # The overrides above are what upstream asserts; what the pod worker makes of them in 1.27:
    assert [(e.grace_period_override, e.effective_grace_period) for e in killer.killed] == [(5, 5), (0, 30)]


# eviction_manager_test.go#TestMemoryPressure_VerifyPodStatus (both PodDisruptionConditions settings)
@pytest.mark.parametrize("disruption_conditions", [False, True])
def test_memory_pressure_verify_pod_status(disruption_conditions):
    pods = [new_pod("below-requests", DEFAULT, resource_list(memory="1Gi"), resource_list(memory="1Gi")),
            new_pod("above-requests", DEFAULT, resource_list(memory="100Mi"), resource_list(memory="1Gi"))]
    pod_stats = [pod_memory_stats(pods[0], "900Mi"), pod_memory_stats(pods[1], "700Mi")]
    manager, clock, killer = make_manager([hard(SIGNAL_MEMORY_AVAILABLE, "2Gi")],
                                          pod_disruption_conditions=disruption_conditions)
    [evicted] = manager.synchronize(memory_summary("1500Mi", pod_stats), pods)
    assert manager.is_under_memory_pressure()
    message = "The node was low on resource: memory. Threshold quantity: 2Gi, available: 1500Mi. "
    assert (evicted.pod.metadata.name, evicted.phase, evicted.status_reason, evicted.message) == (
        "above-requests", "Failed", "Evicted", message)
    expected_condition = {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": message}
    assert evicted.condition == (expected_condition if disruption_conditions else None)
    # The fixture's container stats carry no memory, so helpers.go evictionMessage names no container.
    assert evicted.annotations == {"offending_containers": "", "offending_containers_usage": "", "starved_resource": "memory"}


# eviction_manager_test.go#TestDiskPressureNodeFs_VerifyPodStatus (both PodDisruptionConditions settings)
@pytest.mark.parametrize("disruption_conditions", [False, True])
def test_disk_pressure_node_fs_verify_pod_status(disruption_conditions):
    pods = [new_pod("below-requests", DEFAULT, resource_list(disk="1Gi"), resource_list(disk="1Gi")),
            new_pod("above-requests", DEFAULT, resource_list(disk="100Mi"), resource_list(disk="1Gi"))]
    pod_stats = [pod_disk_stats(pods[0], rootfs="900Mi"), pod_disk_stats(pods[1], rootfs="700Mi")]
    manager, clock, killer = make_manager([hard(SIGNAL_NODEFS_AVAILABLE, "2Gi")],
                                          pod_disruption_conditions=disruption_conditions)
    [evicted] = manager.synchronize(disk_summary("1.5Gi", "200Gi", pod_stats), pods)
    assert manager.is_under_disk_pressure()
    message = "The node was low on resource: ephemeral-storage. Threshold quantity: 2Gi, available: 1536Mi. "
    assert (evicted.pod.metadata.name, evicted.phase, evicted.status_reason, evicted.message) == (
        "above-requests", "Failed", "Evicted", message)
    assert (evicted.condition is not None) == disruption_conditions


def make_containers_by_qos(qos_class):
    """makeContainersByQOS: 100m/1Gi as requests and limits, requests only, or nothing."""
    amounts = resource_list("100m", "1Gi")
    return {"Guaranteed": (amounts, amounts), "Burstable": (amounts, {}), "BestEffort": ({}, {})}[qos_class]


# eviction_manager_test.go#TestAdmitUnderNodeConditions
@pytest.mark.parametrize("conditions, expected, message", [
    ([], [True, True, True], ""),
    (["MemoryPressure"], [True, True, False], "The node had condition: [MemoryPressure]. "),
    (["MemoryPressure", "DiskPressure"], [False, False, False], "The node had condition: [MemoryPressure DiskPressure]. "),
])
def test_admit_under_node_conditions(conditions, expected, message):
    pods = [new_pod(f"{name}-pod", DEFAULT, *make_containers_by_qos(qos_class), container_name=f"{name}-container")
            for name, qos_class in (("guaranteed", "Guaranteed"), ("burstable", "Burstable"), ("best-effort", "BestEffort"))]
    manager = Manager(Config(), Clock())
    manager.node_conditions = conditions
    results = [manager.admit(pod) for pod in pods]
    assert [r.admit for r in results] == expected
    for result in results:  # eviction_manager.go Admit: reason "Evicted", helpers.go nodeConditionMessageFmt text
        assert (result.reason, result.message) == (("", "") if result.admit else ("Evicted", message))


# pkg/kubelet/eviction/eviction_manager.go Admit (derived from the source; no upstream test): the other branches.
@pytest.mark.parametrize("conditions, pod_kwargs, admitted", [
    (["MemoryPressure"], {"tolerations": [{"key": "node.kubernetes.io/memory-pressure", "operator": "Exists",
                                           "effect": "NoSchedule"}]}, True),
    (["MemoryPressure"], {"tolerations": [{"operator": "Exists"}]}, True),  # empty key and effect match any taint
    (["MemoryPressure"], {"tolerations": [{"key": "node.kubernetes.io/memory-pressure", "effect": "NoExecute",
                                           "operator": "Exists"}]}, False),  # wrong effect
    (["MemoryPressure"], {"tolerations": [{"key": "node.kubernetes.io/memory-pressure", "value": "x"}]}, False),
    (["MemoryPressure"], {"tolerations": [{"key": "node.kubernetes.io/disk-pressure", "operator": "Exists"}]}, False),
    (["PIDPressure"], {}, False),
    (["DiskPressure"], {"annotations": {"kubernetes.io/config.source": "file"}}, True),  # static: critical
    (["DiskPressure"], {"annotations": {"kubernetes.io/config.mirror": "x"}}, True),  # mirror: critical
    (["PIDPressure"], {"priority": SYSTEM_CRITICAL_PRIORITY}, True),
    (["PIDPressure"], {"priority": SYSTEM_CRITICAL_PRIORITY - 1}, False),
])
def test_admit_branches(conditions, pod_kwargs, admitted):
    metadata = {"name": "probe", "annotations": pod_kwargs.get("annotations", {})}
    spec = {"containers": [{"name": "c", "image": "app"}], "tolerations": pod_kwargs.get("tolerations", [])}
    if "priority" in pod_kwargs:
        spec["priority"] = pod_kwargs["priority"]
    pod = api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    manager = Manager(Config(), Clock())
    manager.node_conditions = conditions
    assert manager.admit(pod).admit is admitted


# eviction_manager_test.go#TestDiskPressureNodeFs
def test_disk_pressure_node_fs():
    pods, pod_stats = disk_pods()
    manager, clock, killer = make_manager([hard(SIGNAL_NODEFS_AVAILABLE, "1Gi"),
                                           soft(SIGNAL_NODEFS_AVAILABLE, "2Gi", 2 * MINUTE)])
    victim = "low-priority-high-usage"  # everything exceeds request 0; among priority -1 it uses the most
    steps = [
        (0, disk_summary("16Gi", "200Gi", pod_stats), False, [], [True]),
        (1 * MINUTE, disk_summary("1.5Gi", "200Gi", pod_stats), True, [], None),
        (3 * MINUTE, disk_summary("1.5Gi", "200Gi", pod_stats), True, [(victim, 5)], None),
        (20 * MINUTE, disk_summary("16Gi", "200Gi", pod_stats), False, [], None),
        (1 * MINUTE, disk_summary("500Mi", "200Gi", pod_stats), True, [(victim, 0)], [False]),
        (1 * MINUTE, disk_summary("16Gi", "200Gi", pod_stats), True, [], [False]),
        (5 * MINUTE, disk_summary("16Gi", "200Gi", pod_stats), False, [], [True]),
    ]
    run_steps(manager, clock, pods, steps, manager.is_under_disk_pressure, [new_pod("pod-to-admit", DEFAULT)])


# eviction_manager_test.go#TestMinReclaim
def test_min_reclaim():
    pods, pod_stats = memory_pods()
    manager, clock, killer = make_manager([hard(SIGNAL_MEMORY_AVAILABLE, "1Gi", min_reclaim="500Mi")])
    victim = "best-effort-low-priority-low-usage"
    steps = [
        (0, memory_summary("2Gi", pod_stats), False, [], None),
        (1 * MINUTE, memory_summary("500Mi", pod_stats), True, [(victim, 0)], None),
        # 1.2Gi is above 1Gi, but last pass's threshold needs 1Gi + 500Mi = 1.5Gi: still acted on.
        (1 * MINUTE, memory_summary("1.2Gi", pod_stats), True, [(victim, 0)], None),
        (1 * MINUTE, memory_summary("2Gi", pod_stats), True, [], None),
        (5 * MINUTE, memory_summary("2Gi", pod_stats), False, [], None),
    ]
    run_steps(manager, clock, pods, steps, manager.is_under_memory_pressure)


# eviction_manager_test.go#TestInodePressureNodeFsInodes
def test_inode_pressure_node_fs_inodes():
    names = [(name, prio, req, lim) for name, prio, req, lim, _use in DISK_PODS]
    inodes_used = ["900Mi", "50Mi", "400Mi", "400Mi", "100Mi"]
    pods = [new_pod(*spec) for spec in names]
    pod_stats = [pod_inode_stats(pod, used) for pod, used in zip(pods, inodes_used)]
    manager, clock, killer = make_manager([hard(SIGNAL_NODEFS_INODES_FREE, "1Mi"),
                                           soft(SIGNAL_NODEFS_INODES_FREE, "2Mi", 2 * MINUTE)])
    victim = "low-priority-high-usage"
    steps = [
        (0, inode_summary("3Mi", "4Mi", pod_stats), False, [], [True]),
        (1 * MINUTE, inode_summary("1.5Mi", "4Mi", pod_stats), True, [], None),
        (3 * MINUTE, inode_summary("1.5Mi", "4Mi", pod_stats), True, [(victim, 5)], None),
        (20 * MINUTE, inode_summary("3Mi", "4Mi", pod_stats), False, [], None),
        (1 * MINUTE, inode_summary("0.5Mi", "4Mi", pod_stats), True, [(victim, 0)], [False]),
        (1 * MINUTE, inode_summary("3Mi", "4Mi", pod_stats), True, [], [False]),
        (5 * MINUTE, inode_summary("3Mi", "4Mi", pod_stats), False, [], [True]),
    ]
    run_steps(manager, clock, pods, steps, manager.is_under_disk_pressure, [new_pod("pod-to-admit", DEFAULT)])


# eviction_manager_test.go#TestStaticCriticalPodsAreNotEvicted
def test_static_critical_pods_are_not_evicted():
    static = {"kubernetes.io/config.source": "file"}
    critical = new_pod("critical", SYSTEM_CRITICAL_PRIORITY, resource_list("100m", "1Gi"), resource_list("100m", "1Gi"),
                       annotations=static, namespace="kube-system")
    pod_stats = [pod_memory_stats(critical, "800Mi")]
    manager, clock, killer = make_manager([hard(SIGNAL_MEMORY_AVAILABLE, "1Gi"),
                                           soft(SIGNAL_MEMORY_AVAILABLE, "2Gi", 2 * MINUTE)])
    steps = [
        (1 * MINUTE, memory_summary("1500Mi", pod_stats), True, [], None),
        (3 * MINUTE, memory_summary("1500Mi", pod_stats), True, [], None),  # grace met, but the only pod is critical
        (20 * MINUTE, memory_summary("3Gi", pod_stats), False, [], None),
    ]
    run_steps(manager, clock, [critical], steps, manager.is_under_memory_pressure)
    assert manager.last_sync.ranked == []  # the soft threshold is no longer met: nothing ranked
    critical.spec.priority = None  # still static through its annotation
    clock.advance(1 * MINUTE)
    assert sync(manager, memory_summary("500Mi", pod_stats), [critical]) == []
    assert manager.is_under_memory_pressure()
    assert [p.metadata.name for p in manager.last_sync.ranked] == ["critical"]  # ranked, then refused
    assert killer.killed == []


# eviction_manager_test.go#TestAllocatableMemoryPressure
def test_allocatable_memory_pressure():
    pods, pod_stats = memory_pods()
    manager, clock, killer = make_manager([hard(SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, "1Gi")])
    # Stats for a pod the kubelet no longer counts as active: they are in the summary, not in activePods.
    extra = new_pod("guaranteed-high-2", DEFAULT, resource_list("100m", "1Gi"), resource_list("100m", "1Gi"))
    victim = "best-effort-low-priority-low-usage"
    steps = [
        (0, memory_summary("4Gi", pod_stats), False, [], [True, True]),
        (1 * MINUTE, memory_summary("500Mi", pod_stats + [pod_memory_stats(extra, "1Gi")]), True, [(victim, 0)],
         [False, True]),
        (1 * MINUTE, memory_summary("2Gi", pod_stats), True, [], [False, True]),
        (5 * MINUTE, memory_summary("2Gi", pod_stats), False, [], [True, True]),
    ]
    run_steps(manager, clock, pods, steps, manager.is_under_memory_pressure, admission_probes())


# eviction_manager_test.go#TestNodeReclaimFuncs, with the mock disk GC replaced by the simulated image
# store: "GC brings nodefs back to X" becomes "GC deletes images worth X minus what was available".
def test_node_reclaim_funcs():
    pods, pod_stats = disk_pods()
    clock = Clock()
    long_ago = clock.now() - timedelta(hours=1)  # older than imageMinimumGCAge (2m)
    store = images.ImageStore()
    store.add_image("sha256:big", b("16Gi") - b(".9Gi"), long_ago)
    store.add_image("sha256:small", b("1.1Gi") - b(".9Gi"), long_ago)
    store.set_in_use("sha256:small", True, long_ago)  # a running container keeps it through the first GC
    containers = images.ContainerStore()
    killer = Killer()
    config = Config(max_pod_grace_period_seconds=5, pressure_transition_period=5 * MINUTE,
                    thresholds=[hard(SIGNAL_NODEFS_AVAILABLE, "1Gi", min_reclaim="500Mi")])
    manager = Manager(config, clock, kill_pod=killer, image_store=store, container_store=containers,
                      local_storage_capacity_isolation=False)
    gc_runs = []

    def step(advance, available, pressure, evicted):
        clock.advance(advance)
        before = (store.gc_invocations, containers.gc_invocations)
        assert sync(manager, disk_summary(available, "200Gi", pod_stats), pods) == evicted
        assert manager.is_under_disk_pressure() == pressure
        gc_runs.append((store.gc_invocations - before[0], containers.gc_invocations - before[1]))

    step(0, "16Gi", False, [])
    step(1 * MINUTE, ".9Gi", True, [])  # image GC frees 15.1Gi: enough, no pod evicted
    assert store.deleted == ["sha256:big"] and manager.last_sync.reclaim_sufficient
    step(20 * MINUTE, "16Gi", False, [])
    step(0, "16Gi", False, [])
    store.set_in_use("sha256:small", False, clock.now())  # its container went away
    # GC frees 200Mi: 1.1Gi is above 1Gi but below 1Gi + 500Mi min-reclaim, so a pod is evicted too.
    # (Upstream asserts only that some pod is killed; the ranking makes it low-priority-high-usage.)
    step(1 * MINUTE, ".9Gi", True, [("low-priority-high-usage", 0)])
    assert store.deleted == ["sha256:big", "sha256:small"] and not manager.last_sync.reclaim_sufficient
    step(20 * MINUTE, "16Gi", False, [])
    step(1 * MINUTE, "400Mi", True, [("low-priority-high-usage", 0)])  # nothing left to reclaim
    step(1 * MINUTE, "16Gi", True, [])  # transition period: pressure reported, but no GC (no threshold met)
    step(5 * MINUTE, "16Gi", False, [])
    assert gc_runs == [(0, 0), (1, 1), (0, 0), (0, 0), (1, 1), (0, 0), (1, 1), (0, 0), (0, 0)]


def pid_summary(maxpid, curproc, pod_stats):
    doc = {"node": {"rlimit": {"maxpid": maxpid, "curproc": curproc}}, "pods": list(pod_stats)}
    return stats.summary_from_json(doc, "pidSummary")


# No PID pressure test exists in the v1.26 copy of eviction_manager_test.go (kubeedge/kubernetes@bc47299), so this
# scenario is derived from the 1.27 source: rankPIDPressure = priority, then process count; no node-level
# reclaim for pids; PIDPressure rejects every non-critical pod at admission.
def test_pid_pressure_derived():
    pods = [new_pod("low-priority-few", LOW), new_pod("low-priority-many", LOW),
            new_pod("high-priority-most", HIGH, termination_grace_period=45)]
    counts = [5, 50, 80]
    pod_stats = [{"podRef": pod_ref(p), "process_stats": {"process_count": n}} for p, n in zip(pods, counts)]
    manager, clock, killer = make_manager([hard(SIGNAL_PID_AVAILABLE, "100")])
    probes = [new_pod("best-admit", DEFAULT), new_pod("guaranteed", DEFAULT, resource_list("1", "1Gi"),
                                                      resource_list("1", "1Gi"))]
    steps = [
        (0, pid_summary(1000, 500, pod_stats), False, [], [True, True]),
        (10, pid_summary(1000, 950, pod_stats), True, [("low-priority-many", 0)], [False, False]),
        (10, pid_summary(1000, 901, pod_stats), True, [("low-priority-many", 0)], [False, False]),  # 99 < 100
        (10, pid_summary(1000, 900, pod_stats), True, [], [False, False]),  # 100 is not below 100: not met
    ]
    run_steps(manager, clock, pods, steps, manager.is_under_pid_pressure, probes)
    assert manager.admit(probes[0]).message == "The node had condition: [PIDPressure]. "
    assert killer.killed[0].message == "The node was low on resource: pids. Threshold quantity: 100, available: 50. "
    assert manager.last_sync.reclaimed is None  # pids have no node-level reclaim
    assert manager.node_conditions == ["PIDPressure"] and not manager.is_under_memory_pressure()


# pkg/kubelet/pod_workers.go calculateEffectiveGracePeriod (derived from the source; no upstream test)
@pytest.mark.parametrize("override, own, deletion, expected", [
    (0, None, None, 30),  # hard eviction: override 0 falls back to the pod's value (API default 30 s)
    (0, 60, None, 60),
    (0, 0, None, 1),  # always at least 1 s
    (5, 60, None, 5),  # soft eviction with evictionMaxPodGracePeriod 5
    (120, 30, None, 120),  # 1.27 takes no min with the pod's own value
    (-1, 30, None, 1),  # a negative max is clamped to 1 s
    (5, 30, 10, 5),  # deletionGracePeriodSeconds first, then the smaller override
    (20, 30, 10, 10),
    (None, 30, None, 30),
])
def test_effective_grace_period(override, own, deletion, expected):
    pod = new_pod("p", DEFAULT, termination_grace_period=own)
    pod.metadata.deletion_grace_period_seconds = deletion
    assert effective_grace_period(pod, override) == expected


def storage_pod(name, *, volumes=(), limits=(), annotations=None):
    """A pod whose containers (name, ephemeral-storage limit) and emptyDir volumes (name, medium, sizeLimit) are given."""
    containers = [{"name": c, "image": "app", "resources": {"limits": {"ephemeral-storage": lim}} if lim else {}}
                  for c, lim in limits or [("app", None)]]
    vols = [{"name": v, "emptyDir": {k: val for k, val in (("medium", medium), ("sizeLimit", size)) if val}}
            for v, medium, size in volumes]
    metadata = {"name": name, "uid": name, **({"annotations": annotations} if annotations else {})}
    return api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                                  "spec": {"containers": containers, "volumes": vols}})


def storage_stats(pod, *, volumes=(), ephemeral=None, containers=()):
    doc = {"podRef": pod_ref(pod), "volume": [{"name": v, "usedBytes": b(used)} for v, used in volumes],
           "containers": [{"name": c, "rootfs": {"usedBytes": b(root)}, "logs": {"usedBytes": b(logs)}}
                          for c, root, logs in containers]}
    if ephemeral is not None:
        doc["ephemeral-storage"] = {"usedBytes": b(ephemeral)}
    return doc


# Local-storage limit eviction, pkg/kubelet/eviction/eviction_manager.go localStorageEviction (derived from
# the source: the v1.26 test copy has no table for it). No threshold is configured:
# with localStorageCapacityIsolation on (the kubelet default) the pass still runs.
@pytest.mark.parametrize("pod, pod_stats, dedicated, expected", [
    (storage_pod("scratch", volumes=[("cache", None, "100Mi")]), dict(volumes=[("cache", "200Mi")]), False,
     ("emptydirfs.limit", 'Usage of EmptyDir volume "cache" exceeds the limit "100Mi". ')),
    (storage_pod("tmpfs", volumes=[("shm", "Memory", "64Mi")]), dict(volumes=[("shm", "65Mi")]), False,
     ("emptydirfs.limit", 'Usage of EmptyDir volume "shm" exceeds the limit "64Mi". ')),  # any medium
    (storage_pod("equal", volumes=[("cache", None, "100Mi")]), dict(volumes=[("cache", "100Mi")]), False, None),
    (storage_pod("no-limit", volumes=[("cache", None, None)]), dict(volumes=[("cache", "100Gi")]), False, None),
    (storage_pod("pod-total", limits=[("a", "1Gi"), ("b", "1Gi")]), dict(ephemeral="3Gi"), False,
     ("ephemeralpodfs.limit", "Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. ")),
    (storage_pod("pod-total-ok", limits=[("a", "1Gi"), ("b", None)]), dict(ephemeral="1Gi"), False, None),
    (storage_pod("container", limits=[("app", "500Mi")]),
     dict(ephemeral="550Mi", containers=[("app", "450Mi", "100Mi")]), False,
     ("ephemeralpodfs.limit", "Pod ephemeral local storage usage exceeds the total limit of containers 500Mi. ")),
    (storage_pod("container", limits=[("app", "500Mi"), ("side", None)]),
     dict(ephemeral="100Mi", containers=[("app", "450Mi", "100Mi")]), False,
     ("ephemeralcontainerfs.limit", 'Container app exceeded its local ephemeral storage limit "500Mi". ')),
    # With a dedicated imagefs the writable layer is not counted against the container's limit.
    (storage_pod("container", limits=[("app", "500Mi"), ("side", None)]),
     dict(ephemeral="100Mi", containers=[("app", "450Mi", "100Mi")]), True, None),
    (storage_pod("static", volumes=[("cache", None, "100Mi")], annotations={"kubernetes.io/config.source": "file"}),
     dict(volumes=[("cache", "200Mi")]), False, None),  # critical: refused
])
def test_local_storage_eviction(pod, pod_stats, dedicated, expected):
    manager, clock, killer = make_manager([], local_storage_capacity_isolation=True, dedicated_image_fs=dedicated)
    summary = stats.summary_from_json({"node": {}, "pods": [storage_stats(pod, **pod_stats)]})
    evicted = manager.synchronize(summary, [pod])
    assert [(e.signal, e.message) for e in evicted] == ([expected] if expected else [])
    for e in evicted:  # override 0, no annotations, no DisruptionTarget condition
        assert (e.grace_period_override, e.annotations, e.condition) == (0, {}, None)


def test_local_storage_evicts_several_pods_and_skips_threshold_eviction():
    """eviction_manager.go localStorageEviction: several pods in one pass, and the threshold path is skipped."""
    pods = [storage_pod(f"p{i}", volumes=[("cache", None, "1Mi")]) for i in range(3)]
    pod_stats = [storage_stats(p, volumes=[("cache", "2Mi" if i != 1 else "1Mi")]) for i, p in enumerate(pods)]
    doc = {"node": {"memory": {"availableBytes": b("100Mi"), "workingSetBytes": b("3Gi")}}, "pods": pod_stats}
    manager, clock, killer = make_manager([hard(SIGNAL_MEMORY_AVAILABLE, "1Gi")], local_storage_capacity_isolation=True)
    assert sync(manager, stats.summary_from_json(doc), pods) == [("p0", 0), ("p2", 0)]
    assert manager.is_under_memory_pressure() and manager.last_sync.ranked == []
    assert sync(manager, stats.summary_from_json(doc), pods[1:2]) == [("p1", 0)]  # next pass: threshold eviction


def test_dedicated_imagefs_nodefs_pressure_runs_no_gc():
    """buildSignalToNodeReclaimFuncs: with a dedicated imagefs, nodefs signals have no reclaim functions."""
    clock = Clock()
    store = images.ImageStore()
    store.add_image("sha256:old", b("10Gi"), clock.now() - timedelta(hours=1))
    pods, pod_stats = disk_pods()
    config = Config(thresholds=[hard(SIGNAL_NODEFS_AVAILABLE, "1Gi")])
    manager = Manager(config, clock, image_store=store, dedicated_image_fs=True, local_storage_capacity_isolation=False)
    evicted = manager.synchronize(disk_summary("500Mi", "200Gi", pod_stats), pods)
    assert store.gc_invocations == 0 and "sha256:old" in store.images
    assert manager.last_sync.reclaimed is None and len(evicted) == 1
    # ... while imagefs pressure does run image GC, and freeing 10Gi on imagefs is enough.
    config.thresholds = [hard("imagefs.available", "1Gi")]
    clock.advance(10)
    assert manager.synchronize(disk_summary("16Gi", "500Mi", pod_stats), pods) == []
    assert store.gc_invocations == 1 and manager.last_sync.reclaimed == (b("10Gi"), 0)
    assert manager.last_sync.reclaim_sufficient and manager.last_sync.events[0][2:] == (
        "EvictionThresholdMet", "Attempting to reclaim ephemeral-storage")


def test_summary_after_reclaim_hook():
    """The re-measure hook mirrors upstream's mockDiskGC.summaryAfterGC (TestNodeReclaimFuncs, first GC)."""
    pods, pod_stats = disk_pods()
    config = Config(thresholds=[hard(SIGNAL_NODEFS_AVAILABLE, "1Gi", min_reclaim="500Mi")])
    after = disk_summary("16Gi", "200Gi", pod_stats)
    manager = Manager(config, Clock(), summary_after_reclaim=lambda: after, local_storage_capacity_isolation=False)
    assert manager.synchronize(disk_summary(".9Gi", "200Gi", pod_stats), pods) == []
    assert manager.is_under_disk_pressure() and manager.last_sync.reclaim_sufficient


# ---- the simulated image and container stores (pkg/kubelet/images/image_gc_manager.go freeSpace) ----

def test_image_gc_order_and_eligibility():
    clock = Clock()
    t0 = clock.now()
    store = images.ImageStore()
    store.add_image("used-early", 1, t0 - timedelta(hours=3))
    store.add_image("never-used-new", 2, t0 - timedelta(hours=1))
    store.add_image("never-used-old", 4, t0 - timedelta(hours=2))
    store.add_image("young", 8, t0 - timedelta(minutes=1))  # younger than imageMinimumGCAge (2m)
    store.add_image("pinned", 16, t0 - timedelta(hours=5), pinned=True)
    store.add_image("running", 32, t0 - timedelta(hours=5))
    store.add_image("just-stopped", 64, t0 - timedelta(hours=5))
    store.add_image("exactly-2m", 128, t0 - timedelta(minutes=2))
    store.set_in_use("used-early", True, t0 - timedelta(hours=2))
    store.set_in_use("used-early", False, t0 - timedelta(hours=2))
    store.set_in_use("running", True, t0)
    store.set_in_use("just-stopped", True, t0)
    store.set_in_use("just-stopped", False, t0)  # last used now: "used too recently"
    # Never used first (oldest detection first), then by last use; young, pinned, in-use, recent are kept.
    assert store.delete_unused_images(t0) == (4 + 2 + 128 + 1, 0)
    assert store.deleted == ["never-used-old", "never-used-new", "exactly-2m", "used-early"]
    assert sorted(store.images) == ["just-stopped", "pinned", "running", "young"]
    assert store.total_size() == 8 + 16 + 32 + 64


def test_image_free_space_stops_when_enough():
    t0 = Clock().now()
    store = images.ImageStore()
    for i, size in enumerate([10, 20, 30]):
        store.add_image(f"img{i}", size, t0 - timedelta(hours=3 - i))
    assert store.free_space(25, t0) == (30, 0)  # img0 then img1: 30 >= 25
    assert list(store.images) == ["img2"]


def test_container_gc_keeps_one_dead_instance_per_container_of_active_pods():
    t0 = Clock().now()
    store = images.ContainerStore(dead=[
        images.DeadContainer("active", "app", t0 - timedelta(minutes=3), size=1),
        images.DeadContainer("active", "app", t0 - timedelta(minutes=2), size=2),  # newest: kept
        images.DeadContainer("active", "init", t0 - timedelta(minutes=5), size=4),  # only one: kept
        images.DeadContainer("gone", "app", t0 - timedelta(minutes=1), size=8),  # pod no longer active: removed
    ])
    assert store.delete_all_unused_containers(t0, ["active"]) == (1 + 8, 0)
    assert [(c.pod_uid, c.name, c.size) for c in store.dead] == [("active", "app", 2), ("active", "init", 4)]


def test_clock():
    clock = Clock()
    start = clock.now()
    assert clock.step() - start == timedelta(seconds=10)
    assert clock.advance(50) - start == timedelta(minutes=1)
    assert clock.advance(timedelta(minutes=1)) - start == timedelta(minutes=2) == clock.since(start) == clock.elapsed()
    with pytest.raises(ValueError):
        clock.advance(-1)


# ---- properties ----

POD_KINDS = st.sampled_from(["plain", "static", "mirror", "critical-priority", "api-source"])


@st.composite
def pod_population(draw):
    pods, pod_stats = [], []
    for i in range(draw(st.integers(1, 6))):
        kind = draw(POD_KINDS)
        annotations = {"static": {"kubernetes.io/config.source": "file"}, "mirror": {"kubernetes.io/config.mirror": "x"},
                       "api-source": {"kubernetes.io/config.source": "api"}}.get(kind)
        priority = SYSTEM_CRITICAL_PRIORITY if kind == "critical-priority" else draw(st.integers(-3, 3) | st.none())
        request = draw(st.sampled_from(["", "100Mi", "1Gi"]))
        pod = new_pod(f"p{i}-{kind}", priority, resource_list(memory=request), {}, annotations=annotations,
                      volumes=[{"name": "cache", "emptyDir": {"sizeLimit": "1Mi"}}])
        usage = draw(st.integers(0, 2**31))
        doc = pod_memory_stats(pod, str(usage))
        doc["volume"] = [{"name": "cache", "usedBytes": draw(st.integers(0, 2**21))}]
        pods.append(pod)
        pod_stats.append(doc)
    return pods, pod_stats


def is_static_or_mirror(pod):
    annotations = pod.metadata.annotations or {}
    return annotations.get("kubernetes.io/config.source", "api") != "api" or "kubernetes.io/config.mirror" in annotations


# Invariant (eviction_manager.go evictPod): it refuses critical pods, so a static or mirror pod is never
# evicted, whatever the usage, on the threshold path and on the local-storage path alike.
@settings(max_examples=60, deadline=None)
@given(population=pod_population(), availabilities=st.lists(st.integers(0, 3 * 2**30), min_size=1, max_size=5),
       local_storage=st.booleans())
def test_static_and_mirror_pods_are_never_evicted(population, availabilities, local_storage):
    pods, pod_stats = population
    manager, clock, killer = make_manager([hard(SIGNAL_MEMORY_AVAILABLE, "1Gi"),
                                           soft(SIGNAL_MEMORY_AVAILABLE, "2Gi", 2 * MINUTE)],
                                          local_storage_capacity_isolation=local_storage)
    for available in availabilities:
        clock.advance(MINUTE)
        for evicted in manager.synchronize(memory_summary(str(available), pod_stats), pods):
            assert not is_static_or_mirror(evicted.pod)
            assert (evicted.pod.spec.priority or 0) < SYSTEM_CRITICAL_PRIORITY


# Invariant (pkg/kubelet/eviction/eviction_manager.go synchronize): threshold evictions kill at most one pod per pass.
@settings(max_examples=60, deadline=None)
@given(population=pod_population(), availabilities=st.lists(st.integers(0, 3 * 2**30), min_size=1, max_size=8),
       advances=st.lists(st.integers(0, 600), min_size=8, max_size=8))
def test_at_most_one_threshold_eviction_per_pass(population, availabilities, advances):
    pods, pod_stats = population
    manager, clock, killer = make_manager([hard(SIGNAL_MEMORY_AVAILABLE, "1Gi"),
                                           soft(SIGNAL_MEMORY_AVAILABLE, "2Gi", 2 * MINUTE)])
    for available, advance in zip(availabilities, advances):
        clock.advance(advance)
        evicted = manager.synchronize(memory_summary(str(available), pod_stats), pods)
        assert len(evicted) <= 1
        if evicted:  # and only when a threshold has been met for its grace period
            assert manager.last_sync.threshold_to_reclaim is not None


def test_an_init_containers_ephemeral_storage_limit_alone_still_limits_the_pod():
    """podEphemeralStorageLimitEviction reads PodLimits, where an init container's limit counts (the larger of it and
    the app containers' sum): the check must not be skipped because no app container sets a limit."""
    pod = api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "init-limited", "uid": "init-limited"},
                                 "spec": {"containers": [{"name": "app", "image": "app"}],
                                          "initContainers": [{"name": "setup", "image": "setup",
                                                              "resources": {"limits": {"ephemeral-storage": "1Gi"}}}]}})
    manager, clock, killer = make_manager([], local_storage_capacity_isolation=True)
    summary = stats.summary_from_json({"node": {}, "pods": [storage_stats(pod, ephemeral="2Gi")]})
    assert [(e.signal, e.message) for e in manager.synchronize(summary, [pod])] == [
        ("ephemeralpodfs.limit", "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ")]
