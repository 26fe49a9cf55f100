"""Chapter 1: `mini-kubelet watch` through the official client's real HTTP code, against a loopback API server.

The server reads the Node and serves the Pod list and watch wire format (a PodList with resourceVersion,
chunked watch events with a BOOKMARK, an ERROR 410 Gone, a dropped connection), as
tests/test_config_apiserver.py does for the source itself. What the command prints for each Pod is the
kubelet's: canAdmitPod's verdict (kubelet.go), GetPodQOS, and computePodActions for an empty runtime.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from mini_kubelet.cmd.main import main, parser

from .conftest import DOCS, EXAMPLES
from .test_config_apiserver import DROP, END, GONE, NODE, FakeAPIServer, event, kubeconfig

pytestmark = pytest.mark.ch1

NODE_OBJECT = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "resourceVersion": "5"},
               "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                          "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"}}}


def pod(name, rv, *, memory=None, init=None, deleting=False, phase=None):
    resources = {"requests": {"memory": memory}} if memory else {}
    doc = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": str(rv)},
           "spec": {"nodeName": NODE, "containers": [{"name": "app", "image": "nginx", "resources": resources}],
                    "terminationGracePeriodSeconds": 30}}
    if init:
        doc["spec"]["initContainers"] = [{"name": n, "image": "busybox"} for n in init]
    if deleting:
        doc["metadata"].update(deletionTimestamp="2024-01-01T00:00:00Z", deletionGracePeriodSeconds=20)
    if phase:
        doc["status"] = {"phase": phase}
    return doc


def watch_rules() -> list[dict]:
    """The access the watch reference page gives the command: the ClusterRole's rules in examples/rbac/watch.yaml."""
    docs = list(yaml.safe_load_all((EXAMPLES / "rbac" / "watch.yaml").read_text()))
    return next(d for d in docs if d["kind"] == "ClusterRole")["rules"]


def Server(lists, watches, status=200, node=True):
    """The loopback API server of the config tests, which also answers GET /api/v1/nodes/NODE."""
    missing = (404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404, "reason": "NotFound",
                     "message": "nodes not found"})
    return FakeAPIServer(lists, watches, status, objects={f"/api/v1/nodes/{NODE}": (200, NODE_OBJECT) if node else missing})


