"""Feature gates and release profiles: which behaviour each Kubernetes release from 1.27 to 1.36 runs.

Upstream: pkg/features/kube_features.go (defaultVersionedKubernetesFeatureGates) and
k8s.io/component-base/featuregate (FeatureGate: Enabled, Set, SetFromMap, SetEmulationVersion).
Each gate lists its specs by the release that set them, as upstream's versioned specs do from 1.31. A
profile is a release (the gates' defaults at that version) with gates set on top, as the kubelet's
--feature-gates flag sets them. The course's reference is v1.27: the profile every command uses unless
asked for another. Imports nothing heavy: the command line checks these flags before loading the client.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Optional

ALPHA, BETA, GA, DEPRECATED = "ALPHA", "BETA", "", "DEPRECATED"  # featuregate prerelease stages
REFERENCE_RELEASE = "1.27"  # the release the chapters read line by line
CURRENT_RELEASE = "1.36"  # the newest release the profiles model
RELEASES = tuple(f"1.{minor}" for minor in range(27, 37))


@dataclass(frozen=True)
class FeatureSpec:
    """A gate's default and stage from one release on; removed marks the release that dropped the gate.

    Upstream: k8s.io/component-base/featuregate FeatureSpec (Version, Default, PreRelease, LockToDefault)
    """

    version: str
    default: bool
    pre_release: str
    lock_to_default: bool = False
    removed: bool = False


_STAGES = {"alpha": ALPHA, "beta": BETA, "GA": GA, "deprecated": DEPRECATED}


def _specs(*rows: str) -> tuple[FeatureSpec, ...]:
    """Specs written as the table in the course notes: "1.29 beta on", "1.33 GA on locked", "1.34 removed"."""
    specs = []
    for row in rows:
        version, *words = row.split()
        if words == ["removed"]:
            last = specs[-1]
            specs.append(FeatureSpec(version, last.default, last.pre_release, True, removed=True))
        else:
            specs.append(FeatureSpec(version, words[1] == "on", _STAGES[words[0]], "locked" in words[2:]))
    return tuple(specs)


# --8<-- [start:gates]
VERSIONED_FEATURE_GATES: dict[str, tuple[FeatureSpec, ...]] = {
    "AllowOverwriteTerminationGracePeriodSeconds": _specs("1.32 deprecated off", "1.35 deprecated off locked"),
    "ContainerRestartRules": _specs("1.34 alpha off", "1.35 beta on"),
    "CustomCPUCFSQuotaPeriod": _specs("1.27 alpha off", "1.36 GA on"),  # features.CPUCFSQuotaPeriod in the Go code
    "EventedPLEG": _specs("1.27 beta off", "1.30 alpha off"),  # alpha from 1.27.10, 1.28.6, 1.29.1 (#122720)
    "GracefulNodeShutdown": _specs("1.27 beta on"),
    "InPlacePodLevelResourcesVerticalScaling": _specs("1.35 alpha off", "1.36 beta on"),
    "InPlacePodVerticalScaling": _specs("1.27 alpha off", "1.33 beta on", "1.35 GA on locked"),
    "InPlacePodVerticalScalingExclusiveCPUs": _specs("1.32 alpha off"),
    "InPlacePodVerticalScalingExclusiveMemory": _specs("1.34 alpha off"),
    "InPlacePodVerticalScalingInitContainers": _specs("1.36 beta on"),
    "KubeletCrashLoopBackOffMax": _specs("1.32 alpha off", "1.35 beta on"),
    "KubeletSeparateDiskGC": _specs("1.29 alpha off", "1.31 beta on"),
    "MemoryQoS": _specs("1.27 alpha off"),
    "NodeSwap": _specs("1.27 alpha off", "1.28 beta off", "1.30 beta on", "1.34 GA on locked"),
    "PLEGOnDemandRelist": _specs("1.36 beta on"),
    "PodDisruptionConditions": _specs("1.27 beta on", "1.31 GA on locked", "1.34 removed"),
    "PodHasNetworkCondition": _specs("1.27 alpha off", "1.28 removed"),  # renamed PodReadyToStartContainersCondition
    "PodLevelResources": _specs("1.32 alpha off", "1.34 beta on"),
    "PodObservedGenerationTracking": _specs("1.33 alpha off", "1.34 beta on", "1.35 GA on locked"),
    "PodReadyToStartContainersCondition": _specs("1.28 alpha off", "1.29 beta on"),
    "PreventStaticPodAPIReferences": _specs("1.34 beta on"),
    "ReduceDefaultCrashLoopBackOffDecay": _specs("1.33 alpha off"),
    "RestartAllContainersOnContainerExits": _specs("1.35 alpha off", "1.36 beta on"),
    "SidecarContainers": _specs("1.28 alpha off", "1.29 beta on", "1.33 GA on locked"),
}
# --8<-- [end:gates]


@dataclass(frozen=True)
class Change:
    """A change in the course's topics that no gate guards: it holds from its release on."""

    release: str
    pr: str
    what: str


