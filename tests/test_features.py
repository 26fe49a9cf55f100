"""Chapter 1: feature gates per release (pkg/features/kube_features.go), and the release profiles.

Each release's defaults are read from that release's kube_features.go (v1.27.7 as vendored by kubeedge
v1.16.0; the versioned specs of the 1.31+ copies for the later releases); tests/data/gates.json holds the
table, with the source read for each row, so the table in features.py can be checked against it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mini_kubelet.features import (
    ALPHA, BETA, GA, DEFAULT_FEATURE_GATE, FeatureSpec, RELEASES, UNGATED_CHANGES, VERSIONED_FEATURE_GATES, FeatureGate, parse_release,
    release_profile, set_feature_gate_during_test,
)

pytestmark = pytest.mark.ch1

TABLE = json.loads((Path(__file__).parent / "data" / "gates.json").read_text())


@pytest.mark.parametrize("name, default", [
    ("SidecarContainers", False),  # not in v1.27 at all
    ("InPlacePodVerticalScaling", False),
    ("EventedPLEG", False),
    ("PodHasNetworkCondition", False),
    ("PodDisruptionConditions", True),
    ("GracefulNodeShutdown", True),
])
def test_v127_defaults(name, default):
    assert DEFAULT_FEATURE_GATE.release == "1.27"
    assert DEFAULT_FEATURE_GATE.enabled(name) is default


@pytest.mark.parametrize("release", RELEASES)
def test_each_release_default_matches_upstreams_spec(release):
    """Every gate's value in a release's profile is that release's default, as its kube_features.go states."""
    gate = FeatureGate(release)
    for name, row in TABLE["gates"].items():
        cell = row[release]
        if cell == "removed":  # the behaviour stays as the gate last had it; the flag is gone
            assert gate.spec(name).removed, f"{name} in {release}: {cell}"
            continue
        expected = cell != "-" and cell.split()[1] == "on"
        assert gate.enabled(name) is expected, f"{name} in {release}: {cell} ({row['source']})"
        spec = gate.spec(name)
        assert (spec is None) == (cell == "-"), f"{name} in {release}: {cell}"
        if spec is not None:
            assert spec.lock_to_default == ("locked" in cell), f"{name} in {release}: {cell}"


def test_the_table_names_every_gate():
    assert set(TABLE["gates"]) == set(VERSIONED_FEATURE_GATES)


def test_set_refuses_what_the_release_does_not_have():
    """SetFromMap: a gate the release lacks is unrecognized; a locked gate cannot be set against its default."""
    gate = FeatureGate("1.29")
    gate.set("SidecarContainers=false, EventedPLEG=true")
    assert gate.enabled("SidecarContainers") is False and gate.enabled("EventedPLEG") is True
    assert DEFAULT_FEATURE_GATE.enabled("EventedPLEG") is False, "a new gate leaves the default one alone"
    with pytest.raises(ValueError, match="unrecognized feature gate: SidecarContainers"):
        FeatureGate("1.27").set("SidecarContainers=true")  # v1.27's kubelet does not know the name
    with pytest.raises(ValueError, match="unrecognized feature gate: NoSuchGate"):
        gate.set("NoSuchGate=true")
    with pytest.raises(ValueError, match="missing bool value for SidecarContainers"):
        gate.set("SidecarContainers")
    with pytest.raises(ValueError, match="invalid value of SidecarContainers=maybe"):
        gate.set("SidecarContainers=maybe")
    with pytest.raises(ValueError, match="feature is locked to true"):
        FeatureGate("1.36").set("SidecarContainers=false")
    with pytest.raises(ValueError, match="unrecognized feature gate: PodDisruptionConditions"):
        FeatureGate("1.36").set("PodDisruptionConditions=true")  # removed in 1.33: always on, no longer a flag
    assert FeatureGate("1.36").enabled("PodDisruptionConditions") is True
    with pytest.raises(KeyError):
        gate.enabled("NoSuchGate")


@pytest.mark.parametrize("text, release", [("1.36", "1.36"), ("v1.36.3", "1.36"), ("v1.31.4-eks-1", "1.31"),
                                           ("1.27", "1.27")])
def test_parse_release(text, release):
    assert parse_release(text) == release