def test_once_lists_and_says_what_the_kubelet_would_do(tmp_path, capsys):
    pods = [pod("web", 8, init=["migrate"]), pod("big", 9, memory="8Gi"), pod("old", 7, deleting=True),
            pod("done", 6, phase="Succeeded")]
    with Server([(10, pods)], []) as server:
        assert main(["watch", "--kubeconfig", kubeconfig(tmp_path, server.url), "--node", NODE, "--once"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"node {NODE}: listing pods with spec.nodeName={NODE} (read-only)"
    web = out.split("ADDED default/web (resourceVersion 8)\n")[1].split("ADDED")[0]
    assert "phase Pending, QoS class BestEffort" in web
    assert "admission (oldest first, against the 0 active pods admitted before it): admitted" in web  # listed first
    assert ("first sync (nothing in the runtime yet): create the pod sandbox (attempt 0); start init container "
            "migrate (the others wait for it)") in web
    big = out.split("ADDED default/big")[1].split("ADDED")[0]
    assert "QoS class Burstable" in big and "rejected: OutOfmemory: Node didn't have enough resource: memory" in big
    assert "being deleted: the pod worker stops it with a grace period of 20s" in out
    assert "terminal: the pod worker only finishes it" in out
    assert {p for p, _ in server.requests} == {f"/api/v1/nodes/{NODE}", "/api/v1/pods"}  # GETs only: the server answers nothing else


def test_watch_follows_changes_through_bookmark_drop_and_gone(tmp_path, capsys):
    """ADDED, a bookmark, a dropped connection resumed, MODIFIED, 410 Gone relisted, DELETED."""
    lists = [(10, [pod("a", 9)]), (20, [pod("a", 13, memory="8Gi"), pod("c", 19)])]
    watches = [
        [event("ADDED", pod("b", 11)), event("BOOKMARK", {"kind": "Pod", "apiVersion": "v1",
                                                          "metadata": {"resourceVersion": "12"}}), DROP],
        [event("MODIFIED", pod("a", 13, memory="8Gi")), GONE],
        [event("DELETED", pod("a", 21, memory="8Gi")), END],
    ]
    with Server(lists, watches) as server:
        path = kubeconfig(tmp_path, server.url)
        assert main(["watch", "--kubeconfig", path, "--node", NODE, "--connections", "3"]) == 0
    out = capsys.readouterr().out
    changes = [line for line in out.splitlines() if line.split(" ")[0] in ("ADDED", "MODIFIED", "DELETED")]
    assert changes == ["ADDED default/a (resourceVersion 9)", "ADDED default/b (resourceVersion 11)",
                       "MODIFIED default/a (resourceVersion 13)",
                       "ADDED default/c (resourceVersion 19)",  # the relist: a is unchanged, c is new,
                       "DELETED default/b",  # and b is gone
                       "DELETED default/a"]
    watched = [q.get("resourceVersion") for p, q in server.requests if q.get("watch") == "true"]
    assert watched == ["10", "12", "20"]


def test_forbidden_is_one_line_and_exit_2(tmp_path, capsys):
    with Server([], [], status=403) as server:
        path = kubeconfig(tmp_path, server.url)
        assert main(["watch", "--kubeconfig", path, "--node", NODE, "--once"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"mini-kubelet: {path}: the API server refused to read node 'node-1': 403 Forbidden\n"


def test_missing_node_is_one_line_and_exit_2(tmp_path, capsys):
    with Server([], [], node=False) as server:
        path = kubeconfig(tmp_path, server.url)
        assert main(["watch", "--kubeconfig", path, "--node", NODE, "--once"]) == 2
    assert capsys.readouterr().err == f"mini-kubelet: {path}: node 'node-1' not found in the cluster\n"


def test_unreachable_is_one_line_and_exit_2(tmp_path, capsys):
    with Server([], []) as server:
        url = server.url
    path = kubeconfig(tmp_path, url)
    assert main(["watch", "--kubeconfig", path, "--node", NODE, "--once"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"mini-kubelet: {path}: cannot reach the API server at {url}:")


@pytest.mark.parametrize("content", [None, "::: not yaml", "apiVersion: v1\nkind: Config\n"])
def test_bad_kubeconfig_is_one_line_and_exit_2(tmp_path, capsys, content):
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    assert main(["watch", "--kubeconfig", str(path), "--node", NODE, "--once"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"mini-kubelet: {path}: cannot use this kubeconfig: ")


PRESSURE_NODE = {**NODE_OBJECT, "status": {**NODE_OBJECT["status"], "conditions": [
    {"type": "MemoryPressure", "status": "True"}, {"type": "DiskPressure", "status": "False"}]}}


def test_watch_gives_admits_verdict_on_a_memory_pressure_node(tmp_path, capsys):
    """One admission path (cmd/admit.py admit_on_node): a BestEffort Pod on a MemoryPressure node is refused by the
    eviction manager's handler (eviction_manager.go managerImpl.Admit, v1.27.7), in watch as in admit."""
    best_effort, burstable = pod("web", 8), pod("api", 9, memory="64Mi")
    with FakeAPIServer([(10, [best_effort, burstable])], [], 200,
                       objects={f"/api/v1/nodes/{NODE}": (200, PRESSURE_NODE)}) as server:
        assert main(["watch", "--kubeconfig", kubeconfig(tmp_path, server.url), "--node", NODE, "--once"]) == 0
    out = capsys.readouterr().out
    web = out.split("ADDED default/web (resourceVersion 8)\n")[1].split("ADDED")[0]
    assert ": rejected: Evicted: The node had condition: [MemoryPressure]. " in web
    assert "first sync" not in web
    assert ": admitted" in out.split("ADDED default/api (resourceVersion 9)\n")[1]
    pods, node = tmp_path / "pods.yaml", tmp_path / "node.yaml"
    pods.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [best_effort, burstable]}))
    node.write_text(json.dumps(PRESSURE_NODE))
    assert main(["admit", str(pods), "--node", str(node), "--brief"]) == 1
    admitted = capsys.readouterr().out
    assert "Pod default/web: REJECTED by the eviction handler" in admitted and "Pod default/api: ADMITTED" in admitted


def test_a_rejected_pod_does_not_count_against_a_later_one(tmp_path, capsys):
    """As the kubelet admits them (kubelet.go HandlePodAdditions, v1.27.7): oldest first, each against the pods
    admitted before it, less the rejected (failed) ones; the list's own order does not matter."""
    made = {name: {**pod(name, rv, memory=memory)} for name, rv, memory in
            (("third", 7, "512Mi"), ("second", 8, "8Gi"), ("first", 9, "3Gi"))}
    for minute, name in enumerate(("first", "second", "third")):
        made[name]["metadata"]["creationTimestamp"] = f"2024-05-14T10:0{minute}:00Z"
    with Server([(10, list(made.values()))], []) as server:
        assert main(["watch", "--kubeconfig", kubeconfig(tmp_path, server.url), "--node", NODE, "--once"]) == 0
    out = capsys.readouterr().out
    assert "against the 1 active pods admitted before it): rejected: OutOfmemory" in out.split("default/second")[1]
    third = out.split("default/third")[1].split("ADDED")[0]
    assert "(oldest first, against the 1 active pods admitted before it): admitted" in third  # 3Gi + 512Mi fit in 4Gi


def exec_kubeconfig(tmp_path, url, command, args=()):
    """A kubeconfig whose user gets credentials from an exec plugin, as EKS's and GKE's do."""
    path = tmp_path / "exec-kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": url}}],
        "users": [{"name": "test", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                                     "command": command, "args": list(args)}}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}))
    return str(path)


