"""Chapter 3 on v1.36: in-place resize on the node, ported from pkg/kubelet/kuberuntime/kuberuntime_manager_test.go.

The tables come from TestComputePodActionsForPodResize, TestUpdatePodContainerResources, TestDoPodResizeAction and
TestValidatePodResizeAction as read in KevinTMtz/kubernetes at commit 65dc8c5997a12e4e2e019ecbf2de41a54b07b3e9, a
fork between 1.35 and 1.36 (its computePodActions has no restartAllContainers argument yet; it has the pod-level
resize of KEP-5419). No stored copy of v1.36's own test file was found. What the fork cannot show, every case of
TestComputePodActionsForPodResize is also run through v1.36.5 itself (tests/test_differential_resize.py), and the
cases marked "v1.36.5" below are this course's, with what the differential harness answers.
Left out: the pod-level resize cases (InPlacePodLevelResourcesVerticalScaling, alpha and off) and the metrics.
"""

from __future__ import annotations

import pytest
from kubernetes.client import V1Container, V1ResourceRequirements

from mini_kubelet import api, features
from mini_kubelet.cm.cgroups import pod_cgroup_name, to_cgroupfs
from mini_kubelet.cm.helpers import ResourceConfig, milli_cpu_to_quota, milli_cpu_to_shares
from mini_kubelet.cm.pod_container_manager import PodContainerManager
from mini_kubelet.container import CONTAINER_STATE_RUNNING as RUNNING, hash_container
from mini_kubelet.clock import Clock
from mini_kubelet.cri import FakeContainer, RuntimeService
from mini_kubelet.kuberuntime.kuberuntime_manager import PodActions, compute_pod_actions
from mini_kubelet.kuberuntime.kuberuntime_resize import ContainerResources, ContainerToUpdateInfo
from mini_kubelet.kuberuntime.kuberuntime_resize_actuate import (
    ResizeState, do_pod_resize_action, update_pod_container_resources, validate_pod_resize_action,
)
from mini_kubelet.stats import ContainerStats, MemoryStats, PodStats

from .test_kuberuntime_manager import base_pod_and_status

pytestmark = pytest.mark.ch3

MI = 2**20
NOT_REQUIRED = {"cpu": "NotRequired", "memory": "NotRequired"}


def lim(cpu=None, memory=None, req_cpu=None, req_memory=None) -> dict:
    """A container's resources as JSON: limits, then requests; None leaves one out."""
    out = {}
    for kind, amounts in (("limits", (cpu, memory)), ("requests", (req_cpu, req_memory))):
        values = {name: amount for name, amount in zip(("cpu", "memory"), amounts) if amount is not None}
        if values:
            out[kind] = values
    return out


C = ContainerResources  # containerResources: memory_limit, memory_request (bytes), cpu_limit, cpu_request (m)


