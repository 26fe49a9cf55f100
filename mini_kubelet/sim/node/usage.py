"""What runs on the replayed node and what it uses: live Pods, the Summary built from them, the kernel's OOM kill times.

Upstream: pkg/kubelet/server/stats/summary.go summaryProviderImpl.Get (the Summary, built here by
sim/eviction/summary.build_summary from what the runtime actually runs); the kill at a container's memory limit is the
kernel's (the limit is the memory.max that pkg/kubelet/kuberuntime/kuberuntime_container_linux.go
generateLinuxContainerResources writes). Garbage collection: pkg/kubelet/images/image_gc_manager.go
GarbageCollect and pkg/kubelet/kuberuntime/kuberuntime_gc.go evictContainers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Optional

from kubernetes.client import V1Container, V1ObjectMeta, V1Pod, V1PodSpec

from ... import api, stats
from ...eviction import api as evapi, images
from ...eviction.api import containerfs_signals_known
from ...eviction.signals import SignalObservation, _int64
from .scenario import NodePod
from ..series import Series
from ..eviction.summary import _disk_volume, _memory_volume, images_used, node_figures, node_stats

# --8<-- [start:constants]
IMAGE_GC_PERIOD = 300  # seconds: pkg/kubelet/kubelet.go ImageGCPeriod
CONTAINER_GC_PERIOD = 60  # seconds: pkg/kubelet/kubelet.go ContainerGCPeriod
MAX_PER_POD_CONTAINER = images.MAX_PER_POD_CONTAINER  # dead instances kept per (pod, container): 1
FREE_DISK_SPACE_FAILED = "FreeDiskSpaceFailed"  # pkg/kubelet/events/event.go
DISK_KEYS = ("rootfs", "logs", "inodes")
# --8<-- [end:constants]


# --8<-- [start:live_pod]
@dataclass
class LivePod:
    """A Pod the kubelet admitted, with its running container instances: what the Summary is built from.

    A container's memory series is read from the start of its running instance (a restarted process starts
    small again); its disk series (rootfs, logs, inodes) and the Pod's volumes and pids from the Pod's start.
    A container that is not running uses no memory.
    """

    node_pod: NodePod
    started: int  # seconds: when its first container started
    instances: dict[str, tuple[int, str]] = field(default_factory=dict)  # container -> (start, id) of its newest instance
    runtime: object = None  # the runtime, asked whether an instance still runs
    _parts: Optional[tuple] = None
    _terms: Optional[tuple] = None

    def __post_init__(self):
        self.uid = self.node_pod.plan.pod.metadata.uid  # read once: model attributes are slow to reach

    def forget(self) -> None:
        """The scenario changed the Pod's usage: read its series again."""
        self._parts = self._terms = None

    @property
    def pod(self):
        return self.node_pod.plan.pod

    @property
    def plan(self):
        return self.node_pod.plan

    def usage(self, t: int, container: str, key: str) -> int:
        series = self.plan.containers.get(container, {}).get(key)
        if series is None:
            return 0
        if key == "memory":
            start, cid = self.instances.get(container, (None, ""))
            return 0 if start is None or not self._running(cid) else series.at(t - start)
        return series.at(t - self.started)

    def _running(self, cid: str) -> bool:
        c = self.runtime.containers.get(cid)
        return c is not None and c.state == "running"

    def terms(self) -> list[tuple[Series, int, int]]:
        """Its usage as (series, start, slot): the series read at t - start adds to the Pod's share at that slot.

        The slots are those of the node's sums: working set, rootfs, logs and disk volumes, inodes, pids.
        """
        key = (self.runtime.pod_generation(self.uid), tuple(self.instances.values()))
        if self._terms is not None and self._terms[0] == key:  # what runs of it is as it was
            return self._terms[1]
        if self._parts is None:  # read the spec once: model attributes are slow to reach
            containers, volumes = self.plan.containers, self.pod.spec.volumes or ()
            self._parts = ([(c.name, (containers.get(c.name) or {}).get("memory"),
                             [(1 + i, (containers.get(c.name) or {})[key]) for i, key in enumerate(DISK_KEYS)
                              if key in (containers.get(c.name) or {})]) for c in self.pod.spec.containers],
                           [(v.name, 0 if _memory_volume(v) else 2) for v in volumes if v.name in self.plan.volumes
                            and (_memory_volume(v) or v.host_path is None and _disk_volume(v))])
        found = []
        for name, memory, disk_series in self._parts[0]:
            if memory is not None:
                start, cid = self.instances.get(name, (None, ""))
                if start is not None and self._running(cid):
                    found.append((memory, start, 0))
            found += [(series, self.started, slot) for slot, series in disk_series]
        found += [(self.plan.volumes[name], self.started, slot) for name, slot in self._parts[1]]
        self._terms = (key, found + [(self.plan.pids, self.started, 4)])
        return self._terms[1]

    def any_running(self) -> bool:
        """Whether one of its containers still runs (its cgroup, and so its stats, are still there)."""
        return any(self._running(cid) for _, cid in self.instances.values())

    def volume(self, t: int, name: str) -> int:
        series = self.plan.volumes.get(name)
        return series.at(t - self.started) if series else 0
