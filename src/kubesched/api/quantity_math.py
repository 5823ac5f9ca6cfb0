"""apimachinery's integer scaling of quantities (math.go, scale_int.go, inf.Dec rounding) with Go's int64
wrapping and give-ups: kept apart from the Quantity type so the overflow rules read on their own."""

from __future__ import annotations

from kubesched.api.int64 import MAX_INT64, MIN_INT64, wrap

# One step of positiveScaleInt64 multiplies by 10**k for these k; other k loop by 10 and give up with 0.
_ONE_STEP_SCALES = frozenset({1, 2, 3, 6, 9})
# Go keeps any int32 exponent, but an inf.Dec past 10**MAX_DIGITS would take Go itself minutes to
# build (and every int64 view of it has long overflowed): such magnitudes are held at that bound.
MAX_DIGITS = 1000


def digits(n: int) -> int:
    return len(str(abs(n))) if n else 0


def shift(amount: int, k: int) -> int:
    """amount * 10**k for k >= 0 (magnitudes past 10**MAX_DIGITS held there)."""
    if amount == 0 or k == 0:
        return amount
    if digits(amount) + k > MAX_DIGITS + 40:
        return 10 ** (MAX_DIGITS + 40) if amount > 0 else -(10 ** (MAX_DIGITS + 40))
    return amount * 10**k


def div_away_from_zero(v: int, k: int) -> int:
    """negativeScaleInt64 / inf.RoundUp: v / 10**k rounded away from zero."""
    if v == 0 or k == 0:
        return v
    if k > digits(v):
        return 1 if v > 0 else -1
    q, r = divmod(abs(v), 10**k)
    q += r != 0
    return q if v > 0 else -q


def positive_scale(base: int, k: int) -> tuple[int, bool]:
    """positiveScaleInt64(base, k): base * 10**k and whether it fit.

    One multiplication (k in 1, 2, 3, 6, 9) wraps on overflow; a loop of
    multiplications by 10 stops at the first overflow and yields 0. MinInt64
    times anything but 1 yields 0.
    """
    if k == 0 or base == 0:
        return base, True
    if base == MIN_INT64:
        return 0, False
    if k in _ONE_STEP_SCALES:
        product = base * 10**k
        result = wrap(product)
        return result, result == product
    if k >= 19:  # 10**19 alone exceeds int64
        return 0, False
    product = base * 10**k
    if MIN_INT64 <= product <= MAX_INT64:
        return product, True
    return 0, False


def int64_amount_add(a: int, a_exp: int, b: int, b_exp: int) -> tuple[int, int] | None:
    """int64Amount.Add: (value, scale) at the finer scale, or None when Go falls back to inf.Dec."""
    if b == 0:
        return a, a_exp
    if a == 0:
        return b, b_exp
    if a_exp > b_exp:
        a, ok = positive_scale(a, a_exp - b_exp)
        exp = b_exp
    elif b_exp > a_exp:
        b, ok = positive_scale(b, b_exp - a_exp)
        exp = a_exp
    else:
        ok, exp = True, a_exp
    if not ok:
        return None
    total = a + b
    if not MIN_INT64 <= total <= MAX_INT64:
        return None
    return total, exp


def dec_scaled_value(unscaled: int, exp: int, scale: int) -> int:
    """scaledValue for an inf.Dec (in Go's terms, scale -exp to newScale -scale).

    Down: while unscaled < MaxInt64 (every negative included), int64 division
    of its low 64 bits with a +1 for any remainder (so a negative rounds to
    trunc+1); else exact ceil and the low 64 bits.
    Up: the low 64 bits times int64(math.Pow10(k)), which on amd64 is MinInt64
    once 10**k exceeds an int64.
    """
    if unscaled == 0:
        return 0
    dif = scale - exp
    if dif == 0:
        return wrap(unscaled)
    if dif < 0:
        factor = 10**-dif if -dif <= 18 else MIN_INT64
        return wrap(wrap(unscaled) * factor)
    if unscaled < MAX_INT64 and dif < 19:
        # Go divides unscaled.Int64() here, which for a huge negative is already wrapped.
        v = wrap(unscaled)
        divisor = 10**dif
        q = abs(v) // divisor
        if v < 0:
            q = -q
        return q + 1 if v != q * divisor else q
    if dif > digits(unscaled):
        return wrap((0 if unscaled > 0 else -1) + 1)
    q, r = divmod(unscaled, 10**dif)
    return wrap(q + (r != 0))


def strip_factors(n: int, base: int) -> tuple[int, int]:
    """removeInt64Factors: n = result * base**times, on the magnitude."""
    m, times = abs(n), 0
    while m >= base and m % base == 0:
        m //= base
        times += 1
    return (m if n >= 0 else -m), times
