"""Replay a lifecycle scenario: a kubelet (mini_kubelet.kubelet_main) and an API server, one second at a time.

Upstream: pkg/kubelet/kubelet.go Kubelet.Run (the loop being replayed); the API server's side (deletions,
mirror pods, stored status) is reduced to what this node's kubelet reads and writes.
Each second: the pods due arrive from their sources, containers end as the scenario's `run:` says,
the scenario's events happen, the kubelet takes one pass (relist, ticks, messages, pod workers), and
what the status manager would write is stored in the API (a finished deleted pod leaves it).
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from pathlib import Path
from typing import Optional, Union

from kubernetes.client import ApiClient, V1Pod

from ... import api, features, types
from ...clock import Clock
from ...cri import CRIError
from ...events import WARNING
from ...kubelet_main import Kubelet
from ...api import models_equal
from .api import APIServer
from ..resize import ResizeWatch, apply_resize, usage_stats, wire_resize
from .scenario import LifecycleEvent, LifecycleScenario, load_lifecycle_scenario, read_scenario
from ..reader import scenario_profile
from .timeline import (ContainerChange, LifecycleTimeline, Restart, WatchLine, back_off_of, container_state,
                                 print_pod)
from ..series import parse_duration

CONTAINER_UNHEALTHY = "Unhealthy"  # pkg/kubelet/events/event.go ContainerUnhealthy




# --8<-- [start:run_lifecycle]
def run_lifecycle(source: Union[str, Path, LifecycleScenario], *,
                  skip_settled_resyncs: bool = False) -> LifecycleTimeline:
    """Replay the scenario second by second and collect what `kubectl get pods -w` and `describe` would show.

    Upstream: pkg/kubelet/kubelet.go Kubelet.Run (syncLoop and the PLEG on the virtual clock)
    skip_settled_resyncs is the Kubelet's (the same timeline, faster on a node of many quiet pods).
    """
    if isinstance(source, LifecycleScenario):
        return _replay(source, skip_settled_resyncs)
    doc, where, base, name = read_scenario(source)
    profile = scenario_profile(doc, where)  # the release a scenario file names, for this replay only
    with features.release_profile(*profile) if profile else contextlib.nullcontext():
        return _replay(load_lifecycle_scenario(doc, where, base, name), skip_settled_resyncs)


def _replay(scenario: LifecycleScenario, skip_settled_resyncs: bool) -> LifecycleTimeline:
    """run_lifecycle's loop, under whatever release profile is in force."""
    clock = Clock()
    period = scenario.kubelet.get("crashLoopBackOff", {}).get("maxContainerRestartPeriod")
    kubelet = Kubelet(clock, scenario.node, skip_settled_resyncs=skip_settled_resyncs,
                      max_container_restart_period=timedelta(seconds=period) if period is not None else None)
    server = APIServer(kubelet)
    kubelet.syncer.mirror_client = server
    timeline = LifecycleTimeline(scenario)
    resize = None
    if any(e.kind == "resize" for e in scenario.events):
        resize = wire_resize(kubelet, scenario.node, api.value(scenario.node.status.capacity.get("memory", "16Gi")),
                             cpu_manager_policy=scenario.kubelet.get("cpuManagerPolicy", "none"))
    recorder = _Recorder(kubelet, server, timeline)
    static: list[V1Pod] = []
    arrivals, happenings = _by_time(scenario.pods), _by_time(scenario.events)
    writer = _StatusWriter(kubelet, server, recorder)
    for plan in scenario.pods:  # how long each preStop hook runs, for the runtime's handler runner
        for name, seconds in plan.pre_stop.items():
            kubelet.runtime.hook_durations[(plan.pod.metadata.uid, name)] = seconds
    for t in range(scenario.duration + 1):
        if t:
            clock.advance(1)
        for plan in arrivals.get(t, ()):
            if plan.source == "api":
                server.pods[plan.pod.metadata.uid] = api.deep_copy(plan.pod)
                server.version += 1
            else:
                static.append(api.deep_copy(plan.pod))
        if t == 0 or t in arrivals:
            kubelet.send(types.FILE_SOURCE, [api.deep_copy(p) for p in static])
            server.send()
        _run_containers(kubelet, scenario, recorder, t)
        for event in happenings.get(t, ()):
            _apply(kubelet, server, scenario, event, recorder, t, resize)
        kubelet.step()
        if writer.write_statuses(t):
            server.send()
            kubelet.step()  # the API source's watch delivers at once: same instant
        recorder.record(t)
    recorder.finish()
    return timeline
