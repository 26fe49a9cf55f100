"""What the kubelet knows of a Pod's containers from the runtime: states, statuses, sandboxes.

Upstream: pkg/kubelet/container/runtime.go (the types Pod, Container, PodStatus, Status) and
k8s.io/cri-api PodSandboxStatus (reduced to what the kubelet's decisions read).
Times are virtual (datetime from mini_kubelet.clock); IDs are strings the simulated runtime makes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Optional

# --8<-- [start:states]
CONTAINER_STATE_CREATED = "created"  # created, not started
CONTAINER_STATE_RUNNING = "running"
CONTAINER_STATE_EXITED = "exited"  # ran and finished (with an exit code)
CONTAINER_STATE_UNKNOWN = "unknown"  # anything the kubelet does not track (paused, dead, ...)

SANDBOX_READY = "SANDBOX_READY"  # k8s.io/cri-api PodSandboxState
SANDBOX_NOTREADY = "SANDBOX_NOTREADY"
# --8<-- [end:states]


@dataclass
class Container:
    """A container as the runtime lists it: enough to tell what changed between two listings.

    Upstream: pkg/kubelet/container/runtime.go Container
    """

    id: str
    name: str
    image: str = ""
    hash: int = 0
    state: str = CONTAINER_STATE_UNKNOWN


@dataclass
class Pod:
    """A pod as the runtime lists it: its containers and sandboxes, grouped by the pod's UID.

    Upstream: pkg/kubelet/container/runtime.go Pod
    """

    id: str  # the pod's UID
    name: str
    namespace: str
    containers: list[Container] = field(default_factory=list)
    sandboxes: list[Container] = field(default_factory=list)


@dataclass
class Status:
    """One container instance's status: each restart is a new instance with its own ID.

    Upstream: pkg/kubelet/container/runtime.go Status
    """

    id: str
    name: str
    state: str
    created_at: Optional[datetime] = None
    started_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    exit_code: int = 0
    image: str = ""
    hash: int = 0
    restart_count: int = 0
    reason: str = ""  # e.g. "OOMKilled", "Error", "Completed"
    message: str = ""


@dataclass
class SandboxStatus:
    """A pod sandbox's status, reduced to what computePodActions reads.

    Upstream: k8s.io/cri-api/pkg/apis/runtime/v1 PodSandboxStatus
    """

    id: str
    state: str = SANDBOX_READY
    created_at: Optional[datetime] = None
    attempt: int = 0  # metadata.attempt: how many sandboxes this pod had before
    host_network: bool = False  # network namespace mode NODE, else POD
    ip: str = ""


@dataclass
class PodStatus:
    """Everything the runtime reports for one pod: container instances (newest first) and sandboxes.

    Upstream: pkg/kubelet/container/runtime.go PodStatus
    """

    id: str
    name: str
    namespace: str
    ips: list[str] = field(default_factory=list)
    container_statuses: list[Status] = field(default_factory=list)
    sandbox_statuses: list[SandboxStatus] = field(default_factory=list)
    timestamp: Optional[datetime] = None

    def find_container_status_by_name(self, name: str) -> Optional[Status]:
        """The newest instance of the named container, or None.

        Upstream: pkg/kubelet/container/runtime.go PodStatus.FindContainerStatusByName
        """
        return next((s for s in self.container_statuses if s.name == name), None)

    def get_running_container_statuses(self) -> list[Status]:
        """The instances that are running now.

        Upstream: pkg/kubelet/container/runtime.go PodStatus.GetRunningContainerStatuses
        """
        return [s for s in self.container_statuses if s.state == CONTAINER_STATE_RUNNING]
