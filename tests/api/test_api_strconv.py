"""strconv.ParseInt(s, 10, 64) as Go applies it (gocompat/strconv.py)."""

from __future__ import annotations

import pytest

from kubesched.gocompat.strconv import parse_int64


@pytest.mark.parametrize(
    ("s", "want"),
    [
        ("0", 0),
        ("42", 42),
        ("+7", 7),
        ("-7", -7),
        ("007", 7),
        ("9223372036854775807", (1 << 63) - 1),
        ("-9223372036854775808", -(1 << 63)),
        ("-0000000000000000000000009", -9),
    ],
)
def test_accepted(s: str, want: int) -> None:
    assert parse_int64(s) == want


@pytest.mark.parametrize("s", ["", "+", "-", "1_0", " 1", "1 ", "0x10", "1.0", "1e3", "١٢", "--1"])
def test_invalid_syntax(s: str) -> None:
    with pytest.raises(ValueError, match=r"^invalid syntax$"):
        parse_int64(s)


@pytest.mark.parametrize("s", ["9223372036854775808", "-9223372036854775809", "9" * 5000])
def test_out_of_range(s: str) -> None:
    with pytest.raises(ValueError, match=r"^value out of range$"):
        parse_int64(s)
