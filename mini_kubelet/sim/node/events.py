"""What a one-node replay records: the kubelet's events, the node's conditions and taints, kills and rejections.

Upstream: pkg/kubelet/eviction/eviction_manager.go (EvictionThresholdMet on the node, Evicted on the pod),
pkg/kubelet/nodestatus/setters.go MemoryPressureCondition / DiskPressureCondition / PIDPressureCondition
(NodeHasInsufficientMemory and friends, recorded by kubelet_node_status.go recordNodeStatusEvent),
pkg/kubelet/images/image_gc_manager.go (FreeDiskSpaceFailed), pkg/kubelet/kubelet.go rejectPod.
The kernel's OOM kill of a container at its own limit has no kubelet event: the OOM watcher
(pkg/kubelet/oom/oom_watcher_linux.go) records only system-wide OOMs, as SystemOOM on the node.
"""

from __future__ import annotations

from typing import Optional

from kubernetes.client import V1Pod, V1Taint

from ... import qos
from ...scheduler import tolerations_tolerate_taint
from ...kuberuntime.kuberuntime_container_linux import generate_linux_container_resources
from ..lifecycle.timeline import print_pod
from .trace import aggregate_events
from ..resize import ResizeWatch

# --8<-- [start:constants]
CONDITION_EVENTS = {  # condition -> (reason when it appears, reason when it clears), both Normal
    "MemoryPressure": ("NodeHasInsufficientMemory", "NodeHasSufficientMemory"),
    "DiskPressure": ("NodeHasDiskPressure", "NodeHasNoDiskPressure"),
    "PIDPressure": ("NodeHasInsufficientPID", "NodeHasSufficientPID"),
}
CONDITION_TAINTS = {  # k8s.io/api/core/v1 well_known_taints.go
    "MemoryPressure": "node.kubernetes.io/memory-pressure",
    "DiskPressure": "node.kubernetes.io/disk-pressure",
    "PIDPressure": "node.kubernetes.io/pid-pressure",
}
NODE_STATUS_UPDATE_PERIOD = 10  # nodeStatusUpdateFrequency default: a condition reaches the API, and its taint, after it
SIGNAL_COLUMNS = ("memory.available", "nodefs.available", "imagefs.available")  # each pass's row for the plot
# --8<-- [end:constants]


