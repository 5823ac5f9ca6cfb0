"""filter_with_extenders and prioritize_with_extenders: upstream's findNodesThatPassExtenders and the
extender part of prioritizeNodes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from extender_helpers import Canned, extender_config, node_manifest, pod_info, snapshot_of

from kubesched.extender.client import HTTPExtender
from kubesched.extender.runner import ExtenderError, filter_with_extenders, prioritize_with_extenders
from kubesched.framework.diagnosis import NodeToStatus
from kubesched.framework.status import Code, Status

NODES = [
    node_manifest("n-1", {"pool": "legacy"}),
    node_manifest("n-2", {"pool": "main", "tier": "gold"}),
    node_manifest("n-3", {"pool": "main", "maint": "now"}),
    node_manifest("n-4", {"pool": "main", "maint": "soon"}),
]
ALL = np.arange(4, dtype=np.int64)


def _ext(url: str, **kw) -> HTTPExtender:
    return HTTPExtender(extender_config(url, **kw))


def test_failed_nodes_become_statuses(reference):
    srv = reference(
        "--node-cache-capable",
        "--reject-label", "pool=legacy",
        "--reject-label", "maint=soon",
        "--unresolvable-label", "maint=now",
        nodes=NODES,
    )  # fmt: skip
    snap = snapshot_of(NODES)
    statuses = NodeToStatus()
    res = filter_with_extenders([_ext(srv.url, node_cache_capable=True)], pod_info("p"), ALL, snap, statuses)
    assert res.feasible.tolist() == [1]
    assert not res.replaced
    assert res.nodes == [snap.node_map["n-2"]]
    assert statuses.get("n-1") == Status(Code.UNSCHEDULABLE, "extender: node has label pool=legacy")
    assert statuses.get("n-4") == Status(Code.UNSCHEDULABLE, "extender: node has label maint=soon")
    assert statuses.get("n-3") == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "extender: node has label maint=now")
    assert len(statuses) == 3


def test_without_node_cache_the_nodes_are_replaced_by_pod_less_ones(reference):
    srv = reference("--reject-label", "pool=legacy")
    running = pod_info("running", node="n-2", requests={"cpu": "3"})
    snap = snapshot_of(NODES, [running])
    res = filter_with_extenders([_ext(srv.url)], pod_info("p"), np.array([0, 1, 3]), snap, NodeToStatus())
    assert res.replaced
    assert res.feasible.tolist() == [1, 3]
    assert [ni.name for ni in res.nodes] == ["n-2", "n-4"]
    assert all(ni.pods == [] and ni.requested.milli_cpu == 0 for ni in res.nodes)
    assert snap.node_map["n-2"].requested.milli_cpu == 3000  # the snapshot itself is untouched


def test_unresolvable_wins_over_failed(fake):
    body = json.dumps(
        {"NodeNames": [], "FailedNodes": {"n-1": "a", "n-2": "b"}, "FailedAndUnresolvableNodes": {"n-1": "c"}}
    )
    srv = fake({"filter": Canned(200, body.encode())})
    statuses = NodeToStatus()
    filter_with_extenders(
        [_ext(srv.url, node_cache_capable=True)], pod_info("p"), ALL[:2], snapshot_of(NODES), statuses
    )
    assert statuses.get("n-1") == Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "c")
    assert statuses.get("n-2") == Status(Code.UNSCHEDULABLE, "b")


def test_extenders_run_in_order_on_what_the_previous_kept(fake, reference):
    first = reference("--node-cache-capable", "--reject-label", "pool=legacy", nodes=NODES)
    second = fake({"filter": Canned(200, b'{"NodeNames": ["n-3"]}')})
    res = filter_with_extenders(
        [_ext(first.url, node_cache_capable=True), _ext(second.url, node_cache_capable=True)],
        pod_info("p"),
        ALL,
        snapshot_of(NODES),
        NodeToStatus(),
    )
    assert second.requests[0].json()["NodeNames"] == ["n-2", "n-3", "n-4"]
    assert res.feasible.tolist() == [2]


def test_stops_when_no_node_is_left(fake, down_url):
    none_left = fake({"filter": Canned(200, b'{"NodeNames": []}')})
    exts = [_ext(none_left.url, node_cache_capable=True), _ext(down_url)]  # the second would fail
    res = filter_with_extenders(exts, pod_info("p"), ALL, snapshot_of(NODES), NodeToStatus())
    assert res.feasible.tolist() == []


def test_not_interested_extender_is_not_called(down_url):
    exts = [_ext(down_url, managed=["example.com/gpu"])]
    res = filter_with_extenders(exts, pod_info("p", requests={"cpu": "1"}), ALL, snapshot_of(NODES), NodeToStatus())
    assert res.feasible.tolist() == [0, 1, 2, 3]
    with pytest.raises(ExtenderError):
        filter_with_extenders(
            exts, pod_info("p", requests={"example.com/gpu": "1"}), ALL, snapshot_of(NODES), NodeToStatus()
        )


def test_ignorable_extender_down_is_skipped(down_url, reference):
    after = reference("--node-cache-capable", "--reject-label", "pool=legacy", nodes=NODES)
    exts = [_ext(down_url, ignorable=True), _ext(after.url, node_cache_capable=True)]
    statuses = NodeToStatus()
    res = filter_with_extenders(exts, pod_info("p"), ALL, snapshot_of(NODES), statuses)
    assert res.feasible.tolist() == [1, 2, 3]
    assert list(statuses.statuses) == ["n-1"]


def test_not_ignorable_extender_down_fails_with_the_client_error(down_url):
    port = down_url.rsplit(":", 1)[1]
    with pytest.raises(ExtenderError) as err:
        filter_with_extenders([_ext(down_url)], pod_info("p"), ALL, snapshot_of(NODES), NodeToStatus())
    assert str(err.value) == f'Post "{down_url}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused'


def test_extender_error_field_fails_unless_ignorable(reference):
    srv = reference("--filter-error", "rack offline")
    with pytest.raises(ExtenderError, match=r"^rack offline$"):
        filter_with_extenders([_ext(srv.url)], pod_info("p"), ALL, snapshot_of(NODES), NodeToStatus())
    res = filter_with_extenders([_ext(srv.url, ignorable=True)], pod_info("p"), ALL, snapshot_of(NODES), NodeToStatus())
    assert res.feasible.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("cache", [True, False])
def test_prioritize_adds_score_times_weight_times_ten(reference, cache):
    flags = ["--node-cache-capable"] if cache else []
    gold = reference(*flags, "--prefer-label", "tier=gold:7", "--default-score", "1", nodes=NODES)
    main = reference(*flags, "--prefer-label", "pool=main:2", nodes=NODES)
    snap = snapshot_of(NODES)
    exts = [_ext(gold.url, weight=3, node_cache_capable=cache), _ext(main.url, weight=5, node_cache_capable=cache)]
    totals = prioritize_with_extenders(exts, pod_info("p"), snap.nodes)
    # n-1: 1*3*10 + 0, n-2: 7*3*10 + 2*5*10, n-3/n-4: 1*3*10 + 2*5*10
    assert totals.tolist() == [30, 310, 130, 130]


def test_prioritize_errors_and_uninterested_extenders_give_nothing(reference, down_url, fake):
    ok = reference("--node-cache-capable", "--default-score", "4", nodes=NODES)
    bad = fake({"prioritize": Canned(200, b'[{"Host": "n-1", "Score": "high"}]')})
    exts = [
        _ext(down_url, weight=9),
        _ext(bad.url, weight=9),
        _ext(ok.url, weight=2, node_cache_capable=True),
        _ext(ok.url, weight=9, managed=["example.com/gpu"]),
    ]
    totals = prioritize_with_extenders(exts, pod_info("p"), snapshot_of(NODES).nodes)
    assert totals.tolist() == [80, 80, 80, 80]


def test_prioritize_only_counts_the_given_nodes(fake):
    body = json.dumps([{"Host": "n-2", "Score": 3}, {"Host": "ghost", "Score": 10}, {"Host": "n-2", "Score": 1}])
    srv = fake({"prioritize": Canned(200, body.encode())})
    snap = snapshot_of(NODES)
    totals = prioritize_with_extenders([_ext(srv.url, weight=2)], pod_info("p"), snap.nodes[:2])
    assert totals.tolist() == [0, 80]  # repeated hosts add up, as upstream appends every entry
