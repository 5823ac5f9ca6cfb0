"""InterPodAffinity events and queueing hints (v1.34), and the API-server matchLabelKeys merge."""

from __future__ import annotations

from typing import Any

from kubesched.api.labels import label_selector
from kubesched.cluster.admission import apply_pod_affinity_label_keys as apply_match_label_keys
from kubesched.framework.events import ActionType, QueueingHint, Resource
from kubesched.plugins.interpodaffinity.plugin import InterPodAffinity
from kubesched.plugins.interpodaffinity.queueing import after_node_change, after_pod_change
from kubesched.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def target(required: dict[str, str] | None = None, anti: dict[str, str] | None = None) -> Any:
    a: dict[str, Any] = {}
    if required:
        a["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": required}, "topologyKey": ZONE}
            ]
        }
    if anti:
        a["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": anti}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    return make_pod("t", spec={"affinity": a})


def test_events_to_register() -> None:
    events = InterPodAffinity().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]
    assert all(e.hint is not None for e in events)


def test_pod_hints() -> None:
    t = target(required={"app": "db"}, anti={"app": "kv"})
    db = make_pod("db", labels={"app": "db"}, node="n1")
    kv = make_pod("kv", labels={"app": "kv"}, node="n1")
    other = make_pod("o", labels={"app": "o"}, node="n1")
    assert after_pod_change(t, None, make_pod("db", labels={"app": "db"})) == SKIP  # unscheduled
    assert after_pod_change(t, None, db) == Q
    assert after_pod_change(t, None, other) == SKIP
    assert after_pod_change(t, kv, None) == Q
    assert after_pod_change(t, other, None) == SKIP
    assert after_pod_change(t, other, db) == Q  # now matches the affinity
    assert after_pod_change(t, kv, other) == Q  # no longer matches the anti-affinity
    assert after_pod_change(t, db, other) == SKIP


def test_deleting_a_pod_whose_anti_affinity_repelled_is_not_recognised_in_v1_34() -> None:
    guard = make_pod(
        "g",
        node="n1",
        spec={
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}
                    ]
                }
            }
        },
    )
    assert after_pod_change(make_pod("w", labels={"app": "web"}), guard, None) == SKIP


def test_node_hints() -> None:
    t = target(required={"app": "db"})
    assert after_node_change(t, None, make_node("n", labels={ZONE: "a"})) == Q
    assert after_node_change(t, None, make_node("n")) == SKIP
    anti = target(anti={"app": "kv"})
    assert after_node_change(anti, None, make_node("n")) == Q  # every node has the hostname label
    assert after_node_change(make_pod("plain"), None, make_node("n", labels={ZONE: "a"})) == SKIP


def test_apply_match_label_keys_merges_like_the_api_server() -> None:
    pod = make_pod(
        "p",
        labels={"app": "web", "rev": "7", "tenant": "t1"},
        spec={
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "web"}},
                            "topologyKey": ZONE,
                            "matchLabelKeys": ["rev", "absent"],
                            "mismatchLabelKeys": ["tenant"],
                        },
                        {"topologyKey": ZONE, "matchLabelKeys": ["rev"]},  # nil selector: left alone
                    ]
                }
            }
        },
    )
    merged = apply_match_label_keys(pod)
    terms = merged.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution
    sel = label_selector(terms[0].label_selector)
    assert sel.matches({"app": "web", "rev": "7", "tenant": "t2"})
    assert not sel.matches({"app": "web", "rev": "8", "tenant": "t2"})
    assert not sel.matches({"app": "web", "rev": "7", "tenant": "t1"})
    assert terms[1].label_selector is None
    assert apply_match_label_keys(make_pod("plain")) is not None
