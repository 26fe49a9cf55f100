"""What the commands share about their inputs: each file (or standard input) read and checked before anything
loads the Kubernetes client, and the notes on numbers a newer kubelet computes differently (sidecar containers,
pod-level resources, a Node running another version).

Upstream: none (a course tool). Both requests in the sidecar note come from resource.pod_requests, under
v1.27's profile and under the release answered for (1.29's when that release has no sidecars, KEP-753).
This module imports nothing that loads the client: main reads every file through read_inputs first, so bad
input is one line at once; the models (and the client) come when a command loads them.
"""

from __future__ import annotations

import re
import sys
from decimal import Decimal
from typing import TYPE_CHECKING, Optional

from mini_kubelet import api, features

if TYPE_CHECKING:
    from kubernetes.client import V1Node, V1Pod

    from mini_kubelet import stats

MIRRORED_MINOR = "1.27"  # the kubelet release whose numbers the course computes
SIDECAR_RESTART_POLICY = "Always"  # an init container with restartPolicy: Always is a sidecar (1.28+)


class Inputs:
    """Each file argument read once: checked first (read), made into the client's models when asked (load).

    "-" (standard input) may be given only once per command.
    """

    def __init__(self) -> None:
        self.stdin_used_by = ""
        self.files: dict[tuple[str, str], tuple[list[api.Document], list[str]]] = {}  # (path, flag): documents, notes
        self.summaries: dict[str, stats.Summary] = {}

    def _claim(self, path: str, flag: str) -> None:
        if path == api.STDIN:
            if self.stdin_used_by:
                raise api.UsageError(f"{flag}: - (standard input) is already read for {self.stdin_used_by}" if flag
                                     and flag != self.stdin_used_by else "- (standard input) can be given only once")
            self.stdin_used_by = flag or "FILE"

    def read(self, path: str, flag: str = "") -> list[api.Document]:
        """The Pods and Nodes in a file, every field checked, not yet models (ManifestError on bad input)."""
        if (path, flag) not in self.files:
            self._claim(path, flag)
            notes: list[str] = []
            self.files[(path, flag)] = api.read_documents(path, notes), notes
        return self.files[(path, flag)][0]

    def load(self, path: str, flag: str = "") -> list[api.Manifest]:
        """The Pods and Nodes in a file, its notes (templates read, documents skipped, priorities resolved) on stderr."""
        from mini_kubelet import types  # the client's models from here on

        documents = self.read(path, flag)
        notes = list(self.files[(path, flag)][1])
        objects = [api.model(document) for document in documents]
        for document, obj in zip(documents, objects):
            resolved = types.resolve_system_priority(obj) if document.kind == "Pod" else None
            if resolved:
                notes.append(f"{api.source_name(path)}: Pod {api.pod_label(obj)}: {resolved}")
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        return objects

    def summary(self, path: str, flag: str) -> stats.Summary:
        """The Summary (/stats/summary JSON) in a file."""
        from mini_kubelet import stats

        if path not in self.summaries:
            self._claim(path, flag)
            self.summaries[path] = stats.load_summary(path)
        return self.summaries[path]


