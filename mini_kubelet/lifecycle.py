"""The predicate admit handler: the kubelet's own run of the scheduler's checks, and critical-pod preemption.

Upstream: pkg/kubelet/lifecycle/predicate.go (predicateAdmitHandler.Admit, generalFilter, the OS checks,
removeMissingExtendedResources) and pkg/kubelet/preemption/preemption.go (CriticalPodAdmissionHandler).

The kubelet reads its Node through getNodeAnyWay (the informer cache, else a Node it builds itself); here the
caller passes the Node, and None stands for "cannot get node info". The device manager's
UpdatePluginResources is a no-op without device plugins; a test can pass its own `update_plugin_resources`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, Union

from kubernetes.client import V1Pod

from . import api, features, qos, resource, scheduler, types

if TYPE_CHECKING:  # a Node's models load when a Node is read, not for every Pod
    from kubernetes.client import V1Node

GOOS = "linux"  # runtime.GOOS of the kubelet binary: mini_kubelet plays a Linux node

# --8<-- [start:reasons]
INVALID_NODE_INFO = "InvalidNodeInfo"
UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"
UNKNOWN_REASON = "UnknownReason"
UNEXPECTED_PREDICATE_FAILURE_TYPE = "UnexpectedPredicateFailureType"
INSUFFICIENT_RESOURCE_PREFIX = "OutOf"  # + the resource name: OutOfcpu, OutOfpods, OutOfexample.com/gpu
OUT_OF_CPU, OUT_OF_MEMORY = "OutOfcpu", "OutOfmemory"
OUT_OF_EPHEMERAL_STORAGE, OUT_OF_PODS = "OutOfephemeral-storage", "OutOfpods"
POD_OS_SELECTOR_NODE_LABEL_DOES_NOT_MATCH = "PodOSSelectorNodeLabelDoesNotMatch"
POD_OS_NOT_SUPPORTED = "PodOSNotSupported"
NODE_AFFINITY, NODE_NAME = scheduler.NODE_AFFINITY, scheduler.NODE_NAME
NODE_PORTS, TAINT_TOLERATION = scheduler.NODE_PORTS, scheduler.TAINT_TOLERATION
LABEL_OS_STABLE = "kubernetes.io/os"
PREEMPTING = "Preempting"  # pkg/kubelet/events PreemptContainer
PREEMPTION_MESSAGE = "Preempted in order to admit critical pod"
# --8<-- [end:reasons]


# --8<-- [start:pod_admit_result]
@dataclass
class PodAdmitResult:
    """A handler's answer: admit, or not with a one-word reason and a message.

    Upstream: pkg/kubelet/lifecycle/interfaces.go PodAdmitResult
    `preempted` (not upstream) lists the running pods the kubelet killed to make room for a critical pod.
    """
    admit: bool
    reason: str = ""
    message: str = ""
    preempted: list[V1Pod] = field(default_factory=list)
# --8<-- [end:pod_admit_result]


ADD_OPERATION, RESIZE_OPERATION = "add", "resize"  # what the allocation manager asks its handlers (1.35+)


@dataclass
class PodAdmitAttributes:
    """The pod asked about, the pods already admitted (at their allocated resources), and why it is asked.

    Upstream: pkg/kubelet/lifecycle/interfaces.go PodAdmitAttributes (Operation from 1.35)
    """
    pod: V1Pod
    other_pods: list[V1Pod]
    operation: str = ADD_OPERATION


# --8<-- [start:failure_reasons]
# --8<-- [start:insufficient_resource_error]
@dataclass
class InsufficientResourceError:
    """A resource the node is short of; its error text carries the numbers.

    Upstream: pkg/kubelet/lifecycle/predicate.go InsufficientResourceError
    """
    resource_name: str
    requested: int
    used: int
    capacity: int

    def error(self) -> str:
        return (f"Node didn't have enough resource: {self.resource_name}, requested: {self.requested}, "
                f"used: {self.used}, capacity: {self.capacity}")

    def get_reason(self) -> str:
        return f"Insufficient {self.resource_name}"

    def get_insufficient_amount(self) -> int:
        return self.requested - (self.capacity - self.used)
# --8<-- [end:insufficient_resource_error]


# --8<-- [start:predicate_failure_error]
@dataclass
class PredicateFailureError:
    """A failed check other than resources; its error text names the check, and from 1.31 its description.

    Upstream: pkg/kubelet/lifecycle/predicate.go PredicateFailureError
    """
    predicate_name: str
    predicate_desc: str

    def error(self) -> str:
        if features.DEFAULT_FEATURE_GATE.changed("PredicateFailureDescription"):  # 1.31: the description follows
            return f"Predicate {self.predicate_name} failed: {self.predicate_desc}"
        return f"Predicate {self.predicate_name} failed"

    def get_reason(self) -> str:
        return self.predicate_desc
# --8<-- [end:predicate_failure_error]
# --8<-- [end:failure_reasons]


PredicateFailureReason = Union[InsufficientResourceError, PredicateFailureError]


# --8<-- [start:general_filter]
def general_filter(pod: V1Pod, node_info: scheduler.NodeInfo) -> list[PredicateFailureReason]:
    """Every failed check, in order: resources, NodeAffinity, NodeName, NodePorts, then NoExecute taints.

    Upstream: pkg/kubelet/lifecycle/predicate.go generalFilter (with pkg/scheduler/eventhandlers.go AdmissionCheck)
    """
    reasons: list[PredicateFailureReason] = [
        InsufficientResourceError(r.resource_name, r.requested, r.used, r.capacity)
        for r in scheduler.fits(pod, node_info)]
    node = node_info.node
    if not scheduler.pod_matches_node_selector_and_affinity_terms(pod, node):
        reasons.append(PredicateFailureError(NODE_AFFINITY, scheduler.NODE_AFFINITY_ERR_REASON))
    if not scheduler.fits_node_name(pod, node):
        reasons.append(PredicateFailureError(NODE_NAME, scheduler.NODE_NAME_ERR_REASON))
    if not scheduler.fits_ports(pod, node_info):
        reasons.append(PredicateFailureError(NODE_PORTS, scheduler.NODE_PORTS_ERR_REASON))
    if not types.is_static_pod(pod):  # the kubelet looks only at NoExecute taints, and never for static pods
        taints = node.spec.taints if node.spec else None
        if scheduler.find_matching_untolerated_taint(taints, pod.spec.tolerations, lambda t: t.effect == "NoExecute"):
            reasons.append(PredicateFailureError(TAINT_TOLERATION, scheduler.TAINT_TOLERATION_ERR_REASON))
    return reasons
# --8<-- [end:general_filter]


# --8<-- [start:remove_missing_extended_resources]
def remove_missing_extended_resources(pod: V1Pod, node_info: scheduler.NodeInfo) -> V1Pod:
    """A copy of the pod without app-container (from 1.31 also init-container) requests for extended resources
    the node does not list.

    Upstream: pkg/kubelet/lifecycle/predicate.go removeMissingExtendedResources (#124273 in 1.31: init containers)
    """
    pod = api.deep_copy(pod)
    containers = list(pod.spec.containers or [])
    if features.DEFAULT_FEATURE_GATE.changed("InitContainerExtendedResourcesDropped"):
        containers += pod.spec.init_containers or []
    for container in containers:  # limits are left alone; so are init containers in v1.27
        if container.resources and container.resources.requests:
            container.resources.requests = {
                name: amount for name, amount in container.resources.requests.items()
                if not scheduler.is_extended_resource_name(name) or name in node_info.allocatable}
    return pod
# --8<-- [end:remove_missing_extended_resources]


# --8<-- [start:os_checks]
# --8<-- [start:reject_pod_admission_based_on_os_selector]
def reject_pod_admission_based_on_os_selector(pod: V1Pod, node: V1Node, goos: str = GOOS) -> bool:
    """Reject if the pod's own label kubernetes.io/os names another OS than the kubelet's.

    Upstream: pkg/kubelet/lifecycle/predicate.go rejectPodAdmissionBasedOnOSSelector
    """
    labels = node.metadata.labels or {}  # as in Go, an empty label map is replaced by a new one
    if labels.get(LABEL_OS_STABLE) != goos:
        labels[LABEL_OS_STABLE] = goos  # Go quirk kept: a non-empty label map of the node is corrected in place
    pod_labels = pod.metadata.labels or {}
    return LABEL_OS_STABLE in pod_labels and pod_labels[LABEL_OS_STABLE] != labels[LABEL_OS_STABLE]
# --8<-- [end:reject_pod_admission_based_on_os_selector]


# --8<-- [start:reject_pod_admission_based_on_os_field]
def reject_pod_admission_based_on_os_field(pod: V1Pod, goos: str = GOOS) -> bool:
    """Reject if spec.os is set and names another OS than the kubelet's.

    Upstream: pkg/kubelet/lifecycle/predicate.go rejectPodAdmissionBasedOnOSField
    """
    return pod.spec.os is not None and pod.spec.os.name != goos
# --8<-- [end:reject_pod_admission_based_on_os_field]
# --8<-- [end:os_checks]


# --8<-- [start:predicate_admit]
def predicate_admit(pod: V1Pod, node: Optional[V1Node], other_pods: list[V1Pod], *,
                    update_plugin_resources: Optional[Callable[[scheduler.NodeInfo, V1Pod], None]] = None,
                    goos: str = GOOS) -> PodAdmitResult:
    """Run the general predicates against the node and the pods already admitted; report only the first failure.

    Upstream: pkg/kubelet/lifecycle/predicate.go predicateAdmitHandler.Admit (from 1.29, #116892, the OS checks first)
    """
    if node is None:
        return PodAdmitResult(False, INVALID_NODE_INFO, "Kubelet cannot get node info.")
    os_first = features.DEFAULT_FEATURE_GATE.changed("AdmissionOSChecksFirst")  # 1.29: preemption cannot help them
    if os_first and (rejected := os_rejection(pod, node, goos)):
        return rejected
    node_info = scheduler.new_node_info(node, other_pods)
    if update_plugin_resources is not None:
        try:
            update_plugin_resources(node_info, pod)
        except Exception as err:  # the device manager's error, whatever its type
            return PodAdmitResult(False, UNEXPECTED_ADMISSION_ERROR,
                                  f"Update plugin resources failed due to {err}, which is unexpected.")
    reasons = general_filter(remove_missing_extended_resources(pod, node_info), node_info)
    preempted: list[V1Pod] = []
    if reasons:
        try:
            reasons, preempted = handle_admission_failure(pod, reasons, other_pods)
        except PreemptionError as err:
            return PodAdmitResult(False, UNEXPECTED_ADMISSION_ERROR,
                                  f"Unexpected error while attempting to recover from admission failure: {err}")
    if reasons:
        first = reasons[0]  # only the first failure is reported
        if isinstance(first, InsufficientResourceError):
            return PodAdmitResult(False, INSUFFICIENT_RESOURCE_PREFIX + first.resource_name, first.error())
        return PodAdmitResult(False, first.predicate_name, first.error())
    if not os_first and (rejected := os_rejection(pod, node, goos, preempted)):
        return rejected  # in v1.27 after the predicates, so a pod may be rejected after others were preempted
    return PodAdmitResult(True, preempted=preempted)
# --8<-- [end:predicate_admit]


def new_predicate_admit_handler(get_node: Callable[[], Optional[V1Node]], **options):
    """predicate_admit as a handler of the allocation manager's chain (it asks the same for adds and resizes).

    Upstream: pkg/kubelet/lifecycle/predicate.go NewPredicateAdmitHandler
    """
    return lambda attrs: predicate_admit(attrs.pod, get_node(), attrs.other_pods, **options)


# --8<-- [start:os_rejection]
def os_rejection(pod: V1Pod, node: V1Node, goos: str = GOOS, preempted: Optional[list[V1Pod]] = None):
    """The rejection for a pod whose OS label or spec.os names another OS than the kubelet's, else None.

    Upstream: pkg/kubelet/lifecycle/predicate.go predicateAdmitHandler.Admit (the two OS checks)
    """
    if reject_pod_admission_based_on_os_selector(pod, node, goos):
        return PodAdmitResult(False, POD_OS_SELECTOR_NODE_LABEL_DOES_NOT_MATCH,
                              "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
                              list(preempted or []))
    if reject_pod_admission_based_on_os_field(pod, goos):
        return PodAdmitResult(False, POD_OS_NOT_SUPPORTED,
                              "Failed to admit pod as the OS field doesn't match node OS", list(preempted or []))
    return None
# --8<-- [end:os_rejection]


# --8<-- [start:preemption_error]
class PreemptionError(Exception):
    """No set of running pods frees enough for the critical pod.

    Upstream: the error returned by pkg/kubelet/preemption/preemption.go evictPodsToFreeRequests
    """
# --8<-- [end:preemption_error]


Requirements = list[tuple[str, int]]  # admissionRequirementList: (resource name, quantity still needed)


# --8<-- [start:handle_admission_failure]
def handle_admission_failure(pod: V1Pod, reasons: list[PredicateFailureReason],
                             active_pods: list[V1Pod]) -> tuple[list[PredicateFailureReason], list[V1Pod]]:
    """For a critical pod short only of resources: the running pods to kill instead of rejecting it.

    Upstream: pkg/kubelet/preemption/preemption.go CriticalPodAdmissionHandler.HandleAdmissionFailure
    Returns the reasons left (none: admit) and the victims; raises PreemptionError when no victims suffice.
    """
    if not types.is_critical_pod(pod):
        return reasons, []
    other = [r for r in reasons if not isinstance(r, InsufficientResourceError)]
    if other:  # a critical pod may not fail for resources, so only the other reasons are kept
        return other, []
    requirements = [(r.resource_name, r.get_insufficient_amount()) for r in reasons]
    try:
        return [], get_pods_to_preempt(pod, active_pods, requirements)
    except PreemptionError as err:
        raise PreemptionError(f"preemption: error finding a set of pods to preempt: {err}") from None
# --8<-- [end:handle_admission_failure]


def _subtract(requirements: Requirements, pods: list[V1Pod]) -> Requirements:
    left = []
    for name, quantity in requirements:
        for pod in pods:
            quantity -= resource.get_resource_request(pod, name)
            if quantity <= 0:
                break
        if quantity > 0:
            left.append((name, quantity))
    return left


def _distance(requirements: Requirements, pod: V1Pod) -> float:
    """How far the pod is from covering the requirements: sum of squared uncovered fractions."""
    return sum(((q - resource.get_resource_request(pod, name)) / q) ** 2 for name, q in requirements
               if q - resource.get_resource_request(pod, name) > 0)


def _smaller_resource_request(a: V1Pod, b: V1Pod) -> bool:
    for name in ("memory", "cpu"):
        ra, rb = resource.get_resource_request(a, name), resource.get_resource_request(b, name)
        if ra != rb:
            return ra < rb
    return True


def _to_string(requirements: Requirements) -> str:
    return "[" + "".join(f"(res: {name}, q: {q}), " for name, q in requirements) + "]"


def _get_pods_to_preempt_by_distance(pods: list[V1Pod], requirements: Requirements) -> list[V1Pod]:
    pods, chosen = list(pods), []
    while requirements:
        if not pods:
            raise PreemptionError(f"no set of running pods found to reclaim resources: {_to_string(requirements)}")
        best_distance, best = float(len(requirements) + 1), 0
        for i, candidate in enumerate(pods):
            distance = _distance(requirements, candidate)
            if distance < best_distance or (distance == best_distance and _smaller_resource_request(candidate, pods[best])):
                best_distance, best = distance, i
        requirements = _subtract(requirements, [pods[best]])
        chosen.append(pods[best])
        pods[best] = pods[-1]  # Go's swap-remove, which changes the order later rounds see
        pods.pop()
    return chosen


# --8<-- [start:get_pods_to_preempt]
def get_pods_to_preempt(pod: V1Pod, pods: list[V1Pod], requirements: Requirements) -> list[V1Pod]:
    """Victims that free the requirements, disturbing Guaranteed pods least, then Burstable, then BestEffort.

    Upstream: pkg/kubelet/preemption/preemption.go getPodsToPreempt
    """
    by_class: dict[str, list[V1Pod]] = {qos.BEST_EFFORT: [], qos.BURSTABLE: [], qos.GUARANTEED: []}
    for candidate in pods:
        if preemptable(pod, candidate):
            by_class[qos.get_pod_qos(candidate)].append(candidate)
    best_effort, burstable, guaranteed = by_class[qos.BEST_EFFORT], by_class[qos.BURSTABLE], by_class[qos.GUARANTEED]
    unable = _subtract(requirements, best_effort + burstable + guaranteed)
    if unable:
        raise PreemptionError(f"no set of running pods found to reclaim resources: {_to_string(unable)}")
    guaranteed_out = _get_pods_to_preempt_by_distance(guaranteed, _subtract(requirements, best_effort + burstable))
    burstable_out = _get_pods_to_preempt_by_distance(burstable, _subtract(requirements, best_effort + guaranteed_out))
    best_effort_out = _get_pods_to_preempt_by_distance(best_effort, _subtract(requirements, burstable_out + guaranteed_out))
    return best_effort_out + burstable_out + guaranteed_out
# --8<-- [end:get_pods_to_preempt]


# --8<-- [start:preemptable]
def preemptable(preemptor: V1Pod, preemptee: V1Pod) -> bool:
    """The preemptor is critical and the other is not, or both have priorities and the preemptor's is higher.

    Upstream: pkg/kubelet/types/pod_update.go Preemptable
    """
    if types.is_critical_pod(preemptor) and not types.is_critical_pod(preemptee):
        return True
    a, b = preemptor.spec.priority, preemptee.spec.priority
    return a is not None and b is not None and a > b
# --8<-- [end:preemptable]
