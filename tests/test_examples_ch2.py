"""Chapter 2: every admission example in examples/pods/, admitted or rejected as v1.27 decides.

Each Pod in examples/pods/admission-*.yaml is handed to the kubelet's HandlePodAdditions
(pkg/kubelet/kubelet.go) on the node examples/nodes/small-worker.yaml, with the Pods of
examples/pods/admission-running.yaml already admitted. The expected reason and message are the
exact strings of pkg/kubelet/lifecycle/predicate.go predicateAdmitHandler.Admit; the numbers are
worked out by hand below.

The node: allocatable cpu 1930m, memory 3325704Ki = 3405520896 bytes, pods 8, hugepages-2Mi 0;
labels disktype=ssd, topology.kubernetes.io/zone=eu-west-1a, kubernetes.io/os=linux; taints
dedicated=batch:NoExecute and example.com/maintenance=planned:NoSchedule.

The running Pods (filterOutInactivePods drops the Succeeded one; seven stay):
  cpu    100 + 100 + 100 + 100 + max(500, 1000) + 200 + 100        = 1700m   -> 230m free
  memory 0 + 10Mi + 180Mi + 128Mi + max(1Gi, 256Mi) + 512Mi + 70Mi = 1924Mi = 2017460224
                                                                      -> 1388060672 free
  pods   7 of 8; host port 9100/TCP on 0.0.0.0 (node-exporter, hostNetwork)
"""

from __future__ import annotations

import copy

import pytest
from kubernetes.client import V1Toleration

from mini_kubelet import api, kubelet, lifecycle, scheduler

from .conftest import EXAMPLES

pytestmark = pytest.mark.ch2

CPU_USED, CPU_CAPACITY = 1700, 1930
MEMORY_USED, MEMORY_CAPACITY = 2017460224, 3405520896


def load(name: str) -> list:
    return api.load_manifests(EXAMPLES / name)


def node():
    (small_worker,) = load("nodes/small-worker.yaml")
    return small_worker


def running() -> list:
    return load("pods/admission-running.yaml")


def cpu(requested: int) -> str:
    return f"Node didn't have enough resource: cpu, requested: {requested}, used: {CPU_USED}, capacity: {CPU_CAPACITY}"


# file -> [(pod name, reason, message)] in creation order; reason "" means admitted.
EXPECTED = {
    # 230m asked, 1930 - 1700 = 230 free: a request equal to what is free fits (fitsRequest uses >).
    # The NoSchedule taint example.com/maintenance is not tolerated and not checked by the kubelet.
    "admission-fits.yaml": [("nightly-export-28612380-wq7lz", "", "")],
    # 500 > 230.
    "admission-out-of-cpu.yaml": [("video-transcode-7f9c6d5b8-2kq8r", "OutOfcpu", cpu(500))],
    # 2Gi = 2147483648 > 3405520896 - 2017460224 = 1388060672; cpu 100m fits.
    "admission-out-of-memory.yaml": [("dataset-merge-6c4f8b7d9-xv5pn", "OutOfmemory",
                                      "Node didn't have enough resource: memory, requested: 2147483648, "
                                      f"used: {MEMORY_USED}, capacity: {MEMORY_CAPACITY}")],
    # app 100m, init 400m: max(100, 400) = 400 > 230. The app container alone would fit.
    "admission-init-container.yaml": [("catalog-import-28612390-9sd2f", "OutOfcpu", cpu(400))],
    # container 200m + overhead 250m = 450 > 230. The container alone would fit.
    "admission-overhead.yaml": [("sandboxed-convert-5d9b7c6f4-m8k2w", "OutOfcpu", cpu(450))],
    # hugepages-2Mi 64Mi = 67108864 on a node with hugepages-2Mi: "0".
    "admission-hugepages.yaml": [("packet-capture-7b6c5d9f8-r2t6v", "OutOfhugepages-2Mi",
                                  "Node didn't have enough resource: hugepages-2Mi, requested: 67108864, "
                                  "used: 0, capacity: 0")],
    # example.com/fpga is not in the node's allocatable: removeMissingExtendedResources drops it.
    "admission-extended-missing.yaml": [("fpga-encode-6f7d8c9b5-k9w3z", "", "")],
    # nodeSelector disktype=nvme, node has disktype=ssd.
    "admission-node-selector.yaml": [("db-backup-28612395-t7m4q", "NodeAffinity", "Predicate NodeAffinity failed")],
    # zone In [eu-west-1b, eu-west-1c], node in eu-west-1a; the preferred term is not looked at.
    "admission-node-affinity.yaml": [("geo-index-8d7c6b5f9-p4x2l", "NodeAffinity", "Predicate NodeAffinity failed")],
    # dedicated=batch:NoExecute not tolerated.
    "admission-taint.yaml": [("web-frontend-5f6d7c8b9-z8n4c", "TaintToleration", "Predicate TaintToleration failed")],
    # 9100/TCP on 0.0.0.0 wanted; node-exporter holds 9100/TCP on 0.0.0.0.
    "admission-host-port.yaml": [("gpu-exporter-9c8b7d6f5-w3q7m", "NodePorts", "Predicate NodePorts failed")],
    # spec.nodeName small-worker-2 on small-worker.
    "admission-node-name.yaml": [("scratch-7d6c5b4f9-h2k8s", "NodeName", "Predicate NodeName failed")],
    # metadata.labels kubernetes.io/os=windows on a linux kubelet; checked after the general predicates.
    "admission-os-label.yaml": [("win-report-6b5c4d7f8-c5v9b", "PodOSSelectorNodeLabelDoesNotMatch",
                                 "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")],
    # spec.os.name windows.
    "admission-os-field.yaml": [("win-render-5c4b3d6f7-n7d2k", "PodOSNotSupported",
                                 "Failed to admit pod as the OS field doesn't match node OS")],
    # A nodeSelector on kubernetes.io/os is an ordinary selector: NodeAffinity (TestHandleNodeSelectorBasedOnOS).
    "admission-os-node-selector.yaml": [("win-archive-7c6b5d4f9-b8j3x", "NodeAffinity", "Predicate NodeAffinity failed")],
    # cpu 1000 > 230 and nodeSelector disktype=nvme: both fail, only the first (resources) is reported.
    "admission-two-failures.yaml": [("ml-train-6d5c4b8f7-q9w2e", "OutOfcpu", cpu(1000))],
    # Critical (priority 2000000000) and short only of cpu: admitted, a running Pod is preempted instead
    # (see test_a_critical_pod_preempts_instead_of_being_rejected).
    "admission-critical.yaml": [("etcd-backup-agent-6f5d4c3b2-x7k9p", "", "")],
    # 7 running + the older thumbnail = 8 = allowed; the newer one finds 8 + 1 > 8.
    "admission-too-many-pods.yaml": [
        ("thumbnail-a", "", ""),
        ("thumbnail-b", "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 8, capacity: 8"),
    ],
}


