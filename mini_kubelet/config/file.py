"""The static pod source: a directory (or one file) of Pod manifests, read into full SETs.

Upstream: pkg/kubelet/config/file.go (sourceFile: listConfig, extractFromDir, extractFromFile)
The kubelet re-reads the path every fileCheckFrequency (20 s) and, on Linux, when inotify reports a
change (file_linux.go); here the caller decides when to call list_config, on the virtual clock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from kubernetes.client import V1Pod

from .. import api, types
from ..errors import ManifestError
from ..types import SET, PodUpdate
from .common import MAX_CONFIG_LENGTH, try_decode_single_pod

FILE_CHECK_FREQUENCY = 20  # seconds: KubeletConfiguration fileCheckFrequency's default


# --8<-- [start:undelta_store]
class UndeltaStore:
    """A store that pushes its whole content after every change: how sources turn changes into SETs.

    Upstream: k8s.io/client-go/tools/cache/undelta_store.go UndeltaStore (keyed by MetaNamespaceKeyFunc)
    Go's store is a map, so the order of the pushed pods is unspecified; here it is the order of insertion.
    Two pods with one namespace/name: the later replaces the earlier.
    """

    def __init__(self, push: Callable[[list[V1Pod]], None]):
        self.items: dict[str, V1Pod] = {}
        self.push = push

    @staticmethod
    def key(pod: V1Pod) -> str:
        """Upstream: k8s.io/client-go/tools/cache/store.go MetaNamespaceKeyFunc"""
        return f"{pod.metadata.namespace}/{pod.metadata.name}" if pod.metadata.namespace else pod.metadata.name

    def add(self, pod: V1Pod) -> None:
        """Add or update one pod, then push everything. Upstream: UndeltaStore.Add / Update"""
        self.items[self.key(pod)] = pod
        self.push(list(self.items.values()))

    update = add

    def delete(self, pod: V1Pod) -> None:
        """Remove one pod, then push everything. Upstream: UndeltaStore.Delete"""
        self.items.pop(self.key(pod), None)
        self.push(list(self.items.values()))

    def replace(self, pods: list[V1Pod]) -> None:
        """Replace the whole content, then push it once. Upstream: UndeltaStore.Replace"""
        self.items = {self.key(pod): pod for pod in pods}
        self.push(list(self.items.values()))
# --8<-- [end:undelta_store]


# --8<-- [start:source_file]
class SourceFile:
    """Static pods from a path: each listing sends a SET from the "file" source.

    Upstream: pkg/kubelet/config/file.go sourceFile (NewSourceFile trims trailing separators)
    """

    def __init__(self, path: str, node_name: str, updates: Callable[[PodUpdate], None]):
        self.path = str(path).rstrip("/") or "/"
        self.node_name, self.updates = node_name, updates
        self.store = UndeltaStore(lambda pods: updates(PodUpdate(pods, SET, types.FILE_SOURCE)))
        self.log: list[str] = []  # what the kubelet logs about files it skipped

    def list_config(self) -> Optional[str]:
        """Read the path and send its pods; return the error the kubelet would log, or None.

        Upstream: pkg/kubelet/config/file.go sourceFile.listConfig
        """
        path = Path(self.path)
        if not path.exists():  # an empty SET still marks the source as seen
            self.updates(PodUpdate([], SET, types.FILE_SOURCE))
            return "path does not exist, ignoring"
        if path.is_dir():
            pods = self.extract_from_dir(path)
            if not pods:
                self.updates(PodUpdate([], SET, types.FILE_SOURCE))
                return None
            self.store.replace(pods)
            return None
        if path.is_file():
            try:
                self.store.replace([self.extract_from_file(path)])
            except ManifestError as err:
                return str(err)
            return None
        return "path is not a directory or file"

    def extract_from_dir(self, directory: Path) -> list[V1Pod]:
        """Every readable manifest directly in the directory, by file name; dot files skipped, no recursion.

        Upstream: pkg/kubelet/config/file.go sourceFile.extractFromDir
        """
        pods = []
        for entry in sorted(directory.glob("[!.]*"), key=lambda p: str(p)):
            if entry.is_dir():
                self.log.append(f"Provided manifest path is a directory, not recursing into manifest path: {entry}")
            elif entry.is_file():
                try:
                    pods.append(self.extract_from_file(entry))
                except ManifestError as err:
                    self.log.append(f"Could not process manifest file: {err}")
            else:
                self.log.append(f"Manifest path is not a directory or file: {entry}")
        return pods

    def extract_from_file(self, filename: Path) -> V1Pod:
        """One file's single Pod, defaulted as a static pod of this node; a ManifestError naming the file.

        Upstream: pkg/kubelet/config/file.go sourceFile.extractFromFile (with tryDecodeSinglePod)
        """
        source = str(filename)
        try:
            with open(filename, "rb") as file:
                data = file.read(MAX_CONFIG_LENGTH + 1)
        except OSError as err:
            raise ManifestError(source, "", f"cannot read file ({err.strerror or err})") from None
        if len(data) > MAX_CONFIG_LENGTH:
            raise ManifestError(source, "", f"the file is larger than {MAX_CONFIG_LENGTH} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ManifestError(source, "", "couldn't parse as pod, please check config file") from None
        docs = api.parse_yaml_documents(text, source)  # bad YAML, or an alias bomb: one line naming the file
        return try_decode_single_pod(docs[0] if docs else None, source, self.node_name, is_file=True)
# --8<-- [end:source_file]
