"""Quantity parsing (k8s.io/apimachinery/pkg/api/resource): values, rounding, invalid strings.

Cases come from upstream's quantity_test.go (TestQuantityParse tables) and
Quantity.Value()/MilliValue(), which round up to the integer / thousandth (away
from zero for an int64Amount, as the reference scheduler does with a request
of "-1.5"). Past int64, see test_api_quantity_go.py.
"""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction

import pytest

from kubesched.api.quantity import (
    QuantityError,
    format_quantity,
    milli_value,
    parse,
    parse_quantity,
    scheduler_amount,
    value,
)

Ki, Mi, Gi, Ti, Pi, Ei = (2**10, 2**20, 2**30, 2**40, 2**50, 2**60)
QUANTITY_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        ("0", Fraction(0)),
        ("100m", Fraction(1, 10)),
        ("1.5Gi", Fraction(3 * Gi, 2)),
        ("2e3", Fraction(2000)),
        ("1Ki", Fraction(Ki)),
        (".5", Fraction(1, 2)),
        ("1E3", Fraction(1000)),  # an exponent, not exa: E followed by digits
        ("1e3", Fraction(1000)),
        ("1E", Fraction(10**18)),  # exa
        ("1Ei", Fraction(Ei)),
        ("1Pi", Fraction(Pi)),
        ("1Ti", Fraction(Ti)),
        ("1Mi", Fraction(Mi)),
        ("1n", Fraction(1, 10**9)),
        ("1u", Fraction(1, 10**6)),
        ("1k", Fraction(1000)),
        ("1M", Fraction(10**6)),
        ("1G", Fraction(10**9)),
        ("1T", Fraction(10**12)),
        ("1P", Fraction(10**15)),
        ("1e-3", Fraction(1, 1000)),
        ("1E+3", Fraction(1000)),
        ("1.", Fraction(1)),
        ("1.G", Fraction(10**9)),
        (".001", Fraction(1, 1000)),
        (".0001k", Fraction(1, 10)),
        ("+1", Fraction(1)),
        ("-1", Fraction(-1)),
        ("0.5Mi", Fraction(Mi, 2)),
        ("100.035Ki", Fraction(100035 * Ki, 1000)),
        ("007", Fraction(7)),
    ],
)
def test_parse_exact_value(text: str, exact: Fraction) -> None:
    assert parse_quantity(text) == exact


@pytest.mark.parametrize(
    ("text", "val", "milli"),
    [
        ("100m", 1, 100),  # Value() rounds 0.1 up to 1
        ("1", 1, 1000),
        ("1.5", 2, 1500),
        ("1001m", 2, 1001),
        ("0.1m", 1, 1),  # MilliValue() rounds 0.1m up to 1m
        ("1.5Gi", 1610612736, 1610612736000),
        ("0.9n", 1, 1),
        ("1e-10", 1, 1),  # below a nano: rounded up, never to zero
        ("0", 0, 0),
        ("-1.5", -2, -1500),  # an int64Amount rounds away from zero (oracle: extract-mem-neg1.5)
        ("-100m", -1, -100),  # (oracle: extract-mem-neg100m)
        ("2e3", 2000, 2000000),
        ("0.000000000001Ki", 1, 1),
    ],
)
def test_value_and_milli_value_round_up(text: str, val: int, milli: int) -> None:
    q = parse(text)
    assert value(q) == val
    assert milli_value(q) == milli


