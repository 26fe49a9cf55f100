"""The `mini-kubelet` command line: each chapter adds a subcommand."""

from __future__ import annotations

import argparse
import signal
import sys

from kubernetes.client import V1Node, V1Pod

from mini_kubelet import admit, api, eviction_cli, explain
from mini_kubelet.text import table

USAGE_ERROR = 2


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run the subcommand, and turn bad input into one line and exit 2."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `mini-kubelet ... | head` ends quietly
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (api.ManifestError, api.UsageError) as err:
        print(f"mini-kubelet: {err}", file=sys.stderr)
        return USAGE_ERROR


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mini-kubelet", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    show = commands.add_parser("show", help="print the Pods and Nodes in manifests, in millicores and bytes")
    show.add_argument("files", nargs="+", metavar="FILE", help="YAML or JSON manifests (kubectl get -o yaml works)")
    show.set_defaults(run=_show)

    admit.register(commands)  # chapter 2
    explain.register(commands)  # chapter 3
    eviction_cli.register(commands)  # chapter 4

    labs = commands.add_parser("labs", help="the lab notebooks")
    labs_commands = labs.add_subparsers(required=True, metavar="ACTION")
    build = labs_commands.add_parser("build", help="write the learner notebooks in labs/ from labs/src/")
    build.add_argument("--labs-dir", default="labs", help="the folder of learner notebooks (default: labs)")
    build.add_argument("--force", action="store_true", help="overwrite edited notebooks, keeping a backup of each")
    build.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notebook is out of date")
    build.set_defaults(run=_labs_build)
    return parser


def _show(args: argparse.Namespace) -> int:
    for path in args.files:
        for obj in api.load_manifests(path):
            print("\n".join(_describe_pod(obj) if isinstance(obj, V1Pod) else _describe_node(obj)))
    return 0


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
    for resource, text in sorted((pod.spec.overhead or {}).items()):
        rows.append(("(overhead)", resource, _amount(resource, text), "-"))
    return [f"Pod {api.pod_label(pod)}", *["  " + line for line in table(rows)]]


def _describe_node(node: V1Node) -> list[str]:
    capacity = (node.status.capacity if node.status else None) or {}
    allocatable = (node.status.allocatable if node.status else None) or {}
    rows = [("resource", "capacity", "allocatable")]
    rows += [(r, _amount(r, capacity.get(r)), _amount(r, allocatable.get(r))) for r in sorted(set(capacity) | set(allocatable))]
    return [f"Node {node.metadata.name}", *["  " + line for line in table(rows)]]


def _amount(resource: str, text: str | None) -> str:
    """CPU in millicores, anything else as a whole number (bytes for memory), with what was written."""
    if text is None:
        return "-"
    exact = explain.amount(resource, text)
    return exact if exact == str(text) else f"{exact} ({text})"


def _labs_build(args: argparse.Namespace) -> int:
    from mini_kubelet import notebooks

    try:
        return notebooks.build_all(args.labs_dir, force=args.force, check=args.check)
    except notebooks.LabBuildError as err:
        raise api.UsageError(str(err)) from None
