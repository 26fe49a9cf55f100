"""What the commands share about their inputs: reading files (or standard input) with notes, and the notes
on numbers that a newer kubelet computes differently (sidecar containers, a Node running another version).

Upstream: none (a course tool). Both requests in the sidecar note come from resource.pod_requests, under
v1.27's profile and under the release answered for (1.29's when that release has no sidecars, KEP-753).
"""

from __future__ import annotations

import re
import sys
from decimal import Decimal
from typing import Optional

from kubernetes.client import V1Node, V1Pod

from mini_kubelet import api, features, resource, types

MIRRORED_MINOR = "1.27"  # the kubelet release whose numbers the course computes
SIDECAR_RESTART_POLICY = "Always"  # an init container with restartPolicy: Always is a sidecar (1.28+)


class Inputs:
    """Reads each file argument once; "-" (standard input) may be given only once per command."""

    def __init__(self) -> None:
        self.stdin_used_by = ""

    def load(self, path: str, flag: str = "") -> list[api.Manifest]:
        """The Pods and Nodes in a file, its notes (templates read, documents skipped, priorities resolved) on stderr."""
        if path == api.STDIN:
            if self.stdin_used_by:
                raise api.UsageError(f"{flag}: - (standard input) is already read for {self.stdin_used_by}" if flag
                                     and flag != self.stdin_used_by else "- (standard input) can be given only once")
            self.stdin_used_by = flag or "FILE"
        notes: list[str] = []
        objects = api.load_manifests(path, notes)
        for obj in objects:
            resolved = types.resolve_system_priority(obj) if isinstance(obj, V1Pod) else None
            if resolved:
                notes.append(f"{api.source_name(path)}: Pod {api.pod_label(obj)}: {resolved}")
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        return objects


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
    nearest = ""
    try:
        release = features.parse_release(version)
    except ValueError:
        match = re.match(r"v?1\.(\d+)", version)
        if not match:
            print(f"note: node {name}: kubeletVersion {version!r} is not a version; answering for "
                  f"{features.DEFAULT_FEATURE_GATE.release}", file=sys.stderr)
            return release_from_input_missing(args)
        release = features.RELEASES[0] if int(match[1]) < int(features.RELEASES[0].split(".")[1]) else features.RELEASES[-1]
        nearest = ", the nearest release the course models"
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
