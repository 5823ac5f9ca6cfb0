"""The GPU model: requests from annotations, per-GPU free milli derived from pods, Filter and GPU choice."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kubesched.plugin_api import CycleState
from kubesched.research.policies.gpushare import (
    GpuRequest,
    GpuShare,
    GpuShareArgs,
    accepts_model,
    best_fit_gpu,
    device_table,
    exclusive_gpus,
    node_gpus,
    parse_request,
    random_fit_gpu,
    worst_fit_gpu,
)

from .helpers import bound, env, node, pod


def test_request_from_annotations():
    e = env([node("n")])
    assert parse_request(e.pod_info(pod("s", cpu=4000, milli=470))) == GpuRequest(4000, 470, 1, "")
    assert parse_request(e.pod_info(pod("w", milli=1000, num=4))).total == 4000
    assert not parse_request(e.pod_info(pod("c"))).uses_gpu
    assert parse_request(e.pod_info(pod("m", milli=1000, spec="V100M16|V100M32"))).models == "V100M16|V100M32"


def test_models():
    assert accepts_model("", "")
    assert accepts_model("V100M16|V100M32", "V100M32")
    assert not accepts_model("V100M16|V100M32", "T4")
    assert not accepts_model("T4", "")


def test_free_milli_derived_from_the_pods_on_the_node():
    running = [bound(pod("a", milli=300), "n", (1,)), bound(pod("b", milli=500), "n", (1,)), bound(pod("c"), "n", ())]
    e = env([node("n", gpus=4, cpu=64000)], running)
    v = node_gpus(e.node("n"))
    assert v.free == [1000, 200, 1000, 1000]
    assert v.cpu_left == 64000 - 3 * 8000
    assert v.affinity == {"share-gpu": 2}
    t = device_table(e.snapshot)
    assert t.free[0].tolist() == [1000, 200, 1000, 1000]
    assert t.gpu_left[0] == 3200 and t.aff[0, 0] == 2 and t.naff[0] == 1


def test_filter_per_node_and_whole_snapshot_agree():
    nodes = [node("cpu", gpus=0), node("t4", gpus=2), node("v100", gpus=4, model="V100M32"), node("full", gpus=1)]
    running = [bound(pod("x", milli=1000), "full", (0,)), bound(pod("y", milli=900), "t4", (0,))]
    e = env(nodes, running)
    plugin = GpuShare(GpuShareArgs(), e.handle)
    cases = {
        "share": (pod("p1", milli=500), {"cpu": False, "t4": True, "v100": True, "full": False}),
        "two": (pod("p2", milli=1000, num=2), {"cpu": False, "t4": False, "v100": True, "full": False}),
        "v100": (pod("p3", milli=100, spec="V100M32"), {"cpu": False, "t4": False, "v100": True, "full": False}),
    }
    for p, want in cases.values():
        pi = e.pod_info(p)
        got = {n: plugin.filter(CycleState(), pi, e.node(n)) is None for n in want}
        assert got == want
        verdicts = plugin.filter_all(CycleState(), pi, e.snapshot)
        assert verdicts is not None
        assert {ni.name: not verdicts.failed[ni.index] for ni in e.snapshot.nodes} == want
    msg = plugin.filter(CycleState(), e.pod_info(cases["v100"][0]), e.node("t4"))
    assert msg is not None and msg.message() == "node(s) had no GPU of the requested model"


def test_gpu_choice():
    e = env([node("n", gpus=4)], [bound(pod("a", milli=600), "n", (1,)), bound(pod("b", milli=300), "n", (2,))])
    v = node_gpus(e.node("n"))  # free: 1000, 400, 700, 1000
    share = GpuRequest(1000, 350, 1)
    assert best_fit_gpu(v, share) == (1,)
    assert worst_fit_gpu(v, share) == (0,)
    assert best_fit_gpu(v, GpuRequest(1000, 500, 1)) == (2,)
    assert exclusive_gpus(v, GpuRequest(1000, 1000, 2)) == (0, 3)
    assert exclusive_gpus(v, GpuRequest(1000, 1000, 3)) is None
    drawn = {random_fit_gpu(v, share, random.Random(s)) for s in range(40)}
    assert drawn == {(0,), (1,), (2,), (3,)}


def test_reserve_records_the_choice_until_unreserve():
    e = env([node("n", gpus=2)], [bound(pod("a", milli=600), "n", (0,))])
    plugin = GpuShare(GpuShareArgs("best"), e.handle)
    pi = e.pod_info(pod("p", milli=300))
    assert plugin.reserve(CycleState(), pi, "n") is None
    assert pi.cache["gpushare/alloc"] == ((0,), 300)
    plugin.unreserve(CycleState(), pi, "n")
    assert "gpushare/alloc" not in pi.cache


def test_bad_annotations_are_named():
    e = env([node("n")])
    p = pod("p", milli=500)
    ann = dict(p.metadata.annotations)
    ann["alibabacloud.com/gpu-milli"] = "half"
    import msgspec

    bad = msgspec.structs.replace(p, metadata=msgspec.structs.replace(p.metadata, annotations=ann))
    with pytest.raises(ValueError, match="gpu-milli: 'half' is not a whole number"):
        parse_request(e.pod_info(bad))


def test_table_rows_follow_the_snapshot():
    e = env([node("a"), node("b")])
    t = device_table(e.snapshot)
    assert np.array_equal(t.gpu_left, [2000, 2000])
    e.add_pod(bound(pod("x", milli=1000), "b", (1,)))
    t = device_table(e.snapshot)
    assert t.free[e.node("b").index].tolist() == [1000, 0]
