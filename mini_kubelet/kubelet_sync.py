"""The Kubelet's sync steps for one Pod: SyncPod, SyncTerminatingPod, SyncTerminatedPod (the pod workers call them).

Upstream: pkg/kubelet/kubelet.go (Kubelet.SyncPod, SyncTerminatingPod, SyncTerminatingRuntimePod,
SyncTerminatedPod) and pkg/kubelet/kubelet_pods.go (Kubelet.killPod)
Only the steps that decide phases, restarts and termination are kept, in upstream's order: the API status
is generated, a terminal phase ends the sync, the status manager is told, the mirror pod of a static pod
is made, then the runtime manager's SyncPod runs with the crash-loop back-off. Soft admission (canRunPod),
volumes, cgroups, secrets, image pulls and the network check are not modelled (they always succeed here).
A terminal phase sticks because generateAPIPodStatus keeps it, and the status manager refuses a terminated
container that may not restart coming back (checkContainerStateTransition); v1.27's status manager itself
has no phase check.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Optional

from kubernetes.client import V1Pod

from . import container, events, features, types
from .clock import Clock
from .container import (CONFIG_POD_SANDBOX, CONTAINER_STATE_EXITED, CONTAINER_STATE_RUNNING, ERR_CRASH_LOOP_BACK_OFF,
                        REMOVE_CONTAINER, START_CONTAINER, PodStatus, convert_pod_status_to_running_pod)
from .cri import RuntimeService
from .flowcontrol import Backoff, new_container_back_off
from .kubelet_pods import generate_api_pod_status
from .kuberuntime.helpers import get_stable_key
from .kuberuntime.kuberuntime_container import all_containers
from .kuberuntime.kuberuntime_manager import kill_pod_with_sync_result, sync_pod
from .kuberuntime.kuberuntime_resize import is_pod_resize_in_progress
from .kuberuntime.kuberuntime_resize_actuate import RESIZE_POD_IN_PLACE
from .pod_worker_types import Context, UpdatePodOptions
from .pod_workers import _to_api_pod
from .reason_cache import ReasonCache
from .status.status_manager import POD_REASON_ERROR, StatusManager
from .types import SyncPodType

ERR_IMAGE_PULL_BACK_OFF = "ImagePullBackOff"  # pkg/kubelet/images/types.go ErrImagePullBackOff
FAILED_TO_KILL_POD = "FailedKillPod"  # pkg/kubelet/events/event.go


class SyncError(Exception):
    """A sync step that failed; the pod worker retries after its back-off period."""


class MirrorClient:
    """Where mirror pods of static pods are created and deleted (the API server). Upstream: pkg/kubelet/pod mirror_client.go"""

    def create_mirror_pod(self, pod: V1Pod) -> None: ...
    def delete_mirror_pod(self, mirror_pod: V1Pod) -> bool: ...  # False if it was gone already (NotFound)


class KubeletSyncer:
    """The pod workers' PodSyncer, against the simulated runtime, with the status manager and crash-loop back-off.

    Upstream: pkg/kubelet/kubelet.go Kubelet (as the podSyncer of newPodWorkers)
    liveness, startup and readiness are the probe managers' results by container ID ("Success" or "Failure").
    """

    def __init__(self, runtime: RuntimeService, status_manager: StatusManager, clock: Clock, recorder: events.Recorder, *,
                 back_off: Optional[Backoff] = None, mirror_client: Optional[MirrorClient] = None,
                 is_pod_termination_requested: Callable[[str], bool] = lambda uid: False, pod_sync_handlers=(),
                 skip_settled_resyncs: bool = False):
        self.runtime, self.status_manager, self.clock, self.recorder = runtime, status_manager, clock, recorder
        self.back_off = back_off or new_container_back_off(clock)  # NewMainKubelet: 10 s, capped at 300 s
        self.mirror_client, self.is_pod_termination_requested = mirror_client, is_pod_termination_requested
        self.pod_sync_handlers = list(pod_sync_handlers)  # e.g. the active-deadline handler
        self.reason_cache = ReasonCache()
        self.liveness: dict[str, str] = {}
        self.startup: dict[str, str] = {}
        self.readiness: dict[str, str] = {}
        self.kills: list[tuple[V1Pod, Optional[int]]] = []  # (pod, grace period override) of each killPod
        self.skip_settled_resyncs = skip_settled_resyncs
        self.settled: dict[str, tuple[tuple, tuple]] = {}  # uid -> the inputs of its last sync, if it changed nothing
        self.backing_off: dict[str, tuple] = {}  # uid -> its last sync, if it only met crash-loop back-offs
        self.update_pod: Optional[Callable[[UpdatePodOptions], None]] = None  # the pod workers' UpdatePod
        # in-place resize (InPlacePodVerticalScaling): the allocation manager and the runtime manager's ResizeState;
        # None: SyncPod takes the pod's spec as it is (v1.27, and every replay without a resize)
        self.allocation = None
        self.resize = None

    # --8<-- [start:settled]
    def sync_inputs(self, pod: V1Pod, mirror_pod: Optional[V1Pod], pod_status: PodStatus) -> tuple[tuple, tuple]:
        """Everything SyncPod reads about one pod: objects (compared by identity) and values (compared by value).

        The pod and mirror pod as the pod manager holds them, the cached runtime status (a new object after every
        change the PLEG saw) and its IPs, the status manager's cached status (a new object after every change),
        and the probe results of the pod's containers; with in-place resize, the pod's allocation and its resize
        conditions too (a Deferred resize allocated later, or retried, changes what SyncPod does or writes, the
        pod staying the same object).
        """
        return ((pod, mirror_pod, pod_status, self.status_manager.pod_statuses.get(pod.metadata.uid)),
                self._input_values(pod, pod_status))

    def _input_values(self, pod: V1Pod, pod_status: PodStatus) -> tuple:
        probes = tuple((self.liveness.get(c.id), self.startup.get(c.id), self.readiness.get(c.id))
                       for c in pod_status.container_statuses) if self.liveness or self.startup or self.readiness else ()
        allocated = conditions = None
        if self.allocation is not None:  # a retried Deferred resize leaves a new condition (its lastProbeTime)
            allocated = self.allocation.allocated.get(pod.metadata.uid)
            held = self.status_manager.pod_resize_conditions.get(pod.metadata.uid)
            conditions = (held.pending, held.in_progress) if held is not None else None
        return tuple(pod_status.ips), probes, allocated, conditions

    def is_settled(self, pod: V1Pod, mirror_pod: Optional[V1Pod], pod_status: PodStatus) -> bool:
        """Whether SyncPod would change nothing: its last sync of the pod changed nothing, and its inputs are the same.

        SyncPod is a function of its inputs and of the clock; the clock counts only through the crash-loop back-off
        (read only for a container that is to start, which is not a sync that changes nothing) and the active
        deadline (such pods are never settled). So the same inputs give the same answer: again nothing.
        Upstream: none (an observation about pkg/kubelet/kubelet.go Kubelet.SyncPod)
        """
        before = self.settled.get(pod.metadata.uid) if self.skip_settled_resyncs else None
        return before is not None and self._same_inputs(before, pod, mirror_pod, pod_status)

    def _same_inputs(self, before: tuple, pod: V1Pod, mirror_pod: Optional[V1Pod], pod_status: PodStatus) -> bool:
        objects, values = before
        if (objects[0] is not pod or objects[1] is not mirror_pod or objects[2] is not pod_status
                or objects[3] is not self.status_manager.pod_statuses.get(pod.metadata.uid)):
            return False
        return values == self._input_values(pod, pod_status)

    def _changes(self, uid: str) -> tuple:
        """What a sync could change besides the runtime's containers: statuses, logs, events, kills, the runtime."""
        return (self.status_manager.pod_statuses.get(uid), len(self.status_manager.log), len(self.recorder.events),
                self.runtime.generation, len(self.kills))

    def _begin_settling(self, pod: V1Pod, mirror_pod: Optional[V1Pod], pod_status: PodStatus) -> tuple:
        uid = pod.metadata.uid
        self.settled.pop(uid, None)
        return self.sync_inputs(pod, mirror_pod, pod_status), self._changes(uid)

    def _end_settling(self, pod: V1Pod, mirror_pod: Optional[V1Pod], begun: tuple, result) -> None:
        """Keep the sync's inputs if it changed nothing and depended on no clock: the next one may then be skipped."""
        uid = pod.metadata.uid
        inputs, changes = begun
        after = self._changes(uid)
        unchanged = changes[0] is after[0] and changes[1:] == after[1:]
        only_config = all(r.action == CONFIG_POD_SANDBOX and r.error is None for r in result.sync_results)
        needs_mirror = types.is_static_pod(pod) and self.mirror_client is not None and (
            mirror_pod is None or mirror_pod.metadata.deletion_timestamp is not None)
        if (unchanged and only_config and not needs_mirror and pod.spec.active_deadline_seconds is None
                and not self.is_pod_termination_requested(uid)):
            self.settled[uid] = inputs
    # --8<-- [end:settled]

    # --8<-- [start:backing_off]
    def _reasons(self, pod: V1Pod) -> tuple:
        """The reason cache's entries for the pod's containers (what the API status shows as their waiting reason)."""
        return tuple(self.reason_cache.get(pod.metadata.uid, c.name) for c in all_containers(pod))

    def _keep_back_off(self, pod: V1Pod, mirror_pod: Optional[V1Pod], pod_status: PodStatus, begun: tuple,
                       reasons: tuple, result, err: str) -> None:
        """Keep a sync that only refused crash-looping starts, left the reason cache as it was, and changed nothing else."""
        uid = pod.metadata.uid
        inputs, changes = begun
        after, cached = self._changes(uid), self.status_manager.pod_statuses.get(uid)
        recorded = [(e.involved, e.type, e.reason, e.message) for e in self.recorder.events[changes[2]:]]
        refused = [r.target for r in result.sync_results if r.action == START_CONTAINER and r.error == ERR_CRASH_LOOP_BACK_OFF]
        if not (refused and len(recorded) == len(refused) and all(e[2] == events.BACK_OFF_START_CONTAINER for e in recorded)
                and len(result.sync_results) == len(refused) + 1 and result.sync_results[0].action == CONFIG_POD_SANDBOX
                and result.sync_results[0].error is None
                and changes[0] is after[0] and changes[1] == after[1] and changes[3:] == after[3:]
                and cached is not None and cached.status.start_time is not None and reasons == self._reasons(pod)
                and pod.spec.active_deadline_seconds is None and not self.pod_sync_handlers
                and not (types.is_static_pod(pod) and self.mirror_client is not None)):
            return
        by_name = {c.name: c for c in all_containers(pod)}
        back_offs = []
        for name in refused:  # what doBackOff read: the newest exit's finish time and the key's delay
            exited = next(s for s in pod_status.container_statuses if s.name == name and s.state == CONTAINER_STATE_EXITED)
            key = get_stable_key(pod, by_name[name])
            back_offs.append((key, exited.finished_at, self.back_off.get(key)))
        self.backing_off[uid] = (inputs, back_offs, reasons, recorded, err)

    def _repeat_back_off(self, pod: V1Pod, mirror_pod: Optional[V1Pod], pod_status: PodStatus) -> Optional[str]:
        """The error of a sync that would refuse the same crash-looping starts as the kept one, once its events are recorded.

        With the same inputs, the same reason cache entries, the same back-off delays and each still running,
        SyncPod generates the same status (which the status manager already has), decides the same actions and
        refuses the same starts: only its BackOff events are new, at the new time. None if any of that differs.
        Upstream: none (an observation about pkg/kubelet/kubelet.go Kubelet.SyncPod while its containers back off)
        """
        uid = pod.metadata.uid
        kept = self.backing_off.pop(uid, None)
        if kept is None:
            return None
        inputs, back_offs, reasons, recorded, err = kept
        if (not self._same_inputs(inputs, pod, mirror_pod, pod_status) or self.is_pod_termination_requested(uid)
                or reasons != self._reasons(pod) or not all(
                    self.back_off.is_in_back_off_since(key, finished) and self.back_off.get(key) == delay
                    for key, finished, delay in back_offs)):
            return None
        for event in recorded:
            self.recorder.eventf(*event)
        self.backing_off[uid] = kept
        return err

    def repeats_until(self, pod: V1Pod, mirror_pod: Optional[V1Pod], pod_status: PodStatus) -> Optional[datetime]:
        """Until when a sync now would be `_repeat_back_off`'s repeat (the first of its back-offs to end), or None."""
        kept = self.backing_off.get(pod.metadata.uid) if self.skip_settled_resyncs else None
        if kept is None:
            return None
        inputs, back_offs, reasons, _, _ = kept
        if (not self._same_inputs(inputs, pod, mirror_pod, pod_status) or self.is_pod_termination_requested(pod.metadata.uid)
                or reasons != self._reasons(pod)):
            return None
        ends = [self.back_off.back_off_ends(key, finished) for key, finished, delay in back_offs
                if self.back_off.get(key) == delay]
        return None if len(ends) < len(back_offs) or None in ends else min(ends)
    # --8<-- [end:backing_off]

    def generate_api_pod_status(self, pod: V1Pod, pod_status: PodStatus, pod_is_terminal: bool):
        """Upstream: pkg/kubelet/kubelet_pods.go Kubelet.generateAPIPodStatus (old status from the status manager)"""
        return generate_api_pod_status(pod, pod_status, pod_is_terminal,
                                       old_status=self.status_manager.get_pod_status(pod.metadata.uid),
                                       reason_cache=self.reason_cache, pod_sync_handlers=self.pod_sync_handlers,
                                       readiness=self.readiness, startup=self.startup)

    # --8<-- [start:sync_pod]
    def sync_pod(self, ctx: Context, update_type: SyncPodType, pod: V1Pod, mirror_pod: Optional[V1Pod],
                 pod_status: PodStatus) -> bool:
        """Bring the pod towards its spec; True when it reached a terminal phase (the worker then terminates it).

        With RestartAllContainersOnContainerExits, a True AllContainersRestarting condition in the status just
        generated makes the runtime's SyncPod reset every container, and a reset that removed one asks the pod
        workers for another sync at once (UpdatePod merges it with any pending update, so it cannot loop).
        Upstream: pkg/kubelet/kubelet.go Kubelet.SyncPod (the gated part as a copy later than v1.36.0 reads)
        """
        if self.skip_settled_resyncs:
            repeated = self._repeat_back_off(pod, mirror_pod, pod_status)
            if repeated is not None:
                raise SyncError(repeated)
        begun = self._begin_settling(pod, mirror_pod, pod_status) if self.skip_settled_resyncs else None
        if self.resize is not None:  # the runtime gets the pod at its allocation, in its pod cgroup
            pod = self.allocation.update_pod_from_allocation(pod)[0]
            self._resize_in_progress(pod, pod_status)
        api_status = self.generate_api_pod_status(pod, pod_status, False)
        pod_status.ips = [ip.ip for ip in api_status.pod_ips or []]
        if api_status.phase in ("Succeeded", "Failed"):  # nothing more to run: the worker terminates the pod
            self.status_manager.set_pod_status(pod, api_status)
            return True
        self.status_manager.set_pod_status(pod, api_status)
        if types.is_static_pod(pod) and self.mirror_client is not None:
            deleted = False
            if mirror_pod is not None and mirror_pod.metadata.deletion_timestamp is not None:
                # someone deleted it through the API: delete it for good (by UID) and make a new one; a mirror pod
                # already gone (a stale update) is NotFound, and then nothing is created
                deleted = self.mirror_client.delete_mirror_pod(mirror_pod)
            if mirror_pod is None or deleted:
                self.mirror_client.create_mirror_pod(pod)
        restarting_all = features.DEFAULT_FEATURE_GATE.enabled("RestartAllContainersOnContainerExits") and any(
            c.type == "AllContainersRestarting" and c.status == "True" for c in api_status.conditions or [])
        if self.resize is not None:
            self.resize.pod_cgroups.ensure_exists(pod)
        result = sync_pod(self.runtime, pod, pod_status, self.back_off, self.recorder, liveness=self.liveness,
                          startup=self.startup, termination_requested=self.is_pod_termination_requested(pod.metadata.uid),
                          restarting_all_containers=restarting_all, resize=self.resize)
        if self.resize is not None:
            self._resize_errors(pod, result)
        if restarting_all and result.error() is None and self.update_pod is not None and any(
                r.action == REMOVE_CONTAINER and r.error is None for r in result.sync_results):
            # the reset is done: sync again at once (that sync clears the condition and starts the init containers)
            self.update_pod(UpdatePodOptions(update_type=SyncPodType.SYNC, pod=pod, mirror_pod=mirror_pod))
        err = result.error()
        reasons = self._reasons(pod) if begun is not None and err is not None else ()  # as the update finds them
        self.reason_cache.update(pod.metadata.uid, result)
        if err is not None:
            # v1.27 quirk: any result without that error (a successful ConfigPodSandbox, say) returns the error,
            # so a crash-looping pod is retried after the worker's back-off period, not its resync interval
            for r in result.sync_results:
                if r.error not in (ERR_CRASH_LOOP_BACK_OFF, ERR_IMAGE_PULL_BACK_OFF):
                    if begun is not None:
                        self._keep_back_off(pod, mirror_pod, pod_status, begun, reasons, result, err)
                    raise SyncError(err)
        if begun is not None:
            self._end_settling(pod, mirror_pod, begun, result)
        return False
    # --8<-- [end:sync_pod]

    # --8<-- [start:resize_in_progress]
    def _resize_in_progress(self, pod: V1Pod, pod_status: PodStatus) -> None:
        """Before anything else: PodResizeInProgress while a running container is not at its allocation, else cleared
        (with the event ResizeCompleted). The runtime's sync that applies a resize comes after this check, so the
        condition stays until the pod's next sync.

        Upstream: pkg/kubelet/kubelet.go Kubelet.SyncPod (its first InPlacePodVerticalScaling block, v1.36.5)
        """
        uid = pod.metadata.uid
        if is_pod_resize_in_progress(pod, pod_status, self.resize.actuated):
            self.status_manager.set_pod_resize_in_progress_condition(uid, "", "", pod.metadata.generation or 0)
            return
        generation, cleared = self.status_manager.clear_pod_resize_in_progress_condition(uid)
        if cleared:
            self.recorder.eventf(f"{pod.metadata.namespace}/{pod.metadata.name}", events.NORMAL, events.RESIZE_COMPLETED,
                                 events.pod_resize_completed_msg(pod, generation))

    def _resize_errors(self, pod: V1Pod, result) -> None:
        """After the runtime's sync: a resize that failed sets PodResizeInProgress, reason Error (a Warning
        ResizeError event when that changed the condition).

        Upstream: pkg/kubelet/kubelet.go Kubelet.SyncPod (its last InPlacePodVerticalScaling block, v1.36.5)
        """
        for r in result.sync_results:
            if r.action == RESIZE_POD_IN_PLACE and r.error:
                generation, updated = self.status_manager.set_pod_resize_in_progress_condition(
                    pod.metadata.uid, POD_REASON_ERROR, r.message, pod.metadata.generation or 0)
                if updated:
                    self.recorder.eventf(f"{pod.metadata.namespace}/{pod.metadata.name}", events.WARNING,
                                         events.RESIZE_ERROR, events.pod_resize_error_msg(pod, generation, r.message))
    # --8<-- [end:resize_in_progress]

    # --8<-- [start:sync_terminating_pod]
    def sync_terminating_pod(self, ctx: Context, pod: V1Pod, pod_status: PodStatus, grace_period: Optional[int],
                             pod_status_fn) -> None:
        """Stop every container with the effective grace period, then record the pod's terminal status.

        Upstream: pkg/kubelet/kubelet.go Kubelet.SyncTerminatingPod
        """
        api_status = self.generate_api_pod_status(pod, pod_status, False)
        if pod_status_fn is not None:
            pod_status_fn(api_status)
        self.status_manager.set_pod_status(pod, api_status)
        self._stop_liveness_and_startup(pod_status)
        self.kill_pod(pod, convert_pod_status_to_running_pod(pod_status), grace_period)
        pod_status = self.runtime.get_pod_status(pod.metadata.uid, pod.metadata.name, pod.metadata.namespace)
        running = [s.id for s in pod_status.container_statuses if s.state == CONTAINER_STATE_RUNNING]
        if running:
            raise SyncError(f"detected running containers after a successful KillPod, CRI violation: {running}")
        self.status_manager.set_pod_status(pod, self.generate_api_pod_status(pod, pod_status, True))
    # --8<-- [end:sync_terminating_pod]

    def sync_terminating_runtime_pod(self, ctx: Context, running_pod: container.Pod) -> None:
        """Stop a pod known only to the runtime, with a grace period of 1 s.

        Upstream: pkg/kubelet/kubelet.go Kubelet.SyncTerminatingRuntimePod
        """
        self.kill_pod(_to_api_pod(running_pod), running_pod, 1)  # runningPod.ToAPIPod

    def sync_terminated_pod(self, ctx: Context, pod: V1Pod, pod_status: PodStatus) -> None:
        """Record the final status once nothing runs (volumes and cgroups are not modelled).

        Upstream: pkg/kubelet/kubelet.go Kubelet.SyncTerminatedPod
        """
        self.status_manager.set_pod_status(pod, self.generate_api_pod_status(pod, pod_status, True))
        self.status_manager.terminate_pod(pod)

    def kill_pod(self, pod: V1Pod, running_pod: container.Pod, grace_period_override: Optional[int]) -> None:
        """Stop the pod's containers and sandboxes; a SyncError if any step failed.

        Upstream: pkg/kubelet/kubelet_pods.go Kubelet.killPod (the runtime's KillPod)
        """
        self.kills.append((pod, grace_period_override))
        result = kill_pod_with_sync_result(self.runtime, pod, running_pod, grace_period_override, self.recorder)
        err = result.error()
        if err is not None:
            self.recorder.eventf(f"{pod.metadata.namespace}/{pod.metadata.name}", events.WARNING, FAILED_TO_KILL_POD,
                                 f"error killing pod: {err}")
            raise SyncError(err)

    def _stop_liveness_and_startup(self, pod_status: PodStatus) -> None:
        """Upstream: pkg/kubelet/prober/prober_manager.go manager.StopLivenessAndStartup"""
        for s in pod_status.container_statuses:
            self.liveness.pop(s.id, None)
            self.startup.pop(s.id, None)
