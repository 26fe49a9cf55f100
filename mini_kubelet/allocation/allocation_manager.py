"""The allocation manager: the resources the kubelet has admitted for each Pod, and what it does with a resize.

A resize is a Pod whose spec (the desired resources) differs from its allocation (what the kubelet admitted
and checkpointed). The manager admits it like a new Pod, against the other Pods at their *allocated*
resources: it fits (the allocation changes, PodResizeInProgress), it is Infeasible (never, on this node), or
it is Deferred (not now; retried in order). The QoS class never changes: it is read from status.qosClass.

Public functions, as v1.36.5 has them (Upstream: pkg/kubelet/allocation/allocation_manager.go):
- update_pod_from_allocation(pod, allocated) -> (pod, updated): the pod at its allocation (a copy only if it differs).
- allocation_from_pod(pod) -> PodResourceInfo: what the manager checkpoints for a pod.
- is_resizable_container(container, init) -> bool; resizable_containers(pod) -> list of containers.
- requirements_equal(a, b) -> bool: two ResourceRequirements as apiequality.Semantic compares them.
- require_in_place_resize() -> None, or UsageError naming the gate (every resize entry point calls it).
- Manager: add_pod -> (ok, reason, message); handle_pod_resources_resize -> whether the allocation changed;
  push_pending_resize; retry_pending_resizes -> the pods resized; update_pod_from_allocation; get_allocated_pods;
  next_periodic_retry and periodic_retry: the ticker that retries the pending resizes 3 min after the last retry.
The resize admit handler (what is Infeasible) is handlers.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable, Optional

from kubernetes.client import V1Container, V1Pod, V1ResourceRequirements

from .. import api, features, qos, resource
from ..errors import UsageError
from ..events import NORMAL, RESIZE_DEFERRED, RESIZE_INFEASIBLE, RESIZE_STARTED, WARNING, Recorder
from ..events import pod_resize_pending_msg, pod_resize_started_msg
from ..gosort import sort_func
from ..lifecycle import ADD_OPERATION, RESIZE_OPERATION, PodAdmitAttributes, PodAdmitResult
from ..status.status_manager import POD_REASON_INFEASIBLE, POD_RESIZE_PENDING, StatusManager

GATE = "InPlacePodVerticalScaling"
MODELLED_RELEASE = "1.36"  # the release whose resize path this package follows
INITIAL_RETRY_DELAY, RETRY_DELAY = timedelta(seconds=30), timedelta(minutes=3)  # the periodic retry's ticker
TRIGGER_REASON_POD_RESIZED, TRIGGER_REASON_POD_UPDATED = "pod_resized", "pod_updated"
TRIGGER_REASON_PODS_ADDED, TRIGGER_REASON_PODS_REMOVED = "pods_added", "pods_removed"
TRIGGER_REASON_PERIODIC = "periodic_retry"

AdmitHandler = Callable[[PodAdmitAttributes], PodAdmitResult]


@dataclass
class PodResourceInfo:
    """A pod's checkpointed allocation. Upstream: pkg/kubelet/allocation/state PodResourceInfo"""

    container_resources: dict[str, V1ResourceRequirements] = field(default_factory=dict)
    pod_level_resources: Optional[V1ResourceRequirements] = None


def require_in_place_resize() -> None:
    """Refuse, in one line naming the gate, a resize under a profile whose kubelet does not resize in place.

    Releases 1.33 to 1.35 resize by other rules (static pods and requests beyond allocatable are Infeasible
    there), which the course does not model: they are refused too, rather than answered as 1.36 would.
    """
    gate = features.DEFAULT_FEATURE_GATE
    if not gate.enabled(GATE):
        spec = gate.spec(GATE)
        stage = (spec.pre_release or "GA").lower() if spec else "absent"
        raise UsageError(f"in-place Pod resize needs the {GATE} feature gate, which is {stage} and off in "
                         f"Kubernetes {gate.release}")
    if gate.release != MODELLED_RELEASE:
        raise UsageError(f"in-place Pod resize is modelled as Kubernetes {MODELLED_RELEASE} has it; Kubernetes "
                         f"{gate.release} decides resizes by other rules")


def _lists_equal(a: Optional[dict], b: Optional[dict]) -> bool:
    a, b = a or {}, b or {}
    return a.keys() == b.keys() and all(api.parse_quantity(v) == api.parse_quantity(b[k]) for k, v in a.items())


def requirements_equal(a: Optional[V1ResourceRequirements], b: Optional[V1ResourceRequirements]) -> bool:
    """Two container resources as apiequality.Semantic.DeepEqual compares them: quantities by value, nil as empty."""
    return (_lists_equal(a and a.requests, b and b.requests) and _lists_equal(a and a.limits, b and b.limits)
            and api.models_equal((a and a.claims) or [], (b and b.claims) or []))