# TestComputePodActionsForPodResize: (container index, its resizePolicy, spec resources, actuated resources,
# expected updates {resource: (desired, current)}, restart expected). Every container starts with NotRequired.
COMPUTE_CASES = {
    "Update pod-level CPU and memory resources pod resize disabled":
        (1, NOT_REQUIRED, lim("100m", "100Mi"), lim("100m", "100Mi"), {}, False),
    "Update pod-level and container CPU and memory resources pod resize disabled":
        (1, NOT_REQUIRED, lim("100m", "100Mi"), lim("200m", "200Mi"),
         {r: (C(memory_limit=100 * MI, cpu_limit=100), C(memory_limit=200 * MI, cpu_limit=200)) for r in ("memory", "cpu")},
         False),
    "Update container CPU and memory resources":
        (1, NOT_REQUIRED, lim("100m", "100Mi"), lim("200m", "200Mi"),
         {r: (C(memory_limit=100 * MI, cpu_limit=100), C(memory_limit=200 * MI, cpu_limit=200)) for r in ("memory", "cpu")},
         False),
    "Update container CPU resources":
        (1, NOT_REQUIRED, lim("100m", "100Mi"), lim("200m", "100Mi"), {"cpu": (C(memory_limit=100 * MI, cpu_limit=100),
                                                                       C(memory_limit=100 * MI, cpu_limit=200))}, False),
    "Update container memory resources":
        (2, NOT_REQUIRED, lim("200m", "200Mi"), lim("200m", "100Mi"), {"memory": (C(memory_limit=200 * MI, cpu_limit=200),
                                                                          C(memory_limit=100 * MI, cpu_limit=200))}, False),
    "Nothing when spec.Resources and status.Resources are equal":
        (1, NOT_REQUIRED, lim("200m"), lim("200m"), {}, False),
    "Nothing when spec.Resources and status.Resources are equal (besteffort)": (1, NOT_REQUIRED, {}, {}, {}, False),
    "Update container CPU and memory resources with Restart policy for CPU":
        (0, {"cpu": "RestartContainer", "memory": "NotRequired"}, lim("200m", "200Mi"), lim("100m", "100Mi"), {}, True),
    "Update container CPU and memory resources with Restart policy for memory":
        (2, {"cpu": "NotRequired", "memory": "RestartContainer"}, lim("200m", "200Mi"), lim("100m", "100Mi"), {}, True),
    "Update container memory resources with Restart policy for CPU":
        (1, {"cpu": "RestartContainer", "memory": "NotRequired"}, lim("100m", "200Mi"), lim("100m", "100Mi"),
         {"memory": (C(memory_limit=200 * MI, cpu_limit=100), C(memory_limit=100 * MI, cpu_limit=100))}, False),
    "Update container CPU resources with Restart policy for memory":
        (2, {"cpu": "NotRequired", "memory": "RestartContainer"}, lim("200m", "100Mi"), lim("100m", "100Mi"),
         {"cpu": (C(memory_limit=100 * MI, cpu_limit=200), C(memory_limit=100 * MI, cpu_limit=100))}, False),
    "Update container memory (requests only) with RestartContainer policy for memory":
        (2, {"cpu": "NotRequired", "memory": "RestartContainer"}, lim("200m", "200Mi", "100m", "100Mi"),
         lim("200m", "200Mi", "100m", "200Mi"), {}, True),
    "Update container memory (requests only) with RestartNotRequired policy for memory":
        (2, NOT_REQUIRED, lim("200m", "200Mi", "100m", "100Mi"), lim("200m", "200Mi", "100m", "200Mi"),
         {"memory": (C(200 * MI, 100 * MI, 200, 100), C(200 * MI, 200 * MI, 200, 100))}, False),
    # v1.36.5 (not in the fork's table): no actuated record counts as no resources; a decrease goes first
    "v1.36.5: a container with no actuated record is resized from nothing":
        (0, NOT_REQUIRED, lim(req_cpu="100m"), None, {"cpu": (C(cpu_request=100), C())}, False),
}


def resize_pod(case: str) -> tuple[dict, dict]:
    """makeBasePodAndStatus as JSON (three running busybox containers, NotRequired for both resources) with the
    case's container resized, and the actuated resources recorded."""
    idx, policy, spec, actuated, _, _ = COMPUTE_CASES[case]
    containers = [{"name": f"foo{i}", "image": "busybox", "resources": {},
                   "resizePolicy": [{"resourceName": r, "restartPolicy": p} for r, p in NOT_REQUIRED.items()]}
                  for i in (1, 2, 3)]
    containers[idx]["resources"] = spec
    containers[idx]["resizePolicy"] = [{"resourceName": r, "restartPolicy": p} for r, p in policy.items()]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"uid": "12345678", "name": "foo", "namespace": "foo-ns"},
           "spec": {"containers": containers}}
    return pod, ({} if actuated is None else {f"foo{idx + 1}": actuated})


def actuated_state(record: dict, uid: str = "12345678") -> ResizeState:
    state = ResizeState()
    for name, resources in record.items():
        state.actuated.set_container_resources(uid, name, V1ResourceRequirements(**resources))
    return state


@pytest.mark.parametrize("case", COMPUTE_CASES)
def test_compute_pod_actions_for_pod_resize(case):
    idx, _, _, _, updates, restart = COMPUTE_CASES[case]
    doc, record = resize_pod(case)
    with features.release_profile("1.36"):
        pod = api.pod_from_manifest(doc)
        _, status = base_pod_and_status()
        for s, c in zip(status.container_statuses, pod.spec.containers):
            s.hash = hash_container(c)  # the spec with its resources is running
        actions = compute_pod_actions(pod, status, actuated=actuated_state(record).actuated)
    got = {r: [(i.desired_container_resources, i.current_container_resources) for i in infos]
           for r, infos in actions.containers_to_update.items()}
    assert got == {r: [pair] for r, pair in updates.items()}
    assert actions.update_pod_resources is restart
    assert actions.containers_to_start == ([idx] if restart else [])
    assert list(actions.containers_to_kill) == ([f"id{idx + 1}"] if restart else [])
    if restart:
        assert actions.containers_to_kill[f"id{idx + 1}"].message == f"Container foo{idx + 1} resize requires restart"


def test_compute_pod_actions_for_pod_resize_needs_the_gate():
    """v1.27: InPlacePodVerticalScaling is alpha and off: no resize actions, even with actuated resources."""
    doc, record = resize_pod("Update container CPU and memory resources")
    pod = api.pod_from_manifest(doc)
    _, status = base_pod_and_status()
    for s, c in zip(status.container_statuses, pod.spec.containers):
        s.hash = hash_container(c)
    actions = compute_pod_actions(pod, status, actuated=actuated_state(record).actuated)
    assert actions.containers_to_update is None and not actions.containers_to_kill and not actions.update_pod_resources


