"""Chapter 1: activeDeadlineSeconds, the deadline that fails a Pod with DeadlineExceeded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from kubernetes.client import V1Container, V1ObjectMeta, V1Pod, V1PodSpec, V1PodStatus

from mini_kubelet.active_deadline import MESSAGE, REASON, ActiveDeadlineHandler
from mini_kubelet.clock import Clock
from mini_kubelet.container import PodStatus, Status
from mini_kubelet.events import Recorder
from mini_kubelet.kubelet_pods import generate_api_pod_status

pytestmark = pytest.mark.ch1


def test_active_deadline_handler():
    """active_deadline_test.go#TestActiveDeadlineHandler: started a minute ago; deadlines 30 s, 120 s, none, and no start time."""
    clock = Clock()
    start = clock.now() - timedelta(minutes=1)
    pods = [V1Pod(metadata=V1ObjectMeta(uid=f"uid{i}", name=f"pod{i}", namespace="ns"),
                  spec=V1PodSpec(containers=[V1Container(name="c")]), status=V1PodStatus()) for i in range(4)]
    for p, deadline in zip(pods[:3], [30, 120, None]):
        p.status.start_time, p.spec.active_deadline_seconds = start, deadline
    statuses = {p.metadata.uid: p.status for p in pods}  # mockPodStatusProvider
    recorder = Recorder(clock)
    handler = ActiveDeadlineHandler(statuses.get, recorder, clock)
    for p, expected in zip(pods, [True, False, False, False]):
        assert handler.should_sync(p) is expected
        result = handler.should_evict(p)
        assert result.evict is expected
        if expected:
            assert (result.reason, result.message) == (REASON, MESSAGE)
    assert [(e.type, e.reason, e.message) for e in recorder.events] == [("Normal", "DeadlineExceeded", MESSAGE)]


def test_deadline_is_reached_at_exactly_the_deadline():
    """pastActiveDeadline compares with >=: at 30 s exactly the deadline has passed."""
    clock = Clock()
    pod = V1Pod(metadata=V1ObjectMeta(uid="u", name="p", namespace="ns"),
                spec=V1PodSpec(containers=[V1Container(name="c")], active_deadline_seconds=30),
                status=V1PodStatus(start_time=clock.now()))
    handler = ActiveDeadlineHandler(lambda uid: None, Recorder(), clock)
    clock.advance(29)
    assert not handler.should_sync(pod)
    clock.advance(1)
    assert handler.should_sync(pod)


def test_message_constants():
    assert REASON == "DeadlineExceeded"
    assert MESSAGE == "Pod was active on the node longer than the specified deadline"


def test_generated_status_is_failed_with_deadline_exceeded():
    """generateAPIPodStatus asks each PodSyncHandler: past the deadline the running pod's phase is Failed."""
    clock = Clock()
    pod = V1Pod(metadata=V1ObjectMeta(uid="u", name="p", namespace="ns"),
                spec=V1PodSpec(containers=[V1Container(name="c", image="i")], active_deadline_seconds=60, restart_policy="Always"),
                status=V1PodStatus(phase="Running", start_time=clock.now()))
    runtime = PodStatus(id="u", name="p", namespace="ns", container_statuses=[
        Status(id="ct-1", name="c", state="running", created_at=clock.now(), started_at=clock.now())])
    handler = ActiveDeadlineHandler(lambda uid: None, Recorder(), clock)
    assert generate_api_pod_status(pod, runtime, False, pod_sync_handlers=[handler]).phase == "Running"
    clock.advance(60)
    s = generate_api_pod_status(pod, runtime, False, pod_sync_handlers=[handler])
    assert (s.phase, s.reason, s.message) == ("Failed", REASON, MESSAGE)
