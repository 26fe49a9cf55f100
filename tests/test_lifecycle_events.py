"""Chapter 1: the lifecycle events the examples do not show: a dead sandbox, a readiness result, an event
that finds nothing to act on, a Pod that arrives later, and the init-container restart rule.

What each must do comes from kuberuntime_manager.go computePodActions (podSandboxChanged: a sandbox that is not
ready means kill everything and start again with attempt+1, init containers first), prober_manager.go
UpdatePodStatus (ready from the readiness result) and kubelet_pods.go getPhase. kubectl's columns are
ported from pkg/printers/internalversion/printers_test.go#TestPrintPod, read at a later revision: its cases agree
with v1.27's printPod except for a deleted terminal pod, where v1.27 prints Terminating (kept here).
"""

from __future__ import annotations

import pytest
import yaml

from mini_kubelet.sim.lifecycle.replay import run_lifecycle

pytestmark = pytest.mark.ch1

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "x", "readinessProbe": {"exec": {"command": ["true"]}}}]}}


def replay(tmp_path, events, *, pods=None, duration="1m"):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"replay": "lifecycle", "duration": duration,
                                    "pods": pods or [{"manifest": POD}], "events": events}))
    return run_lifecycle(path)


def test_a_dead_sandbox_restarts_the_pod_in_a_new_sandbox(tmp_path):
    timeline = replay(tmp_path, [{"at": "10s", "sandboxDies": {"pod": "p"}}])
    assert [(e["time"], e["reason"]) for e in timeline.events if e["reason"] == "SandboxChanged"] == [(10, "SandboxChanged")]
    assert [(r.time, r.count, r.exit_code) for r in timeline.restarts] == [(11, 1, 143)]  # stopped, then started again
    assert timeline.at("p", 59).status == "Running"


def test_readiness_failure_makes_the_pod_not_ready_without_a_restart(tmp_path):
    timeline = replay(tmp_path, [{"at": "5s", "probe": {"pod": "p", "readiness": "success"}},
                                 {"at": "20s", "probe": {"pod": "p", "readiness": "failure"}}])
    assert [(w.time, w.ready, w.status) for w in timeline.watch] == [
        (0, "0/1", "ContainerCreating"), (1, "0/1", "Running"), (5, "1/1", "Running"), (20, "0/1", "Running")]
    assert timeline.restarts == [] and not any(e["reason"] == "Unhealthy" for e in timeline.events[:-1])
    assert timeline.events[-1]["message"] == "Readiness probe failed:"


def test_an_event_with_nothing_to_act_on_is_noted(tmp_path):
    timeline = replay(tmp_path, [{"at": "10s", "exit": {"pod": "p", "code": 0}},
                                 {"at": "10s", "crash": {"pod": "p"}}])
    notes = [h["text"] for h in timeline.happenings]
    assert notes[0] == "p: container c exits with code 0"
    assert notes[1] == "events[1] (crash) had no effect: no running container 'c' in pod p"


def test_a_pod_that_arrives_later(tmp_path):
    pods = [{"manifest": POD}, {"manifest": {**POD, "metadata": {"name": "q"}}, "at": "30s"}]
    timeline = replay(tmp_path, [], pods=pods)
    assert [(w.time, w.pod) for w in timeline.watch if w.status == "ContainerCreating"] == [(0, "p"), (30, "q")]


def test_a_failed_init_container_fails_a_never_pod(tmp_path):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"restartPolicy": "Never", "initContainers": [{"name": "init", "image": "x"}],
                    "containers": [{"name": "c", "image": "x"}]}}
    timeline = replay(tmp_path, [], pods=[{"manifest": pod, "run": {"init": {"after": "3s", "exitCode": 1}}}])
    assert timeline.final["p"]["phase"] == "Failed"
    assert [w.status for w in timeline.watch][-1] == "Init:Error"
    assert not any(e["container"] == "c" for e in timeline.events)  # the app container never started


def _cs(ready=False, restarts=0, state=None):
    from kubernetes.client import V1ContainerStatus
    return V1ContainerStatus(name="c", image="x", image_id="", ready=ready, restart_count=restarts, state=state)


def _pod(containers, inits=0, deleting=False):
    from kubernetes.client import V1Container, V1ObjectMeta, V1Pod, V1PodSpec
    return V1Pod(metadata=V1ObjectMeta(name="p", deletion_timestamp="2024-01-01T00:00:00Z" if deleting else None),
                 spec=V1PodSpec(containers=[V1Container(name=f"c{i}") for i in range(containers)],
                                init_containers=[V1Container(name=f"i{i}") for i in range(inits)] or None))


