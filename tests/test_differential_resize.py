"""Differential tests: in-place resize on the node, mini_kubelet against v1.36.5's own computePodActions and
doPodResizeAction, on random Pods whose spec (the allocated resources) differs from the actuated resources.

Both functions are unexported: the harness reaches them through a shim added to their package
(upstream/v1.36/_shims/pkg/kubelet/kuberuntime/harness_resize.go), on the manager the package's tests make, with
the actuated resources recorded first. doPodResizeAction runs against a pod container manager and a runtime service
that record every pod cgroup write and every UpdateContainerResources in order; the comparison is of the cgroup
files those calls write, on cgroup v1 (where the shares read back are the shares written).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubernetes.client import V1ResourceRequirements

from mini_kubelet import api, features
from mini_kubelet.cm.helpers import ResourceConfig
from mini_kubelet.cm.pod_container_manager import PodContainerManager, resize_files
from mini_kubelet.container import PodStatus, SandboxStatus, Status, hash_container
from mini_kubelet.cri import FakeContainer, RuntimeService, container_config
from mini_kubelet.clock import Clock
from mini_kubelet.kuberuntime.kuberuntime_container_linux import LinuxContainerResources, to_kube_container_resources
from mini_kubelet.kuberuntime.kuberuntime_manager import compute_pod_actions
from mini_kubelet.kuberuntime.kuberuntime_resize_actuate import ResizeState, do_pod_resize_action
from mini_kubelet.stats import ContainerStats, MemoryStats, PodStats

from . import upstream_harness
from .test_kuberuntime_resize_v136 import COMPUTE_CASES, resize_pod

pytestmark = [pytest.mark.upstream, pytest.mark.ch3]
upstream_harness.go()  # no Go: the whole file is skipped, with one message

EXAMPLES = int(os.environ.get("DIFFERENTIAL_EXAMPLES", "30"))
differential = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
V1_UNLIMITED = 9223372036854771712
CPU = ("0", "1m", "2m", "10m", "100m", "250m", "500m", "1", "1500m")
MEMORY = ("0", "1Mi", "64Mi", "100Mi", "128Mi", "200Mi", "1Gi")
POLICIES = ("NotRequired", "RestartContainer")


@st.composite
def requirements(draw):
    """cpu and memory requests and limits as a valid Pod has them (no limit below its request), often none."""
    out = {"requests": {}, "limits": {}}
    for name, amounts in (("cpu", CPU), ("memory", MEMORY)):
        kind = draw(st.sampled_from(("none", "request", "limit", "both", "both")))
        request, limit = sorted((draw(st.sampled_from(amounts)), draw(st.sampled_from(amounts))), key=api.parse_quantity)
        if kind in ("request", "both"):
            out["requests"][name] = request
        if kind in ("limit", "both"):
            out["limits"][name] = limit
    return {k: v for k, v in out.items() if v}


@st.composite
def resizable_container(draw, name: str, sidecar: bool = False):
    c = {"name": name, "image": "registry.example/app:1", "resources": draw(requirements())}
    if sidecar:
        c["restartPolicy"] = "Always"
    policies = draw(st.lists(st.sampled_from(("cpu", "memory")), unique=True, max_size=2))
    if policies:
        c["resizePolicy"] = [{"resourceName": r, "restartPolicy": draw(st.sampled_from(POLICIES))} for r in policies]
    return c


@st.composite
def resize_pods(draw, inits: bool = True):
    """A Pod with 1-3 app containers and maybe a sidecar and a regular init container; sometimes static."""
    spec = {"containers": [draw(resizable_container(f"app{i}")) for i in range(draw(st.integers(1, 3)))]}
    kinds = draw(st.lists(st.sampled_from(("sidecar", "init")), max_size=2)) if inits else []
    if kinds:
        spec["initContainers"] = [draw(resizable_container(f"init{i}", k == "sidecar")) for i, k in enumerate(kinds)]
    metadata = {"name": "p", "namespace": "default", "uid": "u1"}
    if draw(st.integers(0, 5)) == 0:
        metadata["annotations"] = {"kubernetes.io/config.source": "file"}  # static: v1.36 resizes it too
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def all_containers(pod: dict) -> list[dict]:
    return pod["spec"].get("initContainers", []) + pod["spec"]["containers"]


@st.composite
def actuated(draw, pod: dict) -> dict:
    """Each container's actuated resources: as its spec, other ones, or no record at all."""
    out = {}
    for c in all_containers(pod):
        choice = draw(st.sampled_from(("same", "other", "other", "missing")))
        if choice != "missing":
            out[c["name"]] = c["resources"] if choice == "same" else draw(requirements())
    return out