def read_inputs(args) -> None:
    """Read and check every file the command takes, in the order the command reads them, into args.inputs.

    Called before the command's module is imported (with it, the client): bad input, and the flags a command
    checks before its files, fail here at once with the command's own one-line message.
    """
    inputs = args.inputs = Inputs()
    if args.command == "show":
        if args.files.count(api.STDIN) > 1:
            raise api.UsageError("- (standard input) can be given only once")
        for path in args.files:
            inputs.read(path)
    elif args.command == "admit":
        _only(inputs, args.pod_file, "Pod", "Pods", "POD.yaml")
        nodes = _only(inputs, args.node, "Node", "a Node", "--node")
        if len(nodes) != 1:
            raise api.UsageError(f"{api.source_name(args.node)}: kind: expected one Node, found {len(nodes)}")
        if args.running:
            _only(inputs, args.running, "Pod", "Pods", "--running")
        _release_from_node(args, inputs)
    elif args.command == "explain":
        _read_explain(args, inputs)
        _release_from_node(args, inputs)
    elif args.command == "eviction_rank":
        from mini_kubelet.eviction import signals

        if not signals.valid_signal(args.signal):  # containerfs.* only from 1.29
            raise api.UsageError(f"--signal: unsupported eviction signal {args.signal} (expected one of: "
                                 f"{', '.join(s for s in signals.SIGNAL_TO_RESOURCE if signals.valid_signal(s))})")
        inputs.summary(args.summary, "--summary")
        source = api.source_name(args.pods)
        pods = [d for d in inputs.read(args.pods, "--pods") if d.kind == "Pod"]
        if not pods:
            raise api.UsageError(f"{source}: kind: no Pod in this file")
        for pod in pods:
            if not pod.manifest["metadata"].get("uid"):
                raise api.UsageError(f"{source}: {pod.manifest['metadata']['name']}: metadata.uid: missing; the kubelet "
                                     "matches stats by UID (use the output of kubectl get pods -o yaml)")


def _release_from_node(args, inputs: Inputs) -> None:
    """A gate that waited for the Node's release (see main.use_profile) is refused now if the Node names none."""
    from mini_kubelet.cmd.main import release_from_input_missing, use_profile

    node = next((d.manifest for d in inputs.read(args.node, "--node") if d.kind == "Node"), {}) if args.node else {}
    info = node.get("status", {}).get("nodeInfo") if isinstance(node.get("status"), dict) else None
    version = info.get("kubeletVersion") if isinstance(info, dict) else None
    if info is None or version in (None, ""):
        release_from_input_missing(args)  # as use_node_release will, once the models are made
    elif isinstance(version, str) and node_release(version)[0] and not args.kubernetes_version:
        with features.release_profile(features.DEFAULT_FEATURE_GATE.release):  # a trial: use_node_release sets it
            use_profile(args, node_release(version)[0])  # --feature-gates names a gate the Node's release lacks


def _only(inputs: Inputs, path: str, kind: str, what: str, flag: str) -> list[api.Document]:
    documents = inputs.read(path, flag)
    for i, document in enumerate(documents):
        if document.kind != kind:
            where = "kind" if len(documents) == 1 else f"object {i + 1}: kind"
            raise api.UsageError(f"{api.source_name(path)}: {where}: expected {what}, got a {document.kind}")
    return documents


def _read_explain(args, inputs: Inputs) -> None:
    pod_source, node_source = api.source_name(args.pod_file), api.source_name(args.node or "")
    pods = [d for d in inputs.read(args.pod_file, "POD.yaml") if d.kind == "Pod"]
    if not pods:
        raise api.UsageError(f"{pod_source}: kind: no Pod in this file")
    if args.node:
        nodes = [d for d in inputs.read(args.node, "--node") if d.kind == "Node"]
        if len(nodes) != 1:
            raise api.UsageError(f"{node_source}: kind: expected one Node, found {len(nodes)}")
        if "memory" not in ((nodes[0].manifest.get("status") or {}).get("capacity") or {}):
            raise api.UsageError(f"{node_source}: status.capacity.memory: missing (the OOM scores and /kubepods need it)")
    for pod in pods:
        uid = pod.manifest["metadata"].get("uid")
        if isinstance(uid, str) and ("/" in uid or "_" in uid):
            raise api.UsageError(f"{pod_source}: metadata.uid: a cgroup name cannot hold '/' or '_' (got {uid!r})")
    from mini_kubelet.cmd.reservations import parse_reserved

    for flag in ("system-reserved", "kube-reserved"):  # explain checks them against the Node's capacity
        try:
            parse_reserved(getattr(args, flag.replace("-", "_")), f"--{flag}")
        except ValueError as err:
            raise api.UsageError(str(err)) from None


