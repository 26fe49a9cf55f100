"""The replay: scenario events, pod stops and synchronize passes in time order, on a virtual clock.

Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.Start (the loop this file replays) and
pkg/kubelet/kubelet.go (evictionMonitoringPeriod = 10 s); the kubelet's pod workers are reduced to
"the pod stops when its grace period ends".
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Union

from ... import stats
from ...clock import Clock
from ...eviction import images, manager as mgr, signals
from ...eviction.records import EvictedPod, SyncRecord
from ...kuberuntime.kuberuntime_container import stop_timeout_without_hook
from ...pod_workers import KILL_POD_NOW_MIN_TIMEOUT
from .scenario import Event, Scenario, load_scenario
from ..series import Series, format_duration
from .summary import RunningPod, build_summary, over_limit, scenario_time
from .timeline import (Admission, Eviction, Happening, Step, Timeline, decided_by, format_bytes, pod_label, rank_rows,
                       threshold_text, value_text)

# --8<-- [start:constants]
EVICTION_MONITORING_PERIOD = 10  # seconds between passes when nothing was evicted (kubelet.go)
POD_CLEANUP_TIMEOUT = 30  # seconds waitForPodsCleanup waits at most (eviction_manager.go podCleanupTimeout)
POD_CLEANUP_POLL_FREQ = 1  # seconds between its checks (podCleanupPollFreq)
KILL_POD_MIN_TIMEOUT = KILL_POD_NOW_MIN_TIMEOUT  # killPodNow waits max(10, override + override/2) seconds (pod_workers.go)
EXCEEDED_GRACE_PERIOD = "ExceededGracePeriod"  # the Warning event killPodNow records on the pod when it stops waiting
EXCEEDED_GRACE_PERIOD_MESSAGE = "Container runtime did not kill the pod within specified grace period."
ZERO_TIME = datetime(1, 1, 1, tzinfo=timezone.utc)  # Go's zero time: "detected at kubelet start"
# --8<-- [end:constants]


# --8<-- [start:run_scenario]
def run_scenario(source: Union[str, Path, dict, Scenario]) -> Timeline:
    """Replay the scenario: events, pod stops and synchronize passes in time order, on a virtual clock.

    Upstream: pkg/kubelet/eviction/eviction_manager.go managerImpl.Start (the loop), with the kubelet's
    pod workers reduced to "the pod stops when its grace period ends".
    """
    scenario = source if isinstance(source, Scenario) else load_scenario(source)
    clock = Clock()
    store = images.ImageStore()
    for image in scenario.images:
        detected = ZERO_TIME if image["detected"] is None else scenario_time(clock.now(), image["detected"])
        record = store.add_image(image["name"], image["size"], detected, pinned=image["pinned"], inodes=image["inodes"])
        record.last_used = None if image["lastUsed"] is None else scenario_time(clock.now(), image["lastUsed"])
    running: list[RunningPod] = [RunningPod(plan, 0) for plan in scenario.pods]
    node_usage = dict(scenario.node_usage)
    timeline = Timeline(scenario, [], [], [], [])
    state = {"t": 0, "cursor": 0}

    def summary_now() -> stats.Summary:
        return build_summary(scenario, running, store, state["t"], clock.now(), node_usage)[0]

    def kill_pod(evicted: EvictedPod) -> None:
        # killPodNow blocks until the pod stops or max(10, 1.5 x override) seconds pass, one pod after the other.
        # The wait comes from the raw override: 10 s for an override of 0, whatever grace period the pod gets
        # (v1.27: 30 s for a hard eviction, so the wait ends first). From 1.31 a hard eviction's override is
        # 1 s and the pod gets 1 s: still a 10 s wait at most; its containers get killContainer's 2 s floor
        # (from 1.28 the floor applies after the override), so the pod is gone after 2 s.
        target = next(p for p in running if p.pod.metadata.uid == evicted.pod.metadata.uid)
        start, grace, override = state["cursor"], evicted.effective_grace_period, evicted.grace_period_override
        stops = start + stop_timeout_without_hook(grace)
        target.stops_at = stops if target.stops_at is None else min(target.stops_at, stops)  # grace only shrinks
        timeout = max(KILL_POD_MIN_TIMEOUT, override + int(override / 2))
        if target.stops_at - start >= timeout:  # still stopping when the wait ends: killPodNow records the event
            timeline.happenings.append(Happening(
                start + timeout, f"event {EXCEEDED_GRACE_PERIOD} (Warning) on {pod_label(target.pod)}: "
                f"{EXCEEDED_GRACE_PERIOD_MESSAGE} (killPodNow stopped waiting after {format_duration(timeout)}; "
                f"the pod stops at {format_duration(target.stops_at)})"))
        state["cursor"] = start + min(target.stops_at - start, timeout)

    manager = mgr.Manager(scenario.config, clock, image_store=store, kill_pod=kill_pod,
                          dedicated_image_fs=scenario.dedicated_image_fs, summary_after_reclaim=summary_now)
    timeline.thresholds = _thresholds(scenario.config.thresholds)
    _mark_images_in_use(store, running, clock.now())
    events, t = list(scenario.events), 0
    over: set = set()  # the containers above their own memory limit at the last pass
    while t <= scenario.duration:
        # Everything due before or at this pass, in time order: pods stopping first, then events.
        while True:
            stops = [p.stops_at for p in running if p.stops_at is not None and p.stops_at <= t]
            due = min(stops + [e.at for e in events if e.at <= t], default=None)
            if due is None:
                break
            clock.advance(due - state["t"])
            state["t"] = due
            for pod in [p for p in running if p.stops_at == due]:
                running.remove(pod)
                timeline.happenings.append(Happening(due, f"{pod_label(pod.pod)} stopped (evicted pod gone)"))
            for event in [e for e in events if e.at == due]:
                events.remove(event)
                _apply_event(event, due, clock.now(), manager, running, store, node_usage, timeline)
            _mark_images_in_use(store, running, clock.now())
        clock.advance(t - state["t"])
        state["t"] = state["cursor"] = t
        summary, notes = build_summary(scenario, running, store, t, clock.now(), node_usage)
        above = over_limit(running, t)
        notes += [note for key, note in above.items() if key not in over]  # said once, when it goes over
        over = set(above)
        deleted_before = len(store.deleted)
        evicted = manager.synchronize(summary, [p.pod for p in running])
        timeline.steps.append(_step(t, manager.last_sync, summary, evicted, notes, running, store.deleted[deleted_before:],
                                    scenario))
        if evicted:
            # waitForPodsCleanup: a check every second, for at most 30 s, then the next pass at once.
            uids = {e.pod.metadata.uid for e in evicted}
            last_stop = max(p.stops_at for p in running if p.pod.metadata.uid in uids)
            t = state["cursor"] + min(max(POD_CLEANUP_POLL_FREQ, last_stop - state["cursor"]), POD_CLEANUP_TIMEOUT)
        else:
            t += EVICTION_MONITORING_PERIOD
    timeline.happenings.sort(key=lambda h: h.time)  # an ExceededGracePeriod event is noted when its kill starts
    # From 1.29 the manager's first pass adds containerfs copies of the disk thresholds: list what it watched
    # (an empty copy, with no operator, can never be met and is left out).
    timeline.thresholds = _thresholds([t for t in manager.config.thresholds if t.operator])
    return timeline
# --8<-- [end:run_scenario]


def _thresholds(thresholds: list) -> list[dict]:
    """The thresholds as the timeline lists them."""
    return [{"signal": t.signal, "text": threshold_text(t), "hard": not t.grace_period,
             "grace_period": int(t.grace_period.total_seconds()),
             "min_reclaim": None if t.min_reclaim is None else value_text(t.min_reclaim)} for t in thresholds]


def _apply_event(event: Event, t: int, now: datetime, manager: mgr.Manager, running: list[RunningPod],
                 store: images.ImageStore, node_usage: dict[str, Series], timeline: Timeline) -> None:
    """Apply one scenario event at time t: an admission attempt, an image pull, or a usage change."""
    if event.kind == "addPod":
        pod = event.payload.pod
        result = manager.admit(pod, [p.pod for p in running])
        timeline.admissions.append(Admission(t, pod_label(pod), result.admit, result.reason, result.message))
        if result.admit:
            running.append(RunningPod(event.payload, t))
    elif event.kind == "pullImage":
        image = event.payload
        store.add_image(image["name"], image["size"], now, pinned=image["pinned"], inodes=image["inodes"])
        timeline.happenings.append(Happening(t, f"image {image['name']} pulled ({format_bytes(image['size'])})"))
    elif "node" in event.payload:
        for key, value in event.payload["node"].items():
            node_usage[key] = Series([(0, value)])
        changes = ", ".join(f"{k} {format_bytes(v)}" for k, v in event.payload["node"].items())
        timeline.happenings.append(Happening(t, f"node usage set: {changes}"))
    else:
        target = next((p for p in running if p.pod.metadata.name == event.payload["pod"]), None)
        if target is None:
            timeline.happenings.append(Happening(t, f"pod {event.payload['pod']} is not running: usage change ignored"))
            return
        for key, value in event.payload["values"].items():
            series = Series([(0, value)])
            if key == "pids":
                target.plan.pids = series
            else:
                target.plan.containers[event.payload["container"]][key] = series
        for name, value in event.payload["volumes"].items():
            target.plan.volumes[name] = Series([(0, value)])
        changes = {**event.payload["values"], **{f"volume {k}": v for k, v in event.payload["volumes"].items()}}
        text = ", ".join(f"{k} {v if k == 'pids' or k == 'inodes' else format_bytes(v)}" for k, v in changes.items())
        timeline.happenings.append(Happening(t, f"{pod_label(target.pod)} usage set: {text}"))


def _mark_images_in_use(store: images.ImageStore, running: list[RunningPod], now: datetime) -> None:
    """Images of running pods' containers are in use (their last-used time is now); the others are not."""
    used = {c.image for p in running for c in p.pod.spec.containers + (p.pod.spec.init_containers or [])}
    for name, record in store.images.items():
        if (name in used) != record.in_use:
            store.set_in_use(name, name in used, now)


