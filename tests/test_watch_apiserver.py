"""Chapter 1: `mini-kubelet watch` against a real kube-apiserver v1.36.5 and etcd, on loopback.

tests/test_watch_cli.py checks the command against a loopback server written for the tests; here the
server is upstream's own (upstream/servers/ builds both with Go, once, into the harness's cache). The
Node and the Pods are made with the official client as an admin; nothing schedules or runs them, so the
Pods stay Pending, which is all the command reads. RBAC is on: the command's access (the ClusterRole of
examples/rbac/watch.yaml, which the watch reference page shows) is granted to plain users through
ClusterRoles, one verb short in each of the others.
"""

from __future__ import annotations

import threading
import time

import pytest

from mini_kubelet.cmd.main import main
from mini_kubelet.config import apiserver

from . import upstream_harness, upstream_servers
from .test_watch_cli import watch_rules

# One API server for the file: under `make test-upstream` (--dist loadgroup) its tests share one worker.
pytestmark = [pytest.mark.upstream, pytest.mark.apiserver, pytest.mark.ch1, pytest.mark.xdist_group("apiserver")]
upstream_harness.go()  # no Go: the whole file is skipped, with one message (a failure in CI)

NODE, NAMESPACE = "node-1", "watch-test"
WATCH_SECONDS = 3  # each watch connection's timeoutSeconds here, so that --connections 1 ends by itself
WATCH_RULES = watch_rules()  # what the reference page and examples/rbac/watch.yaml say it needs
ROLES = {"watcher": WATCH_RULES,
         "no-watch": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}, WATCH_RULES[1]],
         "no-list": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["watch"]}, WATCH_RULES[1]],
         "no-node": WATCH_RULES[:1]}  # and "nobody" has no role at all