def test_every_admission_example_is_expected():
    on_disk = {path.name for path in (EXAMPLES / "pods").glob("admission-*.yaml")} - {"admission-running.yaml"}
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize("name", EXPECTED)
def test_admission_outcome(name):
    outcomes = kubelet.handle_pod_additions(load(f"pods/{name}"), node(), admitted=running())
    got = [(o.pod.metadata.name, o.result.reason, o.result.message) for o in outcomes]
    assert got == EXPECTED[name]
    for outcome in outcomes:
        result = outcome.result
        assert result.admit == (result.reason == "")
        if result.admit:
            assert outcome.status_phase != "Failed"
        else:
            assert outcome.handler == "predicate"
            # pkg/kubelet/kubelet.go rejectPod: a Warning event without the prefix, a Failed status with it.
            assert outcome.status_phase == "Failed"
            assert outcome.status_reason == result.reason
            assert outcome.status_message == "Pod was rejected: " + result.message
            assert tuple(outcome.event) == ("Warning", result.reason, result.message)


@pytest.mark.parametrize("name", [n for n, pods in EXPECTED.items() if len(pods) == 1])
def test_the_predicate_handler_alone_agrees(name):
    # Every rejection here comes from the predicate admit handler; called directly on the active
    # running Pods (the Succeeded one left out), it gives the same answer for single-Pod files.
    pods = load(f"pods/{name}")
    active = [p for p in running() if p.status.phase not in ("Succeeded", "Failed")]
    result = lifecycle.predicate_admit(pods[0], node(), active)
    (expected,) = EXPECTED[name]
    assert (result.reason, result.message) == expected[1:]


def test_running_pods_add_up_as_the_comments_say():
    active = [p for p in running() if p.status.phase not in ("Succeeded", "Failed")]
    info = scheduler.new_node_info(node(), active)
    assert len(info.pods) == 7
    assert info.requested["cpu"] == CPU_USED and info.requested["memory"] == MEMORY_USED
    assert info.allocatable["cpu"] == CPU_CAPACITY and info.allocatable["memory"] == MEMORY_CAPACITY
    assert info.allocatable["pods"] == 8
    assert ("0.0.0.0", "TCP", 9100) in info.used_ports


