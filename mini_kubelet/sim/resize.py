"""In-place resizes in a replay (lifecycle and node): the resize event, the kubelet wired for it, what the report shows.

Upstream: pkg/kubelet/kubelet.go NewMainKubelet (allocationManager, the pod resize admit handler first, then the
other admit handlers) and kuberuntime_manager.go (the runtime manager's actuated state and pod cgroups); the resize
event is what `kubectl patch --subresource resize` stores: the new resources, and the next generation.
Only a replay with a resize event is wired (every other replay takes the pod's spec as it is). The report lists
each change of a Pod's resize conditions and each cgroup file written, at the second it happened; `expect:` checks
them (`resizes`: conditions seen in this order; `cgroups`: what a file holds at a time, its last write by then).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from kubernetes.client import V1Pod, V1ResourceRequirements

from .. import api, lifecycle, qos
from ..allocation.allocation_manager import Manager
from ..allocation.handlers import NodeConfig, new_pod_resizes_admit_handler
from ..cm.pod_container_manager import PodContainerManager
from ..kuberuntime.kuberuntime_resize_actuate import ResizeState
from ..stats import ContainerStats, MemoryStats, PodStats
from . import fields
from .check import resize_gate_problem
from .reader import Reader
from .series import format_duration


# --8<-- [start:read_resize]
def read_resize(r: Reader, args: dict, where: str, pod: V1Pod, source: str, kind: str) -> dict:
    """A resize event: the gate, then each named container's new requests and limits (cpu and memory only), and
    (lifecycle) each container's memory usage."""
    problem = resize_gate_problem()
    if problem:
        r.fail(where, problem)
    if source != "api":
        r.fail(f"{where}.pod", "a static Pod is resized by changing its file, which makes it a new Pod")
    names = [c.name for c in [*(pod.spec.init_containers or []), *pod.spec.containers]]
    containers = r.mapping(args.get("containers"), f"{where}.containers")
    if not containers:
        r.fail(f"{where}.containers", "required: at least one container's new resources")
    checked: dict[str, dict] = {}
    for cname, new in containers.items():
        at = f"{where}.containers.{cname}"
        if cname not in names:
            r.fail(at, f"no such container (the pod has: {', '.join(names)})")
        new = r.mapping(new, at, fields.names(kind, "events[].resize.containers.CONTAINER"))
        checked[cname] = {}
        for part in ("requests", "limits"):
            for resource_name, amount in r.mapping(new.get(part) or {}, f"{at}.{part}").items():
                if resource_name not in ("cpu", "memory"):  # 1.35: only cpu and memory may change (#135084)
                    r.fail(f"{at}.{part}.{resource_name}", "only cpu and memory can be resized in place")
                r.amount(amount, f"{at}.{part}.{resource_name}")
                checked[cname].setdefault(part, {})[resource_name] = str(amount)
    after = resized(pod, checked)
    for c in [c for c in [*(after.spec.init_containers or []), *after.spec.containers] if c.name in checked]:
        requests, limits = c.resources.requests or {}, c.resources.limits or {}
        for name in sorted(set(requests) & set(limits)):
            if api.parse_quantity(requests[name]) > api.parse_quantity(limits[name]):
                r.fail(f"{where}.containers.{c.name}", f"the API server refuses it: the {name} request "
                       f"({requests[name]}) must be less than or equal to the limit ({limits[name]})")
    if qos.get_pod_qos(after) != qos.get_pod_qos(pod):
        r.fail(f"{where}.containers", f"the API server refuses it: the Pod's QoS class would change from "
               f"{qos.get_pod_qos(pod)} to {qos.get_pod_qos(after)} (it is immutable)")
    usage = {}
    for cname, amount in r.mapping(args.get("memoryUsage") or {}, f"{where}.memoryUsage").items():
        if cname not in names:
            r.fail(f"{where}.memoryUsage.{cname}", f"no such container (the pod has: {', '.join(names)})")
        usage[cname] = r.amount(amount, f"{where}.memoryUsage.{cname}")
    return {"pod": pod.metadata.name, "containers": checked, "memoryUsage": usage}
# --8<-- [end:read_resize]