def watch_process(path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-m", "mini_kubelet", "watch", "--kubeconfig", path, "--node", NODE, "--once"],
                          capture_output=True, text=True, cwd=root, env=env, timeout=60)


@pytest.mark.parametrize("plugin, server, message", [
    ("no-such-credential-plugin", "https://127.0.0.1:1",
     "cannot use this kubeconfig: its exec plugin gave no credentials: [Errno 2] No such file or directory: "
     "'no-such-credential-plugin'"),
    ("token", "https://127.0.0.1:1", "cannot reach the API server at https://127.0.0.1:1: "),
])
def test_an_exec_plugin_kubeconfig_prints_only_the_one_line_error(tmp_path, plugin, server, message):
    """The client library logs a failed exec plugin (and urllib3 its retries) instead of raising: none of it is printed."""
    command = plugin
    if plugin == "token":  # a plugin that works: an ExecCredential with a token
        script = tmp_path / "plugin.py"
        script.write_text('import json\nprint(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", '
                          '"kind": "ExecCredential", "status": {"token": "t0k3n"}}))\n')
        import sys
        command = sys.executable
    path = exec_kubeconfig(tmp_path, server, command, [str(tmp_path / "plugin.py")] if plugin == "token" else [])
    result = watch_process(path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"mini-kubelet: {path}: {message}"), result.stderr


def test_every_request_is_a_get_that_the_documented_role_allows_and_each_rule_is_used(tmp_path):
    """What the command asks for, as RBAC names it, is exactly the ClusterRole of examples/rbac/watch.yaml.

    The loopback server answers only GET, so a write would fail the command. tests/test_watch_apiserver.py
    shows the role is enough on a real API server, and that each verb of it is needed.
    """
    with Server([(10, [pod("web", 9)])], [[END]]) as server:
        assert main(["watch", "--kubeconfig", kubeconfig(tmp_path, server.url), "--node", NODE, "--connections", "1"]) == 0
    asked = set()
    for path, query in server.requests:
        if path == f"/api/v1/nodes/{NODE}":
            asked.add(("nodes", "get"))
        else:
            assert path == "/api/v1/pods" and query["fieldSelector"] == f"spec.nodeName={NODE}"
            asked.add(("pods", "watch" if query.get("watch") == "true" else "list"))
    rules = watch_rules()
    assert all(rule["apiGroups"] == [""] for rule in rules)
    assert asked == {(resource, verb) for rule in rules for resource in rule["resources"] for verb in rule["verbs"]}


def test_the_reference_page_lists_every_flag_with_the_parsers_defaults():
    """docs/reference/watch.md's flag table: one row per flag of `mini-kubelet watch`, required ones said so."""
    page = (DOCS / "reference" / "watch.md").read_text()
    rows = dict(re.findall(r"^\| `(--[a-z-]+)[^`]*` \| ([^|]+) \|", page, re.M))
    watch = parser()._subparsers._group_actions[0].choices["watch"]
    actions = [a for a in watch._actions if a.dest != "help"]
    assert sorted(rows) == sorted(a.option_strings[-1] for a in actions)
    for action in actions:
        said = rows[action.option_strings[-1]].strip()
        if action.required:
            assert said == "required", action.option_strings
        elif action.default not in (None, False, ""):
            assert said.startswith(f"`{action.default}`"), (action.option_strings, said)
        assert said != "required" or action.required
