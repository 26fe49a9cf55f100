"""The eviction manager: one synchronize pass every 10 s, the node conditions it reports, and admission.

Upstream: pkg/kubelet/eviction/eviction_manager.go (managerImpl). Upstream runs synchronize in a
goroutine that sleeps 10 s between passes (or waits for the evicted pod's cleanup); here the caller
calls synchronize(summary, active_pods) at each tick of a virtual clock. Nothing sleeps, nothing runs
concurrently, so the lock upstream takes around the shared state has no counterpart.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable, Optional

from kubernetes.client import V1Pod

from .. import features, qos, stats, types
from ..lifecycle import PodAdmitResult  # the admit handlers' shared answer (admit, reason, message)
from . import images, local_storage, messages, ranking, reclaim, signals
from .api import Threshold, containerfs_signals_known
from .records import (IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS, REASON, EvictedPod, SyncRecord, effective_grace_period,
                      grace_period_override)
from .thresholds import update_container_fs_thresholds

# --8<-- [start:constants]
NODE_MEMORY_PRESSURE = signals.MEMORY_PRESSURE
NODE_DISK_PRESSURE = signals.DISK_PRESSURE
NODE_PID_PRESSURE = signals.PID_PRESSURE
TAINT_NODE_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"  # k8s.io/api/core/v1 well_known_taints.go
SPLIT_DISK_GATE_OFF = "KubeletSeparateDiskGC is turned off but we still have a split filesystem"
DEFAULT_EVICTION_PRESSURE_TRANSITION_PERIOD = timedelta(minutes=5)  # KubeletConfiguration default (v1beta1 defaults.go)
DEFAULT_EVICTION_MAX_POD_GRACE_PERIOD = 0  # evictionMaxPodGracePeriod is not defaulted
# --8<-- [end:constants]


@dataclass
class Config:
    """The eviction manager's settings (flags/KubeletConfiguration fields already parsed).

    Upstream: pkg/kubelet/eviction/types.go Config
    """

    max_pod_grace_period_seconds: int = DEFAULT_EVICTION_MAX_POD_GRACE_PERIOD  # evictionMaxPodGracePeriod
    pressure_transition_period: timedelta = DEFAULT_EVICTION_PRESSURE_TRANSITION_PERIOD  # evictionPressureTransitionPeriod
    thresholds: list[Threshold] = field(default_factory=list)


def _pod_name(pod: V1Pod) -> str:
    namespace = pod.metadata.namespace or ""
    return f"{namespace}/{pod.metadata.name}" if namespace else pod.metadata.name


# --8<-- [start:Manager]
class Manager:
    """Watches the node's signals, reports pressure conditions, reclaims, evicts, and admits pods.

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl

    kill_pod(evicted) stands for killPodNow: it receives each EvictedPod (an exception it raises is kept
    in kill_error, as upstream only logs it). After node-level GC the manager re-measures with
    summary_after_reclaim() when given (upstream asks the summary provider again), else it credits what
    the image and container stores freed to the filesystem holding images. Upstream asks cadvisor whether
    imagefs is dedicated on the first pass; here it is the dedicated_image_fs argument (and, from 1.29,
    split_container_fs: the runtime keeps writable layers off the dedicated imagefs).
    """

    def __init__(self, config: Config, clock, *, image_store: Optional[images.ImageStore] = None,
                 kill_pod: Optional[Callable[[EvictedPod], None]] = None,
                 container_store: Optional[images.ContainerStore] = None, dedicated_image_fs: bool = False,
                 local_storage_capacity_isolation: bool = True, pod_disruption_conditions: bool = True,
                 summary_after_reclaim: Optional[Callable[[], stats.Summary]] = None, split_container_fs: bool = False):
        self.config = config
        self.clock = clock
        self.image_store = image_store
        self.container_store = container_store
        self.kill_pod = kill_pod
        self.dedicated_image_fs = dedicated_image_fs  # upstream asks cadvisor once, on the first pass
        self.split_container_fs = split_container_fs  # 1.29+: HasDedicatedContainerFs, asked at the same time
        self._filesystems_known = False
        self.local_storage_capacity_isolation = local_storage_capacity_isolation  # kubelet default: true
        self.pod_disruption_conditions = pod_disruption_conditions  # feature gate, beta and on in 1.27
        self.summary_after_reclaim = summary_after_reclaim  # re-measure hook; default: credit what GC freed
        self._node_conditions: list[str] = []
        self.thresholds_first_observed_at: dict = {}
        self.node_conditions_last_observed_at: dict[str, datetime] = {}
        self.thresholds_met: list[Threshold] = []
        self.last_observations: dict = {}
        self.signal_to_rank_func = ranking.build_signal_to_rank_func(dedicated_image_fs)
        self.signal_to_node_reclaim_funcs = reclaim.build_signal_to_node_reclaim_funcs(
            image_store, container_store, lambda: self._active_pods, dedicated_image_fs)
        self.last_sync: Optional[SyncRecord] = None
        self.evicted: list[EvictedPod] = []  # every eviction so far, oldest first
        self._active_pods: list[V1Pod] = []
        self._limited: tuple = ((), (), [])  # the active pods' ids, the pods, and those limiting local storage

    # --8<-- [end:Manager]

    # --8<-- [start:synchronize]
    def synchronize(self, summary: stats.Summary, active_pods: list[V1Pod]) -> list[EvictedPod]:
        """One housekeeping pass: observe, track thresholds and conditions, reclaim, evict at most one pod.

        Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.synchronize
        """
        now = self.clock.now()
        record = self.last_sync = SyncRecord(time=now)
        if not self.config.thresholds and not self.local_storage_capacity_isolation:
            return []
        if not self._filesystems_known:
            self._filesystems_known = True
            if not self._detect_filesystems():
                return []  # upstream returns the error; the next pass goes on without rank or reclaim functions
        self._active_pods = list(active_pods)
        observations, stats_func = signals.make_signal_observations(summary)
        record.observations = observations
        # Thresholds crossed now (grace periods ignored), plus those acted on last pass whose
        # min-reclaim is not yet satisfied: the pressure "sticks" until min-reclaim is reached.
        met = signals.thresholds_met(self.config.thresholds, observations, False)
        if self.thresholds_met:
            met = signals.merge_thresholds(met, signals.thresholds_met(self.thresholds_met, observations, True))
        record.thresholds_met = met
        first_observed_at = signals.thresholds_first_observed_at(met, self.thresholds_first_observed_at, now)
        # A crossed threshold raises its condition at once (grace periods do not apply to conditions),
        # and the condition stays reported until pressure_transition_period after it was last seen.
        observed_conditions = signals.node_conditions(met)
        last_observed_at = signals.node_conditions_last_observed_at(observed_conditions,
                                                                    self.node_conditions_last_observed_at, now)
        conditions = signals.node_conditions_observed_since(last_observed_at, self.config.pressure_transition_period, now)
        grace_met = signals.thresholds_met_grace_period(first_observed_at, now)
        self._node_conditions = record.node_conditions = conditions
        self.thresholds_first_observed_at = first_observed_at
        self.node_conditions_last_observed_at = last_observed_at
        self.thresholds_met = record.thresholds_grace_met = grace_met
        to_act_on = signals.thresholds_updated_stats(grace_met, observations, self.last_observations)
        self.last_observations = observations

        if self.local_storage_capacity_isolation:  # only a pod with a local-storage limit can go for one
            evicted = local_storage.local_storage_eviction(self._limiting(active_pods), stats_func,
                                                           self._evict_for_local_storage, self.dedicated_image_fs)
            if evicted:
                return evicted  # local-storage evictions skip the threshold path this pass
        if not to_act_on:
            return []  # no resources are starved

        to_act_on = signals.sort_by_eviction_priority(to_act_on)
        record.thresholds_to_act_on = to_act_on
        threshold, resource_name, found = signals.get_reclaimable_threshold(to_act_on)
        if not found:
            return []
        record.threshold_to_reclaim, record.resource_to_reclaim = threshold, resource_name
        record.events.append(("node", "Warning", "EvictionThresholdMet", f"Attempting to reclaim {resource_name}"))
        if self._reclaim_node_level_resources(threshold.signal, resource_name, summary):
            record.reclaim_sufficient = True
            return []  # garbage collection relieved the pressure without evicting a pod
        rank = self.signal_to_rank_func.get(threshold.signal)
        if rank is None or not active_pods:
            return []
        ranked = record.ranked = rank(list(active_pods), stats_func)
        # At most one pod per pass: the first that can be evicted (critical pods are refused).
        for pod in ranked:
            override = grace_period_override(threshold, pod, self.config.max_pod_grace_period_seconds)
            message, annotations = messages.eviction_message(resource_name, pod, stats_func, to_act_on, observations)
            condition = None
            if self.pod_disruption_conditions:
                condition = {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": message}
            evicted = self._evict_pod(pod, threshold.signal, override, message, annotations, condition)
            if evicted is not None:
                return [evicted]
        return []  # unable to evict any pods from the node
    # --8<-- [end:synchronize]

    def _limiting(self, pods: list[V1Pod]) -> list[V1Pod]:
        """The pods with a local-storage limit (local_storage.limits_local_storage), found again when the pods change."""
        seen = tuple(map(id, pods))
        if self._limited[0] != seen:  # (the pods are kept with their ids, so an id stands for one pod)
            self._limited = (seen, tuple(pods), [pod for pod in pods if local_storage.limits_local_storage(pod)])
        return self._limited[2]

    def _detect_filesystems(self) -> bool:
        """From 1.29, on the first pass: refuse a split containerfs with the gate off, else add the containerfs
        thresholds and rebuild the rank and reclaim functions for the split. False when it refuses.

        Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.synchronize (its first-pass block)
        """
        if not containerfs_signals_known():
            return True  # v1.27: the functions built in __init__ stand
        split = self.split_container_fs
        if split and not features.DEFAULT_FEATURE_GATE.enabled("KubeletSeparateDiskGC"):
            self.last_sync.error = SPLIT_DISK_GATE_OFF
            self.signal_to_rank_func, self.signal_to_node_reclaim_funcs = {}, {}  # never built upstream
            return False
        found, error = update_container_fs_thresholds(self.config.thresholds, self.dedicated_image_fs, split)
        self.config = dataclasses.replace(self.config, thresholds=found)  # the caller's Config is left as it was
        self.last_sync.error = error or ""  # upstream logs it ("found conflicting containerfs eviction")
        self.signal_to_rank_func = ranking.build_signal_to_rank_func(self.dedicated_image_fs, split)
        self.signal_to_node_reclaim_funcs = reclaim.build_signal_to_node_reclaim_funcs(
            self.image_store, self.container_store, lambda: self._active_pods, self.dedicated_image_fs, split)
        return True

    # --8<-- [start:admit]
    def admit(self, pod: V1Pod, active_pods: Optional[list[V1Pod]] = None) -> PodAdmitResult:
        """Admit unless the node reports pressure; under memory pressure alone, only BestEffort pods are refused.

        Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.Admit
        (active_pods mirrors PodAdmitAttributes.OtherPods, which this handler does not read.)
        """
        conditions = self._node_conditions  # the reported ones, held through the transition period
        if not conditions:
            return PodAdmitResult(admit=True)
        if types.is_critical_pod(pod):
            return PodAdmitResult(admit=True)  # static, mirror or system-critical: always admitted
        if conditions == [NODE_MEMORY_PRESSURE]:
            if qos.get_pod_qos(pod) != qos.BEST_EFFORT:
                return PodAdmitResult(admit=True)
            if _tolerates_memory_pressure_taint(pod):
                return PodAdmitResult(admit=True)
        return PodAdmitResult(admit=False, reason=REASON,
                              message=messages.NODE_CONDITION_MESSAGE_FMT.format("[" + " ".join(conditions) + "]"))
    # --8<-- [end:admit]

    @property
    def node_conditions(self) -> list[str]:
        """The pressure conditions the node reports now (what the node status setters read).

        Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.nodeConditions
        """
        return list(self._node_conditions)

    @node_conditions.setter
    def node_conditions(self, conditions: list[str]) -> None:
        self._node_conditions = list(conditions)

    def is_under_memory_pressure(self) -> bool:
        """True while MemoryPressure is reported.

        Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.IsUnderMemoryPressure
        """
        return NODE_MEMORY_PRESSURE in self._node_conditions

    def is_under_disk_pressure(self) -> bool:
        """True while DiskPressure is reported.

        Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.IsUnderDiskPressure
        """
        return NODE_DISK_PRESSURE in self._node_conditions

    def is_under_pid_pressure(self) -> bool:
        """True while PIDPressure is reported.

        Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.IsUnderPIDPressure
        """
        return NODE_PID_PRESSURE in self._node_conditions

    # --8<-- [start:evict_pod]
    def _evict_pod(self, pod: V1Pod, signal: str, override: int, message: str, annotations: dict[str, str],
                   condition: Optional[dict[str, str]]) -> Optional[EvictedPod]:
        """Kill the pod with the given grace override, unless it is critical (then None).

        Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.evictPod
        """
        if types.is_critical_pod(pod):
            return None  # static, mirror, or priority >= 2000000000: never evicted
        evicted = EvictedPod(pod=pod, signal=signal, grace_period_override=override, message=message,
                             annotations=annotations, effective_grace_period=effective_grace_period(pod, override),
                             condition=condition)
        if self.last_sync is not None:
            self.last_sync.events.append((_pod_name(pod), "Warning", REASON, message))
            self.last_sync.evicted.append(evicted)
        if self.kill_pod is not None:
            try:
                self.kill_pod(evicted)
            except Exception as err:  # upstream only logs a failed kill, and still counts the eviction
                evicted.kill_error = str(err)
        self.evicted.append(evicted)
        return evicted
    # --8<-- [end:evict_pod]

    def _evict_for_local_storage(self, pod: V1Pod, signal: str, message: str) -> Optional[EvictedPod]:
        """A local-storage limit eviction: override 0 (1 s from 1.31), no annotations, no DisruptionTarget condition."""
        immediate = features.DEFAULT_FEATURE_GATE.changed("HardEvictionOneSecondGrace")
        return self._evict_pod(pod, signal, IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS if immediate else 0, message, {}, None)

    # --8<-- [start:reclaim_node_level_resources]
    def _reclaim_node_level_resources(self, signal: str, resource_name: str, summary: stats.Summary) -> bool:
        """Run the signal's garbage collectors; True if, re-measured, no threshold (with min-reclaim) is met.

        Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.reclaimNodeLevelResources
        """
        funcs = self.signal_to_node_reclaim_funcs.get(signal, [])
        if not funcs:
            return False  # memory and pids: nothing to reclaim at node level
        freed_bytes = freed_inodes = 0
        for node_reclaim in funcs:
            more_bytes, more_inodes = node_reclaim(self.clock.now())
            freed_bytes, freed_inodes = freed_bytes + more_bytes, freed_inodes + more_inodes
        if self.last_sync is not None:
            self.last_sync.reclaimed = (freed_bytes, freed_inodes)
        if self.summary_after_reclaim is not None:
            summary = self.summary_after_reclaim()
        else:
            summary = reclaim.credit_reclaimed(summary, freed_bytes, freed_inodes, self.dedicated_image_fs)
        observations, _ = signals.make_signal_observations(summary)
        # Every configured threshold, hard and soft, grace periods ignored, min-reclaim added.
        return not signals.thresholds_met(self.config.thresholds, observations, True)
    # --8<-- [end:reclaim_node_level_resources]


def _tolerates_memory_pressure_taint(pod: V1Pod) -> bool:
    """Whether a toleration matches the memory-pressure NoSchedule taint (empty value).

    Upstream: k8s.io/api/core/v1/toleration.go Toleration.ToleratesTaint
    """
    for toleration in pod.spec.tolerations or []:
        if toleration.effect and toleration.effect != "NoSchedule":
            continue
        if toleration.key and toleration.key != TAINT_NODE_MEMORY_PRESSURE:
            continue
        operator = toleration.operator or ""
        if (operator in ("", "Equal") and (toleration.value or "") == "") or operator == "Exists":
            return True
    return False
