"""A lifecycle replay's in-place resizes: the kubelet wired to its allocation manager and the runtime's ResizeState.

Upstream: pkg/kubelet/kubelet.go NewMainKubelet (allocationManager, the pod resize admit handler first, then the
predicate handler) and kuberuntime_manager.go (the runtime manager's actuated state and pod cgroups); the resize
event is what `kubectl patch --subresource resize` stores: the new resources, and the next generation.
Only a replay with a resize event is wired (every other replay takes the pod's spec as it is).
"""

from __future__ import annotations

from kubernetes.client import V1Pod, V1ResourceRequirements

from ... import api, lifecycle, types
from ...allocation.allocation_manager import Manager
from ...allocation.handlers import NodeConfig, new_pod_resizes_admit_handler
from ...cm.pod_container_manager import PodContainerManager
from ...kubelet import filter_out_inactive_pods
from ...kuberuntime.kuberuntime_resize_actuate import ResizeState
from ...stats import ContainerStats, MemoryStats, PodStats


def wire_resize(kubelet, scenario) -> ResizeState:
    """Give the kubelet an allocation manager and the runtime manager a ResizeState writing to the runtime's log."""
    state = ResizeState(pod_cgroups=PodContainerManager(writes=kubelet.runtime.cgroup_writes),
                        memory_capacity=api.value(scenario.node.status.capacity.get("memory", "16Gi")))
    handlers, workers = kubelet.handlers, kubelet.pod_workers

    def active_pods() -> list[V1Pod]:
        statuses = workers.pod_sync_statuses
        pods = [p for p in kubelet.pod_manager.get_pods() if not types.is_mirror_pod(p)]
        return filter_out_inactive_pods(pods, known_terminated={uid for uid, s in statuses.items() if s.is_terminated()}
                                        | set(handlers.rejected))

    manager = Manager(kubelet.status_manager, active_pods, kubelet.pod_manager.get_pod_by_uid, recorder=kubelet.recorder,
                      trigger_pod_sync=lambda pod: handlers.handle_pod_syncs([pod]))
    policy = NodeConfig(cpu_manager_policy=scenario.kubelet.get("cpuManagerPolicy", "none"))
    manager.admit_handlers = [new_pod_resizes_admit_handler(manager, policy),
                              lifecycle.new_predicate_admit_handler(lambda: scenario.node)]
    kubelet.syncer.allocation, kubelet.syncer.resize, handlers.allocation = manager, state, manager
    return state


def apply_resize(server, state: ResizeState, args: dict) -> str:
    """Store the new resources in the API's pod (its generation goes up); the line the timeline shows."""
    stored = server.by_name(args["pod"])
    if stored is None:
        return f"kubectl patch pod {args['pod']} --subresource resize: not found in the API"
    pod = api.deep_copy(stored)
    for c in [*(pod.spec.init_containers or []), *pod.spec.containers]:
        new = args["containers"].get(c.name)
        if new is not None:
            resources = c.resources or V1ResourceRequirements()
            c.resources = V1ResourceRequirements(requests={**(resources.requests or {}), **new.get("requests", {})},
                                                 limits={**(resources.limits or {}), **new.get("limits", {})})
    pod.metadata.generation = (pod.metadata.generation or 1) + 1
    server.pods[pod.metadata.uid] = pod
    server.version += 1
    usage = args["memoryUsage"]
    state.pod_stats[pod.metadata.uid] = PodStats(memory=MemoryStats(usage_bytes=sum(usage.values())), containers=[
        ContainerStats(name=c.name, memory=MemoryStats(usage_bytes=usage.get(c.name, 0))) for c in pod.spec.containers])
    wanted = "; ".join(f"{name}: " + ", ".join(f"{kind} {' '.join(f'{k}={v}' for k, v in values.items())}"
                                                for kind, values in new.items()) for name, new in args["containers"].items())
    return f"kubectl patch pod {args['pod']} --subresource resize ({wanted}): generation {pod.metadata.generation}"


def watch_conditions(status_manager, changed) -> None:
    """Call changed(uid) after each set or clear of a resize condition (several can come in one second)."""
    for name in ("set_pod_resize_pending_condition", "set_pod_resize_in_progress_condition",
                 "clear_pod_resize_pending_condition", "clear_pod_resize_in_progress_condition"):
        method = getattr(status_manager, name)

        def observed(uid, *args, _method=method):
            result = _method(uid, *args)
            changed(uid)
            return result
        setattr(status_manager, name, observed)
