"""The scheduler cache (backend/cache/cache.go): pod state machine, nodes, image states, snapshots."""

from __future__ import annotations

import pytest

from kubesched.cache.cache import Cache, CacheError
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.types import PodInfo
from kubesched.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"


def _pi(name: str, cpu: str = "100m", node: str = "n1", **kw) -> PodInfo:
    return PodInfo(make_pod(name, cpu, "100Mi", node=node, **kw))


def _cache(*nodes) -> Cache:
    c = Cache()
    for n in nodes:
        c.add_node(n)
    return c


def _req_cpu(c: Cache, node: str) -> int:
    return c.nodes[node].requested.milli_cpu


# ---------------------------------------------------------------- pods


def test_assume_counts_the_pod_on_its_node() -> None:
    c = _cache(make_node("n1"))
    pi = _pi("p", "500m", node="")
    c.assume_pod(pi, "n1")
    assert c.is_assumed(pi.uid)
    assert _req_cpu(c, "n1") == 500
    assert [p.key for p in c.nodes["n1"].pods] == ["default/p"]


def test_assume_twice_is_an_error() -> None:
    c = _cache(make_node("n1"))
    pi = _pi("p", node="")
    c.assume_pod(pi, "n1")
    with pytest.raises(CacheError, match="is in the cache, so can't be assumed"):
        c.assume_pod(pi, "n1")


def test_forget_removes_an_assumed_pod() -> None:
    c = _cache(make_node("n1"))
    pi = _pi("p", "500m", node="")
    c.assume_pod(pi, "n1")
    c.forget_pod(pi)
    assert not c.is_assumed(pi.uid)
    assert c.get_pod(pi.uid) is None
    assert _req_cpu(c, "n1") == 0
    assert c.nodes["n1"].pods == []


def test_only_assumed_pods_can_be_forgotten() -> None:
    c = _cache(make_node("n1"))
    pi = _pi("p")
    c.add_pod(pi)
    with pytest.raises(CacheError, match="wasn't assumed so cannot be forgotten"):
        c.forget_pod(pi)
    with pytest.raises(CacheError, match="wasn't assumed so cannot be forgotten"):
        c.forget_pod(_pi("never-seen"))


def test_add_confirms_an_assumed_pod_with_the_informers_version() -> None:
    c = _cache(make_node("n1"))
    assumed = _pi("p", "500m", node="")
    c.assume_pod(assumed, "n1")
    bound = PodInfo(make_pod("p", "500m", "100Mi", node="n1", labels={"bound": "yes"}))
    c.add_pod(bound)
    assert not c.is_assumed(bound.uid)
    assert c.get_pod(bound.uid) is bound
    assert _req_cpu(c, "n1") == 500  # counted once
    assert c.nodes["n1"].pods == [bound]
    with pytest.raises(CacheError, match="was already in added state"):
        c.add_pod(bound)


def test_confirming_an_assumed_pod_orders_and_counts_as_remove_then_add() -> None:
    """A confirmation that counts alike swaps the pod objects in place (NodeInfo.replace_pod); one that does
    not (other requests) removes and adds: both leave the node's pod lists in remove-then-add order."""
    term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    for cpu_when_bound in ("500m", "600m"):
        c = _cache(make_node("n1"))
        first = _pi("a", "500m", node="", spec=anti)
        c.assume_pod(first, "n1")
        for name in ("b", "c"):
            c.add_pod(_pi(name, "100m", spec=anti))
        bound = _pi("a", cpu_when_bound, spec=anti)
        c.add_pod(bound)
        ni = c.nodes["n1"]
        assert [p.name for p in ni.pods] == ["c", "b", "a"], cpu_when_bound
        assert [p.name for p in ni.pods_with_affinity] == ["c", "b", "a"]
        assert [p.name for p in ni.pods_with_required_anti_affinity] == ["c", "b", "a"]
        assert ni.pods[2] is bound and c.get_pod(bound.uid) is bound
        assert _req_cpu(c, "n1") == 200 + int(cpu_when_bound.removesuffix("m"))
        assert sum(r.milli_cpu for r, _ in ni.priority_sums.values()) == _req_cpu(c, "n1")