def is_resizable_container(container: V1Container, init: bool) -> bool:
    """Regular containers, sidecars, and (InPlacePodVerticalScalingInitContainers, 1.36) every init container.

    Upstream: pkg/kubelet/allocation/allocation_manager.go IsResizableContainer
    """
    if not init:
        return True
    return (features.DEFAULT_FEATURE_GATE.enabled("InPlacePodVerticalScalingInitContainers")
            or getattr(container, "restart_policy", None) == "Always")


def resizable_containers(pod: V1Pod) -> list[V1Container]:
    """Init containers then regular ones, the resizable ones only (podutil.ContainerIter's order)."""
    return ([c for c in pod.spec.init_containers or [] if is_resizable_container(c, True)]
            + [c for c in pod.spec.containers if is_resizable_container(c, False)])


def allocation_from_pod(pod: V1Pod) -> PodResourceInfo:
    """Upstream: pkg/kubelet/allocation/allocation_manager.go allocationFromPod"""
    pod_level = None
    if features.DEFAULT_FEATURE_GATE.enabled("InPlacePodLevelResourcesVerticalScaling") and pod.spec.resources is not None:
        pod_level = api.deep_copy(pod.spec.resources)
    return PodResourceInfo({c.name: api.deep_copy(c.resources) or V1ResourceRequirements()
                            for c in resizable_containers(pod)}, pod_level)


# --8<-- [start:update_pod_from_allocation]
def update_pod_from_allocation(pod: Optional[V1Pod], allocated: PodResourceInfo) -> tuple[Optional[V1Pod], bool]:
    """The pod with its allocated resources, and whether they differ from its spec (then it is a copy).

    Upstream: pkg/kubelet/allocation/allocation_manager.go updatePodFromAllocation
    """
    if pod is None:
        return pod, False
    updated = False
    if features.DEFAULT_FEATURE_GATE.enabled("InPlacePodLevelResourcesVerticalScaling"):
        wanted = allocated.pod_level_resources
        if (pod.spec.resources is None) != (wanted is None) or not requirements_equal(pod.spec.resources, wanted):
            pod, updated = api.deep_copy(pod), True
            pod.spec.resources = api.deep_copy(wanted)
    for kind in ("containers", "init_containers"):
        for i, c in enumerate(getattr(pod.spec, kind) or []):
            wanted = allocated.container_resources.get(c.name)
            if wanted is not None and not requirements_equal(c.resources, wanted):
                if not updated:
                    pod, updated = api.deep_copy(pod), True
                getattr(pod.spec, kind)[i].resources = api.deep_copy(wanted)
    return pod, updated
# --8<-- [end:update_pod_from_allocation]


