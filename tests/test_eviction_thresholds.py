"""Chapter 4: parsing the eviction flags into thresholds, float32 percentages and the quantity they stand for.

Tables ported from pkg/kubelet/eviction/helpers_test.go (copy about v1.29; the parsing is unchanged from
v1.27.7, whose error texts are checked here word for word against helpers.go).
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from decimal import Decimal

import numpy
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_kubelet.eviction import api, thresholds
from mini_kubelet.eviction.api import Threshold, ThresholdValue

pytestmark = pytest.mark.ch4

MEM, ALLOC = api.SIGNAL_MEMORY_AVAILABLE, api.SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE
NODEFS, IMAGEFS = api.SIGNAL_NODEFS_AVAILABLE, api.SIGNAL_IMAGEFS_AVAILABLE
NODEFS_INODES, IMAGEFS_INODES = api.SIGNAL_NODEFS_INODES_FREE, api.SIGNAL_IMAGEFS_INODES_FREE
GRACE = timedelta(seconds=30)


def q(text):
    return ThresholdValue(quantity=text)


def p(fraction):
    return ThresholdValue(percentage=fraction)


def t(signal, value, grace=timedelta(0), min_reclaim=None):
    return Threshold(signal, api.OP_LESS_THAN, value, grace, min_reclaim)


# helpers_test.go#TestParseThresholdConfig: the cases that succeed (compared regardless of order, as upstream does)
@pytest.mark.parametrize("name, allocatable, hard, soft, grace, min_reclaim, expected", [
    ("no values", [], {}, {}, {}, {}, []),
    ("all memory eviction values", ["pods"], {MEM: "150Mi"}, {MEM: "300Mi"}, {MEM: "30s"}, {MEM: "0"},
     [t(ALLOC, q("150Mi"), min_reclaim=q("0")), t(MEM, q("150Mi"), min_reclaim=q("0")),
      t(MEM, q("300Mi"), GRACE, q("0"))]),
    ("all memory eviction values in percentages", [], {MEM: "10%"}, {MEM: "30%"}, {MEM: "30s"}, {MEM: "5%"},
     [t(MEM, p(0.1), min_reclaim=p(0.05)), t(MEM, p(0.3), GRACE, p(0.05))]),
    ("disk eviction values", [], {IMAGEFS: "150Mi", NODEFS: "100Mi"}, {IMAGEFS: "300Mi", NODEFS: "200Mi"},
     {IMAGEFS: "30s", NODEFS: "30s"}, {IMAGEFS: "2Gi", NODEFS: "1Gi"},
     [t(IMAGEFS, q("150Mi"), min_reclaim=q("2Gi")), t(NODEFS, q("100Mi"), min_reclaim=q("1Gi")),
      t(IMAGEFS, q("300Mi"), GRACE, q("2Gi")), t(NODEFS, q("200Mi"), GRACE, q("1Gi"))]),
    ("disk eviction values in percentages", [], {IMAGEFS: "15%", NODEFS: "10.5%"}, {IMAGEFS: "30%", NODEFS: "20.5%"},
     {IMAGEFS: "30s", NODEFS: "30s"}, {IMAGEFS: "10%", NODEFS: "5%"},
     [t(IMAGEFS, p(0.15), min_reclaim=p(0.1)), t(NODEFS, p(0.105), min_reclaim=p(0.05)),
      t(IMAGEFS, p(0.3), GRACE, p(0.1)), t(NODEFS, p(0.205), GRACE, p(0.05))]),
    ("inode eviction values", [], {IMAGEFS_INODES: "150Mi", NODEFS_INODES: "100Mi"},
     {IMAGEFS_INODES: "300Mi", NODEFS_INODES: "200Mi"}, {IMAGEFS_INODES: "30s", NODEFS_INODES: "30s"},
     {IMAGEFS_INODES: "2Gi", NODEFS_INODES: "1Gi"},
     [t(IMAGEFS_INODES, q("150Mi"), min_reclaim=q("2Gi")), t(NODEFS_INODES, q("100Mi"), min_reclaim=q("1Gi")),
      t(IMAGEFS_INODES, q("300Mi"), GRACE, q("2Gi")), t(NODEFS_INODES, q("200Mi"), GRACE, q("1Gi"))]),
    ("disable via 0%", [], {MEM: "0%"}, {MEM: "0%"}, {}, {}, []),
    ("disable via 100%", [], {MEM: "100%"}, {MEM: "100%"}, {}, {}, []),
])
def test_parse_threshold_config(name, allocatable, hard, soft, grace, min_reclaim, expected):
    result = thresholds.parse_threshold_config(allocatable, hard, soft, grace, min_reclaim)
    assert Counter(result) == Counter(expected)


# helpers_test.go#TestParseThresholdConfig: the cases that must fail, with the v1.27 helpers.go error text
@pytest.mark.parametrize("name, hard, soft, grace, min_reclaim, message", [
    ("invalid-signal", {"mem.available": "150Mi"}, {}, {}, {}, "unsupported eviction signal mem.available"),
    ("hard-signal-negative", {MEM: "-150Mi"}, {}, {}, {}, "eviction threshold memory.available must be positive: -150Mi"),
    ("hard-signal-negative-percentage", {MEM: "-15%"}, {}, {}, {},
     "eviction percentage threshold memory.available must be >= 0%: -15%"),
    ("hard-signal-percentage-greater-than-100%", {MEM: "150%"}, {}, {}, {},
     "eviction percentage threshold memory.available must be <= 100%: 150%"),
    ("soft-signal-negative", {}, {MEM: "-150Mi"}, {}, {}, "eviction threshold memory.available must be positive: -150Mi"),
    ("valid-and-invalid-signal", {MEM: "150Mi", "invalid.foo": "150Mi"}, {}, {}, {},
     "unsupported eviction signal invalid.foo"),
    ("soft-no-grace-period", {}, {MEM: "150Mi"}, {}, {},
     "grace period must be specified for the soft eviction threshold memory.available"),
    ("soft-negative-grace-period", {}, {MEM: "150Mi"}, {MEM: "-30s"}, {},
     "invalid eviction grace period specified: -30s, must be a positive value"),
    ("negative-reclaim", {MEM: "150Mi"}, {}, {}, {MEM: "-300Mi"},
     "negative eviction minimum reclaim specified for memory.available"),
    # pkg/kubelet/eviction/helpers.go parseThresholdStatement, from the source rather than the table:
    ("zero quantity", {MEM: "0"}, {}, {}, {}, "eviction threshold memory.available must be positive: 0"),
    ("zero with a suffix", {MEM: "0Gi"}, {}, {}, {}, "eviction threshold memory.available must be positive: 0"),
    ("negative printed canonically", {MEM: "-1.5Gi"}, {}, {}, {},
     "eviction threshold memory.available must be positive: -1536Mi"),
    ("0% min-reclaim", {MEM: "150Mi"}, {}, {}, {MEM: "0%"}, "eviction percentage minimum reclaim memory.available must be positive: 0%"),
    ("grace for an unknown signal", {}, {}, {"foo": "30s"}, {}, "unsupported eviction signal foo"),
    ("grace without unit", {}, {MEM: "1Gi"}, {MEM: "30"}, {}, 'time: missing unit in duration "30"'),
    ("bad percentage", {MEM: "ten%"}, {}, {}, {}, 'strconv.ParseFloat: parsing "ten": invalid syntax'),
    ("bad quantity", {MEM: "lots"}, {}, {}, {},
     "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ("bad suffix", {MEM: "100K"}, {}, {}, {}, "unable to parse quantity's suffix"),  # K: only Ki or k
    ("letters after the suffix", {MEM: "100MB"}, {}, {}, {},
     "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
])
def test_parse_threshold_config_errors(name, hard, soft, grace, min_reclaim, message):
    with pytest.raises(ValueError) as err:
        thresholds.parse_threshold_config([], hard, soft, grace, min_reclaim)
    assert str(err.value) == message


def test_soft_threshold_order_and_defaults():
    """defaults_linux.go, helpers.go ParseThresholdConfig: allocatable copies last; grace keys without soft ignored."""
    result = thresholds.parse_threshold_config(["pods"], api.DEFAULT_EVICTION_HARD, {}, {NODEFS: "1m"}, {})
    assert result == [t(MEM, q("100Mi")), t(NODEFS, p(0.1)), t(NODEFS_INODES, p(0.05)), t(IMAGEFS, p(0.15)),
                      t(ALLOC, q("100Mi"))]
    assert [x.percentage for x in (result[1].value, result[2].value, result[3].value)] == [
        0.10000000149011612, 0.05000000074505806, 0.15000000596046448]


def test_allocatable_copy_keeps_memory_min_reclaim_not_its_own():
    """addAllocatableThresholds (derived): a min-reclaim for allocatableMemory.available never reaches the copies."""
    result = thresholds.parse_threshold_config(["pods"], {MEM: "1Gi"}, {}, {}, {MEM: "500Mi", ALLOC: "2Gi"})
    assert result == [t(MEM, q("1Gi"), min_reclaim=q("500Mi")), t(ALLOC, q("1Gi"), min_reclaim=q("500Mi"))]
    assert thresholds.parse_threshold_config(["system-reserved"], {MEM: "1Gi"}, {}, {}, {}) == [t(MEM, q("1Gi"))]


def test_zero_point_zero_percent_is_not_dropped():
    assert thresholds.parse_threshold_config([], {MEM: "0.0%"}, {}, {}, {}) == [t(MEM, p(0.0))]


# helpers_test.go#TestAddAllocatableThresholds
@pytest.mark.parametrize("name, given_, expected", [
    ("non-memory-signal", [t(IMAGEFS, q("150Mi"), min_reclaim=q("0"))], [t(IMAGEFS, q("150Mi"), min_reclaim=q("0"))]),
    ("memory-signal-with-grace", [t(MEM, q("150Mi"), timedelta(microseconds=1), q("0"))],  # upstream: 10ns
     [t(MEM, q("150Mi"), timedelta(microseconds=1), q("0"))]),
    ("memory-signal-without-grace", [t(MEM, q("150Mi"), min_reclaim=q("0"))],
     [t(MEM, q("150Mi"), min_reclaim=q("0")), t(ALLOC, q("150Mi"), min_reclaim=q("0"))]),
    ("memory-signal-without-grace-two-thresholds",
     [t(MEM, q("150Mi"), min_reclaim=q("0")), t(MEM, q("200Mi"), min_reclaim=q("1Gi"))],
     [t(MEM, q("150Mi"), min_reclaim=q("0")), t(MEM, q("200Mi"), min_reclaim=q("1Gi")),
      t(ALLOC, q("150Mi"), min_reclaim=q("0")), t(ALLOC, q("200Mi"), min_reclaim=q("1Gi"))]),
])
def test_add_allocatable_thresholds(name, given_, expected):
    assert thresholds.add_allocatable_thresholds(given_) == expected


# helpers_test.go#TestParsePercentage (on error upstream returns 0 and the error)
@pytest.mark.parametrize("text, expected", [
    ("blah", ValueError), ("25.5%", 0.2549999952316284), ("foo%", ValueError), ("12%345", ValueError),
    # helpers.go parsePercentage divides in float32
    ("10%", 0.10000000149011612), ("15%", 0.15000000596046448), ("5%", 0.05000000074505806),
    ("20%", 0.20000000298023224), ("10.5%", 0.10499999672174454),
])
def test_parse_percentage(text, expected):
    if expected is ValueError:
        with pytest.raises(ValueError, match="^strconv.ParseFloat: parsing .*: invalid syntax$"):
            thresholds.parse_percentage(text)
    else:
        assert thresholds.parse_percentage(text) == expected


def test_percentages_match_numpy_float32():
    """Every percentage with one decimal, checked against numpy's float32 arithmetic."""
    for tenths in range(0, 1001):
        text = f"{tenths // 10}.{tenths % 10}"
        expected = float(numpy.float32(numpy.float32(text) / numpy.float32(100)))
        assert thresholds.parse_percentage(text + "%") == expected, text


