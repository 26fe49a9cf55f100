"""The ready and started flags of container statuses, from probe results (the probes themselves are not run here).

Upstream: pkg/kubelet/prober/prober_manager.go manager.UpdatePodStatus. A probe worker exists for
each probe in a running container's spec; results are given as maps from runtime container ID to
"Success" or "Failure".
"""

from __future__ import annotations

from typing import Optional

from kubernetes.client import V1Pod, V1PodStatus


def update_pod_status(pod: V1Pod, status: V1PodStatus, readiness: Optional[dict[str, str]] = None,
                      startup: Optional[dict[str, str]] = None) -> None:
    """Set started and ready: running and no probe pending (or its result Success); init containers ready once exited 0.

    Probe results are keyed by runtime container ID; a container with a probe but no result yet is not started/ready.
    Upstream: pkg/kubelet/prober/prober_manager.go manager.UpdatePodStatus
    """
    readiness, startup = readiness or {}, startup or {}
    specs = {c.name: c for c in pod.spec.containers}
    for c in status.container_statuses or []:
        spec, cid = specs.get(c.name), (c.container_id or "").split("://")[-1]
        if c.state is None or c.state.running is None:
            started = False
        elif cid in startup:
            started = startup[cid] == "Success"
        else:
            started = spec is None or spec.startup_probe is None
        c.started = started
        if started:
            c.ready = readiness.get(cid) == "Success" or (cid not in readiness and (spec is None or spec.readiness_probe is None))
    for c in status.init_container_statuses or []:
        c.ready = c.state is not None and c.state.terminated is not None and c.state.terminated.exit_code == 0
