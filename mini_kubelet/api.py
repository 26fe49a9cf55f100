"""Pods, Nodes and quantities, read from real Kubernetes manifests through the official client.

Upstream: k8s.io/api/core/v1 (the types) and k8s.io/apimachinery/pkg/api/resource (Quantity).
Reading a file and checking its fields needs no client: the client (slow to import: it builds its models) is loaded
when the first model is made, so a command that reads bad input says so at once.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_UP, Decimal, localcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import yaml

from .errors import ManifestError, UsageError  # noqa: F401  (api.ManifestError, api.UsageError)

if TYPE_CHECKING:
    from kubernetes.client import V1Node, V1Pod

MilliCPU = int  # thousandths of a CPU
Bytes = int

Manifest = Union["V1Pod", "V1Node"]

# The grammar of a Quantity string: a signed decimal number, then an optional binary suffix
# (Ki..Ei), decimal suffix (n, u, m, k, M..E) or decimal exponent (e3, E-2). Python's Decimal
# accepts more (spaces, underscores, "NaN"), so strings are checked against this first.
_QUANTITY = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([KMGTPE]i|[eE][+-]?\d+|[numkMGTPE])?")

# Resources whose limit may not be below the request (API validation of a container).
_LIMITED = ("cpu", "memory", "ephemeral-storage")

# --8<-- [start:bounds]
STDIN = "-"  # a file argument "-" reads standard input (`kubectl get pod x -o yaml | mini-kubelet show -`)
MAX_FILE_BYTES = 16 * 2**20  # 16 MiB: `kubectl get pods -A -o yaml` of a thousand Pods is well under it
MAX_NODES = 2_000_000  # values in one file's documents, anchors and aliases expanded (a YAML "billion laughs" stops here)
MAX_INT64 = 2**63 - 1  # the kubelet reads amounts as int64 (Quantity.Value, MilliValue)
# --8<-- [end:bounds]

# Workloads whose Pods are made from a template, and where the template is in each.
WORKLOAD_TEMPLATES = {
    "Deployment": ("spec", "template"), "StatefulSet": ("spec", "template"), "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"), "ReplicationController": ("spec", "template"), "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
LIST_KINDS = ("List", "PodList", "NodeList")  # kubectl get -o yaml prints List; the API (get --raw) PodList


# --8<-- [start:parse_quantity]
def parse_quantity(text: Any, *, source: str = "<manifest>", path: str = "") -> Decimal:
    """Parse a Kubernetes quantity ("250m", "1Gi", 2) into its exact Decimal value.

    Upstream: k8s.io/apimachinery/pkg/api/resource/quantity.go ParseQuantity
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ManifestError(source, path, f"invalid quantity {json.dumps(text, default=str)}")
    string = str(text)  # a YAML float 0.1 must stay 0.1, not the binary float's expansion
    known = _PARSED.get(string)
    if known is not None:  # the same text always parses the same: the ranking reads each request many times
        return known
    shown = string if len(string) <= 32 else f"{string[:16]}...{string[-8:]}"  # no 400-digit number in a message
    if not _QUANTITY.fullmatch(string):
        raise ManifestError(source, path, f'invalid quantity "{shown}"')
    exponent = re.search(r"[eE]([+-]?\d+)$", string)
    if exponent and int(exponent.group(1)) > 100:  # past int64 anyway; Python would build the whole number first
        raise ManifestError(source, path, f'quantity "{shown}" is out of range (the kubelet reads int64 amounts)')
    amount = _client_parse_quantity(string)
    if amount.as_tuple().exponent < -9:  # ParseQuantity keeps nano precision, rounding away from zero: 0.1n is 1n
        with localcontext() as context:
            context.prec = len(amount.as_tuple().digits) + 12  # exact, whatever the size
            amount = amount.quantize(_NANO, rounding=ROUND_UP)
    if abs(amount) > MAX_INT64:
        if string[-2:] in _BINARY_SUFFIXES:  # ParseQuantity caps a binary-suffixed amount at the int64 maximum
            return Decimal(MAX_INT64).copy_sign(amount)
        raise ManifestError(source, path, f'quantity "{shown}" is out of range (the kubelet reads int64 amounts)')
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[string] = amount
    return amount
# --8<-- [end:parse_quantity]


_NANO = Decimal("1e-9")
_PARSED: dict[str, Decimal] = {}  # parse_quantity's answers by text (a Decimal is immutable); errors are not kept
_PARSED_MAX = 4096


