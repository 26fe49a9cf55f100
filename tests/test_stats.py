"""Chapter 4: the Summary API (/stats/summary) read in its real JSON shape.

Field names and types from k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go (v1.27.7): camelCase, except
"ephemeral-storage", "process_stats"/"process_count" and the singular "volume"; every number optional.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_kubelet import api, stats

pytestmark = pytest.mark.ch4

FIXTURE = Path(__file__).parent / "data" / "summary-worker-1.json"
MI = 2**20


def test_load_the_fixture():
    summary = stats.load_summary(FIXTURE)
    node = summary.node
    assert node.node_name == "worker-1"
    assert [c.name for c in node.system_containers] == ["kubelet", "runtime", "pods"]
    assert node.system_containers[2].rootfs is None  # system containers carry no rootfs or logs
    assert node.memory.available_bytes + node.memory.working_set_bytes == 8331866112
    assert node.runtime.image_fs.capacity_bytes == 53660876800
    assert (node.rlimit.maxpid, node.rlimit.curproc) == (4194304, 1873)
    assert node.memory.time == datetime(2024, 5, 14, 9, 31, 7, tzinfo=timezone.utc)
    web, batch, db = summary.pods
    assert web.pod_ref == stats.PodReference("web-frontend-7c9f8d6b5-x2kqp", "shop", "6f1c2b1e-8a55-4d0b-9f6e-2c1a3b4d5e01")
    assert [v.name for v in web.volume_stats] == ["cache", "kube-api-access-8fj2c"]
    assert web.containers[0].rootfs.used_bytes == 48 * MI and web.containers[0].logs.used_bytes == 12 * MI
    assert batch.ephemeral_storage.used_bytes == 1413 * MI
    assert batch.process_stats.process_count == 12
    assert db.volume_stats[0].pvc_ref == stats.PVCReference("data-postgres-0", "shop")


def test_round_trip_keeps_the_json_shape():
    doc = json.loads(FIXTURE.read_text())
    again = stats.summary_to_json(stats.summary_from_json(doc, "x"))
    assert stats.summary_from_json(again, "x") == stats.summary_from_json(doc, "x")
    pod = again["pods"][0]
    assert {"podRef", "containers", "volume", "ephemeral-storage", "process_stats"} <= set(pod)
    assert "imageFs" in again["node"]["runtime"] and "maxpid" in again["node"]["rlimit"]


def test_missing_optional_fields_are_tolerated():
    """Go decodes missing pointers as nil and missing structs as zero values; unknown fields are ignored."""
    summary = stats.summary_from_json({"node": {"nodeName": "n", "memory": {"workingSetBytes": 5}, "futureField": 1},
                                       "pods": [{"podRef": {"name": "p"}, "memory": None}]}, "x")
    assert summary.node.memory == stats.MemoryStats(working_set_bytes=5)
    assert summary.node.fs is None and summary.node.runtime is None and summary.node.system_containers == []
    assert summary.pods[0].pod_ref == stats.PodReference("p", "", "") and summary.pods[0].memory is None
    assert stats.summary_from_json({}, "x") == stats.Summary()


@pytest.mark.parametrize("doc, path, problem", [
    ([], "", "expected a mapping, got a list"),
    ({"node": {"memory": {"availableBytes": -1}}}, "node.memory.availableBytes", "expected a non-negative integer (uint64), got -1"),
    ({"node": {"fs": {"usedBytes": 1.5}}}, "node.fs.usedBytes", "expected a non-negative integer (uint64), got 1.5"),
    ({"node": {"rlimit": {"maxpid": "many"}}}, "node.rlimit.maxpid", 'expected an integer (int64), got "many"'),
    ({"pods": [{}, {"containers": [{"rootfs": {"usedBytes": "1Gi"}}]}]}, "pods[1].containers[0].rootfs.usedBytes",
     'expected a non-negative integer (uint64), got "1Gi"'),
    ({"pods": [{"volume": {"name": "v"}}]}, "pods[0].volume", "expected a list, got a mapping"),
    ({"node": {"memory": {"time": "yesterday"}}}, "node.memory.time",
     'expected an RFC 3339 time such as "2024-05-01T10:00:00Z", got "yesterday"'),
    ({"pods": [{"podRef": {"uid": 7}}]}, "pods[0].podRef.uid", "expected a string, got 7"),
])
def test_bad_fields_name_file_and_path(doc, path, problem):
    with pytest.raises(api.ManifestError) as err:
        stats.summary_from_json(doc, "summary.json")
    assert (err.value.source, err.value.path, err.value.problem) == ("summary.json", path, problem)


def test_bad_files(tmp_path):
    with pytest.raises(api.ManifestError, match=r"^.*missing\.json: cannot read file"):
        stats.load_summary(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"node": {"nodeName": "n",}}')
    with pytest.raises(api.ManifestError, match=r"broken\.json: line 1, column 27: invalid JSON"):
        stats.load_summary(broken)


def test_times_keep_offsets_and_drop_nanoseconds():
    summary = stats.summary_from_json({"node": {"fs": {"time": "2024-05-14T11:31:07.123456789+02:00"}}}, "x")
    assert summary.node.fs.time == datetime(2024, 5, 14, 9, 31, 7, 123456, tzinfo=timezone.utc)


fs_values = st.one_of(st.none(), st.integers(0, 2**64 - 1))


@given(st.fixed_dictionaries({}, optional={key: fs_values for key in
                                           ("availableBytes", "capacityBytes", "usedBytes", "inodesFree", "inodes", "inodesUsed")}))
def test_fs_stats_decode_every_optional_uint64(fs):
    decoded = stats.summary_from_json({"node": {"fs": fs}}, "x").node.fs
    assert stats.summary_to_json(stats.Summary(node=stats.NodeStats(fs=decoded)))["node"].get("fs", {}) == {
        k: v for k, v in fs.items() if v is not None}
