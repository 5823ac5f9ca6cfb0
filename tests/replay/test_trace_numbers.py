"""Every number of a trace (time, duration) is checked where it is read: the error names the file, the
line and the column, whatever the number (NaN, infinities, 1e308, 400 digits, not a number)."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_helpers import node, template

from kubesched.cli import main
from kubesched.errors import InputError
from kubesched.replay import Templates, parse_trace
from kubesched.scenario import parse_scenario

CLUSTER = node("n1") + template("web", "500m")
CSV_HEAD = "time,name,template,duration\n0,first,web,\n"
TOO_LATE = "must be at most 10,000,000,000 seconds (about 317 years), got "


def _parse(text: str, fmt: str) -> object:
    sc = parse_scenario(CLUSTER, "cluster.yaml")
    return parse_trace(text, f"trace.{fmt}", Templates(sc.pending_pods(), ["cluster.yaml"]), set(), fmt=fmt)


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("1e308,a,web,", f"line 3: time: {TOO_LATE}'1e308'"),
        ("0,a,web,1e308", f"line 3: duration: {TOO_LATE}'1e308'"),
        ("10000000001,a,web,", f"line 3: time: {TOO_LATE}'10000000001'"),
        ("1e400,a,web,", "line 3: time: must be a finite number >= 0, got '1e400'"),
        ("inf,a,web,", "line 3: time: must be a finite number >= 0, got 'inf'"),
        ("-inf,a,web,", "line 3: time: must be a finite number >= 0, got '-inf'"),
        ("NaN,a,web,", "line 3: time: must be a finite number >= 0, got 'NaN'"),
        ("0,a,web,-infinity", "line 3: duration: must be a finite number >= 0, got '-infinity'"),
        ("0,a,web,-0.5", "line 3: duration: must be a finite number >= 0, got '-0.5'"),
        ("0x10,a,web,", "line 3: time: must be a number of seconds, got '0x10'"),
        ("5s,a,web,", "line 3: time: must be a number of seconds, got '5s'"),
    ],
)
def test_csv_numbers(row: str, expected: str) -> None:
    with pytest.raises(InputError) as info:
        _parse(CSV_HEAD + row + "\n", "csv")
    assert str(info.value) == f"trace.csv: {expected}"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ('"time": 1e308', f"line 2: time: {TOO_LATE}1e+308"),
        ('"time": 1' + "0" * 400, f"line 2: time: must be a finite number >= 0, got 1{'0' * 29}... (401 characters)"),
        ('"time": 0, "duration": 1e999', "line 2: duration: must be a finite number >= 0, got inf"),
        ('"time": NaN', "line 2: time: must be a finite number >= 0, got nan"),
        ('"time": -Infinity', "line 2: time: must be a finite number >= 0, got -inf"),
        ('"time": [1]', "line 2: time: must be a number of seconds, got [1]"),
        ('"time": {"s": 1}', "line 2: time: must be a number of seconds, got {'s': 1}"),
        ('"time": 0, "duration": "x" ', "line 2: duration: must be a number of seconds, got 'x'"),
    ],
)
def test_jsonl_numbers(fields: str, expected: str) -> None:
    text = '{"time": 0, "name": "first", "template": "web"}\n{' + fields + ', "name": "a", "template": "web"}\n'
    with pytest.raises(InputError) as info:
        _parse(text, "jsonl")
    assert str(info.value) == f"trace.jsonl: {expected}"


def test_negative_zero_and_the_largest_time_are_accepted() -> None:
    tr = _parse(CSV_HEAD + "-0,a,web,1e10\n1e10,b,web,\n", "csv")
    assert [(e.time, e.duration) for e in tr.entries] == [(0.0, None), (0.0, 1e10), (1e10, None)]  # type: ignore[attr-defined]
    assert str(tr.entries[1].time) == "0.0"  # type: ignore[attr-defined]


def test_cli_names_file_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.yaml").write_text(CLUSTER)
    (tmp_path / "trace.csv").write_text(CSV_HEAD + "1e308,a,web,\n")
    assert main(["replay", str(tmp_path / "c.yaml"), str(tmp_path / "trace.csv"), "-q"]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'trace.csv'}: line 3: time: {TOO_LATE}'1e308'\n"


def test_the_latest_times_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """At the bound the clock still dates every object: the replay runs to the end."""
    (tmp_path / "c.yaml").write_text(CLUSTER)
    (tmp_path / "trace.csv").write_text(CSV_HEAD + "1e10,a,web,1e10\n")
    out = tmp_path / "r.json"
    assert main(["replay", str(tmp_path / "c.yaml"), str(tmp_path / "trace.csv"), "-q", "--json", str(out)]) == 0
    assert '"pods"' in out.read_text() or out.stat().st_size > 0
