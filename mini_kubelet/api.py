"""Pods, Nodes and quantities, read from real Kubernetes manifests through the official client.

Upstream: k8s.io/api/core/v1 (the types) and k8s.io/apimachinery/pkg/api/resource (Quantity).
"""

from __future__ import annotations

import copy
import json
import math
import re
from decimal import Decimal
from pathlib import Path
from typing import Any, Union

import pydantic
import yaml
from kubernetes.client import ApiClient, V1Node, V1Pod
from kubernetes.utils import parse_quantity as _client_parse_quantity

from .errors import ManifestError, UsageError  # noqa: F401  (api.ManifestError, api.UsageError)

MilliCPU = int  # thousandths of a CPU
Bytes = int

Manifest = Union[V1Pod, V1Node]

# The grammar of a Quantity string: a signed decimal number, then an optional binary suffix
# (Ki..Ei), decimal suffix (n, u, m, k, M..E) or decimal exponent (e3, E-2). Python's Decimal
# accepts more (spaces, underscores, "NaN"), so strings are checked against this first.
_QUANTITY = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([KMGTPE]i|[eE][+-]?\d+|[numkMGTPE])?")

# Resources whose limit may not be below the request (API validation of a container).
_LIMITED = ("cpu", "memory", "ephemeral-storage")


# --8<-- [start:parse_quantity]
def parse_quantity(text: Any, *, source: str = "<manifest>", path: str = "") -> Decimal:
    """Parse a Kubernetes quantity ("250m", "1Gi", 2) into its exact Decimal value.

    Upstream: k8s.io/apimachinery/pkg/api/resource/quantity.go ParseQuantity
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ManifestError(source, path, f"invalid quantity {json.dumps(text, default=str)}")
    string = str(text)  # a YAML float 0.1 must stay 0.1, not the binary float's expansion
    if not _QUANTITY.fullmatch(string):
        raise ManifestError(source, path, f'invalid quantity "{string}"')
    return _client_parse_quantity(string)
# --8<-- [end:parse_quantity]


# --8<-- [start:milli_value]
def milli_value(quantity: Decimal | str | int) -> int:
    """The quantity in thousandths, rounded up (so 0.1m of CPU is 1 millicore).

    Upstream: k8s.io/apimachinery/pkg/api/resource/quantity.go Quantity.MilliValue
    """
    return math.ceil(_as_decimal(quantity) * 1000)
# --8<-- [end:milli_value]


# --8<-- [start:value]
def value(quantity: Decimal | str | int) -> int:
    """The quantity as a whole number, rounded up (so 1.5 bytes is 2 bytes).

    Upstream: k8s.io/apimachinery/pkg/api/resource/quantity.go Quantity.Value
    """
    return math.ceil(_as_decimal(quantity))
# --8<-- [end:value]


def _as_decimal(quantity: Decimal | str | int) -> Decimal:
    return quantity if isinstance(quantity, Decimal) else parse_quantity(quantity)


def pod_from_manifest(doc: Any, source: str = "<manifest>") -> V1Pod:
    """Check a Pod manifest (a dict) and turn it into the client's V1Pod model."""
    _expect_kind(doc, "Pod", source)
    doc = copy.deepcopy(doc)
    _check_metadata(doc, source)
    spec = _mapping(doc.get("spec"), source, "spec")
    if not spec.get("containers"):
        raise ManifestError(source, "spec.containers", "a Pod needs at least one container")
    seen: dict[str, str] = {}
    for field in ("initContainers", "containers"):
        for i, container in enumerate(_sequence(spec.get(field), source, f"spec.{field}")):
            path = f"spec.{field}[{i}]"
            _check_container(container, source, path)
            name = container["name"]
            if name in seen:
                raise ManifestError(source, f"{path}.name", f'duplicate name "{name}" (also {seen[name]})')
            seen[name] = path
    if spec.get("overhead") is not None:
        _check_resource_list(spec["overhead"], source, "spec.overhead")
    return _deserialize(doc, "V1Pod", source)


def node_from_manifest(doc: Any, source: str = "<manifest>") -> V1Node:
    """Check a Node manifest (a dict) and turn it into the client's V1Node model."""
    _expect_kind(doc, "Node", source)
    doc = copy.deepcopy(doc)
    _check_metadata(doc, source)
    status = _mapping(doc.get("status", {}), source, "status")
    for field in ("capacity", "allocatable"):
        if status.get(field) is not None:
            _check_resource_list(status[field], source, f"status.{field}")
    return _deserialize(doc, "V1Node", source)