READY = [{"id": "s0", "ready": True, "attempt": 0, "hostNetwork": False, "ip": "10.0.0.7"}]


def _statuses(pod: dict, states: dict[str, str]):
    """The runtime's instances for Go (its hashes) and for mini_kubelet (its own), one per container with a state."""
    go, mine = [], []
    model = {c.name: c for c in (api.pod_from_manifest(pod).spec.init_containers or []) +
             api.pod_from_manifest(pod).spec.containers}
    for c in all_containers(pod):
        state = states.get(c["name"])
        if state is None:
            continue
        go.append({"id": "c" + c["name"], "name": c["name"], "state": state, "exitCode": 0,
                   "hash": upstream_harness.call("1.36", "HashContainer", container=c)})
        mine.append(Status("c" + c["name"], c["name"], state, hash=hash_container(model[c["name"]])))
    meta = pod["metadata"]
    return go, PodStatus(id=meta["uid"], name=meta["name"], namespace=meta["namespace"], container_statuses=mine,
                         sandbox_statuses=[SandboxStatus("s0", "SANDBOX_READY", ip="10.0.0.7")])


def _their_updates(updates: dict) -> dict:
    return {r: [(u["Container"], u["ID"], tuple(u["Desired"].values()), tuple(u["Current"].values())) for u in infos]
            for r, infos in updates.items()}


def _my_updates(updates: dict | None) -> dict:
    return {r: [(i.container.name, i.kube_container_id, tuple(vars(i.desired_container_resources).values()),
                 tuple(vars(i.current_container_resources).values())) for i in infos]
            for r, infos in (updates or {}).items() if infos}


def _state(record: dict, uid: str = "u1") -> ResizeState:
    state = ResizeState()
    for name, resources in record.items():
        state.actuated.set_container_resources(uid, name, V1ResourceRequirements(**resources))
    return state


def compare_actions(pod: dict, states: dict[str, str], record: dict, gates: dict | None = None,
                    sandboxes: list | None = None) -> None:
    sandboxes = READY if sandboxes is None else sandboxes
    with features.release_profile("1.36", gates):
        go_statuses, status = _statuses(pod, states)  # mini_kubelet's hashes leave resources out from 1.33
        status.sandbox_statuses = [SandboxStatus(s["id"], "SANDBOX_READY" if s["ready"] else "SANDBOX_NOTREADY",
                                                 ip=s["ip"]) for s in sandboxes]
        changes = compute_pod_actions(api.pod_from_manifest(pod), status,
                                      actuated=_state(record, pod["metadata"]["uid"]).actuated)
        theirs = upstream_harness.call("1.36", "ComputePodResizeActions", gates=gates, pod=pod, sandboxes=sandboxes,
                                       containers=go_statuses, liveness={}, startup={}, resize={"Actuated": record})
    mine = {"update": _my_updates(changes.containers_to_update), "set": changes.containers_to_update is not None,
            "kill": sorted((cid, k.name, k.message) for cid, k in changes.containers_to_kill.items()),
            "start": changes.containers_to_start, "restartPod": changes.update_pod_resources, "killPod": changes.kill_pod}
    expected = {"update": _their_updates(theirs["ContainersToUpdate"]), "set": theirs["ContainersToUpdateSet"],
                "kill": sorted((cid, k["Name"], k["Message"]) for cid, k in theirs["ContainersToKill"].items()),
                "start": theirs["ContainersToStart"] or [], "restartPod": theirs["UpdatePodResources"],
                "killPod": theirs["KillPod"]}
    if any(c.get("restartPolicy") == "Always" for c in pod["spec"].get("initContainers", [])):
        mine["inits"], expected["inits"] = changes.init_containers_to_start, theirs["InitContainersToStart"] or []
    assert mine == expected


@differential
@given(data=st.data())
def test_compute_pod_resize_actions(data):
    pod = data.draw(resize_pods())
    states = {c["name"]: data.draw(st.sampled_from(("running", "running", "running", "exited")))
              for c in all_containers(pod)}
    for c in pod["spec"].get("initContainers", []):
        if c.get("restartPolicy") != "Always" and data.draw(st.booleans()):
            states = {**states, c["name"]: "running"}
            states = {n: s for n, s in states.items() if n.startswith("init")}  # still initialising
    compare_actions(pod, states, data.draw(actuated(pod)),
                    data.draw(st.sampled_from((None, {"InPlacePodVerticalScalingInitContainers": False}))),
                    data.draw(st.sampled_from((READY, READY, READY, [], [{**READY[0], "ready": False}]))))


