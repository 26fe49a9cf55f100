"""The Kubelet's side of the sync loop: what it does with added, updated, removed and reconciled pods.

Upstream: pkg/kubelet/kubelet.go (HandlePodAdditions, HandlePodUpdates, HandlePodRemoves, HandlePodReconcile,
HandlePodSyncs, dispatchWork, handleMirrorPod, deletePod, getPodsToSync, cleanUpContainersInPod)
Admission is chapter 2's kubelet.handle_pod_additions; a rejected pod's Failed status, which the kubelet
writes into its status manager, is kept here in `rejected`. The status side plugs in upstream's
status.NeedToReconcilePodReadiness and the container deletor; housekeeping (HandlePodCleanups, in
kubelet_pods.go) comes from the caller too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Callable, Iterable, Optional

from kubernetes.client import V1Node, V1Pod

from . import kubelet, scheduler, types
from .clock import Clock
from .container_cache import Cache
from .eviction.messages import pod_is_evicted
from .pod_manager import BasicManager
from .pod_workers import PodWorkers, UpdatePodOptions
from .types import SyncPodType
from .work_queue import BasicWorkQueue


class KubeletHandlers:
    """The Kubelet as the sync loop sees it: a pod manager, the pod workers, admission, the work queue.

    Upstream: pkg/kubelet/kubelet.go Kubelet (the SyncHandler methods and what syncLoopIteration reads)
    """

    def __init__(self, pod_workers: PodWorkers, pod_manager: BasicManager, sources_ready, clock: Clock, *,
                 work_queue: BasicWorkQueue, pod_cache: Cache, node: Optional[V1Node] = None,
                 need_to_reconcile_pod_readiness: Callable[[V1Pod], bool],
                 handle_pod_cleanups: Callable[[], Optional[str]],
                 pod_sync_loop_handlers: Iterable[Callable[[V1Pod], bool]] = (), **admit_options):
        self.pod_workers, self.pod_manager, self.sources_ready, self.clock = pod_workers, pod_manager, sources_ready, clock
        self.work_queue, self.pod_cache, self.node, self.admit_options = work_queue, pod_cache, node, admit_options
        self.need_to_reconcile_pod_readiness = need_to_reconcile_pod_readiness
        self.pod_sync_loop_handlers = list(pod_sync_loop_handlers)  # PodSyncLoopHandler.ShouldSync, e.g. active deadline
        self.handle_pod_cleanups = handle_pod_cleanups
        self.rejected: dict[str, kubelet.AdmissionOutcome] = {}  # what rejectPod wrote to the status manager
        self.container_deletions: list[tuple[str, str, bool]] = []  # podContainerDeletor requests
        self.log: list[str] = []
        self.allocation = None  # the allocation manager, when the kubelet resizes in place (InPlacePodVerticalScaling)

    # --8<-- [start:handlers]
    def handle_pod_additions(self, pods: list[V1Pod]) -> None:
        """New pods, oldest first: into the pod manager, admitted (or rejected), then to a worker as CREATE.

        Upstream: pkg/kubelet/kubelet.go Kubelet.HandlePodAdditions
        Rejected pods are passed as known terminated: upstream leaves them out of the active pods because the
        status manager has them Failed with no termination requested, which comes to the same.
        """
        statuses = self.pod_workers.pod_sync_statuses
        requested = {uid for uid, s in statuses.items() if s.is_termination_requested()}
        terminated = {uid for uid, s in statuses.items() if s.is_terminated()} | set(self.rejected)
        start = self.clock.now()
        admitted = self.pod_manager.get_pods()
        if self.allocation is not None:  # the others count at their allocated resources, not a resize they asked for
            admitted = [self.allocation.update_pod_from_allocation(p)[0] for p in admitted]
        with scheduler.node_info_reuse():  # each pod is admitted against those before it: one more each time
            outcomes = kubelet.handle_pod_additions(pods, self.node, admitted=admitted, termination_requested=requested,
                                                    known_terminated=terminated, **self.admit_options)
        for outcome in outcomes:
            self.pod_manager.add_pod(outcome.pod)  # always: the pod manager is the desired state
            if outcome.skipped == "mirror pod":
                self.handle_mirror_pod(outcome.pod, start)
            elif not outcome.result.admit:
                self.rejected[outcome.pod.metadata.uid] = outcome
            else:
                if self.allocation is not None:
                    self.allocation.set_allocated_resources(outcome.pod)
                self.dispatch_work(outcome.pod, SyncPodType.CREATE, self.pod_manager.get_mirror_pod_by_pod(outcome.pod), start)

    def handle_pod_updates(self, pods: list[V1Pod]) -> None:
        """Changed pods (and graceful deletions): to their workers as UPDATE; no admission.

        Upstream: pkg/kubelet/kubelet.go Kubelet.HandlePodUpdates
        """
        start = self.clock.now()
        for pod in pods:
            self.pod_manager.update_pod(pod)
            if types.is_mirror_pod(pod):
                self.handle_mirror_pod(pod, start)
                continue
            if self.allocation is not None and self.allocation.update_pod_from_allocation(pod)[1]:
                self.allocation.push_pending_resize(pod.metadata.uid)  # a resize: decided before the sync
                self.allocation.retry_pending_resizes("pod_updated")
            self.dispatch_work(pod, SyncPodType.UPDATE, self.pod_manager.get_mirror_pod_by_pod(pod), start)

    def handle_pod_removes(self, pods: list[V1Pod]) -> None:
        """Pods gone from their source: out of the pod manager and killed (once all sources are ready).

        Upstream: pkg/kubelet/kubelet.go Kubelet.HandlePodRemoves
        """
        start = self.clock.now()
        for pod in pods:
            self.pod_manager.delete_pod(pod)
            if self.allocation is not None:
                self.allocation.remove_pod(pod.metadata.uid)
            if types.is_mirror_pod(pod):
                self.handle_mirror_pod(pod, start)
                continue
            err = self.delete_pod(pod)
            if err:  # housekeeping will delete it later
                self.log.append(f"Failed to delete pod {pod.metadata.namespace}/{pod.metadata.name}: {err}")
        if self.allocation is not None:  # their room is free: a Deferred resize may fit now (and the ticker resets)
            self.allocation.retry_pending_resizes("pods_removed")

    def handle_pod_reconcile(self, pods: list[V1Pod]) -> None:
        """Pods whose status alone changed: sync if the Ready condition needs it; clean an evicted pod's containers.

        With in-place resize (v1.36), a pod that has just become terminal frees its room: the pending resizes are
        tried again once the batch is done. (The retry when a pod's status resources shrink is not modelled.)
        Upstream: pkg/kubelet/kubelet.go Kubelet.HandlePodReconcile
        """
        start = self.clock.now()
        pending = self.allocation is not None and self.allocation.has_pending_resizes()
        retry = False
        for pod in pods:
            old = self.pod_manager.get_pod_by_uid(pod.metadata.uid)
            self.pod_manager.update_pod(pod)
            if pending and not retry and old is not None and _is_terminal(pod) and not _is_terminal(old):
                retry = True
            if self.need_to_reconcile_pod_readiness(pod):
                self.dispatch_work(pod, SyncPodType.SYNC, self.pod_manager.get_mirror_pod_by_pod(pod), start)
            status = pod.status
            if pod_is_evicted(status.phase if status else None, status.reason if status else None):
                if self.pod_cache.get(pod.metadata.uid).err is None:  # all its dead containers may go
                    self.container_deletions.append((pod.metadata.uid, "", True))
        if retry:
            self.allocation.retry_pending_resizes("pod_terminated")

    def handle_pod_syncs(self, pods: list[V1Pod]) -> None:
        """Pods due for a sync: to their workers as SYNC. Upstream: pkg/kubelet/kubelet.go Kubelet.HandlePodSyncs"""
        start = self.clock.now()
        for pod in pods:
            self.dispatch_work(pod, SyncPodType.SYNC, self.pod_manager.get_mirror_pod_by_pod(pod), start)
    # --8<-- [end:handlers]

    def dispatch_work(self, pod: V1Pod, sync_type: SyncPodType, mirror_pod: Optional[V1Pod], start: datetime) -> None:
        """Hand the pod to its worker. Upstream: pkg/kubelet/kubelet.go Kubelet.dispatchWork

        A SYNC of a pod whose SyncPod would change nothing is settled by the pod workers at once (no-op unless
        the Kubelet skips settled resyncs).
        """
        if sync_type == SyncPodType.SYNC and self.pod_workers.resync_if_settled(pod, mirror_pod):
            return
        self.pod_workers.update_pod(UpdatePodOptions(update_type=sync_type, pod=pod, mirror_pod=mirror_pod,
                                                     start_time=start))

    def handle_mirror_pod(self, mirror_pod: V1Pod, start: datetime) -> None:
        """A mirror pod's change is an UPDATE of its static pod. Upstream: Kubelet.handleMirrorPod"""
        pod = self.pod_manager.get_pod_by_mirror_pod(mirror_pod)
        if pod is not None:
            self.dispatch_work(pod, SyncPodType.UPDATE, mirror_pod, start)

    def delete_pod(self, pod: V1Pod) -> Optional[str]:
        """Ask the worker to kill a removed pod, unless a source has not been seen yet.

        Upstream: pkg/kubelet/kubelet.go Kubelet.deletePod
        """
        if not self.sources_ready.all_ready():
            return "skipping delete because sources aren't ready yet"
        self.pod_workers.update_pod(UpdatePodOptions(update_type=SyncPodType.KILL, pod=pod))
        return None

    # -- what syncLoopIteration reads --
    def get_pod_by_uid(self, uid: str) -> Optional[V1Pod]:
        """Upstream: the pod manager's GetPodByUID, as syncLoopIteration calls it"""
        return self.pod_manager.get_pod_by_uid(uid)

    def get_pods_to_sync(self) -> list[V1Pod]:
        """The pods whose work-queue time has passed, and those a PodSyncLoopHandler wants synced.

        Upstream: pkg/kubelet/kubelet.go Kubelet.getPodsToSync
        """
        due = set(self.work_queue.get_work())
        if not self.pod_sync_loop_handlers:  # the pod manager's pods in its order (GetPods), those due only
            return self.pod_manager.pods_of(due) if due else []
        return [pod for pod in self.pod_manager.get_pods()
                if pod.metadata.uid in due or any(should_sync(pod) for should_sync in self.pod_sync_loop_handlers)]

    def clean_up_containers_in_pod(self, uid: str, exited_container_id: str) -> None:
        """After a container died, ask the deletor to trim the pod's dead containers (all, if evicted or deleted).

        Upstream: pkg/kubelet/kubelet.go Kubelet.cleanUpContainersInPod
        """
        data = self.pod_cache.get(uid)
        if data.err is None:
            self.container_deletions.append((uid, exited_container_id, self.pod_workers.should_pod_content_be_removed(uid)))


def _is_terminal(pod: V1Pod) -> bool:
    """Upstream: pkg/api/v1/pod/util.go IsPodTerminal (the phase is Succeeded or Failed)"""
    return (pod.status.phase if pod.status else None) in ("Succeeded", "Failed")
