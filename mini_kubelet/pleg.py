"""The generic PLEG: relist the runtime every second and turn container state changes into pod events.

Upstream: pkg/kubelet/pleg/generic.go (GenericPLEG) and pleg.go (the event types); the periods are
constants of pkg/kubelet/kubelet.go.
Go relists in a goroutine (wait.Until every relistPeriod) and walks maps, so events of different pods
come in no fixed order; here the caller relists on the virtual clock, and pods are walked in the order
they were first listed. The event channel is a deque with the same capacity; a full one drops the event.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable, Optional

from . import container, features
from .clock import Clock
from .container_cache import Cache

# --8<-- [start:constants]
GENERIC_PLEG_RELIST_PERIOD = timedelta(seconds=1)  # kubelet.go genericPlegRelistPeriod
GENERIC_PLEG_RELIST_THRESHOLD = timedelta(minutes=3)  # kubelet.go genericPlegRelistThreshold
PLEG_CHANNEL_CAPACITY = 1000  # kubelet.go plegChannelCapacity

CONTAINER_STARTED = "ContainerStarted"  # the new state is running
CONTAINER_DIED = "ContainerDied"  # the new state is exited
CONTAINER_REMOVED = "ContainerRemoved"  # the container is gone (after it had exited)
POD_SYNC = "PodSync"  # v1.36: after a reinspection that found no other event (v1.27: evented PLEG only)
CONTAINER_CHANGED = "ContainerChanged"  # the new state is unknown: generated, never delivered

PLEG_RUNNING, PLEG_EXITED, PLEG_UNKNOWN, PLEG_NON_EXISTENT = "running", "exited", "unknown", "non-existent"
# --8<-- [end:constants]


@dataclass
class PodLifecycleEvent:
    """A change in a pod: its UID, the event type and the container's ID.

    Upstream: pkg/kubelet/pleg/pleg.go PodLifecycleEvent
    """

    id: str
    type: str
    data: str = ""


# --8<-- [start:convert_state]
def convert_state(state: str) -> str:
    """The PLEG's view of a runtime state: created counts as unknown (the kubelet does not use it).

    Upstream: pkg/kubelet/pleg/generic.go convertState
    """
    mapping = {container.CONTAINER_STATE_CREATED: PLEG_UNKNOWN, container.CONTAINER_STATE_RUNNING: PLEG_RUNNING,
               container.CONTAINER_STATE_EXITED: PLEG_EXITED, container.CONTAINER_STATE_UNKNOWN: PLEG_UNKNOWN}
    if state not in mapping:
        raise ValueError(f"unrecognized container state: {state}")
    return mapping[state]
# --8<-- [end:convert_state]


# --8<-- [start:generate_events]
def generate_events(pod_id: str, cid: str, old_state: str, new_state: str) -> list[PodLifecycleEvent]:
    """The events one container's transition makes; vanishing without having exited is a death and a removal.

    Upstream: pkg/kubelet/pleg/generic.go generateEvents
    """
    if new_state == old_state:
        return []
    if new_state == PLEG_RUNNING:
        return [PodLifecycleEvent(pod_id, CONTAINER_STARTED, cid)]
    if new_state == PLEG_EXITED:
        return [PodLifecycleEvent(pod_id, CONTAINER_DIED, cid)]
    if new_state == PLEG_UNKNOWN:
        return [PodLifecycleEvent(pod_id, CONTAINER_CHANGED, cid)]
    if new_state == PLEG_NON_EXISTENT:
        if old_state == PLEG_EXITED:  # its death was reported already
            return [PodLifecycleEvent(pod_id, CONTAINER_REMOVED, cid)]
        return [PodLifecycleEvent(pod_id, CONTAINER_DIED, cid), PodLifecycleEvent(pod_id, CONTAINER_REMOVED, cid)]
    raise ValueError(f"unrecognized container state: {new_state}")
# --8<-- [end:generate_events]


def get_container_state(pod: Optional[container.Pod], cid: str) -> str:
    """A container's (or sandbox's) PLEG state in a listing; non-existent when absent.

    Upstream: pkg/kubelet/pleg/generic.go getContainerState
    """
    if pod is None:
        return PLEG_NON_EXISTENT
    for c in [*pod.containers, *pod.sandboxes]:
        if c.id == cid:
            return convert_state(c.state)
    return PLEG_NON_EXISTENT


def get_containers_from_pods(*pods: Optional[container.Pod]) -> list[container.Container]:
    """Every container and sandbox of the pods, once each by ID. Upstream: generic.go getContainersFromPods"""
    seen, found = set(), []
    for pod in pods:
        for c in ([*pod.containers, *pod.sandboxes] if pod is not None else []):
            if c.id not in seen:
                seen.add(c.id)
                found.append(c)
    return found


# --8<-- [start:generic_pleg]
class GenericPLEG:
    """Relists the runtime, compares each container with the last listing, sends events, refreshes the cache.

    Upstream: pkg/kubelet/pleg/generic.go GenericPLEG (NewGenericPLEG)
    get_pods() is the runtime's GetPods(all=true); get_pod_status(uid, name, namespace) its GetPodStatus.
    generation(), when given, is the runtime's change counter: a relist that finds it where the last one left it
    knows the listing is the same, so no container can have changed, and it does only what every relist does
    whatever it finds (the relist time, and the cache's timestamp that waiting pod workers need).
    """

    def __init__(self, get_pods: Callable[[], list[container.Pod]], clock: Clock, *,
                 get_pod_status: Optional[Callable[[str, str, str], container.PodStatus]] = None,
                 cache: Optional[Cache] = None, capacity: int = PLEG_CHANNEL_CAPACITY,
                 relist_period: timedelta = GENERIC_PLEG_RELIST_PERIOD,
                 relist_threshold: timedelta = GENERIC_PLEG_RELIST_THRESHOLD,
                 generation: Optional[Callable[[], int]] = None):
        self.generation, self.listed_generation = generation, None
        self.get_pods, self.get_pod_status, self.cache, self.clock = get_pods, get_pod_status, cache, clock
        self.event_channel: deque[PodLifecycleEvent] = deque()
        self.capacity, self.relist_period, self.relist_threshold = capacity, relist_period, relist_threshold
        self.pod_records: dict[str, list] = {}  # uid -> [old, current]
        self.relist_time: Optional[datetime] = None
        self.pods_to_reinspect: dict[str, container.Pod] = {}
        self.reinspect_requested: set[str] = set()  # UIDs RequestReinspect named (v1.36): read again, then a PodSync
        self.discarded_events = 0  # the PLEGDiscardEvents metric
        self.log: list[str] = []

    def watch(self) -> deque:
        """The channel the sync loop reads. Upstream: GenericPLEG.Watch"""
        return self.event_channel

    def healthy(self) -> tuple[bool, Optional[str]]:
        """Healthy unless no relist has succeeded yet or the last one is older than the threshold.

        Upstream: pkg/kubelet/pleg/generic.go GenericPLEG.Healthy
        """
        if self.relist_time is None:
            return False, "pleg has yet to be successful"
        elapsed = self.clock.since(self.relist_time)
        if elapsed > self.relist_threshold:
            return False, f"pleg was last seen active {_go_duration(elapsed)} ago; threshold is " \
                          f"{_go_duration(self.relist_threshold)}"
        return True, None

    def request_reinspect(self, uid: str) -> None:
        """Read the pod's status again at the next relist, which then sends a PodSync for it (its containers may
        not change: a resize). Upstream: pkg/kubelet/pleg/generic.go GenericPLEG.RequestReinspect (v1.36)"""
        self.reinspect_requested.add(uid)

    def relist(self) -> None:
        """List the runtime, generate events for every changed container, update the cache, send the events.

        Upstream: pkg/kubelet/pleg/generic.go GenericPLEG.Relist
        """
        timestamp = self.clock.now()
        generation = self.generation() if self.generation is not None else None
        if generation is not None and generation == self.listed_generation and not self.pods_to_reinspect \
                and not self.reinspect_requested:
            self.relist_time = timestamp  # the same listing as last time: no events, nothing to re-read
            if self.cache is not None:
                self.cache.update_time(timestamp)
            return
        try:
            pods = self.get_pods()
        except Exception as err:  # noqa: BLE001
            self.log.append(f"GenericPLEG: Unable to retrieve pods: {err}")
            return
        self.relist_time, self.listed_generation = timestamp, generation
        for record in self.pod_records.values():  # podRecords.setCurrent
            record[1] = None
        for pod in pods:
            self.pod_records.setdefault(pod.id, [None, None])[1] = pod
        events_by_pod_id: dict[str, list[PodLifecycleEvent]] = {}
        for pid, (old, current) in list(self.pod_records.items()):
            if old is current:  # the runtime listed the very same unchanged pod: nothing to compare
                continue
            for c in get_containers_from_pods(old, current):
                for event in generate_events(pid, c.id, get_container_state(old, c.id), get_container_state(current, c.id)):
                    events_by_pod_id.setdefault(event.id, []).append(event)
        needs_reinspection: dict[str, container.Pod] = {}
        for pid, events in events_by_pod_id.items():
            pod = self.pod_records[pid][1]
            if self.cache is not None:
                err = self.update_cache(pod, pid)
                if err is not None:  # the record is kept as it was, so the change is seen again next time
                    needs_reinspection[pid] = pod
                    continue
                self.pods_to_reinspect.pop(pid, None)
            self._update_record(pid)
            for event in events:
                if event.type == CONTAINER_CHANGED:  # not reliable, and nothing uses it yet
                    continue
                self._send(event)
        requested, self.reinspect_requested = self.reinspect_requested, set()
        if self.cache is not None:
            for pid in sorted(requested - events_by_pod_id.keys() - self.pods_to_reinspect.keys()):  # others: below
                if pid not in self.pod_records:
                    continue
                if self.update_cache(self.pod_records[pid][1], pid) is not None:
                    self.reinspect_requested.add(pid)  # asked again at the next relist
                    continue
                self._update_record(pid)
                self._send(PodLifecycleEvent(pid, POD_SYNC))  # v1.36 reconcilePodRecord (v1.32-1.35: a watch condition)
            sync_after = features.DEFAULT_FEATURE_GATE.changed("PodSyncAfterReinspection")  # v1.27: none
            for pid, pod in self.pods_to_reinspect.items():
                if self.update_cache(pod, pid) is not None:
                    needs_reinspection[pid] = pod
                elif sync_after:
                    self._send(PodLifecycleEvent(pid, POD_SYNC))
            self.cache.update_time(timestamp)  # after every pod of this relist is in the cache
        self.pods_to_reinspect = needs_reinspection

    def _send(self, event: PodLifecycleEvent) -> None:
        if len(self.event_channel) >= self.capacity:
            self.discarded_events += 1
            self.log.append("Event channel is full, discard this relist() cycle event")
            return
        self.event_channel.append(event)

    def _update_record(self, pid: str) -> None:
        """Upstream: pkg/kubelet/pleg/generic.go podRecords.update (a pod gone from the runtime is dropped)"""
        record = self.pod_records.get(pid)
        if record is None:
            return
        if record[1] is None:
            del self.pod_records[pid]
        else:
            record[0], record[1] = record[1], None

    def update_cache(self, pod: Optional[container.Pod], pid: str) -> Optional[Exception]:
        """Read the pod's status from the runtime into the cache (an error is cached too); drop a gone pod.

        Upstream: pkg/kubelet/pleg/generic.go GenericPLEG.updateCache
        """
        if pod is None:
            self.cache.delete(pid)
            return None
        timestamp, err = self.clock.now(), None
        try:
            status = self.get_pod_status(pod.id, pod.name, pod.namespace)
        except Exception as error:  # noqa: BLE001
            err, status = error, container.PodStatus(id=pod.id, name=pod.name, namespace=pod.namespace)
        else:
            status.ips = self.get_pod_ips(pid, status)
        self.cache.set(pod.id, status, err, timestamp)
        return err

    def get_pod_ips(self, pid: str, status: container.PodStatus) -> list[str]:
        """Keep the last known IPs of a pod whose sandboxes are gone, as the API expects of a finished pod.

        Upstream: pkg/kubelet/pleg/generic.go GenericPLEG.getPodIPs
        """
        if status.ips:
            return status.ips
        old = self.cache.get(pid)
        if old.err is not None or not old.status.ips:
            return []
        if any(s.state == container.SANDBOX_READY for s in status.sandbox_statuses):
            return status.ips
        return old.status.ips
# --8<-- [end:generic_pleg]


def _go_duration(delta: timedelta) -> str:
    """A duration as Go prints it (3m0s, 1h2m3s, 4.5s)."""
    total = delta.total_seconds()
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{seconds:g}s"
    if hours or minutes:
        text = f"{int(minutes)}m{text}"
    if hours:
        text = f"{int(hours)}h{text}"
    return text