# pkg/kubelet/eviction/helpers.go GetThresholdQuantity widens the float32 to float64 and truncates the product
@pytest.mark.parametrize("value, capacity, expected", [
    (p(0.1), 10 * 2**30, 1073741840),
    (p(0.2), 1000 * 2**20, 209715203),
    (p(0.1), 2 * 2**30, 214748368),
    (q("1Gi"), 123, 2**30),
])
def test_get_threshold_quantity(value, capacity, expected):
    assert api.get_threshold_quantity(value, capacity) == expected


@pytest.mark.parametrize("text, expected", [
    ("memory.available<100Mi,nodefs.available<10%", {MEM: "100Mi", NODEFS: "10%"}),
    (" memory.available < 1Gi ,,", {MEM: "1Gi"}),
    ("memory.available<1Gi,memory.available<2Gi", {MEM: "2Gi"}),  # the last one wins
    ("a<b<c", {"a": "b<c"}),  # split on the first "<"
    ("", {}),
])
def test_parse_eviction_flag(text, expected):
    """k8s.io/component-base/cli/flag LangleSeparatedMapStringString.Set"""
    assert thresholds.parse_eviction_flag(text) == expected


@pytest.mark.parametrize("text", ["memory.available>100Mi", "memory.available=100Mi", "memory.available<1Gi, "])
def test_parse_eviction_flag_malformed(text):
    with pytest.raises(ValueError, match="^malformed pair, expect string<string$"):
        thresholds.parse_eviction_flag(text)


