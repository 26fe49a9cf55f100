"""What an evicted pod is told: the status message and the event annotations, word for word.

Upstream: pkg/kubelet/eviction/helpers.go (the message formats, evictionMessage, getThresholdMetInfo).
Every sentence ends with ". " (a trailing space), as upstream's do.
"""

from __future__ import annotations

from typing import Iterable, Optional

from kubernetes.client import V1Pod

from . import api
from .api import Threshold
from .signals import (DECIMAL_SIGNALS, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY, SIGNAL_TO_RESOURCE,
                      SignalObservation, StatsFunc, _int64)

# --8<-- [start:formats]
REASON = "Evicted"  # the pod status reason, and the event reason
NODE_LOW_MESSAGE_FMT = "The node was low on resource: {}. "
THRESHOLD_MET_MESSAGE_FMT = "Threshold quantity: {}, available: {}. "
CONTAINER_MESSAGE_FMT = "Container {} was using {}, request is {}, has larger consumption of {}. "
NODE_CONDITION_MESSAGE_FMT = "The node had condition: {}. "  # admission; the list prints Go-style: [A B]
CONTAINER_EPHEMERAL_STORAGE_MESSAGE_FMT = 'Container {} exceeded its local ephemeral storage limit "{}". '
POD_EPHEMERAL_STORAGE_MESSAGE_FMT = "Pod ephemeral local storage usage exceeds the total limit of containers {}. "
EMPTY_DIR_MESSAGE_FMT = 'Usage of EmptyDir volume "{}" exceeds the limit "{}". '

OFFENDING_CONTAINERS_KEY = "offending_containers"
OFFENDING_CONTAINERS_USAGE_KEY = "offending_containers_usage"
STARVED_RESOURCE_KEY = "starved_resource"
# --8<-- [end:formats]


def _int64_string(number: int, fmt: str) -> str:
    """An int64 quantity as Go prints it: the smallest int64 whole, as negating it to take factors off overflows."""
    return str(number) if number == -2**63 else api.format_quantity(number, fmt)


def _available_string(signal: str, observed: SignalObservation) -> str:
    return _int64_string(observed.available, api.DECIMAL_SI if signal in DECIMAL_SIGNALS else api.BINARY_SI)


# --8<-- [start:get_threshold_met_info]
def get_threshold_met_info(resource: str, thresholds: Iterable[Threshold],
                           observations: dict[str, SignalObservation]) -> Optional[tuple[str, str]]:
    """The threshold quantity and the available amount, as printed, of the first observed threshold on the resource.

    Upstream: pkg/kubelet/eviction/helpers.go getThresholdMetInfo
    """
    for threshold in thresholds:
        if SIGNAL_TO_RESOURCE.get(threshold.signal) == resource and threshold.signal in observations:
            observed = observations[threshold.signal]
            quantity = api.threshold_quantity_string(threshold.value, observed.capacity)
            return quantity, _available_string(threshold.signal, observed)
    return None
# --8<-- [end:get_threshold_met_info]


def _container_request(pod: V1Pod, container, resource: str, in_place_pod_vertical_scaling: bool) -> tuple:
    """The container's request for the resource, and how Go prints it ("0" when it has none)."""
    requests = (container.resources.requests if container.resources else None) or {}
    text = requests.get(resource)
    if in_place_pod_vertical_scaling and resource in (RESOURCE_MEMORY, "cpu"):
        statuses = (pod.status.container_statuses if pod.status else None) or []
        status = next((s for s in statuses if s.name == container.name), None)
        if status is not None:
            text = (status.allocated_resources or {}).get(resource)
    if text is None:
        return 0, "0"
    return api.parse_quantity(str(text))[0], api.quantity_string(str(text))


# --8<-- [start:eviction_message]
def eviction_message(resource: str, pod: V1Pod, stats: StatsFunc, thresholds: Iterable[Threshold] = (),
                     observations: Optional[dict[str, SignalObservation]] = None, *,
                     in_place_pod_vertical_scaling: bool = False) -> tuple[str, dict[str, str]]:
    """The eviction message and event annotations: the starved resource, the threshold met, the containers over request.

    Upstream: pkg/kubelet/eviction/helpers.go evictionMessage
    """
    message = NODE_LOW_MESSAGE_FMT.format(resource)
    met = get_threshold_met_info(resource, thresholds, observations or {})
    if met is not None:
        message += THRESHOLD_MET_MESSAGE_FMT.format(*met)
    pod_stats = stats(pod)
    if pod_stats is None:
        return message, {}  # no stats: no container sentences and no annotations at all
    containers, usages = [], []
    for container_stats in pod_stats.containers:
        for container in pod.spec.containers or []:  # regular containers only; init containers are not checked
            if container.name != container_stats.name:
                continue
            usage = None
            if resource == RESOURCE_EPHEMERAL_STORAGE:
                rootfs, logs = container_stats.rootfs, container_stats.logs
                if rootfs and rootfs.used_bytes is not None and logs and logs.used_bytes is not None:
                    usage = _int64(rootfs.used_bytes + logs.used_bytes)  # a uint64 sum, read as an int64
            elif resource == RESOURCE_MEMORY:
                if container_stats.memory and container_stats.memory.working_set_bytes is not None:
                    usage = _int64(container_stats.memory.working_set_bytes)
            request, request_text = _container_request(pod, container, resource, in_place_pod_vertical_scaling)
            if usage is not None and usage > request:
                usage_text = _int64_string(usage, api.BINARY_SI)
                message += CONTAINER_MESSAGE_FMT.format(container.name, usage_text, request_text, resource)
                containers.append(container.name)
                usages.append(usage_text)
    annotations = {
        OFFENDING_CONTAINERS_KEY: ",".join(containers),
        OFFENDING_CONTAINERS_USAGE_KEY: ",".join(usages),
        STARVED_RESOURCE_KEY: resource,
    }
    return message, annotations
# --8<-- [end:eviction_message]


# --8<-- [start:pod_is_evicted]
def pod_is_evicted(phase: Optional[str], reason: Optional[str]) -> bool:
    """Whether a pod status says it was evicted: phase Failed and reason Evicted.

    Upstream: pkg/kubelet/eviction/helpers.go PodIsEvicted
    """
    return phase == "Failed" and reason == REASON
# --8<-- [end:pod_is_evicted]
