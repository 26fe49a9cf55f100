"""Chapter 4: the message and annotations an evicted pod gets, word for word.

The messages asserted by eviction_manager_test.go#TestMemoryPressure_VerifyPodStatus and
#TestDiskPressureNodeFs_VerifyPodStatus (copy kubeedge/kubernetes@bc47299, about v1.26; same code in
v1.27.7), helpers_test.go#TestEvictonMessageWithResourceResize (the gate is alpha and off in v1.27),
and the rest from evictionMessage in the v1.27.7 pkg/kubelet/eviction/helpers.go.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mini_kubelet import api as core
from mini_kubelet import stats as statsapi
from mini_kubelet.eviction import api, messages, signals
from mini_kubelet.eviction.api import Threshold, ThresholdValue
from tests.test_eviction_ranking import (MI, disk_pod, mem_pod, new_container, new_pod, new_pod_disk_stats,
                                         new_pod_memory_stats, new_resource_list)

pytestmark = pytest.mark.ch4

FIXTURE = Path(__file__).parent / "data" / "summary-worker-1.json"


def hard(signal, quantity):
    return Threshold(signal, api.OP_LESS_THAN, ThresholdValue(quantity=quantity))


def memory_summary(available, pod_stats):
    """Upstream makeMemoryStats: availableBytes = workingSetBytes = available, for the node and "pods"."""
    memory = statsapi.MemoryStats(available_bytes=available, working_set_bytes=available)
    node = statsapi.NodeStats(memory=memory, system_containers=[statsapi.ContainerStats(name="pods", memory=memory)])
    return statsapi.Summary(node=node, pods=pod_stats)


def disk_summary(root_available, image_available, pod_stats):
    """Upstream makeDiskStats: capacity is twice what is available."""
    def fs(available):
        return statsapi.FsStats(available_bytes=available, capacity_bytes=2 * available)
    node = statsapi.NodeStats(fs=fs(root_available), runtime=statsapi.RuntimeStats(image_fs=fs(image_available)))
    return statsapi.Summary(node=node, pods=pod_stats)


# eviction_manager_test.go#TestMemoryPressure_VerifyPodStatus
def test_memory_pressure_message():
    below = new_pod("below-requests", 0, [new_container("c", new_resource_list("", "1Gi"), new_resource_list("", "1Gi"))])
    above = new_pod("above-requests", 0, [new_container("c", new_resource_list("", "100Mi"), new_resource_list("", "1Gi"))])
    summary = memory_summary(1500 * MI, [new_pod_memory_stats(below, 900 * MI), new_pod_memory_stats(above, 700 * MI)])
    observations, stats = signals.make_signal_observations(summary)
    message, annotations = messages.eviction_message("memory", above, stats, [hard(api.SIGNAL_MEMORY_AVAILABLE, "2Gi")],
                                                     observations)
    assert message == "The node was low on resource: memory. Threshold quantity: 2Gi, available: 1500Mi. "
    # the fixture's container stat has no memory figure, so there is no container sentence
    assert annotations == {"offending_containers": "", "offending_containers_usage": "", "starved_resource": "memory"}


# eviction_manager_test.go#TestDiskPressureNodeFs_VerifyPodStatus
def test_disk_pressure_message():
    pod = disk_pod("above-requests", 0, "100Mi")
    summary = disk_summary(int(1.5 * 2**30), 200 * 2**30, [new_pod_disk_stats(pod, 700 * MI, 0, 0)])
    observations, stats = signals.make_signal_observations(summary)
    message, annotations = messages.eviction_message("ephemeral-storage", pod, stats,
                                                     [hard(api.SIGNAL_NODEFS_AVAILABLE, "2Gi")], observations)
    assert message == "The node was low on resource: ephemeral-storage. Threshold quantity: 2Gi, available: 1536Mi. "
    assert annotations["starved_resource"] == "ephemeral-storage"


# helpers_test.go#TestEvictonMessageWithResourceResize (InPlacePodVerticalScaling: alpha, default off in v1.27)
@pytest.mark.parametrize("gate, expected_sentence", [
    (True, "Container testcontainer was using 150Mi, request is 100Mi, has larger consumption of memory. "),
    (False, None),
])
def test_eviction_message_with_resource_resize(gate, expected_sentence):
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "testpod", "uid": "testpod"},
                "spec": {"containers": [new_container("testcontainer", {"memory": "200Mi"})]},
                "status": {"containerStatuses": [{"name": "testcontainer", "image": "app", "imageID": "", "ready": True,
                                                  "restartCount": 0, "allocatedResources": {"memory": "100Mi"}}]}}
    pod = core.pod_from_manifest(manifest)
    pod_stats = statsapi.PodStats(pod_ref=statsapi.PodReference("testpod", "", "testpod"), containers=[
        statsapi.ContainerStats(name="testcontainer", memory=statsapi.MemoryStats(working_set_bytes=150 * MI))])
    stats = signals.cached_stats_func([pod_stats])
    message, annotations = messages.eviction_message("memory", pod, stats, in_place_pod_vertical_scaling=gate)
    if expected_sentence:
        assert message == "The node was low on resource: memory. " + expected_sentence
        assert annotations == {"offending_containers": "testcontainer", "offending_containers_usage": "150Mi",
                               "starved_resource": "memory"}
    else:
        assert message == "The node was low on resource: memory. "


def test_message_without_stats_has_no_annotations():
    pod = mem_pod("lost", 0, "100Mi")
    message, annotations = messages.eviction_message("memory", pod, signals.cached_stats_func([]))
    assert (message, annotations) == ("The node was low on resource: memory. ", {})


def test_container_sentences_from_a_real_summary():
    """The fixture node is below memory.available<100Mi; web-frontend's nginx uses 430Mi against a 256Mi request."""
    web = new_pod("web-frontend-7c9f8d6b5-x2kqp", 0, [new_container("nginx", {"memory": "256Mi", "cpu": "100m"},
                                                                     {"memory": "512Mi"})])
    web.metadata.uid = "6f1c2b1e-8a55-4d0b-9f6e-2c1a3b4d5e01"
    observations, stats = signals.make_signal_observations(statsapi.load_summary(FIXTURE))
    thresholds = [hard(api.SIGNAL_MEMORY_AVAILABLE, "100Mi"), hard(api.SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, "100Mi")]
    message, annotations = messages.eviction_message("memory", web, stats, thresholds, observations)
    assert message == ("The node was low on resource: memory. Threshold quantity: 100Mi, available: 26508Ki. "
                       "Container nginx was using 430Mi, request is 256Mi, has larger consumption of memory. ")
    assert annotations == {"offending_containers": "nginx", "offending_containers_usage": "430Mi",
                           "starved_resource": "memory"}
    # ephemeral-storage: rootfs + logs = 60Mi against no request, which prints as "0"
    message, _ = messages.eviction_message("ephemeral-storage", web, stats, [], observations)
    assert message.endswith("Container nginx was using 60Mi, request is 0, has larger consumption of ephemeral-storage. ")