# --8<-- [start:wire_resize]
def wire_resize(kubelet, node, memory_capacity: int, *, cpu_manager_policy: str = "none", extra_admit=(),
                pod_stats=None) -> ResizeState:
    """Give the kubelet an allocation manager and the runtime manager a ResizeState writing to the runtime's log.

    The resize admit handler decides first, then `extra_admit` (the eviction manager's Admit, say), then the
    predicate; the cgroup writes are stamped with the kubelet's clock as they happen.
    """
    kubelet.runtime.cgroup_writes = TimedWrites(kubelet.clock, kubelet.runtime.cgroup_writes)
    state = ResizeState(pod_cgroups=PodContainerManager(writes=kubelet.runtime.cgroup_writes), memory_capacity=memory_capacity,
                        request_reinspect=kubelet.pleg.request_reinspect)
    if pod_stats is not None:
        state.pod_stats = pod_stats
    handlers = kubelet.handlers
    manager = Manager(kubelet.status_manager, kubelet.get_active_pods, kubelet.pod_manager.get_pod_by_uid, recorder=kubelet.recorder,
                      trigger_pod_sync=lambda pod: handlers.handle_pod_syncs([pod]))
    manager.admit_handlers = [new_pod_resizes_admit_handler(manager, NodeConfig(cpu_manager_policy=cpu_manager_policy)),
                              *extra_admit, lifecycle.new_predicate_admit_handler(lambda: node)]
    kubelet.syncer.allocation, kubelet.syncer.resize, handlers.allocation = manager, state, manager
    kubelet.add_timer(manager.next_periodic_retry, manager.periodic_retry)  # manager.Run's goroutine
    return state
# --8<-- [end:wire_resize]


class TimedWrites(list):
    """The runtime's cgroup writes, each with the second it was made at (`times`)."""

    def __init__(self, clock, writes=()):
        super().__init__()
        self.clock, self.times = clock, []
        self += writes

    def append(self, write) -> None:
        super().append(write)
        self.times.append(int(self.clock.elapsed().total_seconds()))

    def __iadd__(self, writes):
        for write in writes:
            self.append(write)
        return self


def apply_resize(server, args: dict) -> tuple[Optional[V1Pod], str]:
    """Store the new resources in the API's pod (its generation goes up): the stored pod, and the line to show."""
    stored = server.by_name(args["pod"])
    if stored is None:
        return None, f"kubectl patch pod {args['pod']} --subresource resize: not found in the API"
    pod = resized(stored, args["containers"])
    pod.metadata.generation = (pod.metadata.generation or 1) + 1
    server.pods[pod.metadata.uid] = pod
    server.version += 1
    wanted = "; ".join(f"{name}: " + ", ".join(f"{kind} {' '.join(f'{k}={v}' for k, v in values.items())}"
                                                for kind, values in new.items()) for name, new in args["containers"].items())
    return pod, f"kubectl patch pod {args['pod']} --subresource resize ({wanted}): generation {pod.metadata.generation}"


def resized(pod: V1Pod, containers: dict[str, dict]) -> V1Pod:
    """A copy of the pod with each named container's new requests and limits over its own."""
    pod = api.deep_copy(pod)
    for c in [*(pod.spec.init_containers or []), *pod.spec.containers]:
        new = containers.get(c.name)
        if new is not None:
            resources = c.resources or V1ResourceRequirements()
            c.resources = V1ResourceRequirements(requests={**(resources.requests or {}), **new.get("requests", {})},
                                                 limits={**(resources.limits or {}), **new.get("limits", {})})
    return pod


def usage_stats(pod: V1Pod, usage: dict[str, int]) -> PodStats:
    """The pod's memory stats from each container's usage (what the kubelet reads before lowering a limit)."""
    return PodStats(memory=MemoryStats(usage_bytes=sum(usage.values())), containers=[
        ContainerStats(name=c.name, memory=MemoryStats(usage_bytes=usage.get(c.name, 0))) for c in pod.spec.containers])


