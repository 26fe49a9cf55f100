"""What the kubelet knows of a Pod's containers from the runtime: states, statuses, sandboxes.

Upstream: pkg/kubelet/container/runtime.go (the types Pod, Container, PodStatus, Status) and
k8s.io/cri-api PodSandboxStatus (reduced to what the kubelet's decisions read).
Also helpers.go (ShouldContainerBeRestarted, HashContainer) and sync_result.go (what SyncPod did).
Times are virtual (datetime from mini_kubelet.clock); IDs are strings the simulated runtime makes.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from kubernetes.client import ApiClient, V1Container, V1Pod

from mini_kubelet import features

# --8<-- [start:states]
CONTAINER_STATE_CREATED = "created"  # created, not started
CONTAINER_STATE_RUNNING = "running"
CONTAINER_STATE_EXITED = "exited"  # ran and finished (with an exit code)
CONTAINER_STATE_UNKNOWN = "unknown"  # anything the kubelet does not track (paused, dead, ...)

SANDBOX_READY = "SANDBOX_READY"  # k8s.io/cri-api PodSandboxState
SANDBOX_NOTREADY = "SANDBOX_NOTREADY"

RESTART_POLICY_ALWAYS = "Always"  # k8s.io/api/core/v1 RestartPolicy
RESTART_POLICY_ON_FAILURE = "OnFailure"
RESTART_POLICY_NEVER = "Never"
# --8<-- [end:states]


@dataclass
class Container:
    """A container as the runtime lists it: enough to tell what changed between two listings.

    Upstream: pkg/kubelet/container/runtime.go Container
    """

    id: str
    name: str
    image: str = ""
    hash: int = 0
    state: str = CONTAINER_STATE_UNKNOWN


@dataclass
class Pod:
    """A pod as the runtime lists it: its containers and sandboxes, grouped by the pod's UID.

    Upstream: pkg/kubelet/container/runtime.go Pod
    """

    id: str  # the pod's UID
    name: str
    namespace: str
    containers: list[Container] = field(default_factory=list)
    sandboxes: list[Container] = field(default_factory=list)


@dataclass
class ContainerResources:
    """The cpu and memory a running container has, as the runtime reports them (None: not reported).

    Upstream: pkg/kubelet/container/runtime.go ContainerResources (quantities there; millicores and bytes here)
    """

    cpu_request: Optional[int] = None  # millicores
    cpu_limit: Optional[int] = None
    memory_request: Optional[int] = None  # bytes
    memory_limit: Optional[int] = None


@dataclass
class Status:
    """One container instance's status: each restart is a new instance with its own ID.

    Upstream: pkg/kubelet/container/runtime.go Status
    """

    id: str
    name: str
    state: str
    created_at: Optional[datetime] = None
    started_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    exit_code: int = 0
    image: str = ""
    hash: int = 0
    restart_count: int = 0
    reason: str = ""  # e.g. "OOMKilled", "Error", "Completed"
    message: str = ""
    resources: Optional[ContainerResources] = None  # with InPlacePodVerticalScaling only


@dataclass
class SandboxStatus:
    """A pod sandbox's status, reduced to what computePodActions reads.

    Upstream: k8s.io/cri-api/pkg/apis/runtime/v1 PodSandboxStatus
    """

    id: str
    state: str = SANDBOX_READY
    created_at: Optional[datetime] = None
    attempt: int = 0  # metadata.attempt: how many sandboxes this pod had before
    host_network: bool = False  # network namespace mode NODE, else POD
    ip: str = ""


@dataclass
class PodStatus:
    """Everything the runtime reports for one pod: container instances (newest first) and sandboxes.

    Upstream: pkg/kubelet/container/runtime.go PodStatus
    """

    id: str
    name: str
    namespace: str
    ips: list[str] = field(default_factory=list)
    container_statuses: list[Status] = field(default_factory=list)
    sandbox_statuses: list[SandboxStatus] = field(default_factory=list)
    timestamp: Optional[datetime] = None

    def find_container_status_by_name(self, name: str) -> Optional[Status]:
        """The newest instance of the named container, or None.

        Upstream: pkg/kubelet/container/runtime.go PodStatus.FindContainerStatusByName
        """
        return next((s for s in self.container_statuses if s.name == name), None)

    def get_running_container_statuses(self) -> list[Status]:
        """The instances that are running now.

        Upstream: pkg/kubelet/container/runtime.go PodStatus.GetRunningContainerStatuses
        """
        return [s for s in self.container_statuses if s.state == CONTAINER_STATE_RUNNING]


# --8<-- [start:should_container_be_restarted]
def should_container_be_restarted(container: V1Container, pod: V1Pod, pod_status: PodStatus) -> bool:
    """Whether the kubelet should (re)start this container, judging by its newest instance and the policy.

    A pod being deleted never restarts anything; a container with no instance (never started, or
    garbage-collected) starts; a running one does not; a created or unknown one does. An exited one
    restarts unless the policy is Never, or OnFailure and it exited 0. An empty policy counts as Always.
    With the ContainerRestartRules gate on (beta, on from 1.35) an exited one is judged by container_should_restart.
    Upstream: pkg/kubelet/container/helpers.go ShouldContainerBeRestarted (the gated branch as in v1.35)
    """
    if pod.metadata.deletion_timestamp is not None:
        return False
    status = pod_status.find_container_status_by_name(container.name)
    if status is None:
        return True
    if status.state == CONTAINER_STATE_RUNNING:
        return False
    if status.state in (CONTAINER_STATE_UNKNOWN, CONTAINER_STATE_CREATED):
        return True
    if features.DEFAULT_FEATURE_GATE.enabled("ContainerRestartRules"):  # the container's own policy and rules first
        return container_should_restart(container, pod.spec.restart_policy, status.exit_code)
    if pod.spec.restart_policy == RESTART_POLICY_NEVER:
        return False
    if pod.spec.restart_policy == RESTART_POLICY_ON_FAILURE and status.exit_code == 0:
        return False
    return True
# --8<-- [end:should_container_be_restarted]


_SERIALIZER = ApiClient()  # only its model-to-JSON conversion is used; it never connects anywhere


# --8<-- [start:hash_container]
def hash_container(container: V1Container) -> int:
    """A 32-bit FNV-1a hash of the container's spec: any change to the spec changes it (with InPlacePodVerticalScaling
    on, any change but to its resources, so that a resize is not a new definition).

    Upstream hashes Go's JSON encoding of the v1.Container (through its deep-hash printer) with
    FNV-32a and stores it as a container label, so the numbers here differ from a real node's; the
    property the kubelet relies on, "spec changed means hash changed", is the same. (Releases that resize in
    place, 1.35 and 1.36 among them, hash only the container's name and image.)
    Upstream: pkg/kubelet/container/helpers.go HashContainer
    """
    spec = _SERIALIZER.sanitize_for_serialization(container)
    if features.DEFAULT_FEATURE_GATE.enabled("InPlacePodVerticalScaling"):
        spec.pop("resources", None)
    return _fnv32a(json.dumps(spec, sort_keys=True, separators=(",", ":")))
# --8<-- [end:hash_container]


@functools.lru_cache(maxsize=1024)  # a pod's containers are hashed at every sync: the same few specs
def _fnv32a(spec: str) -> int:
    h = 0x811C9DC5
    for byte in spec.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


# --8<-- [start:sync_result]
ERR_CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"  # the errors SyncPod records, as their Go error strings
ERR_RUN_CONTAINER = "RunContainerError"
ERR_KILL_CONTAINER = "KillContainerError"
ERR_CREATE_POD_SANDBOX = "CreatePodSandboxError"
ERR_KILL_POD_SANDBOX = "KillPodSandboxError"
ERR_REMOVE_CONTAINER = "RemoveContainerError"  # the name is this course's: the upstream error was not read

START_CONTAINER = "StartContainer"  # SyncAction
KILL_CONTAINER = "KillContainer"
REMOVE_CONTAINER = "RemoveContainer"
CREATE_POD_SANDBOX = "CreatePodSandbox"
CONFIG_POD_SANDBOX = "ConfigPodSandbox"
KILL_POD_SANDBOX = "KillPodSandbox"


@dataclass
class SyncResult:
    """One action SyncPod took (start, kill, create a sandbox) and, if it failed, the error and message.

    Upstream: pkg/kubelet/container/sync_result.go SyncResult
    """

    action: str
    target: Any  # a container name, or the pod's description for sandbox actions
    error: Optional[str] = None
    message: str = ""

    def fail(self, error: str, message: str) -> None:
        """Record the failure.

        Upstream: pkg/kubelet/container/sync_result.go SyncResult.Fail
        """
        self.error, self.message = error, message


@dataclass
class PodSyncResult:
    """Everything one SyncPod did, in order.

    Upstream: pkg/kubelet/container/sync_result.go PodSyncResult
    """

    sync_results: list[SyncResult] = field(default_factory=list)
    sync_error: Optional[str] = None

    def add_sync_result(self, *results: SyncResult) -> None:
        """Append results. Upstream: pkg/kubelet/container/sync_result.go PodSyncResult.AddSyncResult"""
        self.sync_results.extend(results)

    def add_pod_sync_result(self, other: PodSyncResult) -> None:
        """Append another pass's results. Upstream: pkg/kubelet/container/sync_result.go PodSyncResult.AddPodSyncResult"""
        self.add_sync_result(*other.sync_results)
        self.sync_error = other.sync_error

    def error(self) -> Optional[str]:
        """The failures as one message, or None when everything succeeded.

        Upstream: pkg/kubelet/container/sync_result.go PodSyncResult.Error (an utilerrors aggregate)
        """
        errors = [f"failed to SyncPod: {self.sync_error}"] if self.sync_error else []
        errors += [f'failed to "{r.action}" for "{r.target}" with {r.error}: "{r.message}"'
                   for r in self.sync_results if r.error]
        if not errors:
            return None
        return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
# --8<-- [end:sync_result]


def convert_pod_status_to_running_pod(pod_status: PodStatus) -> Pod:
    """The pod as a list of what runs: its running containers and all its sandboxes (what KillPod stops).

    Upstream: pkg/kubelet/container/helpers.go ConvertPodStatusToRunningPod
    """
    sandbox_state = {SANDBOX_READY: CONTAINER_STATE_RUNNING, SANDBOX_NOTREADY: CONTAINER_STATE_EXITED}
    return Pod(
        id=pod_status.id, name=pod_status.name, namespace=pod_status.namespace,
        containers=[Container(s.id, s.name, s.image, s.hash, s.state) for s in pod_status.get_running_container_statuses()],
        sandboxes=[Container(s.id, "", "", 0, sandbox_state.get(s.state, CONTAINER_STATE_UNKNOWN))
                   for s in pod_status.sandbox_statuses])


def is_restartable_init_container(c: V1Container) -> bool:
    """A sidecar: an init container with restartPolicy Always, and only with the SidecarContainers gate on.

    v1.27 has neither the field nor the gate; with the gate off every init container is a regular one.
    Upstream: pkg/api/v1/pod/util.go IsRestartableInitContainer (v1.32; kubetypes.IsRestartableInitContainer in v1.28-v1.30)
    """
    return features.DEFAULT_FEATURE_GATE.enabled("SidecarContainers") and getattr(c, "restart_policy", None) == RESTART_POLICY_ALWAYS


def has_any_regular_container_started(pod: V1Pod, statuses: list) -> bool:
    """Whether any regular container of the pod is running or has terminated (API statuses).

    Upstream: pkg/kubelet/container/helpers.go HasAnyRegularContainerStarted (v1.28 and later)
    """
    names = {c.name for c in pod.spec.containers}
    return any(s.name in names and s.state is not None and (s.state.running is not None or s.state.terminated is not None)
               for s in statuses)


# --8<-- [start:container_should_restart]
RESTART_RULE_ACTION_RESTART = "Restart"  # k8s.io/api/core/v1 ContainerRestartRuleAction
RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS = "RestartAllContainers"  # RestartAllContainersOnContainerExits, from 1.35
RESTART_RULE_OP_IN, RESTART_RULE_OP_NOT_IN = "In", "NotIn"  # ContainerRestartRuleOnExitCodesOperator


def find_matching_container_restart_rule(container: V1Container, exit_code: int) -> Optional[Any]:
    """The first of the container's restartPolicyRules whose exit codes match (In, or NotIn), else None.

    Upstream: pkg/api/v1/pod/util.go findMatchingContainerRestartRule
    """
    for rule in getattr(container, "restart_policy_rules", None) or []:
        codes = rule.exit_codes
        if codes is None:
            continue
        listed = exit_code in (codes.values or [])
        if (codes.operator == RESTART_RULE_OP_IN and listed) or (codes.operator == RESTART_RULE_OP_NOT_IN and not listed):
            return rule
    return None


def container_should_restart(container: V1Container, pod_restart_policy: Optional[str], exit_code: int) -> bool:
    """Whether an exited container restarts: a matching Restart rule, else its own policy, else the pod's.

    The rules count only when the container sets restartPolicy itself; an unknown policy falls through to
    the next level, and a pod with no policy counts as Always.
    Upstream: pkg/api/v1/pod/util.go ContainerShouldRestart (ContainerRestartRules)
    """
    own = getattr(container, "restart_policy", None)
    if own is not None:
        rule = find_matching_container_restart_rule(container, exit_code)
        if rule is not None and rule.action == RESTART_RULE_ACTION_RESTART:
            return True
        if own in (RESTART_POLICY_ALWAYS, RESTART_POLICY_ON_FAILURE, RESTART_POLICY_NEVER):
            return own == RESTART_POLICY_ALWAYS or (own == RESTART_POLICY_ON_FAILURE and exit_code != 0)
    if pod_restart_policy == RESTART_POLICY_ON_FAILURE:
        return exit_code != 0
    return pod_restart_policy != RESTART_POLICY_NEVER


def is_container_restartable(pod_restart_policy: Optional[str], container: V1Container) -> bool:
    """Whether the container can ever restart: a Restart rule, else its own policy is not Never, else the pod's.

    Upstream: pkg/api/v1/pod/util.go IsContainerRestartable (ContainerRestartRules)
    """
    own = getattr(container, "restart_policy", None)
    if own is not None:
        if any(r.action == RESTART_RULE_ACTION_RESTART for r in getattr(container, "restart_policy_rules", None) or []):
            return True
        return own != RESTART_POLICY_NEVER
    return pod_restart_policy != RESTART_POLICY_NEVER
# --8<-- [end:container_should_restart]


# --8<-- [start:restart_all_containers]
def all_containers_could_restart(spec) -> bool:
    """Whether any init or regular container has a restart rule with action RestartAllContainers.

    Upstream: pkg/api/v1/pod/util.go AllContainersCouldRestart (RestartAllContainersOnContainerExits)
    """
    return any(r.action == RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS for c in (spec.init_containers or []) +
               (spec.containers or []) for r in getattr(c, "restart_policy_rules", None) or [])


def should_all_containers_restart(pod: V1Pod, pod_status: Optional["PodStatus"], old_status) -> bool:
    """Whether the pod is in, or must begin, an in-place restart of all its containers.

    It is when the old API status has AllContainersRestarting True, or when the newest instance of an init
    or regular container exited with a code whose first matching rule says RestartAllContainers (with no
    runtime status, the API's terminated states are read instead, as the prober's worker calls it).
    Upstream: pkg/kubelet/container/helpers.go ShouldAllContainersRestart (from its callers and tests; see
    tests/test_restart_all_v136.py)
    """
    if old_status is not None and any(c.type == "AllContainersRestarting" and c.status == "True"
                                      for c in old_status.conditions or []):
        return True
    api = {s.name: s for s in ((old_status.init_container_statuses or []) + (old_status.container_statuses or [])
                               if old_status is not None else [])}
    for c in (pod.spec.init_containers or []) + pod.spec.containers:
        if pod_status is not None:
            s = pod_status.find_container_status_by_name(c.name)
            code = s.exit_code if s is not None and s.state == CONTAINER_STATE_EXITED else None
        else:
            s = api.get(c.name)
            code = s.state.terminated.exit_code if s is not None and s.state and s.state.terminated else None
        rule = find_matching_container_restart_rule(c, code) if code is not None else None
        if rule is not None and rule.action == RESTART_RULE_ACTION_RESTART_ALL_CONTAINERS:
            return True
    return False


def all_containers_restart_cleaned_up(pod: V1Pod, pod_status: "PodStatus") -> bool:
    """Whether the runtime holds no instance of any init or regular container (the reset is done).

    Upstream: pkg/kubelet/container/helpers.go AllContainersRestartCleanedUp
    """
    return not any(pod_status.find_container_status_by_name(c.name) is not None
                   for c in (pod.spec.init_containers or []) + pod.spec.containers)
# --8<-- [end:restart_all_containers]
