"""The Pod status the user sees: phase, container states (waiting, running, terminated), restarts, conditions.

Upstream: pkg/kubelet/kubelet_pods.go (getPhase, generateAPIPodStatus, convertStatusToAPIStatus,
convertToAPIContainerStatuses) in their v1.27 form; the ready and started flags come from
mini_kubelet.prober. Resources in status (InPlacePodVerticalScaling) are off.
"""

from __future__ import annotations

import ipaddress
from typing import Iterable, Optional

from kubernetes.client import (
    V1ContainerState, V1ContainerStateRunning, V1ContainerStateTerminated, V1ContainerStateWaiting, V1ContainerStatus,
    V1Pod, V1PodCondition, V1PodIP, V1PodStatus,
)

from mini_kubelet import api, features, prober, qos, types
from mini_kubelet.container import (
    RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS, all_containers_could_restart, container_should_restart,
    find_matching_container_restart_rule, has_any_regular_container_started, is_restartable_init_container,
    CONTAINER_STATE_CREATED, CONTAINER_STATE_EXITED, CONTAINER_STATE_RUNNING, CONTAINER_STATE_UNKNOWN, PodStatus,
    RESTART_POLICY_ALWAYS, RESTART_POLICY_NEVER, Status, should_container_be_restarted,
)
from mini_kubelet.cri import RUNTIME_NAME
from mini_kubelet.reason_cache import ReasonCache
from mini_kubelet.status.generate import (
    generate_all_containers_restarting_condition, generate_containers_ready_condition, generate_pod_initialized_condition,
    generate_pod_ready_condition,
)

# --8<-- [start:constants]
POD_INITIALIZING = "PodInitializing"  # the waiting reason before a container's first start, with init containers
CONTAINER_CREATING = "ContainerCreating"  # ... and without
CONTAINER_STATUS_UNKNOWN = "ContainerStatusUnknown"
RESTARTING_ALL_CONTAINERS = "RestartingAllContainers"  # the reason of a container stopped by a reset (1.35+)
PENDING, RUNNING, SUCCEEDED, FAILED = "Pending", "Running", "Succeeded", "Failed"
# pkg/kubelet/types/pod_status.go; AllContainersRestarting (1.35) is only ever made with its gate on
POD_CONDITIONS_BY_KUBELET = ("PodScheduled", "Ready", "Initialized", "ContainersReady", "AllContainersRestarting")
# --8<-- [end:constants]


def _status_of(statuses: Iterable[V1ContainerStatus], name: str) -> Optional[V1ContainerStatus]:
    """The first status with this name. Upstream: pkg/api/v1/pod/util.go GetContainerStatus"""
    return next((s for s in statuses if s.name == name), None)


