"""Go's time.Duration: its String() and time.ParseDuration, messages included.

Durations in the configuration are written and read as Go writes and reads
them ("1m30s", "1.5h", "300ms"), and a bad one is refused with time's own
error text, which quotes the input in the time package's way (not strconv's).
"""

from __future__ import annotations

_NS_PER = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # micro sign
    "\u03bcs": 1_000,  # Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}


def _time_quote(s: str) -> str:
    """The time package's own quoting in ParseDuration errors: each byte below space or beyond ASCII as \\xNN."""
    out = ['"']
    for ch in s:
        if ord(ch) >= 0x80 or ch < " ":
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        else:
            if ch in '"\\':
                out.append("\\")
            out.append(ch)
    out.append('"')
    return "".join(out)


def _frac(v: int, prec: int) -> tuple[str, int]:
    """fmtFrac: the '.ddd' part of v/10**prec without trailing zeros, and the integer rest."""
    digits = []
    printed = False
    for _ in range(prec):
        digit = v % 10
        printed = printed or digit != 0
        if printed:
            digits.append(str(digit))
        v //= 10
    s = "." + "".join(reversed(digits)) if printed else ""
    return s, v


def format_duration(ns: int) -> str:
    """time.Duration.String() for a duration in nanoseconds."""
    neg = ns < 0
    u = -ns if neg else ns
    if u < 1_000_000_000:
        if u == 0:
            return "0s"
        if u < 1_000:
            unit, prec = "ns", 0
        elif u < 1_000_000:
            unit, prec = "\u00b5s", 3
        else:
            unit, prec = "ms", 6
        frac, u = _frac(u, prec)
        s = f"{u}{frac}{unit}"
    else:
        frac, u = _frac(u, 9)
        s = f"{u % 60}{frac}s"
        u //= 60
        if u > 0:
            s = f"{u % 60}m" + s
            u //= 60
            if u > 0:
                s = f"{u}h" + s
    return "-" + s if neg else s


def seconds_to_ns(seconds: float) -> int:
    """A float-seconds duration (the internal form) as the int64 nanoseconds Go holds."""
    return round(seconds * 1_000_000_000)


def format_seconds(seconds: float) -> str:
    """A float-seconds duration (the internal form) as Go prints it."""
    return format_duration(seconds_to_ns(seconds))


class DurationError(ValueError):
    """time.ParseDuration's error; str() is Go's text."""


def parse_duration(orig: str) -> int:
    """time.ParseDuration; returns nanoseconds or raises DurationError with Go's message."""
    s = orig
    d = 0
    neg = False
    invalid = DurationError("time: invalid duration " + _time_quote(orig))
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if s == "":
        raise invalid
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise invalid
        i = 0
        v = 0
        while i < len(s) and "0" <= s[i] <= "9":
            v = v * 10 + int(s[i])
            if v >= 1 << 63:
                raise invalid
            i += 1
        pre = i > 0
        s = s[i:]
        f, scale, post = 0, 1.0, False
        if s and s[0] == ".":
            s = s[1:]
            i = 0
            overflow = False
            while i < len(s) and "0" <= s[i] <= "9":
                if not overflow:
                    if f > ((1 << 63) - 1) // 10:
                        overflow = True
                    else:
                        nf = f * 10 + int(s[i])
                        if nf >= 1 << 63:
                            overflow = True
                        else:
                            f = nf
                            scale *= 10
                i += 1
            post = i > 0
            s = s[i:]
        if not pre and not post:
            raise invalid
        i = 0
        while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
            i += 1
        if i == 0:
            raise DurationError("time: missing unit in duration " + _time_quote(orig))
        u = s[:i]
        s = s[i:]
        unit = _NS_PER.get(u)
        if unit is None:
            raise DurationError("time: unknown unit " + _time_quote(u) + " in duration " + _time_quote(orig))
        if v > (1 << 63) // unit:
            raise invalid
        v *= unit
        if f > 0:
            v += int(float(f) * (float(unit) / scale))
            if v > 1 << 63:
                raise invalid
        d += v
        if d > 1 << 63:
            raise invalid
    if neg:
        return -d
    if d > (1 << 63) - 1:
        raise invalid
    return d
