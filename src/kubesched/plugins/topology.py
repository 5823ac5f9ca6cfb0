"""Topology domains and Go float arithmetic shared by InterPodAffinity and PodTopologySpread.

Both plugins count pods per topology domain (nodes sharing one value of a
label) and judge or score a node by its domain's count. `Domains` maps every
node of the snapshot to its domain once (rebuilt only when a Node changes), so
a whole-snapshot path turns a `{value: count}` table into a per-node array with
one gather instead of one dictionary lookup per node.

`go_log` and `go_round` reproduce Go's `math.Log` (amd64) and `math.Round` bit
for bit: Python's libm `log` differs by one ulp on some small integers (log(3)
among them), and spreading weights are logarithms of small domain counts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from kubesched.framework.snapshot import Snapshot


class Domains:
    """The snapshot's nodes grouped by the value of one label.

    `ids[i]` is node i's domain (an index into `values`), -1 when the node lacks the label.
    """

    __slots__ = ("ids", "index", "present", "singletons", "values")

    def __init__(self, ids: np.ndarray, values: list[str]) -> None:
        self.ids = ids
        self.values = values
        self.index = {v: d for d, v in enumerate(values)}
        self.present = ids >= 0
        # Every domain has a single node (as with kubernetes.io/hostname).
        self.singletons = len(values) == int(np.count_nonzero(self.present))

    def spread(self, per_value: Mapping[str, int], default: int = 0) -> np.ndarray:
        """Per node: `per_value[node's value]`; `default` where the value is not listed or the label is missing."""
        table = np.full(len(self.values) + 1, default, np.int64)
        index = self.index
        for v, x in per_value.items():
            d = index.get(v)
            if d is not None:
                table[d] = x
        # ids == -1 reads the last slot, which holds `default`.
        return table[self.ids]

    def sums(self, members: np.ndarray, per_node: np.ndarray) -> dict[str, int]:
        """{value: sum of per_node over member nodes with that value}, for every value some member has.

        Values come in the order of their first member node, as a walk over the nodes would add them.
        """
        ids = self.ids[members & self.present]
        if not len(ids):
            return {}
        weights = per_node[members & self.present]
        totals = np.bincount(ids, weights=weights, minlength=len(self.values)).astype(np.int64)
        uniq, first = np.unique(ids, return_index=True)
        values = self.values
        return {values[d]: int(totals[d]) for d in uniq[np.argsort(first, kind="stable")].tolist()}


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


# ---------------------------------------------------------------- Go float arithmetic

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_L1 = 6.666666666666735130e-01
_L2 = 3.999999999940941908e-01
_L3 = 2.857142874366239149e-01
_L4 = 2.222219843214978396e-01
_L5 = 1.818357216161805012e-01
_L6 = 1.531383769920937332e-01
_L7 = 1.479819860511658591e-01
_HALF_SQRT2 = 7.07106781186547524401e-01


def go_log(x: float) -> float:
    """Go's math.Log: the FreeBSD e_log.c reduction and polynomial, evaluated in the same order."""
    if math.isnan(x) or x == math.inf:
        return x
    if x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    f1, ki = math.frexp(x)
    if f1 < _HALF_SQRT2:
        f1 *= 2
        ki -= 1
    f = f1 - 1
    k = float(ki)
    s = f / (2 + f)
    s2 = s * s
    s4 = s2 * s2
    t1 = s2 * (_L1 + s4 * (_L3 + s4 * (_L5 + s4 * _L7)))
    t2 = s4 * (_L2 + s4 * (_L4 + s4 * _L6))
    r = t1 + t2
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


def go_round(x: float) -> float:
    """Go's math.Round: half away from zero (Python's round() rounds half to even)."""
    if math.isnan(x) or math.isinf(x):
        return x
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return float(t)


def go_round_array(x: np.ndarray) -> np.ndarray:
    """go_round over a float64 array (x - trunc(x) is exact, so the comparison is too)."""
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.copysign(1.0, x), 0.0)