# --8<-- [start:get_phase]
def get_phase(pod: V1Pod, info: list[V1ContainerStatus], pod_is_terminal: bool) -> str:
    """The pod's phase from its container statuses (regular and init), its restart policy, and whether it is terminal.

    With the SidecarContainers gate on (off, as in v1.27), restartable init containers count as in
    v1.32: running but not started keeps initialisation pending until a regular container has
    started; once terminated they no longer count. With ContainerRestartRules (on from 1.35) an exited
    container is judged by whether it will run again (its own policy and rules): an init container that
    will not fails the pod, and with every regular container stopped, one that will keeps it Running; with
    RestartAllContainersOnContainerExits one whose exit matches a RestartAllContainers rule will, and so will one
    whose termination reason is RestartingAllContainers (as v1.36.5 answers, whatever its policy).
    Upstream: pkg/kubelet/kubelet_pods.go getPhase (v1.27; the sidecar branch as in v1.32, the rules as a
    later release reads them)
    """
    spec = pod.spec
    rules = features.DEFAULT_FEATURE_GATE.enabled("ContainerRestartRules")
    restart_all = rules and features.DEFAULT_FEATURE_GATE.enabled("RestartAllContainersOnContainerExits")

    def restartable(c, terminated) -> bool:  # with rules: will this exited container run again?
        code = terminated.exit_code
        if restart_all and (terminated.reason == RESTARTING_ALL_CONTAINERS or getattr(
                find_matching_container_restart_rule(c, code), "action", None) == RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS):
            return True  # it runs again with all the others: stopped by a reset, or its exit starts one
        return rules and container_should_restart(c, spec.restart_policy, code)
    pending_regular_init = pending_restartable_init = failed_initialization = 0
    unknown = running = waiting = stopped = succeeded = stopped_not_restartable = 0
    for c in spec.init_containers or []:
        s = _status_of(info, c.name)
        state = s.state if s is not None else None
        last = s.last_state.terminated if s is not None and s.last_state is not None else None
        if is_restartable_init_container(c):
            if s is None:
                unknown += 1
            elif state is not None and state.running is not None:
                pending_restartable_init += not s.started
                running += 1
            elif state is not None and state.terminated is not None:
                pass  # a terminated sidecar does not count for the phase
            elif state is not None and state.waiting is not None:
                if last is None:
                    pending_restartable_init, waiting = pending_restartable_init + 1, waiting + 1
            else:
                pending_restartable_init, unknown = pending_restartable_init + 1, unknown + 1
        elif s is None or state is None or state.running is not None:
            pending_regular_init += 1
        elif state.terminated is not None:
            failed_initialization += state.terminated.exit_code != 0 and not restartable(c, state.terminated)
        elif state.waiting is not None and last is not None:
            failed_initialization += last.exit_code != 0 and not restartable(c, last)
        else:
            pending_regular_init += 1

    for c in spec.containers:
        s = _status_of(info, c.name)
        state = s.state if s is not None else None
        if s is None or state is None:
            unknown += 1
        elif state.running is not None:
            running += 1
        elif state.terminated is not None:
            stopped += 1
            succeeded += state.terminated.exit_code == 0
            stopped_not_restartable += not restartable(c, state.terminated)
        elif state.waiting is not None:
            if s.last_state is not None and s.last_state.terminated is not None:
                stopped += 1  # crash-looping: waiting to restart after a termination
                stopped_not_restartable += not restartable(c, s.last_state.terminated)
            else:
                waiting += 1
        else:
            unknown += 1

    if failed_initialization > 0 and (rules or spec.restart_policy == RESTART_POLICY_NEVER):
        return FAILED  # with rules only the failures that will not run again were counted
    if (pending_regular_init > 0 or (pending_restartable_init > 0 and not has_any_regular_container_started(pod, info))
            or waiting > 0):
        return PENDING
    if running > 0 and unknown == 0:
        return RUNNING
    if running == 0 and stopped > 0 and unknown == 0:
        if pod_is_terminal and not types.is_static_pod(pod):  # no restarts any more, whatever the policy
            return SUCCEEDED if stopped == succeeded else FAILED
        if rules:  # one that will restart keeps the pod Running; else they all exited for good
            return RUNNING if stopped != stopped_not_restartable else SUCCEEDED if stopped == succeeded else FAILED
        if spec.restart_policy == RESTART_POLICY_ALWAYS:
            return RUNNING  # every container is on its way to a restart
        if stopped == succeeded:
            return SUCCEEDED
        if spec.restart_policy == RESTART_POLICY_NEVER:
            return FAILED
        return RUNNING  # OnFailure, with a failed container restarting
    return PENDING
# --8<-- [end:get_phase]


def _container_id(cs: Status) -> str:
    return f"{RUNTIME_NAME}://{cs.id}"  # ContainerID.String(): type://id


def _convert_container_status(cs: Status, old: Optional[V1ContainerStatus]) -> V1ContainerStatus:
    """One runtime instance as an API container status. Upstream: kubelet_pods.go convertToAPIContainerStatuses convertContainerStatus"""
    cid = _container_id(cs)
    status = V1ContainerStatus(name=cs.name, restart_count=cs.restart_count, image=cs.image, image_id="",
                               container_id=cid, ready=False, state=V1ContainerState())
    if cs.state == CONTAINER_STATE_RUNNING:
        status.state.running = V1ContainerStateRunning(started_at=cs.started_at)
    elif cs.state == CONTAINER_STATE_CREATED:
        status.state.waiting = V1ContainerStateWaiting()
    elif cs.state == CONTAINER_STATE_EXITED:
        status.state.terminated = V1ContainerStateTerminated(
            exit_code=cs.exit_code, reason=cs.reason or None, message=cs.message or None, started_at=cs.started_at,
            finished_at=cs.finished_at, container_id=cid)
    elif cs.state == CONTAINER_STATE_UNKNOWN and old is not None and old.state is not None and old.state.running is not None:
        status.state.terminated = V1ContainerStateTerminated(
            reason=CONTAINER_STATUS_UNKNOWN, message="The container could not be located when the pod was terminated",
            exit_code=137)
        status.restart_count = old.restart_count + 1
    else:
        status.state.waiting = V1ContainerStateWaiting()
    return status


