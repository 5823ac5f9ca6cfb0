"""PodTopologySpread events and queueing hints (v1.34)."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.framework.events import ActionType, QueueingHint, Resource
from kubesched.plugins.podtopologyspread.plugin import PodTopologySpread
from kubesched.testing import Env, make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def target(**extra: Any) -> Any:
    c = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "s"}},
        **extra,
    }
    return make_pod("t", labels={"app": "s"}, spec={"topologySpreadConstraints": [c]})


def hints() -> tuple[Any, Any]:
    pl = PodTopologySpread.new(None, Env([]).handle)
    events = pl.events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (
            Resource.POD,
            ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_TOLERATION | ActionType.DELETE,
        ),
        (
            Resource.NODE,
            ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT,
        ),
    ]
    return events[0].hint, events[1].hint


def test_pod_hints() -> None:
    pod_hint, _ = hints()
    t = target()
    match = make_pod("m", labels={"app": "s"}, node="n1")
    other = make_pod("o", labels={"app": "o"}, node="n1")
    assert pod_hint(t, None, match) == Q
    assert pod_hint(t, None, other) == SKIP
    assert pod_hint(t, match, None) == Q
    assert pod_hint(t, None, make_pod("m", labels={"app": "s"})) == SKIP  # unscheduled
    assert pod_hint(t, None, make_pod("m", labels={"app": "s"}, node="n1", namespace="x")) == SKIP
    assert pod_hint(t, other, msgspec.structs.replace(other, metadata=match.metadata)) == Q  # label flip
    relabelled = msgspec.structs.replace(
        match, metadata=msgspec.structs.replace(match.metadata, labels={"app": "s", "v": "2"})
    )
    assert pod_hint(t, match, relabelled) == SKIP  # still matches
    assert pod_hint(t, match, match) == SKIP


def test_own_toleration_update_matters_only_with_taints_policy_honor() -> None:
    pod_hint, _ = hints()
    for extra, want in (({}, SKIP), ({"nodeTaintsPolicy": "Honor"}, Q)):
        t = target(**extra)
        tolerated = msgspec.convert(
            {
                **msgspec.to_builtins(t),
                "spec": {**msgspec.to_builtins(t.spec), "tolerations": [{"key": "k", "operator": "Exists"}]},
            },
            type(t),
        )
        assert pod_hint(t, t, tolerated) == want


def test_node_hints() -> None:
    _, node_hint = hints()
    t = target()
    zoned = make_node("n", labels={ZONE: "a"})
    bare = make_node("n")
    assert node_hint(t, None, zoned) == Q
    assert node_hint(t, None, bare) == SKIP
    assert node_hint(t, zoned, None) == Q
    assert node_hint(t, bare, None) == SKIP
    assert node_hint(t, bare, zoned) == Q
    assert node_hint(t, zoned, make_node("n", labels={ZONE: "b"})) == Q
    assert node_hint(t, zoned, make_node("n", labels={ZONE: "a", "x": "y"})) == SKIP
    tainted = make_node("n", labels={ZONE: "a"}, taints=[{"key": "k", "effect": "NoSchedule"}])
    assert node_hint(t, zoned, tainted) == Q
