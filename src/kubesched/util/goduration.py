"""Go's time.Duration text form ("1m30s", "500ms"), as upstream prints and parses durations."""

from __future__ import annotations

import re
from decimal import Decimal

_UNITS = {
    "ns": Decimal("1e-9"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "ms": Decimal("1e-3"),
    "s": Decimal(1),
    "m": Decimal(60),
    "h": Decimal(3600),
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """time.ParseDuration: "1h2m3.5s" -> seconds. Raises ValueError on bad input."""
    s = text.strip()
    if s in ("0", "+0", "-0"):
        return 0.0
    sign = -1 if s.startswith("-") else 1
    s = s.lstrip("+-")
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    total = Decimal(0)
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ValueError(f'time: invalid duration "{text}"')
        total += Decimal(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return float(sign * total)


def format_go_duration(seconds: float) -> str:
    """time.Duration.String(): "0s", "500ms", "10s", "1m30s", "1h0m0s"."""
    ns = round(Decimal(str(seconds)) * Decimal(10**9))
    if ns == 0:
        return "0s"
    neg = ns < 0
    ns = abs(ns)
    if ns < 10**9:
        if ns < 10**3:
            out = f"{ns}ns"
        elif ns < 10**6:
            out = _frac(ns, 10**3) + "µs"
        else:
            out = _frac(ns, 10**6) + "ms"
    else:
        h, rem = divmod(ns, 3600 * 10**9)
        m, rem = divmod(rem, 60 * 10**9)
        sec = _frac(rem, 10**9) + "s"
        if h:
            out = f"{h}h{m}m{sec}"
        elif m:
            out = f"{m}m{sec}"
        else:
            out = sec
    return "-" + out if neg else out


def _frac(value: int, unit: int) -> str:
    whole, rem = divmod(value, unit)
    if not rem:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{str(rem).rjust(digits, '0').rstrip('0')}"
