"""Small GPU clusters for the research tests: openb-shaped nodes and pods, some already on GPUs."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.research.openb import NodeRow, PodRow, make_node, make_pod
from kubesched.research.policies.gpushare import GPU_INDEX
from kubesched.testing import Env


def node(name: str, gpus: int = 2, cpu: int = 64000, model: str = "T4", mem: int = 262144) -> Any:
    return make_node(NodeRow(name, cpu, mem, gpus, model))


def pod(name: str, cpu: int = 8000, milli: int = 0, num: int = 1, spec: str = "", mem: int = 1024) -> Any:
    p = make_pod(PodRow(name, cpu, mem, num if milli else 0, milli, spec))
    return msgspec.structs.replace(p, metadata=msgspec.structs.replace(p.metadata, uid=f"uid-{name}"))


def bound(p: Any, node_name: str, gpus: tuple[int, ...]) -> Any:
    """The pod as it runs on `node_name` holding `gpus` (the annotation PreBind writes)."""
    ann = dict(p.metadata.annotations or {})
    if gpus:
        ann[GPU_INDEX] = "-".join(map(str, gpus))
    meta = msgspec.structs.replace(p.metadata, annotations=ann)
    spec = msgspec.structs.replace(p.spec, node_name=node_name)
    return msgspec.structs.replace(p, metadata=meta, spec=spec)


def env(nodes: list[Any], running: list[Any] = ()) -> Env:  # type: ignore[assignment]
    return Env(nodes, list(running))
