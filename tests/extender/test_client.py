"""HTTPExtender against the golden cases' reference server, and a fake for what it cannot do."""

from __future__ import annotations

import json

import pytest
from extender_helpers import Canned, extender_config, node_manifest, pod_info, snapshot_of

from kubesched.extender.client import ExtenderCallError, HTTPExtender
from kubesched.preemption.evaluator import Victims

NODES = [
    node_manifest("n-1", {"pool": "legacy", "disk": "ssd"}),
    node_manifest("n-2", {"pool": "main", "disk": "ssd"}),
    node_manifest("n-3", {"pool": "main", "disk": "nvme", "maint": "now"}),
]


def test_filter_node_cache_capable_keeps_the_callers_node_infos(reference):
    srv = reference("--node-cache-capable", "--reject-label", "pool=legacy", nodes=NODES)
    snap = snapshot_of(NODES)
    ext = HTTPExtender(extender_config(srv.url, node_cache_capable=True))
    reply = ext.filter(pod_info("p"), snap.nodes)
    assert [ni.name for ni in reply.nodes] == ["n-2", "n-3"]
    assert all(ni is snap.node_map[ni.name] for ni in reply.nodes)
    assert reply.failed == {"n-1": "extender: node has label pool=legacy"}
    assert reply.failed_and_unresolvable == {}


def test_filter_without_node_cache_sends_nodes_and_returns_fresh_pod_less_node_infos(reference):
    # No --node-labels: the server can only see labels in the Node objects we send.
    srv = reference("--reject-label", "pool=legacy", "--unresolvable-label", "maint=now")
    running = pod_info("running", node="n-2", requests={"cpu": "3"})
    snap = snapshot_of(NODES, [running])
    ext = HTTPExtender(extender_config(srv.url, node_cache_capable=False))
    reply = ext.filter(pod_info("p"), snap.nodes)
    assert [ni.name for ni in reply.nodes] == ["n-2"]
    fresh = reply.nodes[0]
    assert fresh is not snap.node_map["n-2"]
    assert fresh.pods == [] and fresh.requested.milli_cpu == 0
    assert fresh.allocatable.milli_cpu == 4000
    assert fresh.node is not None and fresh.node.metadata.labels["disk"] == "ssd"
    assert reply.failed == {"n-1": "extender: node has label pool=legacy"}
    assert reply.failed_and_unresolvable == {"n-3": "extender: node has label maint=now"}