def test_decreases_are_applied_before_increases():
    """computePodResizeAction prepends a decrease and appends an increase, per resource, whatever the spec order."""
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"uid": "12345678", "name": "foo", "namespace": "foo-ns"},
           "spec": {"containers": [{"name": f"foo{i}", "image": "busybox", "resources": lim(cpu, memory)}
                                   for i, (cpu, memory) in enumerate((("300m", "300Mi"), ("100m", "100Mi"),
                                                                      ("300m", "50Mi")), 1)]}}
    record = {"foo1": lim("200m", "200Mi"), "foo2": lim("200m", "200Mi"), "foo3": lim("200m", "200Mi")}
    with features.release_profile("1.36"):
        pod = api.pod_from_manifest(doc)
        _, status = base_pod_and_status()
        for s, c in zip(status.container_statuses, pod.spec.containers):
            s.hash = hash_container(c)
        actions = compute_pod_actions(pod, status, actuated=actuated_state(record).actuated)
    assert [i.container.name for i in actions.containers_to_update["memory"]] == ["foo3", "foo2", "foo1"]
    assert [i.container.name for i in actions.containers_to_update["cpu"]] == ["foo2", "foo1", "foo3"]


# --- TestUpdatePodContainerResources ------------------------------------------------------------------------------


def _runtime_with(pod) -> RuntimeService:
    runtime = RuntimeService(Clock())
    for i, c in enumerate(pod.spec.containers + (pod.spec.init_containers or [])):
        runtime.containers[f"c{i}"] = FakeContainer(f"c{i}", "s0", pod.metadata.uid, c.name, "", 0, 0, Clock().now(),
                                                    state=RUNNING)
    return runtime


def _requirements(cpu: str, memory: str) -> V1ResourceRequirements:
    return V1ResourceRequirements(limits={"cpu": cpu, "memory": memory}, requests={"cpu": cpu, "memory": memory})


# (resource, spec resources, status resources, current limits and requests expected after) for three containers
UPDATE_CASES = {
    "Guaranteed QoS Pod - CPU & memory resize requested, update CPU": (
        "cpu", [("150m", "150Mi"), ("250m", "250Mi"), ("350m", "350Mi")],
        [("100m", "100Mi"), ("200m", "200Mi"), ("300m", "300Mi")], [(150, 100), (250, 200), (350, 300)]),
    "Guaranteed QoS Pod - CPU & memory resize requested, update memory": (
        "memory", [("150m", "150Mi"), ("250m", "250Mi"), ("350m", "350Mi")],
        [("100m", "100Mi"), ("200m", "200Mi"), ("300m", "300Mi")], [(100, 150), (200, 250), (300, 350)]),
}


@pytest.mark.parametrize("sidecars", [False, True], ids=["containers", "sidecars"])
@pytest.mark.parametrize("case", UPDATE_CASES)
def test_update_pod_container_resources(case, sidecars):
    resource, spec, status, expected = UPDATE_CASES[case]
    with features.release_profile("1.36"):
        names = [f"foo{i}" for i in (1, 2, 3)]
        pod, _ = base_pod_and_status()
        containers = [V1Container(name=n, image="busybox", restart_policy="Always" if sidecars else None,
                                  resources=_requirements(*spec[i])) for i, n in enumerate(names)]
        pod.spec.containers, pod.spec.init_containers = ([V1Container(name="app", image="busybox")], containers) \
            if sidecars else (containers, None)
        runtime = _runtime_with(pod)
        ids = {c.name: cid for cid, c in runtime.containers.items()}
        infos = [ContainerToUpdateInfo(c, ids[c.name], _numbers(*spec[i]), _numbers(*status[i]))
                 for i, c in enumerate(containers)]
        update_pod_container_resources(runtime, pod, resource, infos, ResizeState())
    assert {w.cgroup for w in runtime.cgroup_writes} == set(names)  # UpdateContainerResources for each
    mi = lambda n: n * MI  # noqa: E731
    assert [(i.current_container_resources.cpu_limit, i.current_container_resources.memory_limit) for i in infos] == \
        [(cpu, mi(memory)) for cpu, memory in expected]
    assert [(i.current_container_resources.cpu_request, i.current_container_resources.memory_request) for i in infos] == \
        [(cpu, mi(memory)) for cpu, memory in expected]


def _numbers(cpu: str, memory: str) -> ContainerResources:
    return ContainerResources(api.value(memory), api.value(memory), api.milli_value(cpu), api.milli_value(cpu))