class ResizeWatch:
    """Fills a report's `resizes` (each set or removal of a resize condition) and `cgroups` (each write) as they happen."""

    def __init__(self, kubelet, name_of: Callable[[str], str], resizes: list, cgroups: list):
        self.kubelet, self.name_of, self.resizes, self.cgroups = kubelet, name_of, resizes, cgroups
        self.conditions: dict[str, dict] = {}  # pod UID -> its resize conditions when last looked at
        self.seen_writes = 0
        manager = kubelet.status_manager
        for name in ("set_pod_resize_pending_condition", "set_pod_resize_in_progress_condition",
                     "clear_pod_resize_pending_condition", "clear_pod_resize_in_progress_condition"):
            method = getattr(manager, name)

            def observed(uid, *args, _method=method):  # several can change in one second
                result = _method(uid, *args)
                self._conditions(uid)
                return result
            setattr(manager, name, observed)

    def _conditions(self, uid: str) -> None:
        """The pod's resize conditions that changed since last looked at: each set (True) or removed."""
        t = int(self.kubelet.clock.elapsed().total_seconds())
        now = {c.type: (c.reason or "", c.message or "") for c in self.kubelet.status_manager.get_pod_resize_conditions(uid)}
        before = self.conditions.get(uid, {})
        for kind in sorted(set(now) | set(before), key=lambda k: k != "PodResizePending"):
            if now.get(kind) != before.get(kind):
                reason, message = now.get(kind, ("", ""))
                self.resizes.append({"time": t, "pod": self.name_of(uid), "type": kind,
                                     "status": "True" if kind in now else "removed", "reason": reason, "message": message})
        self.conditions[uid] = now

    def collect_writes(self) -> None:
        """The cgroup writes made since the last look, at the seconds they were made."""
        writes = self.kubelet.runtime.cgroup_writes
        for w, t in zip(writes[self.seen_writes:], writes.times[self.seen_writes:]):
            self.cgroups.append({"time": t, "cgroup": w.cgroup, "file": w.file, "old": w.old, "new": w.new})
        self.seen_writes = len(writes)


def read_resize_expect(r: Reader, key: str, where: str, item: dict) -> None:
    """An expect.resizes or expect.cgroups item, checked in place (times in seconds, a cgroup's fields as strings)."""
    if "at" in item:
        item["at"] = r.duration(item["at"], f"{where}.at")
    elif key == "cgroups":
        r.fail(f"{where}.at", "required: the time the file is looked at")
    for required in ("cgroup", "file", "value") if key == "cgroups" else ():
        if required not in item:
            r.fail(f"{where}.{required}", "required")
        item[required] = str(item[required])


def show(key: str, value: Any) -> str:
    """A value as a failure line shows it: times as durations."""
    return format_duration(value) if key in ("at", "backOff", "preStop", "sigterm", "sigkillBy") and isinstance(
        value, int) else repr(value)


# --8<-- [start:check_resize_expect]
def check_resize_expect(expect: dict, resizes: list[dict], cgroups: list[dict]) -> tuple[int, list[str]]:
    """The expect block's resizes (seen in this order, others between) and cgroups (a file's value at a time)."""
    failures, checked = [], 0
    if "resizes" in expect:
        checked += 1
        position = 0
        for j, want in enumerate(expect["resizes"]):
            match = next((k for k in range(position, len(resizes))
                          if all(resizes[k].get("time" if key == "at" else key) == value for key, value in want.items())), None)
            if match is None:
                failures.append(f"resizes[{j}]: not seen{' after the previous one' if j else ''}: "
                                + " ".join(f"{k}={show(k, v)}" for k, v in want.items()))
                break
            position = match + 1
    for j, want in enumerate(expect.get("cgroups", [])):
        checked += 1
        writes = [w for w in cgroups if (w["cgroup"], w["file"]) == (want["cgroup"], want["file"]) and w["time"] <= want["at"]]
        got = writes[-1]["new"] if writes else None
        if got != want["value"]:
            failures.append(f"cgroups[{j}] ({want['cgroup']} {want['file']} at {format_duration(want['at'])}): expected "
                            f"{want['value']!r}, got {got!r}" + ("" if writes else " (not written by then)"))
    return checked, failures
# --8<-- [end:check_resize_expect]
