"""Go formatting rules that leak into kube-scheduler's user-visible texts.

Error messages and the encoded configuration are compared byte for byte with
what Go prints, so quoting (`%q`), `encoding/json` output, float literals and
`time.Duration` strings are reproduced here exactly.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

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

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(s: str) -> str:
    """strconv.Quote / fmt's %q for a string."""
    out = ['"']
    for ch in s:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch == " " or (ch.isprintable() and ord(ch) != 0x7F):
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def time_quote(s: str) -> str:
    """The time package's own quoting (used in ParseDuration errors)."""
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


# ---------------------------------------------------------------- numbers


def go_float_literal(f: float, bits: int = 64) -> str:
    """The literal encoding/json writes for a float (shortest repr, 'e' only for tiny/huge)."""
    if bits == 32:
        import numpy as np

        digits = str(np.float32(f))  # shortest representation of the float32 value
    else:
        digits = repr(f)
    a = abs(f)
    d = Decimal(digits)
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    if not (a < 1e-6 or a >= 1e21):
        s = format(d, "f")
        if "." in s:
            s = s.rstrip("0").rstrip(".")
        return s
    sign, dig, exp = d.as_tuple()
    ds = "".join(str(x) for x in dig).rstrip("0") or "0"
    e = exp + len(dig) - 1
    mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
    # Go writes at least two exponent digits, then encoding/json trims "e-07" to "e-7".
    exp_s = str(abs(e)) if e < 0 else f"{e:02d}"
    return ("-" if sign else "") + mant + "e" + ("-" if e < 0 else "+") + exp_s


def go_format_float_v(f: float) -> str:
    """fmt's %v for a float64 (%g with shortest precision)."""
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if math.isnan(f):
        return "NaN"
    d = Decimal(repr(f))
    sign, dig, exp = d.as_tuple()
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


# ---------------------------------------------------------------- encoding/json


def _json_string(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or ch in "<>&" or o in (0x2028, 0x2029):
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_json(v: Any) -> str:
    """json.Marshal of a JSON-like Python value (dict order is kept, as for Go structs)."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_float_literal(v)
    if isinstance(v, str):
        return _json_string(v)
    if isinstance(v, dict):
        return "{" + ",".join(_json_string(str(k)) + ":" + go_json(x) for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(go_json(x) for x in v) + "]"
    raise TypeError(f"cannot JSON-encode {type(v).__name__}")


# ---------------------------------------------------------------- time.Duration


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
    invalid = DurationError("time: invalid duration " + time_quote(orig))
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
            raise DurationError("time: missing unit in duration " + time_quote(orig))
        u = s[:i]
        s = s[i:]
        unit = _NS_PER.get(u)
        if unit is None:
            raise DurationError("time: unknown unit " + time_quote(u) + " in duration " + time_quote(orig))
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


def innermost_open_bracket(doc: str) -> str:
    """The innermost JSON bracket ('{' or '[') still open at the end of `doc`, outside strings ('' if none).

    encoding/json names it in syntax errors ("after object key:value pair" / "after array element").
    """
    stack: list[str] = []
    in_str = esc = False
    for ch in doc:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else ""
