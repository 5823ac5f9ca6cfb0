"""Go's fmt: how %v prints a float64.

%v uses the shortest digits that read back to the same float, like Python's
repr(), but switches to an exponent only below 1e-4 or from 1e21 on, writes
at least two exponent digits, and spells infinities and NaN its own way.
"""

from __future__ import annotations

import math
from decimal import Decimal


def go_format_float_v(f: float) -> str:
    """fmt's %v for a float64 (%g with the shortest precision)."""
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if math.isnan(f):
        return "NaN"
    d = Decimal(repr(f))
    sign, dig, exp = d.as_tuple()
    assert isinstance(exp, int)  # a finite number's (infinities and NaN returned above)
    ds = "".join(str(x) for x in dig).rstrip("0") or "0"
    e = exp + len(dig) - 1
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    if e < -4 or e >= 21:
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return ("-" if sign else "") + mant + "e" + ("-" if e < 0 else "+") + f"{abs(e):02d}"
    s = format(d, "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s
