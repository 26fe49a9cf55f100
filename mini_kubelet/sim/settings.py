"""A scenario's kubelet settings: the eviction thresholds and timings, and the size of the "pods" cgroup.

Upstream: pkg/kubelet/eviction/helpers.go ParseThresholdConfig reads the same settings; the KubeletConfiguration
defaults are the release's (evictionHard for Linux: imagefs.inodesFree<5% too from 1.30; evictionPressureTransitionPeriod
5m, enforceNodeAllocatable [pods]), and from 1.33 mergeDefaultEvictionSettings: true keeps the defaults evictionHard leaves out.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .. import api
from ..eviction import thresholds as th
from .. import features
from ..eviction.api import merge_default_eviction_hard
from . import fields
from .reader import Reader
from .series import format_duration

if TYPE_CHECKING:
    from ..eviction import manager as mgr

RESERVABLE = ("cpu", "memory", "ephemeral-storage", "pid")  # cmd/kubelet/app/server.go parseResourceList
KUBELET_KEYS = tuple(f.name for f in fields.KUBELET)  # the scenario's node.kubelet (mini_kubelet/sim/fields.py)
MERGE_KEY = fields.MERGE.name  # KubeletConfiguration from 1.33 (#127577): default false
DEFAULTS = {f.name: f.default for f in fields.KUBELET + (fields.MERGE,)}


# --8<-- [start:kubelet_settings]
def kubelet_settings(r: Reader, raw: Any, capacity: dict[str, int]) -> tuple[mgr.Config, dict, int]:
    """The eviction manager's Config, the settings as written (defaults filled in) and the "pods" cgroup's memory limit.

    Upstream: pkg/kubelet/eviction/helpers.go ParseThresholdConfig (the thresholds, with the release's defaults
    for what is omitted: cmd/kubelet/app/server.go loadConfigFile); the limit is
    pkg/kubelet/cm/node_container_manager_linux.go getNodeAllocatableAbsoluteImpl
    """
    from ..cm.node_allocatable import get_node_allocatable_absolute
    from ..eviction import manager as mgr

    thresholds, transition, kubelet = checked_kubelet_settings(r, raw, capacity)
    limit = capacity["memory"]
    if "pods" in kubelet["enforceNodeAllocatable"]:
        limit = api.value(get_node_allocatable_absolute({"memory": capacity["memory"]}, kubelet["systemReserved"],
                                                        kubelet["kubeReserved"])["memory"])
    config = mgr.Config(max_pod_grace_period_seconds=kubelet["evictionMaxPodGracePeriod"],
                        pressure_transition_period=timedelta(seconds=transition), thresholds=thresholds)
    return config, kubelet, limit
# --8<-- [end:kubelet_settings]


def checked_kubelet_settings(r: Reader, raw: Any, capacity: dict[str, int]) -> tuple[list, int, dict]:
    """What kubelet_settings reads, every setting checked: the thresholds, the transition period in seconds, the
    settings as written (defaults filled in). Needs no model, so a scenario is checked before the client loads."""
    merge_known = features.DEFAULT_FEATURE_GATE.changed("MergeDefaultEvictionSettings")  # a config field from 1.33
    raw = r.mapping(raw if raw is not None else {}, "node.kubelet", KUBELET_KEYS + (MERGE_KEY,) * merge_known)
    p = "node.kubelet"
    merge = raw.get(MERGE_KEY, DEFAULTS[MERGE_KEY])
    if not isinstance(merge, bool):
        r.fail(f"{p}.{MERGE_KEY}", f"expected true or false, got {merge!r}")
    hard = merge_default_eviction_hard(r.flag_map(raw["evictionHard"], f"{p}.evictionHard", "<")
                                       if "evictionHard" in raw else None, merge)
    soft = r.flag_map(raw.get("evictionSoft"), f"{p}.evictionSoft", "<")
    grace = r.flag_map(raw.get("evictionSoftGracePeriod"), f"{p}.evictionSoftGracePeriod", "=")
    reclaim = r.flag_map(raw.get("evictionMinimumReclaim"), f"{p}.evictionMinimumReclaim", "=")
    enforce = raw.get("enforceNodeAllocatable", list(DEFAULTS["enforceNodeAllocatable"]))
    if isinstance(enforce, str):
        enforce = [item.strip() for item in enforce.split(",") if item.strip()]
    enforce = [str(item) for item in r.sequence(enforce, f"{p}.enforceNodeAllocatable")]
    # Parse each setting alone first, so that an error names the field it comes from.
    for field_name, args in (("evictionHard", ([], hard, {}, {}, {})), ("evictionSoftGracePeriod", ([], {}, {}, grace, {})),
                             ("evictionSoft", ([], {}, soft, grace, {})), ("evictionMinimumReclaim", ([], {}, {}, {}, reclaim)),
                             ("evictionHard", (enforce, hard, soft, grace, reclaim))):
        try:
            thresholds = th.parse_threshold_config(*args)
        except ValueError as err:
            r.fail(f"{p}.{field_name}", str(err))
    transition = r.duration(raw.get("evictionPressureTransitionPeriod", DEFAULTS["evictionPressureTransitionPeriod"]),
                            f"{p}.evictionPressureTransitionPeriod")
    max_grace = raw.get("evictionMaxPodGracePeriod", DEFAULTS["evictionMaxPodGracePeriod"])
    if isinstance(max_grace, bool) or not isinstance(max_grace, int) or not -2**31 <= max_grace < 2**31:
        r.fail(f"{p}.evictionMaxPodGracePeriod", f"expected a whole number of seconds (int32), got {max_grace!r}")
    reserved = {}
    for key in ("systemReserved", "kubeReserved"):
        reserved[key] = r.flag_map(raw.get(key), f"{p}.{key}", "=")
        for res, text in reserved[key].items():
            if res not in RESERVABLE:
                r.fail(f"{p}.{key}.{res}", f"the kubelet cannot reserve this resource and would not start "
                                           f"(it reserves {', '.join(RESERVABLE)})")
            r.amount(text, f"{p}.{key}.{res}")
    memory_reserved = sum(r.amount(reserved[key].get("memory", 0), f"{p}.{key}.memory") for key in reserved)
    if memory_reserved > capacity["memory"]:
        r.fail(f"{p}.systemReserved", f"systemReserved + kubeReserved memory ({memory_reserved}) is more than the "
                                      f"node's capacity ({capacity['memory']}); the kubelet would not start")
    kubelet = {"evictionHard": hard, "evictionSoft": soft, "evictionSoftGracePeriod": grace,
               "evictionMinimumReclaim": reclaim, "evictionPressureTransitionPeriod": format_duration(transition),
               "evictionMaxPodGracePeriod": max_grace, "enforceNodeAllocatable": enforce, **reserved,
               **({MERGE_KEY: merge} if MERGE_KEY in raw else {}), "defaulted": [key for key in KUBELET_KEYS if key not in raw]}
    return thresholds, transition, kubelet
