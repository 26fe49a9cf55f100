"""The status manager: the kubelet's cached status of each Pod, and the status the API server is sent.

Upstream: pkg/kubelet/status/status_manager.go (SetPodStatus, TerminatePod, updateStatusInternal,
checkContainerStateTransition, mergePodStatus, canBeDeleted; from 1.33 the resize conditions PodResizePending
and PodResizeInProgress, which replace status.resize, as v1.36.5 keeps them)
Upstream's manager writes to the API server from its own goroutine (syncBatch); here the caller asks for
the status the API would hold (`api_status`) whenever it wants to read it, on the virtual clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Optional

from kubernetes.client import (V1ContainerState, V1ContainerStateTerminated, V1ContainerStatus, V1Pod, V1PodCondition,
                               V1PodStatus)

from .. import api, types
from ..api import models_equal
from ..features import DEFAULT_FEATURE_GATE
from ..clock import Clock
from ..container import all_containers_could_restart, container_should_restart, is_restartable_init_container
from ..kubelet_pods import POD_CONDITIONS_BY_KUBELET

TERMINAL_PHASES = ("Succeeded", "Failed")
# --8<-- [start:resize_constants]
POD_RESIZE_PENDING, POD_RESIZE_IN_PROGRESS = "PodResizePending", "PodResizeInProgress"  # k8s.io/api/core/v1
POD_REASON_DEFERRED, POD_REASON_INFEASIBLE, POD_REASON_ERROR = "Deferred", "Infeasible", "Error"
# --8<-- [end:resize_constants]
CONTAINER_STATUS_UNKNOWN = "ContainerStatusUnknown"
_UNKNOWN_MESSAGE = "The container could not be located when the pod was terminated"


@dataclass
class PodResizeConditions:
    """A pod's two resize conditions, either absent. Upstream: status_manager.go podResizeConditions"""

    pending: Optional[V1PodCondition] = None
    in_progress: Optional[V1PodCondition] = None

    def list(self) -> list[V1PodCondition]:
        """Pending first, then in progress. Upstream: podResizeConditions.List"""
        return [c for c in (self.pending, self.in_progress) if c is not None]


# --8<-- [start:updated_pod_resize_condition]
def updated_pod_resize_condition(condition_type: str, old: Optional[V1PodCondition], reason: str, message: str,
                                 observed_generation: int, now: datetime) -> V1PodCondition:
    """A True resize condition probed now; it keeps its old transition time unless its reason changed.

    Upstream: pkg/kubelet/status/status_manager.go updatedPodResizeCondition
    """
    since = old.last_transition_time if old is not None and (old.reason or "") == reason else now
    return V1PodCondition(type=condition_type, status="True", reason=reason or None, message=message or None,
                          observed_generation=observed_generation or None, last_probe_time=now,
                          last_transition_time=since)
# --8<-- [end:updated_pod_resize_condition]


@dataclass
class VersionedPodStatus:
    """One cached status, its version, and whether the pod is finished. Upstream: status_manager.go versionedPodStatus"""

    status: V1PodStatus
    version: int
    pod_name: str
    pod_namespace: str
    pod_is_finished: bool
    at: datetime


# --8<-- [start:check_container_state_transition]
def check_container_state_transition(old: Optional[list[V1ContainerStatus]], new: Optional[list[V1ContainerStatus]],
                                     restart_policy: Optional[str], containers: Optional[list] = None,
                                     init: bool = False, pod_spec=None) -> Optional[str]:
    """An error if a terminated container that may not restart shows up as not terminated.

    containers (the spec's list the statuses are of) matter only behind gates: with SidecarContainers a
    sidecar may always leave its terminated state (and init containers are named so in the error); with
    ContainerRestartRules so may a regular container whose own policy or rules restart it on its exit code; with
    RestartAllContainersOnContainerExits any container of a pod (pod_spec) with a RestartAllContainers rule may.
    Upstream: pkg/kubelet/status/status_manager.go checkContainerStateTransition (v1.27; gated parts as in v1.32
    and, for the rules, as a later release reads)
    """
    if restart_policy in (None, "Always"):
        return None
    if (DEFAULT_FEATURE_GATE.enabled("RestartAllContainersOnContainerExits") and pod_spec is not None
            and all_containers_could_restart(pod_spec)):
        return None  # any container may run again, after an in-place restart of them all
    specs = {c.name: c for c in containers or []}
    rules = not init and DEFAULT_FEATURE_GATE.enabled("ContainerRestartRules")
    for before in old or []:
        spec = specs.get(before.name)
        if init and spec is not None and is_restartable_init_container(spec):
            continue
        if before.state is None or before.state.terminated is None:
            continue
        code = before.state.terminated.exit_code
        if code != 0 and restart_policy == "OnFailure":
            continue
        if rules and spec is not None and container_should_restart(spec, restart_policy, code):
            continue
        for after in new or []:
            if after.name == before.name and (after.state is None or after.state.terminated is None):
                kind = "init container" if init and DEFAULT_FEATURE_GATE.enabled("SidecarContainers") else "container"
                return f"terminated {kind} {after.name} attempted illegal transition to non-terminated state"
    return None
