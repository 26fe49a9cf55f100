"""Chapter 1: the lifecycle events the examples do not show: a dead sandbox, a readiness result, an event
that finds nothing to act on, a Pod that arrives later, and the init-container restart rule.

What each must do comes from kuberuntime_manager.go computePodActions (podSandboxChanged: a sandbox that is not
ready means kill everything and start again with attempt+1, init containers first), prober_manager.go
UpdatePodStatus (ready from the readiness result) and kubelet_pods.go getPhase.
"""

from __future__ import annotations

import pytest
import yaml

from mini_kubelet.sim.lifecycle_replay import run_lifecycle

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
