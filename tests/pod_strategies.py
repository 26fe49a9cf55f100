"""Hypothesis strategies for real-shaped Pods and Nodes, as Kubernetes JSON, for the differential tests."""

from __future__ import annotations

from hypothesis import strategies as st
from kubernetes.utils import parse_quantity as exact

# Amounts the kubelet meets, and the odd ones: nano and milli units, fractions of binary units, zero, huge.
ODD_QUANTITIES = ("0", "1n", "1u", "1m", "100m", "999m", "1", "1.5", "1.5Ki", "1Ki", "128Mi", "1Gi", "1.5Gi",
                  "1e3", "2E6", "0.5", ".5", "1.0001", "0.0000000015", "1500m", "7Ei", "8Ei", "9e18",
                  "9223372036854775807", "9223372036854775807m", "4611686018427387904")
SUFFIXES = ("", "n", "u", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti")

quantities = st.one_of(
    st.sampled_from(ODD_QUANTITIES),
    st.builds(lambda n, suffix: f"{n}{suffix}", st.integers(0, 10**6), st.sampled_from(SUFFIXES)),
    st.builds(lambda whole, frac, suffix: f"{whole}.{frac}{suffix}", st.integers(0, 999), st.integers(0, 999),
              st.sampled_from(SUFFIXES)),
)
small_quantities = st.one_of(  # amounts a node can hold many of: no near-int64 sums
    st.sampled_from(("0", "1n", "1m", "100m", "1", "1.5Ki", "512Mi", "1Gi")),
    st.builds(lambda n, suffix: f"{n}{suffix}", st.integers(0, 4000), st.sampled_from(("", "m", "Ki", "Mi"))),
)

RESOURCES = ("cpu", "memory", "ephemeral-storage", "hugepages-2Mi", "hugepages-1Gi", "example.com/gpu")


def resource_lists(amounts=quantities, names=RESOURCES):
    return st.dictionaries(st.sampled_from(names), amounts, max_size=4)


OVERCOMMITTABLE = ("cpu", "memory", "ephemeral-storage")  # the rest need a limit equal to any request


def _valid(requirements: dict | None) -> dict | None:
    """As API validation wants them: no limit below its request; hugepages and extended requests equal a limit."""
    if not requirements or "requests" not in requirements:
        return requirements
    limits = requirements.setdefault("limits", {})
    for name, request in requirements["requests"].items():
        if name not in OVERCOMMITTABLE or (name in limits and exact(limits[name]) < exact(request)):
            limits[name] = request
    return requirements


def resource_requirements(amounts=quantities):
    """requests and limits, each present, empty or missing; limits often equal to requests (Guaranteed)."""
    return st.one_of(
        st.none(),
        st.fixed_dictionaries({}, optional={"requests": resource_lists(amounts), "limits": resource_lists(amounts)}),
        resource_lists(amounts).map(lambda same: {"requests": dict(same), "limits": dict(same)}),
    ).map(_valid)


def container(name: str, resources, init: bool):
    fields = {"name": st.just(name), "image": st.just("registry.example/app:1")}
    optional = {"resources": resources}
    if init:
        optional["restartPolicy"] = st.just("Always")  # a sidecar from v1.28 on; a plain init container in v1.27
    return st.fixed_dictionaries(fields, optional=optional).map(
        lambda c: {k: v for k, v in c.items() if v is not None})


@st.composite
def pods(draw, amounts=quantities, max_containers=3, max_inits=3, name="p"):
    """A Pod manifest: app and init containers (some sidecars), maybe overhead, priority and a QoS in status."""
    resources = resource_requirements(amounts)
    n_app = draw(st.integers(1, max_containers))
    n_init = draw(st.integers(0, max_inits))
    spec = {"containers": [draw(container(f"app-{i}", resources, False)) for i in range(n_app)]}
    if n_init:
        spec["initContainers"] = [draw(container(f"init-{i}", resources, True)) for i in range(n_init)]
    if draw(st.booleans()):
        spec["overhead"] = draw(resource_lists(amounts, ("cpu", "memory", "ephemeral-storage")))
    priority = draw(st.sampled_from((None, 0, 1000, 2000000000, 2000001000)))
    if priority is not None:
        spec["priority"] = priority
        spec["priorityClassName"] = draw(st.sampled_from(("", "system-node-critical", "system-cluster-critical")))
    metadata = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if draw(st.integers(0, 9)) == 0:
        metadata["annotations"] = {"kubernetes.io/config.source": "file"}  # a static pod: critical
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def all_containers(pod: dict) -> list[dict]:
    return pod["spec"]["containers"] + pod["spec"].get("initContainers", [])


# --- what admission looks at besides resources ---------------------------------------------------------

NODE_NAME = "node-a"
taints = st.lists(st.fixed_dictionaries({"key": st.sampled_from(("dedicated", "gpu")), "value": st.just("x"),
                                         "effect": st.sampled_from(("NoExecute", "NoSchedule"))}), max_size=2)
tolerations = st.lists(st.fixed_dictionaries({"key": st.sampled_from(("dedicated", "gpu", "")),
                                              "operator": st.sampled_from(("Equal", "Exists")),
                                              "value": st.just("x")}), max_size=2).map(
    lambda ts: [t if t["operator"] == "Equal" else {k: v for k, v in t.items() if k != "value"} for t in ts])
host_ports = st.lists(st.fixed_dictionaries({"containerPort": st.just(80), "hostPort": st.sampled_from((0, 80, 8080)),
                                             "protocol": st.sampled_from(("TCP", "UDP"))}), max_size=2)


@st.composite
def nodes(draw):
    """A Node with allocatable resources (small amounts, a pod count), OS and zone labels, maybe taints."""
    allocatable = draw(resource_lists(small_quantities))
    allocatable["pods"] = str(draw(st.integers(0, 4)))
    labels = {"kubernetes.io/os": draw(st.sampled_from(("linux", "windows"))), "zone": draw(st.sampled_from("ab"))}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE_NAME, "labels": labels},
            "status": {"allocatable": allocatable, "capacity": dict(allocatable)}}
    found = draw(taints)
    if found:
        node["spec"] = {"taints": found}
    return node


@st.composite
def placed_pods(draw, name="p"):
    """A Pod as admission sees it: small requests, and maybe a node name, selector, tolerations, host ports, OS."""
    pod = draw(pods(small_quantities, max_containers=2, max_inits=2, name=name))
    spec = pod["spec"]
    extras = {"nodeName": st.sampled_from((NODE_NAME, "node-b")), "tolerations": tolerations,
              "nodeSelector": st.sampled_from(({"zone": "a"}, {"kubernetes.io/os": "linux"}, {"zone": "b"})),
              "os": st.sampled_from(({"name": "linux"}, {"name": "windows"}))}
    spec.update(draw(st.fixed_dictionaries({}, optional=extras)))
    ports = draw(host_ports)
    if ports:
        spec["containers"][0]["ports"] = ports
    return pod
