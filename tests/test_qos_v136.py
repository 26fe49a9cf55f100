"""Chapter 3, the current release: QoS class and OOM scores as Kubernetes 1.36 computes them.

Under features.release_profile("1.36"): GetPodQOS reads status.qosClass (1.29), pod-level resources decide
the class and share out their memory (PodLevelResources, beta on from 1.34), and a sidecar's oom_score_adj
is capped at its regular containers' (1.32). The same pods answer as v1.27 under the default profile.
"""

from __future__ import annotations

import pytest

from mini_kubelet import api, features, qos
from mini_kubelet.features import DEFAULT_FEATURE_GATE, set_feature_gate_during_test

pytestmark = pytest.mark.ch3


def rl(cpu=None, memory=None):
    """A resource list of cpu and memory ("" or None leaves one out), as upstream's getResourceList."""
    return {name: value for name, value in (("cpu", cpu), ("memory", memory)) if value}


def ctr(name, requests=None, limits=None, *, sidecar=False, image="app"):
    container = {"name": name, "image": image, "resources": {"requests": requests or {}, "limits": limits or {}}}
    if sidecar:
        container["restartPolicy"] = "Always"
    return container


def pod(containers, inits=(), *, pod_resources=None, qos_class=None, priority=None, priority_class_name=None):
    spec = {"containers": list(containers), "initContainers": list(inits)}
    if pod_resources is not None:
        spec["resources"] = pod_resources
    if priority is not None:
        spec["priority"], spec["priorityClassName"] = priority, priority_class_name
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    if qos_class:
        manifest["status"] = {"qosClass": qos_class}
    return api.pod_from_manifest(manifest)


def both(requests, limits):
    return {"requests": requests, "limits": limits}


BE = ctr("best-effort")

# pkg/apis/core/v1/helper/qos/qos_test.go#TestComputePodQOS, read in kubernetes/kubernetes at commit
# 00c269c7d269989d555b69c295ba88e73e8acf94 (the file with TestCollectPodLevelResources: after the
# collect* refactor, before #134936 and #137150, which merged in July 2026 for 1.37; v1.36's behaviour).
# 20 cases; the last column is the PodLevelResources value each case sets.
COMPUTE_POD_QOS = [
    ("guaranteed", [ctr("g", rl("100m", "100Mi"), rl("100m", "100Mi"))], [], None, qos.GUARANTEED, False),
    ("guaranteed-guaranteed", [ctr("g", rl("100m", "100Mi"), rl("100m", "100Mi")),
                               ctr("g2", rl("100m", "100Mi"), rl("100m", "100Mi"))], [], None, qos.GUARANTEED, False),
    ("best-effort-best-effort", [BE, ctr("best-effort-2")], [], None, qos.BEST_EFFORT, False),
    ("best-effort", [BE], [], None, qos.BEST_EFFORT, False),
    ("best-effort-burstable", [BE, ctr("b", rl("1"), rl("2"))], [], None, qos.BURSTABLE, False),
    ("best-effort-guaranteed", [BE, ctr("g", rl("10m", "100Mi"), rl("10m", "100Mi"))], [], None, qos.BURSTABLE, False),
    ("burstable-cpu-guaranteed-memory", [ctr("b", rl(None, "100Mi"), rl(None, "100Mi"))], [], None, qos.BURSTABLE,
     False),
    ("burstable-no-limits", [ctr("b", rl("100m", "100Mi"))], [], None, qos.BURSTABLE, False),
    ("burstable-guaranteed", [ctr("b", rl("1", "100Mi"), rl("2", "100Mi")),
                              ctr("g", rl("100m", "100Mi"), rl("100m", "100Mi"))], [], None, qos.BURSTABLE, False),
    ("burstable-unbounded-but-requests-match-limits", [ctr("b", rl("100m", "100Mi"), rl("200m", "200Mi")),
                                                       ctr("u", rl("100m", "100Mi"))], [], None, qos.BURSTABLE, False),
    ("burstable-1", [ctr("b", rl("10m", "100Mi"), rl("100m", "200Mi"))], [], None, qos.BURSTABLE, False),
    ("burstable-2", [ctr("b", rl("0", "0"), rl("100m", "200Mi"))], [], None, qos.BURSTABLE, False),
    ("best-effort-hugepages", [ctr("be", {**rl("0", "0"), "hugepages-2Mi": "1Gi"}, {**rl("0", "0"), "hugepages-2Mi": "1Gi"})],
     [], None, qos.BEST_EFFORT, False),
    ("init-container", [BE], [ctr("b", rl("10m", "100Mi"), rl("100m", "200Mi"))], None, qos.BURSTABLE, False),
    ("guaranteed-with-pod-level-resources", [BE], [], both(rl("10m", "100Mi"), rl("10m", "100Mi")),
     qos.GUARANTEED, True),
    ("guaranteed-with-pod-and-container-level-resources", [ctr("b", rl("3m", "10Mi"), rl("5m", "20Mi"))], [],
     both(rl("10m", "100Mi"), rl("10m", "100Mi")), qos.GUARANTEED, True),
    ("burstable-with-pod-level-resources", [BE], [], both(rl("10m", "10Mi"), rl("20m", "50Mi")), qos.BURSTABLE, True),
    ("burstable-with-pod-and-container-level-resources", [ctr("b", rl("5m", "10Mi"), rl("5m", "10Mi"))], [],
     both(rl("10m", "10Mi"), rl("20m", "50Mi")), qos.BURSTABLE, True),
    ("burstable-with-pod-and-container-level-requests", [ctr("b", rl("5m", "10Mi"))], [],
     both(rl("10m", "10Mi"), {}), qos.BURSTABLE, True),
    ("burstable-with-pod-and-container-level-resources-2", [ctr("b", rl("5m", "10Mi")),
                                                            ctr("g", rl("5m", "10Mi"), rl("5m", "10Mi"))], [],
     both(rl("10m", "10Mi"), rl("5m")), qos.BURSTABLE, True),
]