# --8<-- [start:convert_to_api_container_statuses]
def convert_to_api_container_statuses(pod: V1Pod, pod_status: PodStatus, previous_status: Optional[list[V1ContainerStatus]],
                                      containers: list, has_init_containers: bool, is_init_container: bool,
                                      reason_cache: Optional[ReasonCache] = None) -> list[V1ContainerStatus]:
    """API statuses for these containers: the newest instance as state, the one before as lastState, restart counts.

    A container with no instance waits (PodInitializing or ContainerCreating); one that should be
    restarted and last failed to start waits with that failure's reason (e.g. CrashLoopBackOff).
    Upstream: pkg/kubelet/kubelet_pods.go Kubelet.convertToAPIContainerStatuses
    """
    old_statuses = {s.name: s for s in previous_status or []}
    default_reason = POD_INITIALIZING if has_init_containers else CONTAINER_CREATING
    statuses: dict[str, V1ContainerStatus] = {}
    for c in containers:
        status = V1ContainerStatus(name=c.name, image=c.image or "", image_id="", ready=False, restart_count=0,
                                   state=V1ContainerState(waiting=V1ContainerStateWaiting(reason=default_reason)))
        old = old_statuses.get(c.name)
        if old is not None:
            if old.state is not None and old.state.terminated is not None:
                status = api.deep_copy(old)
            else:
                status.restart_count, status.last_state = old.restart_count, api.deep_copy(old.last_state)
        statuses[c.name] = status

    runtime_names = {cs.name for cs in pod_status.container_statuses}
    for c in containers:  # a container that was running and vanished from the runtime: infer a termination
        old = old_statuses.get(c.name)
        if c.name in runtime_names or old is None or old.state is None:
            continue
        if old.state.terminated is not None or old.state.running is None:
            continue
        status = statuses[c.name]
        waiting = status.state.waiting
        if waiting is None or waiting.reason != default_reason:
            continue
        if status.last_state is not None and status.last_state.terminated is not None:
            continue
        status.last_state = V1ContainerState(terminated=V1ContainerStateTerminated(
            reason=CONTAINER_STATUS_UNKNOWN, exit_code=137,
            message="The container could not be located when the pod was deleted.  The container used to be Running"))
        if pod.metadata.deletion_timestamp is None:
            status.restart_count += 1

    newest_first = sorted(pod_status.container_statuses, reverse=True,  # stable: equal times keep the runtime's order
                          key=lambda s: (s.created_at is not None, s.created_at or 0))
    seen: dict[str, int] = {}
    for cs in newest_first:
        if cs.name not in statuses or seen.get(cs.name, 0) >= 2:
            continue
        status = _convert_container_status(cs, old_statuses.get(cs.name))
        if seen.get(cs.name, 0) == 0:
            statuses[cs.name] = status
        else:
            statuses[cs.name].last_state = status.state
        seen[cs.name] = seen.get(cs.name, 0) + 1

    for c in containers:  # containers that failed to start wait, with the reason of the failure
        if is_init_container:
            s = pod_status.find_container_status_by_name(c.name)
            if s is not None and s.state == CONTAINER_STATE_EXITED and s.exit_code == 0:
                continue
        if not should_container_be_restarted(c, pod, pod_status):
            continue
        reason = reason_cache.get(pod.metadata.uid, c.name) if reason_cache else None
        if reason is None:
            continue
        status = statuses[c.name]
        if status.state.terminated is not None:
            status.last_state = status.state
        status.state = V1ContainerState(waiting=V1ContainerStateWaiting(reason=reason.err, message=reason.message))

    if is_init_container:
        return [statuses[c.name] for c in pod.spec.init_containers or [] if c.name in statuses]
    return sorted(statuses.values(), key=lambda s: s.name)
# --8<-- [end:convert_to_api_container_statuses]


def _sort_pod_ips(ips: list[str]) -> list[str]:
    """The first IPv4 then the first IPv6 (an IPv4 node). Upstream: pkg/kubelet/kubelet_pods.go Kubelet.sortPodIPs"""
    v4 = [ip for ip in ips if ipaddress.ip_address(ip).version == 4][:1]
    return v4 + [ip for ip in ips if ipaddress.ip_address(ip).version == 6][:1]


def _after_reset(old: V1PodStatus, pod_status: PodStatus) -> V1PodStatus:
    """The old status with each container the reset removed shown as not yet started (its restart count kept).

    Upstream: not read (the course's model of the in-place restart: see tests/test_restart_all_v136.py)
    """
    old = api.deep_copy(old)
    for s in (old.init_container_statuses or []) + (old.container_statuses or []):
        if pod_status.find_container_status_by_name(s.name) is None:
            s.state, s.last_state, s.ready = V1ContainerState(waiting=V1ContainerStateWaiting()), None, False
    return old


