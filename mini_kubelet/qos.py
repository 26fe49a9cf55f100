"""A Pod's QoS class, and the OOM score adjustment the kubelet gives each of its containers.

Upstream: pkg/apis/core/v1/helper/qos/qos.go (the class) and pkg/kubelet/qos/policy.go, helpers.go (OOM scores).
In v1.27 the class is computed from the spec on every call; from 1.29 GetPodQOS returns status.qosClass when
set (ComputePodQOS computes it), and with PodLevelResources on the pod's spec.resources decide it. The OOM score
caps a sidecar at its regular containers' from 1.32, and shares out unclaimed pod-level memory under that gate.
"""

from __future__ import annotations

from decimal import Decimal

from kubernetes.client import V1Container, V1Pod

from . import api, features, resource, types

# --8<-- [start:qos_classes]
GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"

SUPPORTED_QOS_COMPUTE_RESOURCES = ("cpu", "memory")  # nothing else affects the class
# --8<-- [end:qos_classes]

# --8<-- [start:oom_score_adj]
KUBELET_OOM_SCORE_ADJ = -999
KUBE_PROXY_OOM_SCORE_ADJ = -999
GUARANTEED_OOM_SCORE_ADJ = -997
BESTEFFORT_OOM_SCORE_ADJ = 1000
# --8<-- [end:oom_score_adj]


# --8<-- [start:get_pod_qos]
def _positive_qos_amounts(raw: dict | None) -> dict[str, Decimal]:
    # Only cpu and memory count (SUPPORTED_QOS_COMPUTE_RESOURCES), and only amounts above zero.
    amounts = {name: api.parse_quantity(text) for name, text in (raw or {}).items()}
    return {name: amount for name, amount in amounts.items()
            if name in SUPPORTED_QOS_COMPUTE_RESOURCES and amount > 0}


def get_pod_qos(pod: V1Pod) -> str:
    """The pod's QoS class: from 1.29 the one stored in status.qosClass, else (and always in v1.27) computed.

    Upstream: pkg/apis/core/v1/helper/qos/qos.go GetPodQOS
    """
    stored = pod.status.qos_class if pod.status is not None else None
    if stored and features.DEFAULT_FEATURE_GATE.changed("QOSClassFromStatus"):
        return stored
    return compute_pod_qos(pod)


def compute_pod_qos(pod: V1Pod) -> str:
    """The pod's QoS class from its cpu and memory requests and limits: the pod-level ones when set, else its containers'.

    With PodLevelResources on, any spec.resources (even an empty one) decides alone; v1.36 still tests
    for the field, not for amounts in it (#137150 changed that in 1.37).
    Upstream: pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS
    """
    if features.DEFAULT_FEATURE_GATE.enabled("PodLevelResources") and pod.spec.resources is not None:
        requests = _positive_qos_amounts(pod.spec.resources.requests)
        limits = _positive_qos_amounts(pod.spec.resources.limits)
        # Only pod-level limits that are set must name both cpu and memory; missing ones fail below.
        is_guaranteed = not pod.spec.resources.limits or {"cpu", "memory"} <= limits.keys()
        return _qos_class(requests, limits, is_guaranteed)
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    is_guaranteed = True
    for container in (pod.spec.containers or []) + (pod.spec.init_containers or []):
        resources = container.resources
        # Only amounts above zero count; "0" is the same as leaving the key out.
        for name, amount in _positive_qos_amounts(resources.requests if resources else None).items():
            requests[name] = requests.get(name, Decimal(0)) + amount
        found = _positive_qos_amounts(resources.limits if resources else None)
        for name, amount in found.items():
            limits[name] = limits.get(name, Decimal(0)) + amount
        if not {"cpu", "memory"} <= found.keys():
            is_guaranteed = False  # every container needs both a cpu and a memory limit
    return _qos_class(requests, limits, is_guaranteed)


def _qos_class(requests: dict[str, Decimal], limits: dict[str, Decimal], is_guaranteed: bool) -> str:
    """The class from summed cpu/memory requests and limits: none is BestEffort; equal sums of both are Guaranteed."""
    if not requests and not limits:
        return BEST_EFFORT
    if is_guaranteed and any(limits.get(name) != amount for name, amount in requests.items()):
        is_guaranteed = False  # the pod-wide sums must match, resource by resource
    if is_guaranteed and len(requests) == len(limits):
        return GUARANTEED
    return BURSTABLE