def test_confirming_the_last_assumed_pod_keeps_the_order() -> None:
    """The usual case: the pod confirmed is the last one the node got (no scan for it); a pod in the middle
    is found by its uid all the same."""
    c = _cache(make_node("n1"))
    for name in ("b", "c"):
        c.add_pod(_pi(name, "100m"))
    c.assume_pod(_pi("a", "500m", node=""), "n1")
    c.assume_pod(_pi("d", "500m", node=""), "n1")
    c.add_pod(bound_d := _pi("d", "500m"))
    c.add_pod(bound_a := _pi("a", "500m"))
    ni = c.nodes["n1"]
    assert [p.name for p in ni.pods] == ["b", "c", "d", "a"]
    assert ni.pods[2] is bound_d and ni.pods[3] is bound_a
    assert _req_cpu(c, "n1") == 1200


def test_add_update_remove() -> None:
    c = _cache(make_node("n1"))
    old = _pi("p", "200m")
    c.add_pod(old)
    assert _req_cpu(c, "n1") == 200
    new = _pi("p", "300m")
    c.update_pod(old, new)
    assert _req_cpu(c, "n1") == 300
    assert c.get_pod(new.uid) is new
    c.remove_pod(new)
    assert _req_cpu(c, "n1") == 0
    assert c.get_pod(new.uid) is None
    with pytest.raises(CacheError, match="is not found in scheduler cache, so cannot be removed from it"):
        c.remove_pod(new)


def test_assumed_pods_cannot_be_updated_and_unknown_ones_neither() -> None:
    c = _cache(make_node("n1"))
    pi = _pi("p", node="")
    c.assume_pod(pi, "n1")
    with pytest.raises(CacheError, match="cannot be updated"):
        c.update_pod(pi, pi)
    with pytest.raises(CacheError, match="is not added to scheduler cache, so cannot be updated"):
        c.update_pod(_pi("other"), _pi("other"))


def test_removing_an_assumed_pod_clears_the_assumption() -> None:
    c = _cache(make_node("n1"))
    pi = _pi("p", node="")
    c.assume_pod(pi, "n1")
    c.remove_pod(pi)
    assert not c.is_assumed(pi.uid)
    assert c.nodes["n1"].pods == []


def test_pod_on_an_unknown_node_creates_a_node_less_entry() -> None:
    c = Cache()
    pi = _pi("p", "100m", node="ghost")
    c.add_pod(pi)
    assert c.nodes["ghost"].node is None
    assert _req_cpu(c, "ghost") == 100
    assert c.node_count() == 0
    c.remove_pod(pi)
    assert "ghost" not in c.nodes  # nothing left: the entry goes away


def test_expired_assumed_pods_are_cleaned_up_after_ttl() -> None:
    c = Cache(ttl=30.0)
    c.add_node(make_node("n1"))
    pi = _pi("p", "100m", node="")
    c.assume_pod(pi, "n1")
    assert c.cleanup_expired_assumed_pods(1000.0) == []  # binding not finished: never expires
    c.finish_binding(pi, 100.0)
    assert c.cleanup_expired_assumed_pods(130.0) == []
    assert c.cleanup_expired_assumed_pods(130.5) == [pi]
    assert _req_cpu(c, "n1") == 0


def test_zero_ttl_never_expires() -> None:
    c = _cache(make_node("n1"))
    pi = _pi("p", node="")
    c.assume_pod(pi, "n1")
    c.finish_binding(pi, 0.0)
    assert c.cleanup_expired_assumed_pods(1e9) == []
    assert c.is_assumed(pi.uid)


# ---------------------------------------------------------------- nodes


