"""Chapter 2: `mini-kubelet admit` says what the kubelet would do with new Pods, and why."""

from __future__ import annotations

import json
import textwrap

import pytest

from mini_kubelet.cmd.main import main

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch2

NODE = str(EXAMPLES / "nodes" / "node.yaml")  # worker-1: 1930m, 6180468Ki, 110 pods

NEW_PODS = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: batch, namespace: jobs, creationTimestamp: "2024-05-14T10:00:00Z"}
  spec:
    containers:
    - name: c
      image: x
      resources: {requests: {cpu: 1500m, memory: 1Gi, example.com/foo: "1"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: web, namespace: default, creationTimestamp: "2024-05-14T09:00:00Z"}
  spec:
    containers:
    - name: c
      image: x
      resources: {requests: {cpu: 100m}}
"""

RUNNING = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: api, namespace: default}
  spec:
    nodeName: worker-1
    containers:
    - name: c
      image: x
      resources: {requests: {cpu: 500m, memory: 512Mi}}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: elsewhere, namespace: default}
  spec:
    nodeName: worker-2
    containers:
    - {name: c, image: x, resources: {requests: {cpu: "1"}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: finished, namespace: default}
  spec:
    nodeName: worker-1
    containers:
    - {name: c, image: x, resources: {requests: {cpu: "1"}}}
  status: {phase: Succeeded}
"""


@pytest.fixture
def files(tmp_path):
    def write(name, text):
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return str(path)
    return write


def expected_exit(report: dict) -> int:
    """admit exits 1 when a Pod is rejected (as `run` does when an expect fails), else 0."""
    return 1 if any(not pod["admitted"] and not pod["skipped"] for pod in report["pods"]) else 0


def run_json(capsys, *args):
    code = main(["admit", *args, "--output", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == expected_exit(report)
    return report


def test_json_outcomes_in_creation_order_with_fit_numbers(capsys, files):
    report = run_json(capsys, files("new.yaml", NEW_PODS), "--node", NODE, "--running", files("running.yaml", RUNNING))
    assert report["version"] == "mini-kubelet.admit/v1"
    assert report["node"]["allocatable"]["cpu"] == 1930 and report["node"]["allocatable"]["pods"] == 110
    assert report["running"]["counted"] == ["default/api", "default/finished"]
    assert report["running"]["left_out"] == [{"pod": "default/elsewhere", "why": "bound to node worker-2"}]
    assert report["running"]["inactive"] == [{"pod": "default/finished", "why": "phase Succeeded"}]
    web, batch = report["pods"]
    assert (web["name"], web["admitted"], web["status"]["phase"], web["event"]) == ("web", True, "Pending", None)
    # The Succeeded pod is not active; web (admitted first) now counts: 500m + 100m used.
    message = "Node didn't have enough resource: cpu, requested: 1500, used: 600, capacity: 1930"
    assert batch["status"] == {"phase": "Failed", "reason": "OutOfcpu", "message": "Pod was rejected: " + message}
    assert batch["event"] == {"type": "Warning", "reason": "OutOfcpu", "message": message}
    assert batch["decided_by"]["handler"] == "predicate" and batch["decided_by"]["check"] == "resource fit: cpu"
    assert batch["checked_against"] == 2
    fit = {row["resource"]: row for row in batch["fit"]}
    assert (fit["cpu"]["requested"], fit["cpu"]["used"], fit["cpu"]["allocatable"], fit["cpu"]["fits"]) == (1500, 600, 1930, False)
    assert (fit["pods"]["requested"], fit["pods"]["used"], fit["pods"]["fits"]) == (1, 2, True)
    assert fit["memory"]["requested"] == 2**30 and fit["memory"]["used"] == 512 * 2**20
    assert batch["ignored_requests"] == ["example.com/foo"]  # an extended resource the node does not list
    assert [c["result"] for c in batch["checks"]] == ["failed", "ok", "ok", "ok", "ok", "not reached", "not reached"]


def test_json_is_stable(capsys, files):
    args = (files("new.yaml", NEW_PODS), "--node", NODE)
    assert run_json(capsys, *args) == run_json(capsys, *args)


def test_text_output_is_aligned_and_names_the_decision(capsys, files):
    assert main(["admit", files("new.yaml", NEW_PODS), "--node", NODE, "--running", files("r.yaml", RUNNING)]) == 1
    out = capsys.readouterr().out
    assert "Pod default/web: ADMITTED" in out
    assert "Pod jobs/batch: REJECTED by the predicate handler" in out
    assert "  decided by  resource fit: cpu\n" in out
    assert " ".join(out.split()).count(
        "message: Pod was rejected: Node didn't have enough resource: cpu, requested: 1500, used: 600, capacity: 1930") == 1
    assert "pkg/kubelet/lifecycle/predicate.go predicateAdmitHandler.Admit" in out
    lines = out.splitlines()
    headers = [i for i, line in enumerate(lines) if line.split()[:2] == ["resource", "requested"]]
    assert len(headers) == 2
    for start in headers:
        table = lines[start:start + 5]  # pods, cpu, memory, ephemeral-storage
        # Numbers are right-aligned under their headers: each row's "used" column ends where the header's does.
        end = table[0].index("used") + len("used")
        assert all(row[end - 1] != " " and row[end:end + 2] == "  " for row in table)
    assert any(line.split()[:4] == ["cpu", "(millicores)", "1500", "600"] and line.rstrip().endswith("NO") for line in table)


ALL_EXAMPLES = sorted(p.name for p in (EXAMPLES / "pods").glob("admission-*.yaml") if p.name != "admission-running.yaml")


@pytest.mark.parametrize("brief", [False, True])
@pytest.mark.parametrize("name", ALL_EXAMPLES)
def test_text_fits_80_columns_and_unwraps_to_the_exact_texts(capsys, name, brief):
    # The site's code blocks show about 84 characters; long messages wrap with a hanging indent.
    args = [str(EXAMPLES / "pods" / name), "--node", str(EXAMPLES / "nodes" / "small-worker.yaml"),
            "--running", str(EXAMPLES / "pods" / "admission-running.yaml")]
    report = run_json(capsys, *args)
    assert main(["admit", *args] + (["--brief"] if brief else [])) == expected_exit(report)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    flat = " ".join(out.split())
    for pod in report["pods"]:
        assert f"Pod {pod['namespace']}/{pod['name']}: " in flat
        if pod["event"]:
            assert f"message: {pod['status']['message']}" in flat
            assert f"{pod['event']['type']} {pod['event']['reason']}: {pod['event']['message']}" in flat
    assert ("predicate checks" in out) is not brief and ("Node small-worker" in out) is not brief


def test_brief_shows_every_failed_check_the_reported_one_first(capsys):
    # admission-two-failures.yaml: cpu and the node selector both fail; the kubelet reports cpu.
    args = [str(EXAMPLES / "pods" / "admission-two-failures.yaml"), "--node", str(EXAMPLES / "nodes" / "small-worker.yaml"),
            "--running", str(EXAMPLES / "pods" / "admission-running.yaml")]
    assert main(["admit", *args, "--brief"]) == 1  # rejected
    lines = capsys.readouterr().out.splitlines()
    failed = [i for i, line in enumerate(lines) if line.startswith("  failed  ")]
    assert len(failed) == 1
    assert lines[failed[0]] == "  failed  resource fit, cpu: requested 1000, used 1700, allocatable 1930"
    assert lines[failed[0] + 1].strip() == "NodeAffinity: node(s) didn't match Pod's node affinity/selector"


def test_brief_does_not_change_the_json(capsys):
    args = [str(EXAMPLES / "pods" / "admission-critical.yaml"), "--node", str(EXAMPLES / "nodes" / "small-worker.yaml")]
    assert run_json(capsys, *args, "--brief") == run_json(capsys, *args)


@pytest.mark.parametrize("text", [
    "Pod was rejected: Node didn't have enough resource: cpu, requested: 500, used: 1700, capacity: 1930",
    "The node had condition: [DiskPressure]. ",
    "x" * 120,
    "short",
])
def test_wrap_keeps_the_text_and_the_width(text):
    from mini_kubelet.cmd.admit import _wrap
    first = "  status      "
    lines = _wrap(first, text)
    assert lines[0].startswith(first) and all(line.startswith(" " * (len(first) + 2)) for line in lines[1:])
    assert " ".join([lines[0][len(first):]] + [line[len(first) + 2:] for line in lines[1:]]) == text  # trailing space kept
    # Only a word longer than a line may overflow it.
    assert all(len(line) <= 80 or " " not in line[len(first):].strip() for line in lines)


def test_taint_and_os_label(capsys, files):
    node = files("node.yaml", """
        apiVersion: v1
        kind: Node
        metadata: {name: n1, labels: {kubernetes.io/os: linux}}
        spec: {taints: [{key: maintenance, effect: NoExecute}]}
        status: {allocatable: {cpu: "2", memory: 1Gi, pods: "10"}}
        """)
    pods = files("pods.yaml", """
        apiVersion: v1
        kind: Pod
        metadata: {name: tainted}
        spec: {containers: [{name: c, image: x}]}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: windows, labels: {kubernetes.io/os: windows}}
        spec:
          tolerations: [{operator: Exists}]
          containers: [{name: c, image: x}]
        """)
    tainted, windows = run_json(capsys, pods, "--node", node)["pods"]
    assert (tainted["status"]["reason"], tainted["status"]["message"]) == (
        "TaintToleration", "Pod was rejected: Predicate TaintToleration failed")
    assert windows["status"]["reason"] == "PodOSSelectorNodeLabelDoesNotMatch"
    assert windows["status"]["message"] == (
        "Pod was rejected: Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")


def test_mirror_pod_is_skipped(capsys, files):
    report = run_json(capsys, str(EXAMPLES / "pods" / "static-critical.yaml"), "--node", NODE)
    [pod] = report["pods"]
    assert (pod["skipped"], pod["admitted"], pod["checks"]) == ("mirror pod", True, [])


@pytest.mark.parametrize("pod_text, node_text, running_text, problem", [
    ("NODE", "NODE", None, "expected Pods, got a Node"),
    ("POD", "POD", None, "expected a Node, got a Pod"),
    ("POD", "TWO_NODES", None, "expected one Node, found 2"),
    ("POD", "NODE", "NODE", "expected Pods, got a Node"),
    ("BROKEN", "NODE", None, "spec.containers[0].resources.requests.cpu: invalid quantity"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, files, pod_text, node_text, running_text, problem):
    texts = {
        "POD": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n",
        "NODE": "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
        "TWO_NODES": "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: b}\n",
        "BROKEN": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x, "
                  "resources: {requests: {cpu: lots}}}]}\n",
    }
    args = ["admit", files("pod.yaml", texts[pod_text]), "--node", files("node.yaml", texts[node_text])]
    if running_text:
        args += ["--running", files("running.yaml", texts[running_text])]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and problem in err and err.startswith("mini-kubelet: ")


def test_node_is_required(capsys, files):
    with pytest.raises(SystemExit) as exit_info:
        main(["admit", files("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                             "spec: {containers: [{name: c, image: x}]}\n")])
    assert exit_info.value.code == 2


DAEMONSET = EXAMPLES / "cluster" / "daemonset-node-critical.yaml"
DISK_PRESSURE = str(EXAMPLES / "cluster" / "node-disk-pressure.yaml")


@pytest.mark.parametrize("class_name, priority", [("system-node-critical", 2000001000),
                                                   ("system-cluster-critical", 2000000000)])
def test_a_built_in_priority_class_is_resolved_as_the_api_server_does(capsys, stdin, class_name, priority):
    """A DaemonSet's template names the class but no priority; the Pod its controller makes gets the class's value
    from the API server (plugin/pkg/admission/priority/admission.go admitPod at v1.27.7; the values from
    pkg/apis/scheduling/types.go SystemCriticalPriority and helpers.go SystemPriorityClasses), so it is critical
    and a DiskPressure node admits it."""
    stdin(DAEMONSET.read_text().replace("system-node-critical", class_name))
    assert main(["admit", "-", "--node", DISK_PRESSURE, "--brief"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Pod kube-system/node-agent: ADMITTED\n")
    assert (f"note: <stdin>: Pod kube-system/node-agent: priority {priority} from priorityClassName {class_name} "
            "(the API server's Priority admission sets spec.priority when the Pod is created)\n") in err


def test_a_priority_already_set_or_a_user_class_is_left_alone(capsys, stdin):
    """As `kubectl get pod -o yaml` prints it the priority is there: no note; a class of the cluster's own is not known."""
    text = DAEMONSET.read_text()
    stdin(text.replace("      priorityClassName: system-node-critical\n",
                       "      priorityClassName: system-node-critical\n      priority: 2000001000\n"))
    assert main(["admit", "-", "--node", DISK_PRESSURE, "--brief"]) == 0
    assert "priority 2000001000 from" not in capsys.readouterr().err
    stdin(text.replace("system-node-critical", "platform-high"))
    assert main(["admit", "-", "--node", DISK_PRESSURE, "--brief"]) == 1
    out, err = capsys.readouterr()
    assert "REJECTED by the eviction handler" in out and "priorityClassName" not in err


def test_a_pod_bound_to_another_node_says_the_kubelet_would_never_see_it(capsys, stdin):
    """The API source lists Pods by spec.nodeName (pkg/kubelet/config/apiserver.go NewSourceApiserver, v1.27.7), so a
    Pod bound elsewhere never reaches this kubelet; admit still says what the NodeName check would do."""
    stdin((EXAMPLES / "pods" / "admission-node-name.yaml").read_text())
    report = run_json(capsys, "-", "--node", str(EXAMPLES / "nodes" / "small-worker.yaml"))
    pod = report["pods"][0]
    assert pod["status"]["reason"] == "NodeName"
    assert pod["notes"] == ["spec.nodeName is small-worker-2: the kubelet of small-worker would never see this Pod, "
                            "as its API source lists only the Pods with spec.nodeName=small-worker; this verdict is "
                            "what it would do if handed the Pod anyway"]
    same_node = (EXAMPLES / "pods" / "admission-fits.yaml")
    assert all(not p["notes"] for p in run_json(capsys, str(same_node), "--node", str(EXAMPLES / "nodes" /
                                                                                   "small-worker.yaml"))["pods"])


WINDOWS_AND_BIG = """
apiVersion: v1
kind: Pod
metadata: {name: win-big, namespace: default}
spec:
  os: {name: windows}
  containers:
  - name: a
    resources: {requests: {cpu: "64"}}
"""


@pytest.mark.parametrize("release, reason, checks", [
    ("1.27", "OutOfcpu", [("resource fit", "failed"), ("NodeAffinity", "ok"), ("NodeName", "ok"), ("NodePorts", "ok"),
                          ("TaintToleration", "ok"), ("OS label", "not reached"), ("OS field", "not reached")]),
    ("1.36", "PodOSNotSupported", [("OS label", "ok"), ("OS field", "failed"), ("resource fit", "not reached"),
                                   ("NodeAffinity", "not reached"), ("NodeName", "not reached"),
                                   ("NodePorts", "not reached"), ("TaintToleration", "not reached")]),
])
def test_the_checks_in_the_order_the_release_runs_them(capsys, files, release, reason, checks):
    """From v1.29 (#116892) the OS checks come first; when one fails, the predicates are not run."""
    report = run_json(capsys, files("win.yaml", WINDOWS_AND_BIG), "--node", NODE, "--kubernetes-version", release)
    (pod,) = report["pods"]
    assert pod["status"]["reason"] == reason
    assert [(c["check"], c["result"]) for c in pod["checks"]] == checks
