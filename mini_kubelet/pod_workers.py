"""Pod workers: one worker per pod UID, taking it from syncing to terminating, terminated and finished.

Upstream: pkg/kubelet/pod_workers.go
Go runs one goroutine per UID, woken through a one-slot channel. Here a worker is a record: UpdatePod
leaves a pending update and sets the worker's notification flag, and run_pending() runs every notified
worker once, in the order the workers were created, until none is left to run at this instant. A worker
whose sync must wait for a newer runtime status (podCache.GetNewerThan) waits for the cache to call it back;
the PLEG's next relist does. Syncs run to completion in no virtual time, so a sync is cancelled (its
context) only when an update arrives from inside it.

Requeue delays use wait.Jitter(d, 0.5) = d + rand()*0.5*d; `rand` is injectable and defaults to 0, the
lower bound, so a run is deterministic (upstream draws from math/rand).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable, Optional

from kubernetes.client import V1Pod

from . import container, types
from .clock import Clock
from .container_cache import Cache, Data
from .pod_worker_loop import PodWorkerLoop
from .pod_worker_types import (  # noqa: F401  (the pod workers' vocabulary, importable from here too)
    BACK_OFF_ON_TRANSIENT_ERROR_PERIOD, BACK_OFF_PERIOD, NETWORK_NOT_READY_ERROR_MSG, RESYNC_INTERVAL,
    WORKER_BACK_OFF_PERIOD_JITTER_FACTOR, WORKER_RESYNC_INTERVAL_JITTER_FACTOR, Context, ContextCanceled, phase_of,
    KillPodOptions, PodSyncer, PodSyncStatus, PodWork, PodWorkerState, PodWorkerSync, UpdatePodOptions,
    calculate_effective_grace_period, is_pod_status_cache_terminal, jitter)
from .types import SyncPodType
from .work_queue import BasicWorkQueue


class _Workers(dict):
    """pod_updates: a worker per UID and whether it is notified, kept with the notified UIDs and the workers' order.

    Go's scheduler finds the goroutines with something to do at no cost; here the notified set and the creation
    order stand in for that, so that finding the workers to run does not look at every worker.
    """

    def __init__(self):
        super().__init__()
        self.notified: set[str] = set()
        self.order: dict[str, int] = {}  # uid -> when its worker started (the dict's order)
        self._started = 0

    def __setitem__(self, uid: str, notified: bool) -> None:
        if uid not in self:
            self._started += 1
            self.order[uid] = self._started
        super().__setitem__(uid, notified)
        if notified:
            self.notified.add(uid)
        else:
            self.notified.discard(uid)

    def __delitem__(self, uid: str) -> None:
        super().__delitem__(uid)
        self.notified.discard(uid)
        del self.order[uid]

    def pop(self, uid: str, *default):
        if uid in self:
            self.notified.discard(uid)
            del self.order[uid]
        return super().pop(uid, *default)

    def clear(self) -> None:
        super().clear()
        self.notified.clear()
        self.order.clear()


class _Statuses(dict):
    """pod_sync_statuses, with a count of the UIDs coming and going and of workers becoming terminating or terminated.

    A reader that saw the same count saw the same workers, each as able (or not) to have running containers and
    as asked (or not) to terminate.
    """

    def __init__(self):
        super().__init__()
        self.changes = 0

    def __setitem__(self, uid: str, status: PodSyncStatus) -> None:
        self.changes += 1
        super().__setitem__(uid, status)

    def __delitem__(self, uid: str) -> None:
        self.changes += 1
        super().__delitem__(uid)

    def pop(self, uid: str, *default):
        self.changes += 1
        return super().pop(uid, *default)

    def clear(self) -> None:
        self.changes += 1
        super().clear()


# --8<-- [start:pod_workers]
class PodWorkers(PodWorkerLoop):
    """The source of truth for which pods may have running containers, one worker per UID.

    Upstream: pkg/kubelet/pod_workers.go podWorkers (newPodWorkers)
    """

    def __init__(self, pod_syncer: PodSyncer, work_queue: BasicWorkQueue, pod_cache: Cache, clock: Clock, *,
                 resync_interval: float = RESYNC_INTERVAL, back_off_period: float = BACK_OFF_PERIOD,
                 rand: Callable[[], float] = lambda: 0.0):
        self.pod_syncer, self.work_queue, self.pod_cache, self.clock = pod_syncer, work_queue, pod_cache, clock
        self.resync_interval, self.back_off_period, self.rand = resync_interval, back_off_period, rand
        self.pods_synced = False
        self.pod_updates: dict[str, bool] = _Workers()  # a worker per UID; True: notified (Go's 1-slot channel is full)
        self.pod_sync_statuses: dict[str, PodSyncStatus] = _Statuses()
        self.started_static_pods_by_fullname: dict[str, str] = {}
        self.waiting_to_start_static_pods_by_fullname: dict[str, list[str]] = {}
        self.last_sync_time: dict[str, Optional[datetime]] = {}  # each worker goroutine's lastSyncTime
        self.waiting: dict[str, list] = {}  # workers blocked in GetNewerThan: [ctx, work, data or None]
        self.delivered: set[str] = set()  # waiting workers the cache has answered (their data is in)
        self.restarts_requested: set[str] = set()  # the UIDs whose worker status was ever set restart_requested
        self.log: list[str] = []
        self.events: list = []  # (pod, (type, reason, message)) as the event recorder writes them

    # -- queries other parts of the kubelet ask --
    def any_restart_requested(self) -> bool:
        """Whether a worker's status asks for a restart; read only where one was ever asked, and forgotten once gone."""
        statuses = self.pod_sync_statuses
        restarts = self.restarts_requested = {uid for uid in self.restarts_requested if uid in statuses}
        return any(statuses[uid].restart_requested for uid in restarts)

    def is_pod_known_terminated(self, uid: str) -> bool:
        """Upstream: podWorkers.IsPodKnownTerminated"""
        status = self.pod_sync_statuses.get(uid)
        return status is not None and status.is_terminated()

    def could_have_running_containers(self, uid: str) -> bool:
        """Upstream: podWorkers.CouldHaveRunningContainers (unknown pods: true until SyncKnownPods ran)"""
        status = self.pod_sync_statuses.get(uid)
        return not status.is_terminated() if status else not self.pods_synced

    def should_pod_be_finished(self, uid: str) -> bool:
        """Upstream: podWorkers.ShouldPodBeFinished"""
        status = self.pod_sync_statuses.get(uid)
        return status.finished if status else self.pods_synced

    def is_pod_termination_requested(self, uid: str) -> bool:
        """Upstream: podWorkers.IsPodTerminationRequested (unknown pods: false)"""
        status = self.pod_sync_statuses.get(uid)
        return status is not None and status.is_termination_requested()

    def should_pod_containers_be_terminating(self, uid: str) -> bool:
        """Upstream: podWorkers.ShouldPodContainersBeTerminating"""
        status = self.pod_sync_statuses.get(uid)
        return status.started_terminating if status else self.pods_synced

    def should_pod_runtime_be_removed(self, uid: str) -> bool:
        """Upstream: podWorkers.ShouldPodRuntimeBeRemoved"""
        status = self.pod_sync_statuses.get(uid)
        return status.is_terminated() if status else self.pods_synced

    def should_pod_content_be_removed(self, uid: str) -> bool:
        """Upstream: podWorkers.ShouldPodContentBeRemoved"""
        status = self.pod_sync_statuses.get(uid)
        return (status.evicted or (status.deleted and status.is_terminated())) if status else self.pods_synced

    def is_pod_for_mirror_pod_terminating_by_full_name(self, fullname: str) -> bool:
        """Upstream: podWorkers.IsPodForMirrorPodTerminatingByFullName"""
        status = self.pod_sync_statuses.get(self.started_static_pods_by_fullname.get(fullname, ""))
        return status is not None and status.is_termination_requested() and not status.is_terminated()

    # -- UpdatePod --
    def update_pod(self, options: UpdatePodOptions) -> None:
        """Hand a worker its next state; the latest pending update wins, a kill is never forgotten.

        Upstream: pkg/kubelet/pod_workers.go podWorkers.UpdatePod
        """
        is_runtime_pod = False
        if options.running_pod is not None:
            if options.pod is None:
                if options.update_type != SyncPodType.KILL:
                    self.log.append("Pod update is ignored, runtime pods can only be killed")
                    return
                uid, ns, name = options.running_pod.id, options.running_pod.namespace, options.running_pod.name
                is_runtime_pod = True
            else:
                options.running_pod = None
                uid, ns, name = options.pod.metadata.uid, options.pod.metadata.namespace, options.pod.metadata.name
        else:
            uid, ns, name = options.pod.metadata.uid, options.pod.metadata.namespace, options.pod.metadata.name
        now, first_time = self.clock.now(), False
        status = self.pod_sync_statuses.get(uid)
        if status is None:
            first_time = True
            status = PodSyncStatus(synced_at=now, fullname=f"{name}_{ns or ''}")
            if options.pod is not None and phase_of(options.pod) in ("Failed", "Succeeded"):
                cached = self.pod_cache.get(uid)  # a terminal pod seen after a kubelet restart
                if cached.err is None and is_pod_status_cache_terminal(cached.status):
                    status = PodSyncStatus(terminated_at=now, terminating_at=now, synced_at=now,
                                           started_terminating=True, fullname=f"{name}_{ns or ''}")
            self.pod_sync_statuses[uid] = status
        pod = options.pod
        if is_runtime_pod:
            status.observed_runtime = True
            if status.pending_update is not None and status.pending_update.pod is not None:
                pod = options.pod = status.pending_update.pod
                options.running_pod = None
            elif status.active_update is not None and status.active_update.pod is not None:
                pod = options.pod = status.active_update.pod
                options.running_pod = None
            else:
                pod = _to_api_pod(options.running_pod)
        if not first_time and status.is_termination_requested() and options.update_type == SyncPodType.CREATE:
            status.restart_requested = True  # a new pod with the UID of a terminating one: restarted later
            self.restarts_requested.add(uid)
            return
        if status.finished:
            return  # a finished UID takes no more updates until SyncKnownPods forgets it
        became_terminating = False
        if not status.is_termination_requested():
            if is_runtime_pod or pod.metadata.deletion_timestamp is not None:
                status.deleted, status.terminating_at, became_terminating = True, now, True
            elif phase_of(pod) in ("Failed", "Succeeded"):
                status.terminating_at, became_terminating = now, True
            elif options.update_type == SyncPodType.KILL:
                if options.kill_pod_options is not None and options.kill_pod_options.evict:
                    status.evicted = True
                status.terminating_at, became_terminating = now, True
        if became_terminating:
            self.pod_sync_statuses.changes += 1  # a worker that was syncing is terminating
        was_grace_period_shortened = False
        if status.is_terminated():
            if is_runtime_pod:
                return  # a stale runtime kill while the worker finishes: ignored
            if options.kill_pod_options is not None and options.kill_pod_options.completed:
                options.kill_pod_options.completed()
            options.kill_pod_options = None
        elif status.is_termination_requested():
            if options.kill_pod_options is None:
                options.kill_pod_options = KillPodOptions()
            if options.kill_pod_options.completed:
                status.notify_post_terminating.append(options.kill_pod_options.completed)
            if options.kill_pod_options.pod_status_func:
                status.status_post_terminating.append(options.kill_pod_options.pod_status_func)
            grace_period, was_grace_period_shortened = calculate_effective_grace_period(
                status, pod, options.kill_pod_options)
            status.grace_period = grace_period
            options.kill_pod_options.pod_termination_grace_period_seconds_override = grace_period
        elif options.kill_pod_options is not None:  # kill options mean nothing outside termination
            if options.kill_pod_options.completed:
                options.kill_pod_options.completed()
            options.kill_pod_options = None
        if uid not in self.pod_updates:  # start the worker
            self.pod_updates[uid], self.last_sync_time[uid] = False, None
            if types.is_static_pod(pod):  # static pods start in the order UpdatePod saw them
                self.waiting_to_start_static_pods_by_fullname.setdefault(status.fullname, []).append(uid)
        if (status.pending_update is not None and status.pending_update.start_time is not None
                and options.start_time is not None and status.pending_update.start_time < options.start_time):
            options.start_time = status.pending_update.start_time
        status.pending_update, status.working = options, True
        self.pod_updates[uid] = True
        if (became_terminating or was_grace_period_shortened) and status.ctx is not None:
            status.ctx.cancel()
