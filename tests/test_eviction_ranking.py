"""Chapter 4: the order in which pods are evicted under memory, disk and PID pressure.

Tables ported from pkg/kubelet/eviction/helpers_test.go (the copy read is about v1.29; the ranking functions
it tests are unchanged from v1.27.7). Fixtures follow upstream's: newPod sets UID = name, newResourceList
leaves out empty values, and the stats builders fill the same fields.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_kubelet import api, qos
from mini_kubelet import stats as statsapi
from mini_kubelet.eviction import api as evictionapi
from mini_kubelet.eviction import ranking, signals
from mini_kubelet.eviction.ranking import FS_STATS_LOCAL_VOLUME_SOURCE, FS_STATS_LOGS, FS_STATS_ROOT

pytestmark = pytest.mark.ch4

MI = 2**20
GI = 2**30
LOW, DEFAULT, HIGH = -1, 0, 1  # upstream's lowPriority, defaultPriority, highPriority
ALL_FS = [FS_STATS_ROOT, FS_STATS_LOGS, FS_STATS_LOCAL_VOLUME_SOURCE]
EPH, INODES = signals.RESOURCE_EPHEMERAL_STORAGE, signals.RESOURCE_INODES


# --- upstream's fixture builders --------------------------------------------------------------------

def new_resource_list(cpu="", memory="", disk=""):
    return {k: v for k, v in (("cpu", cpu), ("memory", memory), ("ephemeral-storage", disk)) if v}


def new_container(name, requests=None, limits=None):
    return {"name": name, "image": "app", "resources": {"requests": requests or {}, "limits": limits or {}}}


def empty_dir(name="local-volume", medium=None):
    return {"name": name, "emptyDir": {"medium": medium} if medium is not None else {}}


def new_pod(name, priority, containers, volumes=(), **spec):
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"containers": containers, "volumes": list(volumes), **spec}}
    if priority is not None:
        manifest["spec"]["priority"] = priority
    return api.pod_from_manifest(manifest)


def pod_ref(pod):
    return statsapi.PodReference(pod.metadata.name, pod.metadata.namespace, pod.metadata.uid)


def new_pod_memory_stats(pod, working_set):
    """Upstream newPodMemoryStats: pod working set; one container stat named after the pod, without memory."""
    fs = statsapi.FsStats(used_bytes=working_set)
    return statsapi.PodStats(
        pod_ref=pod_ref(pod), memory=statsapi.MemoryStats(working_set_bytes=working_set),
        containers=[statsapi.ContainerStats(name=pod.metadata.name, logs=fs, rootfs=fs)],
        volume_stats=[statsapi.VolumeStats(name="local-volume", used_bytes=working_set)],
        ephemeral_storage=statsapi.FsStats(used_bytes=working_set))


def new_pod_disk_stats(pod, rootfs, logs, per_local_volume):
    """Upstream newPodDiskStats: one unnamed container stat per container; one stat per local volume."""
    containers = [statsapi.ContainerStats(rootfs=statsapi.FsStats(used_bytes=rootfs), logs=statsapi.FsStats(used_bytes=logs))
                  for _ in pod.spec.containers]
    volumes = [statsapi.VolumeStats(name=name, used_bytes=per_local_volume) for name in ranking.local_volume_names(pod)]
    return statsapi.PodStats(pod_ref=pod_ref(pod), containers=containers, volume_stats=volumes)


def new_pod_inode_stats(pod, rootfs, logs, per_local_volume):
    containers = [statsapi.ContainerStats(rootfs=statsapi.FsStats(inodes_used=rootfs), logs=statsapi.FsStats(inodes_used=logs))
                  for _ in pod.spec.containers]
    volumes = [statsapi.VolumeStats(name=name, inodes_used=per_local_volume) for name in ranking.local_volume_names(pod)]
    return statsapi.PodStats(pod_ref=pod_ref(pod), containers=containers, volume_stats=volumes)


def new_pod_process_stats(pod, count):
    return statsapi.PodStats(pod_ref=pod_ref(pod), process_stats=statsapi.ProcessStats(process_count=count))


def stats_func(pairs):
    """A stats lookup over (pod stats) built by the fixtures, as makeSignalObservations returns."""
    return signals.cached_stats_func(pairs)


def names(pods):
    return [pod.metadata.name for pod in pods]


def mem_pod(name, priority, request_mem=""):
    requests = new_resource_list("", request_mem)
    return new_pod(name, priority, [new_container(name, requests, requests)])


def disk_pod(name, priority, request_disk=""):
    requests = new_resource_list("", "", request_disk)
    return new_pod(name, priority, [new_container(name, requests, requests)], [empty_dir()])


# --- the upstream tables -----------------------------------------------------------------------------

# helpers_test.go#TestOrderedByExceedsRequestMemory
def test_ordered_by_exceeds_request_memory():
    below = mem_pod("below-requests", LOW, "200Mi")
    exceeds = mem_pod("exceeds-requests", HIGH, "100Mi")
    stats = stats_func([new_pod_memory_stats(below, 199 * MI), new_pod_memory_stats(exceeds, 101 * MI)])
    pods = [below, exceeds]
    ranking.ordered_by(ranking.exceed_memory_requests(stats))(pods)
    assert names(pods) == ["exceeds-requests", "below-requests"]


# helpers_test.go#TestOrderedByExceedsRequestDisk
def test_ordered_by_exceeds_request_disk():
    below = new_pod("below-requests", LOW, [new_container("c", new_resource_list("", "", "200Mi"))])
    exceeds = new_pod("exceeds-requests", HIGH, [new_container("c", new_resource_list("", "", "100Mi"))])
    stats = stats_func([new_pod_disk_stats(below, 100 * MI, 99 * MI, 0), new_pod_disk_stats(exceeds, 90 * MI, 11 * MI, 0)])
    pods = [below, exceeds]
    ranking.ordered_by(ranking.exceed_disk_requests(stats, ALL_FS, EPH))(pods)
    assert names(pods) == ["exceeds-requests", "below-requests"]


# helpers_test.go#TestOrderedByPriority
def test_ordered_by_priority():
    low, medium, high = mem_pod("low", -134), mem_pod("medium", 1), mem_pod("high", 12534)
    pods = [high, medium, low]
    ranking.ordered_by(ranking.priority)(pods)
    assert names(pods) == ["low", "medium", "high"]


# helpers_test.go#TestOrderedbyDisk: (rootfs, logs, volume) in Mi, ephemeral-storage request
DISK_TABLE = [("best-effort-high", "", 50, 100, 150), ("best-effort-low", "", 25, 25, 50),
              ("burstable-high", "100Mi", 150, 150, 50), ("burstable-low", "100Mi", 25, 35, 50),
              ("guaranteed-high", "400Mi", 225, 100, 50), ("guaranteed-low", "400Mi", 25, 45, 50)]


def test_ordered_by_disk():
    pods = [disk_pod(name, DEFAULT, request) for name, request, *_ in DISK_TABLE]
    stats = stats_func([new_pod_disk_stats(pod, r * MI, lg * MI, v * MI) for pod, (_, _, r, lg, v) in zip(pods, DISK_TABLE)])
    ranking.ordered_by(ranking.disk(stats, ALL_FS, EPH))(pods)
    assert names(pods) == ["best-effort-high", "burstable-high", "best-effort-low", "burstable-low",
                           "guaranteed-high", "guaranteed-low"]


# helpers_test.go#TestOrderedbyInodes
def test_ordered_by_inodes():
    low, medium, high = disk_pod("low", DEFAULT), disk_pod("medium", DEFAULT), disk_pod("high", DEFAULT)
    stats = stats_func([new_pod_inode_stats(low, 50_000, 100_000, 50_000), new_pod_inode_stats(medium, 100_000, 150_000, 50_000),
                        new_pod_inode_stats(high, 200_000, 150_000, 50_000)])
    pods = [low, medium, high]
    ranking.ordered_by(ranking.disk(stats, ALL_FS, INODES))(pods)
    assert names(pods) == ["high", "medium", "low"]


# helpers_test.go#TestOrderedByPriorityDisk: priority, ephemeral request, (rootfs, logs, volume) in Mi
PRIORITY_DISK_TABLE = [("p1", LOW, "", 200, 100, 200), ("p2", LOW, "", 10, 10, 30), ("p3", HIGH, "100Mi", 200, 150, 250),
                       ("p4", HIGH, "100Mi", 90, 50, 10), ("p5", LOW, "1Gi", 500, 200, 100), ("p6", LOW, "1Gi", 50, 100, 50),
                       ("p7", HIGH, "1Gi", 250, 500, 50), ("p8", HIGH, "1Gi", 100, 60, 40)]


def test_ordered_by_priority_disk():
    pods = [disk_pod(name, prio, request) for name, prio, request, *_ in PRIORITY_DISK_TABLE]
    stats = stats_func([new_pod_disk_stats(pod, r * MI, lg * MI, v * MI)
                        for pod, (*_, r, lg, v) in zip(pods, PRIORITY_DISK_TABLE)])
    pods.reverse()  # upstream's input is [p8 ... p1]
    ranking.rank_disk_pressure_func(ALL_FS, EPH)(pods, stats)
    assert names(pods) == ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"]


# helpers_test.go#TestOrderedByPriorityInodes (the inode totals; upstream splits them over rootfs, logs, volume)
def test_ordered_by_priority_inodes():
    table = [("p1", LOW, 400_000), ("p2", LOW, 100_000), ("p3", HIGH, 350_000), ("p4", HIGH, 150_000)]
    pods = [disk_pod(name, prio) for name, prio, _ in table]
    stats = stats_func([new_pod_inode_stats(pod, total // 2, total // 4, total // 4) for pod, (_, _, total) in zip(pods, table)])
    pods.reverse()
    ranking.ordered_by(ranking.priority, ranking.disk(stats, ALL_FS, INODES))(pods)
    assert names(pods) == ["p1", "p2", "p3", "p4"]


# helpers_test.go#TestOrderedByMemory: memory request, working set in Mi
MEMORY_TABLE = [("best-effort-high", "", 500), ("best-effort-low", "", 300), ("burstable-high", "100Mi", 800),
                ("burstable-low", "100Mi", 300), ("guaranteed-high", "1Gi", 800), ("guaranteed-low", "1Gi", 200)]


def test_ordered_by_memory():
    pods = [mem_pod(name, DEFAULT, request) for name, request, _ in MEMORY_TABLE]
    stats = stats_func([new_pod_memory_stats(pod, ws * MI) for pod, (_, _, ws) in zip(pods, MEMORY_TABLE)])
    ranking.ordered_by(ranking.memory(stats))(pods)
    assert names(pods) == ["burstable-high", "best-effort-high", "best-effort-low", "burstable-low",
                           "guaranteed-high", "guaranteed-low"]


# helpers_test.go#TestOrderedByPriorityMemory
PRIORITY_MEMORY_TABLE = [("p1", LOW, "", 500), ("p2", LOW, "", 50), ("p3", HIGH, "100Mi", 600), ("p4", HIGH, "100Mi", 150),
                         ("p5", LOW, "1Gi", 800), ("p6", LOW, "1Gi", 200), ("p7", HIGH, "1Gi", 800), ("p8", HIGH, "1Gi", 200)]


def test_ordered_by_priority_memory():
    pods = [mem_pod(name, prio, request) for name, prio, request, _ in PRIORITY_MEMORY_TABLE]
    stats = stats_func([new_pod_memory_stats(pod, ws * MI) for pod, (*_, ws) in zip(pods, PRIORITY_MEMORY_TABLE)])
    pods.reverse()
    ranking.rank_memory_pressure(pods, stats)
    assert names(pods) == ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"]


# helpers_test.go#TestOrderedByPriorityProcess
def test_ordered_by_priority_process():
    table = [("p1", LOW, 20), ("p2", LOW, 6), ("p3", HIGH, 20), ("p4", HIGH, 5)]
    pods = [mem_pod(name, prio) for name, prio, _ in table]
    stats = stats_func([new_pod_process_stats(pod, count) for pod, (_, _, count) in zip(pods, table)])
    pods.reverse()
    ranking.rank_pid_pressure(pods, stats)
    assert names(pods) == ["p1", "p2", "p3", "p4"]


# --- behaviour from the v1.27 source (pkg/kubelet/eviction/helpers.go), beyond the tables ----------------

def test_pods_without_stats_rank_first_in_every_stats_comparator():
    with_stats, without = mem_pod("with-stats", LOW), mem_pod("no-stats", HIGH)
    stats = stats_func([new_pod_memory_stats(with_stats, 5 * GI)])
    for rank in (ranking.rank_memory_pressure, ranking.rank_disk_pressure_func(ALL_FS, EPH)):
        assert names(rank([with_stats, without], stats)) == ["no-stats", "with-stats"]
    # for PIDs priority is compared first, and it does not look at stats
    assert names(ranking.rank_pid_pressure([without, with_stats], stats)) == ["with-stats", "no-stats"]


def test_stats_are_found_by_uid_not_name():
    pod = mem_pod("web", DEFAULT)
    other = statsapi.PodStats(pod_ref=statsapi.PodReference("web", "default", "another-uid"))
    assert stats_func([other])(pod) is None
    assert stats_func([new_pod_memory_stats(pod, 1)])(pod).pod_ref.uid == "web"


def test_eviction_order_is_not_qos_order():
    """A Burstable pod over its request goes before a BestEffort pod that uses less (same priority)."""
    burstable = new_pod("burstable", DEFAULT, [new_container("c", {"memory": "100Mi"}, {"memory": "1Gi"})])
    best_effort = new_pod("best-effort", DEFAULT, [new_container("c")])
    assert (qos.get_pod_qos(burstable), qos.get_pod_qos(best_effort)) == (qos.BURSTABLE, qos.BEST_EFFORT)
    stats = stats_func([new_pod_memory_stats(burstable, 400 * MI), new_pod_memory_stats(best_effort, 50 * MI)])
    assert names(ranking.rank_memory_pressure([best_effort, burstable], stats)) == ["burstable", "best-effort"]


def test_rank_functions_per_signal_choose_the_stats_summed():
    """buildSignalToRankFunc: with a dedicated imagefs, nodefs counts logs and volumes, imagefs only the rootfs."""
    writer, logger = disk_pod("writes-rootfs", DEFAULT), disk_pod("writes-logs", DEFAULT)
    stats = stats_func([new_pod_disk_stats(writer, 900 * MI, 10 * MI, 0), new_pod_disk_stats(logger, 10 * MI, 500 * MI, 0)])
    for with_image_fs, nodefs_first, imagefs_first in ((True, "writes-logs", "writes-rootfs"),
                                                        (False, "writes-rootfs", "writes-rootfs")):
        funcs = ranking.build_signal_to_rank_func(with_image_fs)
        assert names(funcs[evictionapi.SIGNAL_NODEFS_AVAILABLE]([writer, logger], stats))[0] == nodefs_first
        assert names(funcs[evictionapi.SIGNAL_IMAGEFS_AVAILABLE]([logger, writer], stats))[0] == imagefs_first
    assert set(ranking.build_signal_to_rank_func(False)) == set(signals.SIGNAL_TO_RESOURCE)


def test_local_volume_names():
    volumes = [empty_dir("scratch"), empty_dir("tmpfs", "Memory"), {"name": "host", "hostPath": {"path": "/var/log"}},
               {"name": "config", "configMap": {"name": "app"}}, {"name": "secret", "secret": {"secretName": "s"}},
               {"name": "repo", "gitRepo": {"repository": "https://example.com/r.git"}},
               {"name": "token", "projected": {"sources": []}}, {"name": "info", "downwardAPI": {}}]
    pod = new_pod("p", None, [new_container("c")], volumes)
    assert ranking.local_volume_names(pod) == ["scratch", "host", "config", "repo"]


def test_inode_ranking_subtracts_the_ephemeral_storage_request():
    """disk(): the ephemeral-storage request is subtracted even when comparing inodes (upstream quirk)."""
    requested = disk_pod("requested", DEFAULT, "1")  # a 1-byte request shifts its inode count by 1
    plain = disk_pod("plain", DEFAULT)
    stats = stats_func([new_pod_inode_stats(requested, 100, 0, 0), new_pod_inode_stats(plain, 100, 0, 0)])
    assert names(ranking.ordered_by(ranking.disk(stats, ALL_FS, INODES))([requested, plain])) == ["plain", "requested"]


# rankDiskPressureFunc(fsStatsToMeasure, resourceInodes) = orderedBy(exceedDiskRequests, priority, disk) in
# pkg/kubelet/eviction/helpers.go, on Pods that DO request ephemeral storage (upstream's inode tests request
# none). Two rules of upstream decide these rows:
#   exceedDiskRequests compares inode usage with the Pod's request for "inodes", which no Pod can make, so
#     GetResourceRequestQuantity is 0 and any Pod using an inode exceeds it: its ephemeral-storage request plays
#     no part here;
#   disk subtracts the ephemeral-storage request (in bytes) from the inode count before comparing.
# Rows: (name, priority, ephemeral-storage request, inodes used) in input order, then the expected ranking.
INODE_REQUEST_ROWS = [
    # Same priority: disk decides on inodes minus the byte request, 100 - 0 > 1000 - 2000.
    ("equal priority", [("small-no-request", DEFAULT, "", 100), ("large-with-request", DEFAULT, "2k", 1000)],
     ["small-no-request", "large-with-request"]),
    ("equal priority, input reversed", [("large-with-request", DEFAULT, "2k", 1000), ("small-no-request", DEFAULT, "", 100)],
     ["small-no-request", "large-with-request"]),
    # Both exceed (the request for inodes is 0), so priority decides before disk: the lower priority goes first
    # even though its inode count, less its request, is far smaller.
    ("lower priority first", [("no-request", DEFAULT, "", 100), ("request-low-priority", LOW, "2k", 1000)],
     ["request-low-priority", "no-request"]),
    # A Pod with no inode use does not exceed and goes last, whatever its priority.
    ("no inodes used", [("idle-low-priority", LOW, "1Gi", 0), ("busy", HIGH, "1Gi", 10)], ["busy", "idle-low-priority"]),
]


@pytest.mark.parametrize("name, rows, expected", INODE_REQUEST_ROWS, ids=[r[0] for r in INODE_REQUEST_ROWS])
def test_rank_by_inodes_with_ephemeral_storage_requests(name, rows, expected):
    pods = [disk_pod(pod_name, prio, request) for pod_name, prio, request, _ in rows]
    stats = stats_func([new_pod_inode_stats(pod, used, 0, 0) for pod, (*_, used) in zip(pods, rows)])
    assert names(ranking.rank_disk_pressure_func(ALL_FS, INODES)(pods, stats)) == expected


@pytest.mark.parametrize("name, containers, inits, overhead, expected", [
    ("sum of containers", [{"memory": "100Mi"}, {"memory": "50Mi"}], [], None, 150 * MI),
    ("a larger init request replaces the sum", [{"memory": "100Mi"}], [{"memory": "1Gi"}], None, GI),
    ("a smaller init request is ignored", [{"memory": "100Mi"}], [{"memory": "10Mi"}], None, 100 * MI),
    ("overhead added to a non-zero request", [{"memory": "100Mi"}], [], {"memory": "10Mi"}, 110 * MI),
    ("no overhead on a zero request", [{}], [], {"memory": "10Mi"}, 0),
    ("fractional bytes kept exact", [{"memory": "100m"}], [], None, Decimal("0.1")),
])
def test_get_resource_request_quantity(name, containers, inits, overhead, expected):
    """pkg/api/v1/resource/helpers.go GetResourceRequestQuantity."""
    spec = {"initContainers": [new_container(f"i{i}", r) for i, r in enumerate(inits)]}
    if overhead:
        spec["overhead"] = overhead
    pod = new_pod("p", None, [new_container(f"c{i}", r) for i, r in enumerate(containers)], **spec)
    assert ranking.get_resource_request_quantity(pod, "memory") == expected


# --- properties ------------------------------------------------------------------------------------------

pod_specs = st.lists(st.tuples(st.sampled_from([LOW, DEFAULT, HIGH, None]), st.sampled_from(["", "64Mi", "256Mi", "1Gi"]),
                               st.integers(0, 2 * GI), st.integers(0, 40), st.booleans()), min_size=0, max_size=8)


def _population(specs):
    pods, pod_stats = [], []
    for i, (prio, request, usage, procs, has_stats) in enumerate(specs):
        pod = disk_pod(f"pod-{i}", prio, request) if request == "" else new_pod(
            f"pod-{i}", prio, [new_container("c", new_resource_list("", request, request))], [empty_dir()])
        pods.append(pod)
        if has_stats:
            st_ = new_pod_memory_stats(pod, usage)
            st_.process_stats = statsapi.ProcessStats(process_count=procs)
            pod_stats.append(st_)
    return pods, stats_func(pod_stats)


@settings(max_examples=60, deadline=None)
@given(pod_specs)
def test_ranking_is_a_permutation_ordered_by_upstream_keys(specs):
    pods, stats = _population(specs)
    for rank in (ranking.rank_memory_pressure, ranking.rank_pid_pressure, ranking.rank_disk_pressure_func(ALL_FS, EPH)):
        ranked = rank(list(pods), stats)
        assert sorted(names(ranked)) == sorted(names(pods))
    ranked = ranking.rank_memory_pressure(list(pods), stats)

    def key(pod):  # the tuple rankMemoryPressure's comparators amount to
        s = stats(pod)
        if s is None:
            return (0, 0, ranking.pod_priority(pod), 0)
        over = s.memory.working_set_bytes - ranking.get_resource_request_quantity(pod, "memory")
        return (1, 0 if over > 0 else 1, ranking.pod_priority(pod), -over)
    keys = [key(pod) for pod in ranked]
    assert keys == sorted(keys)


@settings(max_examples=60, deadline=None)
@given(pod_specs, st.randoms(use_true_random=False))
def test_sorting_by_the_comparators_keys_gives_the_order_comparing_pairs_gives(specs, rnd):
    """ordered_by sorts by the comparators' keys when each has one (a speed-up): the order must be the one
    that comparing pods pair by pair gives, as upstream's multiSorter does, for every rank function's chain."""
    pods, stats = _population(specs)
    rnd.shuffle(pods)
    chains = [(ranking.exceed_memory_requests(stats), ranking.priority, ranking.memory(stats)),
              (ranking.priority, ranking.process(stats)),
              (ranking.exceed_disk_requests(stats, ALL_FS, EPH), ranking.priority, ranking.disk(stats, ALL_FS, EPH)),
              (ranking.exceed_disk_requests(stats, ALL_FS, INODES), ranking.priority, ranking.disk(stats, ALL_FS, INODES))]
    for cmps in chains:
        assert all(callable(getattr(cmp, "key", None)) for cmp in cmps)
        pairwise = [lambda p1, p2, cmp=cmp: cmp(p1, p2) for cmp in cmps]  # no key: ordered_by compares pairs
        assert names(ranking.ordered_by(*cmps)(list(pods))) == names(ranking.ordered_by(*pairwise)(list(pods)))