@pytest.mark.parametrize(
    "text",
    [
        # upstream's invalid table
        "1.1.M",
        "1+1.0M",
        "0.1mi",
        "0.1am",
        "aoeu",
        ".5i",
        "1i",
        "-3.01i",
        "-3.01e-",
        # unknown or wrong-case suffixes
        "1K",
        "1ki",
        "1KiB",
        "1Zi",
        "1e",
        "1e1.5",
        "1 Gi",
        "",
        "1,5",
        "0x10",
        "１",
        "Inf",
        "NaN",
    ],
)
def test_invalid_strings_rejected(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_surrounding_whitespace_is_trimmed_as_unmarshal_json_does() -> None:
    # Quantity.UnmarshalJSON calls ParseQuantity(strings.TrimSpace(...)).
    assert parse_quantity(" 1Gi ") == Gi


@pytest.mark.parametrize(
    ("raw", "exact"),
    [(3, Fraction(3)), (0, Fraction(0)), (1.5, Fraction(3, 2)), (0.1, Fraction(1, 10)), (1e20, Fraction(10**20))],
)
def test_yaml_numbers(raw: object, exact: Fraction) -> None:
    assert parse_quantity(raw) == exact


@pytest.mark.parametrize("raw", [True, None, [1], float("inf"), float("nan")])
def test_non_quantity_yaml_values_rejected(raw: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(raw)


def test_error_text_is_upstreams_format_error() -> None:
    with pytest.raises(QuantityError) as err:
        parse_quantity("aoeu")
    assert str(err.value) == (
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


def test_unknown_suffix_error_text() -> None:
    with pytest.raises(QuantityError, match="unable to parse quantity's suffix"):
        parse_quantity("1K")


def test_huge_exponent_is_rejected_promptly() -> None:
    code = (
        "from kubesched.api.quantity import parse_quantity, QuantityError\n"
        "try:\n    parse_quantity('1e9223372036854775808')\n"
        "except QuantityError:\n    print('rejected')\n"
    )
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=4)
    except subprocess.TimeoutExpired:
        pytest.fail("parse_quantity did not return within 4 s")
    assert out.stdout.strip() == "rejected"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1e9223372036854775808", "unable to parse quantity's suffix"),  # exponent beyond int64
        ("1ee3", "unable to parse quantity's suffix"),  # strconv.ParseInt("e3") fails
        ("1-3", "unable to parse quantity's suffix"),
        ("e-20", "unable to parse numeric part of quantity"),  # inf.Dec path needs a digit
        ("Ei", "unable to parse numeric part of quantity"),
        ("1.2.3", QUANTITY_FORMAT),
    ],
)
def test_error_kinds(text: str, message: str) -> None:
    with pytest.raises(QuantityError) as err:
        parse_quantity(text)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        ("1e-9999999", Fraction(1, 10**9)),  # rounded up to one nano, without computing 10**9999999
        ("-1e-9999999", Fraction(-1, 10**9)),
        ("1e4294967296", Fraction(1)),  # the exponent is truncated to int32: 2**32 -> 0
        ("1e2147483648", Fraction(1, 10**9)),  # -> -2**31: far below a nano
        ("k", Fraction(0)),  # an empty number is zero on the int64 fast path
        (".", Fraction(0)),
        ("Ti", Fraction(0)),
        ("8Ei", Fraction(2**63 - 1)),  # BinarySI is capped at 2^63-1
        ("-10Ei", Fraction(-(2**63 - 1))),
        ("0.1n", Fraction(1, 10**9)),
    ],
)
def test_go_edge_values(text: str, exact: Fraction) -> None:
    assert parse_quantity(text) == exact


def test_astronomic_exponent_parses_promptly() -> None:
    # Go keeps any int32 exponent; here the magnitude is held at 10**1000 so parsing stays cheap.
    code = "from kubesched.api.quantity import parse_quantity\nprint(parse_quantity('1e2000000000') > 10**999)\n"
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=4)
    except subprocess.TimeoutExpired:
        pytest.fail("parse_quantity did not return within 4 s")
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize(
    ("resource", "text", "amount"),
    [
        ("cpu", "250m", 250),
        ("cpu", "1.0001", 1001),  # millicores, rounded up
        ("memory", "1.5Ki", 1536),
        ("memory", "0.5", 1),
        ("nvidia.com/gpu", "2", 2),
        ("ephemeral-storage", "1G", 10**9),
    ],
)
def test_scheduler_amount(resource: str, text: str, amount: int) -> None:
    assert scheduler_amount(resource, parse(text)) == amount


@pytest.mark.parametrize(
    ("amount", "resource", "text"),
    [
        (2000, "cpu", "2"),
        (250, "cpu", "250m"),
        (2 * Gi, "memory", "2Gi"),
        (3 * Mi, "ephemeral-storage", "3Mi"),
        (1000, "memory", "1000"),
        (0, "memory", "0"),
        (4, "nvidia.com/gpu", "4"),
    ],
)
def test_format_quantity(amount: int, resource: str, text: str) -> None:
    assert format_quantity(amount, resource) == text