def test_update_pod_container_resources_stops_at_the_first_failure():
    """updatePodContainerResources aborts on the first error, leaving later containers and current values alone."""
    with features.release_profile("1.36"):
        pod, _ = base_pod_and_status()
        for c in pod.spec.containers:
            c.resources = _requirements("200m", "200Mi")
        runtime = _runtime_with(pod)
        runtime.inject_error("UpdateContainerResources", "error updating container resources")
        infos = [ContainerToUpdateInfo(c, f"c{i}", _numbers("200m", "200Mi"), _numbers("100m", "100Mi"))
                 for i, c in enumerate(pod.spec.containers)]
        state = ResizeState()
        with pytest.raises(Exception, match="error updating container resources"):
            update_pod_container_resources(runtime, pod, "cpu", infos, state)
    assert runtime.cgroup_writes == [] and state.actuated.pods == {}
    assert all(i.current_container_resources.cpu_limit == 100 for i in infos)


# --- TestDoPodResizeAction ----------------------------------------------------------------------------------------

# (current, desired, resources updated, other containers have limits, runtime error, expected error message,
# expected pod cgroup updates). Resources are containerResources: cpu in millicores, memory in bytes.
DO_CASES = {
    "Increase cpu and memory requests and limits, with computed pod limits":
        (C(100, 100, 100, 100), C(200, 200, 200, 200), ("cpu", "memory"), True, None, "", 3),
    "Increase cpu and memory requests and limits, with computed pod limits and set a runtime error":
        (C(100, 100, 100, 100), C(200, 200, 200, 200), ("cpu", "memory"), True,
         "error updating container resources", "error updating container resources", 1),
    "Increase cpu and memory requests and limits, without computed pod limits":
        (C(100, 100, 100, 100), C(200, 200, 200, 200), ("cpu", "memory"), False, None, "", 1),
    "Increase cpu and memory requests only":
        (C(200, 100, 200, 100), C(200, 150, 200, 150), ("cpu",), False, None, "", 1),
    "Resize memory request no limits":
        (C(memory_request=100, cpu_request=100), C(memory_request=200, cpu_request=100), (), False, None, "", 0),
    "Resize cpu request no limits":
        (C(memory_request=100, cpu_request=100), C(memory_request=100, cpu_request=200), ("cpu",), False, None, "", 1),
    "Add limits": (C(memory_request=100, cpu_request=100), C(100, 100, 100, 100), ("cpu", "memory"), False, None, "", 0),
    "Add limits and pod limits":
        (C(memory_request=100, cpu_request=100), C(100, 100, 100, 100), ("cpu", "memory"), True, None, "", 2),
}


def do_case(case: str, cgroup_version: int = 1):
    """The case's pod, pod cgroup (its current values as upstream's mocked GetPodCgroupConfig returns them),
    usage stats (pod 20, first container 10), runtime and actions; then doPodResizeAction's result."""
    current, desired, updated, others, runtime_error, _, _ = DO_CASES[case]
    current, desired = ContainerResources(**vars(current)), ContainerResources(**vars(desired))  # the resize moves current
    pod, _ = base_pod_and_status()
    pod.spec.containers[0].resources = V1ResourceRequirements(
        requests={"cpu": f"{desired.cpu_request}m", "memory": str(desired.memory_request)},
        limits={"cpu": f"{desired.cpu_limit}m", "memory": str(desired.memory_limit)})
    if others:
        for c in pod.spec.containers[1:]:
            c.resources = V1ResourceRequirements(requests={"cpu": "100m", "memory": "100M"},
                                                 limits={"cpu": "100m", "memory": "100M"})
    extra = 200 if others else 0
    runtime = _runtime_with(pod)
    runtime.cgroup_version = cgroup_version
    pcm = PodContainerManager(cgroup_version=cgroup_version, writes=runtime.cgroup_writes)
    pcm.files[pod.metadata.uid] = {"memory.limit_in_bytes": str(current.memory_limit),
                                   "cpu.shares": str(milli_cpu_to_shares(current.cpu_request + extra)),
                                   "cpu.cfs_quota_us": str(milli_cpu_to_quota(current.cpu_limit + extra, 100000)),
                                   "cpu.cfs_period_us": "100000"}
    state = ResizeState(pod_cgroups=pcm, pod_stats={pod.metadata.uid: PodStats(
        memory=MemoryStats(usage_bytes=20), containers=[ContainerStats(name="foo1", memory=MemoryStats(usage_bytes=10))])})
    if runtime_error:
        runtime.inject_error("UpdateContainerResources", runtime_error)
    info = ContainerToUpdateInfo(pod.spec.containers[0], "c0", desired, current)
    result = do_pod_resize_action(runtime, pod, PodActions(containers_to_update={r: [info] for r in updated}), state)
    return pod, runtime, result


