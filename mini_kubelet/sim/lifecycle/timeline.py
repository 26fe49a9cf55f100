"""What a lifecycle replay reports: `kubectl get pods -w` lines, container states, restarts, events, kills.

Upstream: kubectl's pod printer (k8s.io/kubernetes pkg/printers/internalversion/printers.go printPod) for the
READY, STATUS and RESTARTS columns; the rest is what `kubectl describe pod` lists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from kubernetes.client import V1ContainerStatus, V1Pod, V1PodStatus

from ...container import is_restartable_init_container
from .scenario import LifecycleScenario


# --8<-- [start:print_pod]
def print_pod(pod: V1Pod, status: Optional[V1PodStatus]) -> tuple[str, str, int]:
    """The READY, STATUS and RESTARTS columns of `kubectl get pods` for the pod and its status.

    With the SidecarContainers gate on, as kubectl prints since 1.29: a sidecar counts in READY's total, a
    started one does not hold the STATUS at Init:i/n (it counts as ready if it is), its restarts alone
    are added to the regular containers', and an Initialized pod shows its regular containers.
    Upstream: pkg/printers/internalversion/printers.go printPod (without SchedulingGated, the node-lost
    Unknown, and the "(5s ago)" after the restart count)
    """
    status = status or V1PodStatus(phase="Pending")
    reason = status.reason or status.phase or ""
    restarts = ready = sidecar_restarts = 0
    initializing = False
    specs = {c.name: c for c in pod.spec.init_containers or []}
    sidecars = {name for name, c in specs.items() if is_restartable_init_container(c)}  # none with the gate off
    for i, c in enumerate(status.init_container_statuses or []):
        restarts += c.restart_count or 0
        if c.name in sidecars:
            sidecar_restarts += c.restart_count or 0
        term, wait = (c.state.terminated, c.state.waiting) if c.state else (None, None)
        if term is not None and term.exit_code == 0:
            continue
        if c.name in sidecars and c.started:
            ready += bool(c.ready)
            continue
        if term is not None:
            reason = "Init:" + (term.reason or (f"Signal:{term.signal}" if term.signal else f"ExitCode:{term.exit_code}"))
        elif wait is not None and wait.reason and wait.reason != "PodInitializing":
            reason = "Init:" + wait.reason
        else:
            reason = f"Init:{i}/{len(pod.spec.init_containers or [])}"
        initializing = True
        break
    initialized = any(x.type == "Initialized" and x.status == "True" for x in status.conditions or [])
    if not initializing or (sidecars and initialized):
        restarts, has_running = sidecar_restarts, False
        for c in reversed(status.container_statuses or []):
            restarts += c.restart_count or 0
            term, wait = (c.state.terminated, c.state.waiting) if c.state else (None, None)
            if wait is not None and wait.reason:
                reason = wait.reason
            elif term is not None and term.reason:
                reason = term.reason
            elif term is not None:
                reason = f"Signal:{term.signal}" if term.signal else f"ExitCode:{term.exit_code}"
            elif c.ready and c.state is not None and c.state.running is not None:
                has_running, ready = True, ready + 1
        if reason == "Completed" and has_running:  # a container still runs: back to Running (or NotReady)
            ready_condition = next((x for x in status.conditions or [] if x.type == "Ready"), None)
            reason = "Running" if ready_condition is not None and ready_condition.status == "True" else "NotReady"
    if pod.metadata.deletion_timestamp is not None:
        reason = "Terminating"
    return f"{ready}/{len(pod.spec.containers) + len(sidecars)}", reason, restarts
# --8<-- [end:print_pod]


def container_state(c: V1ContainerStatus) -> tuple[str, str, Optional[int]]:
    """(waiting|running|terminated, reason, exit code) of one container status."""
    if c.state is not None and c.state.running is not None:
        return "running", "", None
    if c.state is not None and c.state.terminated is not None:
        return "terminated", c.state.terminated.reason or "", c.state.terminated.exit_code
    return "waiting", (c.state.waiting.reason or "") if c.state and c.state.waiting else "", None


_BACK_OFF = re.compile(r"^back-off (\S+) restarting failed")


def back_off_of(c: V1ContainerStatus) -> Optional[str]:
    """The delay in a CrashLoopBackOff waiting message ("back-off 20s restarting failed ..."), else None."""
    wait = c.state.waiting if c.state else None
    if wait is None or wait.reason != "CrashLoopBackOff" or not wait.message:
        return None
    match = _BACK_OFF.match(wait.message)
    return match.group(1) if match else None


@dataclass
class WatchLine:
    """One line of `kubectl get pods -w`: the pod's columns changed at this time."""

    time: int
    pod: str
    ready: str
    status: str
    restarts: int
    phase: str


@dataclass
class ContainerChange:
    """A container's state changed (as the API status shows it)."""

    time: int
    pod: str
    container: str
    init: bool
    state: str
    reason: str
    exit_code: Optional[int]
    restart_count: int


@dataclass
class Restart:
    """A container started again: its count, how it ended before, and the back-off it waited (None: at once)."""

    time: int
    pod: str
    container: str
    count: int
    exit_code: Optional[int]
    reason: str
    back_off: Optional[int]  # seconds, from the CrashLoopBackOff message


@dataclass
class LifecycleTimeline:
    """Everything a lifecycle replay reports. Upstream: none (a course tool)"""

    scenario: LifecycleScenario
    watch: list[WatchLine] = field(default_factory=list)
    containers: list[ContainerChange] = field(default_factory=list)
    restarts: list[Restart] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)  # {"time", "type", "reason", "object", "pod", "container", "message"}
    kills: list[dict] = field(default_factory=list)  # {"time", "pod", "gracePeriod"}
    # container stops worth a line: a preStop hook ran, or the stop's grace period is not its killPod's
    stops: list[dict] = field(default_factory=list)  # {"time", "pod", "container", "preStop", "preStopRuns",
    #                                                    "gracePeriod", "sigterm", "sigkillBy"}
    happenings: list[dict] = field(default_factory=list)  # {"time", "text"}
    resizes: list[dict] = field(default_factory=list)  # {"time", "pod", "type", "status": True|removed, "reason", "message"}
    cgroups: list[dict] = field(default_factory=list)  # {"time", "cgroup", "file", "old", "new"}: each write, in order
    final: dict[str, dict] = field(default_factory=dict)  # pod -> its last status, as `kubectl get pod -o yaml` shows it

    def at(self, pod: str, time: int) -> Optional[WatchLine]:
        """The pod's columns as shown at that time (its last watch line at or before it), None before the first."""
        shown = [line for line in self.watch if line.pod == pod and line.time <= time]
        return shown[-1] if shown else None
