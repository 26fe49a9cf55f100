"""The API server as one node's kubelet sees it in a lifecycle replay: stored Pods, deletions, mirror Pods, status.

Upstream: none here (the API server); the kubelet's side of it is pkg/kubelet/pod/mirror_client.go (mirror
pods) and pkg/kubelet/status/status_manager.go (the status it writes, the deletion of a finished pod)
"""

from __future__ import annotations

from datetime import timedelta
from typing import Optional

from kubernetes.client import V1Pod

from ... import api, types
from ...kubelet_main import Kubelet


# --8<-- [start:api_server]
class APIServer:
    """The Pods bound to this node as the API server stores them: deletions, mirror pods, the status the kubelet writes.

    Upstream: none here (the API server); its behaviour as the kubelet sees it through the API source
    """

    def __init__(self, kubelet: Kubelet):
        self.kubelet, self.clock = kubelet, kubelet.clock
        self.pods: dict[str, V1Pod] = {}  # by UID, in creation order
        self.mirror_count = 0
        self.notes: list[str] = []
        self.version = 0  # counts the changes the API server makes to its pods (a deletion, a mirror pod)
        self._sent: dict[str, tuple] = {}  # uid -> (the stored pod, its status, its deletion, the copy last sent)

    def send(self) -> None:
        """The API source's next list: a copy of every stored pod (the kubelet never shares the API's objects).

        A pod is copied again only if it changed since the last list (a status is written as a new object; a
        deletion sets its timestamp): otherwise the copy sent then still holds the same values, since the
        kubelet's config keeps what it was sent and hands the kubelet copies of its own. A pod's spec never
        changes once stored, and the config only reads the specs it is sent, so a new copy shares the spec of
        the last (its config then finds them equal at once).
        """
        sent = {}
        for uid, pod in self.pods.items():
            meta, last, status = pod.metadata, self._sent.get(uid), pod.status
            if (last is not None and last[0] is pod and last[1] is status and last[2] == meta.deletion_timestamp
                    and last[3] == meta.deletion_grace_period_seconds):
                sent[uid] = last
                continue
            mark = (pod, status, meta.deletion_timestamp, meta.deletion_grace_period_seconds)
            if last is None or last[0] is not pod:
                sent[uid] = mark + (api.deep_copy(pod),)
            else:
                sent[uid] = mark + (pod.model_copy(update={"metadata": api.deep_copy(meta), "spec": last[4].spec,
                                                           "status": api.deep_copy(pod.status)}),)
        self._sent = sent
        self.kubelet.send(types.API_SERVER_SOURCE, [entry[4] for entry in sent.values()])

    def by_name(self, name: str) -> Optional[V1Pod]:
        return next((p for p in self.pods.values() if p.metadata.name == name), None)

    def delete(self, pod: V1Pod, grace_period: Optional[int]) -> int:
        """A graceful deletion: deletionTimestamp = now + grace period. Upstream: the API server's graceful delete"""
        grace = pod.spec.termination_grace_period_seconds if grace_period is None else grace_period
        if pod.metadata.deletion_timestamp is None:
            self.version += 1
            pod.metadata.deletion_timestamp = self.clock.now() + timedelta(seconds=grace)
            pod.metadata.deletion_grace_period_seconds = grace
        return grace

    def create_mirror_pod(self, pod: V1Pod) -> None:
        """A static pod's API copy, marked with config.mirror. Upstream: pkg/kubelet/pod/mirror_client.go CreateMirrorPod"""
        self.mirror_count += 1
        self.version += 1
        mirror = api.deep_copy(pod)
        annotations = dict(mirror.metadata.annotations or {})
        annotations[types.CONFIG_MIRROR_ANNOTATION_KEY] = annotations.get(types.CONFIG_HASH_ANNOTATION_KEY, "")
        mirror.metadata.annotations = annotations
        mirror.metadata.uid = f"{pod.metadata.name}-mirror-{self.mirror_count}"  # the API server gives a new UID
        mirror.metadata.creation_timestamp, mirror.status = self.clock.now(), None
        self.pods[mirror.metadata.uid] = mirror
        self.notes.append(f"mirror pod {pod.metadata.name} created in the API (uid {mirror.metadata.uid})")

    def delete_mirror_pod(self, mirror_pod: V1Pod) -> bool:
        """Delete with grace period 0 and a UID precondition; False if it is gone already.

        Upstream: pkg/kubelet/pod/mirror_client.go basicMirrorClient.DeleteMirrorPod
        """
        if self.pods.pop(mirror_pod.metadata.uid, None) is None:
            return False
        self.version += 1
        self.notes.append(f"the kubelet deleted mirror pod {mirror_pod.metadata.name} (uid {mirror_pod.metadata.uid})")
        return True
# --8<-- [end:api_server]
