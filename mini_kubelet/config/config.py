"""PodConfig: many sources of pods merged into one ordered stream of ADD, UPDATE, DELETE, REMOVE, RECONCILE.

Upstream: pkg/kubelet/config/config.go (PodConfig, podStorage)
Each source sends full SETs (or single ADD/UPDATE/DELETE/REMOVE operations); podStorage remembers what each
source had, by UID, and emits only what changed. In Go every source writes to its own channel and a goroutine
per channel calls Merge under a lock; here a source's channel is a function that merges at once, so updates
come out in the order the sources sent them. The updates channel (50 entries in Go, where a full channel
blocks the source) is a deque without a bound.
"""

from __future__ import annotations

from collections import deque
from enum import IntEnum
from typing import Callable, Optional

from kubernetes.client import V1Pod

from .. import api, features, types
from ..api import models_equal
from ..clock import Clock
from ..types import ADD, DELETE, RECONCILE, REMOVE, SET, UPDATE, PodUpdate

Event = tuple[str, str, str]  # (type, reason, message), as the kubelet's event recorder writes it


# --8<-- [start:modes]
class PodConfigNotificationMode(IntEnum):
    """How merged changes are delivered; the kubelet uses INCREMENTAL.

    Upstream: pkg/kubelet/config/config.go PodConfigNotificationMode
    """

    UNKNOWN = 0
    SNAPSHOT = 1  # the whole merged state as a SET on any change
    SNAPSHOT_AND_UPDATES = 2  # UPDATE and DELETE as they are; a SET of everything on additions or removals
    INCREMENTAL = 3  # ADD, UPDATE, DELETE, REMOVE, RECONCILE


LOCAL_ANNOTATIONS = [  # annotations the kubelet itself adds: never a reason to update a pod
    types.CONFIG_SOURCE_ANNOTATION_KEY, types.CONFIG_MIRROR_ANNOTATION_KEY, types.CONFIG_FIRST_SEEN_ANNOTATION_KEY]
# --8<-- [end:modes]


def get_pod_full_name(pod: V1Pod) -> str:
    """A pod's full name, name_namespace: what must be unique on a node.

    Upstream: pkg/kubelet/container/runtime.go GetPodFullName (BuildPodFullName)
    """
    return f"{pod.metadata.name}_{pod.metadata.namespace or ''}"


def _annotations(pod: V1Pod) -> dict:
    if pod.metadata.annotations is None:
        pod.metadata.annotations = {}
    return pod.metadata.annotations


# --8<-- [start:filter_invalid_pods]
def filter_invalid_pods(pods: list[V1Pod], source: str, events: list) -> list[V1Pod]:
    """Drop every pod whose full name already appeared earlier in the same update (a Warning event each).

    Upstream: pkg/kubelet/config/config.go filterInvalidPods
    """
    names, filtered = set(), []
    for pod in pods:
        name = get_pod_full_name(pod)
        if name in names:
            events.append((pod, ("Warning", "FailedValidation", f"Error validating pod {_format(pod)} from {source} "
                                                                 f'due to duplicate pod name "{pod.metadata.name}", ignoring')))
            continue
        names.add(name)
        filtered.append(pod)
    return filtered
# --8<-- [end:filter_invalid_pods]


def _format(pod: V1Pod) -> str:
    """Upstream: pkg/kubelet/util/format/pod.go Pod (name_namespace(uid))"""
    return f"{pod.metadata.name}_{pod.metadata.namespace or ''}({pod.metadata.uid or ''})"


# --8<-- [start:check_and_update_pod]
def is_annotation_map_equal(existing: Optional[dict], candidate: Optional[dict]) -> bool:
    """The two annotation maps agree on every key the kubelet does not set itself.

    Upstream: pkg/kubelet/config/config.go isAnnotationMapEqual
    """
    existing, candidate = existing or {}, candidate or {}
    for key, value in candidate.items():
        if key not in LOCAL_ANNOTATIONS and (key not in existing or existing[key] != value):
            return False
    return all(key in LOCAL_ANNOTATIONS or key in candidate for key in existing)


def pods_differ_semantically(existing: V1Pod, ref: V1Pod) -> bool:
    """Spec, labels, deletion timestamp, deletion grace period or a non-local annotation differ.

    Upstream: pkg/kubelet/config/config.go podsDifferSemantically
    """
    a, b = existing.metadata, ref.metadata
    return not (models_equal(existing.spec, ref.spec) and a.labels == b.labels and a.deletion_timestamp == b.deletion_timestamp
                and a.deletion_grace_period_seconds == b.deletion_grace_period_seconds
                and is_annotation_map_equal(a.annotations, b.annotations))


