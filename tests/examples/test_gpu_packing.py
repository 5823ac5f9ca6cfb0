"""The GPUPacking example plugin: GPU pods go where the GPUs are already most used; others are left alone."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from kubesched_examples.gpu_packing import GPUPacking, GPUPackingArgs

from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import NodeScoreList
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.testing import Env, make_node, make_pod, placements, simulate

REF = "kubesched_examples.gpu_packing:GPUPacking"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "plugins"
GPU = "nvidia.com/gpu"


def _config(weight: int = 5, args: dict[str, Any] | None = None, name: str = REF) -> dict[str, Any]:
    return {
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"multiPoint": {"enabled": [{"name": name, "weight": weight}]}},
                "pluginConfig": [{"name": name, "args": args or {}}],
            }
        ]
    }


def _gpu_node(name: str, gpus: int, resource: str = GPU) -> Any:
    return make_node(name, cpu="32", mem="256Gi", extra={resource: str(gpus)} if gpus else None)


def _gpu_pod(name: str, gpus: int, node: str = "", resource: str = GPU, cpu: str = "1") -> Any:
    return make_pod(name, cpu=cpu, node=node, extra={resource: str(gpus)} if gpus else None)


def _env() -> Env:
    nodes = [_gpu_node("g1", 8), _gpu_node("g2", 8), _gpu_node("g4", 4), _gpu_node("cpu-only", 0)]
    running = [_gpu_pod("a", 6, "g1"), _gpu_pod("b", 2, "g2"), _gpu_pod("c", 1, "g4")]
    return Env(nodes, running)


def test_scores_are_gpu_use_after_placement_normalized_to_100() -> None:
    env = _env()
    plugin = GPUPacking(GPUPackingArgs())
    pod = PodInfo(_gpu_pod("p", 1))
    raw = {ni.name: plugin.score(CycleState(), pod, ni)[0] for ni in env.snapshot.nodes}
    # (used + 1) * 100 // allocatable: g1 7/8, g2 3/8, g4 2/4; no GPUs: 0.
    assert raw == {"g1": 87, "g2": 37, "g4": 50, "cpu-only": 0}
    scores = NodeScoreList(list(raw), np.array(list(raw.values()), np.int64))
    assert plugin.normalize_score(CycleState(), pod, scores) is None
    assert dict(zip(raw, scores.scores.tolist(), strict=True)) == {"g1": 100, "g2": 42, "g4": 57, "cpu-only": 0}


def test_pods_without_gpus_are_skipped() -> None:
    plugin = GPUPacking(GPUPackingArgs())
    s = plugin.pre_score(CycleState(), PodInfo(make_pod("web", cpu="1")), [])
    assert s is not None and s.code == Code.SKIP
    assert plugin.pre_score(CycleState(), PodInfo(_gpu_pod("p", 1)), []) is None


def test_whole_snapshot_scores_equal_per_node_scores() -> None:
    rng = random.Random(7)
    for _ in range(20):
        nodes = [_gpu_node(f"n{i}", rng.choice([0, 1, 2, 4, 8])) for i in range(12)]
        running = []
        for i, n in enumerate(nodes):
            cap = int(n.status.capacity.get(GPU, "0"))
            if cap:
                running.append(_gpu_pod(f"r{i}", rng.randint(0, cap), n.metadata.name))
        env = Env(nodes, running)
        plugin = GPUPacking(GPUPackingArgs())
        pod = PodInfo(_gpu_pod("p", rng.randint(1, 3)))
        idx = np.array(sorted(rng.sample(range(len(nodes)), 8)), np.int64)
        per_node = [plugin.score(CycleState(), pod, env.snapshot.nodes[int(i)])[0] for i in idx]
        assert plugin.score_all(CycleState(), pod, env.snapshot, idx).tolist() == per_node


def test_packing_leaves_a_whole_node_for_the_big_job() -> None:
    nodes = [_gpu_node("gpu-1", 8), _gpu_node("gpu-2", 8), _gpu_node("gpu-3", 8)]
    running = [_gpu_pod("a", 6, "gpu-1", cpu="12"), _gpu_pod("b", 2, "gpu-2", cpu="4")]
    pending = [_gpu_pod("small", 2, cpu="4"), _gpu_pod("big", 8, cpu="16")]
    packed = placements(simulate([*nodes, *running, *pending], _config()))
    assert packed == {"default/small": "gpu-1", "default/big": "gpu-3"}
    # The default (spreading) scores put the small job on the idle node: the big one fits nowhere.
    spread = placements(simulate([*nodes, *running, *pending]))
    assert spread == {"default/small": "gpu-3", "default/big": None}


def test_resource_name_is_configurable() -> None:
    amd = "amd.com/gpu"
    nodes = [_gpu_node("busy", 4, amd), _gpu_node("idle", 4, amd)]
    objects = [*nodes, _gpu_pod("r", 3, "busy", amd), _gpu_pod("p", 1, resource=amd)]
    assert placements(simulate(objects, _config(args={"resourceName": amd}))) == {"default/p": "busy"}
    # Packing nvidia.com/gpu says nothing about amd.com/gpu: the default spreading applies.
    assert placements(simulate(objects, _config())) == {"default/p": "idle"}


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"resourceName": "gpu"}, "pluginConfig[0].args: resourceName: 'gpu' is not an extended resource name"),
        ({"resourceName": 1}, "pluginConfig[0].args.resourceName: expected `str`, got `int`"),
        ({"resource": GPU}, 'pluginConfig[0].args: strict decoding error: unknown field "resource"'),
    ],
)
def test_bad_args(args: dict[str, Any], error: str) -> None:
    with pytest.raises(InputError) as err:
        simulate([make_node("n1")], _config(args=args))
    assert str(err.value).endswith(f'initializing plugin "{REF}": {error}')


def test_readme_scenario_by_entry_point_name(installed: Path) -> None:
    import yaml

    scenario = (EXAMPLES / "scenarios" / "gpu.yaml").read_text()
    config = yaml.safe_load((EXAMPLES / "scenarios" / "gpu-config.yaml").read_text())
    assert placements(simulate(scenario, config)) == {
        "default/train-small": "gpu-1",
        "default/train-big": "gpu-3",
        "default/web": "gpu-2",
    }
