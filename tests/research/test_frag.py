"""Typical pods and the fragmentation measure: the per-node definition and the column form agree."""

from __future__ import annotations

import random

import numpy as np

from kubesched.research.policies.frag import FragModel, TypicalPod, node_frag, typical_pods
from kubesched.research.policies.gpushare import GpuRequest, NodeGpus


def test_typical_pods_cover_the_threshold_and_renormalize():
    reqs = [GpuRequest(1000, 500, 1)] * 6 + [GpuRequest(2000, 1000, 1)] * 3 + [GpuRequest(4000, 0, 0)]
    got = typical_pods(reqs, threshold=80)
    # 6 then 9 of 10 pods: 90% >= 80%, the third shape is left out; frequencies 6/9 and 3/9.
    assert [(t.cpu, t.milli) for t in got] == [(1000, 500), (2000, 1000)]
    assert [round(t.freq, 6) for t in got] == [round(6 / 9, 6), round(3 / 9, 6)]
    # Equal counts: the larger shape (more CPU) first, as Go's reversed PodResource.Less orders them.
    tie = typical_pods([GpuRequest(1000, 500, 1), GpuRequest(3000, 500, 1)], threshold=100)
    assert [t.cpu for t in tie] == [3000, 1000]


def test_node_frag_by_hand():
    typical = [TypicalPod(1000, 500, 1, "", 0.5), TypicalPod(1000, 0, 0, "", 0.25), TypicalPod(9000, 800, 1, "", 0.25)]
    v = NodeGpus("n", 8000, 8000, "T4", [300, 700], {})
    # 500-share: fits GPU 1; GPU 0's 300 < 500 is fragment: 0.5 * 300. CPU pod: all 1000: 0.25 * 1000.
    # 800-share needing 9 CPUs: neither GPU nor CPU enough: all 1000: 0.25 * 1000.
    assert node_frag(v, typical) == 150 + 250 + 250


def test_column_form_agrees_with_the_definition():
    rng = random.Random(3)
    typical = typical_pods(
        [GpuRequest(rng.choice([0, 2000, 8000]), rng.choice([0, 160, 470, 810, 1000]), 1) for _ in range(200)]
        + [GpuRequest(16000, 1000, 2, "V100M32")] * 5,
        threshold=100,
    )
    typical = [TypicalPod(t.cpu, t.milli, t.num if t.milli else 0, t.models, t.freq) for t in typical]
    models = {"T4": 0, "V100M32": 1}
    fm = FragModel(typical, models)
    for _ in range(200):
        n = rng.choice([1, 2, 4, 8])
        free = [rng.choice([0, 100, 300, 530, 1000]) for _ in range(n)]
        model = rng.choice(["T4", "V100M32"])
        v = NodeGpus("n", rng.choice([0, 3000, 9000, 40000]), 64000, model, free, {})
        row = np.array([free + [-1] * (8 - n)])
        got = fm.frag(row, np.array([v.cpu_left]), np.array([models[model]]))[0]
        assert abs(got - node_frag(v, typical)) < 1e-6
        req = GpuRequest(rng.choice([1000, 8000]), rng.choice([300, 1000]), 1)
        after = fm.frag_after(row, np.array([v.cpu_left]), np.array([models[model]]), req)[0]
        for j, f in enumerate(free):
            if req.is_share and f >= req.milli:
                left = [x - (i == j) * req.milli for i, x in enumerate(free)]
                moved = NodeGpus("n", v.cpu_left - req.cpu, 64000, model, left, {})
                assert abs(after[j] - node_frag(moved, typical)) < 1e-6
