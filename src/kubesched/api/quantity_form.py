"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource), in the form Go keeps them.

Go stores a parsed quantity in one of two forms, and once a number no longer
fits an int64 the form decides what Value() and MilliValue() return:

- int64Amount {value, scale}: a mantissa of at most 18 digits (or a binary
  suffix whose product fits) times 10**scale, scale >= -9. Scaling it by 10,
  100, 1000, 10**6 or 10**9 is one multiplication that wraps on overflow
  ("18446744073709552" has MilliValue 384); any other factor is a loop of
  multiplications by 10 that gives up and returns 0 ("1e16" has MilliValue 0).
  (That is v1.34's math.go; later apimachinery saturates at the int64 bounds.)
- inf.Dec {unscaled, scale}: everything else, rounded up to whole nanos, with
  BinarySI values held at 2^63-1. Scaling it down divides, rounds up, and keeps
  the low 64 bits ("18446744073709551617" has Value 1).

Quantity.Add stays an int64Amount while the sum fits and becomes an inf.Dec
otherwise; Quantity.Cmp turns an int64Amount compared with an inf.Dec into an
inf.Dec in place (resources.py follows both, since later Value() calls see the
changed form). The API server also rounds every ResourceList entry up to
milli when it defaults an object (`round_up(MILLI)`). `Quantity.exact` is the
plain value, for callers that only compare.

This module holds the Quantity type; parsing and the helpers callers use are in quantity.py.
"""

from __future__ import annotations

from fractions import Fraction

from kubesched.api.quantity_math import (
    MAX_DIGITS,
    dec_scaled_value,
    digits,
    div_away_from_zero,
    int64_amount_add,
    positive_scale,
    shift,
    strip_factors,
)

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

# Scale exponents of Value() and MilliValue().
UNIT = 0
MILLI = -3

# Suffixes and their exponents (of 2 for BinarySI, of 10 for DecimalSI).
BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# Canonical suffixes: a decimal exponent outside the table prints no suffix at all (Go's own quirk:
# 10**21 prints as "1"), a power of 1024 past Ei likewise.
_DECIMAL_SUFFIX = {e: s for s, e in DECIMAL_EXPONENTS.items()}
_BINARY_SUFFIX = {e // 10: s for s, e in BINARY_EXPONENTS.items()}


class Quantity:
    """A quantity as Go holds it: `amount * 10**exp`, either an int64Amount or an inf.Dec.

    For an int64Amount (`dec` False) `amount` fits an int64 and `exp` is Go's
    Scale; for an inf.Dec (`dec` True) `amount` is the unscaled integer and
    `exp` is minus inf.Dec's scale. `text` is the input string when Go keeps it
    to print back (it was already canonical), else "". Immutable.
    """

    __slots__ = ("_exact", "amount", "dec", "exp", "format", "text")

    def __init__(self, dec: bool, amount: int, exp: int, format: str = DECIMAL_SI, text: str = "") -> None:
        self.dec = dec
        self.amount = amount
        self.exp = exp
        self.format = format
        self.text = text
        self._exact: Fraction | None = None

    def __repr__(self) -> str:
        kind = "Dec" if self.dec else "Int64"
        return f"Quantity({kind} {self.amount}e{self.exp}, {self.format}, {self.string()!r})"

    def __str__(self) -> str:
        return self.string()

    # ------------------------------------------------------------ reading

    @property
    def exact(self) -> Fraction:
        """The value as a Fraction (magnitudes past 10**1000 held there)."""
        if self._exact is None:
            a, e = self.amount, self.exp
            if a == 0:
                self._exact = Fraction(0)
            elif digits(a) + e > MAX_DIGITS:
                self._exact = Fraction(10**MAX_DIGITS if a > 0 else -(10**MAX_DIGITS))
            else:
                self._exact = Fraction(a * 10**e) if e >= 0 else Fraction(a, 10**-e)
        return self._exact

    def sign(self) -> int:
        return (self.amount > 0) - (self.amount < 0)

    def is_zero(self) -> bool:
        return self.amount == 0

    def value(self) -> int:
        """Quantity.Value(): the int64 Go returns, overflow included."""
        return self.scaled_value(UNIT)

    def milli_value(self) -> int:
        """Quantity.MilliValue(): the int64 Go returns, overflow included."""
        return self.scaled_value(MILLI)

    def scaled_value(self, scale: int) -> int:
        """Quantity.ScaledValue: ceil(q / 10**scale) as Go's int64 arithmetic produces it."""
        if self.dec:
            return dec_scaled_value(self.amount, self.exp, scale)
        if self.exp < scale:
            return div_away_from_zero(self.amount, scale - self.exp)
        # AsScaledInt64 ignores positiveScaleInt64's overflow flag: its result (wrapped or 0) is returned.
        return positive_scale(self.amount, self.exp - scale)[0]

    def cmp(self, other: Quantity) -> int:
        """Quantity.Cmp: -1, 0 or 1 by exact value (the form conversion is the caller's, see `as_dec`)."""
        a, b = self.sign(), other.sign()
        if a != b or a == 0:
            return (a > b) - (a < b)
        da, db = digits(self.amount) + self.exp, digits(other.amount) + other.exp
        if da != db:
            return a if da > db else -a
        e = min(self.exp, other.exp)
        x, y = self.amount * 10 ** (self.exp - e), other.amount * 10 ** (other.exp - e)
        return (x > y) - (x < y)

    # ------------------------------------------------------------ arithmetic (new quantities)

    def as_dec(self) -> Quantity:
        """Quantity.AsDec: the same value as an inf.Dec (scale taken from the int64Amount's)."""
        if self.dec:
            return self
        return Quantity(True, self.amount, self.exp, self.format, self.text)

    def add(self, other: Quantity) -> Quantity:
        """Quantity.Add: int64Amount while the sum fits, else an inf.Dec at the finer of the two scales."""
        if not self.dec and not other.dec:
            fmt = other.format if self.amount == 0 else self.format
            summed = int64_amount_add(self.amount, self.exp, other.amount, other.exp)
            if summed is not None:
                return Quantity(False, summed[0], summed[1], fmt)
        else:
            fmt = other.format if self.amount == 0 else self.format
        e = min(self.exp, other.exp)
        return Quantity(True, shift(self.amount, self.exp - e) + shift(other.amount, other.exp - e), e, fmt)

    def round_up(self, scale: int) -> Quantity:
        """Quantity.RoundUp(scale): at most `scale`'s precision, rounded away from zero.

        The API server applies RoundUp(MILLI) to every ResourceList entry when it
        defaults an object (SetDefaults_ResourceList): pod requests, limits and
        overhead, node capacity and allocatable, PVC requests, PV capacity.
        """
        if self.dec:
            k = self.exp - scale
            amount = shift(self.amount, k) if k >= 0 else div_away_from_zero(self.amount, -k)
            return Quantity(True, amount, scale, self.format)
        if self.exp >= scale:
            return self
        return Quantity(False, div_away_from_zero(self.amount, scale - self.exp), scale, self.format)

    # ------------------------------------------------------------ printing

    def string(self) -> str:
        """Quantity.String(): the kept input when canonical, else the canonical form."""
        if self.text:
            return self.text
        if self.amount == 0:
            return "0"
        fmt = self.format
        whole = 0
        if fmt == BINARY_SI:
            if abs(self.exact) < 1024:
                fmt = DECIMAL_SI
            else:
                whole, exact = self._as_whole()
                if not exact:
                    fmt = DECIMAL_SI
        elif fmt != DECIMAL_SI:
            fmt = DECIMAL_EXPONENT
        if fmt == BINARY_SI:
            base, times = strip_factors(whole, 1024)
            return f"{base}{_BINARY_SUFFIX.get(times, '')}"
        digits = str(abs(self.amount))
        stripped = digits.rstrip("0")
        exponent = self.exp + len(digits) - len(stripped)
        pad = exponent % 3  # to a multiple of 3 by moving digits out of the exponent
        mantissa = ("-" if self.amount < 0 else "") + stripped + "0" * pad
        exponent -= pad
        if fmt == DECIMAL_SI:
            return mantissa + _DECIMAL_SUFFIX.get(exponent, "")
        return mantissa if exponent == 0 else f"{mantissa}e{exponent}"

    def _as_whole(self) -> tuple[int, bool]:
        """AsScale(0): the value rounded away from zero to an integer, and whether that was exact."""
        if self.exp >= 0:
            return shift(self.amount, self.exp), True
        whole = div_away_from_zero(self.amount, -self.exp)
        return whole, shift(whole, -self.exp) == self.amount