def test_filter_request_json_is_upstreams(fake):
    srv = fake({"filter": Canned(200, b'{"NodeNames": ["n-1"], "Error": ""}')})
    snap = snapshot_of(NODES)
    pod = pod_info("p", requests={"cpu": "1"})
    HTTPExtender(extender_config(srv.url, node_cache_capable=True)).filter(pod, snap.nodes)
    HTTPExtender(extender_config(srv.url, node_cache_capable=False)).filter(pod, snap.nodes)
    cached, full = (r.json() for r in srv.requests)
    assert srv.requests[0].path == "/filter"
    assert srv.requests[0].headers["Content-Type"] == "application/json"
    assert list(cached) == ["Pod", "Nodes", "NodeNames"]
    assert cached["Nodes"] is None and cached["NodeNames"] == ["n-1", "n-2", "n-3"]
    assert cached["Pod"]["metadata"]["name"] == "p"
    assert cached["Pod"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    assert full["NodeNames"] is None
    assert full["Nodes"]["metadata"] == {}
    assert [n["metadata"]["name"] for n in full["Nodes"]["items"]] == ["n-1", "n-2", "n-3"]
    assert full["Nodes"]["items"][0]["status"]["capacity"]["cpu"] == "4"


def test_filter_error_field_is_the_error(reference):
    srv = reference("--filter-error", "no capacity in the rack")
    with pytest.raises(ExtenderCallError, match=r"^no capacity in the rack$"):
        HTTPExtender(extender_config(srv.url)).filter(pod_info("p"), snapshot_of(NODES).nodes)


def test_http_status_is_upstreams_message(reference):
    srv = reference("--http-status", "500")
    ext = HTTPExtender(extender_config(srv.url))
    with pytest.raises(ExtenderCallError) as err:
        ext.filter(pod_info("p"), snapshot_of(NODES).nodes)
    assert str(err.value) == f"failed filter with extender at URL {srv.url}/filter, code 500"


def test_empty_body_is_eof(reference):
    srv = reference("--http-status", "200")
    with pytest.raises(ExtenderCallError, match=r"^EOF$"):
        HTTPExtender(extender_config(srv.url)).filter(pod_info("p"), snapshot_of(NODES).nodes)


def test_connection_refused_is_gos_text(down_url):
    ext = HTTPExtender(extender_config(down_url))
    with pytest.raises(ExtenderCallError) as err:
        ext.filter(pod_info("p"), snapshot_of(NODES).nodes)
    port = down_url.rsplit(":", 1)[1]
    assert str(err.value) == (f'Post "{down_url}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused')


def test_url_prefix_trailing_slash_is_trimmed(fake):
    srv = fake({"filter": Canned(200, b'{"NodeNames": []}')})
    HTTPExtender(extender_config(srv.url + "/ext//", node_cache_capable=True)).filter(
        pod_info("p"), snapshot_of(NODES).nodes
    )
    assert srv.requests[0].path == "/ext/filter"


def test_timeout_is_gos_text(fake):
    srv = fake({"filter": Canned(200, b"{}", delay=1.0)})
    ext = HTTPExtender(extender_config(srv.url, http_timeout=0.2))
    with pytest.raises(ExtenderCallError) as err:
        ext.filter(pod_info("p"), snapshot_of(NODES).nodes)
    assert str(err.value) == (
        f'Post "{srv.url}/filter": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    )


def test_zero_timeout_means_five_seconds(down_url):
    assert HTTPExtender(extender_config(down_url, http_timeout=0)).poster.timeout == 5.0
    assert HTTPExtender(extender_config(down_url, http_timeout=2.5)).poster.timeout == 2.5


def test_node_names_not_sent_are_an_error(fake):
    srv = fake({"filter": Canned(200, b'{"NodeNames": ["n-1", "ghost"]}')})
    ext = HTTPExtender(extender_config(srv.url, node_cache_capable=True))
    with pytest.raises(ExtenderCallError) as err:
        ext.filter(pod_info("p"), snapshot_of(NODES).nodes)
    assert str(err.value) == (
        f'extender "{srv.url}" claims a filtered node "ghost" which is not found in the input node list'
    )


def test_answer_decoded_as_go_does(fake):
    # Field names match case-insensitively, unknown ones are ignored, trailing bytes too.
    body = b'{"nodenames": ["n-2"], "failednodes": {"n-1": "busy"}, "Extra": 1} trailing'
    srv = fake({"filter": Canned(200, body)})
    reply = HTTPExtender(extender_config(srv.url, node_cache_capable=True)).filter(
        pod_info("p"), snapshot_of(NODES).nodes
    )
    assert [ni.name for ni in reply.nodes] == ["n-2"]
    assert reply.failed == {"n-1": "busy"}


def test_answer_of_the_wrong_type_is_gos_error(fake):
    srv = fake({"filter": Canned(200, b'{"FailedNodes": {"n-1": 3}}')})
    with pytest.raises(ExtenderCallError) as err:
        HTTPExtender(extender_config(srv.url)).filter(pod_info("p"), snapshot_of(NODES).nodes)
    assert str(err.value) == (
        "json: cannot unmarshal number into Go struct field ExtenderFilterResult.FailedNodes of type string"
    )


def test_names_answer_ignored_without_node_cache(fake):
    # Upstream only reads NodeNames when nodeCacheCapable; with neither list every node is gone.
    srv = fake({"filter": Canned(200, b'{"NodeNames": ["n-1"]}')})
    reply = HTTPExtender(extender_config(srv.url, node_cache_capable=False)).filter(
        pod_info("p"), snapshot_of(NODES).nodes
    )
    assert reply.nodes == []


def test_no_filter_verb_means_no_request(down_url):
    snap = snapshot_of(NODES)
    reply = HTTPExtender(extender_config(down_url, filter_verb="")).filter(pod_info("p"), snap.nodes)
    assert reply.nodes == snap.nodes and reply.failed == {}


@pytest.mark.parametrize("cache", [True, False])
def test_prioritize(reference, cache):
    args = ["--prefer-label", "disk=ssd:3", "--prefer-label", "pool=main:9", "--default-score", "2"]
    srv = reference(*args, *(["--node-cache-capable"] if cache else []), nodes=NODES)
    snap = snapshot_of(NODES)
    scores, weight = HTTPExtender(extender_config(srv.url, weight=4, node_cache_capable=cache)).prioritize(
        pod_info("p"), snap.nodes
    )
    assert weight == 4
    assert scores == [("n-1", 3), ("n-2", 10), ("n-3", 9)]


def test_no_prioritize_verb_scores_zero_with_weight_zero(down_url):
    ext = HTTPExtender(extender_config(down_url, prioritize_verb="", weight=3))
    assert ext.prioritize(pod_info("p"), snapshot_of(NODES).nodes) == ([("n-1", 0), ("n-2", 0), ("n-3", 0)], 0)


@pytest.mark.parametrize(
    ("pod", "interested"),
    [
        (pod_info("none"), False),
        (pod_info("cpu", requests={"cpu": "1"}), False),
        (pod_info("req", requests={"example.com/gpu": "1"}), True),
        (pod_info("lim", limits={"example.com/gpu": "1"}), True),
        (pod_info("init", init_requests={"example.com/gpu": "1"}), True),
    ],
)
def test_is_interested_in_managed_resources(down_url, pod, interested):
    ext = HTTPExtender(extender_config(down_url, managed=["example.com/gpu"]))
    assert ext.is_interested(pod) is interested
    assert ext.is_interested(pod.pod) is interested
    assert HTTPExtender(extender_config(down_url)).is_interested(pod) is True


def test_capabilities(down_url):
    ext = HTTPExtender(extender_config(down_url, preempt_verb="preempt", bind_verb="bind", ignorable=True))
    assert ext.name() == down_url
    assert ext.supports_preemption() and ext.is_binder() and ext.is_prioritizer() and ext.is_filter()
    assert ext.is_ignorable()
    bare = HTTPExtender(extender_config(down_url, filter_verb="", prioritize_verb=""))
    assert not (bare.supports_preemption() or bare.is_binder() or bare.is_prioritizer() or bare.is_filter())
    assert not bare.is_ignorable()


@pytest.mark.parametrize("cache", [True, False])
def test_preempt_round_trip(reference, cache):
    srv = reference(*(["--node-cache-capable"] if cache else []), nodes=NODES)
    v1, v2, v3 = (pod_info(f"v{i}", node=n) for i, n in ((1, "n-1"), (2, "n-1"), (3, "n-2")))
    snap = snapshot_of(NODES, [v1, v2, v3])
    ext = HTTPExtender(extender_config(srv.url, preempt_verb="preempt", node_cache_capable=cache))
    out = ext.process_preemption(pod_info("hi"), {"n-1": Victims([v1, v2], 1), "n-2": Victims([v3])}, snap)
    assert set(out) == {"n-1", "n-2"}
    assert [pi.uid for pi in out["n-1"].pods] == ["uid-v1", "uid-v2"]
    assert out["n-1"].pods[0] is snap.node_map["n-1"].pods[0]
    assert out["n-1"].num_pdb_violations == 1 and out["n-2"].num_pdb_violations == 0


def test_preempt_request_json(fake):
    srv = fake({"preempt": Canned(200, b'{"NodeNameToMetaVictims": {}}')})
    v = pod_info("v", node="n-1")
    snap = snapshot_of(NODES, [v])
    for cache in (True, False):
        ext = HTTPExtender(extender_config(srv.url, preempt_verb="preempt", node_cache_capable=cache))
        assert ext.process_preemption(pod_info("hi"), {"n-1": Victims([v], 2)}, snap) == {}
    meta, full = (r.json() for r in srv.requests)
    assert meta["NodeNameToVictims"] is None
    assert meta["NodeNameToMetaVictims"] == {"n-1": {"Pods": [{"UID": "uid-v"}], "NumPDBViolations": 2}}
    assert full["NodeNameToMetaVictims"] is None
    assert full["NodeNameToVictims"]["n-1"]["NumPDBViolations"] == 2
    assert full["NodeNameToVictims"]["n-1"]["Pods"][0]["metadata"]["uid"] == "uid-v"


def test_preempt_unknown_pod_is_upstreams_error(fake):
    body = json.dumps({"NodeNameToMetaVictims": {"n-1": {"Pods": [{"UID": "nope"}]}}}).encode()
    srv = fake({"preempt": Canned(200, body)})
    snap = snapshot_of(NODES)
    ext = HTTPExtender(extender_config(srv.url, preempt_verb="preempt"))
    with pytest.raises(ExtenderCallError) as err:
        ext.process_preemption(pod_info("hi"), {}, snap)
    assert str(err.value) == (
        f"extender: {srv.url} claims to preempt pod (UID: &{{nope}}) on node: n-1, "
        "but the pod is not found on that node"
    )


def test_preempt_without_verb_is_an_error(down_url):
    with pytest.raises(ExtenderCallError, match="preempt verb is not defined"):
        HTTPExtender(extender_config(down_url)).process_preemption(pod_info("p"), {}, snapshot_of(NODES))


def test_bind_round_trip(reference):
    srv = reference()
    HTTPExtender(extender_config(srv.url, bind_verb="bind")).bind(pod_info("p", uid="u-1"), "n-2")
    assert any(line.startswith("extender: bind default/p") for line in srv.requests())


def test_bind_request_and_error(fake):
    srv = fake({"bind": Canned(200, b'{"Error": "node is full"}')})
    ext = HTTPExtender(extender_config(srv.url, bind_verb="bind"))
    with pytest.raises(ExtenderCallError, match=r"^node is full$"):
        ext.bind(pod_info("p", uid="u-1"), "n-2")
    assert srv.requests[0].json() == {"PodName": "p", "PodNamespace": "default", "PodUID": "u-1", "Node": "n-2"}


def test_bind_without_verb_is_an_error(down_url):
    with pytest.raises(ExtenderCallError, match="unexpected empty bindVerb in extender"):
        HTTPExtender(extender_config(down_url)).bind(pod_info("p"), "n-1")
