"""Go's slices.SortFunc step for step, so that a comparison that is not a strict order sorts as the kubelet's does.

Upstream: Go's slices/zsortanyfunc.go (pdqsortCmpFunc and its helpers) and slices/sort.go (SortFunc,
xorshift, nextPowerOfTwo) in the Go that builds the kubelet. Python's sort would give another order whenever
the comparison contradicts itself, as the allocation manager's order of pending resizes does.
"""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")
Cmp = Callable[[T, T], int]
_INCREASING, _DECREASING, _UNKNOWN = "increasing", "decreasing", "unknown"  # sortedHint
_MASK = (1 << 64) - 1


def sort_func(data: list, cmp: Cmp) -> None:
    """Sort data in place as Go's slices.SortFunc(data, cmp) does. Upstream: slices.SortFunc"""
    _pdqsort(data, 0, len(data), len(data).bit_length(), cmp)


def _insertion_sort(data: list, a: int, b: int, cmp: Cmp) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and cmp(data[j], data[j - 1]) < 0:
            data[j], data[j - 1] = data[j - 1], data[j]
            j -= 1


def _sift_down(data: list, lo: int, hi: int, first: int, cmp: Cmp) -> None:
    root = lo
    while (child := 2 * root + 1) < hi:
        if child + 1 < hi and cmp(data[first + child], data[first + child + 1]) < 0:
            child += 1
        if not cmp(data[first + root], data[first + child]) < 0:
            return
        data[first + root], data[first + child] = data[first + child], data[first + root]
        root = child


def _heap_sort(data: list, a: int, b: int, cmp: Cmp) -> None:
    first, hi = a, b - a
    for i in range((hi - 1) // 2, -1, -1):
        _sift_down(data, i, hi, first, cmp)
    for i in range(hi - 1, -1, -1):
        data[first], data[first + i] = data[first + i], data[first]
        _sift_down(data, 0, i, first, cmp)


def _pdqsort(data: list, a: int, b: int, limit: int, cmp: Cmp) -> None:
    was_balanced = was_partitioned = True
    while True:
        length = b - a
        if length <= 12:
            _insertion_sort(data, a, b, cmp)
            return
        if limit == 0:
            _heap_sort(data, a, b, cmp)
            return
        if not was_balanced:
            _break_patterns(data, a, b)
            limit -= 1
        pivot, hint = _choose_pivot(data, a, b, cmp)
        if hint == _DECREASING:
            data[a:b] = data[a:b][::-1]
            pivot, hint = (b - 1) - (pivot - a), _INCREASING
        if was_balanced and was_partitioned and hint == _INCREASING and _partial_insertion_sort(data, a, b, cmp):
            return
        if a > 0 and not cmp(data[a - 1], data[pivot]) < 0:
            a = _partition_equal(data, a, b, pivot, cmp)
            continue
        mid, was_partitioned = _partition(data, a, b, pivot, cmp)
        left, right = mid - a, b - mid
        if left < right:
            was_balanced = left >= length // 8
            _pdqsort(data, a, mid, limit, cmp)
            a = mid + 1
        else:
            was_balanced = right >= length // 8
            _pdqsort(data, mid + 1, b, limit, cmp)
            b = mid


def _partition(data: list, a: int, b: int, pivot: int, cmp: Cmp) -> tuple[int, bool]:
    data[a], data[pivot] = data[pivot], data[a]
    i, j = a + 1, b - 1
    while i <= j and cmp(data[i], data[a]) < 0:
        i += 1
    while i <= j and not cmp(data[j], data[a]) < 0:
        j -= 1
    if i > j:
        data[j], data[a] = data[a], data[j]
        return j, True
    data[i], data[j] = data[j], data[i]
    i, j = i + 1, j - 1
    while True:
        while i <= j and cmp(data[i], data[a]) < 0:
            i += 1
        while i <= j and not cmp(data[j], data[a]) < 0:
            j -= 1
        if i > j:
            break
        data[i], data[j] = data[j], data[i]
        i, j = i + 1, j - 1
    data[j], data[a] = data[a], data[j]
    return j, False


def _partition_equal(data: list, a: int, b: int, pivot: int, cmp: Cmp) -> int:
    data[a], data[pivot] = data[pivot], data[a]
    i, j = a + 1, b - 1
    while True:
        while i <= j and not cmp(data[a], data[i]) < 0:
            i += 1
        while i <= j and cmp(data[a], data[j]) < 0:
            j -= 1
        if i > j:
            return i
        data[i], data[j] = data[j], data[i]
        i, j = i + 1, j - 1


def _partial_insertion_sort(data: list, a: int, b: int, cmp: Cmp) -> bool:
    i = a + 1
    for _ in range(5):  # maxSteps
        while i < b and not cmp(data[i], data[i - 1]) < 0:
            i += 1
        if i == b:
            return True
        if b - a < 50:  # shortestShifting
            return False
        data[i], data[i - 1] = data[i - 1], data[i]
        if i - a >= 2:
            for j in range(i - 1, 0, -1):
                if not cmp(data[j], data[j - 1]) < 0:
                    break
                data[j], data[j - 1] = data[j - 1], data[j]
        if b - i >= 2:
            for j in range(i + 1, b):
                if not cmp(data[j], data[j - 1]) < 0:
                    break
                data[j], data[j - 1] = data[j - 1], data[j]
    return False


def _break_patterns(data: list, a: int, b: int) -> None:
    length = b - a
    if length < 8:
        return
    random, modulus = length, 1 << length.bit_length()
    for idx in range(a + (length // 4) * 2 - 1, a + (length // 4) * 2 + 2):
        random ^= (random << 13) & _MASK  # xorshift.Next
        random ^= random >> 7
        random ^= (random << 17) & _MASK
        other = random & (modulus - 1)
        if other >= length:
            other -= length
        data[idx], data[a + other] = data[a + other], data[idx]


def _choose_pivot(data: list, a: int, b: int, cmp: Cmp) -> tuple[int, str]:
    length, swaps = b - a, [0]
    i, j, k = a + length // 4, a + length // 4 * 2, a + length // 4 * 3
    if length >= 8:
        if length >= 50:  # shortestNinther: Tukey's ninther
            i, j, k = (_median(data, x - 1, x, x + 1, swaps, cmp) for x in (i, j, k))
        j = _median(data, i, j, k, swaps, cmp)
    return j, {0: _INCREASING, 12: _DECREASING}.get(swaps[0], _UNKNOWN)


def _median(data: list, a: int, b: int, c: int, swaps: list, cmp: Cmp) -> int:
    a, b = _order2(data, a, b, swaps, cmp)
    b, c = _order2(data, b, c, swaps, cmp)
    a, b = _order2(data, a, b, swaps, cmp)
    return b


def _order2(data: list, a: int, b: int, swaps: list, cmp: Cmp) -> tuple[int, int]:
    if cmp(data[b], data[a]) < 0:
        swaps[0] += 1
        return b, a
    return a, b
