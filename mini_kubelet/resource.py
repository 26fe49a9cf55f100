"""A Pod's effective requests and limits: app containers add up, init containers set a floor.

Upstream: pkg/api/v1/resource/helpers.go (PodRequests, PodLimits, GetResourceRequestQuantity,
GetResourceRequest) and pkg/apis/core/v1/defaults.go (SetDefaults_Pod, the requests-from-limits part, and
SetDefaults_ResourceList, the rounding up to milli precision). From 1.32 PodRequests and PodLimits live in
k8s.io/component-helpers resource/helpers.go; what they add is read here at v0.36.0 and holds only behind
its gate: sidecars (SidecarContainers, on from 1.29) and pod-level `spec.resources` (PodLevelResources,
on from 1.34). With both gates off, as in v1.27, every answer is v1.27's.

The in-place resize feature gate (InPlacePodVerticalScaling) is alpha and off in v1.27, so the path
that reads requests from `status.containerStatuses[].allocatedResources` (UseStatusResources) is not
implemented: requests always come from the spec, in every release. Nor are the v0.36 options Reuse,
NonMissingContainerRequests, SkipContainerLevelResources and the DRA claim status.
GetResourceRequestQuantity keeps its v1.27 sum-then-max without sidecars (unchanged to v1.32.10).
"""

from __future__ import annotations

from decimal import ROUND_UP, Decimal, localcontext
from typing import Callable, Optional

from kubernetes.client import V1Container, V1Pod

from . import api, features
from .container import is_restartable_init_container

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
    """App containers and sidecars summed, then raised to each init container's need (itself plus earlier sidecars).

    Without sidecars (v1.27, or SidecarContainers off) an init container's need is its own amounts.
    """
    total: ResourceList = {}
    for container in pod.spec.containers or []:
        amounts = read(container)
        if container_fn is not None:
            container_fn(amounts, CONTAINERS)
        _add(total, amounts)
    sidecars: ResourceList = {}  # the sidecars started so far: they keep running beside what follows
    init_peak: ResourceList = {}
    for container in pod.spec.init_containers or []:
        amounts = read(container)
        if is_restartable_init_container(container):
            _add(total, amounts)
            _add(sidecars, amounts)
            need = dict(sidecars)
        else:
            need = dict(amounts)
            _add(need, sidecars)
        if container_fn is not None:
            container_fn(need, INIT_CONTAINERS)
        _raise_to(init_peak, need)
    _raise_to(total, init_peak)
    return total
# --8<-- [end:sum_then_max]


# --8<-- [start:pod_level]
def is_supported_pod_level_resource(name: str) -> bool:
    """cpu, memory and hugepages-*: the resources a Pod may set in spec.resources (others are ignored).

    Upstream: k8s.io/component-helpers resource/helpers.go IsSupportedPodLevelResource (v0.36.0)
    """
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _pod_level(pod: V1Pod, field: str) -> ResourceList:
    resources = getattr(pod.spec, "resources", None)
    return _parsed(getattr(resources, field, None) if resources is not None else None)


def is_pod_level_requests_set(pod: V1Pod) -> bool:
    """spec.resources.requests names at least one supported resource.

    Upstream: k8s.io/component-helpers resource/helpers.go IsPodLevelRequestsSet (v0.36.0)
    """
    return any(map(is_supported_pod_level_resource, _pod_level(pod, "requests")))


def is_pod_level_limits_set(pod: V1Pod) -> bool:
    """spec.resources.limits names at least one supported resource.

    Upstream: k8s.io/component-helpers resource/helpers.go IsPodLevelLimitsSet (v0.36.0)
    """
    return any(map(is_supported_pod_level_resource, _pod_level(pod, "limits")))


def is_pod_level_resources_set(pod: V1Pod) -> bool:
    """spec.resources sets a supported resource as a request or as a limit.

    Upstream: k8s.io/component-helpers resource/helpers.go IsPodLevelResourcesSet (v0.36.0)
    """
    return is_pod_level_requests_set(pod) or is_pod_level_limits_set(pod)