@pytest.mark.parametrize("case", COMPUTE_CASES)
def test_ported_compute_cases_match_v1_36_5(case):
    """Each TestComputePodActionsForPodResize case ported from the fork (tests/test_kuberuntime_resize_v136.py)
    gives v1.36.5's own answer too."""
    pod, record = resize_pod(case)
    compare_actions(pod, {c["name"]: "running" for c in pod["spec"]["containers"]}, record)


def _one(resources: dict, policy: dict | None = None, **metadata) -> dict:
    c = {"name": "app0", "image": "registry.example/app:1", "resources": resources}
    if policy:
        c["resizePolicy"] = [{"resourceName": r, "restartPolicy": p} for r, p in policy.items()]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u1", **metadata},
            "spec": {"containers": [c, {"name": "app1", "image": "registry.example/app:1"}]}}


MI_REQUEST = {"requests": {"memory": "1Mi"}}
ACTION_REGRESSIONS = {  # found by test_compute_pod_resize_actions, each reduced by Hypothesis; (pod, states, actuated)
    # v1.36.4+ (#140387): a container about to start with other resources than its actuated ones resizes the pod
    # cgroup first (mini_kubelet said UpdatePodResources False)
    "starting-container-resized": (_one(MI_REQUEST), {"app0": "exited", "app1": "running"}, {}),
    # ... by amount, cpu and memory only: an explicit zero or another resource is no change (mini_kubelet said True)
    "starting-container-zero-request": (_one({"requests": {"memory": "0", "ephemeral-storage": "1Gi"}}),
                                        {"app0": "exited", "app1": "running"}, {}),
    # v1.36 (#135856) resizes a static pod as any other (mini_kubelet left it out, as 1.33 to 1.35 do)
    "static-pod": (_one(MI_REQUEST, annotations={"kubernetes.io/config.source": "file"}),
                   {"app0": "running", "app1": "running"}, {"app0": {}}),
}


@pytest.mark.parametrize("case", ACTION_REGRESSIONS)
def test_compute_pod_resize_actions_regressions(case):
    compare_actions(*ACTION_REGRESSIONS[case])


# --- doPodResizeAction ----------------------------------------------------------------------------------------


def _go_writes(writes: list[dict]) -> list[tuple]:
    """Upstream's calls as the cgroup v1 files they write: the pod's by its ResourceConfig, a container's by its CRI values."""
    out = []
    for w in writes:
        if w["Call"] == "SetPodCgroupConfig":
            config, target = ResourceConfig(memory=w["Memory"], cpu_shares=w["CPUShares"], cpu_quota=w["CPUQuota"],
                                            cpu_period=w["CPUPeriod"]), "pod"
        else:
            config = container_config(LinuxContainerResources(cpu_shares=w["CPUShares"], cpu_quota=w["CPUQuota"],
                                                              cpu_period=w["CPUPeriod"], memory_limit_in_bytes=w["Memory"]))
            target = w["Target"][1:]
        out += [(target, name, value) for name, value in resize_files(config, 1).items()]
    return out


