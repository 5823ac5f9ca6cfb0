"""Quantities past int64: the int64 Value()/MilliValue() that kube-scheduler v1.34.1 reads, and String().

Every expected value here was observed, not derived: integers from the
reference scheduler (the probe named beside each: a fit boundary, a
LeastAllocated score of 100 - X on a node of 100, or the invalid-score error
that prints it), canonical texts from a kube-apiserver v1.34.1
(`kubectl create --dry-run=server`: an emptyDir sizeLimit is printed as
parsed, a container request after defaulting rounded it up to milli).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.int64 import MAX_INT64, MIN_INT64
from kubesched.api.quantity import (
    MILLI,
    QuantityError,
    canonical_text,
    parse,
    parse_resource_quantity,
)

# Value() of a pod's memory request (defaulted, as the scheduler receives it).
VALUES = [
    ("20e18", 0, "LeastAllocated score 100"),  # int64Amount{20,18}: the loop of *10 gives up
    ("10e18", 0, "score 100"),
    ("1e19", 0, "score 100"),
    ("1e30", 0, "score 100"),
    ("10000000000000000000", -8446744073709551616, "score -38758200196842027"),  # inf.Dec: low 64 bits
    ("100000000000000000000000", 200376420520689664, "fit boundary"),
    ("1000000000000000000000000", 2003764205206896640, "fit boundary"),
    ("1000000000000000000000000000", -6930898827444486144, "score -78863920565143370"),
    ("10000000000000000000000000000", 4477988020393345024, "fit boundary"),
    ("100000000000000000000000000000", 7886392056514347008, "fit boundary"),
    ("-1.5", -2, "invalid score 102"),  # int64Amount rounds away from zero
    ("-100m", -1, "invalid score 101"),
    ("-1.500000000000000000", 0, "score 100"),  # inf.Dec: int64 division truncates, then +1
    ("-1e-20", 1, "score 99"),  # -1n, rounded to -1m by defaulting, then trunc + 1
    ("-100000000000000000000", -200376420520688, "invalid score 200376420520787"),  # low 64 bits of -10**23 / 1000
]

# MilliValue() of a pod's cpu request.
MILLI_VALUES = [
    ("7m", 7, "score 93"),
    ("1e30", 0, "score 100"),
    ("1e16", 0, "score 100"),
    ("10e15", 0, "score 100"),
    ("9223372036854776", -9223372036854775616, "invalid score -92"),  # one multiplication by 1000 wraps
    ("-1.5m", -2, "invalid score 102"),
    ("-0.001500000000000000000", -2, "invalid score 102"),
    ("-0.000500000000000000000", -1, "invalid score 101"),
    ("-1n", -1, "invalid score 101"),
    ("-1e-20", -1, "invalid score 101"),
]

# Node capacities, read at fit boundaries (a request of N fits, N+1 does not).
NODE_VALUES = [
    ("cpu", "18446744073709552", 384),  # 18446744073709552000 - 2**64
    ("cpu", "9223372036854775807m", MAX_INT64),
    ("cpu", "9000000000000000", 9 * 10**18),
    ("memory", "18446744073709551617", 1),
    ("memory", "16Ei", MAX_INT64),  # BinarySI held at 2**63-1
    ("pods", "18446744073709551618", 2),
    ("example.com/foo", "18446744073709551621", 5),
    ("example.com/foo", 18446744073709551617, 384),  # a YAML integer past uint64 is a float64 for go-yaml
]


@pytest.mark.parametrize(("text", "want", "evidence"), VALUES)
def test_value(text: str, want: int, evidence: str) -> None:
    assert parse_resource_quantity(text).value() == want


@pytest.mark.parametrize(("text", "want", "evidence"), MILLI_VALUES)
def test_milli_value(text: str, want: int, evidence: str) -> None:
    assert parse_resource_quantity(text).milli_value() == want


@pytest.mark.parametrize(("resource", "raw", "want"), NODE_VALUES)
def test_node_capacity_values(resource: str, raw: object, want: int) -> None:
    q = parse_resource_quantity(raw)
    assert (q.milli_value() if resource == "cpu" else q.value()) == want


# String() of the parsed quantity, and (resource_list) after defaulting's RoundUp(Milli).
CANONICAL = [
    ("1000E", "1", "1"),  # 10**21: no suffix for exponent 21, so the digits print alone
    ("1.500", "1.500", "1.500"),  # already canonical: Go keeps the input
    ("+5", "+5", "+5"),
    ("05", "05", "05"),
    ("0.5", "500m", "500m"),
    ("1.0", "1", "1"),
    ("1E3", "1E3", "1E3"),
    ("1e3", "1e3", "1e3"),
    ("1.5e3", "1500", "1500"),
    ("00", "0", "0"),
    ("-0", "0", "0"),
    ("8Ki", "8Ki", "8Ki"),
    ("1024Ki", "1Mi", "1Mi"),
    ("1.5Gi", "1536Mi", "1536Mi"),
    ("0.5Gi", "512Mi", "512Mi"),
    ("0.5Ki", "512", "512"),
    ("1.1Ki", "1126400m", "1126400m"),
    ("1e-10", "1e-9", "1e-3"),
    ("0.0000000001", "1n", "1m"),
    ("100000000000000000000", "100E", "100E"),
    ("1e30", "1e30", "1e30"),
    ("1e+30", "1e+30", "1e+30"),
    ("18446744073709551617", "18446744073709551617", "18446744073709551617"),
    ("9223372036854775808", "9223372036854775808", "9223372036854775808"),
    ("16Ei", "9223372036854775807", "9223372036854775807"),
    ("1000Ei", "9223372036854775807", "9223372036854775807"),
    ("1.5e20", "150e18", "150e18"),
    ("12e-1", "1200e-3", "1200e-3"),
    ("100m", "100m", "100m"),
    ("0.1m", "100u", "1m"),
    ("1n", "1n", "1m"),
    ("1u", "1u", "1m"),
    ("1000000000000000000000", "1", "1"),
    ("1e21", "1e21", "1e21"),
    ("1.0Ki", "1Ki", "1Ki"),
    ("2048", "2048", "2048"),
    ("1.5k", "1500", "1500"),
    ("1500m", "1500m", "1500m"),
    ("1.5", "1500m", "1500m"),
    ("1e0", "1e0", "1e0"),
    ("1E", "1E", "1E"),
    ("10E", "10E", "10E"),
    ("1k", "1k", "1k"),
    ("1000k", "1M", "1M"),
    ("0.001", "1m", "1m"),
    ("10000000000000000000", "10E", "10E"),
    ("10000000000000000000000", "10", "10"),
    ("100000000000000000000000", "100", "100"),
    ("1000000000000000000000000000", "1", "1"),
    # negative: the API server prints these only in validation errors (no negative sizeLimit)
    ("-5", None, "-5"),
    ("-1.500000000000000000", None, "-1500m"),
    # YAML numbers, as Go's encoding/json writes the float64 go-yaml read
    (1e30, "1e+30", "1e+30"),
    (1.5e20, "150E", "150E"),  # written 150000000000000000000: an inf.Dec, DecimalSI
    (1e-7, "100e-9", "1e-3"),  # written 1e-7
    (0.5, "500m", "500m"),
    (110, "110", "110"),
]


@pytest.mark.parametrize(("raw", "plain", "in_resource_list"), CANONICAL)
def test_canonical_text(raw: object, plain: str | None, in_resource_list: str) -> None:
    if plain is not None:
        assert canonical_text(raw) == plain
    assert canonical_text(raw, resource_list=True) == in_resource_list


@pytest.mark.parametrize(
    ("text", "printed", "dec"),
    [
        # The API server prints an int64Amount's input back when it was canonical (a leading zero
        # does not count), an inf.Dec never: the printed text shows which form ParseQuantity chose.
        ("01Gi", "01Gi", False),
        ("01Ti", "01Ti", False),
        ("01Pi", "1Pi", True),  # binary fast path: 15 - digits - exponent*3/10 - 1 must stay >= 0
        ("01Ei", "1Ei", True),
        ("0999999999999999999", "0999999999999999999", False),  # 18 digits once the zero is dropped
        ("0999999999999999999m", "0999999999999999999m", False),
        ("1e30", "1e30", False),
    ],
)
def test_form_follows_parse_quantity(text: str, printed: str, dec: bool) -> None:
    assert canonical_text(text) == printed
    assert parse(text).dec is dec


def test_cmp_conversion_reads_minint64() -> None:
    """maxResourceList's Cmp turns 1e30 into inf.Dec(1, scale -30): MilliValue multiplies by int64(1e33)."""
    q = parse("1e30").as_dec()
    assert q.milli_value() == MIN_INT64
    assert parse("1e30").milli_value() == 0


