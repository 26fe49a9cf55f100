"""The ready and started flags of container statuses, from probe results (the probes themselves are not run here).

Upstream: pkg/kubelet/prober/prober_manager.go manager.UpdatePodStatus. A probe worker exists for
each probe in a running container's spec; results are given as maps from runtime container ID to
"Success" or "Failure".
"""

from __future__ import annotations

from typing import Optional

from kubernetes.client import V1Container, V1ContainerStatus, V1Pod, V1PodStatus

from mini_kubelet.container import is_restartable_init_container
from mini_kubelet.features import DEFAULT_FEATURE_GATE


def _started(c: V1ContainerStatus, spec: Optional[V1Container], startup: dict[str, str]) -> bool:
    """Running, and its startup probe succeeded or it has none. Upstream: prober_manager.go isContainerStarted (v1.28+)"""
    if c.state is None or c.state.running is None:
        return False
    cid = (c.container_id or "").split("://")[-1]
    if cid in startup:
        return startup[cid] == "Success"
    return spec is None or spec.startup_probe is None


def _ready(c: V1ContainerStatus, spec: Optional[V1Container], readiness: dict[str, str]) -> bool:
    """Running, and its readiness probe succeeded or it has none."""
    if c.state is None or c.state.running is None:
        return False
    cid = (c.container_id or "").split("://")[-1]
    return readiness.get(cid) == "Success" or (cid not in readiness and (spec is None or spec.readiness_probe is None))


def update_pod_status(pod: V1Pod, status: V1PodStatus, readiness: Optional[dict[str, str]] = None,
                      startup: Optional[dict[str, str]] = None) -> None:
    """Set started and ready on regular containers; init containers are ready once exited 0.

    With the SidecarContainers gate on (as in v1.28 and later), init container statuses get started
    too, and a sidecar's ready is computed like a regular container's.
    Upstream: pkg/kubelet/prober/prober_manager.go manager.UpdatePodStatus
    """
    readiness, startup = readiness or {}, startup or {}
    specs = {c.name: c for c in pod.spec.containers}
    for c in status.container_statuses or []:
        c.started = _started(c, specs.get(c.name), startup)
        if c.started:
            c.ready = _ready(c, specs.get(c.name), readiness)
    sidecars = DEFAULT_FEATURE_GATE.enabled("SidecarContainers")
    init_specs = {c.name: c for c in pod.spec.init_containers or []}
    for c in status.init_container_statuses or []:
        spec = init_specs.get(c.name)
        if sidecars:
            c.started = _started(c, spec, startup)
        if spec is None or not is_restartable_init_container(spec):
            c.ready = c.state is not None and c.state.terminated is not None and c.state.terminated.exit_code == 0
        elif c.started:
            c.ready = _ready(c, spec, readiness)