def is_sidecar(container) -> bool:
    """An init container with restartPolicy: Always: a sidecar from Kubernetes 1.28 (on by default from 1.29)."""
    return getattr(container, "restart_policy", None) == SIDECAR_RESTART_POLICY


# --8<-- [start:requests_in_two_releases]
SIDECAR_RELEASE = "1.29"  # the first release with SidecarContainers on by default
POD_LEVEL_RELEASE = "1.34"  # ... and with PodLevelResources on by default


def requests_in_two_releases(pod: V1Pod, gate: str = "SidecarContainers",
                             first: str = SIDECAR_RELEASE) -> tuple[dict[str, Decimal], dict[str, Decimal]]:
    """The Pod's effective requests as v1.27 computes them, and as the release answered for (`first` if the gate is off).

    Upstream: resource.pod_requests under each release's profile (component-helpers resource/helpers.go PodRequests)
    """
    from mini_kubelet import resource

    with features.release_profile(MIRRORED_MINOR):
        old = resource.pod_requests(pod)
    if features.DEFAULT_FEATURE_GATE.enabled(gate):
        return old, resource.pod_requests(pod)
    with features.release_profile(first):
        return old, resource.pod_requests(pod)
# --8<-- [end:requests_in_two_releases]


def _amounts(requests: dict[str, Decimal]) -> str:
    shown = [name for name in ("cpu", "memory") if name in requests] or sorted(requests)
    return ", ".join(f"{name} {api.milli_value(requests[name])}m" if name == "cpu" else f"{name} {api.value(requests[name])}"
                     for name in shown) or "nothing"


def sidecar_note(pod: V1Pod) -> Optional[str]:
    """One line when the Pod has sidecar containers: v1.27 computes them as init containers; what 1.29+ requests."""
    from mini_kubelet import resource

    names = [c.name for c in pod.spec.init_containers or [] if is_sidecar(c)]
    if not names:
        return None
    defaulted = resource.set_defaults_pod(pod)
    old, new = requests_in_two_releases(defaulted)
    which = ("init container " + names[0] + " has") if len(names) == 1 else ("init containers " + ", ".join(names) + " have")
    release = features.DEFAULT_FEATURE_GATE.release
    if features.DEFAULT_FEATURE_GATE.enabled("SidecarContainers"):
        return (f"{which} restartPolicy: Always: {'a sidecar' if len(names) == 1 else 'sidecars'}, which Kubernetes "
                f"{release} adds to the containers (PodRequests): the Pod requests {_amounts(new)} "
                f"(v{MIRRORED_MINOR}, which has no sidecars: {_amounts(old)})")
    return (f"{which} restartPolicy: Always (a sidecar from 1.28); v{MIRRORED_MINOR} computes "
            f"{'it as a plain init container' if len(names) == 1 else 'them as plain init containers'}. "
            f"A 1.29+ kubelet adds sidecars to the containers (PodRequests): the Pod requests {_amounts(new)} "
            f"there, {_amounts(old)} here")


def pod_level_note(pod: V1Pod) -> Optional[str]:
    """One line when the Pod sets spec.resources: v1.27 has no pod-level resources; what 1.34+ requests."""
    from mini_kubelet import resource

    if not resource.is_pod_level_resources_set(pod):
        return None
    old, new = requests_in_two_releases(resource.set_defaults_pod(pod), "PodLevelResources", POD_LEVEL_RELEASE)
    release = features.DEFAULT_FEATURE_GATE.release
    if features.DEFAULT_FEATURE_GATE.enabled("PodLevelResources"):
        return (f"spec.resources sets pod-level requests and limits, which Kubernetes {release} uses for cpu, memory "
                f"and hugepages (PodRequests): the Pod requests {_amounts(new)} (v{MIRRORED_MINOR}, which has no "
                f"pod-level resources: {_amounts(old)})")
    return (f"spec.resources sets pod-level requests and limits (on from 1.34); v{MIRRORED_MINOR} has no such field "
            f"and adds up the containers. A 1.34+ kubelet uses it (PodRequests): the Pod requests {_amounts(new)} "
            f"there, {_amounts(old)} here")


