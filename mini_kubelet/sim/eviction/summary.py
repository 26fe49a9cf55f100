"""The node as the replay holds it: the running pods, and the Summary the stats provider would serve.

Upstream: pkg/kubelet/server/stats/summary.go summaryProviderImpl.Get (the shape of the Summary), in the
shape of k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go; the numbers are the scenario's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Optional

from kubernetes.client import V1Pod

from ... import api, stats
from ...eviction import images
from ...eviction.api import containerfs_signals_known
from .scenario import CONTAINER_KEYS, PodPlan, Scenario
from ..series import Series
from .timeline import format_bytes


# --8<-- [start:state]
@dataclass
class RunningPod:
    """A pod on the node: when it started, and (once evicted) when its containers stop."""

    plan: PodPlan
    started: int
    stops_at: Optional[int] = None

    @property
    def pod(self) -> V1Pod:
        return self.plan.pod

    def usage(self, t: int, container: str, key: str) -> int:
        series = self.plan.containers[container].get(key)
        return series.at(t - self.started) if series else 0

    def volume(self, t: int, name: str) -> int:
        series = self.plan.volumes.get(name)
        return series.at(t - self.started) if series else 0


def _disk_volume(volume) -> bool:
    """Volumes whose bytes are on nodefs: emptyDir on disk, configMap, gitRepo (IsLocalEphemeralVolume)."""
    if volume.empty_dir is not None:
        return (volume.empty_dir.medium or "") == ""
    return volume.config_map is not None or volume.git_repo is not None


def _memory_volume(volume) -> bool:
    return volume.empty_dir is not None and volume.empty_dir.medium == "Memory"
# --8<-- [end:state]


# --8<-- [start:over_limit_notes]
def over_limit(pods: list[RunningPod], t: int) -> dict[tuple[str, str], str]:
    """The containers using more memory than their own limit at t, each with a note saying so.

    On a real node the container's cgroup (memory.max) makes the kernel OOM-kill it as soon as it goes
    over, before any eviction; the replay does not model that kill, so the container keeps its usage.
    Upstream: none (the limit is written by pkg/kubelet/kuberuntime/kuberuntime_container_linux.go
    generateLinuxContainerResources; the kill is the kernel's)
    """
    found = {}
    for running in pods:
        for container in running.pod.spec.containers:
            limits = (container.resources.limits if container.resources else None) or {}
            if "memory" not in limits:
                continue
            limit, used = api.value(limits["memory"]), running.usage(t, container.name, "memory")
            if used > limit:
                found[(running.pod.metadata.uid, container.name)] = (
                    f"{running.pod.metadata.namespace}/{running.pod.metadata.name}: container {container.name} goes "
                    f"above its memory limit {format_bytes(limit)} ({format_bytes(used)}); on a node the kernel would "
                    "OOM-kill it now (the replay does not model that kill: the container keeps growing)")
    return found
# --8<-- [end:over_limit_notes]


# --8<-- [start:build_summary]
def build_summary(scenario: Scenario, pods: list[RunningPod], store: images.ImageStore, t: int, now: datetime,
                  node_usage: dict[str, Series]) -> tuple[stats.Summary, list[str]]:
    """The Summary the stats provider would serve at t for this node and these running pods, and any notes.

    Upstream: pkg/kubelet/server/stats/summary.go summaryProviderImpl.Get (the shape); the numbers
    are the scenario's. From 1.29 containerFs is reported too, as imagefs again: the stats providers
    report one filesystem for both unless the runtime splits them (cri_stats_provider.go ImageFsStats).
    """
    cap, dedicated = scenario.capacity, scenario.dedicated_image_fs
    pod_stats, totals = [], {"ws": 0, "rootfs": 0, "logs": 0, "volumes": 0, "inodes": 0, "pids": 0}
    per_pod = []
    for running in pods:
        spec_volumes = running.pod.spec.volumes or []
        containers = [(c.name, {k: running.usage(t, c.name, k) for k in CONTAINER_KEYS}) for c in running.pod.spec.containers]
        volumes = [(v, running.volume(t, v.name)) for v in spec_volumes if v.host_path is None]
        ws = sum(u["memory"] for _, u in containers) + sum(b for v, b in volumes if _memory_volume(v))
        local = sum(b for v, b in volumes if _disk_volume(v))
        for key in ("rootfs", "logs", "inodes"):
            totals[key] += sum(u[key] for _, u in containers)
        totals["ws"] += ws
        totals["volumes"] += local
        totals["pids"] += running.plan.pids.at(t - running.started)
        per_pod.append((running, containers, volumes, ws, local))
    node, notes = node_stats(scenario, totals, store, t, now, node_usage)
    nodefs, image_fs = node.fs, node.runtime.image_fs
    for running, containers, volumes, ws, local in per_pod:
        rootfs_fs, logs_fs = (image_fs if dedicated else nodefs), nodefs
        container_stats = [stats.ContainerStats(
            name=name, start_time=scenario_time(now, running.started - t),
            memory=stats.MemoryStats(time=now, usage_bytes=u["memory"], working_set_bytes=u["memory"], rss_bytes=u["memory"]),
            rootfs=stats.FsStats(now, rootfs_fs.available_bytes, rootfs_fs.capacity_bytes, u["rootfs"],
                                 rootfs_fs.inodes_free, rootfs_fs.inodes, u["inodes"]),
            logs=stats.FsStats(now, logs_fs.available_bytes, logs_fs.capacity_bytes, u["logs"],
                               logs_fs.inodes_free, logs_fs.inodes, 0)) for name, u in containers]
        volume_stats = [stats.VolumeStats(time=now, available_bytes=nodefs.available_bytes, capacity_bytes=nodefs.capacity_bytes,
                                          used_bytes=used, inodes_free=nodefs.inodes_free, inodes=nodefs.inodes,
                                          inodes_used=0, name=v.name) for v, used in volumes]
        rootfs_sum = sum(u["rootfs"] for _, u in containers)
        logs_sum = sum(u["logs"] for _, u in containers)
        pod_stats.append(stats.PodStats(
            pod_ref=stats.PodReference(running.pod.metadata.name, running.pod.metadata.namespace, running.pod.metadata.uid),
            start_time=scenario_time(now, running.started - t), containers=container_stats,
            memory=stats.MemoryStats(time=now, usage_bytes=ws, working_set_bytes=ws, rss_bytes=ws), volume_stats=volume_stats,
            ephemeral_storage=stats.FsStats(now, nodefs.available_bytes, nodefs.capacity_bytes, rootfs_sum + logs_sum + local,
                                            nodefs.inodes_free, nodefs.inodes, sum(u["inodes"] for _, u in containers)),
            process_stats=stats.ProcessStats(running.plan.pids.at(t - running.started))))
    return stats.Summary(node=node, pods=pod_stats), notes


def node_stats(scenario: Scenario, totals: dict[str, int], store: images.ImageStore, t: int, now: datetime,
               node_usage: dict[str, Series]) -> tuple[stats.NodeStats, list[str]]:
    """The Summary's node part: what the node uses itself plus the Pods' totals (working set, disk, inodes, pids)."""
    cap, notes, (images_bytes, images_inodes) = scenario.capacity, [], images_used(store)
    nodefs_used, nodefs_inodes_used, imagefs, node_ws, curproc = node_figures(
        scenario, totals, (images_bytes, images_inodes), {k: series.at(t) for k, series in node_usage.items()})
    nodefs = _fs(now, cap["nodefs"], nodefs_used, cap["inodes"], nodefs_inodes_used)
    if imagefs is not None:
        image_fs = _fs(now, *imagefs)
    else:  # the same filesystem: its free space and inodes, the images' own usage
        image_fs = stats.FsStats(now, nodefs.available_bytes, nodefs.capacity_bytes, images_bytes,
                                 nodefs.inodes_free, nodefs.inodes, images_inodes)
    for label, used, total in (("nodefs", nodefs_used, cap["nodefs"]), ("nodefs inodes", nodefs_inodes_used, cap["inodes"])):
        if used > total:
            notes.append(f"{label}: usage {used} exceeds capacity {total}; the filesystem is full")
    if node_ws > cap["memory"]:
        notes.append(f"memory: the working set {node_ws} exceeds capacity {cap['memory']}; the kernel's OOM killer would act")
    pods_container = stats.ContainerStats(name=stats.SYSTEM_CONTAINER_PODS, start_time=scenario_time(now, -t), memory=stats.MemoryStats(
        time=now, available_bytes=max(scenario.pods_memory_limit - totals["ws"], 0), usage_bytes=totals["ws"],
        working_set_bytes=totals["ws"]))
    return stats.NodeStats(
        node_name=scenario.node_name, system_containers=[pods_container], start_time=scenario_time(now, -t),
        memory=stats.MemoryStats(time=now, available_bytes=max(cap["memory"] - node_ws, 0), usage_bytes=node_ws,
                                 working_set_bytes=node_ws),
        fs=nodefs, runtime=stats.RuntimeStats(image_fs=image_fs, container_fs=image_fs if containerfs_signals_known() else None),
        rlimit=stats.RlimitStats(time=now, maxpid=cap["maxpid"], curproc=curproc)), notes


def node_figures(scenario: Scenario, totals: dict[str, int], images: tuple[int, int], own: dict[str, int]) -> tuple:
    """What is used on the node, from its own usage and the Pods' totals: (nodefs bytes, nodefs inodes, a dedicated
    imagefs's (capacity, bytes used, inodes, inodes used) or None, the working set, the processes)."""
    cap, (images_bytes, images_inodes) = scenario.capacity, images
    if scenario.dedicated_image_fs:
        return (own["nodefs"] + totals["logs"] + totals["volumes"], own["inodes"],
                (cap["imagefs"], own["imagefs"] + images_bytes + totals["rootfs"], cap["imagefsInodes"],
                 own["imagefsInodes"] + images_inodes + totals["inodes"]),
                own["memory"] + totals["ws"], own["pids"] + totals["pids"])
    return (own["nodefs"] + images_bytes + totals["rootfs"] + totals["logs"] + totals["volumes"],
            own["inodes"] + images_inodes + totals["inodes"], None, own["memory"] + totals["ws"], own["pids"] + totals["pids"])


def images_used(store: images.ImageStore) -> tuple[int, int]:
    """The bytes and inodes the images on the node take."""
    return sum(record.size for record in store.images.values()), sum(record.inodes for record in store.images.values())
# --8<-- [end:build_summary]


def _fs(now: datetime, capacity: int, used: int, inodes: int, inodes_used: int) -> stats.FsStats:
    return stats.FsStats(now, max(capacity - used, 0), capacity, used, max(inodes - inodes_used, 0), inodes, inodes_used)


def scenario_time(now: datetime, offset: int) -> datetime:
    """now shifted by offset seconds.

    Upstream: none (a course tool)
    """
    return now + timedelta(seconds=offset)
