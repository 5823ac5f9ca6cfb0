"""Go's strconv: quoting a string (Quote, fmt's %q) and parsing an int64 (ParseInt).

Both differ from Python's repr() and int() in ways that show in messages:
Go escapes a different set of characters with different escapes, and
ParseInt refuses inputs (underscores, spaces, non-ASCII digits, huge
magnitudes) that int() takes.
"""

from __future__ import annotations

import re

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(s: str) -> str:
    """strconv.Quote / fmt's %q of a string.

    Printable characters stay as they are (U+FFFD included, as Go keeps a valid
    one); the others get Go's escapes: the C-style ones, then \\x, \\u or \\U by size.
    """
    out = ['"']
    for ch in s:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():  # space is printable, DEL (0x7f) is not, as in Go
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def parse_int64(s: str) -> int:
    """strconv.ParseInt(s, 10, 64); the ValueError carries strconv's ErrSyntax or ErrRange text.

    Label selectors (Gt/Lt), quantity exponents and config values must refuse
    what Go refuses: only an optional sign and ASCII digits ('_' needs base 0 in Go).
    """
    if not _DECIMAL.fullmatch(s):
        raise ValueError("invalid syntax")
    # Over 19 significant digits is out of range; checking first keeps int() off huge inputs.
    if len(s.lstrip("+-").lstrip("0")) > 19:
        raise ValueError("value out of range")
    n = int(s)
    if not _INT64_MIN <= n <= _INT64_MAX:
        raise ValueError("value out of range")
    return n
