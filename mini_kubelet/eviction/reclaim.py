"""Node-level reclaim: the garbage collectors a disk signal runs before any pod is evicted.

Upstream: pkg/kubelet/eviction/helpers.go buildSignalToNodeReclaimFuncs. Memory and pids have no
node-level reclaim; for disk signals the kubelet deletes dead containers, then unused images.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Callable, Optional

from kubernetes.client import V1Pod

from .. import stats
from . import images
from .api import (SIGNAL_CONTAINERFS_AVAILABLE, SIGNAL_CONTAINERFS_INODES_FREE, SIGNAL_IMAGEFS_AVAILABLE,
                  SIGNAL_IMAGEFS_INODES_FREE, SIGNAL_NODEFS_AVAILABLE, SIGNAL_NODEFS_INODES_FREE,
                  containerfs_signals_known)

NodeReclaimFunc = Callable[[datetime], tuple[int, int]]  # now -> (bytes, inodes) freed


def build_signal_to_node_reclaim_funcs(image_store: Optional[images.ImageStore],
                                       container_store: Optional[images.ContainerStore],
                                       active_pods: Callable[[], list[V1Pod]],
                                       dedicated_image_fs: bool,
                                       split_container_fs: bool = False) -> dict[str, list[NodeReclaimFunc]]:
    """Which garbage collectors each disk signal runs: container GC, then image GC.

    From 1.29 the containerfs signals run those of the filesystem they stand for, and a split containerfs
    (images alone on imagefs) gives imagefs the image GC and nodefs (= containerfs) the container GC.
    Upstream: pkg/kubelet/eviction/helpers.go buildSignalToNodeReclaimFuncs
    """
    def delete_all_unused_containers(now: datetime) -> tuple[int, int]:
        if container_store is None:
            return 0, 0
        uids = [pod.metadata.uid or pod.metadata.name for pod in active_pods()]
        return container_store.delete_all_unused_containers(now, uids)

    def delete_unused_images(now: datetime) -> tuple[int, int]:
        return image_store.delete_unused_images(now) if image_store is not None else (0, 0)

    gc = [delete_all_unused_containers, delete_unused_images]
    newer = containerfs_signals_known()
    if dedicated_image_fs and split_container_fs and newer:
        node, image = [delete_all_unused_containers], [delete_unused_images]
    elif dedicated_image_fs:  # pods' writable layers and images live on imagefs: GC cannot help nodefs
        node, image = [], gc
    else:
        node, image = gc, gc
    funcs = {SIGNAL_NODEFS_AVAILABLE: node, SIGNAL_NODEFS_INODES_FREE: node,
             SIGNAL_IMAGEFS_AVAILABLE: image, SIGNAL_IMAGEFS_INODES_FREE: image}
    if newer:  # containerfs is nodefs unless the writable layers share the dedicated imagefs
        container = image if dedicated_image_fs and not split_container_fs else node
        funcs.update({SIGNAL_CONTAINERFS_AVAILABLE: container, SIGNAL_CONTAINERFS_INODES_FREE: container})
    return funcs


def credit_reclaimed(summary: stats.Summary, freed_bytes: int, freed_inodes: int,
                      dedicated_image_fs: bool) -> stats.Summary:
    """The summary re-measured after GC: what was freed comes back on the filesystem that holds images.

    Upstream: none (upstream asks the summary provider again; Manager uses this without summary_after_reclaim)
    """
    summary = copy.deepcopy(summary)
    runtime = summary.node.runtime
    filesystems = [runtime.image_fs if runtime is not None else None]
    if runtime is not None:
        filesystems.append(runtime.container_fs)  # 1.29+: reported again as containerFs (not split here)
    if not dedicated_image_fs:
        filesystems.append(summary.node.fs)  # one filesystem, reported twice
    seen: set[int] = set()
    for fs in filesystems:
        if fs is None or id(fs) in seen:
            continue
        seen.add(id(fs))
        if fs.available_bytes is not None:
            fs.available_bytes += freed_bytes
        if fs.used_bytes is not None:
            fs.used_bytes = max(fs.used_bytes - freed_bytes, 0)
        if fs.inodes_free is not None:
            fs.inodes_free += freed_inodes
        if fs.inodes_used is not None:
            fs.inodes_used = max(fs.inodes_used - freed_inodes, 0)
    return summary
