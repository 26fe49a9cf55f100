"""The API server source: list and watch the pods bound to this node, and send each change as a full SET.

Upstream: pkg/kubelet/config/apiserver.go (NewSourceApiserver, newSourceApiserverFromLW) with
k8s.io/client-go/tools/cache reflector.go (ListAndWatch) feeding an UndeltaStore.
Read-only: it lists and watches, and never writes to the cluster. The kubelet first waits for its Node
to be synced (polling every second); here the caller decides when to start. The Reflector runs forever
in a goroutine; here run() makes a given number of watch connections, one after the other.
Left out of the reflector: its back-off between failed attempts, paging of lists (limit 500), and the
"very short watch" rule (a watch that ends within a second having sent nothing forces a relist).
"""

from __future__ import annotations

import logging
from typing import Callable, Optional

from kubernetes import client, watch
from kubernetes.client.rest import ApiException
from urllib3.exceptions import ProtocolError

from .. import types
from ..errors import UsageError
from ..types import SET, PodUpdate
from .file import UndeltaStore

WAIT_FOR_API_SERVER_SYNC_PERIOD = 1  # seconds between checks that the node informer has synced
MIN_WATCH_TIMEOUT = 5 * 60  # seconds: the reflector's watch timeout is random in [5 min, 10 min)


