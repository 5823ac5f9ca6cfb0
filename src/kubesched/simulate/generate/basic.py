"""scheduler_perf's SchedulingBasic cluster as a scenario, and generated manifests as YAML or a Scenario:
the benchmarks' shape, deterministic without a generator."""

from __future__ import annotations

from typing import Any

import yaml

from kubesched.scenario import Scenario, parse_scenario
from kubesched.simulate.generate.shape import HOSTNAME


def basic_cluster(nodes: int, init_pods: int, pods: int, mode: str = "batch") -> list[dict[str, Any]]:
    """scheduler_perf's SchedulingBasic shape (../shared/benchmarks/WORKLOADS.md) as a scenario."""
    docs: list[dict[str, Any]] = [{"kind": "Scenario", "description": f"basic {nodes} nodes", "mode": mode}]
    for i in range(nodes):
        name = f"scheduler-perf-{i}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {HOSTNAME: name}},
                "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
            }
        )
    container = {
        "name": "pause",
        "image": "registry.k8s.io/pause:3.10.1",
        "ports": [{"containerPort": 80}],
        "resources": {
            "requests": {"cpu": "100m", "memory": "500Mi"},
            "limits": {"cpu": "100m", "memory": "500Mi"},
        },
    }
    for i in range(init_pods):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"init-pod-{i}"},
                "spec": {"containers": [container], "nodeName": f"scheduler-perf-{i % nodes}"},
            }
        )
    for i in range(pods):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"pod-{i}"},
                "spec": {"containers": [container]},
            }
        )
    return docs


def to_yaml(docs: list[dict[str, Any]]) -> str:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(docs, Dumper=dumper, sort_keys=False)


def to_scenario(docs: list[dict[str, Any]], source: str = "<generated>") -> Scenario:
    return parse_scenario(to_yaml(docs), source)