@pytest.mark.parametrize("case", DO_CASES)
def test_do_pod_resize_action(case):
    *_, message, pod_updates = DO_CASES[case]
    with features.release_profile("1.36"):
        pod, runtime, result = do_case(case)
    pod_cgroup = to_cgroupfs(pod_cgroup_name(pod, "Burstable" if not DO_CASES[case][3] else "Guaranteed"))
    calls = [w.file for w in runtime.cgroup_writes if w.cgroup.startswith("/kubepods") and w.file != "cpu.cfs_period_us"]
    assert len(calls) == pod_updates  # a cpu limit writes quota and period: one SetPodCgroupConfig
    assert (result.error, result.message) == (("ResizePodInPlaceError", message) if message else (None, ""))
    assert all(w.cgroup in (pod_cgroup, "foo1") for w in runtime.cgroup_writes)


def test_do_pod_resize_action_order_on_a_net_increase():
    """The pod cgroup grows before its container does: memory limit first, then cpu quota and shares."""
    with features.release_profile("1.36"):
        _, runtime, result = do_case("Increase cpu and memory requests and limits, with computed pod limits")
    assert result.error is None
    assert [(w.cgroup.rsplit("/", 1)[-1], w.file) for w in runtime.cgroup_writes] == [
        ("pod12345678", "memory.limit_in_bytes"),
        ("foo1", "cpu.shares"), ("foo1", "cpu.cfs_period_us"), ("foo1", "cpu.cfs_quota_us"), ("foo1", "memory.limit_in_bytes"),
        ("pod12345678", "cpu.cfs_period_us"), ("pod12345678", "cpu.cfs_quota_us"), ("pod12345678", "cpu.shares"),
        ("foo1", "cpu.shares"), ("foo1", "cpu.cfs_period_us"), ("foo1", "cpu.cfs_quota_us"), ("foo1", "memory.limit_in_bytes")]


def test_a_pod_cgroup_read_back_on_cgroup_v2_rounds_the_shares():
    """cgroup v2 keeps cpu.weight, not cpu.shares: 307 shares are weight 12, read back as 290 shares, so a resize
    writes the pod's cpu.weight again although nothing changed (upstream's mocked test cannot show this)."""
    with features.release_profile("1.36"):
        pod, _ = base_pod_and_status()
        pcm = PodContainerManager()
        pcm.ensure_exists(pod)
        pcm.set_pod_cgroup_config(pod, ResourceConfig(cpu_shares=307))
        assert pcm.files[pod.metadata.uid]["cpu.weight"] == "12"
        assert pcm.get_pod_cgroup_config(pod, "cpu").cpu_shares == 290  # (12 - 1) * 262142 // 9999 + 2
        assert pcm.get_pod_cgroup_config(pod, "memory").memory == -1  # "max"


# --- TestValidatePodResizeAction ----------------------------------------------------------------------------------

# (current, desired, current pod memory limit, desired pod memory limit, container usage, pod usage, error expected)
VALIDATE_CASES = {
    "Resize memory request no limits":
        (C(memory_request=100, cpu_request=100), C(memory_request=200, cpu_request=100), None, None, None, None, False),
    "Add container limits, low usage": (C(memory_request=100), C(100, 100), None, None, 10, 10, False),
    "Add container limits, high usage": (C(memory_request=100), C(100, 100), None, None, 200, 200, True),
    "Add container limits, missing container usage": (C(memory_request=100), C(100, 100), None, None, None, 10, True),
    "Add container limits, missing pod usage": (C(memory_request=100), C(100, 100), None, None, 10, None, False),
    "Increase container limits": (C(100, 100), C(200, 100), None, None, None, None, False),
    "Decrease container limits, low usage": (C(200, 100), C(100, 100), None, None, 20, 20, False),
    "Decrease container limits, high usage": (C(200, 100), C(100, 100), None, None, 150, 150, True),
    "Add pod limit, low usage": (C(100, 100), C(100, 100), None, 100, 20, 20, False),
    "Add pod limit, high usage": (C(100, 100), C(100, 100), None, 100, 20, 200, True),
    "Increase pod limits": (C(100, 100), C(100, 100), 100, 200, 20, 20, False),
    "Decrease pod limits, low usage": (C(100, 100), C(100, 100), 200, 100, 20, 20, False),
    "Decrease pod limits, high usage": (C(100, 100), C(100, 100), 200, 100, 50, 150, True),
    "Decrease pod limits, missing usage": (C(100, 100), C(100, 100), 200, 100, 50, None, True),
}


