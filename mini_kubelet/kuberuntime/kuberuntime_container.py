"""Starting, stopping and pruning containers through the runtime, and which init container runs next.

Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go. Image pulls, log files, postStart hooks
and the container config are left out: the simulated runtime has every image and no processes; a preStop
hook takes the time the runtime says, on paper (the simulated container exits at once when stopped).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from kubernetes.client import V1Container, V1Pod

from mini_kubelet import events, features
from mini_kubelet.container import (
    CONTAINER_STATE_CREATED,
    CONTAINER_STATE_EXITED,
    CONTAINER_STATE_RUNNING,
    CONTAINER_STATE_UNKNOWN,
    ERR_KILL_CONTAINER,
    ERR_RUN_CONTAINER,
    KILL_CONTAINER,
    Pod,
    PodStatus,
    Status,
    SyncResult,
    container_should_restart,
    hash_container,
    is_restartable_init_container,
)
from mini_kubelet.cri import CRIError, RuntimeService
from mini_kubelet.kuberuntime.helpers import is_init_container_failed
from mini_kubelet.kuberuntime.kuberuntime_container_linux import generate_linux_container_resources

# --8<-- [start:minimum_grace_period]
MINIMUM_GRACE_PERIOD_IN_SECONDS = 2  # kuberuntime_manager.go minimumGracePeriodInSeconds
REASON_STARTUP_PROBE = "StartupProbe"  # containerKillReason
REASON_LIVENESS_PROBE = "LivenessProbe"
REASON_UNKNOWN = "Unknown"
# --8<-- [end:minimum_grace_period]
ERR_CREATE_CONTAINER = "CreateContainerError"  # kuberuntime's own start errors (pkg/kubelet/kuberuntime/kuberuntime_container.go)


@dataclass
class ContainerToKillInfo:
    """A container to stop: its spec, name, and why (a message for the event, a reason for the grace period).

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go containerToKillInfo
    """

    container: V1Container
    name: str
    message: str = ""
    reason: str = ""


def involved(pod: V1Pod, container: Optional[V1Container] = None) -> str:
    """The object an event is about: "namespace/name", with "{container}" for a container."""
    ref = f"{pod.metadata.namespace}/{pod.metadata.name}"
    return f"{ref}{{{container.name}}}" if container is not None else ref


# --8<-- [start:find_next_init_container_to_run]
def find_next_init_container_to_run(pod: V1Pod, pod_status: PodStatus) -> tuple[Optional[Status], Optional[V1Container], bool]:
    """(status of a failed init container, next init container to start, done) for the legacy, one-at-a-time path.

    Done when there are no init containers or a regular container is running. Otherwise the last
    failed init container (scanning from the end) is rerun; a running one means wait; the last
    exited one decides: if it is the final one initialisation is done, else the one after it starts;
    with no status at all the first one starts.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go findNextInitContainerToRun
    """
    inits = pod.spec.init_containers or []
    if not inits:
        return None, None, True
    for c in pod.spec.containers:
        status = pod_status.find_container_status_by_name(c.name)
        if status is not None and status.state == CONTAINER_STATE_RUNNING:
            return None, None, True
    for c in reversed(inits):
        status = pod_status.find_container_status_by_name(c.name)
        if status is not None and is_init_container_failed(status):
            return status, c, False
    for i in range(len(inits) - 1, -1, -1):
        status = pod_status.find_container_status_by_name(inits[i].name)
        if status is None:
            continue
        if status.state == CONTAINER_STATE_RUNNING:
            return None, None, False
        if status.state == CONTAINER_STATE_EXITED:
            if i == len(inits) - 1:
                return None, None, True
            return None, inits[i + 1], False
    return None, inits[0], False
# --8<-- [end:find_next_init_container_to_run]


# --8<-- [start:compute_init_container_actions]
def compute_init_container_actions(pod: V1Pod, pod_status: PodStatus, changes, liveness: dict[str, str],
                                   startup: dict[str, str], resize: Optional[Callable[[int, Status], bool]] = None) -> bool:
    """With sidecars: fill changes.init_containers_to_start (and kills); True once the pod has initialised.

    Scanning init containers from the last: a regular one runs once, in order, and its failure
    kills the pod under Never; a sidecar is started, restarted whatever the pod's policy, killed
    and restarted on a failed startup or liveness probe or a changed spec, and lets the next init
    container start once it has started (its startup probe succeeded). resize (computePodResizeAction for
    init container i) is asked about a running sidecar that nothing else kills, and from 1.36
    (InPlacePodVerticalScalingInitContainers) about a running regular init container too.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go kubeGenericRuntimeManager.computeInitContainerActions
    (as in v1.32; only called with the SidecarContainers gate on and a pod that has a sidecar)
    """
    inits = pod.spec.init_containers or []
    if not inits:
        return True
    has_initialized = any((s := pod_status.find_container_status_by_name(c.name)) is not None
                          and s.state in (CONTAINER_STATE_CREATED, CONTAINER_STATE_RUNNING) for c in pod.spec.containers)
    previously_initialized = has_initialized
    to_start = changes.init_containers_to_start

    def kill(status: Status, c: V1Container, message: str, reason: str) -> None:
        changes.containers_to_kill[status.id] = ContainerToKillInfo(c, c.name, message, reason)
        to_start.append(i)

    for i in range(len(inits) - 1, -1, -1):
        c, sidecar = inits[i], is_restartable_init_container(inits[i])
        status = pod_status.find_container_status_by_name(c.name)
        if status is None:
            if previously_initialized and sidecar:
                to_start.append(i)
            continue
        if previously_initialized and not sidecar:
            continue
        if status.state == CONTAINER_STATE_CREATED:
            to_start.append(i)
        elif status.state == CONTAINER_STATE_RUNNING:
            if sidecar:
                has_initialized = _running_sidecar(i, c, status, len(inits), previously_initialized, has_initialized,
                                                   to_start, kill, liveness, startup, resize)
            elif resize is not None and features.DEFAULT_FEATURE_GATE.enabled("InPlacePodVerticalScalingInitContainers"):
                resize(i, status)
        elif status.state == CONTAINER_STATE_EXITED:
            if sidecar:
                to_start.append(i)
            elif is_init_container_failed(status):
                if not restart_init_on_failure(pod, c, status):
                    changes.kill_pod, changes.init_containers_to_start = True, []
                    return False
                to_start.append(i)
            elif i == len(inits) - 1:
                has_initialized = True
            else:
                to_start.append(i + 1)
        else:  # unknown
            if not sidecar and not restart_init_on_failure(pod, c, status):
                changes.kill_pod, changes.init_containers_to_start = True, []
                return False
            kill(status, c, f'Init container is in "{status.state}" state, try killing it before restart', REASON_UNKNOWN)
        previously_initialized = True
    if not previously_initialized:
        to_start.append(0)
    to_start.reverse()
    return has_initialized


def restart_init_on_failure(pod: V1Pod, c: V1Container, status: Status) -> bool:
    """Whether a failed (or unknown) regular init container runs again rather than failing the pod.

    The pod's policy is not Never; with ContainerRestartRules an exited one is judged by its own policy and
    rules (ShouldContainerBeRestarted), and an unknown one, having no exit code, by its own restartPolicy if set.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go computeInitContainerActions (its exited and
    unknown branches, the gated parts as a later release reads them)
    """
    if not features.DEFAULT_FEATURE_GATE.enabled("ContainerRestartRules"):
        return pod.spec.restart_policy != "Never"
    if status.state == CONTAINER_STATE_EXITED:
        return container_should_restart(c, pod.spec.restart_policy, status.exit_code)
    own = getattr(c, "restart_policy", None)
    return own != "Never" if own is not None else pod.spec.restart_policy != "Never"


def _running_sidecar(i, c, status, count, previously_initialized, has_initialized, to_start, kill, liveness, startup,
                     resize) -> bool:
    """computeInitContainerActions for a running sidecar; returns has_initialized."""
    if c.startup_probe is not None:
        if status.id not in startup:
            return has_initialized
        if startup[status.id] != "Success":
            if startup[status.id] == "Failure":
                kill(status, c, f"Init container {c.name} failed startup probe", REASON_STARTUP_PROBE)
            return has_initialized
    if i == count - 1:
        has_initialized = True
    elif not previously_initialized:
        to_start.append(i + 1)
    if status.hash != hash_container(c):
        kill(status, c, f"Init container {c.name} definition changed", "")
        return has_initialized
    if c.liveness_probe is not None:
        if status.id not in liveness:  # not probed yet: wait
            return has_initialized
        if liveness[status.id] == "Failure":
            kill(status, c, f"Init container {c.name} failed liveness probe", REASON_LIVENESS_PROBE)
            return has_initialized
    if resize is not None:
        resize(i, status)
    return has_initialized
# --8<-- [end:compute_init_container_actions]


def has_any_regular_container_created(pod: V1Pod, pod_status: PodStatus) -> bool:
    """Whether any regular container has an instance that was created, runs or exited.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go hasAnyRegularContainerCreated (v1.28 and later)
    """
    return any((s := pod_status.find_container_status_by_name(c.name)) is not None
               and s.state in (CONTAINER_STATE_CREATED, CONTAINER_STATE_RUNNING, CONTAINER_STATE_EXITED)
               for c in pod.spec.containers)


def start_container(runtime: RuntimeService, sandbox_id: str, pod: V1Pod, container: V1Container,
                    pod_status: PodStatus, recorder: events.Recorder, resize=None) -> tuple[str, Optional[str]]:
    """Create and start one container; the restart count is the previous instance's plus one. ("", None) on success.

    With a resize state (kuberuntime_resize.ResizeState) and InPlacePodVerticalScaling, the container's resources
    are recorded as actuated before it is created, and the runtime is given its CRI resources.

    With no instance left, upstream counts the container's log files; the mini kubelet does so only with
    RestartAllContainersOnContainerExits on (whose reset removes every instance), so that replays without it
    stay as they were.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go kubeGenericRuntimeManager.startContainer
    (no image pull, no postStart hook)
    """
    previous = pod_status.find_container_status_by_name(container.name)
    restart_count = previous.restart_count + 1 if previous is not None else 0
    if previous is None and features.DEFAULT_FEATURE_GATE.enabled("RestartAllContainersOnContainerExits") and hasattr(
            runtime, "restart_count_by_log_dir"):
        restart_count = runtime.restart_count_by_log_dir(pod.metadata.uid, container.name)
    resources = None
    if resize is not None and features.DEFAULT_FEATURE_GATE.enabled("InPlacePodVerticalScaling"):
        resize.actuated.set_container_resources(pod.metadata.uid, container.name, container.resources)
        resources = generate_linux_container_resources(pod, container, resize.memory_capacity,
                                                       cpu_cfs_quota=resize.cpu_cfs_quota,
                                                       cpu_period=resize.cpu_cfs_quota_period,
                                                       cgroup_version=runtime.cgroup_version)
    try:
        container_id = runtime.create_container(sandbox_id, pod, container, restart_count, resources)
    except CRIError as err:
        recorder.eventf(involved(pod, container), events.WARNING, events.FAILED_TO_CREATE_CONTAINER, f"Error: {err}")
        return str(err), ERR_CREATE_CONTAINER
    recorder.eventf(involved(pod, container), events.NORMAL, events.CREATED_CONTAINER, f"Created container {container.name}")
    try:
        runtime.start_container(container_id)
    except CRIError as err:
        recorder.eventf(involved(pod, container), events.WARNING, events.FAILED_TO_START_CONTAINER, f"Error: {err}")
        return str(err), ERR_RUN_CONTAINER
    recorder.eventf(involved(pod, container), events.NORMAL, events.STARTED_CONTAINER, f"Started container {container.name}")
    return "", None


# --8<-- [start:set_termination_grace_period]
def set_termination_grace_period(pod: V1Pod, container: V1Container, reason: str) -> int:
    """The grace period for stopping one container: the deletion's, else the probe's (for a probe kill), else the pod's, else 2.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go setTerminationGracePeriod
    """
    if pod.metadata.deletion_grace_period_seconds is not None:
        return pod.metadata.deletion_grace_period_seconds
    if pod.spec.termination_grace_period_seconds is not None:
        probe = {REASON_STARTUP_PROBE: container.startup_probe, REASON_LIVENESS_PROBE: container.liveness_probe}.get(reason)
        if probe is not None and probe.termination_grace_period_seconds is not None:
            return probe.termination_grace_period_seconds
        return pod.spec.termination_grace_period_seconds
    return MINIMUM_GRACE_PERIOD_IN_SECONDS
# --8<-- [end:set_termination_grace_period]


# --8<-- [start:kill_container]
def kill_container(runtime: RuntimeService, pod: V1Pod, container_id: str, container_name: str, message: str,
                   reason: str, grace_period_override: Optional[int], recorder: events.Recorder) -> int:
    """Stop one container: its preStop hook, then StopContainer with what is left (at least 2 s); returns that period.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go kubeGenericRuntimeManager.killContainer
    In v1.27 the caller's override replaces the period after the hook and the floor: a terminating Pod's
    containers get the full grace period again once the hook has used it up. From 1.28 (#115835) the override
    comes first, so it bounds the hook, and the floor applies to what is left.
    """
    spec = next((c for c in all_containers(pod) if c.name == container_name), None)
    if spec is None:
        raise CRIError(f'failed to get containerSpec "{container_name}" (id="{container_id}") in pod '
                       f'"{pod.metadata.name}_{pod.metadata.namespace}({pod.metadata.uid})" when killing container '
                       f'for reason "{message}"')
    grace_period = set_termination_grace_period(pod, spec, reason)
    override_first = features.DEFAULT_FEATURE_GATE.changed("PreStopGraceOverrideFix")
    if override_first and grace_period_override is not None:
        grace_period = grace_period_override
    recorder.eventf(involved(pod, spec), events.NORMAL, events.KILLING_CONTAINER, message or f"Stopping container {spec.name}")
    if spec.lifecycle is not None and spec.lifecycle.pre_stop is not None and grace_period > 0:
        grace_period -= execute_pre_stop_hook(runtime, container_id, grace_period)
    grace_period = max(grace_period, MINIMUM_GRACE_PERIOD_IN_SECONDS)
    if not override_first and grace_period_override is not None:
        grace_period = grace_period_override
    runtime.stop_container(container_id, grace_period)
    return grace_period


def stop_timeout_without_hook(grace_period: int) -> int:
    """The StopContainer timeout kill_container gives a container without a preStop hook, for the pod's grace period.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go kubeGenericRuntimeManager.killContainer
    (the pod worker passes its grace period as the override: v1.27 applies it after the 2 s floor, 1.28 before it)
    """
    if features.DEFAULT_FEATURE_GATE.changed("PreStopGraceOverrideFix"):
        return max(grace_period, MINIMUM_GRACE_PERIOD_IN_SECONDS)
    return grace_period


def execute_pre_stop_hook(runtime: RuntimeService, container_id: str, grace_period: int) -> int:
    """Run the preStop hook and wait for it, at most grace_period seconds: the seconds it took.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go kubeGenericRuntimeManager.executePreStopHook
    (a hook still running when the wait ends is left to run; the stop goes ahead)
    """
    return runtime.run_pre_stop_hook(container_id, grace_period)
# --8<-- [end:kill_container]


def kill_containers_with_sync_result(runtime: RuntimeService, pod: V1Pod, running_pod: Pod,
                                     grace_period_override: Optional[int], recorder: events.Recorder) -> list[SyncResult]:
    """Stop every container of the running pod (upstream does it in parallel, one goroutine each).

    With the SidecarContainers gate on and a pod with sidecars, as from 1.29 (#120620): each sidecar waits
    until every regular container and every later sidecar has stopped, so they stop after the main
    containers, last one first. The simulated containers stop at once, so the wait costs none of the
    sidecar's grace period; what shows is the order.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go kubeGenericRuntimeManager.killContainersWithSyncResult
    (and kuberuntime_termination_order.go newTerminationOrdering, read at v1.32.10)
    """
    results = []
    for c in termination_order(pod, running_pod.containers):
        result = SyncResult(KILL_CONTAINER, c.name)
        try:
            kill_container(runtime, pod, c.id, c.name, "", REASON_UNKNOWN, grace_period_override, recorder)
        except CRIError as err:
            result.fail(ERR_KILL_CONTAINER, str(err))
        results.append(result)
    return results


# --8<-- [start:termination_order]
def termination_order(pod: Optional[V1Pod], running: list) -> list:
    """The running containers in the order they stop: as listed, but sidecars after the rest, in reverse spec order.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_termination_order.go (the order its waits produce)
    """
    inits = (pod.spec.init_containers or []) if pod is not None else []
    sidecars = [c.name for c in inits if is_restartable_init_container(c)]  # none with the gate off
    if not sidecars:
        return list(running)
    last_first = {name: i for i, name in enumerate(reversed(sidecars))}
    return sorted(running, key=lambda c: (c.name in last_first, last_first.get(c.name, 0)))
# --8<-- [end:termination_order]


def prune_init_containers_before_start(runtime: RuntimeService, pod: V1Pod, pod_status: PodStatus) -> None:
    """Keep only the newest exited (or unknown) instance of each init container; remove the older ones.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go kubeGenericRuntimeManager.pruneInitContainersBeforeStart
    """
    for name in {c.name for c in pod.spec.init_containers or []}:
        seen = 0
        for status in pod_status.container_statuses:
            if status.name != name or status.state not in (CONTAINER_STATE_EXITED, CONTAINER_STATE_UNKNOWN):
                continue
            seen += 1
            if seen > 1:
                runtime.remove_container(status.id)


def purge_init_containers(runtime: RuntimeService, pod: V1Pod, pod_status: PodStatus) -> None:
    """Remove every instance of every init container, so that a new sandbox initialises again from the first.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go kubeGenericRuntimeManager.purgeInitContainers
    """
    names = {c.name for c in pod.spec.init_containers or []}
    for status in pod_status.container_statuses:
        if status.name in names:
            runtime.remove_container(status.id)


def all_containers(pod: V1Pod) -> list:
    """Regular, init and ephemeral containers: where GetContainerSpec looks for a name."""
    return (list(pod.spec.containers) + list(pod.spec.init_containers or [])
            + list(pod.spec.ephemeral_containers or []))