# --8<-- [start:generate_api_pod_status]
def generate_api_pod_status(pod: V1Pod, pod_status: PodStatus, pod_is_terminal: bool, *,
                            old_status: Optional[V1PodStatus] = None, reason_cache: Optional[ReasonCache] = None,
                            pod_sync_handlers: Iterable = (), readiness: Optional[dict[str, str]] = None,
                            startup: Optional[dict[str, str]] = None) -> V1PodStatus:
    """The API status of the pod: IPs, QoS class, container statuses, phase (terminal phases stick), conditions.

    old_status is what the status manager last set (else the API's pod.status). startTime is the
    status manager's to set, so it is carried over from old_status unchanged.
    Upstream: pkg/kubelet/kubelet_pods.go Kubelet.generateAPIPodStatus (and convertStatusToAPIStatus)
    """
    api_status = pod.status or V1PodStatus()
    old = old_status or api_status
    if features.DEFAULT_FEATURE_GATE.enabled("RestartAllContainersOnContainerExits") and any(
            c.type == "AllContainersRestarting" and c.status == "True" for c in old.conditions or []):
        old = _after_reset(old, pod_status)
    has_init = bool(pod.spec.init_containers)
    ips = _sort_pod_ips(pod_status.ips)
    s = V1PodStatus(
        pod_ips=[V1PodIP(ip=ip) for ip in ips] or None, pod_ip=ips[0] if ips else None, qos_class=qos.get_pod_qos(pod),
        start_time=old.start_time,
        container_statuses=convert_to_api_container_statuses(
            pod, pod_status, old.container_statuses, pod.spec.containers, has_init, False, reason_cache),
        init_container_statuses=convert_to_api_container_statuses(
            pod, pod_status, old.init_container_statuses, pod.spec.init_containers or [], has_init, True, reason_cache),
        ephemeral_container_statuses=convert_to_api_container_statuses(
            pod, pod_status, old.ephemeral_container_statuses, pod.spec.ephemeral_containers or [], has_init, False,
            reason_cache) or None)
    s.phase = get_phase(pod, s.container_statuses + s.init_container_statuses, pod_is_terminal)
    if s.phase not in (FAILED, SUCCEEDED):
        if old.phase in (FAILED, SUCCEEDED):
            s.phase = old.phase
        elif api_status.phase in (FAILED, SUCCEEDED):
            s.phase = api_status.phase
    if s.phase == old.phase:  # keep the reason and message that came with the phase
        s.reason, s.message = old.reason or api_status.reason, old.message or api_status.message
    for handler in pod_sync_handlers:  # e.g. the active-deadline handler
        result = handler.should_evict(pod)
        if result.evict:
            s.phase, s.reason, s.message = FAILED, result.reason, result.message
            break
    if api_status.phase in (FAILED, SUCCEEDED) and s.phase != api_status.phase:
        s.phase = api_status.phase  # the API already shows a terminal phase: no way out of it
    prober.update_pod_status(pod, s, readiness, startup)

    conditions = [c for c in api_status.conditions or [] if c.type not in POD_CONDITIONS_BY_KUBELET]
    disruption = next((c for c in old.conditions or [] if c.type == "DisruptionTarget"), None)  # PodDisruptionConditions, on
    if disruption is not None:  # pkg/util/pod ReplaceOrAppendPodCondition
        at = next((i for i, c in enumerate(conditions) if c.type == "DisruptionTarget"), None)
        if at is None:
            conditions.append(disruption)
        else:
            conditions[at] = disruption
    sidecars = features.DEFAULT_FEATURE_GATE.enabled("SidecarContainers")  # from 1.28 it reads every container
    conditions.append(generate_pod_initialized_condition(
        pod.spec, s.init_container_statuses + s.container_statuses if sidecars else s.init_container_statuses, s.phase,
        old))
    conditions.append(generate_pod_ready_condition(pod.spec, conditions, s.container_statuses, s.phase))
    conditions.append(generate_containers_ready_condition(pod.spec, s.container_statuses, s.phase))
    conditions.append(V1PodCondition(type="PodScheduled", status="True"))
    if features.DEFAULT_FEATURE_GATE.enabled("RestartAllContainersOnContainerExits") and all_containers_could_restart(
            pod.spec):  # only a pod with a RestartAllContainers rule carries the condition
        conditions.append(generate_all_containers_restarting_condition(pod, pod_status, old, s.phase))
    s.conditions = conditions
    return s
# --8<-- [end:generate_api_pod_status]
