"""Chapter 1: the generic PLEG's relist, its events and its health.

Ported from pkg/kubelet/pleg/generic_test.go (read at kubernetes/kubernetes@01bed6b0, whose relist logic is the
same as v1.27's generic.go): TestRelisting, TestEventChannelFull, TestDetectingContainerDeaths,
TestRelistWithCache, TestRemoveCacheEntry, TestHealthy, TestRelistWithReinspection,
TestRelistingWithSandboxes, TestRelistIPChange. Not ported: TestRunningPodAndContainerCount (Prometheus
metrics) and TestCacheWithEventedPLEG (the EventedPLEG gate, alpha and off in v1.27).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mini_kubelet.clock import Clock
from mini_kubelet.container import (CONTAINER_STATE_CREATED, CONTAINER_STATE_EXITED, CONTAINER_STATE_RUNNING,
                                    CONTAINER_STATE_UNKNOWN, Container, Pod, PodStatus, Status)
from mini_kubelet.container_cache import Cache
from mini_kubelet.pleg import (CONTAINER_DIED, CONTAINER_REMOVED, CONTAINER_STARTED, GENERIC_PLEG_RELIST_PERIOD,
                               GENERIC_PLEG_RELIST_THRESHOLD, PLEG_CHANNEL_CAPACITY, GenericPLEG,
                               convert_state, generate_events)

pytestmark = pytest.mark.ch1
EXITED, RUNNING, UNKNOWN = CONTAINER_STATE_EXITED, CONTAINER_STATE_RUNNING, CONTAINER_STATE_UNKNOWN


def pod(uid, *containers, sandboxes=()):
    return Pod(id=uid, name="", namespace="", containers=[Container(id=c, name=c, state=s) for c, s in containers],
               sandboxes=[Container(id=c, name=c, state=s) for c, s in sandboxes])


def events(*triples):
    """Expected events as (pod ID, type, container ID), sorted as verifyEvents sorts."""
    return sorted(triples, key=lambda e: (e[0], e[2]))


def drain(ch):
    """generic_test.go getEventsFromChannel, sorted as verifyEvents sorts (by pod ID, then container ID)."""
    got = [(e.id, e.type, e.data) for e in ch]
    ch.clear()
    return sorted(got, key=lambda e: (e[0], e[2]))


class Runtime:
    """The fake runtime: the pods GetPods returns, and per-pod GetPodStatus answers (or errors)."""

    def __init__(self):
        self.pods, self.statuses = [], {}

    def get_pod_status(self, uid, name, namespace):
        answer = self.statuses[uid]
        if isinstance(answer, Exception):
            raise answer
        return answer


def new_pleg(capacity=100, cache=False):
    runtime, clock = Runtime(), Clock(datetime(2023, 1, 1, tzinfo=timezone.utc))
    pleg = GenericPLEG(lambda: runtime.pods, clock, get_pod_status=runtime.get_pod_status,
                       cache=Cache() if cache else None, capacity=capacity)
    return pleg, runtime, clock


FIRST = [pod("1234", ("c1", EXITED), ("c2", RUNNING), ("c3", UNKNOWN)), pod("4567", ("c1", EXITED))]
SECOND = [pod("1234", ("c2", EXITED), ("c3", RUNNING)), pod("4567", ("c4", RUNNING))]
FIRST_EVENTS = events(("1234", CONTAINER_STARTED, "c2"), ("4567", CONTAINER_DIED, "c1"), ("1234", CONTAINER_DIED, "c1"))
SECOND_EVENTS = events(("1234", CONTAINER_REMOVED, "c1"), ("1234", CONTAINER_DIED, "c2"),
                       ("1234", CONTAINER_STARTED, "c3"), ("4567", CONTAINER_REMOVED, "c1"),
                       ("4567", CONTAINER_STARTED, "c4"))


def test_constants():
    """kubelet.go: genericPlegRelistPeriod 1 s, genericPlegRelistThreshold 3 min, plegChannelCapacity 1000."""
    assert (GENERIC_PLEG_RELIST_PERIOD, GENERIC_PLEG_RELIST_THRESHOLD, PLEG_CHANNEL_CAPACITY) == (
        timedelta(seconds=1), timedelta(minutes=3), 1000)


def test_relisting():
    """generic_test.go#TestRelisting"""
    pleg, runtime, _ = new_pleg()
    runtime.pods = FIRST
    pleg.relist()
    assert drain(pleg.watch()) == FIRST_EVENTS  # every running or exited container seen for the first time
    pleg.relist()
    assert drain(pleg.watch()) == []  # nothing changed
    runtime.pods = SECOND
    pleg.relist()
    assert drain(pleg.watch()) == SECOND_EVENTS