def _use_pod_level(pod: V1Pod, skip: Optional[bool], is_set: Callable[[V1Pod], bool]) -> bool:
    # The callers (the kubelet, the scheduler) pass SkipPodLevelResources = PodLevelResources is off.
    if skip is None:
        skip = not features.DEFAULT_FEATURE_GATE.enabled("PodLevelResources")
    return not skip and is_set(pod)


def _overlay_pod_level(total: ResourceList, pod_level: ResourceList) -> None:
    # A supported resource set at pod level replaces the containers' value; any other is left alone.
    total.update({name: amount for name, amount in pod_level.items() if is_supported_pod_level_resource(name)})
# --8<-- [end:pod_level]


# --8<-- [start:pod_requests]
def pod_requests(pod: V1Pod, *, exclude_overhead: bool = False, container_fn: Optional[ContainerFn] = None,
                 skip_pod_level_resources: Optional[bool] = None) -> ResourceList:
    """The pod's requests: containers (and sidecars) summed, raised to any larger init need, pod-level wins, plus overhead.

    Upstream: pkg/api/v1/resource/helpers.go PodRequests (v1.27); k8s.io/component-helpers resource/helpers.go
    PodRequests and AggregateContainerRequests (v0.36.0). skip_pod_level_resources None: skip unless PodLevelResources.
    """
    total = _sum_then_max(pod, _requests, container_fn)
    if _use_pod_level(pod, skip_pod_level_resources, is_pod_level_requests_set):
        _overlay_pod_level(total, _pod_level(pod, "requests"))
    if not exclude_overhead:
        _add(total, _parsed(pod.spec.overhead))  # every overhead key, even one no container requests
    return total
# --8<-- [end:pod_requests]


# --8<-- [start:pod_limits]
def pod_limits(pod: V1Pod, *, exclude_overhead: bool = False, container_fn: Optional[ContainerFn] = None,
               skip_pod_level_resources: Optional[bool] = None) -> ResourceList:
    """The pod's limits: containers (and sidecars) summed, raised to any larger init need, pod-level wins, overhead on non-zero keys.

    Upstream: pkg/api/v1/resource/helpers.go PodLimits (v1.27); k8s.io/component-helpers resource/helpers.go
    PodLimits and AggregateContainerLimits (v0.36.0). skip_pod_level_resources None: skip unless PodLevelResources.
    """
    total = _sum_then_max(pod, _limits, container_fn)
    if _use_pod_level(pod, skip_pod_level_resources, is_pod_level_resources_set):
        _overlay_pod_level(total, _pod_level(pod, "limits"))
    for name, amount in ({} if exclude_overhead else _parsed(pod.spec.overhead)).items():
        if total.get(name, 0) != 0:  # an unlimited resource stays unlimited
            total[name] += amount
    return total
# --8<-- [end:pod_limits]


# --8<-- [start:get_resource_request_quantity]
def get_resource_request_quantity(pod: V1Pod, resource: str) -> Decimal:
    """The pod's request for one resource: containers summed, a larger init request replaces it, overhead if non-zero.

    Upstream: pkg/api/v1/resource/helpers.go GetResourceRequestQuantity (from 1.34, #132277, PodRequests without
    overhead: sidecars count, and a Pod with pod-level resources (gate on) counts only those)
    """
    if features.DEFAULT_FEATURE_GATE.changed("ResourceRequestFromPodRequests"):
        only_pod_level = features.DEFAULT_FEATURE_GATE.enabled("PodLevelResources") and is_pod_level_resources_set(pod)
        requests = {} if only_pod_level else _sum_then_max(pod, _requests, None)
        if is_pod_level_requests_set(pod):  # SkipPodLevelResources is not passed: even with the gate off
            _overlay_pod_level(requests, _pod_level(pod, "requests"))
        total = requests.get(resource, Decimal(0))
        overhead = pod.spec.overhead or {}
        return total + api.parse_quantity(overhead[resource]) if resource in overhead and total != 0 else total
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