def compare_resize(pod: dict, record: dict, cgroup: dict, usage: dict, failures: dict) -> None:
    states = {c["name"]: "running" for c in all_containers(pod)}
    with features.release_profile("1.36"):
        go_statuses, status = _statuses(pod, states)
        model = api.pod_from_manifest(pod)
        state = _state(record)
        runtime = RuntimeService(Clock())
        runtime.cgroup_version = 1
        state.pod_cgroups = pcm = PodContainerManager(cgroup_version=1, writes=runtime.cgroup_writes)
        pcm.files["u1"] = {"memory.limit_in_bytes": str(cgroup["PodMemory"]), "cpu.shares": str(cgroup["PodCPUShares"]),
                           "cpu.cfs_quota_us": str(cgroup["PodCPUQuota"]), "cpu.cfs_period_us": str(cgroup["PodCPUPeriod"])}
        state.pod_stats["u1"] = PodStats(memory=MemoryStats(usage_bytes=usage["PodMemoryUsage"]), containers=[
            ContainerStats(name=n, memory=MemoryStats(usage_bytes=u)) for n, u in sorted(usage["ContainerUsage"].items())])
        for c in model.spec.containers + (model.spec.init_containers or []):
            runtime.containers["c" + c.name] = FakeContainer("c" + c.name, "s0", "u1", c.name, "", 0, 0, Clock().now(),
                                                             state="running")
        if failures.get("FailUpdate"):
            runtime.inject_error("UpdateContainerResources", "injected UpdateContainerResources failure")
        if failures.get("FailPodCgroupSet"):
            pcm.inject_error("SetPodCgroupConfig", "injected pod cgroup write failure")
        if failures.get("FailPodCgroupRead"):
            pcm.inject_error("GetPodCgroupConfig", "injected read failure")
        changes = compute_pod_actions(model, status, actuated=state.actuated)
        updates = _my_updates(changes.containers_to_update)  # before the resize moves current to desired
        result = do_pod_resize_action(runtime, model, changes, state)
        theirs = upstream_harness.call("1.36", "DoPodResizeAction", pod=pod, sandboxes=READY, containers=go_statuses,
                                       liveness={}, startup={}, resize={"Actuated": record, **cgroup, **usage, **failures})
    mine = {"updates": updates,
            "writes": [(w.cgroup if w.cgroup in states else "pod", w.file, w.new) for w in runtime.cgroup_writes],
            "error": result.error or "", "message": result.message,
            "actuated": {n: _amounts(r) for n in states for r, found in [state.actuated.get_container_resources("u1", n)]
                         if found}}
    expected = {"updates": _their_updates(theirs["Updates"]), "writes": _go_writes(theirs["Writes"] or []),
                "error": theirs["Error"], "message": theirs["Message"],
                "actuated": {n: _amounts_json(r) for n, r in theirs["Actuated"].items()}}
    assert mine == expected


def _amounts(requirements) -> dict:
    return {kind: {n: api.parse_quantity(str(v)) for n, v in (getattr(requirements, kind) or {}).items()
                   if api.parse_quantity(str(v)) != 0} for kind in ("requests", "limits")}


def _amounts_json(requirements: dict) -> dict:
    return {kind: {n: api.parse_quantity(v) for n, v in requirements.get(kind, {}).items() if api.parse_quantity(v) != 0}
            for kind in ("requests", "limits")}


@st.composite
def pod_cgroups(draw) -> dict:
    """The pod cgroup's values as read back on cgroup v1 (an unlimited memory.limit_in_bytes is a huge number)."""
    return {"PodMemory": draw(st.sampled_from((V1_UNLIMITED, 64 * 2**20, 300 * 2**20, 2**30))),
            "PodCPUShares": draw(st.sampled_from((2, 102, 256, 307, 1024))),
            "PodCPUQuota": draw(st.sampled_from((-1, 10000, 30000, 150000))), "PodCPUPeriod": 100000}


usages = st.one_of(st.none(), st.sampled_from((0, 10 * 2**20, 100 * 2**20, 2**30)))


@differential
@given(data=st.data())
def test_do_pod_resize_action(data):
    pod = data.draw(resize_pods())
    names = [c["name"] for c in all_containers(pod)]
    usage = {"PodMemoryUsage": data.draw(usages.filter(lambda u: u is not None)),  # upstream panics without it
             "ContainerUsage": {n: data.draw(usages) for n in names if data.draw(st.booleans())}}
    failures = data.draw(st.sampled_from(({}, {}, {}, {"FailUpdate": 1}, {"FailPodCgroupSet": 1},
                                          {"FailPodCgroupRead": True})))
    compare_resize(pod, data.draw(actuated(pod)), data.draw(pod_cgroups()), usage, failures)


@differential
@given(shares=st.integers(0, 300000), quota=st.integers(-1, 10**7), period=st.sampled_from((0, 1000, 100000, 250000)),
       memory=st.sampled_from((0, 1, 2**20, 2**40)))
def test_to_kube_container_resources(shares, quota, period, memory):
    linux = {"cpu_shares": shares, "cpu_quota": quota, "cpu_period": period, "memory_limit_in_bytes": memory}
    with features.release_profile("1.36"):
        mine = to_kube_container_resources(LinuxContainerResources(**linux))
    theirs = upstream_harness.call("1.36", "ToKubeContainerResources", linux=linux)
    assert ({k: v for k, v in vars(mine).items() if v is not None} if mine else None) == (
        {{"cpuRequest": "cpu_request", "cpuLimit": "cpu_limit", "memoryLimit": "memory_limit",
          "memoryRequest": "memory_request"}[k]: v for k, v in theirs.items()} if theirs is not None else None)
