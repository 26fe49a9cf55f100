"""Chapter 2: HandlePodAdditions, canAdmitPod's handler chain, rejectPod and filterOutInactivePods.

The handle* tests are pkg/kubelet/kubelet_test.go, read at sanposhiho/kubernetes@059ce4e8 (the tests check
the phase in the status manager; the reasons and messages asserted here come from the v1.27 code,
pkg/kubelet/kubelet.go and pkg/kubelet/lifecycle/predicate.go).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mini_kubelet import api, kubelet, lifecycle
from mini_kubelet.lifecycle import PodAdmitResult

from .test_scheduler import make_node, make_pod, rl

pytestmark = pytest.mark.ch2

HOSTNAME = "127.0.0.1"  # testKubeletHostname
NOW = datetime(2024, 5, 14, 9, 0, tzinfo=timezone.utc)


def pod(name, uid=None, created=None, phase=None, **spec):
    p = make_pod(name=name, **spec)
    p.metadata.uid, p.metadata.namespace = uid or name, "foo"
    p.metadata.creation_timestamp = created
    if phase:
        p.status = api.pod_from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "s"}, "spec": {
            "containers": [{"name": "c", "image": "x"}]}, "status": {"phase": phase}}).status
    return p


def phases(outcomes):
    return {o.pod.metadata.name: o.status_phase for o in outcomes}


def host_port_80():
    return [{"name": "c", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]}]


def test_handle_port_conflicts():
    """kubelet_test.go#TestHandlePortConflicts: of two pods wanting host port 80, the newer one is rejected."""
    node = make_node({"pods": "110"}, name=HOSTNAME)
    newpod = pod("newpod", "123456789", NOW + timedelta(seconds=1), nodeName=HOSTNAME, containers=host_port_80())
    oldpod = pod("oldpod", "987654321", NOW, nodeName=HOSTNAME, containers=host_port_80())
    outcomes = kubelet.handle_pod_additions([newpod, oldpod], node)
    assert [o.pod.metadata.name for o in outcomes] == ["oldpod", "newpod"]  # oldest first
    assert phases(outcomes) == {"newpod": "Failed", "oldpod": "Pending"}
    assert (outcomes[1].status_reason, outcomes[1].status_message) == ("NodePorts", "Pod was rejected: Predicate NodePorts failed")


def test_handle_host_name_conflicts():
    """kubelet_test.go#TestHandleHostNameConflicts"""
    node = make_node({"pods": "110"}, name=HOSTNAME)
    outcomes = kubelet.handle_pod_additions([pod("notfittingpod", nodeName="127.0.0.2"),
                                             pod("fittingpod", nodeName=HOSTNAME)], node)
    assert phases(outcomes) == {"notfittingpod": "Failed", "fittingpod": "Pending"}
    assert outcomes[0].status_reason == "NodeName"


def test_handle_node_selector():
    """kubelet_test.go#TestHandleNodeSelector"""
    node = make_node({"pods": "110"}, labels={"key": "B"}, name=HOSTNAME)
    outcomes = kubelet.handle_pod_additions([pod("podA", nodeSelector={"key": "A"}),
                                             pod("podB", nodeSelector={"key": "B"})], node)
    assert phases(outcomes) == {"podA": "Failed", "podB": "Pending"}
    assert outcomes[0].status_reason == "NodeAffinity"