def update_annotations(existing: V1Pod, ref: V1Pod) -> None:
    """Take the new pod's annotations, keeping the existing pod's kubelet-local ones.

    Upstream: pkg/kubelet/config/config.go updateAnnotations
    """
    annotations = dict(ref.metadata.annotations or {})
    for key in LOCAL_ANNOTATIONS:
        if key in _annotations(existing):
            annotations[key] = existing.metadata.annotations[key]
    existing.metadata.annotations = annotations


def check_and_update_pod(existing: V1Pod, ref: V1Pod) -> tuple[bool, bool, bool]:
    """Copy ref's changes into existing; say (need_update, need_reconcile, need_graceful_delete), at most one true.

    Upstream: pkg/kubelet/config/config.go checkAndUpdatePod
    No semantic change but another status: RECONCILE (the kubelet owns status). A semantic change with a
    deletion timestamp: DELETE. Any other semantic change: UPDATE.
    """
    if not pods_differ_semantically(existing, ref):
        if not models_equal(existing.status, ref.status):
            existing.status = ref.status
            return False, True, False
        return False, False, False
    _annotations(ref)[types.CONFIG_FIRST_SEEN_ANNOTATION_KEY] = _annotations(existing).get(
        types.CONFIG_FIRST_SEEN_ANNOTATION_KEY, "")
    existing.spec, existing.metadata.labels = ref.spec, ref.metadata.labels
    existing.metadata.deletion_timestamp = ref.metadata.deletion_timestamp
    existing.metadata.deletion_grace_period_seconds = ref.metadata.deletion_grace_period_seconds
    if features.DEFAULT_FEATURE_GATE.enabled("PodObservedGenerationTracking"):  # a resize's generation reaches the kubelet
        existing.metadata.generation = ref.metadata.generation
    existing.status = ref.status
    update_annotations(existing, ref)
    if ref.metadata.deletion_timestamp is not None:
        return False, False, True
    return True, False, False
# --8<-- [end:check_and_update_pod]


def new_timestamp(clock: Clock) -> str:
    """The first-seen annotation's value: the time in RFC 3339 with nanoseconds, trailing zeros dropped.

    Upstream: pkg/kubelet/types/types.go NewTimestamp().GetString() (time.RFC3339Nano)
    """
    now = clock.now()
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S")
    if now.microsecond:
        stamp += "." + f"{now.microsecond:06d}".rstrip("0")
    offset = now.strftime("%z")
    return stamp + ("Z" if offset in ("", "+0000") else f"{offset[:3]}:{offset[3:]}")