# --8<-- [end:get_pod_qos]


# --8<-- [start:get_container_oom_score_adjust]
def get_container_oom_score_adjust(pod: V1Pod, container: V1Container, memory_capacity: int) -> int:
    """The oom_score_adj for a container: -997, 1000, or 3..999 by its share of the machine's memory.

    Upstream: pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust
    """
    if types.is_node_critical_pod(pod):
        return GUARANTEED_OOM_SCORE_ADJ
    qos_class = get_pod_qos(pod)
    if qos_class == GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos_class == BEST_EFFORT:
        return BESTEFFORT_OOM_SCORE_ADJ
    # Burstable: this container's memory request as a share of the machine's memory capacity
    # (not allocatable). The in-place resize gate is off in v1.27, so the spec is used.
    memory_request = _memory_request(container)
    gate = features.DEFAULT_FEATURE_GATE
    remaining = 0
    if gate.enabled("PodLevelResources") and resource.is_pod_level_requests_set(pod):
        remaining = remaining_pod_mem_req_per_container(pod)  # pod-level memory no container claims, shared out
    oom_score_adjust = api.int64(1000 - _go_div(1000 * api.int64(memory_request + remaining), memory_capacity))
    if gate.changed("SidecarOOMScoreCap") and gate.enabled("SidecarContainers") and _is_sidecar(pod, container):
        # A sidecar is never more killable than the regular container with the smallest request.
        smallest = api.int64(min_regular_container_memory(pod) + remaining)
        oom_score_adjust = min(oom_score_adjust, api.int64(1000 - _go_div(1000 * smallest, memory_capacity)))
    if oom_score_adjust < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return 1000 + GUARANTEED_OOM_SCORE_ADJ  # 3: stay above any Guaranteed container's score
    if oom_score_adjust == BESTEFFORT_OOM_SCORE_ADJ:
        return oom_score_adjust - 1  # 999: stay below BestEffort
    return oom_score_adjust
# --8<-- [end:get_container_oom_score_adjust]


def _go_div(numerator: int, denominator: int) -> int:
    """Go's int64 division: the numerator wraps past 2**63 (an 8Ei request), the quotient truncates toward zero."""
    return api.int64_div(numerator, denominator)


def _memory_request(container: V1Container) -> int:
    requests = (container.resources.requests if container.resources else None) or {}
    return api.value(requests.get("memory", "0"))


def _is_sidecar(pod: V1Pod, container: V1Container) -> bool:
    """restartPolicy Always and listed among the pod's init containers (by name).

    Upstream: pkg/kubelet/qos/policy.go isSidecarContainer
    """
    return getattr(container, "restart_policy", None) == "Always" and \
        any(c.name == container.name for c in pod.spec.init_containers or [])


def min_regular_container_memory(pod: V1Pod) -> int:
    """The smallest memory request (bytes) among the pod's regular containers; init containers do not count.

    Upstream: pkg/kubelet/qos/helpers.go minRegularContainerMemory
    """
    return min(_memory_request(c) for c in pod.spec.containers)


def remaining_pod_mem_req_per_container(pod: V1Pod) -> int:
    """The pod-level memory request the containers do not claim, split evenly over all regular and init containers.

    The containers' claim is component-helpers AggregateContainerRequests: regular containers and
    sidecars summed, raised to any larger init container's need (resource.pod_requests without pod-level values).
    Upstream: pkg/kubelet/qos/helpers.go remainingPodMemReqPerContainer
    """
    pod_request = api.value(((pod.spec.resources.requests or {}) if pod.spec.resources else {}).get("memory", "0"))
    if pod_request == 0:
        return 0
    count = len(pod.spec.containers or []) + len(pod.spec.init_containers or [])
    return _go_div(pod_request - _aggregate_container_memory_request(pod), count)


def _aggregate_container_memory_request(pod: V1Pod) -> int:
    """AggregateContainerRequests' memory in bytes: the containers' requests without pod-level ones or overhead."""
    aggregate = resource.pod_requests(pod, exclude_overhead=True, skip_pod_level_resources=True)
    return api.value(aggregate.get("memory", Decimal(0)))
