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
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

from kubesched.api.int64 import MAX_INT64, MIN_INT64, wrap
from kubesched.gocompat.strconv import parse_int64

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

# Scale exponents of Value() and MilliValue().
UNIT = 0
MILLI = -3

# parseQuantityString's scanner: sign, digits (leading zeros apart), an optional
# fraction, then suffix letters, an optional sign and digits. Go accepts an empty
# number ("k" or "." is zero) and leaves the suffix to be interpreted afterwards.
_SCAN_RE = re.compile(
    r"(?P<sign>[+-]?)(?P<zeros>0*)(?P<num>[0-9]*)(?:\.(?P<denom>[0-9]*))?"
    r"(?P<suffix>[eEinumkKMGTP]*[+-]?[0-9]*)"
)

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# Canonical suffixes: a decimal exponent outside the table prints no suffix at all (Go's own quirk:
# 10**21 prints as "1"), a power of 1024 past Ei likewise.
_DECIMAL_SUFFIX = {e: s for s, e in _DECIMAL.items()}
_BINARY_SUFFIX = {e // 10: s for s, e in _BINARY.items()}

QUANTITY_FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
QUANTITY_NUMERIC_ERROR = "unable to parse numeric part of quantity"
QUANTITY_SUFFIX_ERROR = "unable to parse quantity's suffix"

# maxInt64Factors: the most decimal digits ParseQuantity keeps on the int64 fast path.
_FAST_DIGITS = 18
# One step of positiveScaleInt64 multiplies by 10**k for these k; other k loop by 10 and give up with 0.
_ONE_STEP_SCALES = frozenset({1, 2, 3, 6, 9})
# Go keeps any int32 exponent, but an inf.Dec past 10**_MAX_DIGITS would take Go itself minutes to
# build (and every int64 view of it has long overflowed): such magnitudes are held at that bound.
_MAX_DIGITS = 1000


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


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
            elif _digits(a) + e > _MAX_DIGITS:
                self._exact = Fraction(10**_MAX_DIGITS if a > 0 else -(10**_MAX_DIGITS))
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
            return _dec_scaled_value(self.amount, self.exp, scale)
        if self.exp < scale:
            return _div_away_from_zero(self.amount, scale - self.exp)
        # AsScaledInt64 ignores positiveScaleInt64's overflow flag: its result (wrapped or 0) is returned.
        return _positive_scale(self.amount, self.exp - scale)[0]

    def cmp(self, other: Quantity) -> int:
        """Quantity.Cmp: -1, 0 or 1 by exact value (the form conversion is the caller's, see `as_dec`)."""
        a, b = self.sign(), other.sign()
        if a != b or a == 0:
            return (a > b) - (a < b)
        da, db = _digits(self.amount) + self.exp, _digits(other.amount) + other.exp
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
            summed = _int64_amount_add(self.amount, self.exp, other.amount, other.exp)
            if summed is not None:
                return Quantity(False, summed[0], summed[1], fmt)
        else:
            fmt = other.format if self.amount == 0 else self.format
        e = min(self.exp, other.exp)
        return Quantity(True, _shift(self.amount, self.exp - e) + _shift(other.amount, other.exp - e), e, fmt)

    def round_up(self, scale: int) -> Quantity:
        """Quantity.RoundUp(scale): at most `scale`'s precision, rounded away from zero.

        The API server applies RoundUp(MILLI) to every ResourceList entry when it
        defaults an object (SetDefaults_ResourceList): pod requests, limits and
        overhead, node capacity and allocatable, PVC requests, PV capacity.
        """
        if self.dec:
            k = self.exp - scale
            amount = _shift(self.amount, k) if k >= 0 else _div_away_from_zero(self.amount, -k)
            return Quantity(True, amount, scale, self.format)
        if self.exp >= scale:
            return self
        return Quantity(False, _div_away_from_zero(self.amount, scale - self.exp), scale, self.format)

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
            mantissa, times = _strip_factors(whole, 1024)
            return f"{mantissa}{_BINARY_SUFFIX.get(times, '')}"
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
            return _shift(self.amount, self.exp), True
        whole = _div_away_from_zero(self.amount, -self.exp)
        return whole, _shift(whole, -self.exp) == self.amount


# ---------------------------------------------------------------- int64 scaling (math.go, scale_int.go)


def _digits(n: int) -> int:
    return len(str(abs(n))) if n else 0


def _shift(amount: int, k: int) -> int:
    """amount * 10**k for k >= 0 (magnitudes past 10**_MAX_DIGITS held there)."""
    if amount == 0 or k == 0:
        return amount
    if _digits(amount) + k > _MAX_DIGITS + 40:
        return 10 ** (_MAX_DIGITS + 40) if amount > 0 else -(10 ** (_MAX_DIGITS + 40))
    return amount * 10**k


def _div_away_from_zero(v: int, k: int) -> int:
    """negativeScaleInt64 / inf.RoundUp: v / 10**k rounded away from zero."""
    if v == 0 or k == 0:
        return v
    if k > _digits(v):
        return 1 if v > 0 else -1
    q, r = divmod(abs(v), 10**k)
    q += r != 0
    return q if v > 0 else -q


def _positive_scale(base: int, k: int) -> tuple[int, bool]:
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


def _int64_amount_add(a: int, a_exp: int, b: int, b_exp: int) -> tuple[int, int] | None:
    """int64Amount.Add: (value, scale) at the finer scale, or None when Go falls back to inf.Dec."""
    if b == 0:
        return a, a_exp
    if a == 0:
        return b, b_exp
    if a_exp > b_exp:
        a, ok = _positive_scale(a, a_exp - b_exp)
        exp = b_exp
    elif b_exp > a_exp:
        b, ok = _positive_scale(b, b_exp - a_exp)
        exp = a_exp
    else:
        ok, exp = True, a_exp
    if not ok:
        return None
    total = a + b
    if not MIN_INT64 <= total <= MAX_INT64:
        return None
    return total, exp


def _dec_scaled_value(unscaled: int, exp: int, scale: int) -> int:
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
    if dif > _digits(unscaled):
        return wrap((0 if unscaled > 0 else -1) + 1)
    q, r = divmod(unscaled, 10**dif)
    return wrap(q + (r != 0))


def _strip_factors(n: int, base: int) -> tuple[int, int]:
    """removeInt64Factors: n = result * base**times, on the magnitude."""
    m, times = abs(n), 0
    while m >= base and m % base == 0:
        m //= base
        times += 1
    return (m if n >= 0 else -m), times


# ---------------------------------------------------------------- parsing (ParseQuantity)


def _interpret_suffix(suffix: str) -> tuple[int, int, str]:
    """suffixer.interpret: (base, exponent, format); an "e<int64>" exponent is truncated to int32 as Go does."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], DECIMAL_SI
    if suffix in _BINARY:
        return 2, _BINARY[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        try:
            parsed = parse_int64(suffix[1:])
        except ValueError:
            raise QuantityError(QUANTITY_SUFFIX_ERROR) from None
        return 10, (parsed + (1 << 31)) % (1 << 32) - (1 << 31), DECIMAL_EXPONENT
    raise QuantityError(QUANTITY_SUFFIX_ERROR)


def _int_of(digits: str) -> int:
    # int() refuses over 4300 digits; Decimal converts any length exactly.
    return int(digits) if len(digits) <= 4000 else int(Decimal(digits))


@lru_cache(maxsize=4096)
def _parse_str(text: str) -> Quantity:
    """ParseQuantity(text)."""
    if not text:
        raise QuantityError(QUANTITY_FORMAT_ERROR)
    if text == "0":
        return Quantity(False, 0, 0, DECIMAL_SI, "0")
    m = _SCAN_RE.fullmatch(text)
    if m is None:
        raise QuantityError(QUANTITY_FORMAT_ERROR)
    num, denom = m["num"] or "0", m["denom"] or ""
    base, exponent, fmt = _interpret_suffix(m["suffix"])
    negative = m["sign"] == "-"

    # The int64 fast path: few enough digits, and not finer than a nano.
    if base == 10:
        mantissa, scale, precision = 1, exponent, _FAST_DIGITS - len(num) - len(denom)
    elif not denom:
        mantissa, scale, precision = 1 << exponent, 0, 15 - len(num) - exponent * 3 // 10 - 1
    else:
        mantissa, scale, precision = 1, 0, -1
    scale -= len(denom)
    if precision >= 0 and scale >= -9:
        shifted = num + denom
        v = int(shifted)
        result = v * mantissa
        if result <= MAX_INT64:
            if fmt == BINARY_SI:
                keep = exponent % 10 == 0 and v & 7 != 0
            else:
                keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
            return Quantity(False, -result if negative else result, scale, fmt, text if keep else "")

    # The inf.Dec path, which needs at least one digit.
    if not (m["zeros"] or m["num"] or denom):
        raise QuantityError(QUANTITY_NUMERIC_ERROR)
    digits = (num + denom).lstrip("0")
    exp = (exponent if base == 10 else 0) - len(denom)
    if not digits:
        return Quantity(True, 0, exp, fmt)  # zero is not rounded: its scale stays the parsed one
    # |value| = int(digits) * 10**exp (* 2**exponent for BinarySI), rounded up to whole nanos.
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    magnitude_digits = len(stripped) + exp
    if base == 2 and magnitude_digits > 20:
        amount, exp = MAX_INT64, 0  # far past the BinarySI cap
    elif magnitude_digits < -40:
        amount, exp = 1, -9  # far below a nano, even times 2**60: rounded up to 1n
    elif magnitude_digits > _MAX_DIGITS:
        amount, exp = 10 ** (_MAX_DIGITS + 9), -9
    else:
        n = _int_of(stripped) << (exponent if base == 2 else 0)
        amount = n * 10 ** (exp + 9) if exp >= -9 else -(-n // 10 ** (-9 - exp))
        exp = -9
        if base == 2 and amount > MAX_INT64 * 10**9:
            amount, exp = MAX_INT64, 0  # BinarySI is capped at 2^63-1 (an inf.Dec of scale 0)
    if fmt == BINARY_SI and exp == -9 and amount < 10**9:
        fmt = DECIMAL_SI  # a BinarySI value below 1 prints as DecimalSI
    return Quantity(True, -amount if negative else amount, exp, fmt)


def _go_json_float(x: float) -> str:
    """encoding/json's text for a float64: shortest digits, exponent form only outside [1e-6, 1e21)."""
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    r = repr(x)
    if 1e-6 <= abs(x) < 1e21:
        return format(Decimal(r).normalize(), "f")
    if len(r) >= 4 and r[-4:-1] == "e-0":
        r = r[:-2] + r[-1]  # json writes e-7, not e-07
    return r


def _json_text(raw: int | float) -> str:
    """The JSON number a YAML int or float becomes on Go's way to Quantity.UnmarshalJSON.

    go-yaml reads an integer past int64 as uint64 and one past uint64 as a
    float64 (so 18446744073709551617 arrives as 18446744073709552000).
    """
    if isinstance(raw, int):
        if MIN_INT64 <= raw < 1 << 64:
            return str(raw)
        try:
            raw = float(raw)
        except OverflowError:
            return str(raw)  # past float64 too: go-yaml keeps the text as a string
    if not math.isfinite(raw):
        raise QuantityError(QUANTITY_FORMAT_ERROR)
    return _go_json_float(raw)


def parse(raw: object) -> Quantity:
    """Parse a quantity given as YAML gives it (a string, an int or a float), as Go would.

    Raises QuantityError with upstream's message.
    """
    if isinstance(raw, str):
        # Quantity.UnmarshalJSON trims surrounding space before ParseQuantity.
        return _parse_str(raw.strip())
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise QuantityError(QUANTITY_FORMAT_ERROR)
    return _parse_str(_json_text(raw))


def parse_resource_quantity(raw: object) -> Quantity:
    """A ResourceList entry as the scheduler sees it: parsed, then rounded up to milli by API defaulting."""
    return parse(raw).round_up(MILLI)


def parse_quantity(raw: object) -> Fraction:
    """The exact value of a quantity (for comparisons; use `parse` for Go's int64 views)."""
    return parse(raw).exact


def canonical_text(raw: object, resource_list: bool = False) -> str:
    """Quantity.String() of the parsed quantity: what the API server stores and prints back.

    With `resource_list`, the entry is first rounded up to milli as API
    defaulting does to every ResourceList (node capacity "0.0000000001" is
    stored as "1m"; as an emptyDir sizeLimit it stays "1n").
    """
    q = parse(raw)
    return (q.round_up(MILLI) if resource_list else q).string()


def value(q: Quantity) -> int:
    """Quantity.Value()."""
    return q.value()


def milli_value(q: Quantity) -> int:
    """Quantity.MilliValue()."""
    return q.milli_value()


def scheduler_amount(resource: str, q: Quantity) -> int:
    """The int64 the scheduler keeps for a resource: MilliValue() for cpu, Value() otherwise."""
    return q.milli_value() if resource == "cpu" else q.value()


def format_quantity(amount: int, resource: str) -> str:
    """A short human form of a scheduler amount (for tables and explanations)."""
    if resource == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, mult in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount and amount % mult == 0:
                return f"{amount // mult}{suffix}"
    return str(amount)


def quantity_text(q: Quantity | Fraction) -> str:
    """A quantity string for a value the API server computed (e.g. a defaulted sum).

    A Quantity prints as Go stores it (its canonical form); a Fraction as an
    exact string that reads back to the same value ("2000", not "2k").
    """
    if isinstance(q, Quantity):
        return q.string()
    if q.denominator == 1:
        return str(q.numerator)
    for suffix, scale in (("m", 10**3), ("u", 10**6), ("n", 10**9)):
        v = q * scale
        if v.denominator == 1:
            return f"{v.numerator}{suffix}"
    return f"{math.ceil(q * 10**9)}n"


def shown(raw: object) -> str:
    """A quantity as the API server prints it in a validation message: the Quantity.String() of a
    ResourceList entry ("0.5" is "500m"); a Fraction (a sum the server computed) exactly."""
    if isinstance(raw, Fraction):
        return quantity_text(raw)
    try:
        return canonical_text(raw, resource_list=True)
    except QuantityError:
        return str(raw)