def test_add_falls_back_to_dec_only_when_the_sum_does_not_fit() -> None:
    assert not parse("10e18").add(parse("10e18")).dec  # int64Amount{20,18}
    total = parse("1e30").add(parse("5"))  # 1e30 cannot be scaled to 5's scale
    assert total.dec
    assert total.value() == (10**30 + 5) % 2**64


def test_parse_errors_stay_upstreams() -> None:
    with pytest.raises(QuantityError, match="unable to parse quantity's suffix"):
        canonical_text("1K")


quantity_texts = st.from_regex(
    r"[+-]?[0-9]{0,30}(\.[0-9]{0,30})?([eE][+-]?[0-9]{1,3}|[numkMGTPE]|[KMGTPE]i)?", fullmatch=True
)


@given(quantity_texts)
def test_every_view_is_an_int64(text: str) -> None:
    try:
        q = parse(text)
    except QuantityError:
        return
    for view in (q, q.round_up(MILLI), q.as_dec(), q.add(q), q.add(parse("1e30"))):
        assert MIN_INT64 <= view.value() <= MAX_INT64
        assert MIN_INT64 <= view.milli_value() <= MAX_INT64
        parse(view.string())  # the canonical form parses again


@given(st.one_of(st.integers(min_value=-(2**80), max_value=2**80), st.floats(allow_nan=False, allow_infinity=False)))
def test_yaml_numbers_parse(raw: float) -> None:
    q = parse_resource_quantity(raw)
    assert MIN_INT64 <= q.value() <= MAX_INT64