# --8<-- [end:check_container_state_transition]


def _update_last_transition_time(status: V1PodStatus, old: V1PodStatus, condition_type: str, now: datetime) -> None:
    """A condition keeps its old transition time unless its status changed. Upstream: updateLastTransitionTime"""
    condition = next((c for c in status.conditions or [] if c.type == condition_type), None)
    if condition is None:
        return
    before = next((c for c in old.conditions or [] if c.type == condition_type), None)
    condition.last_transition_time = (before.last_transition_time if before is not None and before.status ==
                                      condition.status and before.last_transition_time else now)


def _by_kubelet_equal(old: V1PodStatus, new: V1PodStatus, start_time=None) -> bool:
    """Upstream: pkg/kubelet/status/status_manager.go isPodStatusByKubeletEqual

    Every field but the conditions is compared; of the conditions, only the kubelet's own, by status, message and
    reason. start_time, when given, stands for new's start time (a status not yet given its own).
    """
    for c in new.conditions or []:
        if c.type in POD_CONDITIONS_BY_KUBELET or c.type == "DisruptionTarget":
            o = next((x for x in old.conditions or [] if x.type == c.type), None)
            if o is None or (o.status, o.message, o.reason) != (c.status, c.message, c.reason):
                return False
    for name in type(new).openapi_types:
        if name == "conditions":
            continue
        after = start_time if name == "start_time" and start_time is not None else getattr(new, name, None)
        if not models_equal(getattr(old, name, None), after):
            return False
    return True


# --8<-- [start:merge_pod_status]
def merge_pod_status(old: V1PodStatus, new: V1PodStatus, could_have_running_containers: bool,
                     now: Optional[datetime] = None) -> V1PodStatus:
    """What the API gets: the kubelet's conditions, and no terminal phase while containers could still run.

    DisruptionTarget, a condition the kubelet shares with others, is sent only with the move to a terminal phase
    once no container can run (PodDisruptionConditions, on in v1.27).

    Upstream: pkg/kubelet/status/status_manager.go mergePodStatus
    """
    merged = api.deep_copy(new)
    transitioning = old.phase not in TERMINAL_PHASES and new.phase in TERMINAL_PHASES
    conditions = [c for c in old.conditions or [] if c.type not in POD_CONDITIONS_BY_KUBELET]
    conditions += [c for c in merged.conditions or [] if c.type in POD_CONDITIONS_BY_KUBELET]
    shared = next((c for c in merged.conditions or [] if c.type == "DisruptionTarget"), None)
    if (shared is not None and DEFAULT_FEATURE_GATE.enabled("PodDisruptionConditions") and transitioning
            and not could_have_running_containers):  # a shared condition goes once the pod is really terminal
        if now is not None:
            _update_last_transition_time(merged, old, "DisruptionTarget", now)
        at = next((i for i, c in enumerate(conditions) if c.type == "DisruptionTarget"), None)
        if at is None:
            conditions.append(shared)
        else:
            conditions[at] = shared
    merged.conditions = conditions
    if transitioning and could_have_running_containers:
        merged.phase, merged.reason, merged.message = old.phase, old.reason, old.message
    if merged.phase in TERMINAL_PHASES and any(c.type in ("Ready", "ContainersReady") and c.status == "True"
                                               for c in merged.conditions):  # never terminal with Ready=True (#108594)
        reason = "PodCompleted" if merged.phase == "Succeeded" else "PodFailed"
        for condition_type in ("ContainersReady", "Ready"):  # generate...ConditionForTerminalPhase, UpdatePodCondition
            condition = V1PodCondition(type=condition_type, status="False", reason=reason)
            at = next((i for i, c in enumerate(merged.conditions) if c.type == condition_type), None)
            if at is None:
                merged.conditions.append(condition)
            else:
                if merged.conditions[at].status == "False":
                    condition.last_transition_time = merged.conditions[at].last_transition_time
                merged.conditions[at] = condition
    return merged
