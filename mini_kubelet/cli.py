"""The `mini-kubelet` command line: each chapter adds a subcommand."""

from __future__ import annotations

import argparse
import sys
from decimal import Decimal

from kubernetes.client import V1Node, V1Pod

from mini_kubelet import api

USAGE_ERROR = 2


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run the subcommand, and turn bad input into one line and exit 2."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (api.ManifestError, UserError) as err:
        print(f"mini-kubelet: {err}", file=sys.stderr)
        return USAGE_ERROR


class UserError(Exception):
    """A problem with what the user asked for, reported as one line."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mini-kubelet", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    show = commands.add_parser("show", help="print the Pods and Nodes in manifests, in millicores and bytes")
    show.add_argument("files", nargs="+", metavar="FILE", help="YAML or JSON manifests (kubectl get -o yaml works)")
    show.set_defaults(run=_show)

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
    lines = [f"Pod {pod.metadata.namespace or 'default'}/{pod.metadata.name}"]
    for kind, containers in (("init container", pod.spec.init_containers), ("container", pod.spec.containers)):
        for container in containers or []:
            resources = container.resources
            lines.append(f"  {kind} {container.name}")
            lines.append(f"    requests  {_amounts(resources.requests if resources else None)}")
            lines.append(f"    limits    {_amounts(resources.limits if resources else None)}")
    if pod.spec.overhead:
        lines.append(f"  overhead    {_amounts(pod.spec.overhead)}")
    return lines


def _describe_node(node: V1Node) -> list[str]:
    status = node.status
    return [
        f"Node {node.metadata.name}",
        f"  capacity     {_amounts(status.capacity if status else None)}",
        f"  allocatable  {_amounts(status.allocatable if status else None)}",
    ]


def _amounts(resources: dict[str, str] | None) -> str:
    if not resources:
        return "(none)"
    return "  ".join(f"{name}={_amount(name, text)}" for name, text in sorted(resources.items()))


def _amount(resource: str, text: str) -> str:
    """CPU in millicores; everything else as a whole number (bytes for memory and storage)."""
    quantity: Decimal = api.parse_quantity(text)
    if resource == "cpu":
        return f"{api.milli_value(quantity)}m"
    return str(api.value(quantity))


def _labs_build(args: argparse.Namespace) -> int:
    from mini_kubelet import notebooks

    try:
        return notebooks.build_all(args.labs_dir, force=args.force, check=args.check)
    except notebooks.LabBuildError as err:
        raise UserError(str(err)) from None