# --8<-- [end:run_lifecycle]


def _by_time(items: list) -> dict[int, list]:
    """The scenario's pods or events by the second they come at, in their order."""
    found: dict[int, list] = {}
    for item in items:
        found.setdefault(item.at, []).append(item)
    return found


def _run_containers(kubelet: Kubelet, scenario: LifecycleScenario, recorder: "_Recorder", t: int) -> None:
    """End each running container whose `run:` time is up (its exit code, or the OOM killer)."""
    plans = {p.pod.metadata.uid: p for p in scenario.pods if p.run}
    runtime = kubelet.runtime
    held = [c for uid in plans for c in runtime.containers.of(uid)]  # only pods told how their containers end
    for c in sorted(held, key=lambda c: int(c.id.split("-")[-1])):  # in the order they were created
        plan = plans.get(c.pod_uid)
        behaviour = plan.run.get(c.name) if plan else None
        if behaviour is None or c.state != "running" or c.started_at is None:
            continue
        if (kubelet.clock.now() - c.started_at).total_seconds() >= behaviour["after"]:
            if behaviour["oomKill"]:
                kubelet.runtime.oom_kill_container(c.pod_uid, c.name)
            else:
                kubelet.runtime.exit_container(c.pod_uid, c.name, behaviour["exitCode"])


def _apply(kubelet: Kubelet, server: APIServer, scenario: LifecycleScenario, event: LifecycleEvent,
           recorder: "_Recorder", t: int, resize=None) -> None:
    """One scenario event, on the runtime (exits, sandboxes), the prober's results, or the API server (deletions)."""
    plan = scenario.find_pod(event.args["pod"])
    uid, name, args = plan.pod.metadata.uid, plan.pod.metadata.name, event.args
    try:
        if event.kind == "exit":
            kubelet.runtime.exit_container(uid, args["container"], args["code"])
            recorder.note(t, f"{name}: container {args['container']} exits with code {args['code']}")
        elif event.kind == "crash":
            kubelet.runtime.crash_container(uid, args["container"], args["code"])
            recorder.note(t, f"{name}: container {args['container']} crashes (exit code {args['code']})")
        elif event.kind == "oomKill":
            kubelet.runtime.oom_kill_container(uid, args["container"])
            recorder.note(t, f"{name}: the kernel's OOM killer ends container {args['container']}")
        elif event.kind == "sandboxDies":
            kubelet.runtime.kill_sandbox(uid)
            recorder.note(t, f"{name}: the pod sandbox dies")
        elif event.kind == "resize":
            pod, line = apply_resize(server, args)
            if pod is not None:
                resize.pod_stats[uid] = usage_stats(pod, args["memoryUsage"])
            recorder.note(t, line)
            server.send()
        elif event.kind == "probe":
            _probe(kubelet, plan.pod, args, recorder, t)
        elif event.kind == "delete":
            target = server.by_name(name)
            if target is None:
                recorder.note(t, f"kubectl delete pod {name}: not found in the API")
                return
            grace = server.delete(target, args.get("gracePeriod"))
            recorder.note(t, f"kubectl delete pod {name} (grace period {grace}s)"
                          + (": a mirror pod; the static pod stays" if types.is_mirror_pod(target) else ""))
            server.send()
    except CRIError as err:
        recorder.note(t, f"{event.path} ({event.kind}) had no effect: {err}")


