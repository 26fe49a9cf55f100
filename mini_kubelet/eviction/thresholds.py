"""From the kubelet's eviction flags (or KubeletConfiguration maps) to a list of Thresholds.

Upstream: pkg/kubelet/eviction/helpers.go (ParseThresholdConfig and its parse helpers; mergeThresholds and
compareThresholdValue, which compare thresholds),
k8s.io/component-base/cli/flag (the map flags), strconv.ParseFloat and time.ParseDuration (whose error
texts pass through unchanged). Errors are ValueError with upstream's text, word for word.

Go iterates maps in random order, so upstream's result order varies; here it follows the maps' order.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import struct
from datetime import timedelta
from decimal import Decimal
from typing import Iterable, Optional

from . import api
from .api import Threshold, ThresholdValue, float32, valid_signal

NODE_ALLOCATABLE_ENFORCEMENT_KEY = "pods"  # pkg/kubelet/types NodeAllocatableEnforcementKey
UNSUPPORTED_EVICTION_SIGNAL = "unsupported eviction signal {}"

_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_SPECIAL = re.compile(r"[+-]?(inf|infinity)|nan", re.IGNORECASE)
_FLOAT32_MAX = Decimal(struct.unpack("f", struct.pack("I", 0x7F7FFFFF))[0])
_FLOAT32_OVERFLOW = _FLOAT32_MAX + Decimal(2) ** 103  # half an ulp above the largest float32 rounds to infinity
_DURATION_UNITS = {"ns": 1, "us": 1000, "\u00b5s": 1000, "\u03bcs": 1000, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
                   "h": 3600 * 10**9}


# --8<-- [start:parse_eviction_flag]
def parse_eviction_flag(text: str) -> dict[str, str]:
    """The map of an --eviction-hard/--eviction-soft flag: "memory.available<100Mi,nodefs.available<10%".

    Upstream: k8s.io/component-base/cli/flag/langle_separated_map_string_string.go LangleSeparatedMapStringString.Set
    """
    return _pairs(text, "<")
# --8<-- [end:parse_eviction_flag]


# --8<-- [start:parse_map_string_string]
def parse_map_string_string(text: str) -> dict[str, str]:
    """The map of --eviction-soft-grace-period/--eviction-minimum-reclaim: "memory.available=1m30s,...".

    Upstream: k8s.io/component-base/cli/flag/map_string_string.go MapStringString.Set
    """
    return _pairs(text, "=")
# --8<-- [end:parse_map_string_string]


# --8<-- [start:pairs]
def _pairs(text: str, separator: str) -> dict[str, str]:
    """Comma-separated KEY<separator>VALUE pairs; a repeated key: the last one wins."""
    result: dict[str, str] = {}
    for item in text.split(","):
        if not item:
            continue
        if separator not in item:
            raise ValueError(f"malformed pair, expect string{separator}string")
        key, value = item.split(separator, 1)
        result[key.strip()] = value.strip()
    return result
# --8<-- [end:pairs]


# --8<-- [start:parse_threshold_config]
def parse_threshold_config(allocatable_config: Iterable[str], eviction_hard: dict[str, str],
                           eviction_soft: dict[str, str], eviction_soft_grace_period: dict[str, str],
                           eviction_minimum_reclaim: dict[str, str]) -> list[Threshold]:
    """Hard thresholds, then soft ones with their grace periods; min-reclaims attached; allocatable copies last.

    Upstream: pkg/kubelet/eviction/helpers.go ParseThresholdConfig
    """
    results = _parse_threshold_statements(eviction_hard)
    soft = _parse_threshold_statements(eviction_soft)
    grace_periods = _parse_grace_periods(eviction_soft_grace_period)
    min_reclaims = _parse_minimum_reclaims(eviction_minimum_reclaim)
    for threshold in soft:
        if threshold.signal not in grace_periods:
            raise ValueError(f"grace period must be specified for the soft eviction threshold {threshold.signal}")
        results.append(dataclasses.replace(threshold, grace_period=grace_periods[threshold.signal]))
    results = [dataclasses.replace(t, min_reclaim=min_reclaims[t.signal]) if t.signal in min_reclaims else t
               for t in results]
    if NODE_ALLOCATABLE_ENFORCEMENT_KEY in allocatable_config:
        results = add_allocatable_thresholds(results)
    return results
# --8<-- [end:parse_threshold_config]


# --8<-- [start:add_allocatable_thresholds]
def add_allocatable_thresholds(thresholds: list[Threshold]) -> list[Threshold]:
    """The thresholds, then an allocatableMemory.available copy of each hard memory.available one.

    Upstream: pkg/kubelet/eviction/helpers.go addAllocatableThresholds
    """
    copies = [Threshold(api.SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, t.operator, t.value, timedelta(0), t.min_reclaim)
              for t in thresholds
              if t.signal == api.SIGNAL_MEMORY_AVAILABLE and t.grace_period == timedelta(0)]
    return list(thresholds) + copies
# --8<-- [end:add_allocatable_thresholds]


# --8<-- [start:update_container_fs_thresholds]
def update_container_fs_thresholds(thresholds: list[Threshold], image_fs: bool,
                                   split_container_fs: bool) -> tuple[list[Threshold], Optional[str]]:
    """The thresholds with containerfs ones copied from nodefs (one disk, or a split containerfs) or imagefs.

    A containerfs threshold the user set is replaced in place (the error says so); otherwise each copy is
    appended, hard and soft for bytes and inodes. Quirks kept: a copy of a threshold that does not exist is
    an empty one (no operator, value 0: never met), and without a soft source the "soft" copy has no grace
    period. Only the last replaced signal is named in the error.
    Upstream: pkg/kubelet/eviction/helpers.go UpdateContainerFsThresholds (from 1.29)
    """
    thresholds, found, replace, error = list(thresholds), {}, {}, None
    for index, threshold in enumerate(thresholds):
        kind = "hard" if threshold.grace_period == timedelta(0) else "soft"
        found[(threshold.signal, kind)] = threshold
        if threshold.signal in api.CONTAINERFS_SIGNALS:
            error = f"found {threshold.signal} for {kind} eviction. ignoring"
            replace[(threshold.signal, kind)] = index
    if split_container_fs and not image_fs:
        return thresholds, error  # neither layout upstream handles: nothing is copied
    source = "nodefs" if image_fs == split_container_fs else "imagefs"  # the filesystem containerfs stands for
    for target, suffix in ((api.SIGNAL_CONTAINERFS_AVAILABLE, "available"), (api.SIGNAL_CONTAINERFS_INODES_FREE, "inodesFree")):
        for kind in ("hard", "soft"):
            of = found.get((f"{source}.{suffix}", kind), Threshold("", operator=""))
            copy = Threshold(target, of.operator, of.value, of.grace_period, of.min_reclaim)
            if (target, kind) in replace:
                thresholds[replace[(target, kind)]] = copy
            else:
                thresholds.append(copy)
    return thresholds, error
# --8<-- [end:update_container_fs_thresholds]


def _parse_threshold_statements(statements: dict[str, str]) -> list[Threshold]:
    results = []
    for signal, value in (statements or {}).items():
        threshold = _parse_threshold_statement(signal, value)
        if threshold is not None:
            results.append(threshold)
    return results


# --8<-- [start:parse_threshold_statement]
def _parse_threshold_statement(signal: str, value: str) -> Optional[Threshold]:
    """One "signal<value" statement; None when the value is exactly "0%" or "100%" (the threshold is off)."""
    if not valid_signal(signal):
        raise ValueError(UNSUPPORTED_EVICTION_SIGNAL.format(signal))
    operator = api.OP_FOR_SIGNAL[signal]
    if value.endswith("%"):
        if value in ("0%", "100%"):
            return None
        percentage = parse_percentage(value)
        if percentage < 0:
            raise ValueError(f"eviction percentage threshold {signal} must be >= 0%: {value}")
        if percentage > 1:
            raise ValueError(f"eviction percentage threshold {signal} must be <= 100%: {value}")
        return Threshold(signal, operator, ThresholdValue(percentage=percentage))
    quantity = ThresholdValue(quantity=value)  # Go's ParseQuantity errors pass through
    if quantity.quantity <= 0:
        raise ValueError(f"eviction threshold {signal} must be positive: {quantity.quantity_text}")
    return Threshold(signal, operator, quantity)
# --8<-- [end:parse_threshold_statement]


# --8<-- [start:parse_percentage]
def parse_percentage(text: str) -> float:
    """"10%" -> 0.1 as float32: the number is parsed as a float32, then divided by 100 in float32.

    Upstream: pkg/kubelet/eviction/helpers.go parsePercentage
    """
    return float32(parse_float32(text.rstrip("%")) / 100)
# --8<-- [end:parse_percentage]


def _parse_grace_periods(statements: dict[str, str]) -> dict[str, timedelta]:
    results = {}
    for signal, value in (statements or {}).items():
        if not valid_signal(signal):
            raise ValueError(UNSUPPORTED_EVICTION_SIGNAL.format(signal))
        nanoseconds = parse_duration(value)
        if nanoseconds < 0:
            raise ValueError(f"invalid eviction grace period specified: {value}, must be a positive value")
        results[signal] = duration_to_timedelta(nanoseconds)
    return results


def _parse_minimum_reclaims(statements: dict[str, str]) -> dict[str, ThresholdValue]:
    results = {}
    for signal, value in (statements or {}).items():
        if not valid_signal(signal):
            raise ValueError(UNSUPPORTED_EVICTION_SIGNAL.format(signal))
        if value.endswith("%"):
            percentage = parse_percentage(value)
            if percentage <= 0:  # so "0%" is an error here, unlike in a threshold
                raise ValueError(f"eviction percentage minimum reclaim {signal} must be positive: {value}")
            results[signal] = ThresholdValue(percentage=percentage)
            continue
        quantity = ThresholdValue(quantity=value)
        if quantity.quantity < 0:  # "0" is allowed
            raise ValueError(f"negative eviction minimum reclaim specified for {signal}")
        results[signal] = quantity
    return results


# --8<-- [start:parse_float32]
def parse_float32(text: str) -> float:
    """A decimal string rounded once to the nearest float32, with strconv's error texts.

    Upstream: strconv.ParseFloat(s, 32)
    """
    if _SPECIAL.fullmatch(text):
        return float(text.lower().replace("infinity", "inf"))
    if not _FLOAT.fullmatch(text):
        raise ValueError(f"strconv.ParseFloat: parsing {_quote(text)}: invalid syntax")
    exact = Decimal(text)
    magnitude = abs(exact)
    if magnitude >= _FLOAT32_OVERFLOW:
        raise ValueError(f"strconv.ParseFloat: parsing {_quote(text)}: value out of range")
    bits = struct.unpack("I", struct.pack("f", float32(float(magnitude))))[0]  # float() then float32 may round twice
    candidates = [b for b in (bits - 1, bits, bits + 1) if 0 <= b < 0x7F800000]
    best = min(candidates, key=lambda b: (abs(Decimal(struct.unpack("f", struct.pack("I", b))[0]) - magnitude), b & 1))
    value = struct.unpack("f", struct.pack("I", best))[0]
    return -value if exact.is_signed() else value
# --8<-- [end:parse_float32]


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


# --8<-- [start:parse_duration]
def parse_duration(text: str) -> int:
    """A Go duration ("1m30s", "0", "1.5h") in nanoseconds, with time.ParseDuration's error texts.

    Upstream: time.ParseDuration
    """
    original, negative, total = text, False, 0
    if text[:1] in ("-", "+"):
        negative, text = text[0] == "-", text[1:]
    if text == "0":
        return 0
    if text == "":
        raise ValueError(f"time: invalid duration {_quote(original)}")
    while text:
        match = re.match(r"([0-9]*)(\.([0-9]*))?", text)
        whole, fraction = match.group(1), match.group(3) or ""
        if not whole and not fraction:
            raise ValueError(f"time: invalid duration {_quote(original)}")
        text = text[match.end():]
        unit = re.match(r"[^0-9.]*", text).group(0)
        if not unit:
            raise ValueError(f"time: missing unit in duration {_quote(original)}")
        text = text[len(unit):]
        if unit not in _DURATION_UNITS:
            raise ValueError(f"time: unknown unit {_quote(unit)} in duration {_quote(original)}")
        scale = _DURATION_UNITS[unit]
        value = int(whole or 0) * scale
        if fraction:
            value += int(float(int(fraction[:19])) * (float(scale) / 10 ** len(fraction[:19])))
        total += value
        if int(whole or 0) > 2**63 // scale or total > 2**63:
            raise ValueError(f"time: invalid duration {_quote(original)}")
    if not negative and total > 2**63 - 1:
        raise ValueError(f"time: invalid duration {_quote(original)}")
    return -total if negative else total
# --8<-- [end:parse_duration]


# --8<-- [start:duration_to_timedelta]
def duration_to_timedelta(nanoseconds: int) -> timedelta:
    """Nanoseconds as a timedelta, rounded up to the microsecond so a 1ns grace period stays soft (non-zero).

    Upstream: time.Duration (nanoseconds; timedelta only holds microseconds)
    """
    return timedelta(microseconds=math.ceil(nanoseconds / 1000))
# --8<-- [end:duration_to_timedelta]


# --8<-- [start:merge_thresholds]
def merge_thresholds(inputs_a: Iterable[Threshold], inputs_b: Iterable[Threshold]) -> list[Threshold]:
    """The first list, then each threshold of the second that the result does not already hold.

    Upstream: pkg/kubelet/eviction/helpers.go mergeThresholds
    """
    results = list(inputs_a)
    for threshold in inputs_b:
        if not has_threshold(results, threshold):
            results.append(threshold)
    return results


def has_threshold(inputs: Iterable[Threshold], item: Threshold) -> bool:
    """Whether a threshold with the same grace period, operator, signal and value is listed (min-reclaim ignored).

    Upstream: pkg/kubelet/eviction/helpers.go hasThreshold
    """
    return any(t.grace_period == item.grace_period and t.operator == item.operator and t.signal == item.signal
               and compare_threshold_value(t.value, item.value) for t in inputs)
# --8<-- [end:merge_thresholds]


# --8<-- [start:compare_threshold_value]
def compare_threshold_value(a: ThresholdValue, b: ThresholdValue) -> bool:
    """Equal quantities if both have one; false if only one has; else equal float32 percentages.

    Upstream: pkg/kubelet/eviction/helpers.go compareThresholdValue
    """
    if a.quantity is not None:
        return b.quantity is not None and a.quantity == b.quantity
    if b.quantity is not None:
        return False
    return (a.percentage or 0.0) == (b.percentage or 0.0)
# --8<-- [end:compare_threshold_value]
