"""Loading scenarios: the objects and errors of a whole-file parse, raw mappings on demand, and the same
result whether one process reads the YAML or several do."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.cli import main
from kubesched.errors import InputError
from kubesched.scenario import Manifest, load_scenario, parse_scenario, yamlstream
from kubesched.simulate.generate import Shape, random_scenario, to_yaml

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: '4', memory: 8Gi, pods: '110'}}\n"


def pod(i: int) -> str:
    return f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\nspec: {{containers: [{{name: c, image: x}}]}}\n"


def stream(*docs: str) -> str:
    return "---\n".join(docs)


def test_raw_is_read_again_on_demand() -> None:
    text = to_yaml(random_scenario(Shape(nodes=5, running_pods=5, pending_pods=5), seed=3))
    sc = parse_scenario(text, "random.yaml")
    expected = [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d is not None]
    assert expected[0]["kind"] == "Scenario"
    assert [m.raw for m in sc.manifests] == [expected[m.index] for m in sc.manifests]
    assert [m.index for m in sc.manifests] == list(range(1, len(expected)))


def test_manifest_keeps_a_given_raw() -> None:
    raw = {"kind": "Node", "metadata": {"name": "n"}}
    assert Manifest("Node", None, raw, 3).raw is raw
    with pytest.raises(ValueError, match="raw mapping or the source"):
        Manifest("Node", None)


def test_yaml_error_after_a_bad_manifest_is_reported_first() -> None:
    # As when the whole file was parsed before anything was decoded.
    bad_name = "apiVersion: v1\nkind: Pod\nmetadata: {}\n"
    with pytest.raises(InputError, match=r"malformed YAML: line 11, column 1"):
        parse_scenario(stream(NODE, bad_name, "a: [1\n"), "s.yaml")
    with pytest.raises(InputError, match=r"Pod \(document 2\): metadata.name: Required value: name or generateName"):
        parse_scenario(stream(NODE, bad_name, pod(1)), "s.yaml")


def test_constructor_errors_name_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(stream(NODE, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  priority: !!int high\n"))
    assert main(["simulate", str(f), "-o", "json"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {f}: malformed YAML: line 10, column 13: cannot construct !!int from 'high': " + (
        "invalid literal for int() with base 10: 'high'"
    )


def test_file_that_is_not_utf8(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_bytes(b"kind: Node\nmetadata: {name: \xff}\n")
    with pytest.raises(InputError, match=r"s.yaml: cannot read: not UTF-8 text \(invalid start byte at byte 28\)"):
        load_scenario(f)


def test_line_ends_read_as_in_text_mode(tmp_path: Path) -> None:
    """CRLF and lone CR line ends load as LF ones do (universal newlines), a byte offset past the first
    chunk of a large file is the file's own."""
    doc = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: {a: b}\n"
    want = [m.obj for m in parse_scenario(doc, "s.yaml").manifests]
    for sep in ("\r\n", "\r"):
        f = tmp_path / "s.yaml"
        f.write_bytes(doc.replace("\n", sep).encode())
        assert [m.obj for m in load_scenario(f).manifests] == want
    big = tmp_path / "big.yaml"
    big.write_bytes(b"# " + b"x" * 20000 + b"\nkind: Node\nmetadata: {name: \xff}\n")
    with pytest.raises(InputError, match=r"cannot read: not UTF-8 text \(invalid start byte at byte 20031\)"):
        load_scenario(big)


def test_bad_quantities_name_the_field() -> None:
    # Valid ones first, so that the invalid ones meet a warm cache of checked quantities.
    ok = stream(
        NODE,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {overhead: {cpu: 1e3, memory: 0.5, example.com/x: 7}, containers: [{name: c, image: x}]}\n",
    )
    assert parse_scenario(ok, "s.yaml").manifests[1].obj.spec.overhead == {
        "cpu": "1e3",
        "memory": 0.5,
        "example.com/x": 7,
    }
    for value, message in (("lots", "'lots': quantities must match"), (".nan", "json: unsupported value: NaN")):
        text = stream(
            NODE,
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
            f"spec: {{overhead: {{cpu: 1, example.com/x: {value}}}, containers: [{{name: c, image: x}}]}}\n",
        )
        with pytest.raises(InputError) as err:
            parse_scenario(text, "s.yaml")
        assert str(err.value).startswith(f"s.yaml: Pod default/p: spec.overhead[example.com/x]: {message}")
    text = stream(NODE.replace("pods: '110'", "pods: '1.2.3'"))
    with pytest.raises(InputError, match=r"Node n1: status.capacity\[pods\]: '1.2.3': quantities must match"):
        parse_scenario(text, "s.yaml")


# ---------------------------------------------------------------- several processes


@pytest.fixture
def forking() -> None:
    if not yamlstream._can_fork():
        pytest.skip("this process may not fork")


def outcome(text: str, workers: int) -> tuple[str, object]:
    try:
        sc = parse_scenario(text, "big.yaml", workers=workers)
    except InputError as err:
        return "error", str(err)
    return "ok", (sc.mode, sc.description, [(m.kind, m.obj, m.index, m.raw) for m in sc.manifests])


def test_split_load_gives_the_same_scenario(forking: None) -> None:
    header = "kind: Scenario\nmode: batch\ndescription: big\n"
    text = stream(header, NODE, *(pod(i) for i in range(2000)))
    serial = outcome(text, 1)
    assert serial[0] == "ok"
    assert outcome(text, 2) == serial


@pytest.mark.parametrize(
    "late",
    [
        "apiVersion: v1\nkind: Pod\nmetadata: {name: late\n",  # malformed YAML: its line in the whole file
        "apiVersion: v1\nkind: Pod\nmetadata: {}\n",  # missing name: its document number in the whole file
        "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\n"
        "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: lots}}}]}\n",
        "kind: Scenario\n",  # a header that is not first
    ],
)
def test_errors_late_in_a_split_load_are_the_serial_errors(forking: None, late: str) -> None:
    text = stream(NODE, *(pod(i) for i in range(1500)), late, *(pod(i) for i in range(1500, 1510)))
    serial = outcome(text, 1)
    assert serial[0] == "error"
    assert outcome(text, 2) == serial
    if "late\n" in late:
        line = text[: text.index(late)].count("\n") + 4
        assert f"malformed YAML: line {line}, column 1" in str(serial[1])
    if "{}" in late:
        assert str(serial[1]).endswith(
            "Pod (document 1502): metadata.name: Required value: name or generateName is required"
        )


def test_raw_of_list_items_and_generated_names() -> None:
    """serve stores `raw`: a List's item, with the kind a typed list left out and the name the server made."""
    text = stream(
        "apiVersion: v1\nkind: List\nitems:\n- " + NODE.replace("\n", "\n  ").rstrip() + "\n",
        "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {generateName: web-}\n"
        "  spec: {containers: [{name: c, image: x}]}\n",
    )
    sc = parse_scenario(text, "s.yaml", seed=7)
    node, pod_ = sc.manifests
    assert node.raw["kind"] == "Node" and node.raw["metadata"] == {"name": "n1"}
    name = pod_.obj.metadata.name
    assert name.startswith("web-") and len(name) == 9
    assert pod_.raw == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"generateName": "web-", "name": name},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    assert parse_scenario(text, "s.yaml", seed=7).manifests[1].obj.metadata.name == name