def _step(t: int, record: SyncRecord, summary: stats.Summary, evicted: list, notes: list[str],
          running: list[RunningPod], deleted: list[str], scenario: Scenario) -> Step:
    """The timeline entry for one pass, from the manager's record of it."""
    step = Step(t, {s: {"available": o.available, "capacity": o.capacity} for s, o in record.observations.items()},
                [threshold_text(x) for x in record.thresholds_met], [threshold_text(x) for x in record.thresholds_to_act_on],
                list(record.node_conditions), notes=notes)
    if record.reclaimed is not None:
        step.reclaimed = {"bytes": record.reclaimed[0], "inodes": record.reclaimed[1], "images": list(deleted),
                          "sufficient": record.reclaim_sufficient}
    _, stats_func = signals.make_signal_observations(summary)
    stops = {p.pod.metadata.uid: p.stops_at for p in running}
    for one in evicted:
        signal = one.signal
        local = record.threshold_to_reclaim is None or signal != record.threshold_to_reclaim.signal
        rows = [] if local else rank_rows(signal, record.ranked, stats_func, scenario.dedicated_image_fs)
        index = next((i for i, row in enumerate(rows) if row.pod == pod_label(one.pod)), 0)
        step.evictions.append(Eviction(
            time=t, pod=pod_label(one.pod), signal=signal,
            threshold=signal if local else threshold_text(record.threshold_to_reclaim),
            hard=True if local else not record.threshold_to_reclaim.grace_period,  # local-storage evictions are immediate
            grace_period_override=one.grace_period_override, grace_period=one.effective_grace_period,
            stops_at=stops[one.pod.metadata.uid], message=one.message, annotations=dict(one.annotations),
            ranking=rows, decided_by="a local ephemeral-storage limit was exceeded" if local else decided_by(rows, index, signal)))
    return step