# --8<-- [end:pod_workers]

    # -- starting a pod --
    def allow_pod_start(self, pod: V1Pod) -> tuple[bool, bool]:
        """(can start now, can ever start): a static pod waits while another UID holds its full name.

        Upstream: pkg/kubelet/pod_workers.go podWorkers.allowPodStart
        """
        if not types.is_static_pod(pod):
            return True, True
        status = self.pod_sync_statuses.get(pod.metadata.uid)
        if status is None or status.is_termination_requested():
            return False, False
        if not self.allow_static_pod_start(status.fullname, pod.metadata.uid):
            self.work_queue.enqueue(pod.metadata.uid, jitter(
                self.back_off_period, WORKER_BACK_OFF_PERIOD_JITTER_FACTOR, self.rand))
            return False, True
        return True, True

    def allow_static_pod_start(self, fullname: str, uid: str) -> bool:
        """Only the first live UID waiting for a full name starts; it then holds the name.

        Upstream: pkg/kubelet/pod_workers.go podWorkers.allowStaticPodStart
        """
        if fullname in self.started_static_pods_by_fullname:
            return self.started_static_pods_by_fullname[fullname] == uid
        waiting = self.waiting_to_start_static_pods_by_fullname.get(fullname, [])
        for i, waiting_uid in enumerate(waiting):
            status = self.pod_sync_statuses.get(waiting_uid)
            if status is None or status.is_termination_requested() or status.is_terminated():
                continue
            if waiting_uid != uid:
                self.waiting_to_start_static_pods_by_fullname[fullname] = waiting[i:]
                return False
            waiting = waiting[i + 1:]
            break
        if waiting:
            self.waiting_to_start_static_pods_by_fullname[fullname] = waiting
        else:
            self.waiting_to_start_static_pods_by_fullname.pop(fullname, None)
        self.started_static_pods_by_fullname[fullname] = uid
        return True

    def cleanup_unstarted_pod(self, pod: V1Pod, status: PodSyncStatus) -> None:
        """A pod terminated before it started: finished at once. Upstream: podWorkers.cleanupUnstartedPod"""
        self.cleanup_pod_updates(pod.metadata.uid)
        status.finished, status.working, status.terminated_at = True, False, self.clock.now()
        self.pod_sync_statuses.changes += 1
        if self.started_static_pods_by_fullname.get(status.fullname) == pod.metadata.uid:
            del self.started_static_pods_by_fullname[status.fullname]

    def start_pod_sync(self, uid: str):
        """Take the pending update and decide whether the pod may start: (ctx, work, can_start, can_ever, ok).

        Upstream: pkg/kubelet/pod_workers.go podWorkers.startPodSync
        """
        status = self.pod_sync_statuses.get(uid)
        if status is None or status.pending_update is None:
            if status is not None:
                status.working = False
            return None, None, False, False, False
        work = PodWork(status.work_type(), status.pending_update)
        status.pending_update = None
        if status.ctx is None or status.ctx.cancelled:
            status.ctx = Context()
        ctx, options = status.ctx, work.options
        if status.is_started() or (options.running_pod is not None and work.work_type == PodWorkerState.TERMINATING_POD):
            status.merge_last_update(options)
            return ctx, work, True, True, True
        if options.pod is None:  # a runtime-only pod can never start
            status.merge_last_update(options)
            return ctx, work, False, False, True
        can_start, can_ever_start = self.allow_pod_start(options.pod)
        if not can_ever_start:
            self.cleanup_unstarted_pod(options.pod, status)
            return ctx, work, can_start, can_ever_start, True
        if not can_start:
            status.pending_update, status.working = options, False  # put the update back
            return ctx, work, can_start, can_ever_start, True
        status.started_at = self.clock.now()
        status.merge_last_update(options)
        return ctx, work, True, True, True

    # -- resyncs that cannot change anything --
    def resync_if_settled(self, pod: V1Pod, mirror_pod: Optional[V1Pod]) -> bool:
        """Do what a SYNC update of an idle worker would do, without SyncPod, when SyncPod would change nothing.

        The pod syncer says whether its last sync of the pod changed nothing and nothing it reads has changed
        since (`is_settled`). Then the whole round (UpdatePod, the wait for a newer cached status, SyncPod,
        completeWork) comes to: the sync time is now and the next resync is queued. True if that was done;
        False (nothing done) if the worker is busy, the pod is going away, or the syncer is not sure.
        Upstream: none (the outcome of pkg/kubelet/pod_workers.go UpdatePod, podWorkerLoop and completeWork)
        """
        uid = pod.metadata.uid
        is_settled = getattr(self.pod_syncer, "is_settled", None)
        data = self.idle_worker_data(pod, mirror_pod) if is_settled is not None else None
        if data is None or not is_settled(pod, mirror_pod, data.status):
            return False
        self.last_sync_time[uid] = self.clock.now()
        self.complete_work(uid, False, None)
        return True

    def idle_worker_data(self, pod: V1Pod, mirror_pod: Optional[V1Pod], relisted: bool = False) -> Optional[Data]:
        """The cached status a SYNC update would be synced with, if the worker is idle and would only sync it.

        None if the worker is busy or waiting, the pod is going away, the update would change the worker's
        state (a new context, another pod object) or the cache has nothing newer than the last sync (an error
        in it counts as nothing). `relisted`: at a sync tick after a relist, when the cache is newer anyway.
        Upstream: none (what pkg/kubelet/pod_workers.go UpdatePod and startPodSync would find)
        """
        uid = pod.metadata.uid
        status = self.pod_sync_statuses.get(uid)
        if (status is None or self.pod_updates.get(uid, True) or status.working
                or status.pending_update is not None or status.started_at is None or status.terminating_at is not None
                or status.finished or uid in self.waiting or pod.metadata.deletion_timestamp is not None
                or self.rand is not _DEFAULT_RAND or phase_of(pod) in ("Failed", "Succeeded")):
            return None
        active = status.active_update
        if (active is None or active.pod is not pod or active.running_pod is not None
                or (mirror_pod is not None and mirror_pod is not active.mirror_pod)
                or status.ctx is None or status.ctx.cancelled):  # startPodSync would make a new context
            return None
        data = self.pod_cache.pods.get(uid) if relisted else self.pod_cache.get_if_newer_than(uid, self.last_sync_time[uid])
        return None if data is None or data.err is not None else data

    # -- housekeeping --
    def sync_known_pods(self, desired_pods: list[V1Pod]) -> dict[str, PodWorkerSync]:
        """Forget finished pods no longer desired, terminate orphans, and report every other worker.

        Upstream: pkg/kubelet/pod_workers.go podWorkers.SyncKnownPods
        """
        known = {pod.metadata.uid for pod in desired_pods}
        self.pods_synced = True
        workers = {}
        for uid, status in list(self.pod_sync_statuses.items()):
            orphan = uid not in known
            if (status.restart_requested or orphan) and self.remove_terminated_worker(uid, status, orphan):
                continue
            sync = PodWorkerSync(status.work_type(), orphan=orphan)
            update = status.active_update or status.pending_update
            if update is not None and update.pod is not None:
                sync.has_config, sync.static = True, types.is_static_pod(update.pod)
            workers[uid] = sync
        return workers

    def remove_terminated_worker(self, uid: str, status: PodSyncStatus, orphaned: bool) -> bool:
        """Forget a finished worker; drive an orphaned unfinished one to termination. True when removed.

        Upstream: pkg/kubelet/pod_workers.go podWorkers.removeTerminatedWorker
        """
        if not status.finished:
            if not orphaned:
                return False
            status.deleted = True
            if not status.is_started() and not status.observed_runtime:
                pass  # never started: safe to forget now
            elif not status.is_termination_requested():
                status.terminating_at = self.clock.now()
                self.pod_sync_statuses.changes += 1
                if status.active_update is not None and status.active_update.pod is not None:
                    status.grace_period, _ = calculate_effective_grace_period(status, status.active_update.pod, None)
                else:
                    status.grace_period = 1
                self.requeue_last_pod_update(uid, status)
                return False
            else:
                self.requeue_last_pod_update(uid, status)
                return False
        del self.pod_sync_statuses[uid]
        self.cleanup_pod_updates(uid)
        if self.started_static_pods_by_fullname.get(status.fullname) == uid:
            del self.started_static_pods_by_fullname[status.fullname]
        return True

    def cleanup_pod_updates(self, uid: str) -> None:
        """Close a worker's channel: the worker stops. Upstream: podWorkers.cleanupPodUpdates"""
        self.pod_updates.pop(uid, None)
        self.waiting.pop(uid, None)

    def requeue_last_pod_update(self, uid: str, status: PodSyncStatus) -> None:
        """Replay the last update, unless one is pending already. Upstream: podWorkers.requeueLastPodUpdate"""
        if status.pending_update is not None or status.active_update is None:
            return
        status.pending_update, status.working = copy.copy(status.active_update), True
        if uid in self.pod_updates:
            self.pod_updates[uid] = True