@pytest.mark.parametrize("text", ["1.26", "v1.37.0", "2.0", "latest", "", "1.36.x"])
def test_parse_release_refuses(text):
    with pytest.raises(ValueError):
        parse_release(text)


def test_release_profile_is_put_back():
    with release_profile("1.36", {"PodLevelResources": False}) as gate:
        assert gate.enabled("SidecarContainers") and not gate.enabled("PodLevelResources")
        assert gate.changed("HardEvictionOneSecondGrace") and gate.differences()["SidecarContainers"] is True
    assert DEFAULT_FEATURE_GATE.release == "1.27" and not DEFAULT_FEATURE_GATE.enabled_gates
    assert not DEFAULT_FEATURE_GATE.changed("HardEvictionOneSecondGrace")
    with pytest.raises(ValueError, match="locked"):
        with release_profile("1.36", {"SidecarContainers": False}):
            pass
    assert DEFAULT_FEATURE_GATE.release == "1.27" and not DEFAULT_FEATURE_GATE.enabled_gates, "a refused gate changes nothing"


@pytest.mark.parametrize("name", sorted(UNGATED_CHANGES))
def test_ungated_changes_hold_from_their_release(name):
    release = UNGATED_CHANGES[name].release
    before = RELEASES[RELEASES.index(release) - 1]
    assert FeatureGate(release).changed(name) and not FeatureGate(before).changed(name)


def test_a_test_may_set_any_releases_gate():
    with set_feature_gate_during_test(DEFAULT_FEATURE_GATE, "SidecarContainers", True):
        assert DEFAULT_FEATURE_GATE.enabled("SidecarContainers")
    assert not DEFAULT_FEATURE_GATE.enabled("SidecarContainers")


# k8s.io/component-base featuregate/feature_gate_test.go#TestFeatureSpecAtEmulationVersion (a 1.33-era copy of
# component-base, with versioned specs): the spec in force at a version is the newest one at or before it; before
# the first one the gate is PreAlpha, off (here: no spec).
SPECS = {"TestFeature": (FeatureSpec("1.25", False, ALPHA), FeatureSpec("1.28", False, BETA), FeatureSpec("1.29", True, GA))}


@pytest.mark.parametrize("version, expected", [
    ("1.30", ("1.29", True, GA)), ("1.29", ("1.29", True, GA)), ("1.28", ("1.28", False, BETA)),
    ("1.27", ("1.25", False, ALPHA)), ("1.25", ("1.25", False, ALPHA)), ("1.24", None),
])
def test_feature_spec_at_emulation_version(version, expected):
    spec = FeatureGate(version, SPECS).spec("TestFeature")
    assert (spec and (spec.version, spec.default, spec.pre_release)) == expected
    assert FeatureGate(version, SPECS).enabled("TestFeature") is bool(expected and expected[1])


@pytest.mark.upstream
@pytest.mark.parametrize("release, tag", [("1.27", "v1.27.7"), ("1.36", "v1.36.5")])
def test_each_profile_matches_the_gates_the_release_registers(release, tag):
    """Every gate of the table, in the release's profile, against that release's own registered specs.

    The harness's FeatureGateSpecs lists k8s.io/apiserver's DefaultMutableFeatureGate once pkg/features has
    registered the kubelet's gates (GetAll: default, stage, lock; no gate set), at the patch release its Go
    module builds: v1.27.7 and v1.36.5. It pins, for one, PLEGOnDemandRelist at 1.36: beta and on (#137909
    had turned it off during the release cycle, #137946 back on).
    """
    from . import upstream_harness
    upstream_harness.go()
    registered = upstream_harness.call(release, "FeatureGateSpecs")
    gate = FeatureGate(release)
    for name in VERSIONED_FEATURE_GATES:
        spec = gate.spec(name)
        if spec is None or spec.removed:
            assert name not in registered, f"{name} is registered in {tag}"
            continue
        theirs = registered.get(name)
        assert theirs is not None, f"{name} is not registered in {tag}"
        assert (gate.enabled(name), spec.lock_to_default) == (theirs["default"], theirs["locked"]), (name, tag, theirs)
        assert spec.pre_release == theirs["preRelease"], (name, tag, theirs)
    assert registered["PLEGOnDemandRelist" if release == "1.36" else "EventedPLEG"]["preRelease"] == BETA
