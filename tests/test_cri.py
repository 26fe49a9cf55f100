"""Chapter 1: the simulated container runtime the kubelet drives (sandboxes, containers, exits on command)."""

from __future__ import annotations

import pytest
from kubernetes.client import V1Container, V1ObjectMeta, V1Pod, V1PodSpec

from mini_kubelet import container as kc
from mini_kubelet.clock import Clock
from mini_kubelet.cri import CRIError, RuntimeService

pytestmark = pytest.mark.ch1


def pod(uid="u1", name="web", host_network=None):
    return V1Pod(metadata=V1ObjectMeta(uid=uid, name=name, namespace="default"),
                 spec=V1PodSpec(containers=[V1Container(name="app", image="nginx:1.25")], host_network=host_network))


def started(runtime, p, attempt=0, restart_count=0):
    sandbox = runtime.run_pod_sandbox(p, attempt)
    cid = runtime.create_container(sandbox, p, p.spec.containers[0], restart_count)
    runtime.start_container(cid)
    return sandbox, cid


def test_ids_are_deterministic():
    """The same calls give the same IDs, in creation order."""
    ids = []
    for _ in range(2):
        runtime = RuntimeService(Clock())
        ids.append(started(runtime, pod()))
    assert ids[0] == ids[1] == ("sb-0001", "ct-0002")


@pytest.mark.parametrize("command, code, reason", [
    (lambda r: r.exit_container("u1", "app", 0), 0, "Completed"),
    (lambda r: r.exit_container("u1", "app", 2), 2, "Error"),
    (lambda r: r.crash_container("u1", "app"), 1, "Error"),
    (lambda r: r.oom_kill_container("u1", "app"), 137, "OOMKilled"),
])
def test_exits_on_command(command, code, reason):
    """Exit 0 is Completed, another code Error, an OOM kill exit 137 OOMKilled, all at the clock's time."""
    clock = Clock()
    runtime = RuntimeService(clock)
    started(runtime, pod())
    clock.advance(30)
    command(runtime)
    status = runtime.get_pod_status("u1").container_statuses[0]
    assert (status.state, status.exit_code, status.reason) == (kc.CONTAINER_STATE_EXITED, code, reason)
    assert status.finished_at == clock.now() and (status.finished_at - status.started_at).total_seconds() == 30


def test_commands_need_a_running_container():
    runtime = RuntimeService(Clock())
    with pytest.raises(CRIError):
        runtime.oom_kill_container("u1", "app")
    started(runtime, pod())
    with pytest.raises(ValueError):
        runtime.crash_container("u1", "app", 0)


def test_stop_is_sigterm_and_keeps_an_earlier_exit():
    """StopContainer ends a running container with 143 (SIGTERM); one that already exited keeps its code."""
    runtime = RuntimeService(Clock())
    _, cid = started(runtime, pod())
    runtime.stop_container(cid, 30)
    assert runtime.containers[cid].exit_code == 143
    _, cid2 = started(runtime, pod(uid="u2"))
    runtime.oom_kill_container("u2", "app")
    runtime.stop_container(cid2, 30)
    assert (runtime.containers[cid2].exit_code, runtime.containers[cid2].reason) == (137, "OOMKilled")


def test_pod_status_lists_newest_first_and_ips_of_a_ready_sandbox():
    """GetPodStatus: sandboxes and container instances newest first; the IP only while the newest sandbox is ready."""
    clock = Clock()
    runtime = RuntimeService(clock)
    p = pod()
    sandbox, first = started(runtime, p)
    runtime.crash_container("u1", "app")
    clock.advance(10)
    second = runtime.create_container(sandbox, p, p.spec.containers[0], 1)
    runtime.start_container(second)
    status = runtime.get_pod_status("u1")
    assert [s.id for s in status.container_statuses] == [second, first]
    assert [s.restart_count for s in status.container_statuses] == [1, 0]
    assert status.ips == ["10.244.0.3"] and (status.name, status.namespace) == ("web", "default")
    assert status.container_statuses[0].hash == kc.hash_container(p.spec.containers[0])
    runtime.kill_sandbox("u1")
    status = runtime.get_pod_status("u1")
    assert status.ips == [] and status.sandbox_statuses[0].state == kc.SANDBOX_NOTREADY
    assert status.get_running_container_statuses()[0].id == second, "a dead sandbox leaves its containers to the kubelet"


def test_host_network_sandbox_has_no_pod_ip():
    runtime = RuntimeService(Clock())
    started(runtime, pod(host_network=True))
    status = runtime.get_pod_status("u1")
    assert status.ips == [] and status.sandbox_statuses[0].host_network is True


def test_get_pods_for_the_pleg():
    """GetPods(all): every pod with all its containers (exited too) and sandboxes, newest pod first."""
    clock = Clock()
    runtime = RuntimeService(clock)
    started(runtime, pod("u1", "older"))
    runtime.exit_container("u1", "app", 0)
    clock.advance(5)
    started(runtime, pod("u2", "newer"))
    pods = runtime.get_pods()
    assert [(p.id, p.name) for p in pods] == [("u2", "newer"), ("u1", "older")]
    assert [(c.name, c.state) for c in pods[1].containers] == [("app", kc.CONTAINER_STATE_EXITED)]
    assert [s.state for s in pods[0].sandboxes] == [kc.CONTAINER_STATE_RUNNING]


def test_remove_sandbox_removes_its_containers():
    runtime = RuntimeService(Clock())
    sandbox, _ = started(runtime, pod())
    runtime.remove_pod_sandbox(sandbox)
    assert runtime.get_pods() == [] and runtime.get_pod_status("u1").container_statuses == []


def test_injected_error_fails_once():
    runtime = RuntimeService(Clock())
    runtime.inject_error("StartContainer", "oci runtime error")
    with pytest.raises(CRIError, match="oci runtime error"):
        started(runtime, pod())
    started(runtime, pod(uid="u2"))
