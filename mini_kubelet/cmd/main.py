"""The `mini-kubelet` command line: every command's options, and the command run on its own.

Upstream: cmd/kubelet/app/options/options.go (the flags, declared apart from what runs them)
Parsing the options imports nothing heavy: a command's module (and the Kubernetes client) is loaded
only when that command runs, so `mini-kubelet --help` answers at once; and only once the files the command
takes are read and checked (cmd/inputs.py read_inputs), so bad input is one line at once too.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

from mini_kubelet import features
from mini_kubelet.errors import ManifestError, UsageError

USAGE_ERROR = 2
PROG = "mini-kubelet"
KUBERNETES_VERSION = "v1.27"  # the release whose kubelet the course reads and mirrors
# Where the scenario files' fields are described: the site's page (its path under the site's address), and its source.
SCENARIO_REFERENCE = "reference/scenarios/ on the course's site (docs/reference/scenarios.md in its repository)"


def version() -> str:
    """The course's version (the installed package's) and the Kubernetes release it mirrors."""
    from importlib.metadata import PackageNotFoundError, version as installed  # light: the standard library

    try:
        course = installed(PROG)
    except PackageNotFoundError:  # run from a source tree that was not installed
        course = "(not installed)"
    return (f"{PROG} {course}, mirroring the Kubernetes {KUBERNETES_VERSION} kubelet "
            f"(--kubernetes-version answers for {features.RELEASES[0]} to {features.RELEASES[-1]})")


def command() -> int:
    """The `mini-kubelet` program: main() on the process's arguments, ending quietly when its reader goes.

    Only the program itself gives SIGPIPE its default action (`mini-kubelet ... | head` ends at once, no
    traceback); main() called inside another process (a test, the site build) must leave its signals alone.
    """
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    return main()


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run the command, and turn bad input into one line and exit 2."""
    args = parser().parse_args(argv)
    try:
        with features.release_profile(features.REFERENCE_RELEASE):  # put back afterwards, for callers in-process
            if hasattr(args, "kubernetes_version"):
                use_profile(args, deferrable=args.command in RELEASE_FROM_INPUT)
            from mini_kubelet.cmd.inputs import read_inputs

            read_inputs(args)
            return importlib.import_module(f"mini_kubelet.cmd.{args.command}").run(args)
    except (ManifestError, UsageError) as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return USAGE_ERROR


RELEASE_FROM_INPUT = ("admit", "explain", "watch", "run")  # their Node or scenario may name the release


def use_profile(args: argparse.Namespace, release: str | None = None, source: str | None = None,
                deferrable: bool = False) -> None:
    """Run under the release the flags (or an input, given as release and source) ask for, gates set on top.

    The flag wins over an input's release; args.profile_source says where the release came from. With
    deferrable, a gate that v1.27 lacks waits for the release the input names (args.deferred_error says why
    it would fail without one: see release_from_input_missing).
    """
    try:
        if args.kubernetes_version:
            release, source = features.parse_release(args.kubernetes_version), "--kubernetes-version"
    except ValueError as err:
        raise UsageError(f"--kubernetes-version: {err}") from None
    try:
        features.DEFAULT_FEATURE_GATE.use(release or features.REFERENCE_RELEASE, features.parse_gates(args.feature_gates))
        args.deferred_error = ""
    except ValueError as err:
        if not (deferrable and release is None and not args.kubernetes_version and "unrecognized" in str(err)):
            raise UsageError(f"--feature-gates: {err}") from None
        features.DEFAULT_FEATURE_GATE.use(features.REFERENCE_RELEASE)
        args.deferred_error = f"--feature-gates: {err}"
    args.profile_source = source or ("--kubernetes-version" if args.kubernetes_version else "default")


def release_from_input_missing(args: argparse.Namespace) -> None:
    """The input named no release: a gate that waited for one is refused now, as the flag would have been."""
    if getattr(args, "deferred_error", ""):
        raise UsageError(args.deferred_error)


