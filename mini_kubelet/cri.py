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

from mini_kubelet import container as kc
from mini_kubelet.clock import Clock

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


@dataclass
class FakeSandbox:
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
class FakeContainer:
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


class RuntimeService:
    """The runtime: CRI calls for the kubelet, commands for the scenario, views for PLEG and status."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.sandboxes: dict[str, FakeSandbox] = {}
        self.containers: dict[str, FakeContainer] = {}
        self.injected_errors: dict[str, str] = {}  # CRI call name -> message of its next failure
        self._seq = 0

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
        self.sandboxes.pop(sandbox_id, None)
        for cid in [c.id for c in self.containers.values() if c.sandbox_id == sandbox_id]:
            del self.containers[cid]

    def create_container(self, sandbox_id: str, pod: V1Pod, container: V1Container, restart_count: int) -> str:
        """Create a container in the sandbox, not yet started; the spec hash and restart count go with it.

        Upstream: k8s.io/cri-api RuntimeService.CreateContainer (the hash and count are kubelet annotations)
        """
        self._fail_if_injected("CreateContainer")
        if sandbox_id not in self.sandboxes:
            raise CRIError(f"sandbox {sandbox_id} not found")
        container_id = self._next_id("ct-")
        self.containers[container_id] = FakeContainer(
            container_id, sandbox_id, pod.metadata.uid, container.name, container.image or "",
            kc.hash_container(container), restart_count, self.clock.now())
        return container_id

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
        if c is not None and c.state != kc.CONTAINER_STATE_EXITED:
            self._exit(c, SIGTERM_EXIT_CODE, REASON_ERROR)

    def remove_container(self, container_id: str) -> None:
        """Remove a container instance (its status disappears).

        Upstream: k8s.io/cri-api RuntimeService.RemoveContainer
        """
        self.containers.pop(container_id, None)
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
        for c in self.containers.values():
            if c.pod_uid == pod_uid and c.name == name and c.state == kc.CONTAINER_STATE_RUNNING:
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

    def _sandboxes_of(self, pod_uid: str) -> list[FakeSandbox]:
        """The pod's sandboxes, newest first (creation time, then creation order)."""
        return sorted((s for s in self.sandboxes.values() if s.pod_uid == pod_uid),
                      key=lambda s: (s.created_at, _seq_of(s.id)), reverse=True)

    def _containers_of(self, pod_uid: str) -> list[FakeContainer]:
        """The pod's container instances, newest first (creation time, then creation order)."""
        return sorted((c for c in self.containers.values() if c.pod_uid == pod_uid),
                      key=lambda c: (c.created_at, _seq_of(c.id)), reverse=True)

    # --8<-- [start:views]
    def get_pods(self) -> list[kc.Pod]:
        """Every pod the runtime holds, with all its containers and sandboxes (exited ones too), newest pod first.

        Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go kubeGenericRuntimeManager.GetPods (all=true)
        """
        uids = {s.pod_uid for s in self.sandboxes.values()} | {c.pod_uid for c in self.containers.values()}
        pods = []
        for uid in uids:
            sandboxes, containers = self._sandboxes_of(uid), self._containers_of(uid)
            name, namespace = (sandboxes[0].pod_name, sandboxes[0].pod_namespace) if sandboxes else ("", "")
            sandbox_state = {kc.SANDBOX_READY: kc.CONTAINER_STATE_RUNNING, kc.SANDBOX_NOTREADY: kc.CONTAINER_STATE_EXITED}
            pods.append(kc.Pod(
                id=uid, name=name, namespace=namespace,
                containers=[kc.Container(c.id, c.name, c.image, c.hash, c.state) for c in containers],
                sandboxes=[kc.Container(s.id, "", "", 0, sandbox_state[s.state]) for s in sandboxes]))
        newest = {uid: max([s.created_at for s in self._sandboxes_of(uid)] or [self.clock.start]) for uid in uids}
        return sorted(pods, key=lambda p: (newest[p.id], p.id), reverse=True)

    def get_pod_status(self, uid: str, name: str = "", namespace: str = "") -> kc.PodStatus:
        """The runtime's status of one pod: sandboxes and container instances newest first, IPs of a ready newest sandbox.

        Upstream: pkg/kubelet/kuberuntime/kuberuntime_manager.go kubeGenericRuntimeManager.GetPodStatus
        """
        sandboxes = self._sandboxes_of(uid)
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
                restart_count=c.restart_count, reason=c.reason, message=c.message) for c in self._containers_of(uid)])
    # --8<-- [end:views]