_DEFAULT_RAND = PodWorkers.__init__.__kwdefaults__["rand"]  # no jitter: every delay is its lower bound


def _to_api_pod(running_pod: container.Pod) -> V1Pod:
    """A placeholder API pod for a runtime-only pod. Upstream: pkg/kubelet/container/runtime.go Pod.ToAPIPod"""
    from kubernetes.client import V1ObjectMeta, V1PodSpec
    return V1Pod(metadata=V1ObjectMeta(uid=running_pod.id, name=running_pod.name, namespace=running_pod.namespace),
                 spec=V1PodSpec(containers=[]))


# --8<-- [start:kill_pod_now]
KILL_POD_NOW_MIN_TIMEOUT = 10  # seconds: killPodNow's minTimeout, the shortest it waits for a kill


@dataclass
class KillRequest:
    """What killPodNow waits for: done once the pod is terminated, or an error after the timeout.

    Upstream: pkg/kubelet/pod_workers.go killPodNow (its completion channel and timeout)
    """

    timeout: timedelta
    done: bool = False


def kill_pod_now(pod_workers: PodWorkers) -> Callable[..., KillRequest]:
    """A function that asks the workers to kill a pod, with the timeout its caller would wait.

    Upstream: pkg/kubelet/pod_workers.go killPodNow
    Go blocks until the kill completes or 1.5 × the override (the Pod's grace period only without one), at
    least 10 s, has passed; here the caller gets the request back and the clock decides (the timeout's event
    is ExceededGracePeriod). A v1.27 hard eviction's override is 0: 10 s.
    """
    def kill(pod: V1Pod, is_evicted: bool, grace_period_override: Optional[int], status_fn=None) -> KillRequest:
        """Upstream: eviction.KillPodFunc, as killPodNow builds it"""
        grace_period = grace_period_override if grace_period_override is not None else (
            pod.spec.termination_grace_period_seconds or 0)
        request = KillRequest(timedelta(seconds=max(grace_period + grace_period // 2, KILL_POD_NOW_MIN_TIMEOUT)))
        pod_workers.update_pod(UpdatePodOptions(update_type=SyncPodType.KILL, pod=pod, kill_pod_options=KillPodOptions(
            completed=lambda: setattr(request, "done", True), evict=is_evicted, pod_status_func=status_fn,
            pod_termination_grace_period_seconds_override=grace_period_override)))
        return request
    return kill
# --8<-- [end:kill_pod_now]
