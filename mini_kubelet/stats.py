"""The kubelet's Summary API: node and pod usage as `/stats/summary` serves it, in its real JSON shape.

Upstream: k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go (Summary, NodeStats, PodStats, ...).

Every number in the JSON is optional (a Go pointer): a missing field is None here, and the eviction
manager skips a signal whose inputs are missing. Unknown fields are ignored, as Go's decoder does.
Byte and inode counts are uint64 (a negative number is an error); `rlimit.maxpid`/`curproc` are int64.
Times are RFC 3339 strings; a missing or null time is None (Go's zero time).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Optional

from .api import ManifestError, read_text

SYSTEM_CONTAINER_KUBELET = "kubelet"
SYSTEM_CONTAINER_RUNTIME = "runtime"
SYSTEM_CONTAINER_MISC = "misc"
SYSTEM_CONTAINER_PODS = "pods"  # the pod cgroup root: the allocatableMemory.available signal


# --8<-- [start:types]
@dataclass
class FsStats:
    time: Optional[datetime] = None
    available_bytes: Optional[int] = None
    capacity_bytes: Optional[int] = None
    used_bytes: Optional[int] = None
    inodes_free: Optional[int] = None
    inodes: Optional[int] = None
    inodes_used: Optional[int] = None


@dataclass
class MemoryStats:
    time: Optional[datetime] = None
    available_bytes: Optional[int] = None
    usage_bytes: Optional[int] = None
    working_set_bytes: Optional[int] = None
    rss_bytes: Optional[int] = None
    page_faults: Optional[int] = None
    major_page_faults: Optional[int] = None


@dataclass
class CPUStats:
    time: Optional[datetime] = None
    usage_nano_cores: Optional[int] = None
    usage_core_nano_seconds: Optional[int] = None


@dataclass
class RlimitStats:
    time: Optional[datetime] = None
    maxpid: Optional[int] = None  # JSON "maxpid"
    curproc: Optional[int] = None  # JSON "curproc" (Go: NumOfRunningProcesses)


@dataclass
class RuntimeStats:
    image_fs: Optional[FsStats] = None
    container_fs: Optional[FsStats] = None  # "containerFs", from 1.29: the writable layers' filesystem


@dataclass
class ContainerStats:
    name: str = ""
    start_time: Optional[datetime] = None
    cpu: Optional[CPUStats] = None
    memory: Optional[MemoryStats] = None
    rootfs: Optional[FsStats] = None  # the writable layer
    logs: Optional[FsStats] = None


@dataclass
class PodReference:
    name: str = ""
    namespace: str = ""
    uid: str = ""


@dataclass
class PVCReference:
    name: str = ""
    namespace: str = ""


@dataclass
class VolumeStats(FsStats):  # the FsStats fields are inline in the JSON
    name: str = ""
    pvc_ref: Optional[PVCReference] = None


@dataclass
class ProcessStats:
    process_count: Optional[int] = None  # JSON "process_count" (snake_case upstream)


@dataclass
class PodStats:
    pod_ref: PodReference = field(default_factory=PodReference)
    start_time: Optional[datetime] = None
    containers: list[ContainerStats] = field(default_factory=list)
    cpu: Optional[CPUStats] = None
    memory: Optional[MemoryStats] = None
    volume_stats: list[VolumeStats] = field(default_factory=list)  # JSON "volume"
    ephemeral_storage: Optional[FsStats] = None  # JSON "ephemeral-storage"
    process_stats: Optional[ProcessStats] = None  # JSON "process_stats"


@dataclass
class NodeStats:
    node_name: str = ""
    system_containers: list[ContainerStats] = field(default_factory=list)
    start_time: Optional[datetime] = None
    cpu: Optional[CPUStats] = None
    memory: Optional[MemoryStats] = None
    fs: Optional[FsStats] = None
    runtime: Optional[RuntimeStats] = None
    rlimit: Optional[RlimitStats] = None


@dataclass
class Summary:
    node: NodeStats = field(default_factory=NodeStats)
    pods: list[PodStats] = field(default_factory=list)
# --8<-- [end:types]


_UINT, _INT, _STR, _TIME = "uint64", "int64", "string", "time"
_TIME_FIELD = ("time", "time", _TIME)
_FS = [_TIME_FIELD, ("availableBytes", "available_bytes", _UINT), ("capacityBytes", "capacity_bytes", _UINT),
       ("usedBytes", "used_bytes", _UINT), ("inodesFree", "inodes_free", _UINT), ("inodes", "inodes", _UINT),
       ("inodesUsed", "inodes_used", _UINT)]
_CPU = [_TIME_FIELD, ("usageNanoCores", "usage_nano_cores", _UINT), ("usageCoreNanoSeconds", "usage_core_nano_seconds", _UINT)]
_MEMORY = [_TIME_FIELD, ("availableBytes", "available_bytes", _UINT), ("usageBytes", "usage_bytes", _UINT),
           ("workingSetBytes", "working_set_bytes", _UINT), ("rssBytes", "rss_bytes", _UINT),
           ("pageFaults", "page_faults", _UINT), ("majorPageFaults", "major_page_faults", _UINT)]
_CONTAINER = [("name", "name", _STR), ("startTime", "start_time", _TIME), ("cpu", "cpu", CPUStats),
              ("memory", "memory", MemoryStats), ("rootfs", "rootfs", FsStats), ("logs", "logs", FsStats)]
# JSON key, attribute, and the kind: a scalar type, a dataclass, or [dataclass] for a list.
_SCHEMA: dict[type, list[tuple[str, str, Any]]] = {
    FsStats: _FS,
    MemoryStats: _MEMORY,
    CPUStats: _CPU,
    RlimitStats: [_TIME_FIELD, ("maxpid", "maxpid", _INT), ("curproc", "curproc", _INT)],
    RuntimeStats: [("imageFs", "image_fs", FsStats), ("containerFs", "container_fs", FsStats)],
    ContainerStats: _CONTAINER,
    PodReference: [("name", "name", _STR), ("namespace", "namespace", _STR), ("uid", "uid", _STR)],
    PVCReference: [("name", "name", _STR), ("namespace", "namespace", _STR)],
    VolumeStats: _FS + [("name", "name", _STR), ("pvcRef", "pvc_ref", PVCReference)],
    ProcessStats: [("process_count", "process_count", _UINT)],
    PodStats: [("podRef", "pod_ref", PodReference), ("startTime", "start_time", _TIME),
               ("containers", "containers", [ContainerStats]), ("cpu", "cpu", CPUStats), ("memory", "memory", MemoryStats),
               ("volume", "volume_stats", [VolumeStats]), ("ephemeral-storage", "ephemeral_storage", FsStats),
               ("process_stats", "process_stats", ProcessStats)],
    NodeStats: [("nodeName", "node_name", _STR), ("systemContainers", "system_containers", [ContainerStats]),
                ("startTime", "start_time", _TIME), ("cpu", "cpu", CPUStats), ("memory", "memory", MemoryStats),
                ("fs", "fs", FsStats), ("runtime", "runtime", RuntimeStats), ("rlimit", "rlimit", RlimitStats)],
    Summary: [("node", "node", NodeStats), ("pods", "pods", [PodStats])],
}
_RFC3339 = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)", re.IGNORECASE)
_LIMITS = {_UINT: (0, 2**64 - 1), _INT: (-(2**63), 2**63 - 1)}


# --8<-- [start:summary_from_json]
def summary_from_json(doc: Any, source: str = "<summary>") -> Summary:
    """Read a decoded /stats/summary document (camelCase keys) into a Summary.

    Upstream: k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go Summary
    """
    return _decode(Summary, doc, source, "")
# --8<-- [end:summary_from_json]


# --8<-- [start:load_summary]
def load_summary(path: str | Path) -> Summary:
    """Read a Summary from a JSON file such as `kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary` prints.

    Upstream: pkg/kubelet/server/stats/handler.go handleSummary (the endpoint that serves this JSON)
    """
    source = "<stdin>" if str(path) == "-" else str(path)
    text = read_text(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ManifestError(source, f"line {err.lineno}, column {err.colno}", f"invalid JSON ({err.msg})") from None
    except (ValueError, RecursionError):  # an integer of thousands of digits, or nesting too deep
        raise ManifestError(source, "", "invalid JSON (a number or nesting past any real Summary)") from None
    return summary_from_json(doc, source)
# --8<-- [end:load_summary]


# --8<-- [start:summary_to_json]
def summary_to_json(summary: Summary) -> dict:
    """The Summary as /stats/summary writes it: camelCase keys, missing values left out, times in RFC 3339.

    Upstream: k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go (the json tags)
    """
    return _encode(summary)
# --8<-- [end:summary_to_json]


def _decode(cls: type, raw: Any, source: str, path: str) -> Any:
    if not isinstance(raw, dict):
        raise ManifestError(source, path, f"expected a mapping, got {_describe(raw)}")
    values = {}
    for key, attr, kind in _SCHEMA[cls]:
        if raw.get(key) is None:  # missing or null: Go leaves the zero value (nil pointer, "" or zero time)
            continue
        where = f"{path}.{key}" if path else key
        values[attr] = _decode_value(kind, raw[key], source, where)
    return cls(**values)


def _decode_value(kind: Any, raw: Any, source: str, path: str) -> Any:
    if isinstance(kind, list):
        if not isinstance(raw, list):
            raise ManifestError(source, path, f"expected a list, got {_describe(raw)}")
        return [_decode(kind[0], item, source, f"{path}[{i}]") for i, item in enumerate(raw)]
    if isinstance(kind, type):
        return _decode(kind, raw, source, path)
    if kind == _STR:
        if not isinstance(raw, str):
            raise ManifestError(source, path, f"expected a string, got {_describe(raw)}")
        return raw
    if kind == _TIME:
        return _parse_time(raw, source, path)
    low, high = _LIMITS[kind]
    if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw <= high:
        wanted = "a non-negative integer" if kind == _UINT else "an integer"
        raise ManifestError(source, path, f"expected {wanted} ({kind}), got {_describe(raw)}")
    return raw


def _parse_time(raw: Any, source: str, path: str) -> datetime:
    match = _RFC3339.fullmatch(raw) if isinstance(raw, str) else None
    if not match:
        raise ManifestError(source, path, f"expected an RFC 3339 time such as \"2024-05-01T10:00:00Z\", got {_describe(raw)}")
    base, fraction, zone = match.groups()
    offset = timezone.utc if zone.upper() == "Z" else timezone(timedelta(hours=int(zone[:3]), minutes=int(zone[0] + zone[4:])))
    try:
        moment = datetime.fromisoformat(base).replace(tzinfo=offset)
    except ValueError:
        raise ManifestError(source, path, f"not a valid time: {json.dumps(raw)}") from None
    micros = int((fraction or "0").ljust(9, "0")[:6])  # Python keeps microseconds; the nanoseconds are dropped
    return moment.replace(microsecond=micros)


def _encode(obj: Any) -> Any:
    if isinstance(obj, list):
        return [_encode(item) for item in obj]
    if isinstance(obj, datetime):
        return obj.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    if type(obj) not in _SCHEMA:
        return obj
    out = {}
    for key, attr, _kind in _SCHEMA[type(obj)]:
        value = getattr(obj, attr)
        if value is None or value == [] or (type(obj) is VolumeStats and key == "name" and not value):
            continue  # omitted, as Go's omitempty does (times are always written, but ours may be None)
        out[key] = _encode(value)
    return out


def _describe(raw: Any) -> str:
    if raw is None:
        return "nothing"
    if isinstance(raw, (dict, list)):
        return "a mapping" if isinstance(raw, dict) else "a list"
    text = json.dumps(raw)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"

