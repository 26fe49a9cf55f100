"""`mini-kubelet explain` on a Pod mid-resize (v1.36 status fields: allocatedResources, resources, conditions)."""

import copy
from pathlib import Path

import yaml

from mini_kubelet import api
from mini_kubelet.cmd.explain_resize import resize_lines, resize_report

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pods" / "resize-pending.yaml"


def doc():
    return yaml.safe_load(EXAMPLE.read_text())


def lines(d):
    report = resize_report(api.pod_from_manifest(d))
    return None if report is None else resize_lines(report)


def test_a_deferred_resize_says_what_the_cgroups_hold_what_the_spec_wants_and_why():
    assert lines(doc()) == [
        "resize: the spec differs from what the node holds",
        "container app: cgroups hold request cpu 1, request memory 512Mi, limit cpu 1, limit memory 512Mi "
        "(status.containerStatuses[].resources)",
        "container app: allocated cpu 1, memory 512Mi (allocatedResources: what the kubelet admitted)",
        "container app: spec wants request cpu 2, request memory 512Mi, limit cpu 2, limit memory 512Mi",
        "why: PodResizePending Deferred: Node didn't have enough resource: cpu, requested: 2000, used: 3500, "
        "capacity: 4000 (the node has no room now; the kubelet retries as resources free up)",
        "note: the cgroup tree below is computed from the spec: the values wanted, not those held"]


def test_without_status_resources_the_allocation_is_what_is_held():
    d = doc()
    del d["status"]["containerStatuses"][0]["resources"]
    assert lines(d)[1] == ("container app: cgroups hold request cpu 1, request memory 512Mi, limit cpu 2, "
                           "limit memory 512Mi (status.containerStatuses[].allocatedResources)")


def test_in_progress_is_explained():
    d = doc()
    d["status"]["conditions"][0].update(type="PodResizeInProgress", reason="", message="")
    assert lines(d)[-2] == ("why: PodResizeInProgress (no reason) (allocated; the kubelet is writing the new values "
                            "to the cgroups)")


def test_a_pod_whose_status_matches_its_spec_has_no_resize_lines():
    d = doc()
    d["spec"]["containers"][0]["resources"] = copy.deepcopy(d["status"]["containerStatuses"][0]["resources"])
    d["status"]["conditions"] = d["status"]["conditions"][1:]
    assert lines(d) is None