def test_relisting_with_sandboxes():
    """generic_test.go#TestRelistingWithSandboxes: sandboxes are tracked like containers."""
    pleg, runtime, _ = new_pleg()
    runtime.pods = [Pod(id=p.id, name="", namespace="", sandboxes=p.containers) for p in FIRST]
    pleg.relist()
    assert drain(pleg.watch()) == FIRST_EVENTS
    runtime.pods = [Pod(id=p.id, name="", namespace="", sandboxes=p.containers) for p in SECOND]
    pleg.relist()
    assert drain(pleg.watch()) == SECOND_EVENTS


def test_event_channel_full():
    """generic_test.go#TestEventChannelFull: with room for 4 events, the fifth is dropped."""
    pleg, runtime, _ = new_pleg(capacity=4)
    runtime.pods = FIRST
    pleg.relist()
    assert drain(pleg.watch()) == FIRST_EVENTS
    runtime.pods = SECOND
    pleg.relist()
    got = drain(pleg.watch())
    assert len(got) == 4 and set(got) <= set(SECOND_EVENTS) and pleg.discarded_events == 1


@pytest.mark.parametrize("num_relists", [1, 3])
def test_detecting_container_deaths(num_relists):
    """generic_test.go#TestDetectingContainerDeaths (testReportMissingContainers and testReportMissingPods)."""
    pleg, runtime, _ = new_pleg()
    runtime.pods = [pod("1234", ("c1", RUNNING), ("c2", RUNNING), ("c3", EXITED))]
    for _ in range(num_relists):
        pleg.relist()
        drain(pleg.watch())
    runtime.pods = [pod("1234", ("c1", RUNNING))]  # c2 stopped and removed between relists, c3 collected
    pleg.relist()
    assert drain(pleg.watch()) == events(("1234", CONTAINER_DIED, "c2"), ("1234", CONTAINER_REMOVED, "c2"),
                                         ("1234", CONTAINER_REMOVED, "c3"))
    pleg, runtime, _ = new_pleg()
    runtime.pods = [pod("1234", ("c2", RUNNING))]
    for _ in range(num_relists):
        pleg.relist()
        drain(pleg.watch())
    runtime.pods = []  # the whole pod is gone
    pleg.relist()
    assert drain(pleg.watch()) == events(("1234", CONTAINER_DIED, "c2"), ("1234", CONTAINER_REMOVED, "c2"))


def running_pods(n):
    """generic_test.go createTestPodsStatusesAndEvents"""
    pods = [pod(f"test-pod-{i}", (f"c{i}", RUNNING)) for i in range(n)]
    statuses = [PodStatus(id=p.id, name="", namespace="", container_statuses=[
        Status(id=p.containers[0].id, name="", state=RUNNING)]) for p in pods]
    return pods, statuses


