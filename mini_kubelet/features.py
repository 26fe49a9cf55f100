"""Feature gates: how upstream switches behaviour on and off, with each gate's v1.27 default.

Upstream: pkg/features/kube_features.go (defaultKubernetesFeatureGates) and
k8s.io/component-base/featuregate (FeatureGate: Enabled, Set, SetFromMap). A behaviour that came
after v1.27 is written behind the gate that introduced it upstream, off by default as v1.27 has it.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional

ALPHA, BETA, GA = "ALPHA", "BETA", ""  # featuregate prerelease stages


@dataclass(frozen=True)
class FeatureSpec:
    """A gate's default and stage in v1.27; added names the release for a gate v1.27 does not have.

    Upstream: k8s.io/component-base/featuregate FeatureSpec
    """

    default: bool
    pre_release: str
    added: str = ""


# --8<-- [start:gates]
DEFAULT_KUBERNETES_FEATURE_GATES: dict[str, FeatureSpec] = {
    "CustomCPUCFSQuotaPeriod": FeatureSpec(False, ALPHA),  # features.CPUCFSQuotaPeriod in the Go code
    "EventedPLEG": FeatureSpec(False, BETA),
    "GracefulNodeShutdown": FeatureSpec(True, BETA),
    "InPlacePodVerticalScaling": FeatureSpec(False, ALPHA),
    "MemoryQoS": FeatureSpec(False, ALPHA),
    "NodeSwap": FeatureSpec(False, ALPHA),
    "PodDisruptionConditions": FeatureSpec(True, BETA),
    "PodHasNetworkCondition": FeatureSpec(False, ALPHA),
    # Not in v1.27: restartable init containers (sidecars) arrived as alpha in 1.28, on by default from 1.29.
    # Registered off, so that v1.27's behaviour is what runs unless a reader turns it on.
    "SidecarContainers": FeatureSpec(False, ALPHA, added="1.28"),
}
# --8<-- [end:gates]


class FeatureGate:
    """Known gates with their current values: the defaults, unless set.

    Upstream: k8s.io/component-base/featuregate featureGate
    """

    def __init__(self, known: Optional[dict[str, FeatureSpec]] = None):
        self.known = dict(known if known is not None else DEFAULT_KUBERNETES_FEATURE_GATES)
        self.enabled_gates: dict[str, bool] = {}

    def enabled(self, name: str) -> bool:
        """The gate's value; an unregistered name is a programming error, as upstream (which panics).

        Upstream: k8s.io/component-base/featuregate featureGate.Enabled
        """
        if name in self.enabled_gates:
            return self.enabled_gates[name]
        if name not in self.known:
            raise KeyError(f'feature "{name}" is not registered in FeatureGate')
        return self.known[name].default

    def set_from_map(self, values: dict[str, bool]) -> None:
        """Set gates by name.

        Upstream: k8s.io/component-base/featuregate featureGate.SetFromMap
        """
        for name, value in values.items():
            if name not in self.known:
                raise ValueError(f"unrecognized feature gate: {name}")
            self.enabled_gates[name] = bool(value)

    def set(self, value: str) -> None:
        """Set gates from a --feature-gates string: "A=true,B=false".

        Upstream: k8s.io/component-base/featuregate featureGate.Set
        """
        values = {}
        for item in filter(None, (s.strip() for s in value.split(","))):
            name, sep, text = item.partition("=")
            if not sep:
                raise ValueError(f"missing bool value for {name}")
            if text.lower() not in ("true", "false", "1", "0", "t", "f"):
                raise ValueError(f"invalid value of {name}={text}, err: strconv.ParseBool: parsing {text!r}: invalid syntax")
            values[name.strip()] = text.lower() in ("true", "1", "t")
        self.set_from_map(values)


DEFAULT_FEATURE_GATE = FeatureGate()  # utilfeature.DefaultFeatureGate: what the mini kubelet consults


@contextmanager
def set_feature_gate_during_test(gate: FeatureGate, name: str, value: bool) -> Iterator[None]:
    """Set one gate for the duration of a with-block, then put back what it was.

    Upstream: k8s.io/component-base/featuregate/testing SetFeatureGateDuringTest
    """
    had, before = name in gate.enabled_gates, gate.enabled_gates.get(name)
    gate.set_from_map({name: value})
    try:
        yield
    finally:
        if had:
            gate.enabled_gates[name] = before
        else:
            gate.enabled_gates.pop(name, None)
