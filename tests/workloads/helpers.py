"""Scenarios with workloads, read as `simulate` reads them."""

from __future__ import annotations

from typing import Any

import yaml

from kubesched.scenario import Manifest, Scenario, parse_scenario


def node(name: str, cpu: str = "4", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def template(labels: dict[str, str], cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": cpu}}}
    return {"metadata": {"labels": labels}, "spec": {"containers": [container], **spec}}


def load(docs: list[dict[str, Any]], seed: int = 0, mode: str = "batch") -> Scenario:
    header = {"kind": "Scenario", "mode": mode}
    return parse_scenario(yaml.safe_dump_all([header, *docs], sort_keys=False), "s.yaml", seed=seed)


def made(sc: Scenario, kind: str = "Pod") -> list[Manifest]:
    """What the controllers created, of one kind, in creation order."""
    return [m for m in sc.manifests if m.generated and m.kind == kind]