@pytest.mark.parametrize("name, containers, inits, pod_resources, expected, plr", COMPUTE_POD_QOS,
                         ids=[row[0] for row in COMPUTE_POD_QOS])
def test_compute_pod_qos_v136(name, containers, inits, pod_resources, expected, plr):
    """qos_test.go#TestComputePodQOS (kubernetes/kubernetes@00c269c7), each case with its PodLevelResources value."""
    with features.release_profile("1.36"), set_feature_gate_during_test(DEFAULT_FEATURE_GATE, "PodLevelResources", plr):
        assert qos.compute_pod_qos(pod(containers, inits, pod_resources=pod_resources)) == expected


# pkg/apis/core/v1/helper/qos/qos.go ComputePodQOS pod-level path, cases derived from the source read at
# v1.32 (kubeedge/kubeedge v1.23.0 vendor copy, unchanged in behaviour through the v1.36 refactor).
@pytest.mark.parametrize("name, containers, pod_resources, expected", [
    ("an empty spec.resources makes a Guaranteed pod BestEffort (fixed in 1.37, #137150)",
     [ctr("g", rl("100m", "50Mi"), rl("100m", "50Mi"))], {}, qos.BEST_EFFORT),
    ("pod-level limits only, no defaulting applied", [BE], both({}, rl("1", "1Gi")), qos.BURSTABLE),
    ("pod-level cpu only, equal", [ctr("g", rl("1", "1Gi"), rl("1", "1Gi"))], both(rl("1"), rl("1")), qos.BURSTABLE),
    ("pod-level hugepages only count for nothing", [ctr("g", rl("1", "1Gi"), rl("1", "1Gi"))],
     both({"hugepages-2Mi": "2Mi"}, {"hugepages-2Mi": "2Mi"}), qos.BEST_EFFORT),
])
def test_compute_pod_qos_pod_level_edges(name, containers, pod_resources, expected):
    with features.release_profile("1.36"):
        assert qos.compute_pod_qos(pod(containers, pod_resources=pod_resources)) == expected