# --8<-- [end:live_pod]


_ALL = V1Pod(metadata=V1ObjectMeta(name="all-pods", namespace="", uid=""),
             spec=V1PodSpec(containers=[V1Container(name="all")], volumes=[]))


# --8<-- [start:node_aggregate]
class NodeAggregate:
    """Every live Pod's usage summed into one pseudo-Pod: the Summary's node part comes out the same, cheaply.

    build_summary adds the Pods' usage into the node's figures; given this one aggregate, it computes the
    same node, "pods" container and filesystem numbers as from every Pod, but no Pod's own stats. The
    eviction manager needs those only to rank and for local-storage limits. Pods made by one `count:` share
    their series and mostly their start: each (series, start) is read once and counted as often as it occurs.
    """

    def __init__(self, pods: list[LivePod], t: int, terms: Optional[list[tuple]] = None,
                 sums: Optional[list[int]] = None):
        if sums is None:  # else the slots' sums at t, already added up
            sums = [0, 0, 0, 0, 0]
            for series, start, slot, count in usage_terms(pods) if terms is None else terms:
                sums[slot] += count * series.at(t - start)
        self.values = dict(zip(("memory", "rootfs", "logs", "inodes"), sums))
        self.started, self.pod, self.plan = t, _ALL, SimpleNamespace(pids=Series([(0, sums[4])]))

    def usage(self, t: int, container: str, key: str) -> int:
        return self.values[key]

    def volume(self, t: int, name: str) -> int:
        return 0
# --8<-- [end:node_aggregate]


# --8<-- [start:node_summaries]
def node_summaries(scenario, terms: list[tuple], store: images.ImageStore, node_usage: dict[str, Series],
                   times: list[int], start: datetime) -> list[stats.Summary]:
    """The node part of NodeAggregate's Summary at each of the times (what a pass without pressure reads)."""
    return [stats.Summary(node_stats(scenario, totals, store, u, start + timedelta(seconds=u), node_usage)[0], [])
            for u, totals in zip(times, _totals(terms, times))]