@pytest.mark.parametrize("case", VALIDATE_CASES)
def test_validate_pod_resize_action(case):
    current, desired, current_pod, desired_pod, container_usage, pod_usage, error = VALIDATE_CASES[case]
    with features.release_profile("1.36"):
        pod, _ = base_pod_and_status()
        info = ContainerToUpdateInfo(pod.spec.containers[0], "id1", desired, current)
        state = ResizeState(pod_stats={pod.metadata.uid: PodStats(memory=MemoryStats(usage_bytes=pod_usage), containers=[
            ContainerStats(name=c.name, memory=MemoryStats(usage_bytes=container_usage)) for c in pod.spec.containers])})
        found = validate_pod_resize_action(pod, ResourceConfig(memory=current_pod), ResourceConfig(memory=desired_pod),
                                           PodActions(containers_to_update={"memory": [info]}), state)
    assert (found is not None) is error
    if error:
        assert found.startswith("cannot decrease memory limits: ")


# --- SyncPod with a resize: the course's replays on the simulated runtime (not upstream tables) ---------------------


def replay_pod(a=("200m", "200Mi"), b=("100m", "100Mi"), b_memory_policy="NotRequired"):
    """Two Guaranteed containers; b's memory resize policy as given."""
    containers = [{"name": n, "image": "busybox", "resources": {"requests": dict(zip(("cpu", "memory"), r)),
                                                                "limits": dict(zip(("cpu", "memory"), r))}}
                  for n, r in (("a", a), ("b", b))]
    containers[1]["resizePolicy"] = [{"resourceName": "memory", "restartPolicy": b_memory_policy}]
    return api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default",
                                                                                  "uid": "u1"}, "spec": {"containers": containers}})


class Node:
    """A simulated runtime, and the runtime manager's resize state sharing its write log; sync() is one SyncPod."""

    def __init__(self):
        from mini_kubelet import events
        from mini_kubelet.flowcontrol import new_container_back_off
        self.clock = Clock()
        self.runtime = RuntimeService(self.clock)
        self.state = ResizeState(pod_cgroups=PodContainerManager(writes=self.runtime.cgroup_writes))
        self.back_off, self.recorder = new_container_back_off(self.clock), events.Recorder()

    def sync(self, pod):
        from mini_kubelet.kuberuntime.kuberuntime_manager import sync_pod
        self.state.pod_cgroups.ensure_exists(pod)  # the kubelet's SyncPod makes the pod cgroup first
        self.state.pod_stats[pod.metadata.uid] = PodStats(memory=MemoryStats(usage_bytes=10 * MI))
        status = self.runtime.get_pod_status(pod.metadata.uid, pod.metadata.name, pod.metadata.namespace)
        return sync_pod(self.runtime, pod, status, self.back_off, self.recorder, resize=self.state)

    def status(self, pod) -> dict:
        found = self.runtime.get_pod_status(pod.metadata.uid, actuated=self.state.actuated)
        return {s.name: s.resources for s in found.container_statuses if s.state == RUNNING}


def test_a_resize_replayed_writes_the_pod_cgroup_around_its_containers():
    """Net increase: the pod's memory.max grows first; b's memory shrinks before a's grows; then cpu likewise,
    the pod's cpu.max and cpu.weight before the containers. Every file the runtime sets is written, changed or not."""
    with features.release_profile("1.36"):
        node = Node()
        node.sync(replay_pod())
        assert node.runtime.cgroup_writes == []  # starting containers writes no resize log
        result = node.sync(replay_pod(("300m", "300Mi"), ("50m", "50Mi")))
        writes = [(w.cgroup, w.file) for w in node.runtime.cgroup_writes]
        pod_cgroup = "/kubepods/podu1"  # Guaranteed: right under kubepods
        assert writes == [(pod_cgroup, "memory.max"), ("b", "cpu.weight"), ("b", "cpu.max"), ("b", "memory.max"),
                          ("a", "cpu.weight"), ("a", "cpu.max"), ("a", "memory.max"),
                          (pod_cgroup, "cpu.max"), (pod_cgroup, "cpu.weight"),
                          ("b", "cpu.weight"), ("b", "cpu.max"), ("b", "memory.max"),
                          ("a", "cpu.weight"), ("a", "cpu.max"), ("a", "memory.max")]
        pod_memory = node.runtime.cgroup_writes[0]
        assert (pod_memory.old, pod_memory.new) == (str(300 * MI), str(350 * MI))
        assert [r.action for r in result.sync_results][-1] == "ResizePodInPlace" and result.error() is None
        assert node.status(replay_pod()) == {
            "a": kc_resources(300, 300 * MI), "b": kc_resources(50, 50 * MI)}  # the runtime reports the new values
        before = len(node.runtime.cgroup_writes)
        assert "ResizePodInPlace" not in [r.action for r in node.sync(replay_pod(("300m", "300Mi"), ("50m", "50Mi"))).sync_results]
        assert len(node.runtime.cgroup_writes) == before  # done: the next sync has nothing to resize


def kc_resources(cpu: int, memory: int):
    from mini_kubelet.container import ContainerResources as Reported
    return Reported(cpu_request=cpu, cpu_limit=cpu, memory_request=memory, memory_limit=memory)


