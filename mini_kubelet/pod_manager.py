"""The pod manager: the kubelet's desired set of pods, and the mirror pods of its static pods.

Upstream: pkg/kubelet/pod/pod_manager.go (basicManager)
Pods are kept by UID and by full name; a mirror pod (the API server's copy of a static pod) is kept apart
and found through its static pod's full name. Go returns map values in no order; here, insertion order.
"""

from __future__ import annotations

from typing import Optional

from kubernetes.client import V1Pod

from . import types
from .config.config import get_pod_full_name


class BasicManager:
    """Pods and mirror pods by UID and full name, with mirror-to-static UID translations.

    Upstream: pkg/kubelet/pod/pod_manager.go basicManager
    """

    def __init__(self):
        self.pod_by_uid: dict[str, V1Pod] = {}
        self.pod_by_full_name: dict[str, V1Pod] = {}
        self.mirror_pod_by_uid: dict[str, V1Pod] = {}
        self.mirror_pod_by_full_name: dict[str, V1Pod] = {}
        self.translation_by_uid: dict[str, str] = {}  # mirror pod UID -> static pod UID
        self.generation = 0  # counts every update and deletion (a reader that saw the same number saw the same pods)
        self.order: dict[str, int] = {}  # uid -> when it entered pod_by_uid (GetPods' order)
        self._full_names: dict[str, tuple[V1Pod, str]] = {}  # uid -> (the pod held, its full name)
        self._entered = 0

    def update_pod(self, pod: V1Pod) -> None:
        """Add or replace a pod (AddPod is the same). Upstream: basicManager.UpdatePod (updatePodsInternal)"""
        self.generation += 1
        full_name = get_pod_full_name(pod)
        if types.is_mirror_pod(pod):
            self.mirror_pod_by_uid[pod.metadata.uid] = pod
            self.mirror_pod_by_full_name[full_name] = pod
            if full_name in self.pod_by_full_name:
                self.translation_by_uid[pod.metadata.uid] = self.pod_by_full_name[full_name].metadata.uid
        else:
            if pod.metadata.uid not in self.pod_by_uid:
                self._entered += 1
                self.order[pod.metadata.uid] = self._entered
            self.pod_by_uid[pod.metadata.uid] = pod
            self._full_names[pod.metadata.uid] = (pod, full_name)
            self.pod_by_full_name[full_name] = pod
            if full_name in self.mirror_pod_by_full_name:
                self.translation_by_uid[self.mirror_pod_by_full_name[full_name].metadata.uid] = pod.metadata.uid

    add_pod = update_pod

    def delete_pod(self, pod: V1Pod) -> None:
        """Forget a pod or a mirror pod. Upstream: basicManager.DeletePod"""
        self.generation += 1
        full_name = get_pod_full_name(pod)
        if types.is_mirror_pod(pod):
            self.mirror_pod_by_uid.pop(pod.metadata.uid, None)
            self.mirror_pod_by_full_name.pop(full_name, None)
            self.translation_by_uid.pop(pod.metadata.uid, None)
        else:
            self.pod_by_uid.pop(pod.metadata.uid, None)
            self.order.pop(pod.metadata.uid, None)
            self._full_names.pop(pod.metadata.uid, None)
            self.pod_by_full_name.pop(full_name, None)

    def get_pods(self) -> list[V1Pod]:
        """The desired pods, without mirror pods. Upstream: basicManager.GetPods"""
        return list(self.pod_by_uid.values())

    def pods_of(self, uids) -> list[V1Pod]:
        """The pods of these UIDs it has, in GetPods' order (found without going through every pod)."""
        return [self.pod_by_uid[uid] for uid in sorted((u for u in uids if u in self.order), key=self.order.get)]

    def get_pod_by_uid(self, uid: str) -> Optional[V1Pod]:
        """Upstream: basicManager.GetPodByUID"""
        return self.pod_by_uid.get(uid)

    def get_mirror_pod_by_pod(self, pod: V1Pod) -> Optional[V1Pod]:
        """The mirror pod of a static pod. Upstream: basicManager.GetMirrorPodByPod"""
        if not self.mirror_pod_by_full_name:
            return None
        held = self._full_names.get(pod.metadata.uid)  # a pod's name and namespace never change
        return self.mirror_pod_by_full_name.get(held[1] if held is not None and held[0] is pod else get_pod_full_name(pod))

    def get_pod_by_mirror_pod(self, mirror_pod: V1Pod) -> Optional[V1Pod]:
        """The static pod of a mirror pod. Upstream: basicManager.GetPodByMirrorPod"""
        return self.pod_by_full_name.get(get_pod_full_name(mirror_pod))