def test_pod_level_resources_ignored_in_v127_and_with_the_gate_off():
    p = pod([BE], pod_resources=both(rl("10m", "100Mi"), rl("10m", "100Mi")))
    assert qos.get_pod_qos(p) == qos.BEST_EFFORT  # v1.27: no such field
    with features.release_profile("1.33"):  # alpha, off
        assert qos.get_pod_qos(p) == qos.BEST_EFFORT
    with features.release_profile("1.34"):  # beta, on
        assert qos.get_pod_qos(p) == qos.GUARANTEED


# pkg/apis/core/v1/helper/qos/qos.go GetPodQOS (from 1.29, #119665): the stored class wins; derived from the source.
def test_get_pod_qos_reads_status_from_129():
    p = pod([ctr("g", rl("1", "1Gi"), rl("1", "1Gi"))], qos_class=qos.BURSTABLE)
    assert qos.get_pod_qos(p) == qos.GUARANTEED  # v1.27 recomputes
    with features.release_profile("1.28"):
        assert qos.get_pod_qos(p) == qos.GUARANTEED
    with features.release_profile("1.29"):
        assert qos.get_pod_qos(p) == qos.BURSTABLE
        assert qos.compute_pod_qos(p) == qos.GUARANTEED
    with features.release_profile("1.36"):
        assert qos.get_pod_qos(pod([BE])) == qos.BEST_EFFORT  # no status: computed


