"""Replay a lifecycle scenario: a kubelet (mini_kubelet.kubelet_main) and an API server, one second at a time.

Upstream: pkg/kubelet/kubelet.go Kubelet.Run (the loop being replayed); the API server's side (deletions,
mirror pods, stored status) is reduced to what this node's kubelet reads and writes.
Each second: the pods due arrive from their sources, containers end as the scenario's `run:` says,
the scenario's events happen, the kubelet takes one pass (relist, ticks, messages, pod workers), and
what the status manager would write is stored in the API (a finished deleted pod leaves it).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Optional, Union

from kubernetes.client import ApiClient, V1Pod

from .. import api, types
from ..clock import Clock
from ..cri import CRIError
from ..events import WARNING
from ..kubelet_main import Kubelet
from .lifecycle_api import APIServer
from .lifecycle_scenario import LifecycleEvent, LifecycleScenario, load_lifecycle_scenario, read_scenario
from .lifecycle_timeline import (ContainerChange, LifecycleTimeline, Restart, WatchLine, back_off_of, container_state,
                                 print_pod)
from .series import parse_duration

CONTAINER_UNHEALTHY = "Unhealthy"  # pkg/kubelet/events/event.go ContainerUnhealthy




# --8<-- [start:run_lifecycle]
def run_lifecycle(source: Union[str, Path, LifecycleScenario], *,
                  skip_settled_resyncs: bool = False) -> LifecycleTimeline:
    """Replay the scenario second by second and collect what `kubectl get pods -w` and `describe` would show.

    Upstream: pkg/kubelet/kubelet.go Kubelet.Run (syncLoop and the PLEG on the virtual clock)
    skip_settled_resyncs is the Kubelet's (the same timeline, faster on a node of many quiet pods).
    """
    if isinstance(source, LifecycleScenario):
        scenario = source
    else:
        doc, where, base, name = read_scenario(source)
        scenario = load_lifecycle_scenario(doc, where, base, name)
    clock = Clock()
    kubelet = Kubelet(clock, scenario.node, skip_settled_resyncs=skip_settled_resyncs)
    server = APIServer(kubelet)
    kubelet.syncer.mirror_client = server
    timeline = LifecycleTimeline(scenario)
    recorder = _Recorder(kubelet, server, timeline)
    static: list[V1Pod] = []
    for t in range(scenario.duration + 1):
        if t:
            clock.advance(1)
        for plan in scenario.pods:
            if plan.at == t and plan.source == "api":
                server.pods[plan.pod.metadata.uid] = copy.deepcopy(plan.pod)
            elif plan.at == t:
                static.append(copy.deepcopy(plan.pod))
        if t == 0 or any(p.at == t for p in scenario.pods):
            kubelet.send(types.FILE_SOURCE, [copy.deepcopy(p) for p in static])
            server.send()
        _run_containers(kubelet, scenario, recorder, t)
        for event in (e for e in scenario.events if e.at == t):
            _apply(kubelet, server, scenario, event, recorder, t)
        kubelet.step()
        if _write_statuses(kubelet, server, recorder, t):
            server.send()
            kubelet.step()  # the API source's watch delivers at once: same instant
        recorder.record(t)
    recorder.finish()
    return timeline
# --8<-- [end:run_lifecycle]


def _run_containers(kubelet: Kubelet, scenario: LifecycleScenario, recorder: "_Recorder", t: int) -> None:
    """End each running container whose `run:` time is up (its exit code, or the OOM killer)."""
    plans = {p.pod.metadata.uid: p for p in scenario.pods}
    for c in list(kubelet.runtime.containers.values()):
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
           recorder: "_Recorder", t: int) -> None:
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


def _write_statuses(kubelet: Kubelet, server: APIServer, recorder: "_Recorder", t: int) -> bool:
    """Store what the status manager writes; delete a deleted pod once it is finished. True if the API changed."""
    changed = False
    for uid, stored in list(server.pods.items()):
        if types.is_mirror_pod(stored):
            pod = kubelet.pod_manager.get_pod_by_mirror_pod(stored)
        else:
            pod = kubelet.pod_manager.get_pod_by_uid(uid)
        if pod is None:
            continue
        status = kubelet.pod_status(pod)
        if status is not None and status != stored.status:
            stored.status, changed = copy.deepcopy(status), True
        if (not types.is_mirror_pod(stored) and stored.metadata.deletion_timestamp is not None
                and kubelet.status_manager.can_be_deleted(uid)):
            del server.pods[uid]  # the status manager's syncPod deletes it with grace period 0
            recorder.note(t, f"{stored.metadata.name} is removed from the API server")
            changed = True
    return changed


class _Recorder:
    """Turns the kubelet's state after each second into the timeline's lines."""

    def __init__(self, kubelet: Kubelet, server: APIServer, timeline: LifecycleTimeline):
        self.kubelet, self.server, self.timeline = kubelet, server, timeline
        self.columns: dict[str, tuple] = {}
        self.states: dict[tuple[str, str], tuple] = {}
        self.back_offs: dict[tuple[str, str], Optional[int]] = {}
        self.counts: dict[tuple[str, str], int] = {}
        self.seen_events = self.seen_worker_events = self.seen_kills = self.seen_notes = 0
        self.last_status: dict[str, object] = {}

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
        for plan in tl.scenario.pods:
            if plan.at > t:
                continue
            name = plan.pod.metadata.name
            pod = kubelet.pod_manager.get_pod_by_uid(plan.pod.metadata.uid)
            if pod is None:
                continue  # not admitted yet, or gone
            status = kubelet.status_manager.api_statuses.get(pod.metadata.uid) or kubelet.pod_status(pod)
            self.last_status[name] = status
            ready, column, restarts = print_pod(pod, status)
            phase = (status.phase if status is not None else None) or "Pending"
            if self.columns.get(name) != (ready, column, restarts, phase):
                self.columns[name] = (ready, column, restarts, phase)
                tl.watch.append(WatchLine(t, name, ready, column, restarts, phase))
            for init, statuses in ((True, status.init_container_statuses if status else None),
                                   (False, status.container_statuses if status else None)):
                for c in statuses or []:
                    self._container(t, name, c, init)

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