def _printer_cases():
    from kubernetes.client import (V1ContainerState, V1ContainerStateRunning, V1ContainerStateTerminated,
                                   V1ContainerStateWaiting, V1PodCondition, V1PodStatus)
    running = V1ContainerState(running=V1ContainerStateRunning())
    waiting = lambda reason=None: V1ContainerState(waiting=V1ContainerStateWaiting(reason=reason))  # noqa: E731
    done = lambda reason=None, code=0: V1ContainerState(terminated=V1ContainerStateTerminated(  # noqa: E731
        reason=reason, exit_code=code))
    ready = [V1PodCondition(type="Ready", status="True")]
    return [  # (name, pod, status, (READY, STATUS, RESTARTS))
        ("test1", _pod(2), V1PodStatus(phase="podPhase", container_statuses=[
            _cs(True, 3, running), _cs(restarts=3)]), ("1/2", "podPhase", 6)),
        ("test2", _pod(2), V1PodStatus(phase="podPhase", container_statuses=[
            _cs(True, 3, running), _cs(restarts=3, state=waiting("ContainerWaitingReason"))]),
         ("1/2", "ContainerWaitingReason", 6)),
        ("test3", _pod(2), V1PodStatus(phase="podPhase", container_statuses=[
            _cs(restarts=3, state=waiting("ContainerWaitingReason")),
            _cs(restarts=3, state=done("ContainerTerminatedReason"))]), ("0/2", "ContainerWaitingReason", 6)),
        ("test4", _pod(2), V1PodStatus(phase="podPhase", container_statuses=[
            _cs(True, 3, running), _cs(True, 3)]), ("1/2", "podPhase", 6)),
        ("test5", _pod(2), V1PodStatus(phase="podPhase", reason="podReason", container_statuses=[
            _cs(True, 3, running), _cs(True, 3)]), ("1/2", "podReason", 6)),
        ("test6 without ready", _pod(2), V1PodStatus(phase="Running", container_statuses=[
            _cs(True, 3, done("Completed")), _cs(True, 3, running)]), ("1/2", "NotReady", 6)),
        ("test6 with ready", _pod(2), V1PodStatus(phase="Running", conditions=ready, container_statuses=[
            _cs(True, 3, done("Completed")), _cs(True, 3, running)]), ("1/2", "Running", 6)),
        ("test7", _pod(1, 1), V1PodStatus(phase="podPhase", init_container_statuses=[_cs(restarts=3, state=running)],
                                          container_statuses=[_cs(state=waiting())]), ("0/1", "Init:0/1", 3)),
        ("test8", _pod(1, 2), V1PodStatus(phase="podPhase", init_container_statuses=[
            _cs(restarts=3, state=running), _cs(state=waiting())], container_statuses=[_cs(state=waiting())]),
         ("0/1", "Init:0/2", 3)),
        ("test9", _pod(1, 2), V1PodStatus(phase="podPhase", init_container_statuses=[
            _cs(state=done()), _cs(restarts=3, state=running)], container_statuses=[_cs(state=waiting())]),
         ("0/1", "Init:1/2", 3)),
        ("test10", _pod(1, 2), V1PodStatus(phase="podPhase", init_container_statuses=[
            _cs(restarts=2, state=done()), _cs(restarts=3, state=running)], container_statuses=[_cs(state=waiting())]),
         ("0/1", "Init:1/2", 5)),
        ("test11", _pod(1, 1), V1PodStatus(phase="Running", init_container_statuses=[_cs(restarts=2, state=done())],
                                           container_statuses=[_cs(restarts=4, state=running)]), ("0/1", "Running", 4)),
        ("test16", _pod(1), V1PodStatus(phase="Succeeded", container_statuses=[_cs(state=done("Completed"))]),
         ("0/1", "Completed", 0)),
        ("test17", _pod(1), V1PodStatus(phase="Failed", container_statuses=[_cs(state=done("Error", 1))]),
         ("0/1", "Error", 0)),
        # v1.27 prints Terminating for any deleted pod; later kubectl prints Completed/Error for a terminal one
        ("test18 (v1.27)", _pod(1, deleting=True), V1PodStatus(phase="Succeeded", container_statuses=[
            _cs(state=done("Completed"))]), ("0/1", "Terminating", 0)),
    ]


@pytest.mark.parametrize("case", _printer_cases(), ids=lambda c: c[0])
def test_print_pod(case):
    """printers_test.go#TestPrintPod (its READY, STATUS and RESTARTS cells, without the "(10s ago)")."""
    from mini_kubelet.sim.lifecycle.timeline import print_pod

    _, pod, status, expected = case
    assert print_pod(pod, status) == expected


def test_the_file_source_refuses_an_alias_bomb(tmp_path):
    """config/file.py reads YAML through api.parse_yaml_documents: a manifest that expands past any real one
    is not read (the kubelet logs it and carries on with the other files)."""
    from mini_kubelet import api
    from mini_kubelet.config.file import SourceFile

    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join('*' + p for _ in range(10))}]\n" for p, c in zip("abcdefg", "bcdefgh"))
    (tmp_path / "bomb.yaml").write_text(bomb)
    (tmp_path / "ok.yaml").write_text(yaml.safe_dump(POD))
    updates = []
    source = SourceFile(str(tmp_path), "node-1", updates.append)
    assert source.list_config() is None
    assert [p.metadata.name for p in updates[-1].pods] == ["p-node-1"]
    assert source.log == [f"Could not process manifest file: {tmp_path / 'bomb.yaml'}: more than "
                          f"{api.MAX_NODES} values once YAML aliases "
                          "are expanded: not read"]


def test_a_pod_the_node_cannot_fit_is_rejected_and_failed(tmp_path):
    """kubelet.go HandlePodAdditions → canAdmitPod → rejectPod: a Warning event and phase Failed, never run."""
    big = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"memory": "64Gi"}}}]}}
    timeline = replay(tmp_path, [], pods=[{"manifest": big}], duration="10s")
    # mergePodStatus holds the terminal phase back while the pod could have running containers, which the pod
    # workers say of every pod until the first housekeeping (SyncKnownPods, at 2 s)
    assert [(w.time, w.status, w.phase) for w in timeline.watch] == [(0, "Pending", "Pending"),
                                                                     (2, "OutOfmemory", "Failed")]
    [event] = timeline.events
    assert (event["type"], event["reason"]) == ("Warning", "OutOfmemory")
    assert event["message"].startswith("Node didn't have enough resource: memory")
    assert timeline.final["big"]["message"].startswith("Pod was rejected: Node didn't have enough resource: memory")
