"""A simulated container runtime: sandboxes and containers that start, exit, crash and are OOM-killed on command.

It stands where containerd or CRI-O stand on a real node, behind the CRI runtime service, in the
manner of the fake runtime service the kubelet's own tests use. Everything happens on the virtual
clock; IDs are counters, so the same calls always give the same IDs. Reasons for exits are the ones
containerd reports: Completed (exit 0), Error (any other code), OOMKilled (exit 137).
Upstream: k8s.io/cri-api/pkg/apis/testing/fake_runtime_service.go FakeRuntimeService (the CRI calls),
and pkg/kubelet/kuberuntime/kuberuntime_manager.go GetPods / GetPodStatus (the views the kubelet builds).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Optional

from kubernetes.client import V1Container, V1Pod

from mini_kubelet import api, features
from mini_kubelet import container as kc
from mini_kubelet.clock import Clock
from mini_kubelet.cm.helpers import ResourceConfig
from mini_kubelet.cm.pod_container_manager import KERNEL_DEFAULTS, CgroupWrite, resize_files, writes_between
from mini_kubelet.kuberuntime.kuberuntime_container_linux import LinuxContainerResources, to_kube_container_resources

# --8<-- [start:constants]
RUNTIME_NAME = "fakeRuntime"  # the runtime type in container IDs ("fakeRuntime://ct-0002"), as the CRI fake names itself
REASON_COMPLETED = "Completed"  # what containerd reports for an exit with code 0
REASON_ERROR = "Error"  # any other exit code
REASON_OOM_KILLED = "OOMKilled"
OOM_KILLED_EXIT_CODE = 137  # 128 + SIGKILL: the kernel's OOM killer sends SIGKILL
SIGTERM_EXIT_CODE = 143  # 128 + SIGTERM: how a process without a handler ends when the kubelet stops it
# --8<-- [end:constants]


def _seq_of(runtime_id: str) -> int:
    """The counter inside an ID ("ct-0012" -> 12): creation order, for ties in creation time."""
    return int(runtime_id.split("-")[-1])


class CRIError(Exception):
    """A CRI call that failed (an injected failure, or an ID the runtime does not know)."""


class _Watched:
    """A runtime object that tells its runtime when one of its fields is written (the runtime's change counter)."""

    def __setattr__(self, name: str, value) -> None:
        object.__setattr__(self, name, value)
        owner = self.__dict__.get("_owner")
        if owner is not None:
            owner.touch(self.pod_uid)


class _ByPod(dict):
    """The runtime's sandboxes or containers by ID, also indexed by pod UID; every change counts as a change.

    Writing the dict (a test that places a container itself) keeps the index as right as the runtime's own calls.
    """

    def __init__(self, runtime: "RuntimeService"):
        super().__init__()
        self.runtime = runtime
        self.by_pod: dict[str, dict[str, object]] = {}

    def __setitem__(self, key: str, value) -> None:
        old = dict.get(self, key)
        if old is not None and old.pod_uid != value.pod_uid:
            self._unindex(key)
        elif old is not None:
            object.__setattr__(old, "_owner", None)
        super().__setitem__(key, value)
        object.__setattr__(value, "_owner", self.runtime)
        self.by_pod.setdefault(value.pod_uid, {})[key] = value
        self.runtime.touch(value.pod_uid)

    def __delitem__(self, key: str) -> None:
        self._unindex(key)
        super().__delitem__(key)

    def pop(self, key: str, *default):
        if key in self:
            self._unindex(key)
        return super().pop(key, *default)

    def clear(self) -> None:
        for key in list(self):
            self._unindex(key)
        super().clear()

    def _unindex(self, key: str) -> None:
        value = dict.__getitem__(self, key)
        held = self.by_pod.get(value.pod_uid, {})
        held.pop(key, None)
        if not held:
            self.by_pod.pop(value.pod_uid, None)
        object.__setattr__(value, "_owner", None)
        self.runtime.touch(value.pod_uid)

    def of(self, pod_uid: str) -> list:
        """The pod's objects, in the order the dict holds them."""
        return list(self.by_pod.get(pod_uid, {}).values())


@dataclass
class FakeSandbox(_Watched):
    """One pod sandbox the runtime holds.

    Upstream: k8s.io/cri-api/pkg/apis/testing FakePodSandbox
    """

    id: str
    pod_uid: str
    pod_name: str
    pod_namespace: str
    attempt: int
    created_at: datetime
    host_network: bool
    ip: str
    state: str = kc.SANDBOX_READY


@dataclass
class FakeContainer(_Watched):
    """One container instance the runtime holds; a restart is a new instance with restart_count + 1.

    Upstream: k8s.io/cri-api/pkg/apis/testing FakeContainer
    """

    id: str
    sandbox_id: str
    pod_uid: str
    name: str
    image: str
    hash: int
    restart_count: int
    created_at: datetime
    state: str = kc.CONTAINER_STATE_CREATED
    started_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    exit_code: int = 0
    reason: str = ""
    message: str = ""
    resources: Optional[LinuxContainerResources] = None  # its cgroup's values (InPlacePodVerticalScaling only)


@dataclass
class ContainerStop:
    """One StopContainer, with the preStop hook the kubelet waited for before it (as its log lines tell).

    pre_stop is None for a container without a hook (or with no time for it), else (seconds waited, seconds
    the handler runs): a handler that outlasts the wait is left running. On a node SIGTERM comes at
    time + waited and SIGKILL at the latest grace_period seconds later; the simulated container exits at once.
    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer (its "PreStop hook not completed
    in grace period" and "Killing container with a grace period" log lines)
    """

    time: datetime
    pod_uid: str
    name: str
    grace_period: int
    pre_stop: Optional[tuple[int, int]] = None


class RuntimeService:
    """The runtime: CRI calls for the kubelet, commands for the scenario, views for PLEG and status.

    `generation` counts every change to the runtime's sandboxes and containers, and `pod_generation(uid)` the
    changes to one pod's: a reader that saw the same number has seen the same state (the PLEG's relist and
    the pod workers use them to do nothing when nothing changed).
    """

    def __init__(self, clock: Clock):
        self.clock = clock
        self.generation = 0
        self.pod_generations: dict[str, int] = {}
        self._views: dict[str, tuple[int, kc.Pod, list, list]] = {}  # uid -> (generation, listing, sandboxes, containers)
        self._listing: Optional[tuple[int, list[kc.Pod]]] = None
        self.sandboxes: dict[str, FakeSandbox] = _ByPod(self)
        self.containers: dict[str, FakeContainer] = _ByPod(self)
        self.injected_errors: dict[str, str] = {}  # CRI call name -> message of its next failure
        self._seq = 0
        self.logged: dict[tuple[str, str], int] = {}  # (pod UID, container) -> highest restart count it logged
        self.hook_durations: dict[tuple[str, str], int] = {}  # (pod UID, container) -> seconds its preStop handler runs
        self.stops: list[ContainerStop] = []  # every StopContainer, in order
        self._hooks_run: dict[str, tuple[int, int]] = {}  # container ID -> its preStop hook, until it is stopped
        self.cgroup_version = 2
        self.cgroup_writes: list[CgroupWrite] = []  # every container cgroup file UpdateContainerResources wrote, in order

    def touch(self, pod_uid: str) -> None:
        """Count a change to the pod's runtime state."""
        self.generation += 1
        self.pod_generations[pod_uid] = self.pod_generations.get(pod_uid, 0) + 1

    def pod_generation(self, pod_uid: str) -> int:
        """How many changes the pod's runtime state has seen (the same number: the same state)."""
        return self.pod_generations.get(pod_uid, 0)

    def _next_id(self, prefix: str) -> str:
        self._seq += 1
        return f"{prefix}{self._seq:04d}"

    def _fail_if_injected(self, call: str) -> None:
        if call in self.injected_errors:
            raise CRIError(self.injected_errors.pop(call))

    def inject_error(self, call: str, message: str) -> None:
        """Make the next call of this name (e.g. "RunPodSandbox") fail with the message.

        Upstream: k8s.io/cri-api/pkg/apis/testing FakeRuntimeService.InjectError
        """
        self.injected_errors[call] = message

    # --8<-- [start:cri]
    def run_pod_sandbox(self, pod: V1Pod, attempt: int) -> str:
        """Create and start a sandbox (network namespace, pause container) for the pod; it is READY.

        Upstream: k8s.io/cri-api RuntimeService.RunPodSandbox
        """
        self._fail_if_injected("RunPodSandbox")
        sandbox_id = self._next_id("sb-")
        host_network = bool(pod.spec.host_network)
        ip = "" if host_network else f"10.244.0.{_seq_of(sandbox_id) % 250 + 2}"
        self.sandboxes[sandbox_id] = FakeSandbox(sandbox_id, pod.metadata.uid, pod.metadata.name,
                                                 pod.metadata.namespace, attempt, self.clock.now(), host_network, ip)
        return sandbox_id

    def stop_pod_sandbox(self, sandbox_id: str) -> None:
        """Stop the sandbox: NOTREADY (the kubelet stops its containers first). Unknown IDs are no error.

        Upstream: k8s.io/cri-api RuntimeService.StopPodSandbox
        """
        if sandbox_id in self.sandboxes:
            self.sandboxes[sandbox_id].state = kc.SANDBOX_NOTREADY

    def remove_pod_sandbox(self, sandbox_id: str) -> None:
        """Remove the sandbox and every container in it.

        Upstream: k8s.io/cri-api RuntimeService.RemovePodSandbox
        """
        sandbox = self.sandboxes.pop(sandbox_id, None)
        held = self.containers.of(sandbox.pod_uid) if sandbox is not None else self.containers.values()
        for cid in [c.id for c in held if c.sandbox_id == sandbox_id]:
            del self.containers[cid]

    def create_container(self, sandbox_id: str, pod: V1Pod, container: V1Container, restart_count: int,
                         resources: Optional[LinuxContainerResources] = None) -> str:
        """Create a container in the sandbox, not yet started; the spec hash, restart count and resources go with it.

        Upstream: k8s.io/cri-api RuntimeService.CreateContainer (the hash and count are kubelet annotations)
        """
        self._fail_if_injected("CreateContainer")
        if sandbox_id not in self.sandboxes:
            raise CRIError(f"sandbox {sandbox_id} not found")
        container_id = self._next_id("ct-")
        self.containers[container_id] = FakeContainer(
            container_id, sandbox_id, pod.metadata.uid, container.name, container.image or "",
            kc.hash_container(container), restart_count, self.clock.now(), resources=resources)
        return container_id

    def update_container_resources(self, container_id: str, resources: LinuxContainerResources) -> None:
        """Give a container new cpu and memory: each cgroup file written goes to cgroup_writes, old value to new.

        Upstream: k8s.io/cri-api RuntimeService.UpdateContainerResources
        """
        self._fail_if_injected("UpdateContainerResources")
        c = self._container(container_id)
        before = {**KERNEL_DEFAULTS[self.cgroup_version], **(
            resize_files(container_config(c.resources), self.cgroup_version) if c.resources else {})}
        self.cgroup_writes += writes_between(c.name, before, container_config(resources), self.cgroup_version)
        c.resources = resources

    def start_container(self, container_id: str) -> None:
        """Start a created container: it is running from now on.

        Upstream: k8s.io/cri-api RuntimeService.StartContainer
        """
        self._fail_if_injected("StartContainer")
        c = self._container(container_id)
        c.state, c.started_at = kc.CONTAINER_STATE_RUNNING, self.clock.now()

    def stop_container(self, container_id: str, timeout: int) -> None:
        """Stop a container with a grace period: it ends on SIGTERM at once (exit 143, Error).

        A container that already exited keeps its exit; the timeout is accepted, not waited out.
        Upstream: k8s.io/cri-api RuntimeService.StopContainer
        """
        c = self.containers.get(container_id)
        if c is not None:
            self.stops.append(ContainerStop(self.clock.now(), c.pod_uid, c.name, timeout,
                                            self._hooks_run.pop(container_id, None)))
        if c is not None and c.state != kc.CONTAINER_STATE_EXITED:
            self._exit(c, SIGTERM_EXIT_CODE, REASON_ERROR)

    def run_pre_stop_hook(self, container_id: str, wait: int) -> int:
        """Run the container's preStop handler, the kubelet waiting at most `wait` seconds: the seconds waited.

        The simulated handler runs for hook_durations' seconds (0 unless set); the next StopContainer of the
        container records both numbers.
        Upstream: pkg/kubelet/lifecycle/handlers.go handlerRunner.Run (an exec goes to the runtime's ExecSync)
        """
        c = self.containers.get(container_id)
        runs = self.hook_durations.get((c.pod_uid, c.name), 0) if c is not None else 0
        self._hooks_run[container_id] = (min(runs, wait), runs)
        return min(runs, wait)

    def remove_container(self, container_id: str) -> None:
        """Remove a container instance (its status disappears).

        Upstream: k8s.io/cri-api RuntimeService.RemoveContainer
        """
        c = self.containers.pop(container_id, None)
        if c is not None:  # its log file stays in the pod's log directory
            key = (c.pod_uid, c.name)
            self.logged[key] = max(self.logged.get(key, c.restart_count), c.restart_count)

    def restart_count_by_log_dir(self, pod_uid: str, name: str) -> int:
        """The next restart count the log files of a container with no instance left imply (0 if none).

        Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go calcRestartCountByLogDir (the files are
        named by restart count; the highest plus one)
        """
        return self.logged[(pod_uid, name)] + 1 if (pod_uid, name) in self.logged else 0
    # --8<-- [end:cri]

    def _container(self, container_id: str) -> FakeContainer:
        if container_id not in self.containers:
            raise CRIError(f"container {container_id} not found")
        return self.containers[container_id]

    def _exit(self, c: FakeContainer, exit_code: int, reason: str, message: str = "") -> None:
        c.state, c.finished_at = kc.CONTAINER_STATE_EXITED, self.clock.now()
        c.exit_code, c.reason, c.message = exit_code, reason, message

    def running_container(self, pod_uid: str, name: str) -> FakeContainer:
        """The running instance of the named container of the pod (the target of a command)."""
        for c in self.containers.of(pod_uid):
            if c.name == name and c.state == kc.CONTAINER_STATE_RUNNING:
                return c
        raise CRIError(f"no running container {name!r} in pod {pod_uid}")

    # --8<-- [start:commands]
    def exit_container(self, pod_uid: str, name: str, exit_code: int = 0) -> str:
        """The container's process ends by itself with this code: Completed for 0, Error otherwise."""
        c = self.running_container(pod_uid, name)
        self._exit(c, exit_code, REASON_COMPLETED if exit_code == 0 else REASON_ERROR)
        return c.id

    def crash_container(self, pod_uid: str, name: str, exit_code: int = 1) -> str:
        """The container's process fails: a non-zero exit, reason Error."""
        if exit_code == 0:
            raise ValueError("a crash has a non-zero exit code")
        return self.exit_container(pod_uid, name, exit_code)

    def oom_kill_container(self, pod_uid: str, name: str) -> str:
        """The kernel's OOM killer ends the container at its memory limit: exit 137, reason OOMKilled."""
        c = self.running_container(pod_uid, name)
        self._exit(c, OOM_KILLED_EXIT_CODE, REASON_OOM_KILLED)
        return c.id

    def kill_sandbox(self, pod_uid: str) -> str:
        """The pod's newest sandbox dies (its network namespace is gone): NOTREADY, containers untouched."""
        sandboxes = self._sandboxes_of(pod_uid)
        if not sandboxes:
            raise CRIError(f"pod {pod_uid} has no sandbox")
        sandboxes[0].state = kc.SANDBOX_NOTREADY
        return sandboxes[0].id
    # --8<-- [end:commands]

    def _view(self, pod_uid: str) -> tuple[int, kc.Pod, list, list]:
        """The pod as GetPods lists it, and its sandboxes and containers newest first; rebuilt only after a change."""
        generation = self.pod_generation(pod_uid)
        view = self._views.get(pod_uid)
        if view is not None and view[0] == generation:
            return view
        newest_first = lambda o: (o.created_at, _seq_of(o.id))  # noqa: E731  (creation time, then creation order)
        sandboxes = sorted(self.sandboxes.of(pod_uid), key=newest_first, reverse=True)
        containers = sorted(self.containers.of(pod_uid), key=newest_first, reverse=True)
        name, namespace = (sandboxes[0].pod_name, sandboxes[0].pod_namespace) if sandboxes else ("", "")
        sandbox_state = {kc.SANDBOX_READY: kc.CONTAINER_STATE_RUNNING, kc.SANDBOX_NOTREADY: kc.CONTAINER_STATE_EXITED}
        listing = kc.Pod(id=pod_uid, name=name, namespace=namespace,
                         containers=[kc.Container(c.id, c.name, c.image, c.hash, c.state) for c in containers],
                         sandboxes=[kc.Container(s.id, "", "", 0, sandbox_state[s.state]) for s in sandboxes])
        view = self._views[pod_uid] = (generation, listing, sandboxes, containers)
        return view

    def _sandboxes_of(self, pod_uid: str) -> list[FakeSandbox]:
        """The pod's sandboxes, newest first (creation time, then creation order)."""
        return list(self._view(pod_uid)[2])

    def _containers_of(self, pod_uid: str) -> list[FakeContainer]:
        """The pod's container instances, newest first (creation time, then creation order)."""
        return list(self._view(pod_uid)[3])

    # --8<-- [start:views]
    def get_pods(self) -> list[kc.Pod]:
        """Every pod the runtime holds, with all its containers and sandboxes (exited ones too), newest pod first.

        Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go kubeGenericRuntimeManager.GetPods (all=true)
        """
        if self._listing is None or self._listing[0] != self.generation:
            uids = set(self.sandboxes.by_pod) | set(self.containers.by_pod)
            views = [self._view(uid) for uid in uids]
            for uid in [uid for uid in self._views if uid not in uids]:
                del self._views[uid]
            newest = {v[1].id: v[2][0].created_at if v[2] else self.clock.start for v in views}
            pods = sorted((v[1] for v in views), key=lambda p: (newest[p.id], p.id), reverse=True)
            self._listing = (self.generation, pods)
        return list(self._listing[1])  # the same Pod objects while nothing changed: read them, never write them

    def get_pod_status(self, uid: str, name: str = "", namespace: str = "", actuated=None) -> kc.PodStatus:
        """The runtime's status of one pod: sandboxes and container instances newest first, IPs of a ready newest sandbox.

        With InPlacePodVerticalScaling each container's resources are what its cgroup holds, the memory request
        (which no cgroup holds) from the actuated resources, when given (a kuberuntime_resize.ActuatedState).
        Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go kubeGenericRuntimeManager.GetPodStatus
        """
        _, _, sandboxes, containers = self._view(uid)
        resizable = features.DEFAULT_FEATURE_GATE.enabled("InPlacePodVerticalScaling")
        ips = [sandboxes[0].ip] if sandboxes and sandboxes[0].state == kc.SANDBOX_READY and sandboxes[0].ip else []
        if sandboxes and not name:
            name, namespace = sandboxes[0].pod_name, sandboxes[0].pod_namespace
        return kc.PodStatus(
            id=uid, name=name, namespace=namespace, ips=ips, timestamp=self.clock.now(),
            sandbox_statuses=[kc.SandboxStatus(s.id, s.state, s.created_at, s.attempt, s.host_network, s.ip)
                              for s in sandboxes],
            container_statuses=[kc.Status(
                id=c.id, name=c.name, state=c.state, created_at=c.created_at, started_at=c.started_at,
                finished_at=c.finished_at, exit_code=c.exit_code, image=c.image, hash=c.hash,
                restart_count=c.restart_count, reason=c.reason, message=c.message,
                resources=_status_resources(c, actuated) if resizable else None) for c in containers])
    # --8<-- [end:views]


def container_config(resources: LinuxContainerResources) -> ResourceConfig:
    """The cgroup values a container's CRI resources stand for (0 is "not set", as the runtime reads it)."""
    return ResourceConfig(cpu_shares=resources.cpu_shares, cpu_quota=resources.cpu_quota or None,
                          cpu_period=resources.cpu_period or None, memory=resources.memory_limit_in_bytes or None)


def _status_resources(c: FakeContainer, actuated) -> Optional[kc.ContainerResources]:
    """The container's resources as the kubelet reads them: the runtime's, filled in from the actuated resources.

    Upstream: pkg/kubelet/kuberuntime/kuberuntime_container.go kubeGenericRuntimeManager.toKubeContainerStatus
    """
    found = to_kube_container_resources(c.resources)
    if actuated is None or (found is not None and found.memory_request is not None):
        return found
    recorded, ok = actuated.get_container_resources(c.pod_uid, c.name)
    if not ok:
        return found
    requests, limits = recorded.requests or {}, recorded.limits or {}
    if found is None:  # every value from the record, zero included
        return kc.ContainerResources(api.milli_value(requests.get("cpu", 0)), api.milli_value(limits.get("cpu", 0)),
                                     api.value(requests.get("memory", 0)), api.value(limits.get("memory", 0)))
    if api.value(requests.get("memory", 0)) != 0:
        found.memory_request = api.value(requests["memory"])
    return found