def resource_notes(pod: V1Pod) -> list[str]:
    """The notes on a Pod whose requests a newer release computes differently: sidecars, pod-level resources."""
    return [note for note in (sidecar_note(pod), pod_level_note(pod)) if note]


def use_node_release(args, node: Optional[V1Node]) -> None:
    """Answer for the release the Node's kubelet runs (status.nodeInfo.kubeletVersion), unless a flag chose one.

    Prints a one-line note on stderr saying which release is used and why. A version the course does not
    model is answered by the nearest release it does.
    """
    from mini_kubelet.cmd.main import release_from_input_missing, use_profile  # the flags' checks and errors

    info = node.status.node_info if node is not None and node.status else None
    version = (info.kubelet_version if info else None) or ""
    if not version or not hasattr(args, "kubernetes_version"):
        return release_from_input_missing(args)
    name = node.metadata.name
    release, nearest = node_release(version)
    if not release:
        print(f"note: node {name}: kubeletVersion {version!r} is not a version; answering for "
              f"{features.DEFAULT_FEATURE_GATE.release}", file=sys.stderr)
        return release_from_input_missing(args)
    if args.kubernetes_version:
        if features.DEFAULT_FEATURE_GATE.release != release:
            print(f"note: node {name} runs kubelet {version}; answering for {features.DEFAULT_FEATURE_GATE.release}, "
                  "as --kubernetes-version asks", file=sys.stderr)
        return
    before = features.DEFAULT_FEATURE_GATE.release
    use_profile(args, release, f"node {name} kubeletVersion {version}")
    if release == before and not nearest:
        return
    print(f"note: node {name} runs kubelet {version}: answering for Kubernetes {release}{nearest} "
          "(--kubernetes-version chooses another)", file=sys.stderr)


def node_release(version: str) -> tuple[str, str]:
    """The release a kubeletVersion is answered for, and why when it is another ("", "" if it is not a version)."""
    try:
        return features.parse_release(version), ""
    except ValueError:
        match = re.match(r"v?1\.(\d+)", version)
        if not match:
            return "", ""
        first = int(features.RELEASES[0].split(".")[1])
        return features.RELEASES[0] if int(match[1]) < first else features.RELEASES[-1], \
            ", the nearest release the course models"


def kubelet_version_note(node: Optional[V1Node]) -> Optional[str]:
    """One line when the Node's kubeletVersion is another release than the one answered for (show's tables)."""
    info = node.status.node_info if node is not None and node.status else None
    version = (info.kubelet_version if info else None) or ""
    release = features.DEFAULT_FEATURE_GATE.release
    if not version or version.lstrip("v").startswith(release + "."):
        return None
    return (f"node {node.metadata.name} runs kubelet {version}; admit and explain with this Node answer for its "
            "release (--kubernetes-version chooses another)")


def profile_json(args) -> dict:
    """The release a command answered for, where that came from, and the gates that differ from v1.27's defaults."""
    gate = features.DEFAULT_FEATURE_GATE
    return {"kubernetesVersion": gate.release, "source": getattr(args, "profile_source", "default"),
            "featureGates": gate.differences()}


def with_profile(doc: dict, profile: Optional[dict]) -> dict:
    """A report with the profile it answered for right after its version (unchanged when profile is None)."""
    return doc if profile is None else {"version": doc["version"], "profile": profile, **doc}


def profile_line(args) -> Optional[str]:
    """One line naming the release and the changed gates, for text output; None for the course's reference profile."""
    gate = features.DEFAULT_FEATURE_GATE
    if gate.release == features.REFERENCE_RELEASE and not gate.enabled_gates:
        return None
    set_here = ", ".join(f"{name}={str(value).lower()}" for name, value in sorted(gate.enabled_gates.items()))
    return (f"Kubernetes {gate.release} ({getattr(args, 'profile_source', 'default')})"
            + (f", feature gates {set_here}" if set_here else ""))