# --8<-- [start:changes]
UNGATED_CHANGES: dict[str, Change] = {
    "ZeroRequestFitSkip": Change("1.28", "#116408", "the resource fit skips a resource the Pod requests none of"),
    "MemoryOOMGroup": Change("1.28", "#117793", "cgroup v2 containers get memory.oom.group=1: an OOM kills them whole"),
    "PreStopGraceOverrideFix": Change("1.28", "#115835", "a stop's override bounds the preStop hook too: no second grace period after it"),
    "QOSClassFromStatus": Change("1.29", "#119665", "GetPodQOS reads status.qosClass; ComputePodQOS computes it"),
    "AdmissionOSChecksFirst": Change("1.29", "#116892", "admission runs the two OS checks before the predicates"),
    "ImagefsInodesFreeDefault": Change("1.30", "#121834", "imagefs.inodesFree<5% joins the default evictionHard"),
    "HardEvictionOneSecondGrace": Change("1.31", "#124063", "a hard eviction or a force delete gives the Pod 1 s, not 0"),
    "NoSwapForCriticalPods": Change("1.31", "#125277", "critical Pods (node- and cluster-critical, static and mirror) get no swap"),
    "PredicateFailureDescription": Change("1.31", "#125498", "a failed predicate's message ends with its description"),
    "InitContainerExtendedResourcesDropped": Change("1.31", "#124273", "admission ignores init containers' unknown extended resources too"),
    # In 1.32 only with SidecarContainers on (as it is by default); from 1.33 with no gate at all.
    "SidecarOOMScoreCap": Change("1.32", "#128029", "a sidecar's oom_score_adj is capped at its Pod's regular containers'"),
    "CrashLoopBackOffFlatReset": Change("1.32", "#128374", "a crash-loop back-off starts over after 10 min, whatever its cap"),
    # The old overwrite stays behind AllowOverwriteTerminationGracePeriodSeconds (deprecated, off).
    "SoftEvictionGraceMin": Change("1.32", "#122890", "a soft eviction gives min(evictionMaxPodGracePeriod, the Pod's grace)"),
    "SingleProcessOOMKill": Change("1.32", "#126096", "the kubelet config singleProcessOOMKill turns memory.oom.group off"),
    "MergeDefaultEvictionSettings": Change("1.33", "#127577", "the kubelet config mergeDefaultEvictionSettings keeps the unset defaults"),
    "ResourceRequestFromPodRequests": Change("1.34", "#132277", "a Pod's one-resource request counts sidecars and pod-level requests"),
    "SidecarHostPorts": Change("1.34", "#132040", "the NodePorts check counts the host ports of sidecar containers"),
    "FailCgroupV1": Change("1.35", "#134298", "failCgroupV1 defaults to true: the kubelet refuses to start on cgroup v1"),
    "ResizeStaticPods": Change("1.36", "#135856", "the kubelet no longer refuses to resize a static pod in place"),
    "PodSyncAfterReinspection": Change("1.36", "#137363", "a Pod's status read again, as a resize asks, ends in a PodSync at that relist"),
    # In v1.36.4 (#141004, the cherry-pick of #140387); the profile stands for v1.36.5.
    "ResizeStartingContainers": Change("1.36", "#141004", "a container that starts with resized resources resizes its pod cgroup first"),
}
# --8<-- [end:changes]


@lru_cache(maxsize=None)
def _minor(release: str) -> int:
    return int(release.split(".")[1])


def parse_release(text: str) -> str:
    """A Kubernetes version ("1.36", "v1.36.3", "v1.36.3-eks-1") as its release "1.36", within 1.27-1.36.

    Upstream: k8s.io/apimachinery/pkg/util/version ParseGeneric (patch digits and suffixes ignored)
    """
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?", str(text).strip())
    if not match:
        raise ValueError(f'"{text}" is not a Kubernetes version (expected 1.36 or v1.36.3)')
    release = f"{int(match[1])}.{int(match[2])}"
    if release not in RELEASES:
        raise ValueError(f"Kubernetes {release} is outside the releases the course models ({RELEASES[0]} to {RELEASES[-1]})")
    return release


def parse_gates(text: str) -> dict[str, bool]:
    """A --feature-gates value ("A=true,B=false") as a map, every name known to some release the course models.

    Upstream: k8s.io/component-base/featuregate featureGate.Set (its parsing; SetFromMap checks the names)
    """
    values = {}
    for item in filter(None, (s.strip() for s in str(text).split(","))):
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep:
            raise ValueError(f"missing bool value for {name}")
        if value.lower() not in ("true", "false", "1", "0", "t", "f"):
            raise ValueError(f"invalid value of {name}={value}, err: strconv.ParseBool: parsing {value!r}: invalid syntax")
        if name not in VERSIONED_FEATURE_GATES:
            raise ValueError(f"unrecognized feature gate: {name}")
        values[name] = value.lower() in ("true", "1", "t")
    return values


