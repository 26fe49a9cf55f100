"""Chapter 1: when the kubelet restarts a container, and the spec hash that makes a change a restart."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from kubernetes.client import V1Container, V1ObjectMeta, V1Pod, V1PodSpec

from mini_kubelet.container import (
    CONTAINER_STATE_EXITED,
    CONTAINER_STATE_RUNNING,
    CONTAINER_STATE_UNKNOWN,
    PodStatus,
    PodSyncResult,
    Status,
    SyncResult,
    hash_container,
    should_container_be_restarted,
)

pytestmark = pytest.mark.ch1

POLICIES = ["Never", "OnFailure", "Always"]

# pkg/kubelet/container/helpers_test.go#TestShouldContainerBeRestarted: the newest instance of each
# name comes first, so "alive" is running although an older instance exited 2, and "failed" exited 1.
STATUSES = [
    Status(id="", name="alive", state=CONTAINER_STATE_RUNNING),
    Status(id="", name="succeed", state=CONTAINER_STATE_EXITED, exit_code=0),
    Status(id="", name="failed", state=CONTAINER_STATE_EXITED, exit_code=1),
    Status(id="", name="alive", state=CONTAINER_STATE_EXITED, exit_code=2),
    Status(id="", name="unknown", state=CONTAINER_STATE_UNKNOWN),
    Status(id="", name="failed", state=CONTAINER_STATE_EXITED, exit_code=3),
]
EXPECTED = {  # per policy, in the order Never, OnFailure, Always
    "no-history": [True, True, True],
    "alive": [False, False, False],
    "succeed": [False, False, True],
    "failed": [False, True, True],
    "unknown": [True, True, True],
}


def _pod(policy: str, deleted: bool = False) -> V1Pod:
    meta = V1ObjectMeta(uid="12345678", name="foo", namespace="new",
                        deletion_timestamp=datetime(2023, 1, 1, tzinfo=timezone.utc) if deleted else None)
    return V1Pod(metadata=meta, spec=V1PodSpec(restart_policy=policy, containers=[V1Container(name=n) for n in EXPECTED]))


@pytest.mark.parametrize("name", EXPECTED)
@pytest.mark.parametrize("index, policy", list(enumerate(POLICIES)))
def test_should_container_be_restarted(name, index, policy):
    """helpers_test.go#TestShouldContainerBeRestarted, the policy table."""
    pod = _pod(policy)
    status = PodStatus(id="12345678", name="foo", namespace="new", container_statuses=STATUSES)
    assert should_container_be_restarted(V1Container(name=name), pod, status) is EXPECTED[name][index]


@pytest.mark.parametrize("name", EXPECTED)
@pytest.mark.parametrize("policy", POLICIES)
def test_deleted_pod_is_never_restarted(name, policy):
    """helpers_test.go#TestShouldContainerBeRestarted, the deleted-pod table: every answer is false."""
    status = PodStatus(id="12345678", name="foo", namespace="new", container_statuses=STATUSES)
    assert should_container_be_restarted(V1Container(name=name), _pod(policy, deleted=True), status) is False


def test_empty_restart_policy_restarts_like_always():
    """An unset policy is neither Never nor OnFailure, so an exited container restarts (derived from the code)."""
    status = PodStatus(id="u", name="p", namespace="n", container_statuses=STATUSES)
    assert should_container_be_restarted(V1Container(name="succeed"), _pod(None), status) is True


def test_hash_changes_with_the_spec_and_only_then():
    """Any change to the container spec gives a new hash; the same spec gives the same one."""
    base = V1Container(name="c", image="busybox:1.36", args=["sleep", "3600"])
    assert hash_container(base) == hash_container(V1Container(name="c", image="busybox:1.36", args=["sleep", "3600"]))
    assert hash_container(base) != hash_container(V1Container(name="c", image="busybox:1.37", args=["sleep", "3600"]))
    assert hash_container(base) != hash_container(V1Container(name="c", image="busybox:1.36", args=["sleep", "60"]))
    assert 0 <= hash_container(base) < 2**32


def test_pod_sync_result_error_message():
    """PodSyncResult.Error aggregates the failed actions; no failure means no error (sync_result.go)."""
    result = PodSyncResult()
    result.add_sync_result(SyncResult("StartContainer", "a"))
    assert result.error() is None
    failed = SyncResult("StartContainer", "b")
    failed.fail("CrashLoopBackOff", "back-off 10s restarting failed container=b pod=p_n(u)")
    result.add_sync_result(failed)
    assert result.error() == ('failed to "StartContainer" for "b" with CrashLoopBackOff: '
                              '"back-off 10s restarting failed container=b pod=p_n(u)"')