def _probe(kubelet: Kubelet, pod: V1Pod, args: dict, recorder: "_Recorder", t: int) -> None:
    """A probe's result changes: the prober records it, and its manager's channel asks for a sync.

    Upstream: pkg/kubelet/prober/worker.go worker.doProbe (the result and the Unhealthy event) and
    kubelet.go syncLoopIteration (livenessManager.Updates() → handleProbeSync → HandlePodSyncs)
    """
    c = kubelet.runtime.running_container(pod.metadata.uid, args["container"])
    results = getattr(kubelet.syncer, args["probe"])
    results[c.id] = args["result"]
    probe_name = args["probe"].capitalize()
    if args["result"] == "Failure":
        kubelet.recorder.eventf(f"{pod.metadata.namespace}/{pod.metadata.name}{{{args['container']}}}", WARNING,
                                CONTAINER_UNHEALTHY, f"{probe_name} probe failed: {args.get('output', '')}".rstrip())
    recorder.note(t, f"{pod.metadata.name}: {args['probe']} probe of {args['container']} now reports {args['result']}")
    current = kubelet.pod_manager.get_pod_by_uid(pod.metadata.uid)
    if current is not None:
        kubelet.handlers.handle_pod_syncs([current])


class _StatusWriter:
    """Stores what the status manager writes in the API; deletes a deleted pod once it is finished.

    A pod's status is worked out again only when something it comes from has changed: the status manager's cached
    status, whether the pod's containers could still run, the status last sent, the pod, the stored status
    (mergePodStatus of the same inputs gives the same status, so the API would not change).
    `change_driven = False` looks at every pod every second instead (the same timeline, slower).
    """

    change_driven = True

    def __init__(self, kubelet: Kubelet, server: APIServer, recorder: "_Recorder"):
        self.kubelet, self.server, self.recorder = kubelet, server, recorder
        self.inputs: dict[str, tuple] = {}  # stored pod's UID -> the inputs of its status when last written
        self.quiet: Optional[tuple] = None  # the node's counters after a pass that changed nothing

    def _counters(self) -> tuple:
        """What every pod's inputs come from: the API's pods, the pod manager, the status manager, the workers."""
        kubelet, server = self.kubelet, self.server
        return (server.version, len(server.pods), kubelet.pod_manager.generation, kubelet.status_manager.generation,
                kubelet.pod_workers.pod_sync_statuses.changes, kubelet.pod_workers.pods_synced)

    def _inputs(self, pod: V1Pod, stored: V1Pod) -> tuple:
        uid, manager = pod.metadata.uid, self.kubelet.status_manager
        return (manager.pod_statuses.get(uid), manager.api_statuses.get(uid), pod, stored.status,
                self.kubelet.pod_workers.could_have_running_containers(uid))

    def write_statuses(self, t: int) -> bool:
        """Store what changed; True if the API changed."""
        kubelet, server, changed = self.kubelet, self.server, False
        counters = self._counters()
        if self.change_driven and counters == self.quiet:  # no pod's status can have changed, and no deleted pod can have finished
            return False
        for uid, stored in list(server.pods.items()):
            if types.is_mirror_pod(stored):
                pod = kubelet.pod_manager.get_pod_by_mirror_pod(stored)
            else:
                pod = kubelet.pod_manager.get_pod_by_uid(uid)
            if pod is None:
                continue
            before = self.inputs.get(uid)
            if not self.change_driven or before is None or not all(a is b for a, b in zip(before, self._inputs(pod, stored))):
                status = kubelet.pod_status(pod)
                if status is not None and not models_equal(status, stored.status):
                    stored.status, changed = api.deep_copy(status), True
                self.inputs[uid] = self._inputs(pod, stored)
            if (not types.is_mirror_pod(stored) and stored.metadata.deletion_timestamp is not None
                    and kubelet.status_manager.can_be_deleted(uid)):
                del server.pods[uid]  # the status manager's syncPod deletes it with grace period 0
                self.inputs.pop(uid, None)
                self.recorder.note(t, f"{stored.metadata.name} is removed from the API server")
                changed = True
        self.quiet = None if changed else counters
        return changed