def test_parse_map_string_string():
    assert thresholds.parse_map_string_string("memory.available=1m30s, nodefs.available = 2m") == {MEM: "1m30s", NODEFS: "2m"}
    with pytest.raises(ValueError, match="^malformed pair, expect string=string$"):
        thresholds.parse_map_string_string("memory.available<1m")


@pytest.mark.parametrize("text, nanoseconds", [
    ("30s", 30 * 10**9), ("1m30s", 90 * 10**9), ("1.5h", 5400 * 10**9), ("0", 0), ("-0", 0), ("10ns", 10),
    ("1h2m3.5s", 3723500 * 10**6), (".5s", 5 * 10**8), ("2\u00b5s", 2000),
])
def test_parse_duration(text, nanoseconds):
    """time.ParseDuration, which parses the soft grace periods."""
    assert thresholds.parse_duration(text) == nanoseconds


@pytest.mark.parametrize("text, message", [
    ("", 'time: invalid duration ""'), ("abc", 'time: invalid duration "abc"'), ("30", 'time: missing unit in duration "30"'),
    ("3d", 'time: unknown unit "d" in duration "3d"'), (".s", 'time: invalid duration ".s"'),
])
def test_parse_duration_errors(text, message):
    with pytest.raises(ValueError) as err:
        thresholds.parse_duration(text)
    assert str(err.value) == message


