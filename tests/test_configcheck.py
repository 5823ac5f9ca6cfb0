"""`kubesched config check` in text mode: the defaulted configuration on stdout; errors on stderr, with a hint
after upstream's message for an unknown plugin."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.cli import main

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"


def test_a_valid_configuration_prints_as_kube_scheduler_runs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "sched.yaml"
    f.write_text(HEAD + "- schedulerName: default-scheduler\n")
    assert main(["config", "check", str(f)]) == 0
    out, err = capsys.readouterr()
    doc = yaml.safe_load(out)
    assert err == "" and doc["kind"] == "KubeSchedulerConfiguration"
    assert doc["profiles"][0]["schedulerName"] == "default-scheduler" and doc["parallelism"] == 16


def test_an_unknown_plugin_is_an_error_with_a_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "sched.yaml"
    f.write_text(
        HEAD
        + "- schedulerName: default-scheduler\n  plugins:\n    score:\n      enabled: [{name: NodeResourcesFitt}]\n"
    )
    assert main(["config", "check", str(f)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"error: {f}: initializing profiles: creating profile for scheduler name default-scheduler: "
        'ScorePlugin "NodeResourcesFitt" does not exist',
        'hint: did you mean "NodeResourcesFit"? out-of-tree plugins: see docs/plugins.md',
    ]
