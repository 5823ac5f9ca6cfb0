"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource).

A quantity is kept as an exact Fraction; the scheduler only ever reads it
through `value()` (rounded up to an integer, as Quantity.Value does) and
`milli_value()` (thousandths, rounded up, as Quantity.MilliValue does).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

from kubesched.api.strconv import parse_int64

# parseQuantityString's scanner: sign, digits (leading zeros apart), an optional
# fraction, then suffix letters, an optional sign and digits. Go accepts an empty
# number ("k" or "." is zero) and leaves the suffix to be interpreted afterwards.
_SCAN_RE = re.compile(
    r"(?P<sign>[+-]?)(?P<zeros>0*)(?P<num>[0-9]*)(?:\.(?P<denom>[0-9]*))?"
    r"(?P<suffix>[eEinumkKMGTP]*[+-]?[0-9]*)"
)

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

QUANTITY_FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
QUANTITY_NUMERIC_ERROR = "unable to parse numeric part of quantity"
QUANTITY_SUFFIX_ERROR = "unable to parse quantity's suffix"

_NANO = Fraction(1, 10**9)
_MAX_INT64 = (1 << 63) - 1
# Go keeps any decimal exponent that fits int32, but past int64 its Value() and
# MilliValue() overflow anyway; magnitudes beyond 10**_MAX_DIGITS are held at
# that bound so a quantity like "1e2000000000" stays cheap to parse and compare.
_MAX_DIGITS = 1000


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def _interpret_suffix(suffix: str) -> tuple[int, int]:
    """suffixer.interpret: (base, exponent); an "e<int64>" exponent is truncated to int32 as Go does."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix]
    if suffix in _BINARY:
        return 2, _BINARY[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        try:
            parsed = parse_int64(suffix[1:])
        except ValueError:
            raise QuantityError(QUANTITY_SUFFIX_ERROR) from None
        return 10, (parsed + (1 << 31)) % (1 << 32) - (1 << 31)
    raise QuantityError(QUANTITY_SUFFIX_ERROR)


def _takes_fast_path(base: int, exponent: int, num: str, denom: str) -> bool:
    """Whether ParseQuantity builds an int64Amount, which needs no digits (so "k" is zero)."""
    if base == 10:
        return 18 - len(num) - len(denom) >= 0 and exponent - len(denom) >= -9
    if exponent < 0 or denom:
        return False
    if 15 - len(num) - exponent * 3 // 10 - 1 < 0:
        return False
    return int(num) << exponent <= _MAX_INT64


@lru_cache(maxsize=4096)
def _parse_str(text: str) -> Fraction:
    """ParseQuantity: the exact value rounded up (away from zero) to a whole nano.

    BinarySI values are capped at 2^63-1 in magnitude, as upstream caps them.
    """
    if not text:
        raise QuantityError(QUANTITY_FORMAT_ERROR)
    m = _SCAN_RE.fullmatch(text)
    if m is None:
        raise QuantityError(QUANTITY_FORMAT_ERROR)
    num, denom = m["num"] or "0", m["denom"] or ""
    base, exponent = _interpret_suffix(m["suffix"])
    if not (m["zeros"] or m["num"] or denom) and not _takes_fast_path(base, exponent, num, denom):
        # The slow path hands the number to inf.Dec, which needs at least one digit.
        raise QuantityError(QUANTITY_NUMERIC_ERROR)
    digits = (num + denom).lstrip("0")
    if not digits:
        return Fraction(0)
    # |value| = int(digits) * 10**k (* 2**exponent for BinarySI).
    k = (exponent if base == 10 else 0) - len(denom)
    stripped = digits.rstrip("0")
    k += len(digits) - len(stripped)
    magnitude_digits = len(stripped) + k
    neg = m["sign"] == "-"
    if magnitude_digits < -40:
        amount = _NANO  # far below a nano (even times 2**60): rounded up to 1n
    elif base == 2 and magnitude_digits > 20:
        amount = Fraction(_MAX_INT64)
    elif magnitude_digits > _MAX_DIGITS:
        amount = Fraction(10**_MAX_DIGITS)
    else:
        # int() refuses over 4300 digits; Decimal converts any length exactly.
        amount = Fraction(int(Decimal(stripped))) * Fraction(10) ** k
        if base == 2:
            amount = min(amount * (1 << exponent), Fraction(_MAX_INT64))
        amount = Fraction(math.ceil(amount / _NANO)) * _NANO
    return -amount if neg else amount


def parse_quantity(raw: object) -> Fraction:
    """Parse a quantity given as YAML gives it: a string, an int or a float."""
    if isinstance(raw, bool):
        raise QuantityError(QUANTITY_FORMAT_ERROR)
    if isinstance(raw, int):
        return Fraction(raw)
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise QuantityError(QUANTITY_FORMAT_ERROR)
        return _parse_str(repr(raw))
    if isinstance(raw, str):
        # Quantity.UnmarshalJSON trims surrounding space before ParseQuantity.
        return _parse_str(raw.strip())
    raise QuantityError(QUANTITY_FORMAT_ERROR)


def value(q: Fraction) -> int:
    """Quantity.Value(): the integer value, rounded up."""
    return math.ceil(q)


def milli_value(q: Fraction) -> int:
    """Quantity.MilliValue(): thousandths, rounded up."""
    return math.ceil(q * 1000)


def scheduler_amount(resource: str, q: Fraction) -> int:
    """The integer the scheduler keeps for a resource: millicores for cpu, Value() otherwise."""
    return milli_value(q) if resource == "cpu" else value(q)


def format_quantity(amount: int, resource: str) -> str:
    """A short human form of a scheduler amount (for tables and explanations)."""
    if resource == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, mult in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount and amount % mult == 0:
                return f"{amount // mult}{suffix}"
    return str(amount)


def quantity_text(q: Fraction) -> str:
    """An exact quantity string for a value the API server computed (e.g. a defaulted sum).

    It reads back to the same value; it is not Go's canonical form ("2000", not "2k").
    """
    if q.denominator == 1:
        return str(q.numerator)
    for suffix, scale in (("m", 10**3), ("u", 10**6), ("n", 10**9)):
        v = q * scale
        if v.denominator == 1:
            return f"{v.numerator}{suffix}"
    return f"{math.ceil(q * 10**9)}n"
