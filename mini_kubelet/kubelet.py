"""Admission on the node: new pods, oldest first, through the kubelet's chain of admit handlers.

Upstream: pkg/kubelet/kubelet.go (HandlePodAdditions, canAdmitPod, rejectPod, the handler registration in
NewMainKubelet), pkg/kubelet/kubelet_pods.go (filterOutInactivePods), pkg/kubelet/sysctl/ (the sysctl allowlist).

The kubelet keeps state in its pod manager, pod workers and status manager; here that state is passed in:
`admitted` (the pods it already has), `termination_requested` and `known_terminated` (pod-worker knowledge, as
sets of UIDs), and the phases this module writes itself (rejected and preempted pods become Failed).
Pods are told apart by UID, or by identity when a hand-written manifest has none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from kubernetes.client import V1Pod

from . import lifecycle, types
from .lifecycle import PodAdmitResult

if TYPE_CHECKING:  # a Node's models load when a Node is read, not for every Pod
    from kubernetes.client import V1Node

EvictionAdmit = Callable[[V1Pod, list[V1Pod]], PodAdmitResult]
Event = tuple[str, str, str]  # (type, reason, message), as the kubelet's event recorder writes it

# --8<-- [start:admit_handler_order]
ADMIT_HANDLER_ORDER = [  # NewMainKubelet registration order, which is the order canAdmitPod runs them in
    ("eviction", "pkg/kubelet/eviction/eviction_manager.go managerImpl.Admit"),
    ("sysctl", "pkg/kubelet/sysctl/allowlist.go patternAllowlist.Admit"),
    ("resource allocation", "pkg/kubelet/cm/topologymanager/topology_manager.go manager.Admit"),
    ("predicate", "pkg/kubelet/lifecycle/predicate.go predicateAdmitHandler.Admit"),
    ("shutdown", "pkg/kubelet/nodeshutdown/nodeshutdown_manager_linux.go managerImpl.Admit"),
]
# --8<-- [end:admit_handler_order]

# --8<-- [start:sysctl_constants]
SYSCTL_FORBIDDEN = "SysctlForbidden"
SAFE_SYSCTLS = [  # the kernel is taken to be 3.16 or newer, so ip_local_reserved_ports is included
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
]
_NAMESPACES = {"kernel.sem": "ipc"}
_PREFIX_NAMESPACES = {"kernel.shm": "ipc", "kernel.msg": "ipc", "fs.mqueue.": "ipc", "net.": "net"}
# --8<-- [end:sysctl_constants]


def _namespaced_by(name: str) -> str:
    if name in _NAMESPACES:
        return _NAMESPACES[name]
    return next((ns for prefix, ns in _PREFIX_NAMESPACES.items() if name.startswith(prefix)), "")


def _dots(name: str) -> str:
    """A sysctl written with slashes (net/ipv4/ip_forward) in the dotted form; dots inside a part become slashes."""
    first = next((ch for ch in name if ch in "./"), ".")
    return name if first == "." else name.translate(str.maketrans("./", "/."))


# --8<-- [start:sysctl_admit]
def sysctl_admit(pod: V1Pod, allowed_unsafe_sysctls: Iterable[str] = ()) -> PodAdmitResult:
    """Admit only allowlisted sysctls, and no net/ipc sysctl in a pod sharing the host's network/IPC namespace.

    Upstream: pkg/kubelet/sysctl/allowlist.go patternAllowlist.Admit (validateSysctl)
    """
    context = pod.spec.security_context
    if context is None or not context.sysctls:
        return PodAdmitResult(True)
    exact, prefixes = {}, {}
    for pattern in [*SAFE_SYSCTLS, *allowed_unsafe_sysctls]:
        pattern = _dots(pattern)
        name = pattern[:-1] if pattern.endswith("*") else pattern
        if not _namespaced_by(name):  # the kubelet refuses to start with such an --allowed-unsafe-sysctls entry
            raise ValueError(f'the sysctl "{pattern}" are not known to be namespaced')
        (prefixes if pattern.endswith("*") else exact)[name] = _namespaced_by(name)
    for sysctl in context.sysctls:
        name = _dots(sysctl.name)
        ns = exact.get(name) if name in exact else next((n for p, n in prefixes.items() if name.startswith(p)), None)
        if ns is None:
            error = f'"{name}" not allowlisted'
        elif (ns == "ipc" and pod.spec.host_ipc) or (ns == "net" and pod.spec.host_network):
            error = f'"{name}" not allowed with host {ns} enabled'
        else:
            continue
        return PodAdmitResult(False, SYSCTL_FORBIDDEN, f"forbidden sysctl: {error}")
    return PodAdmitResult(True)
# --8<-- [end:sysctl_admit]


# --8<-- [start:resource_allocation_admit]
def resource_allocation_admit(pod: V1Pod) -> PodAdmitResult:
    """The topology manager with the default policies (topology none, CPU manager none, memory manager None).

    Upstream: pkg/kubelet/cm/topologymanager/scope.go (policy none: Allocate for each container)
    With those defaults Allocate reserves nothing for cpu and memory, and the device manager allocates only
    resources of registered device plugins, of which a mini node has none: every pod is admitted.
    """
    return PodAdmitResult(True)
# --8<-- [end:resource_allocation_admit]


# --8<-- [start:shutdown_constants]
NODE_SHUTDOWN_REASON = "NodeShutdown"
NODE_SHUTDOWN_MESSAGE = "Pod was rejected as the node is shutting down."
# --8<-- [end:shutdown_constants]


# --8<-- [start:shutdown_admit]
def shutdown_admit(pod: V1Pod, shutting_down: bool = False) -> PodAdmitResult:
    """Reject every pod while the node is shutting down.

    Upstream: pkg/kubelet/nodeshutdown/nodeshutdown_manager_linux.go managerImpl.Admit
    """
    return PodAdmitResult(False, NODE_SHUTDOWN_REASON, NODE_SHUTDOWN_MESSAGE) if shutting_down else PodAdmitResult(True)
# --8<-- [end:shutdown_admit]


# --8<-- [start:run_admit_handlers]
def run_admit_handlers(pods: list[V1Pod], pod: V1Pod, node: Optional[V1Node], *,
                       eviction_admit: Optional[EvictionAdmit] = None, allowed_unsafe_sysctls: Iterable[str] = (),
                       update_plugin_resources=None, node_shutting_down: bool = False) -> tuple[str, PodAdmitResult]:
    """Which handler decided ("" when all admitted) and its result; the first refusal stops the chain.

    Upstream: pkg/kubelet/kubelet.go canAdmitPod (the loop over kl.admitHandlers)
    """
    handlers = {
        "eviction": lambda: eviction_admit(pod, pods) if eviction_admit else PodAdmitResult(True),
        "sysctl": lambda: sysctl_admit(pod, allowed_unsafe_sysctls),
        "resource allocation": lambda: resource_allocation_admit(pod),
        "predicate": lambda: lifecycle.predicate_admit(pod, node, pods, update_plugin_resources=update_plugin_resources),
        "shutdown": lambda: shutdown_admit(pod, node_shutting_down),
    }
    preempted: list[V1Pod] = []
    for name, _ in ADMIT_HANDLER_ORDER:
        result = handlers[name]()
        preempted += result.preempted
        if not result.admit:
            return name, PodAdmitResult(False, result.reason, result.message, preempted)
    return "", PodAdmitResult(True, preempted=preempted)
# --8<-- [end:run_admit_handlers]


# --8<-- [start:can_admit_pod]
def can_admit_pod(pods: list[V1Pod], pod: V1Pod, node: Optional[V1Node], *,
                  eviction_admit: Optional[EvictionAdmit] = None, **options) -> PodAdmitResult:
    """Run the admit handlers in order against the active pods; the first refusal is the answer.

    Upstream: pkg/kubelet/kubelet.go Kubelet.canAdmitPod
    eviction_admit(pod, pods) is the eviction manager's Admit; None admits (a node without pressure).
    """
    return run_admit_handlers(pods, pod, node, eviction_admit=eviction_admit, **options)[1]
# --8<-- [end:can_admit_pod]


# --8<-- [start:reject_pod]
def reject_pod(pod: V1Pod, reason: str, message: str) -> tuple[tuple[str, str, str], Event]:
    """The status the kubelet writes for a rejected pod (phase, reason, message) and the Warning event.

    Upstream: pkg/kubelet/kubelet.go Kubelet.rejectPod
    """
    return ("Failed", reason, "Pod was rejected: " + message), ("Warning", reason, message)
# --8<-- [end:reject_pod]


def _key(pod: V1Pod):
    return pod.metadata.uid or id(pod)


# --8<-- [start:filter_out_inactive_pods]
def filter_out_inactive_pods(pods: list[V1Pod], *, known_terminated: Iterable = (), termination_requested: Iterable = (),
                             status_phases: Optional[dict] = None) -> list[V1Pod]:
    """The pods that still hold resources: not known terminated, and not terminal unless still terminating.

    Upstream: pkg/kubelet/kubelet_pods.go Kubelet.filterOutInactivePods (with isAdmittedPodTerminal)
    status_phases: the status manager's phases by UID (a rejected pod is Failed there before the API says so).
    """
    known_terminated, termination_requested = set(known_terminated), set(termination_requested)
    status_phases, terminal = status_phases or {}, ("Succeeded", "Failed")
    active = []
    for pod in pods:
        key = pod.metadata.uid or id(pod)  # _key, inline: it is read for every pod the node holds
        if key in known_terminated:
            continue
        phase = pod.status.phase if pod.status is not None else None
        if (phase in terminal or status_phases.get(key) in terminal) and key not in termination_requested:
            continue
        active.append(pod)
    return active
# --8<-- [end:filter_out_inactive_pods]


# --8<-- [start:admission_outcome]
@dataclass
class AdmissionOutcome:
    """What HandlePodAdditions did with one pod: the admit result, the handler that decided, status and event.

    Upstream: pkg/kubelet/kubelet.go HandlePodAdditions (a result the kubelet does not collect in one place)
    `skipped` says why admission did not run; `preempted` lists the running pods killed to make room.
    """
    pod: V1Pod
    result: PodAdmitResult
    handler: str  # a name from ADMIT_HANDLER_ORDER, "" if every handler admitted or admission was skipped
    status_phase: str  # "Failed" when rejected; an admitted pod is Pending until its containers run
    status_reason: str = ""
    status_message: str = ""
    event: Optional[Event] = None
    skipped: str = ""
    preempted: list[Preemption] = field(default_factory=list)
    active_pods: list[V1Pod] = field(default_factory=list)  # what it was checked against (canAdmitPod's pods)
# --8<-- [end:admission_outcome]


# --8<-- [start:preemption]
@dataclass
class Preemption:
    """A running pod killed for a critical pod: its final status, condition and event.

    Upstream: pkg/kubelet/preemption/preemption.go CriticalPodAdmissionHandler.evictPodsToFreeRequests
    """
    pod: V1Pod
    status_phase: str = "Failed"
    status_reason: str = lifecycle.PREEMPTING
    status_message: str = lifecycle.PREEMPTION_MESSAGE
    condition: tuple[str, str, str, str] = (  # PodDisruptionConditions is beta and on in v1.27
        "DisruptionTarget", "True", "TerminationByKubelet", "Pod was preempted by Kubelet to accommodate a critical pod.")
    event: Event = ("Warning", lifecycle.PREEMPTING, lifecycle.PREEMPTION_MESSAGE)
# --8<-- [end:preemption]


def _by_creation_time(pod: V1Pod):
    stamp = pod.metadata.creation_timestamp
    return (stamp is not None, stamp.timestamp() if stamp is not None else 0.0)


# --8<-- [start:handle_pod_additions]
def handle_pod_additions(pods: list[V1Pod], node: Optional[V1Node], *, admitted: Iterable[V1Pod] = (),
                         eviction_admit: Optional[EvictionAdmit] = None, termination_requested: Iterable = (),
                         known_terminated: Iterable = (), **options) -> list[AdmissionOutcome]:
    """Admit or reject one batch of new pods one by one, oldest first, each against the active pods before it.

    Upstream: pkg/kubelet/kubelet.go Kubelet.HandlePodAdditions
    Upstream's sort is not stable: pods created in the same second come in an unspecified order (here: as given).
    """
    known, requested = list(admitted), set(termination_requested)
    phases: dict = {}  # the status manager: what this kubelet wrote
    outcomes = []
    for pod in sorted(pods, key=_by_creation_time):
        existing = list(known)  # the pod manager's pods before this one is added
        if types.is_mirror_pod(pod):  # the API copy of a static pod: never admitted itself
            outcomes.append(AdmissionOutcome(pod, PodAdmitResult(True), "", _phase(pod), skipped="mirror pod"))
            continue
        known.append(pod)
        if _key(pod) in requested:
            outcomes.append(AdmissionOutcome(pod, PodAdmitResult(True), "", _phase(pod),
                                             skipped="termination already requested"))
            continue
        active = filter_out_inactive_pods(existing, known_terminated=known_terminated,
                                          termination_requested=requested, status_phases=phases)
        handler, result = run_admit_handlers(active, pod, node, eviction_admit=eviction_admit, **options)
        victims = [Preemption(victim) for victim in result.preempted]
        phases.update({_key(v.pod): "Failed" for v in victims})
        if result.admit:
            outcomes.append(AdmissionOutcome(pod, result, "", "Pending", preempted=victims, active_pods=active))
            continue
        (phase, reason, message), event = reject_pod(pod, result.reason, result.message)
        phases[_key(pod)] = phase
        outcomes.append(AdmissionOutcome(pod, result, handler, phase, reason, message, event, preempted=victims,
                                         active_pods=active))
    return outcomes
# --8<-- [end:handle_pod_additions]


def _phase(pod: V1Pod) -> str:
    return (pod.status.phase if pod.status else None) or "Pending"
