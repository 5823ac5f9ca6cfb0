"""Go's encoding/json: the text json.Marshal writes, and a hint its syntax errors need.

Field errors print many bad values through encoding/json and the encoded
configuration is compared with Go's, so strings must be escaped as Go escapes
them (<, >, & and U+2028/U+2029 as \\u, unlike Python's json) and floats must
be written as Go writes them.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any


def go_float_literal(f: float, bits: int = 64) -> str:
    """The literal encoding/json writes for a float (shortest digits, an exponent only for tiny or huge ones)."""
    if bits == 32:
        import numpy as np

        digits = str(np.float32(f))  # the shortest digits of the float32 value
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
    assert isinstance(exp, int), "encoding/json has no literal for infinities and NaN"
    ds = "".join(str(x) for x in dig).rstrip("0") or "0"
    e = exp + len(dig) - 1
    mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
    # An exponent has at least two digits ("e+21"), except that a negative one keeps only its own ("e-7").
    exp_s = str(abs(e)) if e < 0 else f"{e:02d}"
    return ("-" if sign else "") + mant + "e" + ("-" if e < 0 else "+") + exp_s


def _json_string(s: str) -> str:
    """A JSON string as encoding/json escapes it (HTML-safe: <, > and & as \\u escapes)."""
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


def innermost_open_bracket(doc: str) -> str:
    """The innermost JSON bracket ('{' or '[') still open at the end of `doc`, outside strings ('' if none).

    encoding/json's syntax errors depend on it ("after object key:value pair" or
    "after array element"), and Python's parser does not say.
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
