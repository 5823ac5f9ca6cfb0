"""What the scheduler does with extenders beyond the golden cases: binders (extendersBinding)."""

from __future__ import annotations

from pathlib import Path

import yaml
from extender_helpers import node_manifest

from kubesched.scenario import load_scenario
from kubesched.simulate.output import to_dict
from kubesched.simulate.runner import Simulation


def _run(tmp_path: Path, extenders: list[dict]) -> dict:
    header = {
        "kind": "Scenario",
        "config": {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "extenders": extenders,
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}]},
    }
    case = tmp_path / "case.yaml"
    case.write_text(yaml.safe_dump_all([header, node_manifest("n-1"), pod]))
    return to_dict(Simulation(load_scenario(case), seed=0).run())


def test_ignorable_binder_that_fails_leaves_binding_to_the_plugins(tmp_path, down_url):
    out = _run(tmp_path, [{"urlPrefix": down_url, "bindVerb": "bind", "ignorable": True}])
    assert out["results"][0]["status"] == "Scheduled"
    assert out["results"][0]["node"] == "n-1"


def test_binder_that_fails_fails_the_binding_with_its_error(tmp_path, down_url):
    out = _run(tmp_path, [{"urlPrefix": down_url, "bindVerb": "bind"}])
    port = down_url.rsplit(":", 1)[1]
    res = out["results"][0]
    assert res["node"] is None
    assert res["message"] == f'Post "{down_url}/bind": dial tcp 127.0.0.1:{port}: connect: connection refused'
