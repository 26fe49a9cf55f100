"""The kubelet's reservation flags (--system-reserved, --kube-reserved): read as the kubelet reads them, and
refused where the kubelet refuses to start.

Upstream: cmd/kubelet/app/server.go parseResourceList, and pkg/kubelet/cm/node_container_manager_linux.go
containerManagerImpl.validateNodeAllocatable
"""

from __future__ import annotations

from decimal import Decimal
from typing import Optional

from mini_kubelet import api
from mini_kubelet.eviction.api import default_eviction_hard


def _amount(resource_name: str, quantity: Decimal | str) -> str:
    """An amount as the kubelet reads it: cpu in millicores ("250m"), anything else as a whole number."""
    return f"{api.milli_value(quantity)}m" if resource_name == "cpu" else str(api.value(quantity))


# --8<-- [start:parse_reserved]
RESERVABLE = ("cpu", "memory", "ephemeral-storage", "pid")  # what the kubelet lets a reservation name


def parse_reserved(text: Optional[str], flag: str) -> dict[str, str]:
    """A kubelet reservation flag ("cpu=100m,memory=1Gi") as a resource list; ValueError naming the flag.

    Upstream: cmd/kubelet/app/server.go parseResourceList (cpu, memory, ephemeral-storage and pid only)
    """
    result: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, amount = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{flag}: expected NAME=QUANTITY, got {item!r}")
        if name.strip() not in RESERVABLE:
            raise ValueError(f"{flag}: {name.strip()}: the kubelet cannot reserve this resource and would not start "
                             f"(it reserves {', '.join(RESERVABLE)})")
        try:
            if api.parse_quantity(amount.strip()) < 0:
                raise ValueError
        except (api.ManifestError, ValueError):
            raise ValueError(f"{flag}: {name.strip()}: invalid quantity {amount.strip()!r}") from None
        result[name.strip()] = amount.strip()
    return result


def check_reservations(capacity: dict[str, Decimal], reserved: dict[str, dict[str, str]]) -> None:
    """ValueError when the reservations (with the default hard eviction thresholds) exceed the capacity.

    Upstream: pkg/kubelet/cm/node_container_manager_linux.go containerManagerImpl.validateNodeAllocatable
    (the kubelet's container manager refuses to start)
    """
    from mini_kubelet.cm.node_allocatable import validate_node_allocatable  # parse_reserved needs none of cm

    system, kube = reserved["system-reserved"], reserved["kube-reserved"]
    for name in validate_node_allocatable(capacity, system, kube, default_eviction_hard()):
        flags = " + ".join(f"--{flag}" for flag in ("system-reserved", "kube-reserved") if name in reserved[flag])
        total = sum((api.parse_quantity(r[name]) for r in (system, kube) if name in r), Decimal(0))
        eviction = " (plus the default hard eviction threshold)" if name in ("memory", "ephemeral-storage") else ""
        raise ValueError(f"{flags or '--system-reserved'}: {name}: reserving {_amount(name, total)}{eviction} is more "
                         f"than the node's capacity {_amount(name, capacity[name])}; the kubelet would not start")
# --8<-- [end:parse_reserved]
