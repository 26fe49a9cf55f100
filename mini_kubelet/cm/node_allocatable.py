"""Node allocatable: what the node keeps back from pods, what it reports, and the /kubepods cgroup limits.

Upstream: pkg/kubelet/cm/node_container_manager_linux.go, pkg/kubelet/cm/helpers.go,
pkg/kubelet/nodestatus/setters.go MachineInfo, pkg/kubelet/eviction/helpers.go (thresholds).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Mapping, Optional, Union

from mini_kubelet import api
from mini_kubelet.cm.helpers import ResourceConfig, huge_page_limits, milli_cpu_to_shares
from mini_kubelet.eviction.api import float32
from mini_kubelet.eviction.thresholds import parse_float32

Amount = Union[Decimal, str, int]
ResourceMap = Optional[Mapping[str, Amount]]

# --8<-- [start:eviction_signals]
HUGEPAGES_PREFIX = "hugepages-"
# Every hard eviction signal is a "less than" threshold; only two of them reserve a resource.
EVICTION_SIGNALS = ("memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
                    "imagefs.inodesFree", "allocatableMemory.available", "pid.available")
RESERVING_SIGNALS = {"memory.available": "memory", "nodefs.available": "ephemeral-storage"}
# --8<-- [end:eviction_signals]


def _amounts(resources: ResourceMap) -> dict[str, Decimal]:
    return {name: _decimal(amount) for name, amount in (resources or {}).items()}


def _decimal(amount: Amount) -> Decimal:
    return amount if isinstance(amount, Decimal) else api.parse_quantity(amount)


# --8<-- [start:get_node_allocatable_absolute]
def get_node_allocatable_absolute(capacity: ResourceMap, system_reserved: ResourceMap = None,
                                  kube_reserved: ResourceMap = None) -> dict[str, Decimal]:
    """For each resource in capacity: capacity - system-reserved - kube-reserved, never below 0.

    Eviction thresholds are not subtracted here: this is what /kubepods is limited to.
    Upstream: pkg/kubelet/cm/node_container_manager_linux.go containerManagerImpl.getNodeAllocatableAbsoluteImpl
    """
    system, kube = _amounts(system_reserved), _amounts(kube_reserved)
    result = {}
    for name, amount in _amounts(capacity).items():
        left = amount - system.get(name, Decimal(0)) - kube.get(name, Decimal(0))
        result[name] = max(left, Decimal(0))
    return result
# --8<-- [end:get_node_allocatable_absolute]


# --8<-- [start:parse_percentage]
def parse_percentage(text: str) -> float:
    """A percentage threshold ("5%") as the float32 fraction Go keeps (5% is really 0.0500000007...).

    Upstream: pkg/kubelet/eviction/helpers.go parsePercentage
    """
    number = text.rstrip("%")
    if not _GO_DECIMAL_FLOAT.fullmatch(number):
        raise ValueError(f"invalid percentage {text!r}")
    try:
        single = parse_float32(number)  # strconv.ParseFloat(number, 32)
    except ValueError:  # the one error left for a decimal number: beyond the float32 range
        raise ValueError(f"percentage {number!r} is out of range") from None
    # float32(...) / 100, a float32 division: rounding the double quotient of two
    # float32 values to float32 gives the correctly rounded float32 quotient.
    return float32(single / 100)


_GO_DECIMAL_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
# --8<-- [end:parse_percentage]


# --8<-- [start:hard_eviction_reservation]
def hard_eviction_reservation(hard_eviction_thresholds: Mapping[str, str] | None,
                              capacity: ResourceMap) -> dict[str, Decimal]:
    """What the hard thresholds on memory.available and nodefs.available keep back from allocatable.

    A percentage is float32(p)/100 of the capacity, truncated (5% of 10Gi is 536870920, not 536870912);
    "0%" and "100%" are ignored like upstream; other signals reserve nothing.
    Upstream: pkg/kubelet/cm/helpers.go hardEvictionReservation (thresholds: eviction/helpers.go parseThresholdStatement)
    """
    caps = _amounts(capacity)
    reserved: dict[str, Decimal] = {}
    for signal, text in (hard_eviction_thresholds or {}).items():
        if signal not in EVICTION_SIGNALS:
            raise ValueError(f"unsupported eviction signal {signal}")
        text = str(text)
        if text.endswith("%"):
            if text in ("0%", "100%"):
                continue
            fraction = parse_percentage(text)
            if not 0 <= fraction <= 1:
                raise ValueError(f"eviction percentage threshold {signal} must be between 0% and 100%: {text}")
            amount = None
        else:
            amount = api.parse_quantity(text, source="eviction threshold", path=signal)
            if amount <= 0:
                raise ValueError(f"eviction threshold {signal} must be positive: {text}")
        if signal not in RESERVING_SIGNALS:
            continue
        resource = RESERVING_SIGNALS[signal]
        if amount is None:  # int64(float64(capacity.Value()) * float64(percentage))
            amount = Decimal(int(float(api.value(caps.get(resource, Decimal(0)))) * fraction))
        reserved[resource] = amount
    return reserved
# --8<-- [end:hard_eviction_reservation]


# --8<-- [start:get_node_allocatable_reservation]
def get_node_allocatable_reservation(capacity: ResourceMap, system_reserved: ResourceMap = None,
                                     kube_reserved: ResourceMap = None,
                                     hard_eviction_thresholds: Mapping[str, str] | None = None) -> dict[str, Decimal]:
    """For each resource in capacity: system-reserved + kube-reserved + hard eviction reservation, zeros dropped.

    Upstream: pkg/kubelet/cm/node_container_manager_linux.go containerManagerImpl.GetNodeAllocatableReservation
    """
    system, kube = _amounts(system_reserved), _amounts(kube_reserved)
    eviction = hard_eviction_reservation(hard_eviction_thresholds, capacity)
    result = {}
    for name in _amounts(capacity):
        total = system.get(name, Decimal(0)) + kube.get(name, Decimal(0)) + eviction.get(name, Decimal(0))
        if total != 0:
            result[name] = total
    return result
# --8<-- [end:get_node_allocatable_reservation]


# --8<-- [start:validate_node_allocatable]
def validate_node_allocatable(capacity: ResourceMap, system_reserved: ResourceMap = None,
                              kube_reserved: ResourceMap = None,
                              hard_eviction_thresholds: Mapping[str, str] | None = None) -> list[str]:
    """The resources whose reservation exceeds capacity (an empty list means the configuration is valid).

    Upstream: pkg/kubelet/cm/node_container_manager_linux.go containerManagerImpl.validateNodeAllocatable
    """
    caps = _amounts(capacity)
    reservation = get_node_allocatable_reservation(capacity, system_reserved, kube_reserved, hard_eviction_thresholds)
    return sorted(name for name, amount in reservation.items() if caps.get(name, Decimal(0)) - amount < 0)
# --8<-- [end:validate_node_allocatable]


# --8<-- [start:node_allocatable]
def node_allocatable(capacity: ResourceMap, system_reserved: ResourceMap = None, kube_reserved: ResourceMap = None,
                     hard_eviction_thresholds: Mapping[str, str] | None = None) -> dict[str, Decimal]:
    """What the Node status reports as allocatable: capacity - reservation, then hugepages out of memory.

    Each amount is clamped at 0; every hugepages-* capacity is also taken out of allocatable memory.
    Upstream: pkg/kubelet/nodestatus/setters.go MachineInfo
    """
    caps = _amounts(capacity)
    reservation = get_node_allocatable_reservation(capacity, system_reserved, kube_reserved, hard_eviction_thresholds)
    result = {name: max(amount - reservation.get(name, Decimal(0)), Decimal(0)) for name, amount in caps.items()}
    for name, amount in caps.items():
        if name.startswith(HUGEPAGES_PREFIX):
            result["memory"] = max(result.get("memory", Decimal(0)) - amount, Decimal(0))
    return result
# --8<-- [end:node_allocatable]


# --8<-- [start:get_cgroup_config]
def get_cgroup_config(resources: Mapping[str, Amount]) -> ResourceConfig:
    """The ResourceConfig for a cgroup limited to a resource list: memory, cpu shares (no quota), pids, hugepages.

    Upstream: pkg/kubelet/cm/node_container_manager_linux.go getCgroupConfig
    """
    amounts = _amounts(resources)
    config = ResourceConfig()
    if "memory" in amounts:
        config.memory = api.value(amounts["memory"])
    if "cpu" in amounts:
        config.cpu_shares = milli_cpu_to_shares(api.milli_value(amounts["cpu"]))
    if "pid" in amounts:
        config.pids_limit = api.value(amounts["pid"])
    config.huge_page_limit = huge_page_limits(amounts)
    return config
# --8<-- [end:get_cgroup_config]


# --8<-- [start:node_allocatable_cgroup_config]
def node_allocatable_cgroup_config(capacity: ResourceMap, system_reserved: ResourceMap = None,
                                   kube_reserved: ResourceMap = None, *, enforce_pods: bool = True) -> ResourceConfig:
    """The /kubepods cgroup's config: capacity - system - kube reserved (not minus eviction thresholds).

    With enforceNodeAllocatable "pods" (the default) the limits are the absolute allocatable;
    without it, the whole capacity.
    Upstream: pkg/kubelet/cm/node_container_manager_linux.go containerManagerImpl.enforceNodeAllocatableCgroups
    """
    if not enforce_pods:
        return get_cgroup_config(capacity or {})
    return get_cgroup_config(get_node_allocatable_absolute(capacity, system_reserved, kube_reserved))
# --8<-- [end:node_allocatable_cgroup_config]