def test_threshold_sentence_uses_first_observed_threshold_of_the_resource():
    """getThresholdMetInfo: the first threshold whose resource matches and which has an observation."""
    observations = {api.SIGNAL_NODEFS_INODES_FREE: signals.SignalObservation(available=1000, capacity=4 * 2**20)}
    thresholds = [hard(api.SIGNAL_IMAGEFS_INODES_FREE, "1Mi"),  # no observation: skipped
                  Threshold(api.SIGNAL_NODEFS_INODES_FREE, api.OP_LESS_THAN, ThresholdValue(percentage=0.05))]
    pod = mem_pod("p", 0)
    message, annotations = messages.eviction_message("inodes", pod, signals.cached_stats_func([]), thresholds, observations)
    # the percentage quantity prints BinarySI, the inode count DecimalSI (1000 -> 1k)
    assert message == "The node was low on resource: inodes. Threshold quantity: 209715, available: 1k. "


def test_percentage_threshold_quantity_prints_binary_si():
    observations = {api.SIGNAL_MEMORY_AVAILABLE: signals.SignalObservation(available=100 * MI, capacity=10 * 2**30)}
    threshold = Threshold(api.SIGNAL_MEMORY_AVAILABLE, api.OP_LESS_THAN, ThresholdValue(percentage=0.1))
    assert messages.get_threshold_met_info("memory", [threshold], observations) == ("1073741840", "100Mi")


def test_constants_word_for_word():
    assert messages.REASON == "Evicted"
    assert messages.NODE_CONDITION_MESSAGE_FMT.format("[MemoryPressure DiskPressure]") == (
        "The node had condition: [MemoryPressure DiskPressure]. ")
    assert messages.EMPTY_DIR_MESSAGE_FMT.format("scratch", "1Gi") == 'Usage of EmptyDir volume "scratch" exceeds the limit "1Gi". '
    assert messages.CONTAINER_EPHEMERAL_STORAGE_MESSAGE_FMT.format("app", "2Gi") == (
        'Container app exceeded its local ephemeral storage limit "2Gi". ')
    assert messages.POD_EPHEMERAL_STORAGE_MESSAGE_FMT.format("3Gi") == (
        "Pod ephemeral local storage usage exceeds the total limit of containers 3Gi. ")
    assert messages.pod_is_evicted("Failed", "Evicted") and not messages.pod_is_evicted("Running", "Evicted")
