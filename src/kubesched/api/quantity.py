"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource).

A quantity is kept as an exact Fraction; the scheduler only ever reads it
through `value()` (rounded up to an integer, as Quantity.Value does) and
`milli_value()` (thousandths, rounded up, as Quantity.MilliValue does).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_QUANTITY_RE = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}

QUANTITY_FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@lru_cache(maxsize=4096)
def _parse_str(text: str) -> Fraction:
    m = _QUANTITY_RE.match(text.strip())
    if m is None:
        raise QuantityError(QUANTITY_FORMAT_ERROR)
    num = Fraction(m.group("num"))
    suffix = m.group("suffix") or ""
    if suffix in _BINARY:
        return num * _BINARY[suffix]
    if suffix in _DECIMAL:
        return num * _DECIMAL[suffix]
    exp = int(suffix[1:])
    return num * Fraction(10) ** exp


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
        return _parse_str(raw)
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
