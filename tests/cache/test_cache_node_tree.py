"""NodeTree (backend/cache/node_tree.go): zone keys and the zone round-robin order.

Nodes and expected orders are upstream's node_tree_test.go allNodes / test tables.
"""

from __future__ import annotations

import pytest

from kubesched.cache.node_tree import NodeTree, zone_key

REGION, ZONE = "topology.kubernetes.io/region", "topology.kubernetes.io/zone"
BETA_REGION, BETA_ZONE = "failure-domain.beta.kubernetes.io/region", "failure-domain.beta.kubernetes.io/zone"

ALL_NODES: list[tuple[str, dict[str, str]]] = [
    ("node-0", {}),
    ("node-1", {REGION: "region-1"}),
    ("node-2", {ZONE: "zone-2"}),
    ("node-3", {REGION: "region-1", ZONE: "zone-2"}),
    ("node-4", {REGION: "region-1", ZONE: "zone-2"}),
    ("node-5", {REGION: "region-1", ZONE: "zone-3"}),
    ("node-6", {REGION: "region-2", ZONE: "zone-2"}),
    ("node-7", {REGION: "region-2", ZONE: "zone-2"}),
    ("node-8", {REGION: "region-2", ZONE: "zone-2"}),
    ("node-9", {BETA_REGION: "region-2", BETA_ZONE: "zone-2"}),
]
LABELS = dict(ALL_NODES)


@pytest.mark.parametrize(
    ("labels", "key"),
    [
        ({}, ""),
        ({REGION: "r"}, "r:\x00:"),
        ({ZONE: "z"}, ":\x00:z"),
        ({REGION: "r", ZONE: "z"}, "r:\x00:z"),
        ({BETA_REGION: "r", BETA_ZONE: "z"}, "r:\x00:z"),
        ({REGION: "r", BETA_REGION: "old", ZONE: "z", BETA_ZONE: "oldz"}, "r:\x00:z"),  # GA labels win
        ({ZONE: "", BETA_ZONE: "z"}, ""),  # an empty GA label still shadows the beta one
        ({REGION: "", ZONE: ""}, ""),
        ({"other": "x"}, ""),
    ],
)
def test_zone_key(labels: dict[str, str], key: str) -> None:
    assert zone_key(labels) == key


def _tree(names: list[str]) -> NodeTree:
    t = NodeTree()
    for n in names:
        t.add(n, LABELS[n])
    return t


def test_add_all_nodes_groups_by_zone() -> None:
    t = _tree([n for n, _ in ALL_NODES])
    assert {z: list(names) for z, names in t.tree.items()} == {
        "": ["node-0"],
        "region-1:\x00:": ["node-1"],
        ":\x00:zone-2": ["node-2"],
        "region-1:\x00:zone-2": ["node-3", "node-4"],
        "region-1:\x00:zone-3": ["node-5"],
        "region-2:\x00:zone-2": ["node-6", "node-7", "node-8", "node-9"],
    }
    assert t.num_nodes == 10
    assert t.list() == [
        "node-0",
        "node-1",
        "node-2",
        "node-3",
        "node-5",
        "node-6",
        "node-4",
        "node-7",
        "node-8",
        "node-9",
    ]


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        # "pass through all the nodes"
        ([("add", "node-0"), ("add", "node-1"), ("add", "node-2")], ["node-0", "node-1", "node-2"]),
        # "add more nodes to an exhausted zone"
        (
            [("add", n) for n in ("node-4", "node-5", "node-6", "node-7", "node-8", "node-3")],
            ["node-4", "node-5", "node-6", "node-3", "node-7", "node-8"],
        ),
        # "remove zone and add new to ensure exhausted is reset correctly"
        (
            [
                ("add", "node-3"),
                ("add", "node-4"),
                ("remove", "node-3"),
                ("add", "node-6"),
                ("add", "node-7"),
                ("remove", "node-4"),
            ],
            ["node-6", "node-7"],
        ),
        # "remove node from middle of a zone keeps the order of the others"
        (
            [("add", "node-6"), ("add", "node-7"), ("add", "node-8"), ("add", "node-5"), ("remove", "node-7")],
            ["node-6", "node-5", "node-8"],
        ),
        # "re-adding an existing node is a no-op"
        ([("add", "node-3"), ("add", "node-3"), ("add", "node-5")], ["node-3", "node-5"]),
        # "a zone emptied and re-created goes to the end of the zone list"
        (
            [("add", "node-3"), ("add", "node-5"), ("remove", "node-3"), ("add", "node-4"), ("add", "node-6")],
            ["node-5", "node-4", "node-6"],
        ),
    ],
)
def test_multi_operations(ops: list[tuple[str, str]], expected: list[str]) -> None:
    t = NodeTree()
    for op, name in ops:
        if op == "add":
            t.add(name, LABELS[name])
        else:
            assert t.remove(name, LABELS[name])
    assert t.list() == expected
    assert t.num_nodes == len(expected)


def test_remove_unknown_node_reports_not_found() -> None:
    t = _tree(["node-3"])
    assert not t.remove("node-4", LABELS["node-4"])
    assert not t.remove("node-3", LABELS["node-6"])  # looked up in its (wrong) zone
    assert t.num_nodes == 1


def test_update_moves_node_to_its_new_zone() -> None:
    t = _tree(["node-3", "node-4", "node-5", "node-6"])
    assert t.list() == ["node-3", "node-5", "node-6", "node-4"]
    # node-4 moves from region-1/zone-2 to region-1/zone-3 (appended there)
    assert t.update("node-4", LABELS["node-4"], LABELS["node-5"])
    assert list(t.tree["region-1:\x00:zone-3"]) == ["node-5", "node-4"]
    assert t.list() == ["node-3", "node-5", "node-6", "node-4"]
    # node-3 moves out, its zone disappears, region-2 gets it
    assert t.update("node-3", LABELS["node-3"], LABELS["node-6"])
    assert "region-1:\x00:zone-2" not in t.tree
    assert t.zones == ["region-1:\x00:zone-3", "region-2:\x00:zone-2"]
    assert t.list() == ["node-5", "node-6", "node-4", "node-3"]
    assert t.num_nodes == 4


def test_update_within_the_same_zone_changes_nothing() -> None:
    t = _tree(["node-3", "node-4"])
    assert not t.update("node-3", LABELS["node-3"], {**LABELS["node-3"], "other": "x"})
    assert t.list() == ["node-3", "node-4"]


def test_empty_tree() -> None:
    assert NodeTree().list() == []
