"""Go's `sort.Slice`, step for step (Go's sort/zsortfunc.go: pattern-defeating quicksort).

Why a port and not `sorted`: upstream sorts preemption victims with
`sort.Slice(pods, MoreImportantPod)`, an unstable sort, and that comparison
is not even a strict weak order (two pods without a start time each count as
started "now", read at the call, so each is "more important" than the other).
The order Go produces then depends on exactly which pairs it compares and
swaps: insertion sort up to 12 elements, pdqsort above (with its fixed
pattern-breaking "random" swaps). Reproducing that order is the only way to
evict the same pods. The algorithm below makes the same `less` calls in the
same order and the same swaps as Go 1.24's `sort.Slice`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
Less = Callable[[T, T], bool]

_MAX_INSERTION = 12
_SHORTEST_NINTHER = 50
_MAX_SWAPS = 4 * 3
_MAX_STEPS = 5
_SHORTEST_SHIFTING = 50
_UNKNOWN, _INCREASING, _DECREASING = 0, 1, 2
_U64 = (1 << 64) - 1


def sort_slice(v: list[T], less: Less[T]) -> None:
    """Sort `v` in place as Go's `sort.Slice(v, func(i, j) { return less(v[i], v[j]) })` does."""
    n = len(v)
    _pdqsort(v, less, 0, n, n.bit_length())


def _insertion(v: list[T], less: Less[T], a: int, b: int) -> None:
    for i in range(a + 1, b):
        j = i
        while j > a and less(v[j], v[j - 1]):
            v[j], v[j - 1] = v[j - 1], v[j]
            j -= 1


def _sift_down(v: list[T], less: Less[T], lo: int, hi: int, first: int) -> None:
    root = lo
    while True:
        child = 2 * root + 1
        if child >= hi:
            return
        if child + 1 < hi and less(v[first + child], v[first + child + 1]):
            child += 1
        if not less(v[first + root], v[first + child]):
            return
        v[first + root], v[first + child] = v[first + child], v[first + root]
        root = child


def _heap_sort(v: list[T], less: Less[T], a: int, b: int) -> None:
    first, hi = a, b - a
    for i in range((hi - 1) // 2, -1, -1):
        _sift_down(v, less, i, hi, first)
    for i in range(hi - 1, -1, -1):
        v[first], v[first + i] = v[first + i], v[first]
        _sift_down(v, less, 0, i, first)


def _pdqsort(v: list[T], less: Less[T], a: int, b: int, limit: int) -> None:
    was_balanced = was_partitioned = True
    while True:
        length = b - a
        if length <= _MAX_INSERTION:
            _insertion(v, less, a, b)
            return
        if limit == 0:
            _heap_sort(v, less, a, b)
            return
        if not was_balanced:
            _break_patterns(v, a, b)
            limit -= 1
        pivot, hint = _choose_pivot(v, less, a, b)
        if hint == _DECREASING:
            _reverse(v, a, b)
            pivot = (b - 1) - (pivot - a)
            hint = _INCREASING
        if was_balanced and was_partitioned and hint == _INCREASING and _partial_insertion(v, less, a, b):
            return
        if a > 0 and not less(v[a - 1], v[pivot]):
            a = _partition_equal(v, less, a, b, pivot)
            continue
        mid, was_partitioned = _partition(v, less, a, b, pivot)
        left, right = mid - a, b - mid
        threshold = length // 8
        if left < right:
            was_balanced = left >= threshold
            _pdqsort(v, less, a, mid, limit)
            a = mid + 1
        else:
            was_balanced = right >= threshold
            _pdqsort(v, less, mid + 1, b, limit)
            b = mid


def _partition(v: list[T], less: Less[T], a: int, b: int, pivot: int) -> tuple[int, bool]:
    v[a], v[pivot] = v[pivot], v[a]
    i, j = a + 1, b - 1
    while i <= j and less(v[i], v[a]):
        i += 1
    while i <= j and not less(v[j], v[a]):
        j -= 1
    if i > j:
        v[j], v[a] = v[a], v[j]
        return j, True
    v[i], v[j] = v[j], v[i]
    i += 1
    j -= 1
    while True:
        while i <= j and less(v[i], v[a]):
            i += 1
        while i <= j and not less(v[j], v[a]):
            j -= 1
        if i > j:
            break
        v[i], v[j] = v[j], v[i]
        i += 1
        j -= 1
    v[j], v[a] = v[a], v[j]
    return j, False


def _partition_equal(v: list[T], less: Less[T], a: int, b: int, pivot: int) -> int:
    v[a], v[pivot] = v[pivot], v[a]
    i, j = a + 1, b - 1
    while True:
        while i <= j and not less(v[a], v[i]):
            i += 1
        while i <= j and less(v[a], v[j]):
            j -= 1
        if i > j:
            return i
        v[i], v[j] = v[j], v[i]
        i += 1
        j -= 1


def _partial_insertion(v: list[T], less: Less[T], a: int, b: int) -> bool:
    i = a + 1
    for _ in range(_MAX_STEPS):
        while i < b and not less(v[i], v[i - 1]):
            i += 1
        if i == b:
            return True
        if b - a < _SHORTEST_SHIFTING:
            return False
        v[i], v[i - 1] = v[i - 1], v[i]
        if i - a >= 2:
            # Go shifts down to index 1 here, not to a: kept, since it decides which pairs are compared.
            for j in range(i - 1, 0, -1):
                if not less(v[j], v[j - 1]):
                    break
                v[j], v[j - 1] = v[j - 1], v[j]
        if b - i >= 2:
            for j in range(i + 1, b):
                if not less(v[j], v[j - 1]):
                    break
                v[j], v[j - 1] = v[j - 1], v[j]
    return False


def _break_patterns(v: list[T], a: int, b: int) -> None:
    length = b - a
    if length < 8:
        return
    r = length
    modulus = 1 << length.bit_length()
    start = a + (length // 4) * 2 - 1
    for idx in range(start, start + 3):
        r ^= (r << 13) & _U64
        r ^= r >> 7
        r ^= (r << 17) & _U64
        other = r & (modulus - 1)
        if other >= length:
            other -= length
        v[idx], v[a + other] = v[a + other], v[idx]


def _choose_pivot(v: list[T], less: Less[T], a: int, b: int) -> tuple[int, int]:
    n = b - a
    swaps = [0]
    i, j, k = a + n // 4, a + n // 4 * 2, a + n // 4 * 3
    if n >= 8:
        if n >= _SHORTEST_NINTHER:
            i = _median(v, less, i - 1, i, i + 1, swaps)
            j = _median(v, less, j - 1, j, j + 1, swaps)
            k = _median(v, less, k - 1, k, k + 1, swaps)
        j = _median(v, less, i, j, k, swaps)
    if swaps[0] == 0:
        return j, _INCREASING
    if swaps[0] == _MAX_SWAPS:
        return j, _DECREASING
    return j, _UNKNOWN


def _median(v: list[T], less: Less[T], a: int, b: int, c: int, swaps: list[int]) -> int:
    """The index of the median of v[a], v[b], v[c], counting the out-of-order pairs met."""
    if less(v[b], v[a]):
        swaps[0] += 1
        a, b = b, a
    if less(v[c], v[b]):
        swaps[0] += 1
        b, c = c, b
    if less(v[b], v[a]):
        swaps[0] += 1
        a, b = b, a
    return b


def _reverse(v: list[T], a: int, b: int) -> None:
    v[a:b] = v[a:b][::-1]