class _ClientLog(logging.Handler):
    """The client library's error records, kept instead of printed (it logs an exec plugin's failure, not raise)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


CLIENT_LOG = _ClientLog()  # on the root logger, so that logging never sets up its own stderr handler


def load_client(kubeconfig: str, context: Optional[str] = None) -> client.ApiClient:
    """An API client from a kubeconfig file, or a UsageError naming the file.

    Upstream: cmd/kubelet/app/server.go buildKubeletClientConfig (the kubelet reads --kubeconfig)
    The library's log lines (an exec plugin that fails, urllib3's retries) are not printed: a failed exec
    plugin is the one-line error instead.
    """
    from kubernetes import config
    root = logging.getLogger()
    if CLIENT_LOG not in root.handlers:
        root.addHandler(CLIENT_LOG)
    CLIENT_LOG.messages.clear()
    try:
        api_client = config.new_client_from_config(config_file=kubeconfig, context=context, persist_config=False)
    except Exception as err:  # ConfigException, a missing file, bad YAML: all one line for the user
        problem = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UsageError(f"{kubeconfig}: cannot use this kubeconfig: {problem}") from None
    if CLIENT_LOG.messages:
        problem = CLIENT_LOG.messages[0].strip().splitlines()[0] if CLIENT_LOG.messages[0].strip() else "no output"
        raise UsageError(f"{kubeconfig}: cannot use this kubeconfig: its exec plugin gave no credentials: {problem}")
    return api_client


# --8<-- [start:source_apiserver]
class SourceApiserver:
    """The pods whose spec.nodeName is this node, in all namespaces, as SETs from the "api" source.

    Upstream: pkg/kubelet/config/apiserver.go NewSourceApiserver (the ListWatch and its field selector)
    """

    def __init__(self, api_client: client.ApiClient, node_name: str, updates: Callable[[PodUpdate], None],
                 kubeconfig: str = "<kubeconfig>", watch_timeout: int = MIN_WATCH_TIMEOUT):
        self.core = client.CoreV1Api(api_client)
        self.field_selector = f"spec.nodeName={node_name}"  # fields.OneTermEqualSelector
        self.store = UndeltaStore(lambda pods: updates(PodUpdate(pods, SET, types.API_SERVER_SOURCE)))
        self.kubeconfig, self.watch_timeout = kubeconfig, watch_timeout
        self.last_sync_resource_version = ""
        self.last_sync_resource_version_unavailable = False
        self.log: list[str] = []

    def relist_resource_version(self) -> str:
        """Which resourceVersion a list asks for: "0" at first (the watch cache), then the last one seen.

        Upstream: k8s.io/client-go/tools/cache/reflector.go Reflector.relistResourceVersion
        """
        if self.last_sync_resource_version_unavailable:
            return ""  # a consistent read, after the last version was reported expired
        return self.last_sync_resource_version or "0"

    def list(self) -> None:
        """List the node's pods, replace the store with them (one SET) and remember the list's resourceVersion.

        Upstream: k8s.io/client-go/tools/cache/reflector.go Reflector.list
        """
        try:
            pods = self._call(lambda: self.core.list_pod_for_all_namespaces(
                field_selector=self.field_selector, resource_version=self.relist_resource_version()))
        except ApiException as err:
            if err.status != 410:
                raise
            self.last_sync_resource_version_unavailable = True  # list again from etcd
            pods = self._call(lambda: self.core.list_pod_for_all_namespaces(
                field_selector=self.field_selector, resource_version=self.relist_resource_version()))
        self.last_sync_resource_version_unavailable = False
        self.store.replace(list(pods.items))
        self.last_sync_resource_version = pods.metadata.resource_version

    def watch(self) -> bool:
        """One watch connection from the last resourceVersion; False when it ended with 410 Gone (relist).

        Upstream: k8s.io/client-go/tools/cache/reflector.go Reflector.watch and watchHandler
        A connection that closes normally is resumed by the next call from the last resourceVersion seen.
        """
        stream = watch.Watch().stream(
            self.core.list_pod_for_all_namespaces, field_selector=self.field_selector,
            resource_version=self.last_sync_resource_version, timeout_seconds=self.watch_timeout,
            allow_watch_bookmarks=True)
        events = iter(stream)
        try:
            while (event := self._call(lambda: next(events, None), streaming=True)) is not None:
                kind, raw = event["type"], event["raw_object"]
                if kind == "ADDED":
                    self.store.add(event["object"])
                elif kind == "MODIFIED":
                    self.store.update(event["object"])
                elif kind == "DELETED":
                    self.store.delete(event["object"])
                elif kind != "BOOKMARK":  # a bookmark only moves the resourceVersion on
                    self.log.append(f"unable to understand watch event {kind}")
                    continue
                self.last_sync_resource_version = raw.get("metadata", {}).get("resourceVersion", "")
        except ApiException as err:
            if err.status != 410:
                raise
            self.log.append(f"watch of *v1.Pod closed with: {err.reason}")
            return False
        except ProtocolError as err:  # the connection broke mid-stream: resume from the last resourceVersion
            self.log.append(f"watch of *v1.Pod ended with: {err}")
        return True

    def run(self, connections: int) -> None:
        """List, then watch `connections` times, listing again whenever a watch says 410 Gone.

        Upstream: k8s.io/client-go/tools/cache/reflector.go Reflector.Run (ListAndWatch in a back-off loop)
        """
        self.list()
        for _ in range(connections):
            if not self.watch():
                self.list()

    def _call(self, request, streaming: bool = False):
        """Run a request; errors a user can fix become one-line UsageErrors naming the kubeconfig."""
        try:
            return request()
        except ApiException as err:
            if err.status in (401, 403):
                raise UsageError(f"{self.kubeconfig}: the API server refused to list pods "
                                 f"({self.field_selector}): {err.status} {err.reason}") from None
            if err.status == 410:
                raise
            raise UsageError(f"{self.kubeconfig}: the API server answered {err.status} {err.reason}") from None
        except ProtocolError:
            if streaming:
                raise
            host = self.core.api_client.configuration.host
            raise UsageError(f"{self.kubeconfig}: the connection to the API server at {host} broke") from None
        except Exception as err:  # urllib3 connection errors and the like
            host = self.core.api_client.configuration.host
            cause = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise UsageError(f"{self.kubeconfig}: cannot reach the API server at {host}: {cause}") from None
# --8<-- [end:source_apiserver]