# --8<-- [end:merge_pod_status]


class StatusManager:
    """The cached status of each pod by UID, as the kubelet's sync steps set it.

    Upstream: pkg/kubelet/status/status_manager.go manager
    get_mirror_pod(pod) is the pod manager's GetMirrorPodByPod (a static pod's status lives on its mirror pod).
    """

    def __init__(self, clock: Clock, get_mirror_pod: Callable[[V1Pod], Optional[V1Pod]] = lambda pod: None):
        self.clock, self.get_mirror_pod = clock, get_mirror_pod
        self.pod_statuses: dict[str, VersionedPodStatus] = {}
        self.api_statuses: dict[str, V1PodStatus] = {}  # what was last sent to the API server
        self.generation = 0  # counts every change to the cached statuses
        self.api_generation = 0  # counts every status sent to the API server (api_statuses)
        self.removals = 0  # counts the statuses removed (remove_orphaned_statuses)
        self.changed: list[str] = []  # the UID of each change to a cached status, in order (a reader keeps its place)
        self.log: list[str] = []
        self.pod_resize_conditions: dict[str, PodResizeConditions] = {}

    def get_pod_status(self, uid: str) -> Optional[V1PodStatus]:
        """The cached status, or None. Upstream: manager.GetPodStatus"""
        cached = self.pod_statuses.get(uid)
        return cached.status if cached else None

    def set_pod_status(self, pod: V1Pod, status: V1PodStatus) -> None:
        """Cache a copy of the status; a deletion forces the update. Upstream: manager.SetPodStatus

        A status equal to the cached one changes nothing (updateStatusInternal returns early): that is found out
        first, without the copy.
        """
        cached = self.pod_statuses.get(pod.metadata.uid)
        if cached is not None and pod.metadata.deletion_timestamp is None and not any(
                check_container_state_transition(before, after, pod.spec.restart_policy, specs, init, pod.spec) for
                before, after, specs, init in (
                    (cached.status.container_statuses, status.container_statuses, pod.spec.containers, False),
                    (cached.status.init_container_statuses, status.init_container_statuses, pod.spec.init_containers,
                     True))) and _by_kubelet_equal(
                cached.status, status, cached.status.start_time or status.start_time or self.clock.now()):
            return
        self.update_status_internal(pod, api.deep_copy(status), pod.metadata.deletion_timestamp is not None, False)

    # --8<-- [start:terminate_pod]
    def terminate_pod(self, pod: V1Pod) -> None:
        """The final status: every container terminated, and (but for static pods) a terminal phase.

        Upstream: pkg/kubelet/status/status_manager.go manager.TerminatePod
        """
        cached = self.pod_statuses.get(pod.metadata.uid)
        status = api.deep_copy(cached.status if cached else (pod.status or V1PodStatus()))
        unknown = V1ContainerState(terminated=V1ContainerStateTerminated(
            reason=CONTAINER_STATUS_UNKNOWN, message=_UNKNOWN_MESSAGE, exit_code=137))
        if has_pod_initialized(pod):  # upstream reads the pod's API status here, not the cached one
            for c in status.container_statuses or []:
                if c.state is None or c.state.terminated is None:
                    c.state = api.deep_copy(unknown)
        for c in initialized_containers(status.init_container_statuses or []):
            if c.state is None or c.state.terminated is None:
                c.state = api.deep_copy(unknown)
        if not types.is_static_pod(pod) and status.phase not in TERMINAL_PHASES:
            status.phase = "Failed"  # TODO upstream (#116484): static pods keep their phase
        self.update_status_internal(pod, status, True, True)
    # --8<-- [end:terminate_pod]

    # --8<-- [start:update_status_internal]
    def update_status_internal(self, pod: V1Pod, status: V1PodStatus, force_update: bool, pod_is_finished: bool) -> None:
        """Check the transition, keep transition and start times, and cache the status under a new version.

        Upstream: pkg/kubelet/status/status_manager.go manager.updateStatusInternal
        """
        uid, now = pod.metadata.uid, self.clock.now()
        cached = self.pod_statuses.get(uid)
        if cached is not None:
            old = cached.status
            if not types.is_static_pod(pod) and cached.pod_is_finished:
                pod_is_finished = True
        else:
            mirror = self.get_mirror_pod(pod)
            old = (mirror.status if mirror is not None else pod.status) or V1PodStatus()
        for before, after, specs, init in (
                (old.container_statuses, status.container_statuses, pod.spec.containers, False),
                (old.init_container_statuses, status.init_container_statuses, pod.spec.init_containers, True)):
            err = check_container_state_transition(before, after, pod.spec.restart_policy, specs, init, pod.spec)
            if err:
                self.log.append(f"Status update on pod {pod.metadata.namespace}/{pod.metadata.name} aborted: {err}")
                return
        for condition_type in ("ContainersReady", "Ready", "Initialized", "PodScheduled", "DisruptionTarget",
                               "AllContainersRestarting"):
            _update_last_transition_time(status, old, condition_type, now)
        status.start_time = old.start_time or status.start_time or now
        if cached is not None and _by_kubelet_equal(cached.status, status) and not force_update:
            return
        self.generation += 1
        self.changed.append(uid)
        self.pod_statuses[uid] = VersionedPodStatus(status, cached.version + 1 if cached else 1, pod.metadata.name,
                                                    pod.metadata.namespace, pod_is_finished,
                                                    cached.at if cached else now)
    # --8<-- [end:update_status_internal]

    def api_status(self, pod: V1Pod, could_have_running_containers: bool) -> Optional[V1PodStatus]:
        """The status the API server holds after the manager's next write (its syncPod with mergePodStatus).

        Upstream: pkg/kubelet/status/status_manager.go manager.syncPod (mergePodStatus)
        """
        cached = self.pod_statuses.get(pod.metadata.uid)
        if cached is None:
            return self.api_statuses.get(pod.metadata.uid) or pod.status
        old = self.api_statuses.get(pod.metadata.uid) or pod.status or V1PodStatus()
        merged = merge_pod_status(old, cached.status, could_have_running_containers, self.clock.now())
        self.api_statuses[pod.metadata.uid] = merged
        self.api_generation += 1
        return merged

    def can_be_deleted(self, uid: str) -> bool:
        """A deleted pod leaves the API once its final status is set (the volumes and cgroups are not modelled).

        Upstream: pkg/kubelet/status/status_manager.go manager.canBeDeleted (podIsFinished)
        """
        cached = self.pod_statuses.get(uid)
        return cached is not None and cached.pod_is_finished

    # --8<-- [start:resize_conditions]
    def get_pod_resize_conditions(self, uid: str) -> list[V1PodCondition]:
        """The pod's resize conditions, pending first. Upstream: manager.GetPodResizeConditions"""
        return self.pod_resize_conditions.get(uid, PodResizeConditions()).list()

    def set_pod_resize_pending_condition(self, uid: str, reason: str, message: str, observed_generation: int) -> bool:
        """Set PodResizePending, Infeasible or else Deferred; True when that or the generation changed (then an event).

        Any reason but Infeasible (an admit handler's OutOfcpu, say) is stored as Deferred.
        Upstream: pkg/kubelet/status/status_manager.go manager.SetPodResizePendingCondition
        """
        reason = POD_REASON_INFEASIBLE if reason == POD_REASON_INFEASIBLE else POD_REASON_DEFERRED
        cached = self.pod_resize_conditions.setdefault(uid, PodResizeConditions())
        old = cached.pending
        cached.pending = updated_pod_resize_condition(POD_RESIZE_PENDING, old, reason, message, observed_generation,
                                                      self.clock.now())
        return old is None or old.reason != reason or (old.observed_generation or 0) != observed_generation

    def set_pod_resize_in_progress_condition(self, uid: str, reason: str, message: str,
                                             observed_generation: int) -> tuple[int, bool]:
        """Set PodResizeInProgress; (its observedGeneration, whether it changed, probe times aside).

        A condition already there keeps its observedGeneration (clear it first to move it), and its reason and
        message when both given are empty.
        Upstream: pkg/kubelet/status/status_manager.go manager.SetPodResizeInProgressCondition
        """
        cached = self.pod_resize_conditions.setdefault(uid, PodResizeConditions())
        old = cached.in_progress
        if old is not None:
            if not reason and not message:
                reason, message = old.reason or "", old.message or ""
            observed_generation = old.observed_generation or 0
        cached.in_progress = updated_pod_resize_condition(POD_RESIZE_IN_PROGRESS, old, reason, message,
                                                          observed_generation, self.clock.now())
        changed = old is None or ((old.reason or "", old.message or "") != (reason, message))
        return observed_generation, changed

    def clear_pod_resize_pending_condition(self, uid: str) -> None:
        """Upstream: manager.ClearPodResizePendingCondition"""
        self.pod_resize_conditions.setdefault(uid, PodResizeConditions()).pending = None

    def clear_pod_resize_in_progress_condition(self, uid: str) -> tuple[int, bool]:
        """Clear PodResizeInProgress; (the observedGeneration it had, whether there was one).

        Upstream: manager.ClearPodResizeInProgressCondition
        """
        cached = self.pod_resize_conditions.setdefault(uid, PodResizeConditions())
        old, cached.in_progress = cached.in_progress, None
        return ((old.observed_generation or 0), True) if old is not None else (0, False)

    def is_pod_resize_deferred(self, uid: str) -> bool:
        """Upstream: manager.IsPodResizeDeferred"""
        pending = self.pod_resize_conditions.get(uid, PodResizeConditions()).pending
        return pending is not None and pending.reason == POD_REASON_DEFERRED

    def is_pod_resize_infeasible(self, uid: str) -> bool:
        """Upstream: manager.IsPodResizeInfeasible"""
        pending = self.pod_resize_conditions.get(uid, PodResizeConditions()).pending
        return pending is not None and pending.reason == POD_REASON_INFEASIBLE
    # --8<-- [end:resize_conditions]

    def remove_orphaned_statuses(self, uids: set[str]) -> None:
        """Forget the statuses of pods no longer known. Upstream: manager.RemoveOrphanedStatuses"""
        for uid in [u for u in self.pod_statuses if u not in uids]:
            self.generation += 1
            self.api_generation += 1
            self.removals += 1
            del self.pod_statuses[uid]
            self.api_statuses.pop(uid, None)
            self.pod_resize_conditions.pop(uid, None)