STANDARD = 8000000000
M8, L8 = str(STANDARD // 8), str(1000 + STANDARD // 8)  # sampleDefaultMemRequest / Limit
PM, PL = str(STANDARD // 4), str(1000 + STANDARD // 4)  # sampleDefaultPodMemRequest / Limit
MAIN = ctr("main-1", rl(None, M8), rl(None, L8))
INIT = ctr("init-container", rl(None, M8), rl(None, L8))


def sidecar(name, memory):
    return ctr(name, rl(None, memory), rl(None, L8), sidecar=True)


def lower_limit(p, memory):
    """Set the last init container's memory limit after the manifest check, which refuses a limit below the request."""
    p.spec.init_containers[-1].resources.limits["memory"] = memory
    return p


def plr(request_memory, limit_memory):
    return both(rl("5m", request_memory), rl("5m", limit_memory))


# pkg/kubelet/qos/policy_test.go#TestGetContainerOOMScoreAdjust, a stored kubernetes/kubernetes copy (read by
# content; its DRANodeAllocatableResources cases are left out: that gate is not modelled). Upstream checks
# low <= adj <= high per container; the low and high bounds are kept. 22 cases.
OOM_CASES = [
    ("cpu-limit", pod([ctr("cpu-limit", {}, rl("10"))]), 4000000000, {"cpu-limit": (999, 999)}, False),
    ("memory-limit-cpu-request", pod([ctr("memory-limit-cpu-request", rl("0"), rl(None, "10G"))]), STANDARD,
     {"memory-limit-cpu-request": (999, 999)}, False),
    ("zero-memory-limit", pod([ctr("zero-memory-limit", {}, rl(None, "0"))]), 7230457451,
     {"zero-memory-limit": (1000, 1000)}, False),
    ("no-request-limit", pod([ctr("no-request-limit")]), 4000000000, {"no-request-limit": (1000, 1000)}, False),
    ("equal-request-limit-cpu-memory", pod([ctr("e", rl("5m", "10G"), rl("5m", "10G"))]), 123456789,
     {"e": (-997, -997)}, False),
    ("cpu-unlimited-memory-limited-with-requests", pod([ctr("c", rl("5m", str(STANDARD // 2)), rl(None, "10G"))]),
     STANDARD, {"c": (495, 505)}, False),
    ("request-no-limit", pod([ctr("r", rl("5m", str(STANDARD - 1)))]), STANDARD, {"r": (3, 3)}, False),
    ("cluster-critical", pod([ctr("cluster-critical")], priority=2000000000,
                             priority_class_name="system-cluster-critical"), 4000000000,
     {"cluster-critical": (1000, 1000)}, False),
    ("node-critical", pod([ctr("node-critical")], priority=2000001000, priority_class_name="system-node-critical"),
     4000000000, {"node-critical": (-997, -997)}, False),
    ("burstable-unique-container-pod", pod([ctr("burstable-unique-container", rl(None, M8), rl(None, L8))]), STANDARD,
     {"burstable-unique-container": (875, 880)}, False),
    ("burstable-mixed-unique-main-container-pod", pod([MAIN], [INIT]), STANDARD,
     {"init-container": (875, 880), "main-1": (875, 880)}, False),
    ("burstable-mixed-multi-container-small-sidecar-pod",
     pod([MAIN], [INIT, sidecar("sidecar-small-container", str(STANDARD // 20))]), STANDARD,
     {"init-container": (875, 880), "sidecar-small-container": (875, 875), "main-1": (875, 875)}, False),
    ("burstable-mixed-multi-container-sample-request-pod", pod([MAIN], [INIT, sidecar("sidecar-container", M8)]),
     STANDARD, {"init-container": (875, 880), "sidecar-container": (875, 875), "main-1": (875, 875)}, False),
    ("burstable-mixed-multi-container-big-sidecar-container-pod",  # its limit is below its request, as upstream's
     lower_limit(pod([MAIN], [INIT, ctr("sidecar-big-container", rl(None, str(STANDARD // 2)),
                                          rl(None, str(STANDARD // 2)), sidecar=True)]), L8), STANDARD,
     {"init-container": (875, 880), "sidecar-big-container": (500, 500), "main-1": (875, 875)}, False),
    ("guaranteed-pod-resources-no-container-resources",
     pod([ctr("no-request-limit-1"), ctr("no-request-limit-2")], pod_resources=plr(PM, PM)), 4000000000,
     {"no-request-limit-1": (-997, -997), "no-request-limit-2": (-997, -997)}, True),
    ("guaranteed-pod-resources-equal-container-resources",
     pod([ctr("guaranteed-container-1", rl("5m", M8), rl("5m", M8)), ctr("guaranteed-container-2", rl("5m", M8), rl("5m", M8))],
         pod_resources=plr(PM, PM)), 4000000000,
     {"guaranteed-container-1": (-997, -997), "guaranteed-container-2": (-997, -997)}, True),
    ("guaranteed-pod-resources-unequal-container-requests",
     pod([ctr("burstable-container", rl("3m", M8), rl("5m", L8)), ctr("best-effort-container")],
         pod_resources=plr(PM, PM)), 4000000000,
     {"burstable-container": (-997, -997), "best-effort-container": (-997, -997)}, True),
    ("burstable-pod-resources-no-container-resources",
     pod([ctr("no-request-limit-1"), ctr("no-request-limit-2")], pod_resources=plr(PM, PL)), 4000000000,
     {"no-request-limit-1": (750, 750), "no-request-limit-2": (750, 750)}, True),
    ("burstable-pod-resources-equal-container-requests",
     pod([ctr("guaranteed-container-1", rl("5m", M8), rl("5m", M8)), ctr("guaranteed-container-2", rl("5m", M8), rl("5m", M8))],
         pod_resources=plr(PM, PL)), 4000000000,
     {"guaranteed-container-1": (750, 750), "guaranteed-container-2": (750, 750)}, True),
    ("burstable-pod-resources-unequal-container-requests",
     pod([ctr("burstable-container", rl("3m", M8), rl("5m", M8)), ctr("best-effort-container")],
         pod_resources=plr(PM, PL)), 4000000000,
     {"burstable-container": (625, 625), "best-effort-container": (875, 875)}, True),
    ("burstable-pod-resources-no-container-resources-with-sidecar",
     pod([ctr("no-request-limit")], [ctr("no-request-limit-sidecar", sidecar=True)], pod_resources=plr(PM, PL)),
     4000000000, {"no-request-limit": (750, 750), "no-request-limit-sidecar": (750, 750)}, True),
    ("burstable-pod-resources-equal-container-requests-with-sidecar",
     pod([ctr("burstable-container", rl("5m", M8), rl("5m", L8))],
         [ctr("burstable-sidecar", rl("5m", M8), rl("5m", L8), sidecar=True)], pod_resources=plr(PM, PL)),
     4000000000, {"burstable-container": (750, 750), "burstable-sidecar": (750, 750)}, True),
    ("burstable-pod-resources-unequal-container-requests-with-sidecar",
     pod([ctr("burstable-container-1", rl("5m", "1000000000"), rl("5m", PL)),
          ctr("burstable-container-2", rl("5m", "500000000"), rl("5m", PL))],
         [ctr("burstable-sidecar", rl("5m", "200000000"), rl("5m", PL), sidecar=True)],
         pod_resources=plr("2000000000", PL)),
     4000000000, {"burstable-container-1": (725, 725), "burstable-container-2": (850, 850),
                  "burstable-sidecar": (850, 850)}, True),
]


@pytest.mark.parametrize("name, p, memory_capacity, bounds, plr_on", OOM_CASES, ids=[row[0] for row in OOM_CASES])
def test_get_container_oom_score_adjust_v136(name, p, memory_capacity, bounds, plr_on):
    """policy_test.go#TestGetContainerOOMScoreAdjust (stored copy with pod-level and sidecar cases), under 1.36."""
    with features.release_profile("1.36"), \
            set_feature_gate_during_test(DEFAULT_FEATURE_GATE, "PodLevelResources", plr_on):
        for container in p.spec.containers + (p.spec.init_containers or []):
            low, high = bounds[container.name]
            assert low <= qos.get_container_oom_score_adjust(p, container, memory_capacity) <= high, container.name


def test_sidecar_cap_by_release():
    """#128029: in 1.32 only with SidecarContainers on (its default), from 1.33 always; none before 1.32."""
    p = pod([MAIN], [sidecar("sidecar-small-container", str(STANDARD // 20))])
    small = p.spec.init_containers[0]
    assert qos.get_container_oom_score_adjust(p, small, STANDARD) == 950  # v1.27: its own request
    with features.release_profile("1.31"):
        assert qos.get_container_oom_score_adjust(p, small, STANDARD) == 950
    with features.release_profile("1.32"):
        assert qos.get_container_oom_score_adjust(p, small, STANDARD) == 875
    with features.release_profile("1.32", {"SidecarContainers": False}):
        assert qos.get_container_oom_score_adjust(p, small, STANDARD) == 950
    with features.release_profile("1.36"):
        assert qos.get_container_oom_score_adjust(p, small, STANDARD) == 875


def test_pod_level_memory_share_is_off_in_v127():
    p = pod([ctr("no-request-limit-1"), ctr("no-request-limit-2")], pod_resources=plr(PM, PL))
    assert qos.get_container_oom_score_adjust(p, p.spec.containers[0], 4000000000) == 1000  # BestEffort in v1.27
    with features.release_profile("1.36"):
        assert qos.get_container_oom_score_adjust(p, p.spec.containers[0], 4000000000) == 750


def test_kubelet_oom_score_adj_tie_break_is_no_gate_of_these_releases():
    """KubeletOOMScoreAdjTieBreak appears in no kube_features.go from 1.27 to 1.36: no such gate here."""
    assert "KubeletOOMScoreAdjTieBreak" not in features.VERSIONED_FEATURE_GATES