def _client_quantity_parser():
    """The client's own parse_quantity, from its file (kubernetes/utils/quantity.py, which needs only decimal).

    `import kubernetes.utils` would import the whole client first (its package imports every part), so a
    quantity could not be checked before the client loads.
    """
    package = importlib.util.find_spec("kubernetes")
    path = Path(package.submodule_search_locations[0]) / "utils" / "quantity.py" if package else None
    if path is None or not path.is_file():  # laid out otherwise: the ordinary import
        from kubernetes.utils import parse_quantity
        return parse_quantity
    spec = importlib.util.spec_from_file_location("mini_kubelet._client_quantity", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.parse_quantity


_client_parse_quantity = _client_quantity_parser()


def int64(number: int) -> int:
    """The number as a Go int64 holds it: past 2**63 - 1 it wraps around to negative numbers."""
    return (number + 2**63) % 2**64 - 2**63


def int64_div(dividend: int, divisor: int) -> int:
    """dividend / divisor as Go computes it on int64s: the dividend wraps (see int64), the quotient truncates to zero."""
    dividend = int64(dividend)
    quotient = abs(dividend) // abs(divisor)
    return quotient if (dividend >= 0) == (divisor > 0) else -quotient


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


_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def _as_decimal(quantity: Decimal | str | int) -> Decimal:
    return quantity if isinstance(quantity, Decimal) else parse_quantity(quantity)


def pod_from_manifest(doc: Any, source: str = "<manifest>") -> V1Pod:
    """Check a Pod manifest (a dict) and turn it into the client's V1Pod model."""
    return _deserialize(checked_pod(doc, source), "V1Pod", source)


def node_from_manifest(doc: Any, source: str = "<manifest>") -> V1Node:
    """Check a Node manifest (a dict) and turn it into the client's V1Node model."""
    return _deserialize(checked_node(doc, source), "V1Node", source)


def checked_pod(doc: Any, source: str = "<manifest>") -> dict:
    """A copy of a Pod manifest whose fields are checked (quantities written as strings); ManifestError if not."""
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
    if spec.get("resources") is not None:  # pod-level resources (1.32+): the client's V1PodSpec has the field
        level = _mapping(spec["resources"], source, "spec.resources")
        for field in ("requests", "limits"):
            _check_resource_list(level.get(field) or {}, source, f"spec.resources.{field}")
    return doc


def checked_node(doc: Any, source: str = "<manifest>") -> dict:
    """A copy of a Node manifest whose fields are checked (quantities written as strings); ManifestError if not."""
    _expect_kind(doc, "Node", source)
    doc = copy.deepcopy(doc)
    _check_metadata(doc, source)
    status = _mapping(doc.get("status", {}), source, "status")
    for field in ("capacity", "allocatable"):
        if status.get(field) is not None:
            _check_resource_list(status[field], source, f"status.{field}")
    return doc


@dataclass(frozen=True)
class Document:
    """A Pod or Node read from a file, its fields checked: what a model is made from (model)."""

    kind: str  # "Pod" or "Node"
    manifest: dict  # as checked_pod or checked_node returns it
    source: str  # the file, as messages name it (with the document's number when the file has several)
    path: str  # where in the document it was read: "" (the document), "items[2]", "spec.template"


def model(document: Document) -> Manifest:
    """The client's V1Pod or V1Node of a document read by read_documents."""
    try:
        return _deserialize(document.manifest, f"V1{document.kind}", document.source)
    except ManifestError as err:
        if not document.path:
            raise
        raise ManifestError(err.source, f"{document.path}.{err.path}" if err.path else document.path, err.problem) from None


def source_name(path: str | Path) -> str:
    """How messages name a file argument: its path, or <stdin> for "-"."""
    return "<stdin>" if str(path) == STDIN else str(path)


def read_text(path: str | Path) -> str:
    """A file's text ("-": standard input), at most MAX_FILE_BYTES; ManifestError naming the file otherwise."""
    source = source_name(path)
    try:
        if str(path) == STDIN:
            data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        else:
            with open(path, "rb") as file:
                data = file.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise ManifestError(source, "", f"larger than {MAX_FILE_BYTES // 2**20} MiB: not read")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ManifestError(source, "", f"cannot read file ({getattr(err, 'strerror', None) or err})") from None


def parse_yaml_documents(text: str, source: str) -> list[Any]:
    """The documents of a YAML (or JSON) text, empty ones dropped; one-line ManifestError on bad YAML or a bomb."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or "cannot parse"
        raise ManifestError(source, where, f"invalid YAML ({problem})") from None
    except (RecursionError, ValueError):  # nested too deeply, or an integer of thousands of digits
        raise ManifestError(source, "", "invalid YAML (a number or nesting past any real manifest)") from None
    _check_size(docs, source)
    return docs


def _check_size(docs: list, source: str) -> None:
    """Count the values with aliases expanded (as the client will), stopping at MAX_NODES."""
    stack, count = list(docs), 0
    while stack:
        item = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise ManifestError(source, "", f"more than {MAX_NODES} values once YAML aliases are expanded: not read")
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def load_manifests(path: str | Path, notes: list[str] | None = None) -> list[Manifest]:
    """Read every Pod and Node in a YAML or JSON file ("-": standard input): documents, a List or a PodList.

    A workload (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob) is read as the Pod its
    template makes; any other kind (a Namespace, a Service) is skipped. Each template read and each
    document skipped is said in `notes`, when given.
    """
    return [model(document) for document in read_documents(path, notes)]


def read_documents(path: str | Path, notes: list[str] | None = None) -> list[Document]:
    """What load_manifests reads from a file, every field checked, before any model is made (no client needed)."""
    source = source_name(path)
    docs = parse_yaml_documents(read_text(path), source)
    notes = [] if notes is None else notes
    objects: list[Document] = []
    skipped: list[str] = []
    for number, doc in enumerate(docs, start=1):
        doc_source = source if len(docs) == 1 else f"{source} (document {number})"
        if isinstance(doc, dict) and doc.get("kind") in LIST_KINDS:
            items = _sequence(doc.get("items"), doc_source, "items")
            typed = {"PodList": "Pod", "NodeList": "Node"}.get(doc["kind"])
            for i, item in enumerate(items):
                if typed and isinstance(item, dict) and "kind" not in item:  # the API leaves kind out of typed items
                    item = {"apiVersion": doc.get("apiVersion", "v1"), "kind": typed, **item}
                objects += _read_object(item, doc_source, f"items[{i}]", skipped, notes)
        else:
            objects += _read_object(doc, doc_source, "", skipped, notes)
    if skipped:
        notes.append(f"{source}: skipped (not a Pod, a Node or a workload with a Pod template): {', '.join(skipped)}")
    if not objects:
        raise ManifestError(source, "", "no Kubernetes objects found" if not skipped else "no Pod or Node found")
    return objects


def _read_object(doc: Any, source: str, prefix: str, skipped: list[str], notes: list[str]) -> list[Document]:
    """One document or list item: a Pod or Node, the Pod of a workload's template, or nothing (skipped)."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if isinstance(kind, str) and kind in WORKLOAD_TEMPLATES:
        pod_doc, where = template_pod_document(doc, source, prefix)
        inner = f"{prefix}.{where}" if prefix else where
        try:
            pod = checked_pod(pod_doc, source)
        except ManifestError as err:
            path = err.path if err.path.startswith("metadata.name") else f"{inner}.{err.path}" if err.path else inner
            raise ManifestError(err.source, path, err.problem) from None
        label = f"{pod['metadata'].get('namespace') or 'default'}/{pod['metadata']['name']}"
        notes.append(f"{source}: {template_note(kind, label, where)}")
        return [Document("Pod", pod, source, inner)]
    if isinstance(kind, str) and kind not in ("Pod", "Node") and isinstance(doc.get("apiVersion"), str):
        metadata = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        name = metadata.get("name")
        named = f"{metadata.get('namespace')}/{name}" if metadata.get("namespace") and name else name
        skipped.append(f"{kind} {named}" if isinstance(named, str) else kind)
        return []
    return [_from_manifest(doc, source, prefix)]


def template_pod_document(doc: dict, source: str, prefix: str = "") -> tuple[dict, str]:
    """A workload's Pod template as a Pod document, named after the workload, and the template's field path."""
    fields = WORKLOAD_TEMPLATES[doc["kind"]]
    where = ".".join(fields)
    metadata = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    template: Any = doc
    for depth, name in enumerate(fields):
        template = template.get(name) if isinstance(template, dict) else None
        if not isinstance(template, dict):
            path = ".".join(fields[:depth + 1])
            raise ManifestError(source, f"{prefix}.{path}" if prefix else path,
                                f"expected a mapping (the Pod template of a {doc['kind']}), got {type_name(template)}")
    template_metadata = template.get("metadata") if isinstance(template.get("metadata"), dict) else {}
    pod_metadata = {**template_metadata, "name": metadata.get("name") or template_metadata.get("name")}
    if metadata.get("namespace"):
        pod_metadata["namespace"] = metadata["namespace"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_metadata, "spec": template.get("spec")}, where


TEMPLATE_READ = "read through its Pod template"  # the words of every note on a workload read as its Pod


def template_note(kind: str, label: str, where: str) -> str:
    """What the commands say when they read a workload (label: namespace/name) through its Pod template."""
    return f"{kind} {label}: {TEMPLATE_READ} ({where}), the Pod each replica would get"


def _from_manifest(doc: Any, source: str, prefix: str) -> Document:
    checks = {"Pod": checked_pod, "Node": checked_node}
    try:
        if not isinstance(doc, dict):
            raise ManifestError(source, "", f"expected a Pod or Node manifest (a mapping), got {type_name(doc)}")
        if doc.get("kind") not in checks:
            got = json.dumps(doc["kind"]) if "kind" in doc else "no kind"
            raise ManifestError(source, "kind", f"expected Pod or Node, got {got}")
        return Document(doc["kind"], checks[doc["kind"]](doc, source), source, prefix)
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
    import pydantic  # with the client: the first model made loads them (see the module's docstring)
    from kubernetes.client import ApiClient

    try:
        return ApiClient().deserialize(json.dumps(doc, default=str), model, "application/json")
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        # The client checks one nested model at a time, so the location is inside that model.
        where = ".".join(str(part) for part in first["loc"])
        raise ManifestError(source, "", f"not a valid {model[2:]}: {where}: {first['msg']}") from None
    except TypeError:  # a list given a number: the client's from_dict iterates it before anything checks it
        where, value = _not_a_list(doc, model)
        raise ManifestError(source, where, f"expected a list, got {type_name(value)}") from None


def _not_a_list(doc: Any, model: str, path: str = "") -> tuple[str, Any]:
    """The field path and value of the first field of doc that the model says is a list and that is a number."""
    from kubernetes import client

    klass = getattr(client, model, None)
    if klass is None or not isinstance(doc, dict):
        return "", None
    attributes = {key: attribute for attribute, key in klass.attribute_map.items()}
    for key, value in doc.items():
        kind, where = klass.openapi_types.get(attributes.get(key, ""), ""), f"{path}.{key}" if path else key
        item = re.fullmatch(r"List\[(\w+)\]", kind)
        if item and isinstance(value, (int, float)):
            return where, value
        for i, element in enumerate(value if item and isinstance(value, list) else [value] if kind.startswith("V") else []):
            found = _not_a_list(element, item[1] if item else kind, f"{where}[{i}]" if item else where)
            if found[0]:
                return found
    return "", None


def models_equal(a, b) -> bool:
    """Whether two values are equal as the client models compare them (their to_dict()), without building the dicts.

    Models of one class are compared field by field, lists and dicts item by item; anything else as to_dict() would.
    """
    if a is b:
        return True
    fields = getattr(type(a), "openapi_types", None)
    if fields is not None and type(b) is type(a):
        return all(models_equal(getattr(a, name, None), getattr(b, name, None)) for name in fields)
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(models_equal(x, y) for x, y in zip(a, b))
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(models_equal(v, b[k]) for k, v in a.items())
    return _plain(a) == _plain(b)


def _plain(value):
    return value.to_dict() if hasattr(value, "to_dict") else value


_IMMUTABLE = frozenset({str, int, bool, float, Decimal, datetime, type(None)})
_set = object.__setattr__


def deep_copy(value):
    """A deep copy of a client model (or of lists and dicts of them), as copy.deepcopy makes it, a few times faster.

    Upstream: the generated DeepCopy methods of k8s.io/api/core/v1. It copies a model's fields as pydantic's
    own __deepcopy__ does, without its memo: an object held twice in one value is copied twice
    (as Go's DeepCopy copies it), not once and shared.
    """
    kind = type(value)
    if kind in _IMMUTABLE:
        return value
    if kind is list:
        return [deep_copy(v) for v in value]
    if kind is dict:
        return {k: deep_copy(v) for k, v in value.items()}
    if hasattr(value, "__pydantic_fields_set__") and getattr(value, "__pydantic_private__", None) is None:  # a model
        copied = kind.__new__(kind)
        _set(copied, "__dict__", {k: deep_copy(v) for k, v in value.__dict__.items()})
        _set(copied, "__pydantic_extra__", deep_copy(value.__pydantic_extra__))
        _set(copied, "__pydantic_fields_set__", set(value.__pydantic_fields_set__))
        _set(copied, "__pydantic_private__", None)
        return copied
    return copy.deepcopy(value)
