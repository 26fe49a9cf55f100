"""Reading a scenario's fields: each typed value checked, each error one line naming the file and the field.

Upstream: none (a course tool); the map flags are read as pkg/kubelet/eviction/helpers.go
ParseThresholdConfig and the kubelet's flag parsing read them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterator, NoReturn, Optional, Union

from .. import api, features
from ..eviction import thresholds as th
from .series import PAGE_SIZE, Series, format_duration, parse_duration

COUNT_KEYS = ("inodes", "imagefsInodes", "pids")  # series of counts; every other series is bytes
MAX_TIME = 10 * 365 * 24 * 3600  # seconds: any time in a scenario is within ten years of its start


class Reader:
    """Reads one scenario document, raising api.ManifestError naming the file and the field path.

    Upstream: none (a course tool)
    """

    def __init__(self, source: str, base: Path):
        self.source, self.base = source, base
        self.notes: set[tuple[str, str]] = set()

    def note(self, path: str, text: Optional[str]) -> None:
        """Say something about the field at path on stderr, once (nothing when text is None)."""
        if text and (path, text) not in self.notes:
            self.notes.add((path, text))
            print(f"note: {self.source}: {path}: {text}", file=sys.stderr)

    def fail(self, path: str, problem: str) -> NoReturn:
        """Stop reading: the field at path is wrong."""
        raise api.ManifestError(self.source, path, problem)

    def mapping(self, raw: Any, path: str, allowed: tuple[str, ...] = ()) -> dict:
        """raw as a mapping whose keys are all in allowed (when given)."""
        if not isinstance(raw, dict):
            self.fail(path, f"expected a mapping, got {api.type_name(raw)}")
        for key in raw:
            if allowed and key not in allowed:
                self.fail(f"{path}.{key}" if path else str(key), f"unknown field (expected one of: {', '.join(allowed)})")
        return raw

    def expect_lists(self, raw: Any, keys: tuple[str, ...], allowed: dict[str, tuple[str, ...]]
                     ) -> Iterator[tuple[str, Iterator[tuple[str, dict]]]]:
        """An expect: block's lists in `keys` order, each as its items' (field path, mapping), checked as they are read."""
        expect = self.mapping(raw, "expect", keys)
        for key in keys:
            if key in expect:
                yield key, ((f"expect.{key}[{i}]", dict(self.mapping(item, f"expect.{key}[{i}]", allowed[key])))
                            for i, item in enumerate(self.sequence(expect[key], f"expect.{key}")))

    def sequence(self, raw: Any, path: str) -> list:
        """raw as a list (nothing is an empty list)."""
        if raw is None:
            return []
        if not isinstance(raw, list):
            self.fail(path, f"expected a list, got {api.type_name(raw)}")
        return raw

    def duration(self, raw: Any, path: str, *, negative: bool = False) -> int:
        """raw as a Go duration in whole seconds."""
        try:
            seconds = parse_duration(raw)
        except ValueError as err:
            self.fail(path, str(err))
        if seconds < 0 and not negative:
            self.fail(path, f"must not be negative, got {raw}")
        if abs(seconds) > MAX_TIME:
            self.fail(path, f"{raw} is more than ten years ({format_duration(MAX_TIME)}) from the start")
        return seconds

    def amount(self, raw: Any, path: str) -> int:
        """raw as a Kubernetes quantity, rounded up to a whole number (Quantity.Value)."""
        value = api.value(api.parse_quantity(raw, source=self.source, path=path))
        if value < 0:
            self.fail(path, f'must not be negative, got "{raw}"')
        return value

    def series(self, raw: Any, path: str) -> Series:
        """raw as a Series: a constant, {time: value} steps, or {ramp: {time: value}}."""
        unit = 1 if path.rsplit(".", 1)[-1] in COUNT_KEYS else PAGE_SIZE
        if not isinstance(raw, dict):
            return Series([(0, self.amount(raw, path))])
        ramp = set(raw) == {"ramp"}
        points_raw = self.mapping(raw["ramp"], f"{path}.ramp") if ramp else raw
        if not points_raw:
            self.fail(path, "expected at least one time: value")
        points: dict[int, int] = {}
        for key, value in points_raw.items():
            where = f"{path}.ramp.{key}" if ramp else f"{path}.{key}"
            when = self.duration(key, where)
            if when in points:
                self.fail(where, f"the time {format_duration(when)} is given twice")
            points[when] = self.amount(value, where)
        return Series(sorted(points.items()), ramp, unit)

    def flag_map(self, raw: Any, path: str, separator: str) -> dict[str, str]:
        """A map flag: "a<1,b<2" (separator "<") or "a=1,b=2" (separator "="), or a YAML mapping."""
        if isinstance(raw, dict):
            return {str(k): str(v) for k, v in raw.items()}
        if raw is None:
            return {}
        if not isinstance(raw, str):
            self.fail(path, f"expected a flag string or a mapping, got {api.type_name(raw)}")
        try:
            return th.parse_eviction_flag(raw) if separator == "<" else th.parse_map_string_string(raw)
        except ValueError as err:
            self.fail(path, str(err))


def read_scenario(source: Union[str, Path]) -> tuple[object, str, Path, str]:
    """The decoded document of a scenario file (or standard input), with its display name, folder and name."""
    stdin = str(source) == api.STDIN
    where = api.source_name(source)
    base, name = (Path("."), "stdin") if stdin else (Path(source).parent, Path(source).stem)
    docs = api.parse_yaml_documents(api.read_text(source), where)
    if len(docs) > 1:
        raise api.ManifestError(where, "", f"a scenario is one YAML document, found {len(docs)}")
    return (docs[0] if docs else None), where, base, name


def scenario_profile(doc: Any, where: str) -> Optional[tuple[str, dict[str, bool]]]:
    """The release and gates a scenario names (kubernetesVersion:, featureGates:), taken out of the document.

    None when it names neither. `mini-kubelet run` takes them out itself (a flag may override them); this is
    for a replay started from a file in Python, which then answers for the release the scenario names.
    """
    if not isinstance(doc, dict) or not ({"kubernetesVersion", "featureGates"} & set(doc)):
        return None
    version, gates = doc.pop("kubernetesVersion", None), doc.pop("featureGates", None) or {}
    if version is not None and not isinstance(version, str):
        raise api.ManifestError(where, "kubernetesVersion", f'expected a string such as "1.36", got {version!r} '
                                "(write it in quotes: YAML reads 1.30 as the number 1.3)")
    field = "kubernetesVersion"
    try:
        release = features.parse_release(str(version)) if version is not None else features.REFERENCE_RELEASE
        field = "featureGates"
        if not isinstance(gates, dict) or not all(isinstance(v, bool) for v in gates.values()):
            raise ValueError("expected a mapping of gate names to true or false")
        features.FeatureGate(release).set_from_map(gates)  # a gate this release lacks, or a locked one, is refused
    except ValueError as err:
        raise api.ManifestError(where, field, str(err)) from None
    return release, gates