@pytest.mark.parametrize("node_labels, selector, phase, reason", [
    ({"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}, {"kubernetes.io/os": "dummyOS"}, "Failed", "NodeAffinity"),
    ({"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}, {"kubernetes.io/os": "linux"}, "Pending", ""),
    ({"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "key": "B"}, {"key": "B"}, "Pending", ""),
])
def test_handle_node_selector_based_on_os(node_labels, selector, phase, reason):
    """kubelet_test.go#TestHandleNodeSelectorBasedOnOS: a nodeSelector OS mismatch is a NodeAffinity failure."""
    node = make_node({"pods": "110"}, labels=node_labels, name=HOSTNAME)
    [outcome] = kubelet.handle_pod_additions([pod("podA", nodeSelector=selector)], node)
    assert (outcome.status_phase, outcome.status_reason) == (phase, reason)


def test_handle_mem_exceeded():
    """kubelet_test.go#TestHandleMemExceeded"""
    node = make_node({"cpu": "10m", "memory": "100", "pods": "40"}, name=HOSTNAME)
    spec = {"nodeName": HOSTNAME}
    newpod = make_pod(rl(mem=90), name="newpod", **spec)
    oldpod = make_pod(rl(mem=90), name="oldpod", **spec)
    newpod.metadata.creation_timestamp, oldpod.metadata.creation_timestamp = NOW + timedelta(seconds=1), NOW
    outcomes = kubelet.handle_pod_additions([newpod, oldpod], node)
    assert phases(outcomes) == {"newpod": "Failed", "oldpod": "Pending"}
    rejected = outcomes[1]
    message = "Node didn't have enough resource: memory, requested: 90, used: 90, capacity: 100"
    assert (rejected.handler, rejected.status_reason, rejected.status_message, rejected.event) == (
        "predicate", "OutOfmemory", "Pod was rejected: " + message, ("Warning", "OutOfmemory", message))


def test_handle_plugin_resources():
    """kubelet_test.go#TestHandlePluginResources, with the test's fake UpdatePluginResources."""
    node = make_node({"domain1.com/adjustedResource": "1", "domain2.com/emptyResource": "0", "pods": "10"}, name=HOSTNAME)
    updates = {"domain1.com/adjustedResource": 2, "domain2.com/emptyResource": 0, "domain2.com/failedResource": -1}

    def update_plugin_resources(node_info, admit_pod):
        for container in admit_pod.spec.containers:
            for name in (container.resources.requests or {}):
                if name in updates and updates[name] < 0:
                    raise RuntimeError("Allocation failed")
                if name in updates:
                    node_info.allocatable[name] = updates[name]

    def wants(name, resource, amount):
        res = {resource: str(amount)}
        return make_pod(name=name, nodeName=HOSTNAME,
                        containers=[{"name": "c", "image": "x", "resources": {"requests": res, "limits": res}}])
    pods = [wants("fittingpod", "domain1.com/adjustedResource", 2), wants("emptypod", "domain2.com/emptyResource", 2),
            wants("missingpod", "domain2.com/missingResource", 2), wants("failedpod", "domain2.com/failedResource", 1)]
    outcomes = kubelet.handle_pod_additions(pods, node, update_plugin_resources=update_plugin_resources)
    assert phases(outcomes) == {"fittingpod": "Pending", "emptypod": "Failed", "missingpod": "Pending", "failedpod": "Failed"}
    by_name = {o.pod.metadata.name: o for o in outcomes}
    assert by_name["emptypod"].status_reason == "OutOfdomain2.com/emptyResource"
    assert (by_name["failedpod"].status_reason, by_name["failedpod"].status_message) == (
        "UnexpectedAdmissionError",
        "Pod was rejected: Update plugin resources failed due to Allocation failed, which is unexpected.")


def test_purging_obsolete_status_map_entries_first_half():
    """kubelet_test.go#TestPurgingObsoleteStatusMapEntries: pod2 gets a status from HandlePodAdditions."""
    pods = [pod("pod1", "1234", containers=host_port_80()), pod("pod2", "4567", containers=host_port_80())]
    outcomes = kubelet.handle_pod_additions(pods, make_node({"pods": "110"}, name=HOSTNAME))
    assert phases(outcomes) == {"pod1": "Pending", "pod2": "Failed"}


def test_filter_out_inactive_pods():
    """kubelet_test.go#TestFilterOutInactivePods"""
    pods = [pod(f"pod{i}", phase=phase) for i, phase in
            enumerate(["Failed", "Succeeded", "Running", "Pending", "Running", "Running", "Running", "Failed"])]
    pods[2].metadata.deletion_timestamp = NOW  # deleted but still terminating: included
    active = kubelet.filter_out_inactive_pods(pods, status_phases={"pod5": "Failed"}, known_terminated={"pod6"},
                                              termination_requested={"pod7"})
    assert [p.metadata.name for p in active] == ["pod2", "pod3", "pod4", "pod7"]


def test_mirror_pods_and_terminating_pods_skip_admission():
    node = make_node({"pods": "1"}, name=HOSTNAME)
    mirror = pod("mirror", nodeName="elsewhere")
    mirror.metadata.annotations = {"kubernetes.io/config.mirror": "abc"}
    terminating = pod("terminating", nodeName="elsewhere")
    outcomes = kubelet.handle_pod_additions([mirror, terminating], node, termination_requested={"terminating"})
    assert [(o.skipped, o.result.admit) for o in outcomes] == [("mirror pod", True), ("termination already requested", True)]


def test_rejected_pods_do_not_count_for_later_pods():
    """Pods of one batch: an earlier rejected pod is Failed in the status manager, so it holds nothing."""
    node = make_node({"cpu": "100m", "pods": "10"}, name=HOSTNAME)
    pods = [pod("a", created=NOW, nodeName="wrong", containers=[{"name": "c", "image": "x",
                                                                  "resources": {"requests": {"cpu": "100m"}}}]),
            pod("b", created=NOW + timedelta(seconds=1), containers=[{"name": "c", "image": "x",
                                                                       "resources": {"requests": {"cpu": "100m"}}}])]
    assert phases(kubelet.handle_pod_additions(pods, node)) == {"a": "Failed", "b": "Pending"}


def test_terminal_running_pods_do_not_count():
    node = make_node({"cpu": "100m", "pods": "10"}, name=HOSTNAME)
    done = pod("done", phase="Succeeded", containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}])
    [outcome] = kubelet.handle_pod_additions([pod("new", containers=[{"name": "c", "image": "x",
                                                                      "resources": {"requests": {"cpu": "100m"}}}])],
                                             node, admitted=[done])
    assert outcome.result.admit and outcome.active_pods == []


def test_preempted_pods_are_failed_and_stop_counting():
    node = make_node({"cpu": "100m", "pods": "10"}, name=HOSTNAME)
    victim = pod("victim", containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}])
    crit = pod("critical", created=NOW, containers=[{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}])
    crit.metadata.annotations = {"kubernetes.io/config.source": "file"}
    later = pod("later", created=NOW + timedelta(seconds=1))
    outcomes = kubelet.handle_pod_additions([crit, later], node, admitted=[victim])
    [preemption] = outcomes[0].preempted
    assert (preemption.pod.metadata.name, preemption.status_phase, preemption.status_reason, preemption.event) == (
        "victim", "Failed", "Preempting", ("Warning", "Preempting", "Preempted in order to admit critical pod"))
    assert [p.metadata.name for p in outcomes[1].active_pods] == ["critical"]


def test_handler_order_is_v1_27_registration_order():
    assert [name for name, _ in kubelet.ADMIT_HANDLER_ORDER] == [
        "eviction", "sysctl", "resource allocation", "predicate", "shutdown"]


def test_eviction_handler_runs_first_and_its_refusal_wins():
    def evicted(admit_pod, pods):
        return PodAdmitResult(False, "Evicted", "The node had condition: [DiskPressure]. ")
    node = make_node({"pods": "10"}, name=HOSTNAME)
    bad = pod("bad", nodeName="elsewhere")  # would also fail NodeName in the predicate handler
    [outcome] = kubelet.handle_pod_additions([bad], node, eviction_admit=evicted)
    assert (outcome.handler, outcome.status_reason, outcome.status_message) == (
        "eviction", "Evicted", "Pod was rejected: The node had condition: [DiskPressure]. ")


def test_shutdown_handler_message_is_doubled():
    result = kubelet.can_admit_pod([], pod("p"), make_node({"pods": "10"}), node_shutting_down=True)
    assert (result.reason, result.message) == ("NodeShutdown", "Pod was rejected as the node is shutting down.")
    (_, _, message), _ = kubelet.reject_pod(pod("p"), result.reason, result.message)
    assert message == "Pod was rejected: Pod was rejected as the node is shutting down."


def sysctl_pod(*names, **spec):
    return pod("s", securityContext={"sysctls": [{"name": n, "value": "1"} for n in names]}, **spec)


@pytest.mark.parametrize("p, unsafe, expected", [
    (pod("none"), (), (True, "")),
    (sysctl_pod("net.ipv4.tcp_syncookies"), (), (True, "")),
    (sysctl_pod("net/ipv4/ip_local_port_range"), (), (True, "")),  # slash form converted to dots
    (sysctl_pod("net.core.somaxconn"), (), (False, 'forbidden sysctl: "net.core.somaxconn" not allowlisted')),
    (sysctl_pod("net.core.somaxconn"), ("net.core.*",), (True, "")),
    (sysctl_pod("kernel.msgmax"), ("kernel.msg*",), (True, "")),
    (sysctl_pod("net.ipv4.tcp_syncookies", hostNetwork=True), (),
     (False, 'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled')),
    (sysctl_pod("kernel.shm_rmid_forced", hostIPC=True), (),
     (False, 'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled')),
])
def test_sysctl_allowlist(p, unsafe, expected):
    """pkg/kubelet/sysctl/allowlist.go: safe sysctls plus --allowed-unsafe-sysctls, namespaces vs host sharing."""
    result = kubelet.sysctl_admit(p, unsafe)
    assert (result.admit, result.message) == expected
    assert result.admit or result.reason == "SysctlForbidden"


def test_sysctl_handler_runs_before_the_predicates():
    p = sysctl_pod("vm.swappiness", nodeName="elsewhere")
    [outcome] = kubelet.handle_pod_additions([p], make_node({"pods": "10"}, name=HOSTNAME))
    assert (outcome.handler, outcome.status_reason) == ("sysctl", "SysctlForbidden")


def test_an_unknown_unsafe_sysctl_pattern_is_refused():
    with pytest.raises(ValueError, match="not known to be namespaced"):
        kubelet.sysctl_admit(sysctl_pod("vm.swappiness"), ("vm.swappiness",))


def test_no_phase_check_for_incoming_pods():
    """v1.27 admits a pod that arrives already Failed like any other (pkg/kubelet/kubelet.go HandlePodAdditions)."""
    [outcome] = kubelet.handle_pod_additions([pod("p", phase="Failed")], make_node({"pods": "10"}))
    assert outcome.result.admit and not outcome.skipped


def test_invalid_node_info_is_reported_by_the_predicate_handler():
    [outcome] = kubelet.handle_pod_additions([pod("p")], None)
    assert (outcome.handler, outcome.status_reason, outcome.status_message) == (
        "predicate", lifecycle.INVALID_NODE_INFO, "Pod was rejected: Kubelet cannot get node info.")