def test_relist_with_cache():
    """generic_test.go#TestRelistWithCache: a pod whose status cannot be read sends no event until it can."""
    pleg, runtime, _ = new_pleg(cache=True)
    (p0, p1), (s0, s1) = running_pods(2)
    runtime.pods, error = [p0, p1], RuntimeError("unable to get status")
    runtime.statuses = {p0.id: s0, p1.id: error}
    pleg.relist()
    assert drain(pleg.watch()) == [(p0.id, CONTAINER_STARTED, "c0")]
    assert pleg.cache.get(p0.id).status is s0 and pleg.cache.get(p0.id).err is None
    assert pleg.cache.get(p1.id).err is error
    runtime.statuses[p1.id] = s1
    pleg.relist()
    assert drain(pleg.watch()) == [(p1.id, CONTAINER_STARTED, "c1")]
    assert pleg.cache.get(p1.id).status is s1 and pleg.cache.get(p1.id).err is None


def test_remove_cache_entry():
    """generic_test.go#TestRemoveCacheEntry: a pod gone from the runtime leaves the cache (an empty status)."""
    pleg, runtime, _ = new_pleg(cache=True)
    (p0,), (s0,) = running_pods(1)
    runtime.pods, runtime.statuses = [p0], {p0.id: s0}
    pleg.relist()
    runtime.pods = []
    pleg.relist()
    data = pleg.cache.get(p0.id)
    assert (data.status.id, data.status.container_statuses, data.err) == (p0.id, [], None)


def test_relist_with_reinspection():
    """generic_test.go#TestRelistWithReinspection: a failed inspection is retried, with no duplicate event."""
    pleg, runtime, _ = new_pleg(cache=True)
    good = PodStatus(id="test-pod", name="", namespace="", container_statuses=[Status(id="infra", name="", state=RUNNING)])
    runtime.pods, runtime.statuses = [pod("test-pod", ("infra", RUNNING))], {"test-pod": good}
    pleg.relist()
    assert drain(pleg.watch()) == [("test-pod", CONTAINER_STARTED, "infra")]
    runtime.pods = [pod("test-pod", ("infra", RUNNING), ("transient", UNKNOWN))]
    runtime.statuses["test-pod"] = RuntimeError("inspection error")
    pleg.relist()
    assert drain(pleg.watch()) == [] and str(pleg.cache.get("test-pod").err) == "inspection error"
    runtime.pods, runtime.statuses["test-pod"] = [pod("test-pod", ("infra", RUNNING))], good
    pleg.relist()
    assert drain(pleg.watch()) == [] and pleg.cache.get("test-pod").status is good


def test_relist_ip_change():
    """generic_test.go#TestRelistIPChange: a dead pod keeps the IPs it had."""
    for ips in (["192.168.1.5"], ["192.168.1.5/24", "2000::"]):
        pleg, runtime, _ = new_pleg(cache=True)
        runtime.pods = [pod("p", ("c0", RUNNING))]
        runtime.statuses = {"p": PodStatus(id="p", name="", namespace="", ips=list(ips))}
        pleg.relist()
        assert drain(pleg.watch()) == [("p", CONTAINER_STARTED, "c0")]
        runtime.pods = [pod("p", ("c0", EXITED))]
        runtime.statuses = {"p": PodStatus(id="p", name="", namespace="")}
        pleg.relist()
        assert drain(pleg.watch()) == [("p", CONTAINER_DIED, "c0")] and pleg.cache.get("p").status.ips == ips


def test_healthy():
    """generic_test.go#TestHealthy"""
    pleg, _, clock = new_pleg()
    assert pleg.healthy() == (False, "pleg has yet to be successful")
    clock.advance(timedelta(minutes=10))
    assert not pleg.healthy()[0]
    pleg.relist()
    clock.advance(timedelta(minutes=1))
    assert pleg.healthy() == (True, None)
    clock.advance(GENERIC_PLEG_RELIST_THRESHOLD)
    assert pleg.healthy() == (False, "pleg was last seen active 4m0s ago; threshold is 3m0s")


