"""Each policy's score on hand-made nodes, with the numbers worked out from the reference's definitions.

Node "used": 64 CPUs with 8 taken, two GPUs with 1000 and 500 milli free (a 500 share on GPU 1);
node "empty": the same, nothing on it. The vector path must give the per-node numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.plugin_api import CycleState, NodeScoreList
from kubesched.research.policies.best_fit import BestFit, min_max_normalize
from kubesched.research.policies.dot_product import DotProduct
from kubesched.research.policies.fgd import FGD, FGDArgs, TypicalPodArg, score_of
from kubesched.research.policies.gpu_clustering import GpuClustering
from kubesched.research.policies.gpu_packing import GpuPacking
from kubesched.research.policies.gpushare import node_gpus, parse_request
from kubesched.research.policies.random_score import RandomScore

from .helpers import bound, env, node, pod


@pytest.fixture
def cluster():
    nodes = [node("used"), node("empty"), node("big", gpus=8, cpu=96000)]
    return env(nodes, [bound(pod("a", milli=500), "used", (1,))])


def scores(plugin, e, p, state=None):
    state = state or CycleState()
    pi = e.pod_info(p)
    per_node = {ni.name: plugin.score(state, pi, ni)[0] for ni in e.snapshot.nodes}
    idx = np.arange(len(e.snapshot.nodes))
    fast = plugin.score_all(state, pi, e.snapshot, idx).tolist()
    vector = dict(zip([ni.name for ni in e.snapshot.nodes], fast, strict=True))
    assert per_node == vector
    return per_node


def test_best_fit(cluster):
    # used: leftover CPU 48000/128000 and GPU 1000/8000, each half weighted: 1 - (0.1875 + 0.0625) = 0.75.
    # empty: 56000/128000 and 1500/8000: 1 - (0.21875 + 0.09375) = 0.6875.
    got = scores(BestFit(), cluster, pod("p", cpu=8000, milli=500))
    assert got["used"] == 75 and got["empty"] == 68
    assert min_max_normalize(np.array([75, 68, 60])).tolist() == [100, 53, 0]
    assert min_max_normalize(np.array([7, 7])).tolist() == [0, 0]
    lst = NodeScoreList(["a", "b"], np.array([10, 20]))
    BestFit().normalize_score(CycleState(), None, lst)
    assert lst.scores.tolist() == [0, 100]


def test_dot_product(cluster):
    # used: (56000/128000)(8000/128000) + (1500/8000)(500/8000) = 0.02734375 + 0.01171875; halved, from 1: 98.
    # empty: (64000/128000)(8000/128000) + (2000/8000)(500/8000) = 0.03125 + 0.015625 -> 97.65625 -> 97.
    got = scores(DotProduct(), cluster, pod("p", cpu=8000, milli=500))
    assert got["used"] == 98 and got["empty"] == 97
    assert scores(DotProduct(), cluster, pod("huge", cpu=70000))["used"] == 0  # less CPU left than asked


def test_gpu_clustering(cluster):
    # used holds only share pods: 25 * (8000 - 1500) // 8000 + 75 = 20 + 75; empty: 25 * 6000 // 8000 + 25.
    got = scores(GpuClustering(), cluster, pod("s", milli=300))
    assert got == {"used": 95, "empty": 43, "big": 25}
    # A whole-GPU pod: other shapes only on "used" (band 0), no GPU pod on "empty" (band 25).
    assert scores(GpuClustering(), cluster, pod("w", milli=1000)) == {"used": 20, "empty": 43, "big": 25}
    assert set(scores(GpuClustering(), cluster, pod("cpu")).values()) == {0}


def test_gpu_packing(cluster):
    # A 400 share fits GPU 1's 500 on "used": 100 - (500 * 100 // 1000) // 10 = 95;
    # all GPUs free: max(33 - free GPUs, free GPUs): 31 with 2, 25 with 8.
    assert scores(GpuPacking(), cluster, pod("s", milli=400)) == {"used": 95, "empty": 31, "big": 25}
    # 600 does not fit GPU 1: a free GPU of a used node, max(50 - 1, 33).
    assert scores(GpuPacking(), cluster, pod("t", milli=600))["used"] == 49
    assert set(scores(GpuPacking(), cluster, pod("cpu")).values()) == {0}


def test_random_scores_the_drawn_node(cluster):
    plugin = RandomScore(cluster.handle)
    state = CycleState()
    p = pod("p")
    plugin.pre_score(state, cluster.pod_info(p), cluster.snapshot.nodes)
    got = scores(plugin, cluster, p, state)
    assert sorted(got.values()) == [0, 0, 100]


def fgd(typical):
    return FGD(FGDArgs([TypicalPodArg(*t) for t in typical]))


def test_fgd_score_and_gpu_choice():
    # Typical pods: half want a 500 share with 1 CPU, half only 1 CPU (all their node's free GPU counts).
    plugin = fgd([(1000, 500, 1, 0.5), (1000, 0, 0, 0.5)])
    e = env([node("a", cpu=8000), node("b", cpu=8000)], [bound(pod("x", cpu=0, milli=400), "b", (0,))])
    # a: free [1000, 1000]: frag 0.5 * 2000 = 1000 before; a 300 share anywhere: 0.5 * 1700 = 850 after.
    # b: free [600, 1000]: frag 0.5 * 1600 = 800 before; 300 on GPU 0 leaves 300 < 500 counted:
    #    0.5 * 300 + 0.5 * 1300 = 800 (score 50); on GPU 1: 0.5 * 1300 = 650 (score sigmoid(0.15) -> 53).
    assert score_of(1000, 850) == 53 and score_of(800, 800) == 50
    p = pod("p", cpu=1000, milli=300)
    assert scores(plugin, e, p) == {"a": 53, "b": 53}
    v, req = node_gpus(e.node("b")), parse_request(e.pod_info(p))
    assert plugin.options(req, v) == [(50, (0,)), (53, (1,))]
    assert plugin.select_gpus(e.pod_info(p), req, v) == (1,)


def test_fgd_whole_gpus_and_cpu():
    plugin = fgd([(4000, 1000, 1, 1.0)])
    e = env([node("a", cpu=8000), node("b", cpu=16000)])
    # A whole GPU: one full GPU stays on each node, so frag is 0 before and after (50), unless the CPU
    # left (8000 - 5000 = 3000 on a) drops below the typical pod's 4000: all 1000 free milli count (26).
    assert scores(plugin, e, pod("w", cpu=5000, milli=1000)) == {"a": 26, "b": 50}