def read_text(path: str | Path) -> str:
    """A file's text, or a ManifestError naming the file when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ManifestError(str(path), "", f"cannot read file ({getattr(err, 'strerror', None) or err})") from None


def load_manifests(path: str | Path) -> list[Manifest]:
    """Read every Pod and Node in a YAML or JSON file (several documents, or a kind: List)."""
    source = str(path)
    text = read_text(path)
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or "cannot parse"
        raise ManifestError(source, where, f"invalid YAML ({problem})") from None
    objects: list[Manifest] = []
    for number, doc in enumerate(docs, start=1):
        doc_source = source if len(docs) == 1 else f"{source} (document {number})"
        if isinstance(doc, dict) and doc.get("kind") == "List":
            items = _sequence(doc.get("items"), doc_source, "items")
            objects += [_from_manifest(item, doc_source, f"items[{i}]") for i, item in enumerate(items)]
        else:
            objects.append(_from_manifest(doc, doc_source, ""))
    if not objects:
        raise ManifestError(source, "", "no Kubernetes objects found")
    return objects


def _from_manifest(doc: Any, source: str, prefix: str) -> Manifest:
    builders = {"Pod": pod_from_manifest, "Node": node_from_manifest}
    try:
        if not isinstance(doc, dict):
            raise ManifestError(source, "", f"expected a Pod or Node manifest (a mapping), got {type_name(doc)}")
        if doc.get("kind") not in builders:
            got = json.dumps(doc["kind"]) if "kind" in doc else "no kind"
            raise ManifestError(source, "kind", f"expected Pod or Node, got {got}")
        return builders[doc["kind"]](doc, source)
    except ManifestError as err:
        if not prefix:
            raise
        inner = f"{prefix}.{err.path}" if err.path else prefix
        raise ManifestError(err.source, inner, err.problem) from None


def _expect_kind(doc: Any, kind: str, source: str) -> None:
    if not isinstance(doc, dict):
        raise ManifestError(source, "", f"expected a {kind} manifest (a mapping), got {type_name(doc)}")
    if doc.get("kind") != kind:
        got = json.dumps(doc.get("kind")) if "kind" in doc else "no kind"
        raise ManifestError(source, "kind", f"expected {kind}, got {got}")
    if doc.get("apiVersion") != "v1":
        raise ManifestError(source, "apiVersion", f'expected "v1", got {json.dumps(doc.get("apiVersion"))}')


def _check_metadata(doc: dict, source: str) -> None:
    metadata = _mapping(doc.get("metadata"), source, "metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ManifestError(source, "metadata.name", "a name is required")


def _check_container(container: Any, source: str, path: str) -> None:
    container = _mapping(container, source, path)
    name = container.get("name")
    if not isinstance(name, str) or not name:
        raise ManifestError(source, f"{path}.name", "a container name is required")
    resources = _mapping(container.get("resources", {}), source, f"{path}.resources")
    requests = _check_resource_list(resources.get("requests", {}), source, f"{path}.resources.requests")
    limits = _check_resource_list(resources.get("limits", {}), source, f"{path}.resources.limits")
    for resource in _LIMITED:
        if resource in requests and resource in limits and limits[resource] < requests[resource]:
            raise ManifestError(
                source,
                f"{path}.resources.limits.{resource}",
                f"limit {resources['limits'][resource]} is below the request {resources['requests'][resource]}",
            )


def _check_resource_list(raw: Any, source: str, path: str) -> dict[str, Decimal]:
    """Check each quantity, and write YAML numbers (`cpu: 0.5`) as the strings the API uses."""
    amounts = {}
    for resource, text in _mapping(raw, source, path).items():
        amount = parse_quantity(text, source=source, path=f"{path}.{resource}")
        if amount < 0:
            raise ManifestError(source, f"{path}.{resource}", f'must not be negative, got "{text}"')
        amounts[resource], raw[resource] = amount, str(text)
    return amounts


def _mapping(raw: Any, source: str, path: str) -> dict:
    if not isinstance(raw, dict):
        raise ManifestError(source, path, f"expected a mapping, got {type_name(raw)}")
    return raw


def _sequence(raw: Any, source: str, path: str) -> list:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ManifestError(source, path, f"expected a list, got {type_name(raw)}")
    return raw


def pod_label(pod: V1Pod) -> str:
    """The pod as namespace/name (a pod without a namespace is in "default").

    Upstream: k8s.io/klog KObj (how the kubelet names a pod in its logs)
    """
    return f"{pod.metadata.namespace or 'default'}/{pod.metadata.name}"


def type_name(raw: Any) -> str:
    """How an error message names a YAML value's type: "a mapping", "a list", "a string", ..."""
    names = {dict: "a mapping", list: "a list", str: "a string", type(None): "nothing", bool: "a boolean"}
    return names.get(type(raw), "a number" if isinstance(raw, (int, float)) else type(raw).__name__)


def _deserialize(doc: dict, model: str, source: str) -> Any:
    try:
        return ApiClient().deserialize(json.dumps(doc, default=str), model, "application/json")
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        # The client checks one nested model at a time, so the location is inside that model.
        where = ".".join(str(part) for part in first["loc"])
        raise ManifestError(source, "", f"not a valid {model[2:]}: {where}: {first['msg']}") from None