def test_created_is_unknown_and_not_delivered():
    """convertState: created → unknown; generateEvents' ContainerChanged is never put on the channel."""
    assert convert_state(CONTAINER_STATE_CREATED) == "unknown"
    assert [e.type for e in generate_events("p", "c", "running", "unknown")] == ["ContainerChanged"]
    pleg, runtime, _ = new_pleg()
    runtime.pods = [pod("p", ("c", RUNNING))]
    pleg.relist()
    drain(pleg.watch())
    runtime.pods = [pod("p", ("c", CONTAINER_STATE_CREATED))]
    pleg.relist()
    assert drain(pleg.watch()) == []


def test_relist_timestamp_unblocks_waiters():
    """Relist: the cache's global timestamp moves after every relist, waking a pod worker waiting in GetNewerThan."""
    pleg, runtime, clock = new_pleg(cache=True)
    woken = []
    pleg.cache.subscribe("nobody", clock.now(), woken.append)
    clock.advance(1)
    pleg.relist()
    assert len(woken) == 1 and woken[0].status.id == "nobody" and pleg.cache.timestamp == clock.now()


# v1.36.5 pkg/kubelet/pleg/generic_test.go TestReinspect: (requested, already listed for reinspection, inspection
# error, reinspection still wanted after the relist, a PodSync sent). Its last row (the Pod gone from the runtime)
# is not ported: the retry reads the Pod object it kept, as v1.27's does, where v1.36 drops the cache entry.
REINSPECT = [
    pytest.param(True, False, None, False, True, id="requested, not listed before, success"),
    pytest.param(True, False, RuntimeError("fail"), True, False, id="requested, not listed before, failure"),
    pytest.param(True, True, None, False, True, id="requested and already listed, success"),
    pytest.param(True, True, RuntimeError("fail"), True, False, id="requested and already listed, failure"),
    pytest.param(False, False, None, False, False, id="not requested"),
    pytest.param(False, True, None, False, True, id="not requested, already listed, success"),
    pytest.param(False, True, RuntimeError("fail"), True, False, id="not requested, already listed, failure"),
]


@pytest.mark.parametrize("requested, listed, error, still_wanted, pod_sync", REINSPECT)
def test_reinspect_v1_36(requested, listed, error, still_wanted, pod_sync):
    """A Pod whose status is read again, asked for (RequestReinspect, as a resize does) or after a failed
    inspection, gets a PodSync in v1.36 once the reading succeeds; its containers need not have changed."""
    from mini_kubelet.features import release_profile
    from mini_kubelet.pleg import POD_SYNC

    with release_profile("1.36"):
        pleg, runtime, _ = new_pleg(cache=True)
        same = pod("test-pod")
        runtime.pods, runtime.statuses = [same], {"test-pod": PodStatus(id="test-pod", name="name", namespace="ns")}
        pleg.relist()  # podRecords holds the Pod, unchanged from now on
        if listed:  # a failed inspection before
            pleg.pods_to_reinspect["test-pod"] = same
        if requested:
            pleg.request_reinspect("test-pod")
        if error is not None:
            runtime.statuses["test-pod"] = error
        status = runtime.statuses["test-pod"]
        pleg.relist()
        wanted = "test-pod" in pleg.pods_to_reinspect or "test-pod" in pleg.reinspect_requested
        assert (wanted, drain(pleg.watch())) == (still_wanted, [("test-pod", POD_SYNC, "")] if pod_sync else [])
        if requested or listed:
            cached = pleg.cache.get("test-pod")
            assert cached.err is error and (error is not None or cached.status is status)


def test_reinspect_is_v1_36s():
    """Under v1.27 a failed inspection retried sends no event (TestRelistWithReinspection above, at v1.27)."""
    pleg, runtime, _ = new_pleg(cache=True)
    runtime.pods, runtime.statuses = [pod("test-pod")], {"test-pod": PodStatus(id="test-pod", name="", namespace="")}
    pleg.relist()
    pleg.pods_to_reinspect["test-pod"] = runtime.pods[0]
    pleg.relist()
    assert drain(pleg.watch()) == []