def test_a_resize_that_fails_is_an_error_of_the_sync_and_is_retried():
    """An UpdateContainerResources error stops the resize (ResizePodInPlaceError); the actuated resources keep
    their old values, so the next sync tries again."""
    with features.release_profile("1.36"):
        node = Node()
        node.sync(replay_pod())
        node.runtime.inject_error("UpdateContainerResources", "runtime is busy")
        result = node.sync(replay_pod(("300m", "300Mi")))
        assert result.error() == 'failed to "ResizePodInPlace" for "web_default(u1)" with ResizePodInPlaceError: "runtime is busy"'
        assert node.status(replay_pod())["a"] == kc_resources(200, 200 * MI)
        assert node.sync(replay_pod(("300m", "300Mi"))).error() is None
        assert node.status(replay_pod())["a"] == kc_resources(300, 300 * MI)


def test_a_restart_container_resize_policy_restarts_it_with_the_new_resources():
    """b's memory policy is RestartContainer: b is killed, the pod cgroup shrinks, and b starts again with 50Mi.

    The cpu pass runs too (a restart resizes the whole pod cgroup): on cgroup v2 the pod's 307 shares read back
    from cpu.weight 12 as 290, fewer than wanted, so cpu.weight is written again, unchanged."""
    with features.release_profile("1.36"):
        node = Node()
        node.sync(replay_pod(b_memory_policy="RestartContainer"))
        result = node.sync(replay_pod(b=("100m", "50Mi"), b_memory_policy="RestartContainer"))
        assert [(r.action, r.target) for r in result.sync_results if r.action != "ConfigPodSandbox"] == [
            ("KillContainer", "b"), ("ResizePodInPlace", "web_default(u1)"), ("StartContainer", "b")]
        assert [(w.cgroup, w.file, w.old, w.new) for w in node.runtime.cgroup_writes] == [
            ("/kubepods/podu1", "memory.max", str(300 * MI), str(250 * MI)), ("/kubepods/podu1", "cpu.weight", "12", "12")]
        assert node.status(replay_pod())["b"] == kc_resources(100, 50 * MI)


def test_v1_27_has_no_resize_a_new_limit_restarts_the_container():
    """v1.27: the gate is off, so the spec change is a new container definition: kill and start, no resize."""
    node = Node()
    node.sync(replay_pod())
    result = node.sync(replay_pod(("300m", "300Mi")))
    assert [(r.action, r.target) for r in result.sync_results if r.action != "ConfigPodSandbox"] == [
        ("KillContainer", "a"), ("StartContainer", "a")]
    assert node.runtime.cgroup_writes == [] and node.state.actuated.pods == {}
    assert node.status(replay_pod()) == {"a": None, "b": None}  # no resources in the status without the gate


def test_a_running_init_container_is_resized_from_1_36():
    """v1.36 (InPlacePodVerticalScalingInitContainers, beta): the init container that runs is resized too, on the
    one-at-a-time path of a pod without sidecars; with the gate off it is left alone."""
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
           "spec": {"initContainers": [{"name": "setup", "image": "busybox", "resources": lim("200m", "200Mi")}],
                    "containers": [{"name": "app", "image": "busybox"}]}}
    for gates, resized in (({}, True), ({"InPlacePodVerticalScalingInitContainers": False}, False)):
        with features.release_profile("1.36", gates):
            node = Node()
            node.sync(api.pod_from_manifest(doc))
            resized_doc = {**doc, "spec": {**doc["spec"], "initContainers": [
                {"name": "setup", "image": "busybox", "resources": lim("300m", "300Mi")}]}}
            result = node.sync(api.pod_from_manifest(resized_doc))
        assert ("ResizePodInPlace" in [r.action for r in result.sync_results]) is resized
        assert {w.cgroup for w in node.runtime.cgroup_writes} == ({"setup"} if resized else set())


def test_the_resize_runs_before_any_container_starts_from_v1_36_4():
    """v1.36.4 moved doPodResizeAction before the first container start (#140387); 1.35 ran it after the init
    containers, just before the regular ones. A sidecar that exited restarts in the same sync as the resize."""
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
           "spec": {"initContainers": [{"name": "proxy", "image": "busybox", "restartPolicy": "Always"}],
                    "containers": [{"name": "app", "image": "busybox", "resources": lim("100m", "100Mi")}]}}
    resized = {**doc, "spec": {**doc["spec"], "containers": [{"name": "app", "image": "busybox",
                                                                 "resources": lim("200m", "200Mi")}]}}
    for release, order in (("1.36", ["ResizePodInPlace", "StartContainer"]), ("1.35", ["StartContainer", "ResizePodInPlace"])):
        with features.release_profile(release):
            node = Node()
            node.sync(api.pod_from_manifest(doc))  # the sidecar starts
            node.sync(api.pod_from_manifest(doc))  # then the app
            node.runtime.crash_container("u1", "proxy")
            result = node.sync(api.pod_from_manifest(resized))
        assert [r.action for r in result.sync_results if r.action in order] == order, release