def pod(name, *, node=NODE, memory=None, cpu=None, init=None):
    resources = {}
    if memory:
        resources["requests"] = {"memory": memory}
    if cpu:
        resources = {"requests": {"cpu": cpu, "memory": "64Mi"}, "limits": {"cpu": cpu, "memory": "64Mi"}}
    spec = {"nodeName": node, "containers": [{"name": "app", "image": "nginx", "resources": resources}]}
    if init:
        spec["initContainers"] = [{"name": n, "image": "busybox"} for n in init]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """etcd and kube-apiserver, a Node and a namespace, and the ClusterRoles bound to their users."""
    from kubernetes import client, config

    plane = upstream_servers.ControlPlane(tmp_path_factory.mktemp("control-plane"))
    try:
        admin = config.new_client_from_config(config_file=str(plane.kubeconfig("admin")), persist_config=False)
        core, rbac = client.CoreV1Api(admin), client.RbacAuthorizationV1Api(admin)
        core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE},
                          "status": {"capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},
                                     "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}})
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        for user, rules in ROLES.items():
            rbac.create_cluster_role({"metadata": {"name": f"mini-kubelet-{user}"}, "rules": rules})
            rbac.create_cluster_role_binding({
                "metadata": {"name": f"mini-kubelet-{user}"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"mini-kubelet-{user}"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
        _wait_for_rbac(client.AuthorizationV1Api(admin))
        plane.core = core
        yield plane
    finally:
        plane.stop()


def _wait_for_rbac(authz, timeout=20):
    """Until the authorizer has seen every binding: each user may do the last thing its role grants."""
    from kubernetes import client

    for user, rules in ROLES.items():
        resource, verb = rules[-1]["resources"][0], rules[-1]["verbs"][-1]
        review = client.V1SubjectAccessReview(spec={"user": user, "resourceAttributes": {"verb": verb, "resource": resource}})
        deadline = time.monotonic() + timeout
        while not authz.create_subject_access_review(review).status.allowed:
            assert time.monotonic() < deadline, f"RBAC never allowed {user} to {verb} {resource}"
            time.sleep(0.1)


@pytest.fixture
def pods(cluster):
    """Create pods in the test namespace for one test, and delete them (at once) afterwards."""
    made = []

    def create(*manifests):
        for manifest in manifests:
            made.append(cluster.core.create_namespaced_pod(NAMESPACE, manifest).metadata.name)

    yield create
    for name in made:
        try:
            cluster.core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
        except Exception:  # already gone: the test deleted it
            pass


def watch(cluster, user, *flags):
    return main(["watch", "--kubeconfig", str(cluster.kubeconfig(user)), "--node", NODE, *flags])


def section(out, key):
    """The lines the command printed for one pod after its ADDED/MODIFIED line."""
    return out.split(key + " (resourceVersion ")[1].split("\n", 1)[1].split("\nADDED")[0].split("\nMODIFIED")[0]


def test_once_lists_the_node_pods_and_says_what_the_kubelet_would_do(cluster, pods, capsys):
    pods(pod("web", init=["migrate"]), pod("big", memory="8Gi"), pod("exact", cpu="500m"),
         pod("elsewhere", node="node-2"))
    assert watch(cluster, "admin", "--once") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"node {NODE}: listing pods with spec.nodeName={NODE} (read-only)"
    added = sorted(line.split(" (")[0] for line in out.splitlines() if line.startswith("ADDED"))
    assert added == [f"ADDED {NAMESPACE}/big", f"ADDED {NAMESPACE}/exact", f"ADDED {NAMESPACE}/web"]  # not node-2's
    web = section(out, f"ADDED {NAMESPACE}/web")
    assert "phase Pending, QoS class BestEffort" in web
    assert ": admitted" in web  # a zero request always fits, whatever was admitted before it
    assert ("first sync (nothing in the runtime yet): create the pod sandbox (attempt 0); start init container "
            "migrate (the others wait for it)") in web
    big = section(out, f"ADDED {NAMESPACE}/big")
    assert "QoS class Burstable" in big and "rejected: OutOfmemory: Node didn't have enough resource: memory" in big
    exact = section(out, f"ADDED {NAMESPACE}/exact")
    assert "QoS class Guaranteed" in exact  # its admission: see the next test


def test_a_rejected_pod_does_not_count_against_a_later_one(cluster, pods, capsys):
    """Upstream: pkg/kubelet/kubelet.go HandlePodAdditions (v1.27.7): pods sorted by creation time, each checked
    against the pods added before it, less the rejected (failed) ones (watch goes through admit's path)."""
    for manifest in (pod("first", memory="3Gi"), pod("second", memory="8Gi"), pod("third", memory="512Mi")):
        pods(manifest)
        time.sleep(1.1)  # creationTimestamp is in whole seconds: a strict order
    assert watch(cluster, "admin", "--once") == 0
    out = capsys.readouterr().out
    assert "rejected: OutOfmemory" in section(out, f"ADDED {NAMESPACE}/second")
    assert ": admitted" in section(out, f"ADDED {NAMESPACE}/third")  # 3Gi + 512Mi fit in 4Gi


@pytest.fixture
def short_watches(monkeypatch):
    """Each watch connection asks the server to close it after WATCH_SECONDS (the reflector's is 5 to 10 min)."""
    class ShortWatch(apiserver.SourceApiserver):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, watch_timeout=WATCH_SECONDS, **kwargs)

    monkeypatch.setattr(apiserver, "SourceApiserver", ShortWatch)


def run_in_thread(cluster, user, *flags):
    result = {}
    thread = threading.Thread(target=lambda: result.update(code=watch(cluster, user, *flags)), daemon=True)
    thread.start()
    return thread, result


def read_until(capsys, text, seen="", timeout=30):
    """What the command printed so far, once it contains text (a bounded wait)."""
    deadline = time.monotonic() + timeout
    while text not in seen:
        assert time.monotonic() < deadline, f"no {text!r} in:\n{seen}"
        time.sleep(0.05)
        seen += capsys.readouterr().out
    return seen


def test_watch_sees_a_label_a_new_pod_a_graceful_delete_and_the_removal(cluster, pods, capsys, short_watches):
    pods(pod("steady"))
    thread, result = run_in_thread(cluster, "admin", "--connections", "1")
    out = read_until(capsys, f"ADDED {NAMESPACE}/steady")
    cluster.core.patch_namespaced_pod("steady", NAMESPACE, {"metadata": {"labels": {"tier": "web"}}})
    pods(pod("brief"))
    cluster.core.delete_namespaced_pod("brief", NAMESPACE)  # bound to a node: only marked, for its kubelet
    cluster.core.delete_namespaced_pod("brief", NAMESPACE, grace_period_seconds=0)  # what the kubelet would confirm
    out = read_until(capsys, f"DELETED {NAMESPACE}/brief", out)
    thread.join(WATCH_SECONDS + 20)
    assert not thread.is_alive() and result == {"code": 0}  # the server closed the one connection
    out += capsys.readouterr().out
    changes = [line.split(" (")[0] for line in out.splitlines() if line.split(" ")[0] in ("ADDED", "MODIFIED", "DELETED")]
    assert changes == [f"ADDED {NAMESPACE}/steady", f"MODIFIED {NAMESPACE}/steady", f"ADDED {NAMESPACE}/brief",
                       f"MODIFIED {NAMESPACE}/brief",  # deletionTimestamp set, deletionGracePeriodSeconds 30
                       f"MODIFIED {NAMESPACE}/brief",  # the forced delete first lowers it to 0,
                       f"DELETED {NAMESPACE}/brief"]  # then removes the pod
    graceful, forced = out.split(f"MODIFIED {NAMESPACE}/brief")[1:]
    assert "being deleted: the pod worker stops it with a grace period of 30s" in graceful
    # calculateEffectiveGracePeriod: a deletion grace period of 0 falls back to the spec's 30s (never below 1)
    assert "being deleted: the pod worker stops it with a grace period of 30s" in forced
    assert "gone from the API: the kubelet removes it (HandlePodRemoves)" in out.split(f"DELETED {NAMESPACE}/brief")[1]


def test_the_documented_access_is_enough_to_list_and_watch(cluster, pods, capsys, short_watches):
    pods(pod("web"))
    assert watch(cluster, "watcher", "--once") == 0
    assert f"ADDED {NAMESPACE}/web" in capsys.readouterr().out
    thread, result = run_in_thread(cluster, "watcher", "--connections", "1")
    out = read_until(capsys, f"ADDED {NAMESPACE}/web")
    pods(pod("late"))
    read_until(capsys, f"ADDED {NAMESPACE}/late", out)
    thread.join(WATCH_SECONDS + 20)
    assert not thread.is_alive() and result == {"code": 0}
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("user, flags, refused", [
    ("nobody", ["--once"], "the API server refused to read node 'node-1': 403 Forbidden"),
    ("no-node", ["--once"], "the API server refused to read node 'node-1': 403 Forbidden"),
    ("no-list", ["--once"], f"the API server refused to list pods (spec.nodeName={NODE}): 403 Forbidden"),
    ("no-watch", ["--connections", "1"], f"the API server refused to list pods (spec.nodeName={NODE}): 403 Forbidden"),
])
def test_without_the_access_one_line_and_exit_2(cluster, capsys, short_watches, user, flags, refused):
    """Each verb the docstring names is needed: without it, one line on stderr and exit 2 (no traceback)."""
    path = cluster.kubeconfig(user)
    assert watch(cluster, user, *flags) == 2
    assert capsys.readouterr().err == f"mini-kubelet: {path}: {refused}\n"


def test_no_watch_still_lists_once(cluster, capsys):
    """list without watch: --once, which never watches, is enough."""
    assert watch(cluster, "no-watch", "--once") == 0
    assert capsys.readouterr().out.startswith(f"node {NODE}: listing pods")
