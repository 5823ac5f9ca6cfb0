"""Go's int64 arithmetic on Python ints: two's-complement wrapping and truncating division.

The scheduler keeps resource amounts in int64 and adds, subtracts and
multiplies them without overflow checks, so a node with a huge allocatable or
a pod with a huge request gets wrapped results in Go. Python ints never
overflow; these helpers bring a result back to what Go would hold.
"""

from __future__ import annotations

MIN_INT64 = -(1 << 63)
MAX_INT64 = (1 << 63) - 1

_HALF = 1 << 63
_MASK = (1 << 64) - 1


def wrap(x: int) -> int:
    """The int64 Go holds for the mathematical result x (its low 64 bits, two's complement)."""
    if MIN_INT64 <= x <= MAX_INT64:
        return x
    return ((x + _HALF) & _MASK) - _HALF


def div(a: int, b: int) -> int:
    """Go's a / b on int64: truncates toward zero; MinInt64 / -1 wraps back to MinInt64."""
    q = abs(a) // abs(b)
    return wrap(q if (a >= 0) == (b > 0) else -q)