# --8<-- [start:pod_storage]
class PodStorage:
    """What every source currently has, by UID, and the updates its changes produce.

    Upstream: pkg/kubelet/config/config.go podStorage
    """

    def __init__(self, updates: deque, mode: PodConfigNotificationMode, clock: Clock, events: list):
        self.pods: dict[str, dict[str, V1Pod]] = {}
        self.mode, self.updates, self.clock, self.events = mode, updates, clock, events
        self.sources_seen: set[str] = set()
        self.checked: dict[str, dict[str, tuple]] = {}  # source -> uid -> (stored pod, the object it was last checked against)
        self.full_names: dict[str, dict[str, tuple]] = {}  # source -> uid -> (the object last sent, its full name)

    def merge_and_send(self, source: str, change: PodUpdate) -> None:
        """Merge one update from a source and send the resulting updates, in upstream's order.

        Upstream: pkg/kubelet/config/config.go podStorage.Merge
        """
        seen_before = source in self.sources_seen
        adds, updates, deletes, removes, reconciles = self.merge(source, change)
        first_set = not seen_before and source in self.sources_seen
        if self.mode == PodConfigNotificationMode.INCREMENTAL:
            self.updates.extend(u for u in (removes, adds, updates, deletes) if u.pods)
            if first_set and not adds.pods and not updates.pods and not deletes.pods:
                self.updates.append(adds)  # an empty ADD: the kubelet learns the source is ready
            if reconciles.pods:
                self.updates.append(reconciles)
        elif self.mode == PodConfigNotificationMode.SNAPSHOT_AND_UPDATES:
            if removes.pods or adds.pods or first_set:
                self.updates.append(PodUpdate(self.merged_state(), SET, source))
            self.updates.extend(u for u in (updates, deletes) if u.pods)
        elif self.mode == PodConfigNotificationMode.SNAPSHOT:
            if updates.pods or deletes.pods or adds.pods or removes.pods or first_set:
                self.updates.append(PodUpdate(self.merged_state(), SET, source))
        else:
            raise ValueError(f"unsupported PodConfigNotificationMode: {self.mode!r}")

    def merge(self, source: str, change: PodUpdate) -> tuple[PodUpdate, ...]:
        """The ADD, UPDATE, DELETE, REMOVE and RECONCILE updates one change makes, storing the new state.

        Upstream: pkg/kubelet/config/config.go podStorage.merge
        Go finds a SET's removed pods by walking a map, so their order is unspecified; here it is the order
        in which they were stored. A source never changes an object once sent (as upstream's sources, which hand
        on what their caches no longer touch), so a stored pod checked against the same object before has nothing
        to take from it: the check is not made again (nor is the object's source annotation set again), and an
        object's full name is read once. An update whose full names are all different has no duplicate to filter.
        """
        add, update, delete, remove, reconcile = [], [], [], [], []
        pods = self.pods.get(source, {})
        checked = self.checked.setdefault(source, {})

        def update_pods(new_pods: list[V1Pod], old_pods: dict, pods: dict) -> None:
            last_names, names = self.full_names.get(source, {}), {}
            for ref in new_pods:
                known = last_names.get(ref.metadata.uid)
                names[ref.metadata.uid] = known if known is not None and known[0] is ref else (ref, get_pod_full_name(ref))
            if change.op == SET:
                self.full_names[source] = names
            distinct = len(names) == len(new_pods) and len({name for _, name in names.values()}) == len(new_pods)
            for ref in new_pods if distinct else filter_invalid_pods(new_pods, source, self.events):
                uid = ref.metadata.uid
                existing = old_pods.get(uid)
                if existing is not None:
                    pods[uid] = existing
                    last = checked.get(uid)
                    if last is not None and last[0] is existing and last[1] is ref:
                        continue  # the pair checked last time: ref has its annotation, existing took its changes
                    _annotations(ref)[types.CONFIG_SOURCE_ANNOTATION_KEY] = source  # before any comparison
                    checked[uid] = (existing, ref)
                    need_update, need_reconcile, need_delete = check_and_update_pod(existing, ref)
                    (update if need_update else reconcile if need_reconcile else delete if need_delete else []
                     ).append(existing)
                    continue
                _annotations(ref)[types.CONFIG_SOURCE_ANNOTATION_KEY] = source
                ref.metadata.annotations[types.CONFIG_FIRST_SEEN_ANNOTATION_KEY] = new_timestamp(self.clock)
                pods[ref.metadata.uid] = ref
                add.append(ref)

        if change.op in (ADD, UPDATE, DELETE):
            update_pods(change.pods, pods, pods)
        elif change.op == REMOVE:
            for value in change.pods:
                if value.metadata.uid in pods:
                    remove.append(pods.pop(value.metadata.uid))
        elif change.op == SET:
            self.sources_seen.add(source)
            old_pods, pods = pods, {}
            update_pods(change.pods, old_pods, pods)
            remove += [existing for uid, existing in old_pods.items() if uid not in pods]
        # any other operation is logged as invalid and changes nothing
        self.pods[source] = pods
        return tuple(PodUpdate(api.deep_copy(found), op, source) for found, op in (
            (add, ADD), (update, UPDATE), (delete, DELETE), (remove, REMOVE), (reconcile, RECONCILE)))

    def merged_state(self) -> list[V1Pod]:
        """A copy of every source's pods.

        Upstream: pkg/kubelet/config/config.go podStorage.MergedState
        """
        return [api.deep_copy(pod) for pods in self.pods.values() for pod in pods.values()]
# --8<-- [end:pod_storage]


# --8<-- [start:pod_config]
class PodConfig:
    """The kubelet's pod configuration: one channel per source in, one stream of updates out.

    Upstream: pkg/kubelet/config/config.go PodConfig (NewPodConfig)
    """

    def __init__(self, mode: PodConfigNotificationMode = PodConfigNotificationMode.INCREMENTAL,
                 clock: Optional[Clock] = None):
        self.updates: deque[PodUpdate] = deque()  # Updates(): what syncLoopIteration reads
        self.events: list[tuple[V1Pod, Event]] = []  # what the event recorder would write
        self.sources: set[str] = set()
        self.pods = PodStorage(self.updates, mode, clock or Clock(), self.events)

    def channel(self, source: str) -> Callable[[PodUpdate], None]:
        """Register a source and return the function it sends its updates with.

        Upstream: pkg/kubelet/config/config.go PodConfig.Channel (config.Mux.ChannelWithContext)
        """
        self.sources.add(source)
        return lambda update: self.pods.merge_and_send(source, update)

    def seen_all_sources(self, seen_sources: set[str]) -> bool:
        """True once seen_sources has every registered source and each of them has sent a SET.

        Upstream: pkg/kubelet/config/config.go PodConfig.SeenAllSources
        """
        return self.sources <= set(seen_sources) and self.sources <= self.pods.sources_seen

    def sync(self) -> None:
        """Send the whole merged state as one SET from all sources.

        Upstream: pkg/kubelet/config/config.go PodConfig.Sync (podStorage.Sync)
        """
        self.updates.append(PodUpdate(self.pods.merged_state(), SET, types.ALL_SOURCE))
# --8<-- [end:pod_config]
