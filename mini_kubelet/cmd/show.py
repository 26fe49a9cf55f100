"""`mini-kubelet show`: the Pods and Nodes in manifests, with every amount in millicores and bytes.

Upstream: none (a course tool around k8s.io/apimachinery/pkg/api/resource Quantity.MilliValue and Value)
"""

from __future__ import annotations

import argparse
import textwrap

from kubernetes.client import V1Node, V1Pod

from mini_kubelet import api
from mini_kubelet.cmd.explain import amount
from mini_kubelet.cmd.inputs import kubelet_version_note, profile_line, resource_notes
from mini_kubelet.cmd.text import table


def run(args: argparse.Namespace) -> int:
    """Print each Pod's and Node's resources, one table row per resource ("-" reads standard input)."""
    inputs = args.inputs  # every file read and checked (main: read_inputs)
    if profile_line(args):
        print(profile_line(args))
    for path in args.files:
        for obj in inputs.load(path):
            print("\n".join(_describe_pod(obj) if isinstance(obj, V1Pod) else _describe_node(obj)))
    return 0


def _note(text: str | None) -> list[str]:
    return textwrap.wrap(f"note: {text}", 80, initial_indent="  ", subsequent_indent="    ",
                         break_on_hyphens=False, break_long_words=False) if text else []


def _describe_pod(pod: V1Pod) -> list[str]:
    rows = [("container", "resource", "request", "limit")]
    for kind, containers in (("init", pod.spec.init_containers), ("", pod.spec.containers)):
        for container in containers or []:
            resources = container.resources
            requests = (resources.requests if resources else None) or {}
            limits = (resources.limits if resources else None) or {}
            label = f"{container.name} (init)" if kind else container.name
            for resource in sorted(set(requests) | set(limits)) or ["-"]:
                rows.append((label, resource, _amount(resource, requests.get(resource)), _amount(resource, limits.get(resource))))
                label = ""
    level = getattr(pod.spec, "resources", None)  # pod-level resources (1.32+), as written
    requests, limits = ((level.requests or {}), (level.limits or {})) if level else ({}, {})
    label = "(pod level)"
    for resource in sorted(set(requests) | set(limits)):
        rows.append((label, resource, _amount(resource, requests.get(resource)), _amount(resource, limits.get(resource))))
        label = ""
    for resource, text in sorted((pod.spec.overhead or {}).items()):
        rows.append(("(overhead)", resource, _amount(resource, text), "-"))
    notes = [line for note in resource_notes(pod) for line in _note(note)]
    return [f"Pod {api.pod_label(pod)}", *["  " + line for line in table(rows)], *notes]


def _describe_node(node: V1Node) -> list[str]:
    capacity = (node.status.capacity if node.status else None) or {}
    allocatable = (node.status.allocatable if node.status else None) or {}
    rows = [("resource", "capacity", "allocatable")]
    rows += [(r, _amount(r, capacity.get(r)), _amount(r, allocatable.get(r))) for r in sorted(set(capacity) | set(allocatable))]
    return [f"Node {node.metadata.name}", *["  " + line for line in table(rows)], *_note(kubelet_version_note(node))]


def _amount(resource: str, text: str | None) -> str:
    """CPU in millicores, anything else as a whole number (bytes for memory), with what was written."""
    if text is None:
        return "-"
    exact = amount(resource, text)
    return exact if exact == str(text) else f"{exact} ({text})"
