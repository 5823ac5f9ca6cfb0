"""Topology domains shared by InterPodAffinity and PodTopologySpread.

Both plugins count pods per topology domain (nodes sharing one value of a
label) and judge or score a node by its domain's count. `Domains` maps every
node of the snapshot to its domain once (rebuilt only when a Node changes), so
a whole-snapshot path turns a `{value: count}` table into a per-node array with
one gather instead of one dictionary lookup per node.

Go's float arithmetic that the scores need (math.Log, math.Round) is in
kubesched.gocompat.gomath.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kubesched.framework.snapshot import Snapshot


class Domains:
    """The snapshot's nodes grouped by the value of one label.

    `ids[i]` is node i's domain (an index into `values`), -1 when the node lacks the label.
    """

    __slots__ = ("ids", "index", "num_present", "present", "singletons", "values")

    def __init__(self, ids: np.ndarray, values: list[str]) -> None:
        self.ids = ids
        # In the order of their first node: `values[d]` is domain d's value.
        self.values = values
        self.index = {v: d for d, v in enumerate(values)}
        self.present = ids >= 0
        self.num_present = int(np.count_nonzero(self.present))
        # Every domain has a single node (as with kubernetes.io/hostname).
        self.singletons = len(values) == self.num_present

    def spread(self, per_value: Mapping[str, int], default: int = 0) -> np.ndarray:
        """Per node: `per_value[node's value]`; `default` where the value is not listed or the label is missing."""
        # ids == -1 reads the last slot, which holds `default`.
        return self.table(per_value, default)[self.ids]

    def table(self, per_value: Mapping[str, int], default: int = 0) -> np.ndarray:
        """Per domain, then one slot for nodes without the label: `per_value[value]`, else `default`.

        A verdict that depends on the domain only is worked out here, once per domain, then gathered.
        """
        table = np.empty(len(self.values) + 1, np.int64)
        table.fill(default)  # (np.full is a Python wrapper: several times this on small arrays)
        index = self.index
        for v, x in per_value.items():
            d = index.get(v)
            if d is not None:
                table[d] = x
        return table

    def sums(self, members: np.ndarray | None, per_node: np.ndarray) -> dict[str, int]:
        """{value: sum of per_node over member nodes with that value}, for every value some member has.

        Values come in the order of their first member node, as a walk over the nodes would add them.
        `members` None: every node.
        """
        if members is None and self.num_present == len(self.ids):
            ids, weights = self.ids, per_node
        else:
            inside = self.present if members is None else members & self.present
            ids, weights = self.ids[inside], per_node[inside]
        if not len(ids):
            return {}
        totals = np.bincount(ids, weights=weights, minlength=len(self.values)).astype(np.int64).tolist()
        values = self.values
        if len(ids) == self.num_present:
            # Every node with the label is a member: the domains come in their own order (of first node).
            return dict(zip(values, totals, strict=True))
        uniq, first = np.unique(ids, return_index=True)
        return {values[d]: totals[d] for d in uniq[np.argsort(first, kind="stable")].tolist()}


def domains(snapshot: Snapshot, key: str) -> Domains:
    """The domains of label `key` over the snapshot's nodes (cached until a Node object changes)."""

    def build() -> Domains:
        ids = np.full(snapshot.num_nodes, -1, np.int64)
        index: dict[str, int] = {}
        values: list[str] = []
        for i, ni in enumerate(snapshot.nodes):
            node = ni.node
            if node is None:
                continue
            v = node.metadata.labels.get(key)
            if v is None:
                continue
            d = index.get(v)
            if d is None:
                d = index[v] = len(values)
                values.append(v)
            ids[i] = d
        return Domains(ids, values)

    return snapshot.node_cache(("topology-domains", key), build)


def has_node_mask(snapshot: Snapshot) -> np.ndarray:
    """Per node: its NodeInfo has a Node object."""
    return snapshot.node_cache(
        "has-node", lambda: np.fromiter((ni.node is not None for ni in snapshot.nodes), bool, snapshot.num_nodes)
    )
