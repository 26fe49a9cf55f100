"""Eviction signals, thresholds, and the quantity a threshold stands for.

Upstream: pkg/kubelet/eviction/api/types.go, pkg/kubelet/eviction/defaults_linux.go, and the parts of
k8s.io/apimachinery/pkg/api/resource/quantity.go (ParseQuantity, Quantity.String) whose exact text
reaches an error or an eviction message.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import ROUND_CEILING, Decimal, localcontext
from typing import Optional, Union

from .. import features

# --8<-- [start:signals]
SIGNAL_MEMORY_AVAILABLE = "memory.available"
SIGNAL_NODEFS_AVAILABLE = "nodefs.available"
SIGNAL_NODEFS_INODES_FREE = "nodefs.inodesFree"
SIGNAL_IMAGEFS_AVAILABLE = "imagefs.available"
SIGNAL_IMAGEFS_INODES_FREE = "imagefs.inodesFree"
SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE = "allocatableMemory.available"
SIGNAL_PID_AVAILABLE = "pid.available"
# From 1.29 (KEP-4191): the filesystem holding the containers' writable layers. The summary reports it as
# node.runtime.containerFs; unless the runtime splits it from imagefs, it is imagefs (or nodefs) again.
SIGNAL_CONTAINERFS_AVAILABLE = "containerfs.available"
SIGNAL_CONTAINERFS_INODES_FREE = "containerfs.inodesFree"

OP_LESS_THAN = "LessThan"  # the only operator: every signal is "available", evicting when it falls below
# --8<-- [end:signals]

# The contract's short names for the same constants.
MEMORY_AVAILABLE = SIGNAL_MEMORY_AVAILABLE
ALLOCATABLE_MEMORY_AVAILABLE = SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE
NODEFS_AVAILABLE = SIGNAL_NODEFS_AVAILABLE
NODEFS_INODES_FREE = SIGNAL_NODEFS_INODES_FREE
IMAGEFS_AVAILABLE = SIGNAL_IMAGEFS_AVAILABLE
IMAGEFS_INODES_FREE = SIGNAL_IMAGEFS_INODES_FREE
PID_AVAILABLE = SIGNAL_PID_AVAILABLE

CONTAINERFS_SIGNALS = (SIGNAL_CONTAINERFS_AVAILABLE, SIGNAL_CONTAINERFS_INODES_FREE)
OP_FOR_SIGNAL = {signal: OP_LESS_THAN for signal in (
    SIGNAL_MEMORY_AVAILABLE, SIGNAL_NODEFS_AVAILABLE, SIGNAL_NODEFS_INODES_FREE, SIGNAL_IMAGEFS_AVAILABLE,
    SIGNAL_IMAGEFS_INODES_FREE, SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, SIGNAL_PID_AVAILABLE, *CONTAINERFS_SIGNALS)}


def containerfs_signals_known() -> bool:
    """Whether this release's eviction code has the containerfs signals: from 1.29, whatever KubeletSeparateDiskGC says.

    Upstream: pkg/kubelet/eviction/api/types.go (the signals came in 1.29 with the KubeletSeparateDiskGC gate,
    #120616; the gate only decides whether a split filesystem is allowed)
    """
    return features.DEFAULT_FEATURE_GATE.spec("KubeletSeparateDiskGC") is not None


# --8<-- [start:valid_signal]
def valid_signal(signal: str) -> bool:
    """Whether the eviction manager knows the signal (containerfs.* from 1.29).

    Upstream: pkg/kubelet/eviction/helpers.go validSignal
    """
    if signal in CONTAINERFS_SIGNALS and not containerfs_signals_known():
        return False  # v1.27: "unsupported eviction signal"
    return signal in OP_FOR_SIGNAL  # the same keys as signalToResource
# --8<-- [end:valid_signal]


# --8<-- [start:default_eviction_hard]
DEFAULT_EVICTION_HARD = {  # Linux, v1.27; on other systems nodefs.inodesFree is absent (defaults_others.go)
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
}


def default_eviction_hard() -> dict[str, str]:
    """The Linux evictionHard default of the release: from 1.30 it has imagefs.inodesFree<5% too (#121834).

    Upstream: pkg/kubelet/eviction/defaults_linux.go DefaultEvictionHard
    """
    defaults = dict(DEFAULT_EVICTION_HARD)
    if features.DEFAULT_FEATURE_GATE.changed("ImagefsInodesFreeDefault"):
        defaults["imagefs.inodesFree"] = "5%"
    return defaults


def merge_default_eviction_hard(eviction_hard: Optional[dict[str, str]], merge_defaults: bool = False) -> dict[str, str]:
    """evictionHard as the kubelet reads its config file: nil means the defaults; from 1.33, with
    mergeDefaultEvictionSettings, every default signal the map leaves out is added (the map's values win).

    Upstream: cmd/kubelet/app/server.go loadConfigFile (the MergeDefaultEvictionSettings branch, #127577)
    """
    if eviction_hard is None:
        return default_eviction_hard()
    merged = dict(eviction_hard)
    if merge_defaults and features.DEFAULT_FEATURE_GATE.changed("MergeDefaultEvictionSettings"):
        for signal, value in default_eviction_hard().items():
            merged.setdefault(signal, value)
    return merged
# --8<-- [end:default_eviction_hard]

# Quantity formats (resource.Format): how Quantity.String() prints a value.
BINARY_SI, DECIMAL_SI, DECIMAL_EXPONENT = "BinarySI", "DecimalSI", "DecimalExponent"

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = f"quantities must match the regular expression '{_SPLIT_RE}'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DIGITS = "0123456789"


# --8<-- [start:float32]
def float32(number: float) -> float:
    """The number rounded to the nearest float32, as a Python float.

    Upstream: the Go conversion float32(x), used for ThresholdValue.Percentage
    """
    try:
        return struct.unpack("f", struct.pack("f", number))[0]
    except OverflowError:  # beyond the float32 range: Go gives an infinity
        return math.copysign(math.inf, number)
# --8<-- [end:float32]


def _parse_quantity_string(text: str) -> tuple[bool, str, str, str, str]:
    """Split a quantity into sign, numeric text, integer digits, fraction digits and suffix (parseQuantityString)."""
    positive, pos, end = True, 0, len(text)
    if text[:1] in ("-", "+"):
        positive, pos = text[0] != "-", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num, denom = text[start:pos] or "0", ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    value, suffix_start = text[:pos], pos
    while pos < end and text[pos] in "eEinumkKMGTP":
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise ValueError(ERR_FORMAT_WRONG)  # a character that fits neither the number nor a suffix
    return positive, value, num, denom, text[suffix_start:]


def _interpret_suffix(suffix: str) -> tuple[int, int, str]:
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        return 10, int(suffix[1:]), DECIMAL_EXPONENT
    raise ValueError(ERR_SUFFIX)


# --8<-- [start:parse_quantity]
def parse_quantity(text: str) -> tuple[Decimal, str]:
    """A quantity's exact value and format, with Go's error texts (ValueError) for bad input.

    Upstream: k8s.io/apimachinery/pkg/api/resource/quantity.go ParseQuantity
    """
    if not text:
        raise ValueError(ERR_FORMAT_WRONG)
    if text == "0":
        return Decimal(0), DECIMAL_SI
    positive, value, num, denom, suffix = _parse_quantity_string(text)
    base, exponent, fmt = _interpret_suffix(suffix)
    with localcontext() as ctx:
        ctx.prec = 1000
        try:
            amount = Decimal(f"{num}.{denom or 0}") * (Decimal(10) ** exponent if base == 10 else Decimal(2) ** exponent)
        except ArithmeticError:  # beyond what a Python Decimal holds (Go's inf.Dec has no such bound)
            raise ValueError(ERR_NUMERIC) from None
        if amount.as_tuple().exponent < -9:
            amount = amount.quantize(Decimal("1e-9"), rounding=ROUND_CEILING)  # nano precision, rounded away from 0
        if fmt == BINARY_SI and 0 < amount < 1:
            fmt = DECIMAL_SI
        if amount == amount.to_integral_value():
            amount = Decimal(int(amount))
        return (amount if positive else -amount), fmt
# --8<-- [end:parse_quantity]


def _cached_string(text: str) -> Optional[str]:
    """The input text when ParseQuantity's int64 fast path caches it (String() then returns it), else None."""
    positive, value, num, denom, suffix = _parse_quantity_string(text)
    base, exponent, fmt = _interpret_suffix(suffix)
    shifted = num + denom
    if fmt == BINARY_SI:
        if exponent < 0 or denom or 15 - len(num) - int(float32(exponent) * 3 / 10) - 1 < 0:
            return None
        if int(shifted) << exponent >= 2**63:
            return None
        cached = exponent % 10 == 0 and int(shifted) & 7 != 0
    else:
        scale = exponent - len(denom)
        if 18 - len(shifted) < 0 or scale < -9:
            return None
        cached = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
    return text if cached else None


# --8<-- [start:format_quantity]
def format_quantity(amount: Union[Decimal, int], fmt: str = BINARY_SI) -> str:
    """The canonical text of a quantity in a format: 1536Mi, 1500M, 500m, 1073741840.

    Upstream: k8s.io/apimachinery/pkg/api/resource/quantity.go Quantity.CanonicalizeBytes
    """
    amount = Decimal(amount)
    if amount == 0:
        return "0"
    if fmt == BINARY_SI and (-1024 < amount < 1024 or amount != amount.to_integral_value()):
        fmt = DECIMAL_SI  # small or fractional values are never written with a binary suffix
    if fmt == BINARY_SI:
        number, exponent = int(amount), 0
        while abs(number) >= 1024 and number % 1024 == 0:
            number, exponent = number // 1024, exponent + 10
        suffix = {0: ""} | {e: s for s, e in _BINARY_SUFFIXES.items()}
        return f"{number}{suffix.get(exponent, '')}"
    with localcontext() as ctx:
        ctx.prec = 1000
        sign, digits, exponent = amount.normalize().as_tuple()
    number = int("".join(map(str, digits)))
    while exponent % 3:
        number, exponent = number * 10, exponent - 1
    number = -number if sign else number
    if fmt == DECIMAL_EXPONENT:
        return f"{number}e{exponent}" if exponent else str(number)
    suffix = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
    return f"{number}{suffix.get(exponent, '')}"
# --8<-- [end:format_quantity]


# --8<-- [start:quantity_string]
def quantity_string(text: str) -> str:
    """What Go's Quantity.String() prints for a quantity parsed from this text (ValueError if invalid).

    Upstream: k8s.io/apimachinery/pkg/api/resource/quantity.go Quantity.String
    """
    amount, fmt = parse_quantity(text)
    if text == "0":
        return "0"
    return _cached_string(text) or format_quantity(amount, fmt)
# --8<-- [end:quantity_string]


# --8<-- [start:threshold_value]
@dataclass(frozen=True)
class ThresholdValue:
    """A quantity, or else a float32 fraction of capacity (0.1 = 10%); the quantity wins if both are set.

    quantity may be given as text ("100Mi"): it is parsed, and its printed form kept for messages.
    Upstream: pkg/kubelet/eviction/api/types.go ThresholdValue
    """

    quantity: Optional[Decimal] = None
    percentage: Optional[float] = None
    quantity_text: Optional[str] = field(default=None, compare=False, repr=False)  # how Go prints the quantity

    def __post_init__(self):
        if isinstance(self.quantity, str):
            object.__setattr__(self, "quantity_text", quantity_string(self.quantity))
            object.__setattr__(self, "quantity", parse_quantity(self.quantity)[0])
        elif self.quantity is not None and not isinstance(self.quantity, Decimal):
            object.__setattr__(self, "quantity", Decimal(self.quantity))
        if self.percentage is not None:
            object.__setattr__(self, "percentage", float32(self.percentage))


@dataclass(frozen=True)
class Threshold:
    """A signal, its operator and value, the grace period (0 = hard) and an optional minimum reclaim.

    Frozen so it can key a dict, as upstream keys its observed-at map by the struct (value equality here;
    Go also compares the Quantity pointers, which only ever differ between distinct thresholds).
    Upstream: pkg/kubelet/eviction/api/types.go Threshold
    """

    signal: str
    operator: str = OP_LESS_THAN
    value: ThresholdValue = field(default_factory=ThresholdValue)
    grace_period: timedelta = timedelta(0)
    min_reclaim: Optional[ThresholdValue] = None
# --8<-- [end:threshold_value]


# --8<-- [start:get_threshold_quantity]
def get_threshold_quantity(value: ThresholdValue, capacity: int) -> Union[int, Decimal]:
    """The threshold in units of the signal: the quantity itself, or the float32 percentage of capacity, truncated.

    Upstream: pkg/kubelet/eviction/api/types.go GetThresholdQuantity
    """
    if value.quantity is not None:
        return value.quantity
    return int(float(capacity) * float(value.percentage or 0.0))  # float32 widened to float64; int() truncates
# --8<-- [end:get_threshold_quantity]


# --8<-- [start:threshold_quantity_string]
def threshold_quantity_string(value: ThresholdValue, capacity: int) -> str:
    """How the threshold quantity prints in a message: the parsed quantity's own form, else BinarySI.

    Upstream: pkg/kubelet/eviction/helpers.go getThresholdMetInfo (the quantity it returns, printed with %v)
    """
    if value.quantity is not None and value.quantity_text is not None:
        return value.quantity_text
    return format_quantity(get_threshold_quantity(value, capacity), BINARY_SI)
# --8<-- [end:threshold_quantity_string]