class Manager:
    """Allocations by pod UID (in memory, as NewInMemoryManager keeps them) and the queue of pending resizes.

    Upstream: pkg/kubelet/allocation/allocation_manager.go manager
    admit_handlers run in order on every admission and resize (handlers.py's resize handler first, then the
    kubelet's: predicate, ...); trigger_pod_sync(pod) is called when a retried resize changed something.
    """

    def __init__(self, status_manager: StatusManager, get_active_pods: Callable[[], list[V1Pod]],
                 get_pod_by_uid: Callable[[str], Optional[V1Pod]], *, admit_handlers: list[AdmitHandler] = (),
                 trigger_pod_sync: Callable[[V1Pod], None] = lambda pod: None,
                 sources_ready: Callable[[], bool] = lambda: True, recorder: Optional[Recorder] = None):
        self.status_manager, self.get_active_pods, self.get_pod_by_uid = status_manager, get_active_pods, get_pod_by_uid
        self.admit_handlers, self.trigger_pod_sync, self.sources_ready = list(admit_handlers), trigger_pod_sync, sources_ready
        self.recorder = recorder or Recorder(status_manager.clock)
        self.allocated: dict[str, PodResourceInfo] = {}
        self.pods_with_pending_resizes: list[str] = []
        self.preempted: list[V1Pod] = []  # running pods a handler killed to make room (a critical pod's admission)
        self.deferred_accepted: dict[str, int] = {}  # kubelet_pod_deferred_accepted_resizes_total by retry trigger
        self.retry_at = status_manager.clock.now() + INITIAL_RETRY_DELAY  # the ticker's next tick (NewTicker)

    def update_pod_from_allocation(self, pod: Optional[V1Pod]) -> tuple[Optional[V1Pod], bool]:
        """Upstream: manager.UpdatePodFromAllocation (no allocation stored: the pod as it is)"""
        stored = self.allocated.get(pod.metadata.uid) if pod is not None else None
        return (pod, False) if stored is None else update_pod_from_allocation(pod, stored)

    def set_allocated_resources(self, pod: V1Pod) -> None:
        """Upstream: manager.SetAllocatedResources"""
        self.allocated[pod.metadata.uid] = allocation_from_pod(pod)

    def get_container_resource_allocation(self, uid: str, name: str) -> V1ResourceRequirements:
        """The container's allocation, empty if none. Upstream: manager.GetContainerResourceAllocation"""
        stored = self.allocated.get(uid)
        return (stored.container_resources.get(name) if stored else None) or V1ResourceRequirements()

    def remove_pod(self, uid: str) -> None:
        """Upstream: manager.RemovePod"""
        self.allocated.pop(uid, None)

    def get_allocated_pods(self, active_pods: list[V1Pod]) -> list[V1Pod]:
        """Each active pod at its allocation (with the gate off, as it is). Upstream: manager.getAllocatedPods"""
        if not features.DEFAULT_FEATURE_GATE.enabled(GATE):
            return list(active_pods)
        return [self.update_pod_from_allocation(p)[0] for p in active_pods]

    def can_admit_pod(self, allocated_pods: list[V1Pod], pod: V1Pod, operation: str) -> tuple[bool, str, str]:
        """The first handler's refusal, against the other pods (the pod itself left out).

        Even a resize runs the kubelet's critical-pod preemption: a critical pod's resize can kill others to fit.
        Upstream: pkg/kubelet/allocation/allocation_manager.go manager.canAdmitPod
        """
        attrs = PodAdmitAttributes(pod, [p for p in allocated_pods if p.metadata.uid != pod.metadata.uid], operation)
        for handler in self.admit_handlers:
            result = handler(attrs)
            self.preempted += result.preempted
            if not result.admit:
                return False, result.reason, result.message
        return True, "", ""

    def add_pod(self, active_pods: list[V1Pod], pod: V1Pod) -> tuple[bool, str, str]:
        """Admit a new pod at its allocation if it has one (a kubelet restart); record what it was admitted at.

        Upstream: pkg/kubelet/allocation/allocation_manager.go manager.AddPod
        """
        resize = features.DEFAULT_FEATURE_GATE.enabled(GATE)
        if resize:
            pod, _ = self.update_pod_from_allocation(pod)
        ok, reason, message = self.can_admit_pod(self.get_allocated_pods(active_pods), pod, ADD_OPERATION)
        if ok and resize:
            self.set_allocated_resources(pod)
        return ok, reason, message

    # --8<-- [start:handle_pod_resources_resize]
    def handle_pod_resources_resize(self, pod: V1Pod) -> bool:
        """Allocate the desired resources if they fit; else PodResizePending, Infeasible or Deferred. True if allocated.

        Any refusal but Infeasible is Deferred (the status manager stores it so); the event names the handler's
        own reason (OutOfcpu, ...).
        Upstream: pkg/kubelet/allocation/allocation_manager.go manager.handlePodResourcesResize
        """
        require_in_place_resize()
        sm, uid, generation = self.status_manager, pod.metadata.uid, pod.metadata.generation or 0
        if not self.update_pod_from_allocation(pod)[1]:
            sm.clear_pod_resize_pending_condition(uid)  # desired == allocated: nothing to do
            return False
        fit, reason, message = self.can_admit_pod(self.get_allocated_pods(self.get_active_pods()), pod, RESIZE_OPERATION)
        involved = f"{pod.metadata.namespace}/{pod.metadata.name}"
        if fit:
            self.set_allocated_resources(pod)
            sm.clear_pod_resize_pending_condition(uid)
            sm.clear_pod_resize_in_progress_condition(uid)  # a new allocation clears an earlier Error
            sm.set_pod_resize_in_progress_condition(uid, "", "", generation)
            self.recorder.eventf(involved, NORMAL, RESIZE_STARTED, pod_resize_started_msg(pod, generation))
            return True
        if reason:
            infeasible = reason == POD_REASON_INFEASIBLE
            if sm.set_pod_resize_pending_condition(uid, reason, message, generation):
                self.recorder.eventf(involved, WARNING, RESIZE_INFEASIBLE if infeasible else RESIZE_DEFERRED,
                                     pod_resize_pending_msg(pod, reason, message, generation))
        return False
    # --8<-- [end:handle_pod_resources_resize]

    def is_resize_increasing_requests(self, pod: V1Pod) -> bool:
        """Whether the pod's cpu or memory request grows over its allocation. Upstream: manager.isResizeIncreasingRequests"""
        allocated, updated = self.update_pod_from_allocation(pod)
        if not updated:
            return False
        skip = not features.DEFAULT_FEATURE_GATE.enabled("PodLevelResources")
        old = resource.pod_requests(allocated, skip_pod_level_resources=skip)
        new = resource.pod_requests(pod, skip_pod_level_resources=skip)
        return any(new.get(name, 0) > old.get(name, 0) for name in ("memory", "cpu"))

    def _pending_since(self, pod: V1Pod):
        return next((c.last_transition_time for c in self.status_manager.get_pod_resize_conditions(pod.metadata.uid)
                     if c.type == POD_RESIZE_PENDING), None)

    # --8<-- [start:sort_pending_resizes]
    def sort_pending_resizes(self) -> None:
        """Non-increasing resizes first, then higher priority, Guaranteed, and the longest pending.

        The comparison is Go's, not an order (two non-increasing resizes each say "me first"), so the result is
        that of Go's slices.SortFunc on the queue as it stood (gosort.py). Pods no longer known leave the queue.
        Upstream: pkg/kubelet/allocation/allocation_manager.go manager.sortPendingResizes
        """
        pods = [p for p in map(self.get_pod_by_uid, self.pods_with_pending_resizes) if p is not None]

        def cmp(first: V1Pod, second: V1Pod) -> int:
            if not self.is_resize_increasing_requests(first):
                return -1
            if not self.is_resize_increasing_requests(second):
                return 1
            a, b = first.spec.priority or 0, second.spec.priority or 0
            if a != b:
                return -1 if a > b else 1
            a, b = qos.get_pod_qos(first) == qos.GUARANTEED, qos.get_pod_qos(second) == qos.GUARANTEED
            if a != b:
                return -1 if a else 1
            a, b = self._pending_since(first), self._pending_since(second)
            if a is None:
                return 1
            if b is None:
                return -1
            return -1 if a < b else 1

        sort_func(pods, cmp)
        self.pods_with_pending_resizes = [p.metadata.uid for p in pods]
    # --8<-- [end:sort_pending_resizes]

    def push_pending_resize(self, uid: str) -> None:
        """Queue a pod's resize (once) and sort the queue. Upstream: manager.PushPendingResize"""
        require_in_place_resize()
        if uid not in self.pods_with_pending_resizes:
            self.pods_with_pending_resizes.append(uid)
            self.sort_pending_resizes()

    def has_pending_resizes(self) -> bool:
        """Upstream: manager.HasPendingResizes"""
        return bool(self.pods_with_pending_resizes)

    # --8<-- [start:retry_pending_resizes]
    def retry_pending_resizes(self, trigger: str) -> list[V1Pod]:
        """Try each queued resize in queue order; Deferred ones stay queued, Infeasible and allocated ones leave.

        Each allocation is in place before the next resize is tried, so the order decides who gets the room.
        Upstream: pkg/kubelet/allocation/allocation_manager.go manager.retryPendingResizes
        """
        require_in_place_resize()
        now = self.status_manager.clock.now()
        if not self.sources_ready():
            self.retry_at = now + INITIAL_RETRY_DELAY
            return []
        self.retry_at = now + RETRY_DELAY  # every retry resets the ticker, whatever its trigger
        sm, still_pending, resized = self.status_manager, [], []
        for uid in self.pods_with_pending_resizes:
            pod = self.get_pod_by_uid(uid)
            if pod is None:
                continue
            before, was_deferred = api.deep_copy(sm.get_pod_resize_conditions(uid)), sm.is_pod_resize_deferred(uid)
            allocated = self.handle_pod_resources_resize(pod)
            if sm.is_pod_resize_deferred(uid):
                still_pending.append(uid)
            elif not sm.is_pod_resize_infeasible(uid):
                resized.append(pod)
                if was_deferred:
                    self.deferred_accepted[trigger] = self.deferred_accepted.get(trigger, 0) + 1
            if allocated or not api.models_equal(before, sm.get_pod_resize_conditions(uid)):
                self.trigger_pod_sync(pod)
        self.pods_with_pending_resizes = still_pending
        return resized
    # --8<-- [end:retry_pending_resizes]

    def next_periodic_retry(self) -> Optional[datetime]:
        """When the ticker next retries something: None while no resize is pending.

        A tick with none pending only resets the ticker to its own period, so it changes nothing, not even when
        the next tick comes; a resize is queued only just before a retry, which resets the ticker then.
        Upstream: the ticker of manager.Run (30 s after NewManager, then 3 min after each retry)
        """
        return self.retry_at if self.pods_with_pending_resizes else None

    def periodic_retry(self) -> None:
        """Upstream: the goroutine of manager.Run, on a tick"""
        self.retry_pending_resizes(TRIGGER_REASON_PERIODIC)