def _waiting(c: V1ContainerStatus) -> bool:
    return c.state is None or c.state.waiting is not None


def _terminated_ok(state) -> bool:
    return state is not None and state.terminated is not None and state.terminated.exit_code == 0


def has_pod_initialized(pod: V1Pod) -> bool:
    """Whether the pod's API status shows it past its init containers.

    Upstream: pkg/kubelet/status/status_manager.go hasPodInitialized
    """
    if not pod.spec.init_containers:
        return True
    status = pod.status or V1PodStatus()
    if any((c.last_state is not None and c.last_state.terminated is not None) or not _waiting(c)
           for c in status.container_statuses or []):
        return True
    inits = status.init_container_statuses or []
    return bool(inits) and (_terminated_ok(inits[-1].last_state) or _terminated_ok(inits[-1].state))


def initialized_containers(statuses: list[V1ContainerStatus]) -> list[V1ContainerStatus]:
    """The init containers up to the last one with evidence of a start (at least the first).

    Upstream: pkg/kubelet/status/status_manager.go initializedContainers
    """
    for i in range(len(statuses) - 1, -1, -1):
        c = statuses[i]
        if not _waiting(c) or (c.last_state is not None and c.last_state.terminated is not None):
            return statuses[:i + 1]
    return statuses[:1]