def parser() -> argparse.ArgumentParser:
    """Every command and its options; `command` names the module in mini_kubelet.cmd that runs it."""
    top = argparse.ArgumentParser(prog=PROG, description="A small Python kubelet (Kubernetes v1.27, and each release "
                                  "to v1.36 with --kubernetes-version), written to teach how the real one works.")
    top.add_argument("--version", action=_Version, nargs=0, help="print the course's version and the Kubernetes "
                     "version it mirrors, then exit")
    commands = top.add_subparsers(required=True, metavar="COMMAND")

    show = commands.add_parser("show", help="print the Pods and Nodes in manifests, in millicores and bytes")
    show.add_argument("files", nargs="+", metavar="FILE", help="YAML or JSON manifests (kubectl get -o yaml works; - reads standard input)")
    _profile(show)
    show.set_defaults(command="show")

    # Chapter 2
    admit = commands.add_parser("admit", help="would the kubelet admit these Pods on this Node, and what it writes if not")
    admit.add_argument("pod_file", metavar="POD.yaml", help="the new Pods (several documents, a List or a workload work too; - reads standard input)")
    admit.add_argument("--node", metavar="NODE.yaml", required=True, help="the Node (kubectl get node NAME -o yaml)")
    admit.add_argument("--running", metavar="PODS.yaml", help="Pods already on the node (kubectl get pods -o yaml)")
    _output(admit)
    admit.add_argument("--brief", action="store_true", help="text: only each Pod's verdict, status, event and failed checks")
    _profile(admit)
    admit.set_defaults(command="admit")

    # Chapter 3
    explain = commands.add_parser("explain", help="a Pod's QoS class, cgroup files and OOM scores, and who computes them")
    explain.add_argument("pod_file", metavar="POD.yaml", help="Pods (several documents, a List or a workload work too; - reads standard input)")
    explain.add_argument("--node", metavar="NODE.yaml", help="the Node (default: 4 CPUs, 16Gi, no hugepages)")
    explain.add_argument("--cgroup-version", type=int, choices=(1, 2), default=2, help="cgroup v1 or v2 (default: 2)")
    explain.add_argument("--cgroup-driver", choices=("cgroupfs", "systemd"), default="cgroupfs",
                         help="the kubelet's cgroupDriver (default: cgroupfs)")
    explain.add_argument("--system-reserved", metavar="LIST", help="as the kubelet flag, e.g. cpu=100m,memory=1Gi")
    explain.add_argument("--kube-reserved", metavar="LIST", help="as the kubelet flag, e.g. cpu=100m,memory=1Gi")
    explain.add_argument("--single-process-oom-kill", action="store_true", default=None,
                         help="the kubelet config singleProcessOOMKill: true (1.32+): no memory.oom.group")
    explain.add_argument("--swap-behavior", choices=("NoSwap", "LimitedSwap"),
                         help="the kubelet config memorySwap.swapBehavior (needs NodeSwap; default NoSwap)")
    explain.add_argument("--swap-capacity", metavar="QUANTITY",
                         help="the node's swap, e.g. 4Gi, when the Node does not report status.nodeInfo.swap")
    _output(explain)
    _profile(explain)
    explain.set_defaults(command="explain")

    # Chapter 1
    watch = commands.add_parser("watch", help="list and watch a cluster's Pods for one node (read-only) and print "
                                "what this kubelet would do with each")
    watch.add_argument("--kubeconfig", metavar="FILE", required=True, help="the kubeconfig to read the cluster from")
    watch.add_argument("--context", metavar="NAME", help="a context of the kubeconfig (default: its current context)")
    watch.add_argument("--node", metavar="NAME", required=True, help="the node whose Pods to list (spec.nodeName)")
    watch.add_argument("--once", action="store_true", help="list, print and exit (no watch)")
    watch.add_argument("--connections", type=int, default=0, metavar="N",
                       help="stop after N watch connections (default: watch until interrupted)")
    _profile(watch)
    watch.set_defaults(command="watch")

    # Chapters 1 and 4
    run = commands.add_parser("run", help="replay a scenario on a virtual clock: a Pod's lifecycle or a node under pressure",
                              epilog=f"Every field of a scenario file (replay: lifecycle, eviction or node), with its type, "
                                     f"default and unit: the course's reference page, {SCENARIO_REFERENCE}.")
    run.add_argument("scenario", metavar="SCENARIO.yaml", help="a scenario file (see examples/scenarios/; - reads standard input)")
    run.add_argument("--plot", metavar="OUT.png", help="also draw the signals against their thresholds, or each "
                     "container's state over time (PNG or SVG)")
    run.add_argument("--plot-width", type=float, default=7.5, metavar="INCHES",
                     help="the plot's width (default 7.5; about 4 for a phone's screen, which gets the same text size)")
    _output(run)
    _profile(run)
    run.set_defaults(command="run")
    eviction = commands.add_parser("eviction", help="the eviction manager's decisions on real data")
    actions = eviction.add_subparsers(required=True, metavar="ACTION")
    rank = actions.add_parser("rank", help="rank a node's pods for a signal, from /stats/summary and kubectl output")
    rank.add_argument("--summary", required=True, metavar="SUMMARY.json",
                      help="kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary")
    rank.add_argument("--pods", required=True, metavar="PODS.yaml",
                      help="kubectl get pods -A -o yaml --field-selector spec.nodeName=NODE")
    rank.add_argument("--signal", required=True, metavar="SIGNAL",
                      help="memory.available, allocatableMemory.available, nodefs.available, nodefs.inodesFree, "
                           "imagefs.available, imagefs.inodesFree or pid.available (from 1.29 also "
                           "containerfs.available, containerfs.inodesFree)")
    rank.add_argument("--imagefs", choices=("auto", "dedicated", "shared"), default="auto",
                      help="is imagefs its own filesystem? (default: guessed from the summary)")
    _output(rank)
    _profile(rank)
    rank.set_defaults(command="eviction_rank")

    labs = commands.add_parser("labs", help="the lab notebooks")
    labs_actions = labs.add_subparsers(required=True, metavar="ACTION")
    build = labs_actions.add_parser("build", help="write the learner notebooks in labs/ from labs/src/")
    build.add_argument("--labs-dir", default="labs", help="the folder of learner notebooks (default: labs)")
    build.add_argument("--force", action="store_true", help="overwrite edited notebooks, keeping a backup of each")
    build.add_argument("--check", action="store_true", help="write nothing; exit 1 if a notebook is out of date")
    build.set_defaults(command="labs")
    return top


class _Version(argparse.Action):
    """--version: print version() and exit (looked up only when asked for)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(version())
        parser.exit()


def _profile(command: argparse.ArgumentParser) -> None:
    command.add_argument("--kubernetes-version", metavar="VERSION",
                         help=f"answer as this release's kubelet: {features.RELEASES[0]} to {features.RELEASES[-1]} "
                              f"(v1.36.3 works; default: {features.REFERENCE_RELEASE}, or the Node's kubeletVersion)")
    command.add_argument("--feature-gates", metavar="GATES", default="",
                         help="gates set on top of the release's defaults, as the kubelet flag: "
                              "SidecarContainers=true,PodLevelResources=false")


def _output(command: argparse.ArgumentParser) -> None:
    command.add_argument("--output", choices=("text", "json"), default="text", help="text (default) or json")