def signal_levels(scenario, terms: list[tuple], store: images.ImageStore, node_usage: dict[str, Series],
                  times: list[int], wanted: frozenset) -> list[dict[str, SignalObservation]]:
    """What makeSignalObservations reads from node_summaries at each of the times, for the wanted signals.

    Each term's series is read once for all the times (Series.at_each), and the node's figures are
    summary.node_figures, as node_stats has them; a stretch of passes is read this way at once.
    Upstream: pkg/kubelet/eviction/helpers.go makeSignalObservations (without its timestamps)
    """
    cap, images, containerfs = scenario.capacity, images_used(store), containerfs_signals_known()
    own = [dict(zip(node_usage, values)) for values in zip(*(s.at_each(times) for s in node_usage.values()))]
    found = []
    for totals, used in zip(_totals(terms, times), own):
        nodefs_used, inodes_used, imagefs, node_ws, curproc = node_figures(scenario, totals, images, used)
        nodefs = (max(cap["nodefs"] - nodefs_used, 0), cap["nodefs"], max(cap["inodes"] - inodes_used, 0), cap["inodes"])
        image = nodefs if imagefs is None else (max(imagefs[0] - imagefs[1], 0), imagefs[0],
                                                max(imagefs[2] - imagefs[3], 0), imagefs[2])
        memory, pods = max(cap["memory"] - node_ws, 0), max(scenario.pods_memory_limit - totals["ws"], 0)
        levels = {evapi.SIGNAL_MEMORY_AVAILABLE: (memory, memory + node_ws),
                  evapi.SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE: (pods, pods + totals["ws"]),
                  evapi.SIGNAL_NODEFS_AVAILABLE: nodefs[:2], evapi.SIGNAL_NODEFS_INODES_FREE: nodefs[2:],
                  evapi.SIGNAL_IMAGEFS_AVAILABLE: image[:2], evapi.SIGNAL_IMAGEFS_INODES_FREE: image[2:]}
        if containerfs:
            levels.update({evapi.SIGNAL_CONTAINERFS_AVAILABLE: image[:2], evapi.SIGNAL_CONTAINERFS_INODES_FREE: image[2:]})
        found.append({k: SignalObservation(_int64(a), _int64(c)) for k, (a, c) in levels.items() if k in wanted})
        if evapi.SIGNAL_PID_AVAILABLE in wanted:
            found[-1][evapi.SIGNAL_PID_AVAILABLE] = SignalObservation(_int64(cap["maxpid"] - curproc), cap["maxpid"])
    return found


def _totals(terms: list[tuple], times: list[int]) -> list[dict[str, int]]:
    """The Pods' totals at each of the times, as build_summary adds them up from NodeAggregate."""
    sums = [[0] * len(times) for _ in range(5)]
    if len(times) == 1:  # one instant (a pass's own Summary): each series read once, as at_each would
        u = times[0]
        for series, begin, slot, count in terms:
            sums[slot][0] += count * series.at(u - begin)
    else:
        for series, begin, slot, count in terms:
            row = sums[slot]
            for i, value in enumerate(series.at_each([u - begin for u in times])):
                row[i] += count * value
    return [{"ws": ws, "rootfs": rootfs, "logs": logs, "volumes": 0, "inodes": inodes, "pids": pids}
            for ws, rootfs, logs, inodes, pids in zip(*sums)]
# --8<-- [end:node_summaries]


class FoldedTerms:
    """usage_terms kept up to date: a Pod is folded in or out again only when its terms have changed."""

    def __init__(self):
        self.of: dict[str, list] = {}  # uid -> the terms folded in for it
        self.folded: dict[tuple[int, int, int], list] = {}

    def update(self, pods: list[LivePod]) -> list[tuple[Series, int, int, int]]:
        seen = {}
        for lp in pods:
            uid, terms = lp.uid, lp.terms()
            seen[uid] = terms
            if self.of.get(uid) is not terms:
                self._fold(self.of.get(uid, ()), -1)
                self._fold(terms, 1)
        for uid in self.of.keys() - seen.keys():
            self._fold(self.of[uid], -1)
        self.of = seen
        return [tuple(term) for term in self.folded.values()]

    def _fold(self, terms, sign: int) -> None:
        for series, start, slot in terms:
            key = (id(series), start, slot)
            term = self.folded.setdefault(key, [series, start, slot, 0])
            term[3] += sign
            if not term[3]:
                del self.folded[key]


def usage_terms(pods: list[LivePod]) -> list[tuple[Series, int, int, int]]:
    """The Pods' terms, alike ones folded into one: (series, start, slot, how many Pods have it)."""
    folded: dict[tuple[int, int, int], list] = {}
    for lp in pods:
        for series, start, slot in lp.terms():
            term = folded.setdefault((id(series), start, slot), [series, start, slot, 0])
            term[3] += 1
    return [tuple(term) for term in folded.values()]


