"""NodeResourcesBalancedAllocation and ImageLocality: numbers from the upstream test tables."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.config.types import NodeResourcesBalancedAllocationArgs, ResourceSpec
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.framework.types import ImageStateSummary, PodInfo
from kubesched.plugins.imagelocality import (
    ImageLocality,
    calculate_priority,
    normalized_image_name,
    scaled_image_score,
)
from kubesched.plugins.noderesources.balanced_allocation import BalancedAllocation
from kubesched.testing import Env, make_node, make_pod

MB = 1024 * 1024


def _rpod(*containers: dict[str, str], node: str = "", name: str = "p"):
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "image": "i", "resources": {"requests": r}} for i, r in enumerate(containers)]
    }
    return make_pod(name, node=node, spec=spec)


CPU_ONLY = ({"cpu": "1000", "memory": "0"}, {"cpu": "2000", "memory": "0"})
CPU_AND_MEMORY = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})


def _balanced(pl: BalancedAllocation, pod, nodes: list, existing: list) -> tuple[Any, list[int]]:
    env = Env(nodes, existing)
    pi = PodInfo(pod)
    state = CycleState()
    s = pl.pre_score(state, pi, env.snapshot.nodes)
    if s is not None:
        return s, []
    names = [n.metadata.name for n in nodes]
    per_node = [pl.score(state, pi, env.node(n))[0] for n in names]
    idx = np.array([env.node(n).index for n in names], np.int64)
    assert pl.score_all(state, pi, env.snapshot, idx).tolist() == per_node
    return s, per_node


def _n(name: str, cpu: str, mem: str, **extra: str):
    """Extra resources as keyword arguments: abc_com__xyz="4" is abc.com/xyz."""
    return make_node(
        name, cpu=cpu, mem=mem, extra={k.replace("__", "/").replace("_", "."): v for k, v in extra.items()}
    )


@pytest.mark.parametrize(
    ("pod", "nodes", "existing", "want"),
    [
        # cpu 3000/4000 = .75, memory .5: std .125 -> 87; node2 .5/.5 -> 100
        (_rpod(*CPU_AND_MEMORY), [_n("node1", "4000", "10000"), _n("node2", "6000", "10000")], [], [87, 100]),
        # node1: .6 / .25 -> std .175 -> 82; node2: .6 / .5 -> 95
        (
            _rpod(*CPU_AND_MEMORY),
            [_n("node1", "10000", "20000"), _n("node2", "10000", "20000")],
            [_rpod(*CPU_ONLY, node="node1", name="a"), _rpod(*CPU_AND_MEMORY, node="node2", name="b")],
            [82, 95],
        ),
        # node2: .6 / .2 -> 80
        (
            _rpod(*CPU_AND_MEMORY),
            [_n("node1", "10000", "20000"), _n("node2", "10000", "50000")],
            [_rpod(*CPU_ONLY, node="node1", name="a"), _rpod(*CPU_AND_MEMORY, node="node2", name="b")],
            [82, 80],
        ),
        # cpu over capacity is capped at 1: node1 1/0 -> 50, node2 1/.5 -> 75
        (
            _rpod(*CPU_ONLY),
            [_n("node1", "4000", "10000"), _n("node2", "4000", "10000")],
            [_rpod(*CPU_ONLY, node="node1", name="a"), _rpod(*CPU_AND_MEMORY, node="node2", name="b")],
            [50, 75],
        ),
        # no allocatable at all: no fractions, std 0
        (_rpod(*CPU_ONLY), [_n("node1", "0", "0")], [], [100]),
    ],
)
def test_balanced_allocation_two_resources(pod, nodes: list, existing: list, want: list[int]) -> None:
    s, got = _balanced(BalancedAllocation(), pod, nodes, existing)
    assert s is None
    assert got == want


def test_balanced_allocation_skips_best_effort_pods() -> None:
    s, _ = _balanced(BalancedAllocation(), _rpod(), [_n("node1", "4000", "10000")], [])
    assert s is not None and s.code == Code.SKIP
    s, _ = _balanced(BalancedAllocation(), _rpod({"cpu": "0", "memory": "0"}), [_n("node1", "4000", "10000")], [])
    assert s is not None and s.code == Code.SKIP


THREE = NodeResourcesBalancedAllocationArgs(
    [ResourceSpec("cpu", 1), ResourceSpec("memory", 1), ResourceSpec("nvidia.com/gpu", 1)]
)


def test_balanced_allocation_three_resources() -> None:
    # node1: cpu 3000/3500, memory 5000/40000, gpu (3+1)/8 -> std 0.2989 -> 70
    # node2: cpu 3000/3500, memory 5000/40000, gpu 1/8 -> std 0.3451 -> 65
    pod = _rpod({"cpu": "1000", "memory": "2000", "nvidia.com/gpu": "1"}, {"cpu": "2000", "memory": "3000"})
    nodes = [_n("node1", "3500", "40000", nvidia_com__gpu="8"), _n("node2", "3500", "40000", nvidia_com__gpu="8")]
    existing = [_rpod({"nvidia.com/gpu": "3"}, node="node1", name="g")]
    assert _balanced(BalancedAllocation(THREE), pod, nodes, existing) == (None, [70, 65])


def test_balanced_allocation_bypasses_scalar_resources_not_requested_or_absent() -> None:
    pod = _rpod({"cpu": "3000", "memory": "5000"})
    nodes = [_n("node1", "4000", "10000", nvidia_com__gpu="8"), _n("node2", "4000", "10000")]
    assert _balanced(BalancedAllocation(THREE), pod, nodes, []) == (None, [87, 87])
    gpu_pod = _rpod({"cpu": "3000", "memory": "5000", "nvidia.com/gpu": "2"})
    # node1: .75 .5 .25 -> std .2041 -> 79; node2 has no gpu: two fractions -> 87
    assert _balanced(BalancedAllocation(THREE), gpu_pod, nodes, []) == (None, [79, 87])


def test_balanced_allocation_score_without_pre_score_for_best_effort_pod_is_zero() -> None:
    env = Env([_n("node1", "4000", "10000")], [_rpod({"cpu": "3000"}, node="node1", name="a")])
    assert BalancedAllocation().score(CycleState(), PodInfo(_rpod()), env.node("node1")) == (0, None)
    idx = np.array([env.node("node1").index], np.int64)
    assert BalancedAllocation().score_all(CycleState(), PodInfo(_rpod()), env.snapshot, idx).tolist() == [0]


# ---------------------------------------------------------------- ImageLocality


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@sha256:abc", "root@sha256:abc"),
        ("gcr.io/40", "gcr.io/40:latest"),
    ],
)
def test_normalized_image_name(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10 = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]


def _image_pod(*images: str, init: tuple[str, ...] = ()):
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": im} for i, im in enumerate(images)]}
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": im} for i, im in enumerate(init)]
    return make_pod("p", spec=spec)


def _image_scores(pod, nodes: list) -> list[int]:
    env = Env(nodes)
    pl = ImageLocality(env.handle)
    pi = PodInfo(pod)
    names = [n.metadata.name for n in nodes]
    per_node = [pl.score(CycleState(), pi, env.node(n))[0] for n in names]
    idx = np.array([env.node(n).index for n in names], np.int64)
    assert pl.score_all(CycleState(), pi, env.snapshot, idx).tolist() == per_node
    return per_node


@pytest.mark.parametrize(
    ("pod", "nodes", "want"),
    [
        # 40MB*1/2 < 23MB -> 0; 250MB*1/2: 100*(125MB-23MB)/(2000MB-23MB) = 5
        (
            _image_pod("gcr.io/40", "gcr.io/250"),
            [make_node("machine1", images=NODE_40_300_2000), make_node("machine2", images=NODE_250_10)],
            [0, 5],
        ),
        # (40MB+300MB)/2 = 170MB -> 7
        (
            _image_pod("gcr.io/40", "gcr.io/300"),
            [make_node("machine1", images=NODE_40_300_2000), make_node("machine2", images=NODE_250_10)],
            [7, 0],
        ),
        # 2000MB/2 = 1000MB -> 49; 10MB/2 -> 0
        (
            _image_pod("gcr.io/2000", "gcr.io/10"),
            [make_node("machine1", images=NODE_40_300_2000), make_node("machine2", images=NODE_250_10)],
            [49, 0],
        ),
        # three nodes: 2000MB/3 -> 32
        (
            _image_pod("gcr.io/2000", "gcr.io/10"),
            [
                make_node("machine1", images=NODE_40_300_2000),
                make_node("machine2", images=NODE_250_10),
                make_node("machine3"),
            ],
            [32, 0, 0],
        ),
        # an image on every node counts in full; init containers count as containers
        (
            _image_pod("gcr.io/300:v1", init=("gcr.io/2000",)),
            [make_node("a", images=NODE_40_300_2000), make_node("b", images=NODE_40_300_2000)],
            [100, 100],
        ),
        # 300MB/2 = 150MB with one container: 100*(150MB-23MB)/(1000MB-23MB) = 12
        (_image_pod("gcr.io/300:v1"), [make_node("a", images=NODE_40_300_2000), make_node("b")], [12]),
    ],
)
def test_image_locality_scores(pod, nodes: list, want: list[int]) -> None:
    assert _image_scores(pod, nodes)[: len(want)] == want


@pytest.mark.parametrize(
    ("sum_scores", "containers", "want"),
    [
        (0, 1, 0),
        (23 * MB, 1, 0),
        (23 * MB + 1, 1, 0),
        (1000 * MB, 1, 100),
        (5000 * MB, 1, 100),
        (511 * MB, 1, 49),
        (1000 * MB, 2, 49),
    ],
)
def test_calculate_priority_thresholds(sum_scores: int, containers: int, want: int) -> None:
    assert calculate_priority(sum_scores, containers) == want


def test_scaled_image_score_truncates() -> None:
    st = ImageStateSummary(2000 * MB)
    st.nodes = {"a"}
    assert scaled_image_score(st, 3) == 699050666
    st.nodes = {"a", "b", "c"}
    assert scaled_image_score(st, 3) == 2000 * MB


def test_image_locality_follows_image_changes_between_pods_alike() -> None:
    """score_all answers 0 everywhere while no node reports an image (the snapshot's image index is empty):
    images appearing or going between two pods alike must show in the next pod's scores."""
    env = Env([make_node("a"), make_node("b")])
    pl = ImageLocality(env.handle)
    idx = np.array([0, 1], np.int64)

    def scores() -> list[int]:
        pod = PodInfo(_image_pod("gcr.io/300:v1"))
        got = pl.score_all(CycleState(), pod, env.snapshot, idx).tolist()
        assert got == [pl.score(CycleState(), pod, ni)[0] for ni in env.snapshot.nodes]
        return got

    def set_images(name: str, images: list) -> None:
        env.cache.update_node(env.cache.nodes[name].node, make_node(name, images=images))
        env.cache.update_snapshot(env.snapshot)

    assert scores() == [0, 0]
    set_images("a", NODE_40_300_2000)
    assert scores() == [12, 0]
    set_images("a", [])
    assert scores() == [0, 0]