class NodeRecorder:
    """Turns what the Kubelet, the eviction manager and the runtime did into the trace."""

    def __init__(self, replay):
        self.r, self.trace = replay, replay.trace
        self.node_ref = f"node/{replay.sc.node_name}"
        self.seen_events = self.seen_worker_events = 0
        self.rejected: set[str] = set()
        self.since: dict[str, int] = {}  # condition -> when the eviction manager began reporting it
        self.columns: dict[str, tuple] = {}
        self.containers_seen: set[tuple[str, str]] = set()
        self.resize = None if replay.resize is None else ResizeWatch(
            replay.kubelet, lambda uid: replay.plans[uid].name if uid in replay.plans else uid,
            self.trace.resizes, self.trace.cgroups)

    def event(self, t: int, event_type: str, reason: str, obj: str, message: str) -> None:
        self.trace.events.append({"time": t, "type": event_type, "reason": reason, "object": obj, "message": message})

    def collect(self, t: int) -> None:
        """The events the Kubelet recorded since the last look, and the Pods it rejected."""
        kl = self.r.kubelet
        for e in kl.recorder.events[self.seen_events:]:
            ref = e.involved.partition("{")[0]
            when = int((e.time - self.r.clock.start).total_seconds()) if e.time is not None else t
            self.event(when, e.type, e.reason, "pod/" + ref.split("/", 1)[-1], e.message)
        self.seen_events = len(kl.recorder.events)
        for pod, (kind, reason, message) in kl.pod_workers.events[self.seen_worker_events:]:
            self.event(t, kind, reason, f"pod/{pod.metadata.name if pod is not None else ''}", message)
        self.seen_worker_events = len(kl.pod_workers.events)
        if self.resize is not None:
            self.resize.collect_writes()
        for uid, outcome in kl.handlers.rejected.items() if len(kl.handlers.rejected) != len(self.rejected) else ():
            if uid in self.rejected:
                continue
            self.rejected.add(uid)
            name = outcome.pod.metadata.name
            self.trace.rejections.append({"time": t, "pod": name, "reason": outcome.result.reason,
                                          "message": outcome.result.message, "handler": outcome.handler})
            self.trace.note(t, "reject", name, f"{name} rejected at admission ({outcome.handler}): "
                                               f"{outcome.result.reason}: {outcome.result.message}")

    def container_started(self, plan, c, t: int) -> None:
        """Chapter 3's values for a container, the first time it starts: its cgroup settings and oom_score_adj."""
        key = (plan.name, c.name)
        if key in self.containers_seen:
            return
        self.containers_seen.add(key)
        pod = plan.plan.pod
        spec = next(x for x in pod.spec.containers if x.name == c.name)
        res = generate_linux_container_resources(pod, spec, self.r.sc.capacity["memory"])
        self.trace.containers.append({"pod": plan.name, "container": c.name, "qosClass": qos.get_pod_qos(pod),
                                      "priority": pod.spec.priority or 0, "cpuShares": res.cpu_shares,
                                      "cpuQuota": res.cpu_quota, "cpuPeriod": res.cpu_period,
                                      "memoryLimit": res.memory_limit_in_bytes, "oomScoreAdj": res.oom_score_adj})

    def oom_killed(self, plan, c, t: int) -> None:
        spec = next(x for x in plan.plan.pod.spec.containers if x.name == c.name)
        res = generate_linux_container_resources(plan.plan.pod, spec, self.r.sc.capacity["memory"])
        if self.resize is not None and c.resources is not None:  # resized in place: what its cgroup holds
            res = c.resources
        self.trace.oom_kills.append({"time": t, "pod": plan.name, "container": c.name, "limit": res.memory_limit_in_bytes,
                                     "oomScoreAdj": res.oom_score_adj, "restartCount": c.restart_count})
        self.trace.note(t, "oomKill", plan.name, f"kernel OOM killer: {plan.name}/{c.name} reached its memory limit "
                        f"({res.memory_limit_in_bytes} bytes, oom_score_adj {res.oom_score_adj}): exit 137, OOMKilled")

    # --8<-- [start:after_pass]
    def after_pass(self, t: int, record, evicted: list) -> None:
        """A pass's events, evictions and condition changes, and the node's signals for the plot."""
        for obj, event_type, reason, message in record.events:
            target = self.node_ref if obj == "node" else "pod/" + obj.split("/", 1)[-1]
            self.event(t, event_type, reason, target, message)
        for e in evicted:
            name = e.pod.metadata.name
            self.trace.evictions.append({"time": t, "pod": name, "signal": e.signal, "gracePeriod": e.effective_grace_period,
                                         "message": e.message})
            self.trace.note(t, "evict", name, f"{name} evicted ({e.signal}, grace period {e.effective_grace_period}s): {e.message}")
        now = set(record.node_conditions)
        for condition in sorted(now - set(self.since)):
            self.since[condition] = t
            self.trace.conditions.append({"type": condition, "from": t, "to": None})
            self._condition_event(t, CONDITION_EVENTS[condition][0])
            self.trace.note(t, "condition", None, f"the node reports {condition}")
        for condition in sorted(set(self.since) - now):
            del self.since[condition]
            entry = next(c for c in reversed(self.trace.conditions) if c["type"] == condition)
            entry["to"] = t
            self._condition_event(t, CONDITION_EVENTS[condition][1])
            self.trace.note(t, "condition", None, f"the node no longer reports {condition}")
        self.signals(t, record.observations)
    # --8<-- [end:after_pass]

    def signals(self, t: int, observations: dict) -> None:
        """The plot's row for a pass: the signals it observed."""
        self.trace.signals.append([t] + [observations[s].available if s in observations else None for s in SIGNAL_COLUMNS])

    def _condition_event(self, t: int, reason: str) -> None:
        """Upstream: pkg/kubelet/kubelet_node_status.go Kubelet.recordNodeStatusEvent"""
        self.event(t, "Normal", reason, self.node_ref, f"Node {self.r.sc.node_name} status is now: {reason}")

    def blocking_taint(self, pod: V1Pod, t: int) -> Optional[str]:
        """The pressure taint that keeps the Pod off the node: its condition reported for a node status update."""
        for condition, since in sorted(self.since.items()):
            key = CONDITION_TAINTS[condition]
            if t >= since + NODE_STATUS_UPDATE_PERIOD and not tolerations_tolerate_taint(
                    pod.spec.tolerations, V1Taint(key=key, effect="NoSchedule")):
                return key
        return None

    def image_gc(self, t: int, to_free: int, freed: int, inodes: int) -> None:
        from .usage import FREE_DISK_SPACE_FAILED, free_disk_space_failed_message
        self.trace.note(t, "imageGC", None, f"image GC: disk above {self.r.sc.kubelet['imageGCHighThresholdPercent']}%, "
                                            f"{to_free} bytes to free, {freed} freed")
        if freed < to_free:
            self.event(t, "Warning", FREE_DISK_SPACE_FAILED, self.node_ref, free_disk_space_failed_message(to_free, freed))

    def status_written(self, stored: V1Pod, t: int) -> None:
        """A new status in the API: a line of `kubectl get pods -w` when its columns change."""
        ready, column, restarts = print_pod(stored, stored.status)
        name = stored.metadata.name
        row = (ready, column, restarts, stored.status.phase)
        if self.columns.get(name) != row:
            self.columns[name] = row
            self.trace.watch.append({"time": t, "pod": name, "ready": ready, "status": column, "restarts": restarts,
                                     "phase": stored.status.phase})

    def finish(self) -> None:
        """The last events, open conditions, and `kubectl get pods` at the end."""
        end = self.r.sc.duration
        self.collect(end)
        self.trace.events.sort(key=lambda e: e["time"])
        pods = list(self.r.server.pods.values()) + [p.plan.pod for p in self.r.pending]
        for pod in pods:
            status = pod.status
            ready, column, restarts = print_pod(pod, status)
            last = max((c.last_state.terminated.finished_at for c in (status.container_statuses or []) if status and
                        c.last_state is not None and c.last_state.terminated is not None
                        and c.last_state.terminated.finished_at is not None), default=None)
            since = lambda when: end - int((when - self.r.clock.start).total_seconds())  # noqa: E731
            self.trace.pods.append({"name": pod.metadata.name, "ready": ready, "status": column, "restarts": restarts,
                                    "lastRestart": None if last is None else since(last),
                                    "age": since(pod.metadata.creation_timestamp),
                                    "phase": status.phase if status else "Pending",
                                    "reason": (status.reason if status else None) or "",
                                    "message": (status.message if status else None) or ""})
        self.trace.kubectl_events = aggregate_events(self.trace.events)
