"""`mini-kubelet watch`: list and watch a cluster's Pods for one node, read-only, and say what this kubelet would do.

`mini-kubelet watch --kubeconfig FILE --node NAME [--once] [--connections N]` reads the Node and lists the
Pods whose spec.nodeName is NAME, as the kubelet's API source does (pkg/kubelet/config/apiserver.go), then
follows their changes through watch connections (a 410 Gone relists, a dropped connection resumes from the
last resourceVersion). For each Pod that appears or changes it prints its admission verdict, QoS class and
what the first sync would do; for a Pod that goes, that the kubelet would stop it. The verdict is `admit`'s
(the same code): the listed Pods as a kubelet starting now admits them, oldest first, each against the active
ones admitted before it, the Node's pressure conditions read by the eviction handler. It only ever sends GETs.
The access it needs (RBAC, cluster-wide): get on nodes, list and watch on pods (--once does without watch):
the ClusterRole of examples/rbac/watch.yaml, shown on docs/reference/watch.md.
An unreachable cluster, a bad kubeconfig, a refusal (401/403) or a missing Node: one line, exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from mini_kubelet import api


def run(args: argparse.Namespace) -> int:
    """List (and watch) the node's pods and print what this kubelet would do with each.

    Upstream: pkg/kubelet/config/apiserver.go NewSourceApiserver (the list and watch), and kubelet.go's
    handling of what it delivers
    """
    if args.connections < 0:
        raise api.UsageError("--connections: expected 0 (watch until interrupted) or more")
    read_kubeconfig(args.kubeconfig)
    from kubernetes.client import CoreV1Api

    from mini_kubelet.cmd.inputs import profile_line, use_node_release
    from mini_kubelet.cmd.watch_report import admit_all, pod_view, render
    from mini_kubelet.config.apiserver import SourceApiserver, load_client

    client = load_client(args.kubeconfig, args.context)
    seen: dict[str, tuple[str, object]] = {}  # uid -> (resourceVersion, pod)
    state = {"node": None}

    def on_set(update) -> None:
        pods = {p.metadata.uid: p for p in update.pods}
        outcomes = admit_all(list(pods.values()), state["node"])
        lines = []
        for uid, p in pods.items():
            before = seen.get(uid)
            if before is not None and before[0] == p.metadata.resource_version:
                continue
            change = "ADDED" if before is None else "MODIFIED"
            lines.append(render(pod_view(p, outcomes.get(uid)), change))
        for uid, (_, p) in seen.items():
            if uid not in pods:
                lines.append(f"DELETED {p.metadata.namespace}/{p.metadata.name}\n  gone from the API: the kubelet "
                             "removes it (HandlePodRemoves) and its pod worker stops its containers")
        seen.clear()
        seen.update({uid: (p.metadata.resource_version, p) for uid, p in pods.items()})
        if lines:
            print("\n".join(lines), flush=True)

    source = SourceApiserver(client, args.node, on_set, kubeconfig=args.kubeconfig)
    state["node"] = _read_node(source, CoreV1Api(client), args.node, args.kubeconfig)
    use_node_release(args, state["node"])
    if profile_line(args):
        print(profile_line(args), flush=True)
    print(f"node {args.node}: listing pods with {source.field_selector} (read-only)", flush=True)
    source.list()
    if not seen:
        print(f"no pods are bound to node {args.node}", flush=True)
    if args.once:
        return 0
    try:
        if args.connections:
            for _ in range(args.connections):
                if not source.watch():
                    source.list()
        else:
            while True:
                if not source.watch():
                    source.list()
    except KeyboardInterrupt:
        print(file=sys.stderr)
    return 0


def read_kubeconfig(paths: str) -> None:
    """Read and parse the kubeconfig's files as the client will, before it loads: UsageError if one cannot be used.

    As the client does, paths may be a list joined by ':', ~ is expanded and a missing file is skipped; a file
    that cannot be read, is empty or is not a YAML mapping is one line at once. The rest is the client's to check.
    """
    problem = "Invalid kube-config file. No configuration found."  # the client's words when no file exists
    for path in (os.path.expanduser(p) for p in paths.split(os.pathsep) if p):
        if not os.path.exists(path):
            continue
        where = "" if path == paths else f"{path}: "
        try:
            docs = api.parse_yaml_documents(api.read_text(os.path.abspath(path)), path)  # abspath: "-" is a file here
        except api.ManifestError as err:
            raise api.UsageError(f"{paths}: cannot use this kubeconfig: {where}"
                                 + (f"{err.path}: {err.problem}" if err.path else err.problem)) from None
        if not docs:
            raise api.UsageError(f"{paths}: cannot use this kubeconfig: Invalid kube-config. {path} file is empty")
        if len(docs) == 1 and not isinstance(docs[0], dict):
            raise api.UsageError(f"{paths}: cannot use this kubeconfig: {where}expected a mapping (a kind: Config), "
                                 f"got {api.type_name(docs[0])}")
        problem = ""
    if problem:
        raise api.UsageError(f"{paths}: cannot use this kubeconfig: {problem}")


def _read_node(source, core, name: str, kubeconfig: str):
    """The Node object, read through the same client (as the kubelet's node lister); one line if it cannot be."""
    from kubernetes.client.rest import ApiException

    def request():
        try:
            return core.read_node(name), None
        except ApiException as err:  # answered: said here; unreachable: said by the source's _call
            return None, err

    node, err = source._call(request)
    if err is None:
        return node
    if err.status == 404:
        raise api.UsageError(f"{kubeconfig}: node {name!r} not found in the cluster")
    if err.status in (401, 403):
        raise api.UsageError(f"{kubeconfig}: the API server refused to read node {name!r}: {err.status} {err.reason}")
    raise api.UsageError(f"{kubeconfig}: the API server answered {err.status} {err.reason}")
