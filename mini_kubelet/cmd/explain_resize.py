"""`mini-kubelet explain` on a Pod mid-resize: what its cgroups hold now, what its spec wants, and why.

Upstream: pkg/kubelet/kubelet_pods.go (convertToAPIContainerStatuses fills allocatedResources from the
allocation and resources from what the runtime reports) and status/status_manager.go (PodResizePending,
PodResizeInProgress), as v1.36 writes them.
"""

from __future__ import annotations

from typing import Optional

from kubernetes.client import V1Pod

from .. import api

RESIZE_CONDITIONS = ("PodResizePending", "PodResizeInProgress")


def _listed(values: Optional[dict]) -> dict:
    return {name: str(value) for name, value in sorted((values or {}).items()) if name in ("cpu", "memory")}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(api.parse_quantity(v) == api.parse_quantity(b[k]) for k, v in a.items())


def resize_report(pod: V1Pod) -> Optional[dict]:
    """None unless a container's status resources (or allocation) differ from its spec, or a resize condition is set."""
    status = pod.status
    specs = {c.name: c for c in [*(pod.spec.init_containers or []), *pod.spec.containers]}
    containers = []
    for s in [*((status.init_container_statuses if status else None) or []),
              *((status.container_statuses if status else None) or [])]:
        spec = specs.get(s.name)
        if spec is None or (s.resources is None and not s.allocated_resources):
            continue
        wants = {"requests": _listed(spec.resources.requests if spec.resources else None),
                 "limits": _listed(spec.resources.limits if spec.resources else None)}
        if s.resources is not None:  # what the runtime reports the container runs with
            holds, source = {"requests": _listed(s.resources.requests), "limits": _listed(s.resources.limits)}, "resources"
        else:
            holds, source = {"requests": _listed(s.allocated_resources), "limits": wants["limits"]}, "allocatedResources"
        allocated = _listed(s.allocated_resources)
        if not all(_same(holds[k], wants[k]) for k in holds) or (allocated and not _same(allocated, wants["requests"])):
            containers.append({"name": s.name, "holds": holds, "holds_from": source, "allocated": allocated,
                               "wants": wants})
    conditions = [{"type": c.type, "reason": c.reason or "", "message": c.message or ""}
                  for c in (status.conditions if status else None) or [] if c.type in RESIZE_CONDITIONS
                  and c.status == "True"]
    if not containers and not conditions:
        return None
    return {"containers": containers, "conditions": conditions}


def _amounts(resources: dict) -> str:
    parts = [f"{kind[:-1]} {name} {value}" for kind in ("requests", "limits") for name, value in resources[kind].items()]
    return ", ".join(parts) or "none"


def resize_lines(report: dict) -> list[str]:
    """The report's lines, unwrapped."""
    lines = ["resize: the spec differs from what the node holds"]
    for c in report["containers"]:
        lines.append(f"container {c['name']}: cgroups hold {_amounts(c['holds'])} "
                     f"(status.containerStatuses[].{c['holds_from']})")
        if c["allocated"]:
            lines.append(f"container {c['name']}: allocated {', '.join(f'{k} {v}' for k, v in c['allocated'].items())} "
                         "(allocatedResources: what the kubelet admitted)")
        lines.append(f"container {c['name']}: spec wants {_amounts(c['wants'])}")
    for cond in report["conditions"]:
        why = {"PodResizePending": {"Deferred": "the node has no room now; the kubelet retries as resources free up",
                                    "Infeasible": "this node will never take it; only a new resize changes that"},
               "PodResizeInProgress": {"Error": "actuating it failed; the kubelet retries at the next sync",
                                       "": "allocated; the kubelet is writing the new values to the cgroups"}}
        meaning = why.get(cond["type"], {}).get(cond["reason"], "")
        lines.append(f"why: {cond['type']} {cond['reason'] or '(no reason)'}"
                     + (f": {cond['message']}" if cond["message"] else "") + (f" ({meaning})" if meaning else ""))
    if not report["conditions"]:
        lines.append("why: no resize condition is set (the kubelet has not yet seen the resize)")
    lines.append("note: the cgroup tree below is computed from the spec: the values wanted, not those held")
    return lines
