"""The cluster around the replayed node: the API server's Pods, scenario events, ReplicaSets and the scheduler.

Upstream: none of these is the kubelet. The API server stores Pods and the status the kubelet writes
(pkg/kubelet/status/status_manager.go manager.syncPod is the kubelet's side); a ReplicaSet's controller
replaces a Pod that failed or is being deleted (pkg/controller/replicaset/replica_set.go manageReplicas);
the scheduler keeps a Pod off a node with a taint it does not tolerate (pkg/scheduler/framework/plugins/
tainttoleration). NodeReplay (replay.py) mixes this in.
"""

from __future__ import annotations

from ... import api, types
from ...api import models_equal
from .scenario import NodePod, replacement
from ..resize import apply_resize
from ..series import Series

RECREATE_DELAY = 2  # seconds for a ReplicaSet's controller and the scheduler to put a replacement on the node (a model)


class ClusterSide:
    """What happens outside the kubelet, on the replay's state (self is the NodeReplay)."""

    def _arrive(self, plan: NodePod, t: int) -> None:
        self.plans[plan.plan.pod.metadata.uid] = plan
        pod = api.deep_copy(plan.plan.pod)
        if plan.source == "file":
            self.static.append(pod)
        else:
            self.server.pods[pod.metadata.uid] = pod
        self.trace.note(t, "arrive", plan.name, f"{plan.name} arrives ({'a static Pod, from a file' if plan.source == 'file' else 'from the API server'})")

    def _event(self, event, t: int) -> bool:
        """A scenario event: a deletion, a resize, a usage change, an image pull. True if the API changed."""
        if event.kind == "deletePod":
            target = self.server.by_name(event.payload["pod"])
            if target is None:
                self.trace.note(t, "delete", event.payload["pod"], f"kubectl delete pod {event.payload['pod']}: not found")
                return False
            grace = self.server.delete(target, event.payload.get("gracePeriod"))
            if not types.is_mirror_pod(target):
                self.deleting.add(target.metadata.uid)
            self.trace.note(t, "delete", target.metadata.name, f"kubectl delete pod {target.metadata.name} (grace period {grace}s)")
            self._maybe_recreate(target, t)
            return True
        if event.kind == "resize":
            pod, line = apply_resize(self.server, event.payload)
            self.trace.note(t, "resize", event.payload["pod"], line)
            if pod is not None:  # the new limits may end its containers sooner than the replay's step assumed
                self.window = max(1, min(self.window, self._shortest_life(self.plans[pod.metadata.uid], pod)))
            return pod is not None
        if event.kind == "pullImage":
            image = event.payload
            self.store.add_image(image["name"], image["size"], self.clock.now(), pinned=image["pinned"], inodes=image["inodes"])
            self.trace.note(t, "pullImage", None, f"image {image['name']} pulled ({image['size']} bytes)")
            return False
        payload = event.payload
        if "node" in payload:
            for key, value in payload["node"].items():
                self.node_usage[key] = Series([(0, value)])
            self.trace.note(t, "set", None, "node usage set: " + ", ".join(f"{k} {v}" for k, v in payload["node"].items()))
            return False
        plan = next((p for p in self.plans.values() if p.name == payload["pod"]), None)
        if plan is None:
            self.trace.note(t, "set", payload["pod"], f"{payload['pod']} is not on the node: usage change ignored")
            return False
        for key, value in payload["values"].items():
            target = plan.plan.containers.setdefault(payload["container"], {})
            if key == "pids":
                plan.plan.pids = Series([(0, value)])
            else:
                target[key] = Series([(0, value)])
        for name, value in payload["volumes"].items():
            plan.plan.volumes[name] = Series([(0, value)])
        self.usage_changes += 1
        live = self.live.get(plan.plan.pod.metadata.uid)
        if live is not None:
            live.forget()
        for name, (start, cid) in list(live.instances.items()) if live else []:
            self._schedule_end(cid, plan, name, start)  # a new memory level may be at the limit now
        self.trace.note(t, "set", plan.name, f"{plan.name} usage set: " + ", ".join(f"{k} {v}" for k, v in payload["values"].items()))
        return False

    # --8<-- [start:controllers]
    def _maybe_recreate(self, stored, t: int) -> None:
        """A ReplicaSet's Pod that failed or is being deleted: its controller makes a new one, a few seconds later.

        Upstream: pkg/controller/replicaset/replica_set.go manageReplicas (filterActivePods leaves out Failed
        Pods and Pods being deleted, so the ReplicaSet is one short)
        """
        plan = self.plans.get(stored.metadata.uid)
        if plan is None or not plan.replica_set or stored.metadata.uid in self.recreated:
            return
        self.recreated.add(stored.metadata.uid)
        number = len(self.recreated)
        self.replacements.append((t + RECREATE_DELAY, replacement(plan, number, t + RECREATE_DELAY, self.sc.node_name)))

    def _create_replacement(self, plan: NodePod, t: int) -> bool:
        self.plans[plan.plan.pod.metadata.uid] = plan
        self.trace.note(t, "recreate", plan.name, f"ReplicaSet {plan.replica_set} creates {plan.name}")
        self.pending.append(plan)
        return self._bind_pending(t)

    def _bind_pending(self, t: int) -> bool:
        """Pending Pods the scheduler can place: none while the node has a pressure taint they do not tolerate.

        Upstream: pkg/scheduler/framework/plugins/tainttoleration (Filter), with the taints that
        pkg/controller/nodelifecycle adds for the node's pressure conditions (TaintNodesByCondition)
        """
        bound = False
        for plan in list(self.pending):
            blocking = self.events.blocking_taint(plan.plan.pod, t)
            if blocking:
                if not getattr(plan, "_noted", False):
                    plan._noted = True
                    self.trace.note(t, "pending", plan.name, f"{plan.name} stays Pending: the node has the taint {blocking}:NoSchedule")
                continue
            self.pending.remove(plan)
            if getattr(plan, "_noted", False):
                self.trace.note(t, "bind", plan.name, f"the scheduler binds {plan.name} to the node: no taint keeps it away")
            self._arrive(plan, t)
            bound = True
        return bound
    # --8<-- [end:controllers]

    def _stored(self, pod):
        """The API's copy of a Pod the kubelet knows: the same UID, or a static Pod's mirror Pod."""
        if not types.is_static_pod(pod):
            return self.server.pods.get(pod.metadata.uid)
        mirror = self.kubelet.pod_manager.get_mirror_pod_by_pod(pod)
        return None if mirror is None else self.server.pods.get(mirror.metadata.uid)

    def _write_statuses(self) -> bool:
        """Store what the status manager writes; remove a deleted Pod once it is finished. True if the API's Pods changed.

        Upstream: pkg/kubelet/status/status_manager.go manager.syncPod (mergePodStatus; the delete with grace 0)
        """
        changed, sm, t = len(self.server.notes) != self.mirrors_seen, self.kubelet.status_manager, self.now()
        self.mirrors_seen = len(self.server.notes)
        if sm.generation == self.statuses_seen:
            return changed  # nothing new to write, and no deleted Pod newly finished
        fresh = self.unwritten.union(sm.changed[self.changes_read:])  # the only ones that may have a new version
        self.changes_read = len(sm.changed)
        for uid in [u for u in sm.pod_statuses if u in fresh] if fresh else ():  # only the statuses with a new version
            cached = sm.pod_statuses[uid]
            if self.versions.get(uid) == cached.version:
                continue
            pod = self.kubelet.pod_manager.get_pod_by_uid(uid)
            stored = None if pod is None else self._stored(pod)
            if stored is None:
                self.unwritten.add(uid)
                continue  # not in the API (yet): written once it is
            self.unwritten.discard(uid)
            self.versions[uid] = cached.version
            status = self.kubelet.pod_status(pod)
            if status is not None and not models_equal(status, stored.status):
                stored.status = api.deep_copy(status)
                changed |= self.statuses_back  # the API source's watch delivers it: HandlePodReconcile
                self.events.status_written(stored, t)
                if status.phase == "Failed":
                    self._maybe_recreate(stored, t)
        for uid in [u for u in self.deleting if sm.can_be_deleted(u)]:
            self.deleting.discard(uid)
            stored = self.server.pods.pop(uid, None)
            if stored is not None:
                self.trace.note(t, "removed", stored.metadata.name, f"{stored.metadata.name} is removed from the API server")
                changed = True
        self.statuses_seen = sm.generation  # what this pass wrote counts as seen
        return changed
