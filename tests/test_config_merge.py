"""Chapter 1: PodConfig's merge of pod sources into ADD, UPDATE, DELETE, REMOVE and RECONCILE.

Ported from pkg/kubelet/config/config_test.go (read at kubernetes/kubernetes@00a3928b, whose merge code is
the same as v1.27's; TestPodConfigRace, a data-race check, is not ported). Each test is a sequence of steps:
what the source sends, then the updates the kubelet reads, compared as upstream's expectPodUpdate does (pods
sorted by namespace, local annotations ignored).
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from kubernetes.client import V1Container, V1ObjectMeta, V1Pod, V1PodSpec, V1PodStatus

from mini_kubelet import types
from mini_kubelet.config.config import PodConfig, PodConfigNotificationMode, pods_differ_semantically
from mini_kubelet.types import ADD, DELETE, RECONCILE, REMOVE, SET, UPDATE, PodUpdate

pytestmark = pytest.mark.ch1

TEST_SOURCE = "test"
INCREMENTAL, SNAPSHOT = PodConfigNotificationMode.INCREMENTAL, PodConfigNotificationMode.SNAPSHOT
SNAPSHOT_AND_UPDATES = PodConfigNotificationMode.SNAPSHOT_AND_UPDATES
DELETED_AT = datetime(2023, 1, 1, 0, 0, 5, tzinfo=timezone.utc)


def create_valid_pod(name, namespace, *, bar=False, annotations=None, labels=None, status=None, ctr="ctr",
                     deleted=False):
    """config_test.go CreateValidPod, with the variations the tests make to it."""
    containers = [V1Container(name="bar", image="test", image_pull_policy="IfNotPresent",
                              termination_message_policy="File")] if bar else [
        V1Container(name=ctr, image="image", image_pull_policy="IfNotPresent", termination_message_policy="File")]
    return V1Pod(metadata=V1ObjectMeta(uid=name + namespace, name=name, namespace=namespace,
                                       annotations=dict(annotations) if annotations is not None else None,
                                       labels=dict(labels) if labels is not None else None,
                                       deletion_timestamp=DELETED_AT if deleted else None),
                 spec=V1PodSpec(restart_policy="Always", dns_policy="ClusterFirst", containers=containers),
                 status=status)


P = create_valid_pod
SENT_TWICE = "(ADD of an identical pod)"

# (upstream test, mode, [(what the source sends, [expected updates as (op, source, pods)])])
CASES = [
    ("TestNewPodAdded", INCREMENTAL, [
        ((ADD, [P("foo", "new")]), [(ADD, TEST_SOURCE, [P("foo", "new")])]),
        ("sync", [(SET, "*", [P("foo", "new")])])]),
    ("TestNewPodAddedInvalidNamespace", INCREMENTAL, [
        ((ADD, [P("foo", "")]), [(ADD, TEST_SOURCE, [P("foo", "")])]),
        ("sync", [(SET, "*", [P("foo", "")])])]),
    ("TestNewPodAddedDefaultNamespace", INCREMENTAL, [
        ((ADD, [P("foo", "default")]), [(ADD, TEST_SOURCE, [P("foo", "default")])]),
        ("sync", [(SET, "*", [P("foo", "default")])])]),
    ("TestNewPodAddedDifferentNamespaces", INCREMENTAL, [
        ((ADD, [P("foo", "default")]), [(ADD, TEST_SOURCE, [P("foo", "default")])]),
        ((ADD, [P("foo", "new")]), [(ADD, TEST_SOURCE, [P("foo", "new")])]),
        ("sync", [(SET, "*", [P("foo", "default"), P("foo", "new")])])]),
    ("TestInvalidPodFiltered", INCREMENTAL, [
        ((ADD, [P("foo", "new")]), [(ADD, TEST_SOURCE, [P("foo", "new")])]),
        ((ADD, [P("foo", "new")]), [])]),
    ("TestNewPodAddedSnapshotAndUpdates", SNAPSHOT_AND_UPDATES, [
        ((ADD, [P("foo", "new")]), [(SET, TEST_SOURCE, [P("foo", "new")])]),
        ("sync", [(SET, "*", [P("foo", "new")])]),
        ((ADD, [P("foo", "new", bar=True)]), [(UPDATE, TEST_SOURCE, [P("foo", "new", bar=True)])])]),
    ("TestNewPodAddedSnapshot", SNAPSHOT, [
        ((ADD, [P("foo", "new")]), [(SET, TEST_SOURCE, [P("foo", "new")])]),
        ("sync", [(SET, "*", [P("foo", "new")])]),
        ((ADD, [P("foo", "new", bar=True)]), [(SET, TEST_SOURCE, [P("foo", "new", bar=True)])])]),
    ("TestNewPodAddedUpdatedRemoved", INCREMENTAL, [
        ((ADD, [P("foo", "new")]), [(ADD, TEST_SOURCE, [P("foo", "new")])]),
        ((ADD, [P("foo", "new", bar=True)]), [(UPDATE, TEST_SOURCE, [P("foo", "new", bar=True)])]),
        ((REMOVE, [P("foo", "new")]), [(REMOVE, TEST_SOURCE, [P("foo", "new", bar=True)])])]),
    ("TestNewPodAddedDelete", INCREMENTAL, [
        ((ADD, [P("foo", "new")]), [(ADD, TEST_SOURCE, [P("foo", "new")])]),
        # the DELETE carries the stored pod, now with the deletion timestamp
        ((DELETE, [P("foo", "new", deleted=True)]), [(DELETE, TEST_SOURCE, [P("foo", "new", deleted=True)])])]),
    ("TestNewPodAddedUpdatedSet", INCREMENTAL, [
        ((ADD, [P("foo", "new"), P("foo2", "new"), P("foo3", "new")]),
         [(ADD, TEST_SOURCE, [P("foo", "new"), P("foo2", "new"), P("foo3", "new")])]),
        ((SET, [P("foo2", "new", bar=True), P("foo3", "new"), P("foo4", "new")]),
         [(REMOVE, TEST_SOURCE, [P("foo", "new")]), (ADD, TEST_SOURCE, [P("foo4", "new")]),
          (UPDATE, TEST_SOURCE, [P("foo2", "new", bar=True)])])]),
    ("TestPodUpdateAnnotations", INCREMENTAL, [
        ((SET, [P("foo1", "new"), P("foo2", "new", annotations={"kubernetes.io/blah": "blah"}), P("foo3", "new")]),
         [(ADD, TEST_SOURCE, [P("foo1", "new"), P("foo2", "new", annotations={"kubernetes.io/blah": "blah"}),
                              P("foo3", "new")])]),
        ((SET, [P("foo1", "new"), P("foo2", "new", annotations={"kubernetes.io/blah": "superblah"}), P("foo3", "new")]),
         [(UPDATE, TEST_SOURCE, [P("foo2", "new", annotations={"kubernetes.io/blah": "superblah"})])]),
        ((SET, [P("foo1", "new"), P("foo2", "new", annotations={"kubernetes.io/blah": "superblah",
                                                                 "kubernetes.io/otherblah": "doh"}), P("foo3", "new")]),
         [(UPDATE, TEST_SOURCE, [P("foo2", "new", annotations={"kubernetes.io/blah": "superblah",
                                                                "kubernetes.io/otherblah": "doh"})])]),
        ((SET, [P("foo1", "new"), P("foo2", "new", annotations={"kubernetes.io/otherblah": "doh"}), P("foo3", "new")]),
         [(UPDATE, TEST_SOURCE, [P("foo2", "new", annotations={"kubernetes.io/otherblah": "doh"})])])]),
    ("TestPodUpdateLabels", INCREMENTAL, [
        ((SET, [P("foo2", "new", labels={"key": "value"})]), [(ADD, TEST_SOURCE, [P("foo2", "new", labels={"key": "value"})])]),
        ((SET, [P("foo2", "new", labels={"key": "newValue"})]),
         [(UPDATE, TEST_SOURCE, [P("foo2", "new", labels={"key": "newValue"})])])]),
    # not upstream: two pods with one full name in one update; the second is dropped with a Warning event
    ("filterInvalidPods (same full name in one update)", INCREMENTAL, [
        ((SET, [P("foo", "new"), P("foo", "new", bar=True)]), [(ADD, TEST_SOURCE, [P("foo", "new")])])]),
]


def reconciled_cases():
    """TestNewPodAddedSetReconciled: a status change alone is a RECONCILE; with a spec change, an UPDATE."""
    def pods(touch_status, touch_spec):
        status = V1PodStatus(message="12345") if touch_status else None
        return [P("changeable-pod-0", "new", status=status, ctr="67890" if touch_spec else "ctr"),
                P("constant-pod-1", "new"), P("constant-pod-2", "new")]
    for op in (ADD, SET):
        yield (f"TestNewPodAddedSetReconciled ({op.name})", INCREMENTAL, [
            ((SET, pods(False, False)), [(ADD, TEST_SOURCE, pods(False, False))]),
            ((op, pods(False, False)), []),
            ((op, pods(True, False)), [(RECONCILE, TEST_SOURCE, pods(True, False)[:1])]),
            ((op, pods(True, True)), [(UPDATE, TEST_SOURCE, pods(True, True)[:1])])])


def initial_empty_set_cases():
    """TestInitialEmptySet: the first empty SET is announced (an empty ADD, or a SET in the snapshot modes)."""
    for mode, op in ((INCREMENTAL, ADD), (SNAPSHOT, SET), (SNAPSHOT_AND_UPDATES, SET)):
        yield (f"TestInitialEmptySet ({mode.name})", mode, [
            ((SET, []), [(op, TEST_SOURCE, [])]),
            ((SET, []), []),
            ((ADD, [P("foo", "new")]), [(op, TEST_SOURCE, [P("foo", "new")])])])


def expect_pod_update(updates, expected):
    """config_test.go expectPodUpdate, then expectNoPodUpdate."""
    for op, source, pods in expected:
        update = updates.popleft()
        assert (update.op, update.source) == (op, source)
        got = sorted(update.pods, key=lambda p: p.metadata.namespace)
        want = sorted(pods, key=lambda p: p.metadata.namespace)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert not pods_differ_semantically(w, g) and w.status == g.status, (w, g)
    assert not updates, f"expected no update, got {updates[0]}"


@pytest.mark.parametrize("name, mode, steps", [*CASES, *reconciled_cases(), *initial_empty_set_cases()],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_merge(name, mode, steps):
    config = PodConfig(mode)
    channel = config.channel(TEST_SOURCE)
    for sent, expected in steps:
        if sent == "sync":
            config.sync()
        else:
            channel(PodUpdate(sent[1], sent[0], TEST_SOURCE))
        expect_pod_update(config.updates, expected)


def test_duplicate_full_name_event():
    """filterInvalidPods: the dropped pod gets a FailedValidation Warning naming it."""
    config = PodConfig()
    config.channel(TEST_SOURCE)(PodUpdate([P("foo", "new"), P("foo", "new", bar=True)], SET, TEST_SOURCE))
    (pod, event), = config.events
    assert event == ("Warning", "FailedValidation",
                     'Error validating pod foo_new(foonew) from test due to duplicate pod name "foo", ignoring')


def test_annotations_added_by_merge():
    """merge: every pod gets the source annotation; a new pod the first-seen time, kept across updates."""
    config = PodConfig()
    channel = config.channel("api")
    channel(PodUpdate([P("foo", "new")], SET, "api"))
    added = config.updates.popleft().pods[0].metadata.annotations
    assert added == {types.CONFIG_SOURCE_ANNOTATION_KEY: "api", types.CONFIG_FIRST_SEEN_ANNOTATION_KEY:
                     "2023-01-01T00:00:00Z"}
    channel(PodUpdate([P("foo", "new", bar=True)], SET, "api"))
    assert config.updates.popleft().pods[0].metadata.annotations == added


def test_seen_all_sources():
    """PodConfig.SeenAllSources: every registered source has sent a SET and the kubelet has seen it."""
    config = PodConfig()
    file, api = config.channel("file"), config.channel("api")
    file(PodUpdate([], SET, "file"))
    assert not config.seen_all_sources({"file", "api"})
    api(PodUpdate([P("foo", "new")], ADD, "api"))  # an ADD does not mark a source as seen
    assert not config.seen_all_sources({"file", "api"})
    api(PodUpdate([P("foo", "new")], SET, "api"))
    assert config.seen_all_sources({"file", "api"}) and not config.seen_all_sources({"file"})


def test_emission_order_of_one_merge():
    """podStorage.Merge (incremental): REMOVE, ADD, UPDATE, DELETE, then RECONCILE, from one SET."""
    config = PodConfig()
    channel = config.channel(TEST_SOURCE)
    channel(PodUpdate([P("gone", "ns"), P("changed", "ns"), P("deleting", "ns"), P("status", "ns")], SET, TEST_SOURCE))
    config.updates.clear()
    channel(PodUpdate([P("changed", "ns", bar=True), P("deleting", "ns", deleted=True),
                       P("status", "ns", status=V1PodStatus(phase="Running")), P("new", "ns")], SET, TEST_SOURCE))
    assert [(u.op, [p.metadata.name for p in u.pods]) for u in config.updates] == [
        (REMOVE, ["gone"]), (ADD, ["new"]), (UPDATE, ["changed"]), (DELETE, ["deleting"]), (RECONCILE, ["status"])]


@pytest.mark.parametrize("change, differ", [
    (lambda p: setattr(p.metadata, "labels", {}), True),  # nil and empty labels differ, as reflect.DeepEqual says
    (lambda p: setattr(p.metadata, "annotations", {types.CONFIG_MIRROR_ANNOTATION_KEY: "x",
                                                   types.CONFIG_FIRST_SEEN_ANNOTATION_KEY: "y"}), False),
    (lambda p: setattr(p.metadata, "annotations", {"team": "a"}), True),
    (lambda p: setattr(p.metadata, "deletion_grace_period_seconds", 30), True),
    (lambda p: setattr(p, "status", V1PodStatus(phase="Running")), False),  # status is not a semantic change
    (lambda p: setattr(p.metadata, "resource_version", "7"), False),
])
def test_pods_differ_semantically(change, differ):
    """podsDifferSemantically: spec, labels, deletion fields and non-local annotations count; nothing else."""
    existing, ref = P("foo", "new"), P("foo", "new")
    change(ref)
    assert pods_differ_semantically(existing, ref) is differ
