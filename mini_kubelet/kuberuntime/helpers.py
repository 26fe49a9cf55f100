"""Small rules the runtime manager shares: when an init container failed, the back-off key of a container.

Upstream: pkg/kubelet/kuberuntime/helpers.go
"""

from __future__ import annotations

from kubernetes.client import V1Container, V1Pod

from mini_kubelet.container import CONTAINER_STATE_EXITED, CONTAINER_STATE_UNKNOWN, Status, hash_container


def is_init_container_failed(status: Status) -> bool:
    """An init container failed if it was OOM-killed, exited non-zero, or is in an unknown state.

    Upstream: pkg/kubelet/kuberuntime/helpers.go isInitContainerFailed
    """
    if status.reason == "OOMKilled":
        return True
    if status.state == CONTAINER_STATE_EXITED and status.exit_code != 0:
        return True
    return status.state == CONTAINER_STATE_UNKNOWN


# --8<-- [start:get_stable_key]
def get_stable_key(pod: V1Pod, container: V1Container) -> str:
    """The back-off key: pod name, namespace, UID, container name and spec hash (hex), joined by "_".

    A changed spec therefore starts a fresh back-off.
    Upstream: pkg/kubelet/kuberuntime/helpers.go getStableKey
    """
    meta = pod.metadata
    return f"{meta.name}_{meta.namespace}_{meta.uid}_{container.name}_{hash_container(container):x}"
# --8<-- [end:get_stable_key]
