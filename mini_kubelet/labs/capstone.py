"""Lab 05's node, worker-5: its three files read, one setting changed at a time, and the kubelet's own answers.

The checks of Lab 05 take their expected answers from here, and everything here runs the course's chapter 4
code (the eviction manager itself for the passes), so a check compares the learner's reasoning with what the
kubelet would do on the same input. The inputs are what a cluster prints: the node's /stats/summary JSON (kept
as the decoded dict a learner reads), `kubectl get pods -o yaml`, and the node's KubeletConfiguration.

Upstream: none (a course tool); the answers come from pkg/kubelet/eviction/ as mini_kubelet.eviction mirrors it.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import yaml
from kubernetes.client import V1Pod

from .. import api, resource, stats
from ..clock import Clock
from ..eviction import manager as mgr
from ..eviction import ranking, signals, thresholds as th
from ..eviction.api import get_threshold_quantity, merge_default_eviction_hard
from . import course_path

FILES = {"summary": "examples/cluster/worker-5-summary.json", "pods": "examples/cluster/worker-5-pods.yaml",
         "kubelet": "examples/cluster/worker-5-kubelet-config.yaml"}
NEXT_PASS = 30  # seconds from a pass that evicts to the next, once the Pod is gone (its 30 s grace period)


class Doc(dict):
    """A decoded JSON or YAML document that prints as its label (a check's table stays readable)."""

    label = "document"

    def __repr__(self) -> str:
        return self.label


class PodSet(list):
    """A list of Pods that prints as its label."""

    label = "Pods"

    def __repr__(self) -> str:
        return self.label


def _labelled(kind: type, value: Any, label: str) -> Any:
    made = kind(value)
    made.label = label
    return made


def _label(value: Any) -> str:
    return getattr(value, "label", None) or type(value).__name__


def load_node() -> tuple[PodSet, Doc, Doc]:
    """worker-5's Pods (every one in the file), its Summary (a dict) and its KubeletConfiguration (a dict)."""
    pods = [p for p in api.load_manifests(course_path(FILES["pods"])) if isinstance(p, V1Pod)]
    summary = json.loads(course_path(FILES["summary"]).read_text(encoding="utf-8"))
    kubelet = yaml.safe_load(course_path(FILES["kubelet"]).read_text(encoding="utf-8"))
    return (_labelled(PodSet, pods, f"{len(pods)} Pods of worker-5"), _labelled(Doc, summary, "worker-5's summary"),
            _labelled(Doc, kubelet, "worker-5's kubelet config"))


def active_pods(pods: list[V1Pod]) -> PodSet:
    """The Pods the eviction manager is given: those not finished (phase Succeeded or Failed).

    Upstream: pkg/kubelet/kubelet_pods.go filterOutInactivePods (a finished Pod is not active)
    """
    kept = [p for p in pods if (p.status.phase if p.status else None) not in ("Succeeded", "Failed")]
    return _labelled(PodSet, kept, f"{len(kept)} active Pods of worker-5")


# --- the settings and the kubelet's answers ---------------------------------------------------------------

def eviction_config(kubelet: dict) -> mgr.Config:
    """The eviction manager's Config from a KubeletConfiguration: evictionHard omitted (or null) means the defaults.

    Upstream: pkg/kubelet/eviction/helpers.go ParseThresholdConfig, with the v1beta1 defaults
    (evictionHard, enforceNodeAllocatable [pods], evictionPressureTransitionPeriod 5m)
    """
    # cmd/kubelet/app/server.go: only a nil map is defaulted (an empty one means none); from 1.33
    # mergeDefaultEvictionSettings: true adds the defaults a given map leaves out.
    hard = merge_default_eviction_hard(kubelet.get("evictionHard"), bool(kubelet.get("mergeDefaultEvictionSettings")))
    found = th.parse_threshold_config(kubelet.get("enforceNodeAllocatable", ["pods"]), hard,
                                      kubelet.get("evictionSoft") or {}, kubelet.get("evictionSoftGracePeriod") or {},
                                      kubelet.get("evictionMinimumReclaim") or {})
    transition = th.duration_to_timedelta(th.parse_duration(str(kubelet.get("evictionPressureTransitionPeriod", "5m"))))
    return mgr.Config(max_pod_grace_period_seconds=int(kubelet.get("evictionMaxPodGracePeriod", 0)),
                      pressure_transition_period=transition, thresholds=found)


def _summary(doc: dict) -> stats.Summary:
    return stats.summary_from_json(doc, "worker-5-summary.json")


def kubelet_thresholds_met(summary: dict, kubelet: dict) -> list[tuple[str, str, int, int]]:
    """Each threshold met now, grace periods ignored: (signal, "hard" or "soft", threshold, available).

    Upstream: pkg/kubelet/eviction/helpers.go thresholdsMet (enforceMinReclaim false), on makeSignalObservations
    """
    observations, _ = signals.make_signal_observations(_summary(summary))
    met = signals.thresholds_met(eviction_config(kubelet).thresholds, observations, False)
    return [(t.signal, "hard" if signals.is_hard_eviction_threshold(t) else "soft",
             int(get_threshold_quantity(t.value, observations[t.signal].capacity)), observations[t.signal].available)
            for t in met]


def kubelet_memory_keys(pod: V1Pod, summary: dict) -> Optional[tuple[bool, int, int]]:
    """The three keys rankMemoryPressure compares for a Pod, or None when the summary has no stats for it.

    Upstream: pkg/kubelet/eviction/helpers.go exceedMemoryRequests, priority, memory
    """
    _, stats_func = signals.make_signal_observations(_summary(summary))
    pod_stats = stats_func(pod)
    if pod_stats is None:
        return None
    usage = pod_stats.memory.working_set_bytes if pod_stats.memory else 0
    request = int(resource.get_resource_request_quantity(pod, "memory"))
    return usage > request, ranking.pod_priority(pod), usage - request


def kubelet_rank(pods: list[V1Pod], summary: dict) -> list[str]:
    """The Pods' names in the order the kubelet tries them under memory pressure.

    Upstream: pkg/kubelet/eviction/helpers.go rankMemoryPressure
    """
    _, stats_func = signals.make_signal_observations(_summary(summary))
    return [p.metadata.name for p in ranking.rank_memory_pressure(list(pods), stats_func)]


def kubelet_passes(pods: list[V1Pod], summary: dict, kubelet: dict, passes: int = 1) -> list[tuple[str, str]]:
    """Run the eviction manager's synchronize pass (twice if asked, the second once the victim is gone).

    Returns the (Pod name, message) of each Pod evicted. A fresh manager starts at the first pass, as a
    kubelet does when it starts; the second pass comes NEXT_PASS seconds later on after_eviction's summary.
    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.synchronize
    """
    clock = Clock()
    manager = mgr.Manager(eviction_config(kubelet), clock)
    pods, evicted = list(pods), []
    for number in range(passes):
        if number:
            clock.advance(NEXT_PASS)
        found = manager.synchronize(_summary(summary), pods)
        if not found:
            break
        victim = found[0].pod
        evicted.append((victim.metadata.name, found[0].message))
        summary = after_eviction(summary, victim)
        pods = [p for p in pods if p is not victim]
    return evicted


def kubelet_admit(pod: V1Pod, summary: dict, kubelet: dict) -> tuple[bool, str]:
    """Whether the eviction manager's admit handler lets a new Pod in after one pass on this node, and its message.

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.Admit (after synchronize set the conditions)
    """
    manager = mgr.Manager(eviction_config(kubelet), Clock())
    manager.synchronize(_summary(summary), [])
    result = manager.admit(pod)
    return result.admit, result.message or ""


# --- one change at a time ---------------------------------------------------------------------------------

def after_eviction(summary: dict, pod: V1Pod) -> Doc:
    """The summary NEXT_PASS seconds later, once the Pod is gone: its stats removed, its working set freed.

    The node's and the "pods" cgroup's availableBytes grow by the Pod's working set (0 without stats), their
    workingSetBytes shrink by it, and every "time" moves on, so the kubelet reads the stats as new.
    """
    doc = copy.deepcopy(dict(summary))
    uid = pod.metadata.uid
    gone = [p for p in doc["pods"] if p["podRef"]["uid"] == uid]
    freed = sum((p.get("memory") or {}).get("workingSetBytes", 0) for p in gone)
    doc["pods"] = [p for p in doc["pods"] if p["podRef"]["uid"] != uid]
    pods_cgroup = next(c for c in doc["node"]["systemContainers"] if c["name"] == "pods")
    for memory in (doc["node"]["memory"], pods_cgroup["memory"]):
        memory["availableBytes"] += freed
        memory["workingSetBytes"] -= freed
        memory["usageBytes"] -= freed
    _move_times(doc, timedelta(seconds=NEXT_PASS))
    return _labelled(Doc, doc, f"the summary {NEXT_PASS} s after {pod.metadata.name} was evicted")


def _move_times(node: Any, by: timedelta) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "time" and isinstance(value, str):
                moved = datetime.fromisoformat(value.replace("Z", "+00:00")) + by
                node[key] = moved.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            else:
                _move_times(value, by)
    elif isinstance(node, list):
        for value in node:
            _move_times(value, by)


def with_memory(summary: dict, *, node: Optional[str] = None, pods: Optional[str] = None) -> Doc:
    """The summary with the node's (and/or the "pods" cgroup's) memory availableBytes set, the capacity kept."""
    doc = copy.deepcopy(dict(summary))
    pods_cgroup = next(c for c in doc["node"]["systemContainers"] if c["name"] == "pods")
    changes = []
    for text, memory, what in ((node, doc["node"]["memory"], "node"), (pods, pods_cgroup["memory"], "pods cgroup")):
        if text is None:
            continue
        capacity = memory["availableBytes"] + memory["workingSetBytes"]
        memory["availableBytes"] = api.value(text)
        memory["workingSetBytes"] = capacity - memory["availableBytes"]
        changes.append(f"{what} memory available {text}")
    return _labelled(Doc, doc, f"{_label(summary)}, {', '.join(changes)}")


def with_imagefs(summary: dict, available: str) -> Doc:
    """The summary with the image filesystem's availableBytes set (it is the node's filesystem here: both move)."""
    doc = copy.deepcopy(dict(summary))
    for fs in (doc["node"]["fs"], doc["node"]["runtime"]["imageFs"]):
        fs["availableBytes"] = api.value(available)
        fs["usedBytes"] = fs["capacityBytes"] - fs["availableBytes"]
    return _labelled(Doc, doc, f"{_label(summary)}, filesystem available {available}")


def with_kubelet(kubelet: dict, label: str, **fields: Any) -> Doc:
    """The KubeletConfiguration with these fields set (None removes one)."""
    doc = copy.deepcopy(dict(kubelet))
    for name, value in fields.items():
        if value is None:
            doc.pop(name, None)
        else:
            doc[name] = value
    return _labelled(Doc, doc, f"{_label(kubelet)}, {label}")


def with_pod(pods: list[V1Pod], name: str, label: str, *, priority: Optional[int] = None,
             memory_request: Optional[str] = None) -> PodSet:
    """The Pods, with one of them given another priority or another memory request (its first container's)."""
    changed = []
    for pod in pods:
        if pod.metadata.name == name:
            pod = copy.deepcopy(pod)
            if priority is not None:
                pod.spec.priority = priority
                pod.spec.priority_class_name = None
            if memory_request is not None:
                container = pod.spec.containers[0]
                container.resources.requests = {**(container.resources.requests or {}), "memory": memory_request}
        changed.append(pod)
    return _labelled(PodSet, changed, label)


def with_new_pod(pods: list[V1Pod], manifest: dict, label: str) -> PodSet:
    """The Pods, and one more admitted and still starting (phase Pending): the summary has no stats for it yet."""
    pod = api.pod_from_manifest({**manifest, "status": {"phase": "Pending"}})
    return _labelled(PodSet, [*pods, pod], label)
