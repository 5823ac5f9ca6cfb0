"""Go's strconv integer parsing, for the rules whose outcome depends on what it rejects.

Python's int() is more lenient than Go: it takes '_' separators, surrounding
whitespace, non-ASCII digits and any magnitude. Label selectors (Gt/Lt),
quantity exponents and config values must refuse all of those as Go does.
"""

from __future__ import annotations

import re

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_DECIMAL = re.compile(r"[+-]?[0-9]+")


def parse_int64(s: str) -> int:
    """strconv.ParseInt(s, 10, 64); the ValueError carries strconv's ErrSyntax or ErrRange text.

    Only an optional sign and ASCII digits are accepted ('_' needs base 0 in Go).
    """
    if not _DECIMAL.fullmatch(s):
        raise ValueError("invalid syntax")
    # Over 19 significant digits is out of range; checking first keeps int() off huge inputs.
    if len(s.lstrip("+-").lstrip("0")) > 19:
        raise ValueError("value out of range")
    n = int(s)
    if not INT64_MIN <= n <= INT64_MAX:
        raise ValueError("value out of range")
    return n
