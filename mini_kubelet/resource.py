"""A Pod's effective requests and limits: app containers add up, init containers set a floor.

Upstream: pkg/api/v1/resource/helpers.go (PodRequests, PodLimits, GetResourceRequestQuantity,
GetResourceRequest) and pkg/apis/core/v1/defaults.go (SetDefaults_Pod, the requests-from-limits part, and
SetDefaults_ResourceList, the rounding up to milli precision).

The in-place resize feature gate (InPlacePodVerticalScaling) is alpha and off in v1.27, so the path
that reads requests from `status.containerStatuses[].allocatedResources` is not implemented: requests
always come from the spec. Sidecar (restartable init) containers do not exist in v1.27 either.
"""

from __future__ import annotations

from decimal import ROUND_UP, Decimal, localcontext
from typing import Callable, Optional

from kubernetes.client import V1Container, V1Pod

from . import api

ResourceList = dict[str, Decimal]
ContainerFn = Callable[[ResourceList, str], None]

# --8<-- [start:container_types]
CONTAINERS = "containers"  # the kind passed to container_fn for app containers
INIT_CONTAINERS = "initContainers"  # ... and for init containers
# --8<-- [end:container_types]


def _parsed(raw: Optional[dict]) -> ResourceList:
    return {name: api.parse_quantity(text) for name, text in (raw or {}).items()}


def _requests(container: V1Container) -> ResourceList:
    return _parsed(container.resources.requests if container.resources else None)


def _limits(container: V1Container) -> ResourceList:
    return _parsed(container.resources.limits if container.resources else None)


def _add(total: ResourceList, more: ResourceList) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, Decimal(0)) + amount


def _raise_to(total: ResourceList, floor: ResourceList) -> None:
    # A key is set when missing or strictly smaller: an init container's explicit "0" creates a 0 entry.
    for name, amount in floor.items():
        if name not in total or amount > total[name]:
            total[name] = amount


# --8<-- [start:set_defaults_pod]
def set_defaults_pod(pod: V1Pod) -> V1Pod:
    """A defaulted copy of the pod: missing requests copied from limits, then every amount rounded up to 1m.

    Upstream: pkg/apis/core/v1/zz_generated.defaults.go SetObjectDefaults_Pod (its resource parts:
    SetDefaults_Pod, then SetDefaults_ResourceList on each container's limits and requests and on the overhead)
    """
    pod = api.deep_copy(pod)
    containers = (pod.spec.containers or []) + (pod.spec.init_containers or [])
    for container in containers:
        resources = container.resources
        if resources is None or resources.limits is None:
            continue
        if resources.requests is None:
            resources.requests = {}
        for name, text in resources.limits.items():
            resources.requests.setdefault(name, text)  # an explicit request, even "0", is kept
    for container in containers + (pod.spec.ephemeral_containers or []):
        if container.resources is not None:
            set_defaults_resource_list(container.resources.limits)
            set_defaults_resource_list(container.resources.requests)
    set_defaults_resource_list(pod.spec.overhead)
    return pod
# --8<-- [end:set_defaults_pod]


# --8<-- [start:set_defaults_resource_list]
MILLI = Decimal("0.001")


def set_defaults_resource_list(resources: Optional[dict]) -> None:
    """Round every amount up (away from zero) to a whole milli-unit, in place: 1n of memory is stored as 1m.

    Upstream: pkg/apis/core/v1/defaults.go SetDefaults_ResourceList (Quantity.RoundUp(-3))
    """
    for name, text in (resources or {}).items():
        amount = api.parse_quantity(text)
        with localcontext() as context:
            context.prec = max(context.prec, len(amount.as_tuple().digits) + 40)  # exact, whatever the size
            rounded = amount.quantize(MILLI, rounding=ROUND_UP)
        if rounded != amount:  # an amount already in whole milli-units keeps the text it was written with
            resources[name] = canonical_quantity(rounded, text)
# --8<-- [end:set_defaults_resource_list]