# --8<-- [start:first_reach]
def first_reach(series: Series, level: int) -> Optional[int]:
    """The first second at which the series is at or above level (None if it never is).

    Upstream: none (the kernel charges pages to the cgroup and OOM-kills when memory.max is reached)
    """
    if level <= 0:
        return 0
    previous = None
    for when, amount in series.points:
        if series.ramp and previous is not None and amount >= level > previous[1]:
            low, high = previous[0], when  # at(low) < level <= at(high): the ramp is monotonic here
            while high - low > 1:
                mid = (low + high) // 2
                low, high = (mid, high) if series.at(mid) < level else (low, mid)
            return high
        if amount >= level:
            return max(when, 0)
        previous = (when, amount)
    return None
# --8<-- [end:first_reach]


def memory_limit(container) -> Optional[int]:
    """The container's own memory limit in bytes (its cgroup's memory.max), or None."""
    limits = (container.resources.limits if container.resources else None) or {}
    return api.value(limits["memory"]) if "memory" in limits else None


# --8<-- [start:image_gc]
def image_gc(store: images.ImageStore, image_fs: stats.FsStats, high: int, low: int, now) -> Optional[tuple[int, int, int]]:
    """Image GC's pass: above high percent used, free down to low percent; (to free, freed bytes, freed inodes) or None.

    Upstream: pkg/kubelet/images/image_gc_manager.go realImageGCManager.GarbageCollect
    """
    capacity, available = image_fs.capacity_bytes, min(image_fs.available_bytes, image_fs.capacity_bytes)
    if not image_gc_due(image_fs, high):
        return None
    amount_to_free = capacity * (100 - low) // 100 - available
    freed, inodes = store.free_space(amount_to_free, now)
    return amount_to_free, freed, inodes
# --8<-- [end:image_gc]


def image_gc_due(image_fs: stats.FsStats, high: int) -> bool:
    """Whether image GC frees space: the image filesystem is at least high percent used. Upstream: GarbageCollect"""
    capacity, available = image_fs.capacity_bytes, min(image_fs.available_bytes, image_fs.capacity_bytes)
    return capacity != 0 and 100 - int(available * 100 / capacity) >= high


def free_disk_space_failed_message(amount_to_free: int, freed: int) -> str:
    """The Warning image GC records on the node when it could not free enough. Upstream: GarbageCollect"""
    return (f"Failed to garbage collect required amount of images. Attempted to free {amount_to_free} bytes, "
            f"but only found {freed} bytes eligible to free.")


# --8<-- [start:container_gc]
def container_gc(runtime, should_pod_content_be_removed, all_sources_ready: bool) -> list[str]:
    """Remove dead container instances: all of a Pod whose content may go, else all but the newest per container.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_gc.go containerGC.evictContainers (MinAge 0,
    MaxPerPodContainer 1, MaxContainers -1: the kubelet's defaults) and evictSandboxes (a not-ready sandbox
    with no containers left, of a Pod whose content may go or that has a newer sandbox)
    """
    units: dict[tuple[str, str], list] = {}
    for c in runtime.containers.values():
        if c.state != "running":
            units.setdefault((c.pod_uid, c.name), []).append(c)
    removed = []
    for (uid, _), dead in units.items():
        dead.sort(key=lambda c: (c.created_at, c.id), reverse=True)  # newest first
        keep = 0 if all_sources_ready and should_pod_content_be_removed(uid) else MAX_PER_POD_CONTAINER
        for c in dead[keep:]:
            runtime.remove_container(c.id)
            removed.append(c.id)
    by_pod: dict[str, list] = {}
    for s in runtime.sandboxes.values():
        by_pod.setdefault(s.pod_uid, []).append(s)
    holding = {c.sandbox_id for c in runtime.containers.values()}
    for uid, sandboxes in by_pod.items():
        sandboxes.sort(key=lambda s: (s.created_at, s.id), reverse=True)
        for i, s in enumerate(sandboxes):
            if s.state != "SANDBOX_READY" and s.id not in holding and (i > 0 or should_pod_content_be_removed(uid)):
                runtime.remove_pod_sandbox(s.id)
                removed.append(s.id)
    return removed
# --8<-- [end:container_gc]
