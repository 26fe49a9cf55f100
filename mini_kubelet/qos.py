"""A Pod's QoS class, and the OOM score adjustment the kubelet gives each of its containers.

Upstream: pkg/apis/core/v1/helper/qos/qos.go (the class) and pkg/kubelet/qos/policy.go (OOM scores).
In v1.27 the class is computed from the spec on every call (reading status.qosClass came in 1.29).
"""

from __future__ import annotations

from decimal import Decimal

from kubernetes.client import V1Container, V1Pod

from . import api, types

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
    """The pod's QoS class, from the cpu and memory requests and limits of all its containers.

    Upstream: pkg/apis/core/v1/helper/qos/qos.go GetPodQOS
    """
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
    requests = (container.resources.requests if container.resources else None) or {}
    memory_request = api.value(requests.get("memory", "0"))
    oom_score_adjust = 1000 - api.int64_div(1000 * memory_request, memory_capacity)  # int64 (past 8 PiB it wraps)
    if oom_score_adjust < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return 1000 + GUARANTEED_OOM_SCORE_ADJ  # 3: stay above any Guaranteed container's score
    if oom_score_adjust == BESTEFFORT_OOM_SCORE_ADJ:
        return oom_score_adjust - 1  # 999: stay below BestEffort
    return oom_score_adjust
# --8<-- [end:get_container_oom_score_adjust]
