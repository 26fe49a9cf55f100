"""A scenario's fields checked from the field tables alone, before any reader makes a model (and loads the client).

Upstream: none (a course tool). `mini-kubelet run` calls check_fields first, so that a field of the wrong shape,
an unknown field, a bad duration, quantity, usage series, kubelet flag or inline Pod is one line at once. Each
check is one the format's reader (eviction/scenario.py, lifecycle/scenario.py, node/scenario.py) makes, with the same
Reader method and so the same message: a scenario with one mistake gets the reader's own line (with several,
this may name another of them first); what the tables cannot say (names that must match, required fields,
counts, manifests in files) is left to the reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import api, features
from . import fields
from .reader import Reader
from .settings import checked_kubelet_settings

EVICTION = "eviction"
_NEGATIVE = ("lastUsed", "detected")  # an image's times may be before the start
_POD_ENTRY = ("pods[] entry", "pods[] entry without at")  # an addPod event: a pods[] entry


def eviction_top(r: Reader, doc: Any) -> dict:
    """An eviction scenario's document as a mapping of its fields, refusing a manifest and another replay."""
    if isinstance(doc, dict) and isinstance(doc.get("kind"), str) and "apiVersion" in doc:
        raise api.ManifestError(r.source, "kind", f"this is a {doc['kind']} manifest, not a scenario (a scenario has "
                                "node:, pods: and events:, and takes Pods under pods:; see examples/scenarios/)")
    doc = r.mapping(doc, "", fields.names(EVICTION, ""))
    if doc.get("replay", fields.default(EVICTION, "", "replay")) != EVICTION:
        r.fail("replay", f"expected eviction (the default) or lifecycle, got {doc['replay']!r}")
    return doc


def resize_gate_problem() -> str:
    """Why a resize event cannot be replayed under the release in force ("" if it can): as require_in_place_resize says.

    Upstream: pkg/kubelet/allocation/allocation_manager.go (every resize entry point checks the gate)
    """
    gate, name, modelled = features.DEFAULT_FEATURE_GATE, "InPlacePodVerticalScaling", "1.36"
    if not gate.enabled(name):
        spec = gate.spec(name)
        stage = (spec.pre_release or "GA").lower() if spec else "absent"
        return (f"in-place Pod resize needs the {name} feature gate, which is {stage} and off in Kubernetes "
                f"{gate.release} (replay it with --kubernetes-version {modelled})")
    if gate.release != modelled:
        return f"in-place Pod resize is modelled as Kubernetes {modelled} has it; Kubernetes {gate.release} decides resizes by other rules"
    return ""


def check_fields(doc: Any, kind: str, where: str, base: Path) -> None:
    """Check a decoded scenario of this format (eviction, lifecycle, node) against its tables; ManifestError if not."""
    r = Reader(where, base)
    doc = eviction_top(r, doc) if kind == EVICTION else doc
    events = doc.get("events") if kind in ("lifecycle", "node") and isinstance(doc, dict) else None
    for i, event in enumerate(events if isinstance(events, list) else []):
        if isinstance(event, dict) and "resize" in event and resize_gate_problem():
            r.fail(f"events[{i}].resize", resize_gate_problem())  # before anything loads the client
    _Walk(r, kind, doc).mapping(doc, "", "")


class _Walk:
    """One scenario's walk through its format's tables."""

    def __init__(self, r: Reader, kind: str, doc: Any):
        self.r, self.kind, self.doc, self.table = r, kind, doc, fields.table(kind)

    def mapping(self, raw: Any, table: str, path: str, allowed: tuple[str, ...] = ()) -> None:
        """One mapping of the file (`table` names it in fields.py, `path` in the file) and every field it holds."""
        r, kind = self.r, self.kind
        if table == "node.kubelet" and kind != "lifecycle":
            return self.kubelet(raw)
        raw = r.mapping(raw, path, allowed or fields.names(kind, table))
        for field in fields.fields(kind, table):
            value = raw.get(field.name)
            at, below = f"{path}.{field.name}" if path else field.name, f"{table}.{field.name}" if table else field.name
            if value is None and field.default is fields.REQUIRED and field.type == "mapping":
                r.mapping(value, at)  # the readers read it first: "expected a mapping, got nothing"
            if not value:
                continue  # some readers take an empty value as left out (`kubelet: []`, `crashLoopBackOff: 0`)
            if below in self.table:
                self.mapping(value, below, at)
            elif f"{below}[]" in self.table and field.type == "list":
                for i, item in enumerate(r.sequence(value, at)):
                    self.mapping(item, f"{below}[]", f"{at}[{i}]")
            elif field.type in _POD_ENTRY:
                names = fields.names(kind, "pods[]")
                self.mapping(value, "pods[]", at, names if field.type == _POD_ENTRY[0] else
                             tuple(name for name in names if name != "at"))
            elif field.type.startswith("mapping"):  # of containers or volumes, by name
                placeholder = next((t for t in self.table if t.rsplit(".", 1)[0] == below), None)  # pods[].run.CONTAINER
                for name, item in r.mapping(value, at).items():
                    if placeholder and isinstance(item, dict):  # anything else may be a wrong name: the reader says so
                        self.mapping(item, placeholder, f"{at}.{name}")
            else:
                self.leaf(field, value, raw, at)

    def leaf(self, field: fields.Field, value: Any, parent: dict, at: str) -> None:
        r = self.r
        if field.type == fields.DURATION:
            r.duration(value, at, negative=field.name in _NEGATIVE)
        elif field.type == fields.QUANTITY:
            r.amount(value, at)
        elif field.type == fields.SERIES:
            r.series(value, at)
        elif field.type == "path" and "manifest" not in parent and not (r.base / str(value)).is_file():
            r.fail(at, f"no such file: {r.base / str(value)}")
        elif field.type == "Pod manifest" and isinstance(value, dict) and value.get("kind") == "Pod":
            name = value.get("metadata", {}).get("name") if isinstance(value.get("metadata"), dict) else None
            count = parent.get("count", 1)
            if self.kind == "node" and not (isinstance(name, str) and (count == 1 or "{i}" in name)):
                return  # the node reader checks the name (with its count) first
            try:
                api.checked_pod(value, r.source)
            except api.ManifestError as err:
                r.fail(at + (f".{err.path}" if err.path else ""), err.problem)

    def kubelet(self, raw: Any) -> None:
        """node.kubelet of an eviction or node scenario, read by kubelet_settings' own checks (the node format's
        own settings, maxPods and the image GC thresholds, are left to its reader)."""
        if self.kind == "node":
            raw = {k: v for k, v in self.r.mapping(raw, "node.kubelet", fields.names("node", "node.kubelet")).items()
                   if k in fields.names(EVICTION, "node.kubelet")}
        capacity = self.doc["node"].get("capacity")  # node: a mapping, as the walk got here
        if isinstance(capacity, dict) and capacity.get("memory") is not None:
            checked_kubelet_settings(self.r, raw, {"memory": self.r.amount(capacity["memory"], "node.capacity.memory")})
