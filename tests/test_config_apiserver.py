"""Chapter 1: the API server source, through the official client's real HTTP code, against a loopback server.

The server below speaks the API server's list and watch wire format: a PodList with metadata.resourceVersion,
chunked watch events (ADDED, MODIFIED, DELETED, BOOKMARK), an ERROR event with 410 Gone, and a connection
dropped mid-stream. What the source must do is the reflector's behaviour in client-go
(tools/cache/reflector.go: list from "0", watch from the last resourceVersion, relist after 410) feeding the
UndeltaStore that pkg/kubelet/config/apiserver.go gives it (every change becomes a full SET).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

from mini_kubelet import types
from mini_kubelet.config.apiserver import SourceApiserver, load_client
from mini_kubelet.config.config import PodConfig
from mini_kubelet.errors import UsageError
from mini_kubelet.types import ADD, REMOVE, SET, UPDATE

pytestmark = pytest.mark.ch1

NODE = "node-1"


def pod(name, rv, image="nginx"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": str(rv)},
            "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": image}]}}


def event(kind, obj):
    return {"type": kind, "object": obj}


GONE = event("ERROR", {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired",
                       "message": "too old resource version: 12 (20)"})
DROP, END = "drop", "end"


class FakeAPIServer:
    """Lists and watch connections served from a script, and fixed objects by path; every request is recorded.

    `objects` maps a path (e.g. /api/v1/nodes/node-1) to the (code, body) a GET of it answers.
    """

    def __init__(self, lists, watches, status=200, objects=None):
        self.lists, self.watches, self.status, self.requests = list(lists), list(watches), status, []
        self.objects = dict(objects or {})
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                server.requests.append((url.path, query))
                if server.status != 200:
                    return self.reply(server.status, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                                      "code": server.status, "reason": "Forbidden",
                                                      "message": 'pods is forbidden: User "x" cannot list pods'})
                if url.path in server.objects:
                    return self.reply(*server.objects[url.path])
                if query.get("watch") != "true":
                    version, items = server.lists.pop(0)
                    return self.reply(200, {"kind": "PodList", "apiVersion": "v1",
                                            "metadata": {"resourceVersion": str(version)}, "items": items})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for item in server.watches.pop(0):
                    if item == DROP:  # no terminating chunk: the client sees a broken connection
                        self.close_connection = True
                        self.wfile.flush()
                        return
                    if item == END:
                        break
                    data = (json.dumps(item) + "\n").encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            def reply(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def kubeconfig(tmp_path, url):
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": url}}],
        "users": [{"name": "test", "user": {}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}]}))
    return str(path)


def test_list_watch_bookmark_drop_gone_relist(tmp_path):
    """List, then watch: events become SETs, a dropped connection resumes, 410 Gone forces a relist."""
    script_lists = [(10, [pod("a", 9)]), (20, [pod("a", 13), pod("c", 19)])]
    script_watches = [
        [event("ADDED", pod("b", 11)), event("BOOKMARK", {"kind": "Pod", "apiVersion": "v1",
                                                          "metadata": {"resourceVersion": "12"}}), DROP],
        [event("MODIFIED", pod("a", 13, image="nginx:2")), GONE],
        [event("DELETED", pod("a", 21)), END],
    ]
    with FakeAPIServer(script_lists, script_watches) as server:
        path = kubeconfig(tmp_path, server.url)
        sets = []
        source = SourceApiserver(load_client(path), NODE, sets.append, kubeconfig=path)
        source.run(connections=3)
    requests = [(q.get("watch"), q.get("resourceVersion"), q.get("fieldSelector")) for _, q in server.requests]
    assert requests == [
        (None, "0", "spec.nodeName=node-1"),  # the first list may come from the watch cache
        ("true", "10", "spec.nodeName=node-1"),  # watch from the list's resourceVersion
        ("true", "12", "spec.nodeName=node-1"),  # resumed after the dropped connection, from the bookmark
        (None, "13", "spec.nodeName=node-1"),  # 410 Gone: relist from the last resourceVersion seen
        ("true", "20", "spec.nodeName=node-1"),
    ]
    assert {p for p, _ in server.requests} == {"/api/v1/pods"}  # all namespaces, read-only GETs
    assert all(u.op == SET and u.source == "api" for u in sets)
    names = [[(p.metadata.name, p.spec.containers[0].image) for p in u.pods] for u in sets]
    assert names == [
        [("a", "nginx")],  # the list
        [("a", "nginx"), ("b", "nginx")],  # ADDED (the bookmark sends nothing)
        [("a", "nginx:2"), ("b", "nginx")],  # MODIFIED
        [("a", "nginx"), ("c", "nginx")],  # the relist replaces everything
        [("c", "nginx")],  # DELETED
    ]
    assert source.log[0].startswith("watch of *v1.Pod ended with:")
    assert source.log[1] == "watch of *v1.Pod closed with: Expired: too old resource version: 12 (20)"


def test_api_source_through_pod_config(tmp_path):
    """The SETs merge into ADD, UPDATE and REMOVE, each pod annotated with the "api" source."""
    with FakeAPIServer([(10, [pod("a", 9)])], [[event("ADDED", pod("b", 11)),
                                                event("MODIFIED", pod("a", 12, image="nginx:2")),
                                                event("DELETED", pod("b", 13)), END]]) as server:
        config = PodConfig()
        path = kubeconfig(tmp_path, server.url)
        SourceApiserver(load_client(path), NODE, config.channel("api"), kubeconfig=path).run(connections=1)
    assert [(u.op, [p.metadata.name for p in u.pods]) for u in config.updates] == [
        (ADD, ["a"]), (ADD, ["b"]), (UPDATE, ["a"]), (REMOVE, ["b"])]
    assert config.updates[0].pods[0].metadata.annotations[types.CONFIG_SOURCE_ANNOTATION_KEY] == "api"


def test_forbidden_is_one_line(tmp_path):
    with FakeAPIServer([], [], status=403) as server:
        path = kubeconfig(tmp_path, server.url)
        with pytest.raises(UsageError) as err:
            SourceApiserver(load_client(path), NODE, lambda u: None, kubeconfig=path).run(connections=1)
    assert str(err.value) == f"{path}: the API server refused to list pods (spec.nodeName=node-1): 403 Forbidden"


def test_unreachable_is_one_line(tmp_path):
    with FakeAPIServer([], []) as server:
        url = server.url
    path = kubeconfig(tmp_path, url)  # the server has gone: nothing listens on that port any more
    with pytest.raises(UsageError) as err:
        SourceApiserver(load_client(path), NODE, lambda u: None, kubeconfig=path).run(connections=1)
    assert str(err.value).startswith(f"{path}: cannot reach the API server at {url}:") and "\n" not in str(err.value)


@pytest.mark.parametrize("content", [None, "::: not yaml", "apiVersion: v1\nkind: Config\n"])
def test_bad_kubeconfig_is_one_line(tmp_path, content):
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UsageError) as err:
        load_client(str(path))
    assert str(err.value).startswith(f"{path}: cannot use this kubeconfig: ") and "\n" not in str(err.value)
