"""Trace files: what is accepted, and bad lines rejected with their line number and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_helpers import node, priority_class, template

from kubesched.cli import main
from kubesched.errors import InputError
from kubesched.replay import Templates, load_inputs, parse_trace
from kubesched.scenario import parse_scenario

CLUSTER = priority_class("low", 10) + node("n1") + template("web", "500m") + template("job", "1")


def _templates() -> Templates:
    sc = parse_scenario(CLUSTER, "cluster.yaml")
    return Templates(sc.pending_pods(), ["cluster.yaml"])


def _parse(text: str, fmt: str = "csv") -> object:
    return parse_trace(text, f"trace.{fmt}", _templates(), {"low"}, fmt=fmt)


def test_csv_fields_make_pods() -> None:
    text = """# comment lines and blank lines are skipped

time,name,template,spec,priorityClass,duration
5,team-a/web-1,web,,low,30.5
0,web-0,web,,,
2,inline,,"{""containers"": [{""name"": ""c"", ""resources"": {""requests"": {""cpu"": ""250m""}}}]}",,1
"""
    tr = parse_trace(text, "t.csv", _templates(), {"low"})
    # Sorted by arrival; lines kept for messages.
    assert [(e.time, e.key, e.line, e.duration) for e in tr.entries] == [
        (0.0, "default/web-0", 5, None),
        (2.0, "default/inline", 6, 1.0),
        (5.0, "team-a/web-1", 4, 30.5),
    ]
    web1 = tr.entries[2].pod
    assert web1.metadata.name == "web-1" and web1.metadata.namespace == "team-a"
    assert web1.spec.priority_class_name == "low"
    assert web1.spec.containers[0].resources.requests == {"cpu": "500m", "memory": "1Gi"}
    assert tr.entries[1].pod.spec.containers[0].resources.requests == {"cpu": "250m"}
    assert tr.format == "csv"


def test_jsonl_detected_by_content() -> None:
    text = (
        '{"time": 1, "name": "a", "template": "job"}\n\n{"time": 0.5, "name": "b", "template": "web", "duration": 3}\n'
    )
    tr = parse_trace(text, "trace.txt", _templates(), set())
    assert tr.format == "jsonl"
    assert [(e.key, e.time, e.duration, e.line) for e in tr.entries] == [
        ("default/b", 0.5, 3.0, 3),
        ("default/a", 1.0, None, 1),
    ]


CSV_HEAD = "time,name,template,spec,priorityClass,duration\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("x,a,web,,,\n", "trace.csv: line 2: time: must be a number of seconds, got 'x'"),
        ("-1,a,web,,,\n", "trace.csv: line 2: time: must be a finite number >= 0, got '-1'"),
        (",a,web,,,\n", "trace.csv: line 2: time: required"),
        ("0,a,web,,,nan\n", "trace.csv: line 2: duration: must be a finite number >= 0, got 'nan'"),
        ("0,a,web,,,soon\n", "trace.csv: line 2: duration: must be a number of seconds, got 'soon'"),
        ("0,,web,,,\n", "trace.csv: line 2: name: required"),
        ("0,Bad_Name,web,,,\n", "trace.csv: line 2: name: 'Bad_Name' is not a valid pod name"),
        ("0,a,,,,\n", "trace.csv: line 2: spec: give exactly one of template"),
        ('0,a,web,"{}",,\n', "trace.csv: line 2: template: give exactly one of template"),
        ("0,a,nope,,,\n", "trace.csv: line 2: template: no template 'nope': a Pod without spec.nodeName in"),
        ("0,a,web,,high,\n", "trace.csv: line 2: priorityClass: no PriorityClass 'high' in the cluster file"),
        ("0,a,web,,,\n1,a,job,,,\n", "trace.csv: line 3: name: pod default/a is already in the trace (line 2)"),
        ('0,a,,"{not json",,\n', "trace.csv: line 2: spec: malformed JSON"),
        ('0,a,,"[1]",,\n', "trace.csv: line 2: spec: must be a JSON object"),
        ('0,a,,"{""containers"": []}",,\n', "trace.csv: line 2: spec.containers: a pod needs at least one container"),
        (
            '0,a,,"{""containers"": [{""name"": ""c"", ""resources"": {""requests"": {""cpu"": ""lots""}}}]}",,\n',
            "trace.csv: line 2: spec.containers[0].resources.requests[cpu]: 'lots'",
        ),
        (
            '0,a,,"{""nodeName"": ""n1"", ""containers"": [{""name"": ""c""}]}",,\n',
            "trace.csv: line 2: spec.nodeName: a trace pod arrives unscheduled",
        ),
        ("0,a,web,,\n", "trace.csv: line 2: 5 values for 6 columns"),
        ("0,a,web,,,\n\n# fine\n5,b,web,,,x\n", "trace.csv: line 5: duration: must be a number of seconds"),
    ],
)
def test_bad_csv_lines(body: str, expected: str) -> None:
    with pytest.raises(InputError) as info:
        _parse(CSV_HEAD + body)
    assert str(info.value).startswith(expected), str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("time,name,when\n", "trace.csv: line 1: when: unknown column 'when'"),
        ("name,template\n", "trace.csv: line 1: time: missing column 'time'"),
        ("time,name,name\n", "trace.csv: line 1: name: column given twice"),
        ("# nothing\n", "trace.csv: empty trace: no header row"),
    ],
)
def test_bad_csv_headers(text: str, expected: str) -> None:
    with pytest.raises(InputError) as info:
        _parse(text)
    assert str(info.value).startswith(expected), str(info.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"time": 0, "name": "a", "template": "web"}\n{"time": 1, "name": "b"\n',
            "trace.jsonl: line 2: malformed JSON",
        ),
        ("[1, 2]\n", "trace.jsonl: line 1: must be a JSON object, got list"),
        ('{"time": 0, "name": "a", "template": "web", "cpu": 1}\n', "trace.jsonl: line 1: cpu: unknown field"),
        ('{"name": "a", "template": "web"}\n', "trace.jsonl: line 1: time: required"),
        ('{"time": "0", "name": "a", "template": "web", "duration": true}\n', "line 1: duration: must be a number"),
        ('{"time": 0, "name": 7, "template": "web"}\n', "trace.jsonl: line 1: name: must be a string, got 7"),
        ('{"time": 0, "name": "a", "spec": {"containers": "c"}}\n', "trace.jsonl: line 1: spec.containers: Expected"),
    ],
)
def test_bad_jsonl_lines(text: str, expected: str) -> None:
    with pytest.raises(InputError) as info:
        _parse(text, "jsonl")
    assert str(info.value).startswith(expected) or expected in str(info.value), str(info.value)


def test_ambiguous_template_needs_a_namespace() -> None:
    sc = parse_scenario(
        template("web", "1") + template("web", "1").replace("{name: web}", "{name: web, namespace: other}"), "c.yaml"
    )
    t = Templates(sc.pending_pods(), ["c.yaml"])
    with pytest.raises(InputError, match=r"line 2: template: template 'web' is ambiguous \(default/web, other/web\)"):
        parse_trace("time,name,template\n0,a,web\n", "t.csv", t, set())
    tr = parse_trace("time,name,template\n0,a,other/web\n", "t.csv", t, set())
    assert tr.entries[0].key == "other/a"  # the template's namespace when the name has none


def test_templates_file_and_name_clash_with_a_running_pod(tmp_path: Path) -> None:
    running = template("busy", "1").replace("spec:", "spec:\n  nodeName: n1")
    (tmp_path / "c.yaml").write_text(node("n1") + running)
    (tmp_path / "t.yaml").write_text(template("extra", "2"))
    (tmp_path / "trace.csv").write_text("time,name,template\n0,a,extra\n")
    _, tr = load_inputs(tmp_path / "c.yaml", tmp_path / "trace.csv", tmp_path / "t.yaml")
    assert tr.entries[0].pod.spec.containers[0].resources.requests["cpu"] == "2"

    (tmp_path / "bad.yaml").write_text(node("n2"))
    with pytest.raises(InputError, match=r"bad.yaml: Node n2: kind: a templates file holds only Pods"):
        load_inputs(tmp_path / "c.yaml", tmp_path / "trace.csv", tmp_path / "bad.yaml")


def test_cli_reports_bad_input_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.yaml").write_text(CLUSTER)
    (tmp_path / "trace.csv").write_text("time,name,template,duration\n0,a,web,\n3,b,web,-5\n")
    assert main(["replay", str(tmp_path / "c.yaml"), str(tmp_path / "trace.csv"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path / 'trace.csv'}: line 3: duration: must be a finite number >= 0, got '-5'\n"

    # A trace pod named like a pod the cluster file already runs.
    running = template("busy", "1").replace("spec:", "spec:\n  nodeName: n1")
    (tmp_path / "c2.yaml").write_text(CLUSTER + running)
    (tmp_path / "t2.csv").write_text("time,name,template\n0,busy,web\n")
    assert main(["replay", str(tmp_path / "c2.yaml"), str(tmp_path / "t2.csv"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path / 't2.csv'}: line 2: name: pod default/busy already exists in the cluster file\n"

    assert main(["replay", str(tmp_path / "c.yaml"), str(tmp_path / "missing.csv")]) == 2
    assert "missing.csv: cannot read" in capsys.readouterr().err

    # Outputs are checked before the replay runs.
    good = [str(tmp_path / "c.yaml"), str(tmp_path / "t2.csv")]
    assert main(["replay", *good, "--json", str(tmp_path / "no" / "x.json")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'no' / 'x.json'}: cannot write: no such directory\n"
    with pytest.raises(SystemExit) as info:  # refused by argparse, as a non-number is
        main(["replay", *good, "--until", "-1"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.endswith(
        "kubesched replay: error: argument --until: must be a finite number of seconds >= 0, got '-1'\n"
    )
