"""The fields of each scenario format: name, type, default, unit and meaning, one table per mapping of the file.

Upstream: none (a course tool). The readers (eviction/, node/ and lifecycle/scenario.py, settings.py)
take the fields a mapping allows, in this order, and their defaults from here; the site's reference page for
scenario files is rendered from the same tables (`<!-- fields: lifecycle -->`), so the two cannot differ.
A path names a mapping: `node.kubelet`; `pods[]` is each item of a list; `run.NAME` each value of a mapping.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .. import features
from .series import format_duration

REQUIRED = object()  # the default of a field that must be given

# The defaults and bounds the tables state, kept here so that the tables load without the readers (nor the client).
DEFAULT_DURATION = 600  # seconds an eviction replay runs when the scenario gives no duration (10m)
MAX_DURATION = 24 * 3600  # a day: 8640 passes, replayed in seconds; a longer replay is refused at once
DEFAULT_LIFECYCLE_DURATION = 120  # seconds
MAX_LIFECYCLE_DURATION = 6 * 3600  # the replay steps every second
DEFAULT_NODE_DURATION = 3600
MAX_NODE_DURATION = 7 * 24 * 3600  # a week: the replay is event-driven, so a long stretch costs passes, not seconds
MAX_PODS_DEFAULT = 110  # KubeletConfiguration maxPods default
IMAGE_GC_HIGH_DEFAULT, IMAGE_GC_LOW_DEFAULT = 85, 80  # imageGCHighThresholdPercent / imageGCLowThresholdPercent


@dataclass(frozen=True)
class Field:
    """One field of a scenario mapping."""

    name: str
    type: str
    default: Any = None  # what the reader takes when the field is left out (None: nothing), or REQUIRED
    unit: str = ""
    doc: str = ""
    shown: str = ""  # the default as the page states it, when it is not the value itself


F = Field
DURATION, QUANTITY, SERIES, COUNT = "duration", "quantity", "series", "whole number"
FLAGS = "flag string or mapping"

# --- what the eviction scenarios (`replay: eviction`) and the one-node scenarios (`replay: node`) share -----

CAPACITY = (
    F("memory", QUANTITY, REQUIRED, "bytes", "the machine's memory (the root cgroup's limit)"),
    F("cpu", QUANTITY, None, "cores", "the node's CPUs (an eviction replay only reports them)"),
    F("nodefs", QUANTITY, REQUIRED, "bytes", "the filesystem of /var/lib/kubelet: logs, emptyDir volumes"),
    F("inodes", QUANTITY, REQUIRED, "inodes", "nodefs inodes"),
    F("imagefs", QUANTITY, None, "bytes", "a dedicated image filesystem (images, writable layers); "
      "without it, images live on nodefs", "none: images on nodefs"),
    F("imagefsInodes", QUANTITY, None, "inodes", "its inodes (given with imagefs)"),
    F("maxpid", QUANTITY, REQUIRED, "process IDs", "/proc/sys/kernel/pid_max"),
)
NODE_USAGE = (
    F("memory", SERIES, 0, "bytes", "what the OS and system daemons use, not Pods"),
    F("nodefs", SERIES, 0, "bytes", "nodefs used outside Pods"),
    F("inodes", SERIES, 0, "inodes", "nodefs inodes used outside Pods"),
    F("imagefs", SERIES, 0, "bytes", "imagefs used outside images"),
    F("imagefsInodes", SERIES, 0, "inodes", "imagefs inodes used outside images"),
    F("pids", SERIES, 0, "process IDs", "processes outside Pods"),
)
KUBELET = (
    F("evictionHard", FLAGS, None, "", "hard thresholds, `memory.available<500Mi,nodefs.available<10%`",
      "the release's Linux default"),
    F("evictionSoft", FLAGS, None, "", "soft thresholds, same form", "none"),
    F("evictionSoftGracePeriod", FLAGS, None, "", "each soft threshold's grace period, `memory.available=1m30s`",
      "none"),
    F("evictionMinimumReclaim", FLAGS, None, "", "what to reclaim beyond a threshold, `memory.available=200Mi`",
      "none"),
    F("evictionPressureTransitionPeriod", DURATION, "5m", "", "how long a pressure condition stays after its "
      "signal recovers"),
    F("evictionMaxPodGracePeriod", COUNT, 0, "seconds", "the grace period a soft eviction gives at most"),
    F("enforceNodeAllocatable", "list or comma-separated string", ["pods"], "", "`pods` gives the pods cgroup "
      "its allocatable memory limit", "[pods]"),
    F("systemReserved", FLAGS, None, "", "`memory=500Mi,cpu=100m`: with kubeReserved, sizes the pods cgroup", "none"),
    F("kubeReserved", FLAGS, None, "", "same form as systemReserved", "none"),
)
MERGE = F("mergeDefaultEvictionSettings", "true or false", False, "", "from 1.33: keep the default thresholds "
          "evictionHard leaves out")
IMAGE = (
    F("name", "string", REQUIRED, "", "the image's name"),
    F("size", QUANTITY, REQUIRED, "bytes", "its size on imagefs (nodefs without one)"),
    F("lastUsed", DURATION, None, "", "when a container last used it, from the start (`-2h`: before it)",
      "never used"),
    F("detected", DURATION, None, "", "when the image GC first saw it", "at the kubelet's start"),
    F("pinned", "true or false", False, "", "image GC never deletes it"),
    F("inodes", QUANTITY, 0, "inodes", "the inodes it takes"),
)
PULL = tuple(f for f in IMAGE if f.name in ("name", "size", "pinned", "inodes"))
CONTAINER_USAGE = (
    F("memory", SERIES, None, "bytes", "the container's working set", "0"),
    F("rootfs", SERIES, None, "bytes", "its writable layer", "0"),
    F("logs", SERIES, None, "bytes", "its logs, on nodefs", "0"),
    F("inodes", SERIES, None, "inodes", "inodes on its writable layer", "0"),
)
POD_USAGE = (
    F("pids", SERIES, 0, "process IDs", "the Pod's processes"),
    F("volumes", "mapping of VOLUME: series", None, "bytes", "each emptyDir or other volume's use (not hostPath)",
      "none"),
)
USAGE = CONTAINER_USAGE + POD_USAGE + (
    F("containers", "mapping of NAME: container usage", None, "", "each container's usage; without it, the "
      "container fields above are the first container's"),)
MANIFEST = (
    F("file", "path", None, "", "a file with one Pod, relative to the scenario (give file or manifest)"),
    F("manifest", "Pod manifest", None, "", "the Pod inline"),
)
SET = (
    F("node", "mapping of node.usage fields: quantity", None, "", "set what the OS uses (alone)"),
    F("pod", "string", None, "", "the Pod whose usage to set (or node)"),
    F("container", "string", None, "", "its container", "the first"),
) + tuple(F(f.name, QUANTITY if f.name != "volumes" else "mapping of VOLUME: quantity", None, f.unit,
            f"from then on, a constant {f.doc}") for f in CONTAINER_USAGE + POD_USAGE)
# --- what the lifecycle and the one-node scenarios share: in-place resize (gate InPlacePodVerticalScaling) -----

RESIZE_EVENT = F("resize", "mapping", None, "", "kubectl patch --subresource resize: new requests and limits "
                 "(gate InPlacePodVerticalScaling)")
RESIZE_CONTAINERS = F("containers", "mapping of CONTAINER: {...}", REQUIRED, "", "each container's new resources")
RESIZE_CONTAINER = (F("requests", "mapping of RESOURCE: quantity", None, "", "cpu, memory"),
                    F("limits", "mapping of RESOURCE: quantity", None, "", "cpu, memory"))
RESIZE_EXPECT = (F("resizes", "list", None, "", "resize conditions seen in this order (others may come between)"),
                 F("cgroups", "list", None, "", "a cgroup file's value at a time"))
RESIZE_EXPECT_ITEMS = {
    "expect.resizes[]": (F("pod", "string"), F("at", DURATION), F("type", "string", None, "", "PodResizePending or "
                         "PodResizeInProgress"), F("status", "True or removed"),
                         F("reason", "string", None, "", "Deferred, Infeasible, Error or empty"), F("message", "string")),
    "expect.cgroups[]": (F("cgroup", "string", REQUIRED, "", "the pod cgroup's path, or a container's name"),
                         F("file", "string", REQUIRED, "", "memory.max, cpu.max, cpu.weight..."),
                         F("at", DURATION, REQUIRED), F("value", "string", REQUIRED, "", "what the file holds then")),
}
TOP = (
    F("replay", "string", "eviction", "", "this format: `eviction` (or left out); `lifecycle` and `node` are the others"),
    F("description", "string", "", "", "one paragraph: what happens and why it matters"),
)
PROFILE = (  # read (and taken out) before the format's own fields: by `mini-kubelet run` and scenario_profile
    F("kubernetesVersion", "string", features.REFERENCE_RELEASE, "", 'the release to answer for, in quotes: "1.36"'),
    F("featureGates", "mapping of gate: true or false", None, "", "gates set on top of the release's defaults", "none"),
)


def _eviction() -> dict[str, tuple[Field, ...]]:
    return {
        "": TOP + (F("duration", DURATION, DEFAULT_DURATION, "", f"how long to replay, at most "
                     f"{format_duration(MAX_DURATION)}", format_duration(DEFAULT_DURATION)),
                   F("node", "mapping", REQUIRED, "", "the node"), F("images", "list", None, "", "images on the node"),
                   F("pods", "list", None, "", "Pods running at the start, in this order"),
                   F("events", "list", None, "", "what happens, each `{at: TIME, KIND: {...}}`"),
                   F("expect", "mapping", None, "", "the outcome `mini-kubelet run` checks")),
        "node": (F("name", "string", "node", "", "the node's name"), F("capacity", "mapping", REQUIRED),
                 F("usage", "mapping", None), F("kubelet", "mapping", None, "", "KubeletConfiguration fields")),
        "node.capacity": CAPACITY, "node.usage": NODE_USAGE, "node.kubelet": KUBELET + (MERGE,),
        "images[]": IMAGE,
        "pods[]": MANIFEST + (F("usage", "mapping", None, "", "its usage over time, from when it starts"),),
        "pods[].usage": USAGE, "pods[].usage.containers.NAME": CONTAINER_USAGE,
        "events[]": (F("at", DURATION, REQUIRED, "", "when, from the start"),
                     F("addPod", "pods[] entry", None, "", "a Pod arrives: an admission attempt, then it runs"),
                     F("pullImage", "mapping", None, "", "an image is pulled"),
                     F("set", "mapping", None, "", "a step change of a Pod's or the node's usage")),
        "events[].pullImage": PULL, "events[].set": SET,
        "expect": (F("evictions", "list of {pod, at, signal, grace}", None, "", "every eviction, in order; [] none"),
                   F("conditions", "list of {type, from, to}", None, "", "each pressure condition's interval; "
                     "to omitted: still reported"),
                   F("rejected", "list of {pod, at, reason, message}", None, "", "every Pod admission rejected"),
                   F("admitted", "list of names or {pod, at}", None, "", "every Pod admitted"),
                   F("reclaimed", "list of {at, bytes, sufficient, images}", None, "", "each node-level reclaim "
                     "(image GC)")),
    }


def _lifecycle() -> dict[str, tuple[Field, ...]]:
    pod, container = F("pod", "string", REQUIRED, "", "the Pod's metadata.name (a static Pod's also its manifest's)"), \
        F("container", "string", None, "", "the container", "the Pod's first")
    at = F("at", DURATION, REQUIRED, "", "when, from the start")
    return {
        "": (F("replay", "string", REQUIRED, "", "`lifecycle`"), TOP[1]) + (F("duration", DURATION, f"{DEFAULT_LIFECYCLE_DURATION}s", "", f"how long to replay, one second "
                     f"a step, at most {format_duration(MAX_LIFECYCLE_DURATION)}", format_duration(DEFAULT_LIFECYCLE_DURATION)),
                   F("node", "mapping", None, "", "the node", "4 CPUs, 16Gi, named node-1"),
                   F("pods", "list", REQUIRED, "", "the Pods, at least one"),
                   F("events", "list", None, "", "what happens, each `{at: TIME, KIND: {...}}`"),
                   F("expect", "mapping", None, "", "the outcome `mini-kubelet run` checks")),
        "node": (F("name", "string", "node-1", "", "the node's name"),
                 F("file", "path", None, "", "a Node manifest, relative to the scenario"),
                 F("manifest", "Node manifest", None, "", "the Node inline"),
                 F("kubelet", "mapping", None, "", "KubeletConfiguration fields")),
        "node.kubelet": (F("crashLoopBackOff", "mapping", None),
                         F("cpuManagerPolicy", "none or static", "none", "", "the CPU manager's policy, as the resize "
                           "decision reads it (a Guaranteed Pod's CPU resize is Infeasible under static)")),
        "node.kubelet.crashLoopBackOff": (F("maxContainerRestartPeriod", DURATION, None, "", "the longest back-off, "
                                            "1s to 300s (gate KubeletCrashLoopBackOffMax)", "300s"),),
        "pods[]": MANIFEST + (
            F("source", "api or file", "api", "", "api: bound by the scheduler, from the API server; file: a static Pod"),
            F("at", DURATION, 0, "", "when its source first delivers it", "0s"),
            F("run", "mapping of CONTAINER: {...}", None, "", "how each instance of a container ends by itself",
              "runs until something happens to it")),
        "pods[].run.CONTAINER": (F("after", DURATION, REQUIRED, "", "how long each instance runs"),
                                 F("exitCode", COUNT, None, "", "it exits with this code, 0 to 255 (or oomKill)"),
                                 F("oomKill", "true or false", False, "", "the OOM killer ends it: 137, OOMKilled"),
                                 F("preStopDuration", DURATION, None, "", "how long the container's lifecycle.preStop "
                                   "hook runs when it is stopped (alone, without after: the process runs until then)",
                                   "0s")),
        "events[]": (at,) + tuple(F(kind, "mapping", None, "", doc) for kind, doc in (
            ("exit", "the process ends (Completed for 0, else Error)"), ("crash", "a non-zero exit"),
            ("oomKill", "exit 137, OOMKilled"), ("probe", "a probe's result (after its thresholds)"),
            ("delete", "kubectl delete pod; for a static Pod, its mirror Pod"),
            ("sandboxDies", "the Pod sandbox is no longer ready"))) + (RESIZE_EVENT,),
        "events[].resize": (pod, RESIZE_CONTAINERS,
                            F("memoryUsage", "mapping of CONTAINER: quantity", None, "bytes", "what each container uses, "
                              "as the kubelet reads it before lowering a memory limit", "0 each")),
        "events[].resize.containers.CONTAINER": RESIZE_CONTAINER,
        "events[].exit": (pod, container, F("code", COUNT, 0, "", "the exit code")),
        "events[].crash": (pod, container, F("code", COUNT, 1, "", "the exit code, not 0")),
        "events[].oomKill": (pod, container), "events[].sandboxDies": (pod,),
        "events[].delete": (pod, F("gracePeriod", COUNT, None, "seconds", "kubectl delete --grace-period",
                                   "the Pod's terminationGracePeriodSeconds")),
        "events[].probe": (pod, container) + tuple(F(p, "failure or success", None, "", f"the {p} probe's result (give one)")
                                                   for p in ("liveness", "readiness", "startup"))
        + (F("output", "string", None, "", "the probe's output, as the event shows it"),),
        "expect": (F("pods", "list", None, "", "what kubectl get pods shows at a time"),
                   F("restarts", "list", None, "", "every restart, in order"),
                   F("events", "list", None, "", "events seen in this order (others may come between)"),
                   F("kills", "list", None, "", "every killPod, in order"),
                   F("stops", "list", None, "", "every container stop the report lists (a preStop hook ran, or "
                     "the grace period is not its killPod's), in order")) + RESIZE_EXPECT,
        "expect.pods[]": (pod, F("at", DURATION, REQUIRED), F("phase", "string"), F("status", "string", None, "", "STATUS"),
                          F("ready", "string", None, "", "READY, `1/1`"), F("restarts", COUNT, None, "", "RESTARTS")),
        "expect.restarts[]": (pod, container, F("at", DURATION), F("count", COUNT, None, "", "the restart count"),
                              F("backOff", DURATION, None, "", "the CrashLoopBackOff delay waited; null: none"),
                              F("exitCode", COUNT), F("reason", "string", None, "", "Error, OOMKilled, Completed")),
        "expect.events[]": (F("pod", "string"), F("container", "string"), F("type", "Normal or Warning"),
                            F("reason", "string"), F("message", "string"), F("at", DURATION)),
        "expect.kills[]": (pod, F("at", DURATION), F("gracePeriod", COUNT, None, "seconds", "the override; null: none")),
        "expect.stops[]": (pod, container, F("at", DURATION, None, "", "when the stop starts"),
                           F("preStop", DURATION, None, "", "the time waited for the preStop hook"),
                           F("gracePeriod", COUNT, None, "seconds", "StopContainer's timeout after the hook"),
                           F("sigterm", DURATION, None, "", "when the runtime sends SIGTERM"),
                           F("sigkillBy", DURATION, None, "", "the latest SIGKILL")),
        **RESIZE_EXPECT_ITEMS,
    }


def _node() -> dict[str, tuple[Field, ...]]:
    eviction = _eviction()
    pod = F("pod", "string", REQUIRED, "", "the Pod's name")
    entry = eviction["pods[]"] + (
        F("source", "api or file", "api", "", "api: from the API server; file: a static Pod"),
        F("at", DURATION, 0, "", "when it arrives", "0s"),
        F("count", COUNT, 1, "", "this many Pods, 1 to 5000, named from the {i} in the name"),
        F("replicaSet", "string", None, "", "the ReplicaSet owning this API Pod: it replaces a failed or deleted one"),
        F("run", "mapping of CONTAINER: {...}", None, "", "how each instance of a container ends by itself",
          "runs until something happens to it"))
    capacity = tuple(F(f.name, f.type, REQUIRED, f.unit, f.doc) if f.name == "cpu" else f for f in CAPACITY)
    return {
        "": (F("replay", "string", REQUIRED, "", "`node`"), TOP[1]) + (F("duration", DURATION, f"{DEFAULT_NODE_DURATION // 3600}h", "", "how long to replay, "
                                  f"at most {format_duration(MAX_NODE_DURATION)}"),) + eviction[""][3:5]
        + (F("pods", "list", None, "", "the Pods, each arriving at its `at:`"),) + eviction[""][6:],
        "node": (F("name", "string", "node-1", "", "the node's name"),) + eviction["node"][1:],
        "node.capacity": capacity, "node.usage": NODE_USAGE,
        "node.kubelet": KUBELET + (F("maxPods", COUNT, MAX_PODS_DEFAULT, "Pods", "the most Pods the node takes"),
                                   F("imageGCHighThresholdPercent", COUNT, IMAGE_GC_HIGH_DEFAULT, "%", "image GC starts"),
                                   F("imageGCLowThresholdPercent", COUNT, IMAGE_GC_LOW_DEFAULT, "%", "image GC stops")),
        "images[]": IMAGE, "pods[]": entry, "pods[].usage": USAGE, "pods[].usage.containers.NAME": CONTAINER_USAGE,
        "pods[].run.CONTAINER": (F("after", DURATION, REQUIRED, "", "how long each instance runs"),
                                 F("exitCode", COUNT, 0, "", "the code it exits with, 0 to 255")),
        "events[]": (eviction["events[]"][0], F("addPod", "pods[] entry without at", None, "", "Pods arrive"),
                     F("deletePod", "mapping", None, "", "kubectl delete pod"), eviction["events[]"][3],
                     eviction["events[]"][2], RESIZE_EVENT),
        "events[].resize": (pod, RESIZE_CONTAINERS), "events[].resize.containers.CONTAINER": RESIZE_CONTAINER,
        "events[].deletePod": (F("pod", "string", REQUIRED, "", "the Pod's name"),
                               F("gracePeriod", COUNT, None, "seconds", "kubectl delete --grace-period",
                                 "the Pod's terminationGracePeriodSeconds")),
        "events[].pullImage": PULL, "events[].set": SET,
        "expect": (F("evictions", "list", None, "", "every eviction, in order"),
                   F("oomKills", "list", None, "", "every OOM kill, in order"),
                   F("rejected", "list", None, "", "every Pod admission rejected"),
                   F("conditions", "list", None, "", "each node condition's interval"),
                   F("pods", "list", None, "", "what kubectl get pods shows at the end")) + RESIZE_EXPECT,
        "expect.evictions[]": (pod, F("at", DURATION), F("signal", "string"), F("message", "string")),
        "expect.oomKills[]": (pod, F("container", "string"), F("at", DURATION)),
        "expect.rejected[]": (pod, F("at", DURATION), F("reason", "string"), F("message", "string")),
        "expect.conditions[]": (F("type", "string", None, "", "MemoryPressure, DiskPressure, PIDPressure"),
                                F("from", DURATION), F("to", DURATION, None, "", "", "still reported")),
        "expect.pods[]": (pod, F("status", "string"), F("restarts", COUNT), F("phase", "string"), F("ready", "string"),
                          F("reason", "string")),
        **RESIZE_EXPECT_ITEMS,
    }


FORMATS = {"eviction": _eviction, "lifecycle": _lifecycle, "node": _node}


@functools.lru_cache(maxsize=None)
def table(kind: str) -> dict[str, tuple[Field, ...]]:
    """Every mapping of a format (eviction, lifecycle, node), by path."""
    return FORMATS[kind]()


def fields(kind: str, path: str) -> tuple[Field, ...]:
    """The fields of one mapping of a format."""
    return table(kind)[path]


def names(kind: str, path: str) -> tuple[str, ...]:
    """The field names a mapping allows, in order: what a reader passes to Reader.mapping."""
    return tuple(f.name for f in fields(kind, path))


def required(kind: str, path: str) -> tuple[str, ...]:
    """The fields of a mapping that must be given, in order."""
    return tuple(f.name for f in fields(kind, path) if f.default is REQUIRED)


def field(kind: str, path: str, name: str) -> Field:
    """One field of a mapping, by name."""
    return next(f for f in fields(kind, path) if f.name == name)


def default(kind: str, path: str, name: str) -> Any:
    """The value a reader takes for a field left out."""
    return field(kind, path, name).default


def _shown(f: Field) -> str:
    """A field's default as the reference page states it."""
    if f.default is REQUIRED:
        return "required"
    if f.shown:
        return f.shown
    if f.default is None or f.default == "":
        return "none"
    if isinstance(f.default, bool):
        return f"`{str(f.default).lower()}`"
    if isinstance(f.default, list):
        return f"`[{', '.join(f.default)}]`"
    return f"`{f.default}`"


def markdown(kind: str) -> str:
    """The reference tables of a format: one per mapping, every field with its type, default, unit and meaning."""
    out = []
    mappings = dict(table(kind))
    mappings[""] = PROFILE + mappings[""]  # every format may name its release
    for path, rows in mappings.items():
        out += [f"**`{path or '(the file)'}`**", "", "| Field | Type | Default | Unit | What it is |", "|---|---|---|---|---|"]
        out += [f"| `{f.name}` | {f.type} | {_shown(f)} | {f.unit or '—'} | {f.doc or '—'} |" for f in rows]
        out.append("")
    return "\n".join(out)