def test_node_removal_keeps_pods_until_they_are_deleted() -> None:
    c = _cache(make_node("n1"), make_node("n2"))
    pi = _pi("p", "700m", node="n1")
    c.add_pod(pi)
    c.remove_node(c.nodes["n1"].node)
    assert c.nodes["n1"].node is None
    assert _req_cpu(c, "n1") == 700
    assert c.node_count() == 1
    snap = Snapshot()
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.nodes] == ["n2"]
    # the node comes back: its pod is still accounted for
    c.add_node(make_node("n1"))
    c.update_snapshot(snap)
    assert snap.get("n1").requested.milli_cpu == 700
    # deleting the last pod of a removed node drops the entry
    c.remove_node(c.nodes["n1"].node)
    c.remove_pod(pi)
    assert "n1" not in c.nodes


def test_remove_unknown_node_is_an_error() -> None:
    c = Cache()
    with pytest.raises(CacheError, match="node n9 is not found"):
        c.remove_node(make_node("n9"))


def test_node_without_pods_is_dropped_on_removal() -> None:
    c = _cache(make_node("n1"))
    c.remove_node(c.nodes["n1"].node)
    assert "n1" not in c.nodes
    assert c.node_count() == 0


def test_adding_an_existing_node_updates_it() -> None:
    c = _cache(make_node("n1", cpu="2"))
    c.add_node(make_node("n1", cpu="8"))
    assert c.nodes["n1"].allocatable.milli_cpu == 8000
    assert c.node_count() == 1


def test_image_states_count_nodes_per_image_name() -> None:
    img_a = (["registry/a:1", "registry/a@sha256:abc"], 300)
    img_b = (["registry/b:1"], 100)
    c = _cache(make_node("n1", images=[img_a, img_b]), make_node("n2", images=[img_a]))
    assert c.image_states["registry/a:1"].num_nodes == 2
    assert c.image_states["registry/a@sha256:abc"].num_nodes == 2
    assert c.image_states["registry/b:1"].num_nodes == 1
    assert c.image_states["registry/a:1"].size == 300
    assert set(c.nodes["n1"].image_states) == {"registry/a:1", "registry/a@sha256:abc", "registry/b:1"}
    assert set(c.nodes["n2"].image_states) == {"registry/a:1", "registry/a@sha256:abc"}
    # the node drops image b: its state is gone
    c.update_node(c.nodes["n1"].node, make_node("n1", images=[img_a]))
    assert "registry/b:1" not in c.image_states
    assert c.image_states["registry/a:1"].num_nodes == 2
    c.remove_node(c.nodes["n2"].node)
    assert c.image_states["registry/a:1"].num_nodes == 1
    assert c.image_states["registry/a:1"].nodes == {"n1"}


# ---------------------------------------------------------------- snapshots


def test_snapshot_orders_nodes_by_zone_round_robin() -> None:
    c = _cache(
        make_node("a1", labels={ZONE: "a"}),
        make_node("a2", labels={ZONE: "a"}),
        make_node("b1", labels={ZONE: "b"}),
        make_node("c1", labels={ZONE: "c"}),
        make_node("b2", labels={ZONE: "b"}),
    )
    snap = Snapshot()
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.nodes] == ["a1", "b1", "c1", "a2", "b2"]
    assert [ni.index for ni in snap.nodes] == [0, 1, 2, 3, 4]
    assert list(snap.node_names()) == ["a1", "b1", "c1", "a2", "b2"]
    # adding a node re-derives the whole list from the tree
    c.add_node(make_node("c2", labels={ZONE: "c"}))
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.nodes] == ["a1", "b1", "c1", "a2", "b2", "c2"]
    c.remove_node(c.nodes["a1"].node)
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.nodes] == ["a2", "b1", "c1", "b2", "c2"]


def test_zone_change_alone_keeps_the_snapshot_order() -> None:
    c = _cache(
        make_node("a1", labels={ZONE: "a"}),
        make_node("a2", labels={ZONE: "a"}),
        make_node("b1", labels={ZONE: "b"}),
    )
    snap = Snapshot()
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.nodes] == ["a1", "b1", "a2"]
    c.update_node(c.nodes["a1"].node, make_node("a1", labels={ZONE: "b"}))
    assert c.node_tree.list() == ["a2", "b1", "a1"]
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.nodes] == ["a1", "b1", "a2"]