def test_sub_microsecond_grace_stays_soft():
    """A 1ns grace period is soft upstream; the timedelta rounds it up to 1µs rather than down to hard."""
    (soft,) = thresholds.parse_threshold_config([], {}, {MEM: "1Gi"}, {MEM: "1ns"}, {})
    assert soft.grace_period == timedelta(microseconds=1)


@given(st.integers(1, 10**6), st.sampled_from(["", "k", "M", "G", "Ki", "Mi", "Gi"]))
def test_positive_quantities_parse_and_keep_their_text(number, suffix):
    (threshold,) = thresholds.parse_threshold_config([], {MEM: f"{number}{suffix}"}, {}, {}, {})
    assert threshold.value.quantity > 0
    again = ThresholdValue(quantity=threshold.value.quantity_text)
    assert again.quantity == threshold.value.quantity  # the printed form parses back to the same amount


@pytest.mark.parametrize("text, printed", [
    ("1.5Gi", "1536Mi"), ("1024Mi", "1Gi"), ("100Mi", "100Mi"), ("1500M", "1500M"), ("1.5G", "1500M"), ("0.5", "500m"),
    ("1000", "1k"), ("1e3", "1e3"), ("+100Mi", "+100Mi"), ("1.1Gi", "1181116006400m"), ("512", "512"),
])
def test_quantity_string(text, printed):
    """k8s.io/apimachinery resource.Quantity.String() after ParseQuantity (the cached text or the canonical form)."""
    assert api.quantity_string(text) == printed


@pytest.mark.parametrize("amount, fmt, printed", [
    (1073741840, api.BINARY_SI, "1073741840"), (1610612736, api.BINARY_SI, "1536Mi"), (1572864000, api.BINARY_SI, "1500Mi"),
    (1000, api.BINARY_SI, "1k"), (1572864, api.DECIMAL_SI, "1572864"), (1000000, api.DECIMAL_SI, "1M"), (0, api.BINARY_SI, "0"),
    (-157286400, api.BINARY_SI, "-150Mi"),
])
def test_format_quantity(amount, fmt, printed):
    """apimachinery resource.Quantity String: canonical printing of a Quantity made by NewQuantity(value, format)."""
    assert api.format_quantity(amount, fmt) == printed


def test_a_quantity_with_a_huge_exponent_parses_or_fails_in_one_line():
    # Go's ParseQuantity keeps any int32 exponent (inf.Dec); this one fits in a Python Decimal too.
    (threshold,) = [t for t in thresholds.parse_threshold_config([], {"memory.available": "6e35231"}, {}, {}, {})
                    if t.signal == "memory.available"]
    assert threshold.value.quantity == Decimal(6) * Decimal(10) ** 35231
    # Past what a Python Decimal holds, the course refuses it with the numeric-part error, not a traceback.
    with pytest.raises(ValueError, match="^unable to parse numeric part of quantity$"):
        thresholds.parse_threshold_config([], {"memory.available": "1e2000000"}, {}, {}, {})