class _Recorder:
    """Turns the kubelet's state after each second into the timeline's lines.

    A pod is read again only if its pod object or its status object is not the one read a second ago (the same
    objects print the same lines), and no pod is if no counter they come from has moved (but the back-off delays
    the statuses show are noted again every second, as reading them would). `change_driven = False` reads every
    pod every second instead (the same timeline, slower).
    """

    change_driven = True

    def __init__(self, kubelet: Kubelet, server: APIServer, timeline: LifecycleTimeline):
        self.kubelet, self.server, self.timeline = kubelet, server, timeline
        self.columns: dict[str, tuple] = {}
        self.states: dict[tuple[str, str], tuple] = {}
        self.back_offs: dict[tuple[str, str], Optional[int]] = {}
        self.counts: dict[tuple[str, str], int] = {}
        self.seen_events = self.seen_worker_events = self.seen_kills = self.seen_notes = self.seen_stops = 0
        names = {p.pod.metadata.uid: p.pod.metadata.name for p in timeline.scenario.pods}
        self.resize = None if kubelet.syncer.resize is None else ResizeWatch(
            kubelet, lambda uid: names.get(uid, uid), timeline.resizes, timeline.cgroups)
        self.last_status: dict[str, object] = {}
        self.read: dict[str, tuple] = {}  # pod name -> (pod, status, back-offs it showed) when last read
        self.quiet: Optional[tuple] = None  # the kubelet's counters after the last read of every pod
        self.showing_back_off: set[str] = set()  # pods whose last read showed a CrashLoopBackOff delay
        self.arrivals = {plan.at for plan in timeline.scenario.pods}

    def note(self, t: int, text: str) -> None:
        self.timeline.happenings.append({"time": t, "text": text})

    def record(self, t: int) -> None:
        """Read the kubelet and the API server after second t."""
        tl, kubelet = self.timeline, self.kubelet
        for text in self.server.notes[self.seen_notes:]:
            self.note(t, text)
        self.seen_notes = len(self.server.notes)
        for e in kubelet.recorder.events[self.seen_events:]:
            ref, _, container = e.involved.partition("{")
            tl.events.append({"time": t, "type": e.type, "reason": e.reason, "object": _object(ref, container.rstrip("}")),
                              "pod": ref.split("/", 1)[-1], "container": container.rstrip("}") or None,
                              "message": e.message})
        self.seen_events = len(kubelet.recorder.events)
        for pod, (kind, reason, message) in kubelet.pod_workers.events[self.seen_worker_events:]:
            name = pod.metadata.name if pod is not None else ""
            tl.events.append({"time": t, "type": kind, "reason": reason, "object": f"pod/{name}", "pod": name,
                              "container": None, "message": message})
        self.seen_worker_events = len(kubelet.pod_workers.events)
        for pod, grace in kubelet.syncer.kills[self.seen_kills:]:
            tl.kills.append({"time": t, "pod": pod.metadata.name, "gracePeriod": grace})
        self.seen_kills = len(kubelet.syncer.kills)
        self._stops(t)
        if self.resize is not None:
            self.resize.collect_writes()
        manager = kubelet.status_manager
        counters = (kubelet.pod_manager.generation, manager.generation, manager.api_generation)
        if self.change_driven and counters == self.quiet and t not in self.arrivals:  # every pod and status is the one read a second ago
            for name in self.showing_back_off:
                for key, back_off in self.read[name][2]:
                    self.back_offs[key] = back_off
            return
        for plan in tl.scenario.pods:
            if plan.at > t:
                continue
            name = plan.pod.metadata.name
            pod = kubelet.pod_manager.get_pod_by_uid(plan.pod.metadata.uid)
            if pod is None:
                continue  # not admitted yet, or gone
            status = kubelet.status_manager.api_statuses.get(pod.metadata.uid) or kubelet.pod_status(pod)
            self.last_status[name] = status
            read = self.read.get(name)
            if self.change_driven and read is not None and read[0] is pod and read[1] is status:  # the same as a second ago: no new line
                for key, back_off in read[2]:
                    self.back_offs[key] = back_off
                continue
            self.read[name] = (pod, status, [((name, c.name), parse_duration(back_off_of(c)))
                                             for c in [*(status.init_container_statuses or []),
                                                       *(status.container_statuses or [])] if back_off_of(c)]
                               if status is not None else [])
            (self.showing_back_off.add if self.read[name][2] else self.showing_back_off.discard)(name)
            ready, column, restarts = print_pod(pod, status)
            phase = (status.phase if status is not None else None) or "Pending"
            if self.columns.get(name) != (ready, column, restarts, phase):
                self.columns[name] = (ready, column, restarts, phase)
                tl.watch.append(WatchLine(t, name, ready, column, restarts, phase))
            for init, statuses in ((True, status.init_container_statuses if status else None),
                                   (False, status.container_statuses if status else None)):
                for c in statuses or []:
                    self._container(t, name, c, init)
        self.quiet = (kubelet.pod_manager.generation, manager.generation, manager.api_generation)

    def _stops(self, t: int) -> None:
        """The container stops of second t worth a line: a preStop hook ran, or the grace period is not the killPod's."""
        names = {p.pod.metadata.uid: p.pod.metadata.name for p in self.timeline.scenario.pods}
        overrides = {k["pod"]: k["gracePeriod"] for k in self.timeline.kills if k["time"] == t}
        for stop in self.kubelet.runtime.stops[self.seen_stops:]:
            pod = names.get(stop.pod_uid, stop.pod_uid)
            if stop.pre_stop is None and (pod not in overrides or overrides[pod] in (None, stop.grace_period)):
                continue
            waited, runs = stop.pre_stop or (None, None)
            self.timeline.stops.append({"time": t, "pod": pod, "container": stop.name, "preStop": waited,
                                        "preStopRuns": runs, "gracePeriod": stop.grace_period,
                                        "sigterm": t + (waited or 0), "sigkillBy": t + (waited or 0) + stop.grace_period})
        self.seen_stops = len(self.kubelet.runtime.stops)

    def _container(self, t: int, pod: str, c, init: bool) -> None:
        key = (pod, c.name)
        state, reason, code = container_state(c)
        back_off = back_off_of(c)
        if back_off is not None:
            self.back_offs[key] = parse_duration(back_off)
        count = c.restart_count or 0
        if count > self.counts.get(key, 0):
            last = c.last_state.terminated if c.last_state is not None else None
            self.timeline.restarts.append(Restart(t, pod, c.name, count, last.exit_code if last else None,
                                                  (last.reason or "") if last else "", self.back_offs.pop(key, None)))
        self.counts[key] = count
        if self.states.get(key) != (state, reason, code, count):
            self.states[key] = (state, reason, code, count)
            self.timeline.containers.append(ContainerChange(t, pod, c.name, init, state, reason, code, count))

    def finish(self) -> None:
        """The last status of each pod, as `kubectl get pod -o yaml` shows it (camelCase, RFC 3339 times)."""
        client = ApiClient()
        for name, status in self.last_status.items():
            self.timeline.final[name] = client.sanitize_for_serialization(status) if status is not None else None


def _object(ref: str, container: str) -> str:
    name = ref.split("/", 1)[-1]
    return f"pod/{name}" + (f" container/{container}" if container else "")


__all__ = ["APIServer", "run_lifecycle"]
