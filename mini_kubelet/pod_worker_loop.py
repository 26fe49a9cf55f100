"""The pod worker loop: each worker takes its pending update, waits for a fresh runtime status, syncs, moves on.

Upstream: pkg/kubelet/pod_workers.go (podWorkerLoop, acknowledgeTerminating, completeSync,
completeTerminating, completeTerminatingRuntimePod, completeTerminated, completeWork)
Mixed into mini_kubelet.pod_workers.PodWorkers, whose state these methods read and write. Go runs this loop
in one goroutine per UID; run_pending() runs every worker that has something to do, one turn each, in the
order the workers were created, until none has.
"""

from __future__ import annotations

from typing import Iterable, Optional

from .container_cache import Data
from .pod_worker_types import (NETWORK_NOT_READY_ERROR_MSG, WORKER_BACK_OFF_PERIOD_JITTER_FACTOR,
                               WORKER_RESYNC_INTERVAL_JITTER_FACTOR, BACK_OFF_ON_TRANSIENT_ERROR_PERIOD, Context,
                               ContextCanceled, PodWork, PodWorkerState, jitter)


class PodWorkerLoop:
    """The turn of one worker, and what completing each lifecycle step does.

    Upstream: pkg/kubelet/pod_workers.go podWorkers.podWorkerLoop
    """

    def run_pending(self, limit: int = 10_000, held: Iterable[str] = ()) -> int:
        """Run every worker that has something to do now, until none has; return how many turns ran.

        Upstream: pkg/kubelet/pod_workers.go podWorkerLoop (each goroutine's `for range podUpdates`)
        `held` workers are not run, as upstream's tests hold a worker's channel (workerChannelFn).
        """
        if not self.pod_updates.notified and not self.delivered:  # no worker has anything to do
            return 0
        turns, held = 0, set(held)
        while True:
            candidates = self.pod_updates.notified | self.delivered  # the others have nothing to do
            self.delivered = {uid for uid in self.delivered if uid in self.waiting}
            ready = sorted((uid for uid in candidates if uid in self.pod_updates and uid not in held and (
                self.waiting[uid][2] is not None if uid in self.waiting else self.pod_updates[uid])),
                key=self.pod_updates.order.__getitem__)
            if not ready:
                return turns
            for uid in ready:
                if uid in self.waiting:
                    ctx, work, data = self.waiting.pop(uid)
                    self._sync(uid, ctx, work, data)
                elif self.pod_updates.get(uid):
                    self._receive(uid)
                turns += 1
                if turns > limit:
                    raise RuntimeError("pod workers did not settle")

    def _receive(self, uid: str) -> None:
        """Take the notification: start the sync at once (a runtime pod) or wait for a newer cached status."""
        self.pod_updates[uid] = False  # the notification is consumed
        ctx, work, can_start, can_ever_start, ok = self.start_pod_sync(uid)
        if not ok or not can_ever_start or not can_start:
            return
        if work.options.running_pod is not None:
            self._sync(uid, ctx, work, None)
            return
        entry = [ctx, work, None]  # wait for a status newer than the last sync (the next relist)
        self.waiting[uid] = entry

        def deliver(data: Data) -> None:
            entry[2] = data
            self.delivered.add(uid)
        self.pod_cache.subscribe(uid, self.last_sync_time[uid], deliver)

    def _sync(self, uid: str, ctx: Context, work: PodWork, data: Optional[Data]) -> None:
        """One sync of the worker's current state; data is the cached runtime status (None for a runtime pod)."""
        options, is_terminal, err = work.options, False, None
        if data is not None and data.err is not None:  # the PLEG could not read the pod's status
            self.events.append((options.pod, ("Warning", "FailedSync", f"error determining status: {data.err}")))
            err = data.err  # the last sync time stays as it was
        else:
            status = data.status if data is not None else None
            try:
                if work.work_type == PodWorkerState.TERMINATED_POD:
                    self.pod_syncer.sync_terminated_pod(ctx, options.pod, status)
                elif work.work_type == PodWorkerState.TERMINATING_POD:
                    kill = options.kill_pod_options
                    grace_period = kill.pod_termination_grace_period_seconds_override if kill else None
                    status_fn = self.acknowledge_terminating(uid)
                    if options.running_pod is not None:
                        self.pod_syncer.sync_terminating_runtime_pod(ctx, options.running_pod)
                    else:
                        self.pod_syncer.sync_terminating_pod(ctx, options.pod, status, grace_period, status_fn)
                else:
                    is_terminal = self.pod_syncer.sync_pod(ctx, options.update_type, options.pod, options.mirror_pod,
                                                           status)
            except Exception as error:  # noqa: BLE001  (a sync's error is the worker's to retry)
                err = error
            self.last_sync_time[uid] = self.clock.now()
        phase_transition = False
        if isinstance(err, ContextCanceled):
            self.log.append("Sync exited with context cancellation error")
        elif err is not None:
            self.log.append(f"Error syncing pod, skipping: {err}")
        elif work.work_type == PodWorkerState.TERMINATED_POD:
            self.complete_terminated(uid)
            return
        elif work.work_type == PodWorkerState.TERMINATING_POD:
            if options.running_pod is not None:
                self.complete_terminating_runtime_pod(uid)
                return
            self.complete_terminating(uid)
            phase_transition = True
        elif is_terminal:
            self.complete_sync(uid)
            phase_transition = True
        self.complete_work(uid, phase_transition, err)

    def acknowledge_terminating(self, uid: str):
        """Note that the worker saw the termination; return the latest kill's status function.

        Upstream: pkg/kubelet/pod_workers.go podWorkers.acknowledgeTerminating
        """
        status = self.pod_sync_statuses.get(uid)
        if status is None:
            return None
        if status.terminating_at is not None:
            status.started_terminating = True
        return status.status_post_terminating[-1] if status.status_post_terminating else None

    def complete_sync(self, uid: str) -> None:
        """SyncPod said the pod is terminal: start terminating. Upstream: podWorkers.completeSync"""
        status = self.pod_sync_statuses.get(uid)
        if status is None:
            return
        if status.terminating_at is None:
            status.terminating_at = self.clock.now()
            self.pod_sync_statuses.changes += 1
        status.started_terminating = True
        self.requeue_last_pod_update(uid, status)

    def complete_terminating(self, uid: str) -> None:
        """No container runs any more: terminated. Upstream: podWorkers.completeTerminating"""
        status = self.pod_sync_statuses.get(uid)
        if status is None:
            return
        status.terminated_at = self.clock.now()
        self.pod_sync_statuses.changes += 1  # a worker that could have running containers no longer can
        for completed in status.notify_post_terminating:
            completed()
        status.notify_post_terminating, status.status_post_terminating = [], []
        self.requeue_last_pod_update(uid, status)

    def complete_terminating_runtime_pod(self, uid: str) -> None:
        """An orphaned runtime pod is stopped: forget it. Upstream: podWorkers.completeTerminatingRuntimePod"""
        self.cleanup_pod_updates(uid)
        status = self.pod_sync_statuses.pop(uid, None)
        if status is not None and self.started_static_pods_by_fullname.get(status.fullname) == uid:
            del self.started_static_pods_by_fullname[status.fullname]

    def complete_terminated(self, uid: str) -> None:
        """SyncTerminatedPod succeeded: the worker is finished. Upstream: podWorkers.completeTerminated"""
        self.cleanup_pod_updates(uid)
        status = self.pod_sync_statuses.get(uid)
        if status is None:
            return
        status.finished, status.working = True, False
        if self.started_static_pods_by_fullname.get(status.fullname) == uid:
            del self.started_static_pods_by_fullname[status.fullname]

    # --8<-- [start:complete_work]
    def complete_work(self, uid: str, phase_transition: bool, sync_err: Optional[Exception]) -> None:
        """Queue the next sync: now after a phase change, a resync after success, a back-off after an error.

        Upstream: pkg/kubelet/pod_workers.go podWorkers.completeWork
        """
        self.work_queue.enqueue(uid, self.requeue_delay(phase_transition, sync_err))
        status = self.pod_sync_statuses.get(uid)
        if status is not None:
            if status.pending_update is not None:
                if uid in self.pod_updates:
                    self.pod_updates[uid] = True
            else:
                status.working = False

    def requeue_delay(self, phase_transition: bool, sync_err: Optional[Exception]) -> float:
        """completeWork's delay: none after a phase change, a resync after success, a back-off after an error."""
        if phase_transition:
            return 0.0
        if sync_err is None:
            return jitter(self.resync_interval, WORKER_RESYNC_INTERVAL_JITTER_FACTOR, self.rand)
        if NETWORK_NOT_READY_ERROR_MSG in str(sync_err):
            return jitter(BACK_OFF_ON_TRANSIENT_ERROR_PERIOD, WORKER_BACK_OFF_PERIOD_JITTER_FACTOR, self.rand)
        return jitter(self.back_off_period, WORKER_BACK_OFF_PERIOD_JITTER_FACTOR, self.rand)
    # --8<-- [end:complete_work]
