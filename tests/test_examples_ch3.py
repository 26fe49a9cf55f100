"""Chapter 3: every example Pod in examples/pods/, explained in numbers worked out by hand.

Each case states the example's QoS class, its pod cgroup settings (`resource_config_for_pod`,
upstream pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod), its pod cgroup path with both
cgroup drivers, and each container's oom_score_adj (pkg/kubelet/qos/policy.go
GetContainerOOMScoreAdjust). The arithmetic is written beside the numbers, using the v1.27 rules:

- cpu.shares   = milliCPU * 1024 // 1000, at least 2 (0 -> 2), at most 262144
- CFS quota    = milliCPU * 100000 // 1000 microseconds, at least 1000; period 100000
- v2 cpu.weight = 1 + (shares - 2) * 9999 // 262142
- Burstable oom_score_adj = 1000 - 1000 * memoryRequest // memoryCapacity, kept within 3..999

The machine's memory capacity is the example node's, examples/nodes/node.yaml:
C = 8148084Ki = 8148084 * 1024 = 8343638016 bytes (capacity, not allocatable).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import pytest

from mini_kubelet import api, qos, resource, types
from mini_kubelet.cm import cgroups, helpers

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch3

Mi = 1024 * 1024
MEMORY_CAPACITY = 8_343_638_016  # 8148084Ki, the node's status.capacity.memory
MEMORY_ALLOCATABLE = 6_328_799_232  # 6180468Ki, its status.allocatable.memory


def load_pod(name: str):
    (pod,) = api.load_manifests(EXAMPLES / "pods" / name)
    return pod


def containers(pod):
    return (pod.spec.init_containers or []) + pod.spec.containers


@dataclass
class Explained:
    qos_class: str
    config: helpers.ResourceConfig
    oom_score_adj: dict[str, int]
    cgroupfs: str | None  # the pod cgroup with the cgroupfs driver
    systemd: str | None  # ... and with the systemd driver
    v2_files: dict[str, str] = field(default_factory=dict)  # some of the cgroup v2 files written


EXPLAINED = {
    # Mid-resize (v1.36 status): the cgroups are computed from the spec, what the pod wants (2 CPUs, 512Mi);
    # shares 2048, quota 200000; v2 weight 1 + (2048-2)*9999//262142 = 1 + 78 = 79. Guaranteed: -997.
    "resize-pending.yaml": Explained(
        qos_class=qos.GUARANTEED,
        config=helpers.ResourceConfig(memory=536870912, cpu_shares=2048, cpu_quota=200000, cpu_period=100000),
        oom_score_adj={"app": -997},
        cgroupfs="/kubepods/pod2f9c1a7e-6b0d-4d35-9a51-0c3f5e8b7d21",
        systemd="/kubepods.slice/kubepods-pod2f9c1a7e_6b0d_4d35_9a51_0c3f5e8b7d21.slice",
        v2_files={"cpu.weight": "79", "cpu.max": "200000 100000", "memory.max": "536870912"},
    ),
    # Two containers, each with requests == limits for cpu and memory: Guaranteed.
    # requests cpu 500m + 100m = 600m -> shares 600*1024//1000 = 614 (614.4 truncated)
    # limits   cpu 600m -> quota 600*100000//1000 = 60000 (60ms of every 100ms)
    # limits   memory 256Mi + 64Mi = 320Mi = 335544320
    # v2 weight 1 + (614-2)*9999//262142 = 1 + 6119388//262142 = 1 + 23 = 24
    # Guaranteed containers: -997 whatever their size.
    "guaranteed.yaml": Explained(
        qos_class=qos.GUARANTEED,
        config=helpers.ResourceConfig(memory=335544320, cpu_shares=614, cpu_quota=60000, cpu_period=100000),
        oom_score_adj={"api": -997, "metrics-exporter": -997},
        cgroupfs="/kubepods/poda26d5dfe-ae9d-4802-a7f7-af048b5acdbd",
        systemd="/kubepods.slice/kubepods-poda26d5dfe_ae9d_4802_a7f7_af048b5acdbd.slice",
        v2_files={"cpu.weight": "24", "cpu.max": "60000 100000", "memory.max": "335544320"},
    ),
    # Requests below limits: Burstable.
    # requests cpu 250m + 50m = 300m -> shares 300*1024//1000 = 307 (307.2 truncated)
    # log-shipper has no cpu limit -> no quota and no period for the pod
    # both have memory limits -> memory 512Mi + 128Mi = 640Mi = 671088640
    # oom app:         1000*268435456 = 268435456000; //C = 32 -> 1000-32 = 968
    # oom log-shipper: 1000*67108864  =  67108864000; //C =  8 -> 1000-8  = 992
    # v2 weight 1 + (307-2)*9999//262142 = 1 + 3049695//262142 = 1 + 11 = 12
    "burstable.yaml": Explained(
        qos_class=qos.BURSTABLE,
        config=helpers.ResourceConfig(memory=671088640, cpu_shares=307),
        oom_score_adj={"app": 968, "log-shipper": 992},
        cgroupfs="/kubepods/burstable/pod50c464c8-d22a-411d-a894-1abf0394856f",
        systemd="/kubepods.slice/kubepods-burstable.slice/"
        "kubepods-burstable-pod50c464c8_d22a_411d_a894_1abf0394856f.slice",
        v2_files={"cpu.weight": "12", "memory.max": "671088640"},
    ),
    # No cpu or memory anywhere: BestEffort. Shares 2 (the minimum), nothing else; oom 1000.
    # v2 weight 1 + (2-2)*9999//262142 = 1
    "best-effort.yaml": Explained(
        qos_class=qos.BEST_EFFORT,
        config=helpers.ResourceConfig(cpu_shares=2),
        oom_score_adj={"report": 1000},
        cgroupfs="/kubepods/besteffort/pod51d5da0e-a470-40e1-b318-20cc545bc500",
        systemd="/kubepods.slice/kubepods-besteffort.slice/"
        "kubepods-besteffort-pod51d5da0e_a470_40e1_b318_20cc545bc500.slice",
        v2_files={"cpu.weight": "1"},
    ),
    # Init container migrate [500m/512Mi | 1/1Gi]; apps [200m/128Mi | 500m/256Mi], [100m/64Mi | 200m/128Mi].
    # requests: max(500m, 200m+100m) = 500m -> shares 500*1024//1000 = 512
    #           max(512Mi, 128Mi+64Mi) = 512Mi (used by the QoS tier sums, not written here)
    # limits:   max(1000m, 500m+200m) = 1000m -> quota 1000*100000//1000 = 100000
    #           max(1Gi, 256Mi+128Mi) = 1Gi = 1073741824
    # every container (init included) has both limits -> quota, period and memory are all set
    # oom migrate:      1000*536870912 // C = 64 -> 936
    # oom app:          1000*134217728 // C = 16 -> 984
    # oom outbox-relay: 1000*67108864  // C =  8 -> 992
    # v2 weight 1 + (512-2)*9999//262142 = 1 + 5099490//262142 = 1 + 19 = 20
    "init-containers.yaml": Explained(
        qos_class=qos.BURSTABLE,
        config=helpers.ResourceConfig(memory=1073741824, cpu_shares=512, cpu_quota=100000, cpu_period=100000),
        oom_score_adj={"migrate": 936, "app": 984, "outbox-relay": 992},
        cgroupfs="/kubepods/burstable/pod49c43845-4751-403d-88c8-a0d2325c2e1a",
        systemd="/kubepods.slice/kubepods-burstable.slice/"
        "kubepods-burstable-pod49c43845_4751_403d_88c8_a0d2325c2e1a.slice",
        v2_files={"cpu.weight": "20", "cpu.max": "100000 100000", "memory.max": "1073741824"},
    ),
    # Stored form: requests cpu 500m (copied from the limit by the API server), limits cpu 500m.
    # Not Guaranteed (no memory limit) -> Burstable.
    # shares 500*1024//1000 = 512; quota 500*100000//1000 = 50000, period 100000; no memory limit
    # oom: no memory request -> 1000 - 0 = 1000, which Burstable turns into 999
    "cpu-limit-only.yaml": Explained(
        qos_class=qos.BURSTABLE,
        config=helpers.ResourceConfig(cpu_shares=512, cpu_quota=50000, cpu_period=100000),
        oom_score_adj={"worker": 999},
        cgroupfs="/kubepods/burstable/pod490a639b-a198-4e15-8ee6-000ab59f46d4",
        systemd="/kubepods.slice/kubepods-burstable.slice/"
        "kubepods-burstable-pod490a639b_a198_4e15_8ee6_000ab59f46d4.slice",
        v2_files={"cpu.weight": "20", "cpu.max": "50000 100000"},
    ),
    # Stored form: requests memory 1Gi (copied from the limit), limits memory 1Gi. No cpu: Burstable.
    # cpu request 0 -> shares 2; no cpu limit -> no quota; memory limit 1Gi = 1073741824
    # oom: 1000*1073741824 = 1073741824000; //C = 128 -> 1000-128 = 872
    "memory-limit-only.yaml": Explained(
        qos_class=qos.BURSTABLE,
        config=helpers.ResourceConfig(memory=1073741824, cpu_shares=2),
        oom_score_adj={"redis": 872},
        cgroupfs="/kubepods/burstable/podc3a3a628-6324-43b4-a6e3-62d9549f7147",
        systemd="/kubepods.slice/kubepods-burstable.slice/"
        "kubepods-burstable-podc3a3a628_6324_43b4_a6e3_62d9549f7147.slice",
        v2_files={"cpu.weight": "1", "memory.max": "1073741824"},
    ),
    # requests == limits for cpu 1 and memory 1Gi (hugepages-2Mi 256Mi does not count): Guaranteed.
    # shares 1000*1024//1000 = 1024; quota 1000*100000//1000 = 100000; memory 1073741824
    # hugetlb from the requests: page size "2Mi" = 2097152 bytes -> limit 256Mi = 268435456
    # v2 weight 1 + (1024-2)*9999//262142 = 1 + 10218978//262142 = 1 + 38 = 39
    "hugepages.yaml": Explained(
        qos_class=qos.GUARANTEED,
        config=helpers.ResourceConfig(
            memory=1073741824, cpu_shares=1024, cpu_quota=100000, cpu_period=100000,
            huge_page_limit={2097152: 268435456},
        ),
        oom_score_adj={"forwarder": -997},
        cgroupfs="/kubepods/podeb12d677-dcdc-408a-9f09-b97e0595b7be",
        systemd="/kubepods.slice/kubepods-podeb12d677_dcdc_408a_9f09_b97e0595b7be.slice",
        v2_files={"cpu.weight": "39", "cpu.max": "100000 100000", "memory.max": "1073741824",
                  "hugetlb.2MB.max": "268435456"},
    ),
    # Container [500m/512Mi | 500m/512Mi]: Guaranteed (overhead never changes the class).
    # requests + overhead: cpu 500m + 250m = 750m -> shares 750*1024//1000 = 768
    # limits + overhead (both keys already non-zero): cpu 750m -> quota 75000; memory 512Mi + 120Mi
    #   = 632Mi = 662700032
    # v2 weight 1 + (768-2)*9999//262142 = 1 + 7659234//262142 = 1 + 29 = 30
    "overhead.yaml": Explained(
        qos_class=qos.GUARANTEED,
        config=helpers.ResourceConfig(memory=662700032, cpu_shares=768, cpu_quota=75000, cpu_period=100000),
        oom_score_adj={"render": -997},
        cgroupfs="/kubepods/pod0d46cfe7-abee-4c8c-a93d-de9bd345a856",
        systemd="/kubepods.slice/kubepods-pod0d46cfe7_abee_4c8c_a93d_de9bd345a856.slice",
        v2_files={"cpu.weight": "30", "cpu.max": "75000 100000", "memory.max": "662700032"},
    ),
    # kube-proxy: requests cpu 100m, no limits -> Burstable; shares 100*1024//1000 = 102.
    # Static (config.source "file") and mirror, priorityClassName system-node-critical
    # -> node-critical -> -997 before the QoS class is even looked at.
    # (No cgroup path: the kubelet names the static Pod's cgroup after its config.hash UID, not the
    # mirror's metadata.uid.)
    "static-critical.yaml": Explained(
        qos_class=qos.BURSTABLE,
        config=helpers.ResourceConfig(cpu_shares=102),
        oom_score_adj={"kube-proxy": -997},
        cgroupfs=None,
        systemd=None,
        v2_files={"cpu.weight": "4"},
    ),
    # Pod-level resources (spec.resources, on from 1.34) are not a v1.27 field: v1.27 reads the containers.
    # requests cpu 500m + 100m = 600m -> shares 600*1024//1000 = 614; no container limit -> no quota, no memory
    # oom api:          1000*536870912 // C = 64 -> 936
    # oom audit-writer: 1000*134217728 // C = 16 -> 984
    # v2 weight 1 + (614-2)*9999//262142 = 24 (a 1.34+ kubelet sizes the Pod by spec.resources instead)
    "pod-level-resources.yaml": Explained(
        qos_class=qos.BURSTABLE,
        config=helpers.ResourceConfig(cpu_shares=614),
        oom_score_adj={"api": 936, "audit-writer": 984},
        cgroupfs="/kubepods/burstable/pod7d3e1b90-52c4-4f0a-9a8e-1c6b2f4d8e35",
        systemd="/kubepods.slice/kubepods-burstable.slice/"
        "kubepods-burstable-pod7d3e1b90_52c4_4f0a_9a8e_1c6b2f4d8e35.slice",
        v2_files={"cpu.weight": "24"},
    ),
}


# examples/pods/ is shared: web.yaml is chapter 0's, admission-*.yaml chapter 2's, lifecycle-*.yaml chapter 1's.
OTHER_CHAPTERS = {"web.yaml"}
OTHER_PREFIXES = ("admission-", "lifecycle-")  # lifecycle-*.yaml are chapter 1's


def test_every_pod_example_is_explained():
    # A new chapter 3 example must get its numbers here, and chapter 3's table must list it.
    on_disk = {path.name for path in (EXAMPLES / "pods").glob("*.yaml")}
    chapter_3 = {name for name in on_disk - OTHER_CHAPTERS if not name.startswith(OTHER_PREFIXES)}
    assert chapter_3 == set(EXPLAINED)
    assert not any(name.startswith(OTHER_PREFIXES) for name in EXPLAINED)
    table = (EXAMPLES.parent / "docs" / "chapter-3" / "index.md").read_text()
    assert [name for name in EXPLAINED if f"| `{name}` |" not in table] == []


@pytest.mark.parametrize("name", EXPLAINED)
def test_qos_class(name):
    pod = load_pod(name)
    assert qos.get_pod_qos(pod) == EXPLAINED[name].qos_class
    # The class the API reported (status.qosClass) agrees with the computed one.
    assert pod.status.qos_class == EXPLAINED[name].qos_class


@pytest.mark.parametrize("name", EXPLAINED)
def test_pod_cgroup_config(name):
    # pkg/kubelet/cm/helpers_linux.go ResourceConfigForPod, with the kubelet's defaults:
    # cpuCFSQuota true, cpuCFSQuotaPeriod 100ms, MemoryQoS off.
    assert helpers.resource_config_for_pod(load_pod(name)) == EXPLAINED[name].config


@pytest.mark.parametrize("name", EXPLAINED)
def test_container_oom_score_adj(name):
    pod = load_pod(name)
    got = {c.name: qos.get_container_oom_score_adjust(pod, c, MEMORY_CAPACITY) for c in containers(pod)}
    assert got == EXPLAINED[name].oom_score_adj


@pytest.mark.parametrize("name", [n for n, e in EXPLAINED.items() if e.cgroupfs])
def test_pod_cgroup_path(name):
    pod, explained = load_pod(name), EXPLAINED[name]
    cgroup = cgroups.pod_cgroup_name(pod, explained.qos_class)
    assert cgroups.to_cgroupfs(cgroup) == explained.cgroupfs
    assert cgroups.to_systemd(cgroup) == explained.systemd


@pytest.mark.parametrize("name", EXPLAINED)
def test_cgroup_v2_files(name):
    files = cgroups.cgroup_files(helpers.resource_config_for_pod(load_pod(name)), 2)
    expected = EXPLAINED[name].v2_files
    assert {key: files.get(key) for key in expected} == expected
    # What the config leaves unset is not written at all.
    for key in ("cpu.max", "memory.max"):
        if key not in expected:
            assert key not in files


@pytest.mark.parametrize("name", EXPLAINED)
def test_examples_are_stored_forms(name):
    # SetDefaults_Pod (pkg/apis/core/v1/defaults.go) has already run on what kubectl prints:
    # defaulting again changes no container's requests.
    pod = load_pod(name)
    again = resource.set_defaults_pod(pod)
    assert [c.resources.requests for c in containers(again)] == [c.resources.requests for c in containers(pod)]


def without_requests(pod):
    written = copy.deepcopy(pod)
    for container in containers(written):
        container.resources.requests = None
    return written


def test_cpu_limit_only_as_written_and_as_stored():
    # As applied, the container had only `limits: {cpu: 500m}`. The class is Burstable either way,
    # but the pod cgroup's shares depend on the request the API server filled in:
    # as written: cpu request 0 -> shares 2; as stored: 500m -> 512. Quota 50000 in both.
    stored = load_pod("cpu-limit-only.yaml")
    written = without_requests(stored)
    assert qos.get_pod_qos(written) == qos.BURSTABLE
    assert helpers.resource_config_for_pod(written) == helpers.ResourceConfig(cpu_shares=2, cpu_quota=50000, cpu_period=100000)
    defaulted = resource.set_defaults_pod(written)
    assert defaulted.spec.containers[0].resources.requests == {"cpu": "500m"}
    assert helpers.resource_config_for_pod(defaulted) == EXPLAINED["cpu-limit-only.yaml"].config


def test_limits_only_pod_is_guaranteed_only_after_defaulting():
    # pkg/apis/core/v1/helper/qos/qos.go GetPodQOS: limits {cpu, memory} and no requests
    # -> 0 requests vs 2 limits -> Burstable; after SetDefaults_Pod copies them -> Guaranteed.
    pod = api.pod_from_manifest({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "limits-only"},
        "spec": {"containers": [{"name": "app", "image": "app",
                                 "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}}]},
    })
    assert qos.get_pod_qos(pod) == qos.BURSTABLE
    assert qos.get_pod_qos(resource.set_defaults_pod(pod)) == qos.GUARANTEED


def test_static_critical_is_node_critical_and_only_that_saves_it():
    pod = load_pod("static-critical.yaml")
    assert types.is_static_pod(pod) and types.is_mirror_pod(pod) and types.is_node_critical_pod(pod)
    # Without the class name it is critical (static, mirror, priority >= 2000000000) but not
    # node-critical: a Burstable container with no memory request -> 1000 -> 999.
    plain = copy.deepcopy(pod)
    plain.spec.priority_class_name = None
    assert types.is_critical_pod(plain) and not types.is_node_critical_pod(plain)
    assert qos.get_container_oom_score_adjust(plain, plain.spec.containers[0], MEMORY_CAPACITY) == 999


def test_oom_score_uses_machine_capacity_not_allocatable():
    # The kubelet passes cAdvisor's MachineInfo.MemoryCapacity. With the node's allocatable
    # (6180468Ki = 6328799232) instead, the catalog app container would get
    # 1000 - 268435456000 // 6328799232 = 1000 - 42 = 958, not 968.
    pod = load_pod("burstable.yaml")
    (node,) = api.load_manifests(EXAMPLES / "nodes" / "node.yaml")
    assert api.value(node.status.capacity["memory"]) == MEMORY_CAPACITY
    assert api.value(node.status.allocatable["memory"]) == MEMORY_ALLOCATABLE
    app = pod.spec.containers[0]
    assert qos.get_container_oom_score_adjust(pod, app, MEMORY_CAPACITY) == 968
    assert qos.get_container_oom_score_adjust(pod, app, MEMORY_ALLOCATABLE) == 958


def test_example_node_allocatable_is_explained():
    # examples/nodes/node.yaml reports what a kubelet with kube-reserved cpu=70m,memory=1865216Ki,
    # no system-reserved and the default evictionHard (memory.available<100Mi, nodefs.available<10%)
    # computes (pkg/kubelet/nodestatus/setters.go MachineInfo):
    #   cpu     2000m - 70m = 1930m
    #   memory  8148084Ki - 1865216Ki - 100Mi (102400Ki) = 6180468Ki = 6328799232
    #   ephemeral-storage 101445540Ki = 103880232960; 10% as float32 0.100000001490116...
    #           -> 10388023450 (truncated); 103880232960 - 10388023450 = 93492209510
    # while the kubepods cgroup (GetNodeAllocatableAbsolute) leaves the threshold out:
    #   memory 8148084Ki - 1865216Ki = 6282868Ki = 6433656832, 100Mi more; cpu shares 1930*1024//1000 = 1976
    from mini_kubelet.cm.node_allocatable import get_node_allocatable_absolute, node_allocatable

    (node,) = api.load_manifests(EXAMPLES / "nodes" / "node.yaml")
    capacity = dict(node.status.capacity)
    kube_reserved = {"cpu": "70m", "memory": "1865216Ki"}
    status = node_allocatable(capacity, {}, kube_reserved, {"memory.available": "100Mi", "nodefs.available": "10%"})
    assert {name: api.milli_value(amount) for name, amount in status.items()} == \
        {name: api.milli_value(amount) for name, amount in node.status.allocatable.items()}
    assert api.value(status["ephemeral-storage"]) == 93_492_209_510
    kubepods = get_node_allocatable_absolute(capacity, {}, kube_reserved)
    assert api.value(kubepods["memory"]) == 6_433_656_832 == MEMORY_ALLOCATABLE + 100 * Mi
    assert helpers.milli_cpu_to_shares(api.milli_value(kubepods["cpu"])) == 1976
