"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource): parsing them as Go does
(ParseQuantity, and the JSON number a YAML int or float becomes) and the views callers use.

The Quantity type, in the two forms Go keeps a parsed quantity in, is in quantity_form.py; the
int64 scaling it follows in quantity_math.py.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

from kubesched.api.int64 import MAX_INT64, MIN_INT64
from kubesched.api.quantity_form import (
    BINARY_EXPONENTS,
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_EXPONENTS,
    DECIMAL_SI,
    MILLI,
    UNIT,
    Quantity,
)
from kubesched.api.quantity_math import MAX_DIGITS
from kubesched.gocompat.strconv import parse_int64

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "MILLI",
    "QUANTITY_FORMAT_ERROR",
    "QUANTITY_NUMERIC_ERROR",
    "QUANTITY_SUFFIX_ERROR",
    "UNIT",
    "Quantity",
    "QuantityError",
    "canonical_text",
    "format_quantity",
    "milli_value",
    "parse",
    "parse_quantity",
    "parse_resource_quantity",
    "quantity_text",
    "scheduler_amount",
    "shown",
    "value",
]

# parseQuantityString's scanner: sign, digits (leading zeros apart), an optional
# fraction, then suffix letters, an optional sign and digits. Go accepts an empty
# number ("k" or "." is zero) and leaves the suffix to be interpreted afterwards.
_SCAN_RE = re.compile(
    r"(?P<sign>[+-]?)(?P<zeros>0*)(?P<num>[0-9]*)(?:\.(?P<denom>[0-9]*))?"
    r"(?P<suffix>[eEinumkKMGTP]*[+-]?[0-9]*)"
)

QUANTITY_FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
QUANTITY_NUMERIC_ERROR = "unable to parse numeric part of quantity"
QUANTITY_SUFFIX_ERROR = "unable to parse quantity's suffix"

# maxInt64Factors: the most decimal digits ParseQuantity keeps on the int64 fast path.
_FAST_DIGITS = 18


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


# ---------------------------------------------------------------- parsing (ParseQuantity)


def _interpret_suffix(suffix: str) -> tuple[int, int, str]:
    """suffixer.interpret: (base, exponent, format); an "e<int64>" exponent is truncated to int32 as Go does."""
    if suffix in DECIMAL_EXPONENTS:
        return 10, DECIMAL_EXPONENTS[suffix], DECIMAL_SI
    if suffix in BINARY_EXPONENTS:
        return 2, BINARY_EXPONENTS[suffix], BINARY_SI
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
    elif magnitude_digits > MAX_DIGITS:
        amount, exp = 10 ** (MAX_DIGITS + 9), -9
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