class FeatureGate:
    """Known gates at one emulated release, with the values set on top of that release's defaults.

    Upstream: k8s.io/component-base/featuregate featureGate
    """

    def __init__(self, release: str = REFERENCE_RELEASE, known: Optional[dict[str, tuple[FeatureSpec, ...]]] = None):
        self.known = dict(known if known is not None else VERSIONED_FEATURE_GATES)
        self.release = release
        self.enabled_gates: dict[str, bool] = {}

    def spec(self, name: str) -> Optional[FeatureSpec]:
        """The gate's spec at this release; None before its first one (PreAlpha: off, and not settable)."""
        if name not in self.known:
            raise KeyError(f'feature "{name}" is not registered in FeatureGate')
        held = [s for s in self.known[name] if _minor(s.version) <= _minor(self.release)]
        return held[-1] if held else None

    def enabled(self, name: str) -> bool:
        """The gate's value; an unregistered name is a programming error, as upstream (which panics).

        Upstream: k8s.io/component-base/featuregate featureGate.Enabled
        """
        spec = self.spec(name)
        if name in self.enabled_gates:
            return self.enabled_gates[name]
        return bool(spec and spec.default)

    def changed(self, name: str) -> bool:
        """Whether this release has an ungated change (UNGATED_CHANGES) of the course's topics."""
        return _minor(self.release) >= _minor(UNGATED_CHANGES[name].release)

    def set_from_map(self, values: dict[str, bool]) -> None:
        """Set gates by name, refusing a gate this release does not have and a locked one set against its default.

        Upstream: k8s.io/component-base/featuregate featureGate.SetFromMap
        """
        for name, value in values.items():
            spec = self.spec(name) if name in self.known else None
            if spec is None or spec.removed:
                raise ValueError(f"unrecognized feature gate: {name} (not in Kubernetes {self.release})")
            if spec.lock_to_default and spec.default != bool(value):
                raise ValueError(f"cannot set feature gate {name} to {str(bool(value)).lower()}, feature is locked to "
                                 f"{str(spec.default).lower()} (Kubernetes {self.release})")
            self.enabled_gates[name] = bool(value)

    def set(self, value: str) -> None:
        """Set gates from a --feature-gates string: "A=true,B=false".

        Upstream: k8s.io/component-base/featuregate featureGate.Set
        """
        self.set_from_map(parse_gates(value))

    def use(self, release: str, gates: Optional[dict[str, bool]] = None) -> None:
        """Emulate another release, with only the given gates set on top of its defaults.

        Upstream: k8s.io/component-base/featuregate featureGate.SetEmulationVersion
        """
        self.release, self.enabled_gates = release, {}
        self.set_from_map(gates or {})

    def differences(self, base: str = REFERENCE_RELEASE) -> dict[str, bool]:
        """Every gate whose value here differs from its default in the base release, by name."""
        reference = FeatureGate(base, self.known)
        return {name: self.enabled(name) for name in sorted(self.known) if self.enabled(name) != reference.enabled(name)}


DEFAULT_FEATURE_GATE = FeatureGate()  # utilfeature.DefaultFeatureGate: what the mini kubelet consults


@contextmanager
def release_profile(release: str = REFERENCE_RELEASE, gates: Optional[dict[str, bool]] = None) -> Iterator[FeatureGate]:
    """Run a with-block under a release's defaults (and gates set on top), then put back the profile before it."""
    before = DEFAULT_FEATURE_GATE.release, dict(DEFAULT_FEATURE_GATE.enabled_gates)
    try:
        DEFAULT_FEATURE_GATE.use(parse_release(release), gates)  # a refused gate leaves the profile as it was
        yield DEFAULT_FEATURE_GATE
    finally:
        DEFAULT_FEATURE_GATE.release, DEFAULT_FEATURE_GATE.enabled_gates = before


@contextmanager
def set_feature_gate_during_test(gate: FeatureGate, name: str, value: bool) -> Iterator[None]:
    """Set one gate for the duration of a with-block, then put back what it was (any release's gate).

    Upstream: k8s.io/component-base/featuregate/testing SetFeatureGateDuringTest
    """
    if name not in gate.known:
        raise ValueError(f"unrecognized feature gate: {name}")
    had, before = name in gate.enabled_gates, gate.enabled_gates.get(name)
    gate.enabled_gates[name] = bool(value)
    try:
        yield
    finally:
        if had:
            gate.enabled_gates[name] = before
        else:
            gate.enabled_gates.pop(name, None)