_DECIMAL_SUFFIXES = {-3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


def canonical_quantity(amount: Decimal, written: object) -> str:
    """The string Go prints for a rounded quantity: its written format where the value allows it, else decimal SI.

    Upstream: k8s.io/apimachinery/pkg/api/resource/quantity.go Quantity.CanonicalizeBytes
    """
    text = str(written)
    if text.endswith("i") and amount == amount.to_integral_value() and abs(amount) >= 1024:
        power = 0
        while power < len(_BINARY_SUFFIXES) - 1 and amount % 1024 ** (power + 1) == 0:
            power += 1
        return f"{int(amount) // 1024 ** power}{_BINARY_SUFFIXES[power]}"
    sign, digits, exponent = amount.normalize().as_tuple()
    mantissa = int("".join(map(str, digits))) * (-1 if sign else 1)
    if exponent % 3:  # the exponent is lowered to a multiple of three (Go's AsCanonicalBytes)
        mantissa *= 10 ** (exponent % 3)
        exponent -= exponent % 3
    if "e" in text.lower():  # a value written with an exponent keeps that format
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    while exponent > 18:
        mantissa, exponent = mantissa * 1000, exponent - 3
    return f"{mantissa}{_DECIMAL_SUFFIXES[exponent]}"
# --8<-- [end:set_defaults_pod]


# --8<-- [start:sum_then_max]
def _sum_then_max(pod: V1Pod, read: Callable[[V1Container], ResourceList], container_fn: Optional[ContainerFn]) -> ResourceList:
    """App containers' amounts summed, then each resource raised to any larger init container's amount."""
    total: ResourceList = {}
    for kind, containers, merge in ((CONTAINERS, pod.spec.containers, _add), (INIT_CONTAINERS, pod.spec.init_containers, _raise_to)):
        for container in containers or []:
            amounts = read(container)
            if container_fn is not None:
                container_fn(amounts, kind)
            merge(total, amounts)
    return total
# --8<-- [end:sum_then_max]


# --8<-- [start:pod_requests]
def pod_requests(pod: V1Pod, *, exclude_overhead: bool = False, container_fn: Optional[ContainerFn] = None) -> ResourceList:
    """The pod's requests: app containers summed, raised to any larger init request, plus overhead.

    Upstream: pkg/api/v1/resource/helpers.go PodRequests
    """
    total = _sum_then_max(pod, _requests, container_fn)
    if not exclude_overhead:
        _add(total, _parsed(pod.spec.overhead))  # every overhead key, even one no container requests
    return total
# --8<-- [end:pod_requests]


# --8<-- [start:pod_limits]
def pod_limits(pod: V1Pod, *, exclude_overhead: bool = False, container_fn: Optional[ContainerFn] = None) -> ResourceList:
    """The pod's limits: app containers summed, raised to any larger init limit, plus overhead on non-zero keys.

    Upstream: pkg/api/v1/resource/helpers.go PodLimits
    """
    total = _sum_then_max(pod, _limits, container_fn)
    for name, amount in ({} if exclude_overhead else _parsed(pod.spec.overhead)).items():
        if total.get(name, 0) != 0:  # an unlimited resource stays unlimited
            total[name] += amount
    return total
# --8<-- [end:pod_limits]


# --8<-- [start:get_resource_request_quantity]
def get_resource_request_quantity(pod: V1Pod, resource: str) -> Decimal:
    """The pod's request for one resource: containers summed, a larger init request replaces it, overhead if non-zero.

    Upstream: pkg/api/v1/resource/helpers.go GetResourceRequestQuantity
    """
    total = Decimal(0)
    for container in pod.spec.containers or []:
        requests = (container.resources.requests if container.resources else None) or {}
        if resource in requests:
            total += api.parse_quantity(requests[resource])
    for container in pod.spec.init_containers or []:
        requests = (container.resources.requests if container.resources else None) or {}
        if resource in requests and total < api.parse_quantity(requests[resource]):
            total = api.parse_quantity(requests[resource])
    overhead = pod.spec.overhead or {}
    if resource in overhead and total != 0:  # overhead only counts for a resource the pod requests
        total += api.parse_quantity(overhead[resource])
    return total
# --8<-- [end:get_resource_request_quantity]


# --8<-- [start:get_resource_request]
def get_resource_request(pod: V1Pod, resource: str) -> int:
    """One resource's pod request (millicores for cpu, whole units otherwise); overhead only if non-zero.

    Upstream: pkg/api/v1/resource/helpers.go GetResourceRequest
    """
    if resource == "pods":
        return 1
    total = get_resource_request_quantity(pod, resource)
    return api.milli_value(total) if resource == "cpu" else api.value(total)
# --8<-- [end:get_resource_request]