# --- kuberuntime_manager_test.go#TestIsPodResizeInProgress, read in the v1.36.5 module source -----------------
# (allocated, actuated or None, kind, state): kind "" regular, "init" non-sidecar, "sidecar"; state "running",
# "exited" or "unstarted" (not in the runtime's status). Values: cpuReq, cpuLim (m), memReq, memLim (bytes), 0 unset.
# Left out: the rows with pod-level resources (no actuated pod-level resources are kept here).
R = (100, 200, 100, 200)
IN_PROGRESS = [
    ("simple running container", [((100, 100, 100, 100), (100, 100, 100, 100), "", "running")], False),
    ("simple unstarted container", [((100, 100, 100, 100), None, "", "unstarted")], False),
    ("simple resized container/cpu req", [(R, (150, 200, 100, 200), "", "running")], True),
    ("simple resized container/cpu limit", [(R, (100, 300, 100, 200), "", "running")], True),
    ("simple resized container/mem req", [(R, (100, 200, 150, 200), "", "running")], True),
    ("simple resized container/cpu+mem req", [(R, (150, 200, 150, 200), "", "running")], True),
    ("simple resized container/mem limit", [(R, (100, 200, 100, 300), "", "running")], True),
    ("terminated resized container", [(R, (200, 200, 100, 200), "", "exited")], False),
    ("non-sidecar init container", [(R, None, "init", "running"), (R, R, "", "running")], False),
    ("non-resized sidecar", [(R, R, "sidecar", "running"), (R, R, "", "running")], False),
    ("resized sidecar", [(R, (200, 200, 100, 200), "sidecar", "running"), (R, R, "", "running")], True),
    ("several containers and a resize", [(R, None, "init", "running"), (R, R, "", "running"),
                                         (R, None, "", "unstarted"), (R, (200, 200, 100, 200), "", "running")], True),
    ("several containers", [((100, 200, 0, 0), (100, 200, 0, 0), "sidecar", "running"),
                            ((0, 0, 100, 200), (0, 0, 100, 200), "", "running"),
                            ((200, 0, 100, 0), (200, 0, 100, 0), "", "running")], False),
    ("best-effort pod", [((0, 0, 0, 0), (0, 0, 0, 0), "", "running")], False),
    ("burstable pod/not resizing", [((100, 0, 0, 0), (100, 0, 0, 0), "", "running")], False),
    ("burstable pod/resized", [((100, 0, 0, 0), (500, 0, 0, 0), "", "running")], True),
]


def requirements(values) -> V1ResourceRequirements:
    """mkRequirements: cpu in millicores, memory in bytes, a zero left out."""
    cpu_req, cpu_lim, mem_req, mem_lim = values
    pick = lambda pairs: {k: v for k, v in pairs if not v.startswith("0")}  # noqa: E731
    return V1ResourceRequirements(requests=pick([("cpu", f"{cpu_req}m"), ("memory", str(mem_req))]),
                                  limits=pick([("cpu", f"{cpu_lim}m"), ("memory", str(mem_lim))]))


@pytest.mark.parametrize("containers, expected", [row[1:] for row in IN_PROGRESS], ids=[row[0] for row in IN_PROGRESS])
def test_is_pod_resize_in_progress(containers, expected):
    """Only running containers count, sidecars among the init containers; cpu and memory compared by amount."""
    from kubernetes.client import V1ObjectMeta, V1Pod, V1PodSpec
    from mini_kubelet.container import CONTAINER_STATE_EXITED, PodStatus, Status
    from mini_kubelet.kuberuntime.kuberuntime_resize import ActuatedState, is_pod_resize_in_progress
    with features.release_profile("1.36"):
        pod = V1Pod(metadata=V1ObjectMeta(name="test-pod", uid="12345"), spec=V1PodSpec(containers=[], init_containers=[]))
        status, actuated = PodStatus("12345", "test-pod", ""), ActuatedState()
        for i, (allocated, applied, kind, state) in enumerate(containers):
            container = V1Container(name=f"c{i}", resources=requirements(allocated),
                                    restart_policy="Always" if kind == "sidecar" else None)
            (pod.spec.init_containers if kind else pod.spec.containers).append(container)
            if state != "unstarted":
                status.container_statuses.append(Status(f"id-{i}", container.name,
                                                        RUNNING if state == "running" else CONTAINER_STATE_EXITED))
            if applied is not None:
                actuated.set_container_resources("12345", container.name, requirements(applied))
        assert is_pod_resize_in_progress(pod, status, actuated) is expected