def test_a_finished_pod_does_not_count():
    # pkg/kubelet/kubelet_pods.go filterOutInactivePods: a Succeeded Pod is not "used". Counted,
    # it would take the last Pod slot and add its 1000m: the fitting Pod would then be OutOfpods.
    (pod,) = load("pods/admission-fits.yaml")
    result = lifecycle.predicate_admit(pod, node(), running())  # all eight, the finished one included
    assert result.reason == "OutOfpods"
    (outcome,) = kubelet.handle_pod_additions([pod], node(), admitted=running())
    assert outcome.result.admit


def test_both_failures_are_found_but_only_the_first_is_reported():
    (pod,) = load("pods/admission-two-failures.yaml")
    active = [p for p in running() if p.status.phase == "Running"]
    reasons = lifecycle.general_filter(pod, scheduler.new_node_info(node(), active))
    assert [r.error() for r in reasons] == [cpu(1000), "Predicate NodeAffinity failed"]


def test_batch_order_is_creation_order_not_file_order():
    # HandlePodAdditions sorts by creation time: the older Pod wins the last slot either way.
    pods = load("pods/admission-too-many-pods.yaml")
    outcomes = kubelet.handle_pod_additions(list(reversed(pods)), node(), admitted=running())
    assert [(o.pod.metadata.name, o.result.admit) for o in outcomes] == [("thumbnail-a", True), ("thumbnail-b", False)]


def test_across_batches_the_first_to_arrive_wins():
    # HandlePodAdditions sorts each batch only. If the newer Pod arrives in an earlier batch, it is
    # already admitted when the older one arrives, and the older one is rejected.
    older, newer = load("pods/admission-too-many-pods.yaml")
    assert older.metadata.creation_timestamp < newer.metadata.creation_timestamp
    (first,) = kubelet.handle_pod_additions([newer], node(), admitted=running())
    assert first.result.admit
    (second,) = kubelet.handle_pod_additions([older], node(), admitted=running() + [newer])
    assert (second.pod.metadata.name, second.result.reason, second.result.message) == (
        "thumbnail-a", "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 8, capacity: 8")


def test_an_extended_resource_the_node_lists_as_zero_is_checked():
    # removeMissingExtendedResources drops only resources the node does not list at all.
    (pod,) = load("pods/admission-extended-missing.yaml")
    listed = copy.deepcopy(node())
    listed.status.allocatable["example.com/fpga"] = "0"
    (outcome,) = kubelet.handle_pod_additions([pod], listed, admitted=running())
    assert outcome.result.reason == "OutOfexample.com/fpga"
    assert outcome.result.message == \
        "Node didn't have enough resource: example.com/fpga, requested: 1, used: 0, capacity: 0"


def test_tolerating_the_noexecute_taint_admits_the_rejected_pod():
    (pod,) = load("pods/admission-taint.yaml")
    tolerant = copy.deepcopy(pod)
    tolerant.spec.tolerations.append(V1Toleration(key="dedicated", operator="Exists"))
    (outcome,) = kubelet.handle_pod_additions([tolerant], node(), admitted=running())
    assert outcome.result.admit


def test_the_example_node_has_a_noschedule_taint_nobody_tolerates():
    # What makes admission-fits.yaml show that NoSchedule is not checked at admission.
    taints = {(t.key, t.effect) for t in node().spec.taints}
    assert taints == {("dedicated", "NoExecute"), ("example.com/maintenance", "NoSchedule")}
    (pod,) = load("pods/admission-fits.yaml")
    assert not any(t.key == "example.com/maintenance" or not t.key for t in pod.spec.tolerations)


def test_a_critical_pod_preempts_instead_of_being_rejected():
    # pkg/kubelet/preemption/preemption.go: the Pod needs 500 - (1930 - 1700) = 270m more. Candidates are
    # the non-critical running Pods (kube-proxy and cilium are system-node-critical), all Burstable;
    # getPodsToPreemptByDistance picks the one closest to covering 270m: report-28612320-7xk2p
    # (1000m, distance 0).
    (outcome,) = kubelet.handle_pod_additions(load("pods/admission-critical.yaml"), node(), admitted=running())
    assert outcome.result.admit
    assert [(v.pod.metadata.name, v.status_phase, v.status_reason, v.status_message) for v in outcome.preempted] == [
        ("report-28612320-7xk2p", "Failed", "Preempting", "Preempted in order to admit critical pod")]
    # Not critical, the same Pod is simply rejected.
    (pod,) = load("pods/admission-critical.yaml")
    pod.spec.priority, pod.spec.priority_class_name = 0, None
    (plain,) = kubelet.handle_pod_additions([pod], node(), admitted=running())
    assert (plain.result.reason, plain.result.message) == ("OutOfcpu", cpu(500)) and not plain.preempted
