"""Bad input: one clear line naming the file, the object and the field; exit status 2; never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.cli import main

NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {capacity: {cpu: '4', memory: 8Gi, pods: '110'}}
"""


def run(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    f = tmp_path / "scenario.yaml"
    f.write_text(text)
    code = main(["simulate", str(f), "-o", "json", *extra])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip()


def test_malformed_yaml_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(tmp_path, NODE + "---\nkind: Pod\nmetadata: {name: p\n", capsys)
    assert code == 2
    assert err.startswith(f"error: {tmp_path / 'scenario.yaml'}: malformed YAML: line ")


def test_unknown_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(tmp_path, NODE + "---\napiVersion: v1\nkind: Pdo\nmetadata: {name: d, namespace: web}\n", capsys)
    assert code == 2
    assert err.endswith(': Pdo web/d: kind: no matches for kind "Pdo" in version "v1" (did you mean "Pod"?)')


def test_missing_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(
        tmp_path, NODE + "---\napiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {containers: [{name: c}]}\n", capsys
    )
    assert code == 2
    assert err.endswith("Pod (document 2): metadata.name: Required value: name or generateName is required")


def test_missing_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(tmp_path, NODE + "---\napiVersion: v1\nmetadata: {name: x}\n", capsys)
    assert code == 2
    assert err.endswith("document 2: kind: Required value: kind not set")


def test_bad_quantity_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = (
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: lots}}}]}\n"
    )
    code, err = run(tmp_path, NODE + pod, capsys)
    assert code == 2
    assert ": Pod default/p: spec.containers[0].resources.requests[cpu]: 'lots': quantities must match" in err


def test_wrong_type_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = (
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}], priority: hi}\n"
    )
    code, err = run(tmp_path, NODE + pod, capsys)
    assert code == 2
    assert err.endswith(
        ": Pod default/p: spec.priority: json: cannot unmarshal string into Go struct field PodSpec.spec.priority "
        "of type int32"
    )


def test_unknown_plugin_in_inline_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    header = """kind: Scenario
config:
  apiVersion: kubescheduler.config.k8s.io/v1
  kind: KubeSchedulerConfiguration
  profiles:
  - schedulerName: default-scheduler
    plugins:
      filter:
        enabled: [{name: NoSuchPlugin}]
---
"""
    code, err = run(tmp_path, header + NODE, capsys)
    assert code == 2
    assert err.endswith(
        "Scenario: config: initializing profiles: creating profile for scheduler name default-scheduler: "
        'FilterPlugin "NoSuchPlugin" does not exist'
    )


def test_invalid_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 101\n"
    )
    code, err = run(tmp_path, NODE, capsys, "--config", str(cfg))
    assert code == 2
    assert err == f"error: {cfg}: percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"


def test_unknown_priority_class_is_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = (
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {priorityClassName: gold, containers: [{name: c, image: x}]}\n"
    )
    code, err = run(tmp_path, NODE + pod, capsys)
    assert code == 2
    assert err.endswith('Pod default/p: pods "p" is forbidden: no PriorityClass with name gold was found')


def test_unknown_scenario_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(tmp_path, "kind: Scenario\nmode: parallel\n---\n" + NODE, capsys)
    assert code == 2
    assert err.endswith("Scenario: mode: unsupported value 'parallel': supported values: sequential, batch")


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", str(tmp_path / "nope.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert "nope.yaml: cannot read" in err
