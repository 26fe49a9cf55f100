"""Chapter 1: feature gates with v1.27's defaults (pkg/features/kube_features.go)."""

from __future__ import annotations

import pytest

from mini_kubelet.features import DEFAULT_FEATURE_GATE, FeatureGate

pytestmark = pytest.mark.ch1


@pytest.mark.parametrize("name, default", [
    ("SidecarContainers", False),  # not in v1.27 at all: registered off
    ("InPlacePodVerticalScaling", False),
    ("EventedPLEG", False),
    ("PodHasNetworkCondition", False),
    ("PodDisruptionConditions", True),
    ("GracefulNodeShutdown", True),
])
def test_v127_defaults(name, default):
    assert DEFAULT_FEATURE_GATE.enabled(name) is default


def test_set_and_unknown_gates():
    gate = FeatureGate()
    gate.set("SidecarContainers=true, EventedPLEG=false")
    assert gate.enabled("SidecarContainers") is True and gate.enabled("EventedPLEG") is False
    assert DEFAULT_FEATURE_GATE.enabled("SidecarContainers") is False, "a new gate leaves the default one alone"
    with pytest.raises(ValueError, match="unrecognized feature gate: NoSuchGate"):
        gate.set("NoSuchGate=true")
    with pytest.raises(ValueError, match="missing bool value for SidecarContainers"):
        gate.set("SidecarContainers")
    with pytest.raises(ValueError, match="invalid value of SidecarContainers=maybe"):
        gate.set("SidecarContainers=maybe")
    with pytest.raises(KeyError):
        gate.enabled("NoSuchGate")
