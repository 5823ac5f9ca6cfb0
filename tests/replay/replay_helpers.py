"""Small clusters and traces for the replay tests, written to tmp files as a user would.

A module of its own name, not conftest, so that tests can import its builders unambiguously.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kubesched.config import load_config_mapping
from kubesched.replay import ReplayRun, RunConfig, load_inputs, replay_all

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "replay"


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "10") -> str:
    return f"""---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status: {{allocatable: {{cpu: '{cpu}', memory: {memory}, pods: '{pods}'}}}}
"""


def template(name: str, cpu: str, memory: str = "1Gi", grace: int | None = None) -> str:
    extra = f"\n  terminationGracePeriodSeconds: {grace}" if grace is not None else ""
    return f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:{extra}
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: '{cpu}', memory: {memory}}}}}}}]
"""


def priority_class(name: str, value: int) -> str:
    return f"""---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {name}}}
value: {value}
"""


def fit_strategy(kind: str) -> RunConfig:
    cfg = load_config_mapping(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": kind}}}],
                }
            ],
        },
        kind,
    )
    return RunConfig(kind, cfg)


Runner = Callable[..., list[ReplayRun]]


@pytest.fixture
def run_replay(tmp_path: Path) -> Runner:
    """run_replay(cluster_text, trace_text, configs=None, suffix='.csv', **replay_all kwargs) -> runs."""

    def run(
        cluster: str, trace: str, configs: list[RunConfig] | None = None, suffix: str = ".csv", **kw: object
    ) -> list[ReplayRun]:
        c = tmp_path / "cluster.yaml"
        c.write_text(cluster)
        t = tmp_path / f"trace{suffix}"
        t.write_text(trace)
        scenario, tr = load_inputs(c, t)
        return replay_all(scenario, tr, configs or [RunConfig("default")], **kw)  # type: ignore[arg-type]

    return run