def test_snapshot_columns_follow_pod_changes() -> None:
    c = _cache(make_node("n1", cpu="4", mem="8Gi"), make_node("n2", cpu="2", mem="4Gi"))
    snap = Snapshot()
    c.update_snapshot(snap)
    i1, i2 = snap.get("n1").index, snap.get("n2").index
    assert snap.columns.alloc_cpu[i1] == 4000
    assert snap.columns.alloc_mem[i2] == 4 * 2**30
    assert snap.columns.alloc_pods[i1] == 110
    gen = snap.generation
    p = PodInfo(make_pod("p", "1500m", "1Gi", node="n2"))
    c.add_pod(p)
    c.update_snapshot(snap)
    assert snap.generation > gen
    assert (snap.columns.req_cpu[i2], snap.columns.req_mem[i2], snap.columns.pod_count[i2]) == (1500, 2**30, 1)
    assert (snap.columns.nz_cpu[i2], snap.columns.nz_mem[i2]) == (1500, 2**30)
    assert snap.columns.req_cpu[i1] == 0
    be = PodInfo(make_pod("be", node="n1"))  # best effort: non-zero defaults only
    c.add_pod(be)
    c.update_snapshot(snap)
    assert (snap.columns.req_cpu[i1], snap.columns.nz_cpu[i1], snap.columns.nz_mem[i1]) == (0, 100, 200 * 2**20)
    c.remove_pod(p)
    c.update_snapshot(snap)
    assert (snap.columns.req_cpu[i2], snap.columns.pod_count[i2]) == (0, 0)


def test_snapshot_scalar_and_port_columns() -> None:
    c = _cache(make_node("n1", extra={"nvidia.com/gpu": "4"}), make_node("n2"))
    snap = Snapshot()
    c.update_snapshot(snap)
    alloc, req, present = snap.scalar_columns("nvidia.com/gpu")
    i1, i2 = snap.get("n1").index, snap.get("n2").index
    assert (alloc[i1], alloc[i2], bool(present[i1]), bool(present[i2])) == (4, 0, True, False)
    c.add_pod(
        PodInfo(make_pod("g", extra={"nvidia.com/gpu": "3"}, node="n1", ports=[{"containerPort": 80, "hostPort": 80}]))
    )
    c.update_snapshot(snap)
    alloc, req, present = snap.scalar_columns("nvidia.com/gpu")
    assert req[i1] == 3
    assert bool(snap.columns.has_ports[i1]) and not bool(snap.columns.has_ports[i2])


def test_node_allocatable_update_refreshes_columns() -> None:
    c = _cache(make_node("n1", cpu="2"))
    snap = Snapshot()
    c.update_snapshot(snap)
    ng = snap.node_generation
    c.update_node(c.nodes["n1"].node, make_node("n1", cpu="6"))
    c.update_snapshot(snap)
    assert snap.columns.alloc_cpu[0] == 6000
    assert snap.node_generation > ng


def test_snapshot_lists_nodes_with_affinity_pods_and_used_pvcs() -> None:
    c = _cache(make_node("n1"), make_node("n2"))
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.have_pods_with_affinity() == []
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]}}
    vol = [{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]
    pi = PodInfo(make_pod("p", node="n2", spec={"affinity": anti, "volumes": vol}))
    c.add_pod(pi)
    c.update_snapshot(snap)
    assert [ni.name for ni in snap.have_pods_with_affinity()] == ["n2"]
    assert [ni.name for ni in snap.have_pods_with_required_anti_affinity()] == ["n2"]
    assert snap.is_pvc_used_by_pods("default/data")
    assert not snap.is_pvc_used_by_pods("default/other")
    c.remove_pod(pi)
    c.update_snapshot(snap)
    assert snap.have_pods_with_affinity() == []
    assert not snap.is_pvc_used_by_pods("default/data")
