"""Resource pools reachable from a node (structured/internal/*/pools_*.go, GatherPools).

A pool is the set of ResourceSlices of one driver with one pool name; only the
newest generation counts. A pool is incomplete while not all of its
`resourceSliceCount` slices are published, and invalid when a device name
repeats. Slices are indexed once per scheduling cycle (by node name, plus the
ones selected by node selector or `allNodes`), so that each node only looks at
the slices that can concern it.

Upstream gathers pools in a Go map and so walks them in random order; here they
are ordered by (driver, pool name) and slices by name, to be deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubesched.api.labels import NodeSelectorMatcher

if TYPE_CHECKING:
    from kubesched.api.core import Node, NodeSelector
    from kubesched.api.resource import ResourceSlice

PoolID = tuple[str, str]


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    slices: list[ResourceSlice] = field(default_factory=list)
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


_matchers: dict[int, tuple[NodeSelector, NodeSelectorMatcher]] = {}


def node_selector_matches(selector: NodeSelector, node: Node) -> bool:
    """nodeaffinity.NewNodeSelector(...).Match(node), with the compiled matcher kept per selector object."""
    entry = _matchers.get(id(selector))
    if entry is None or entry[0] is not selector:
        if len(_matchers) > 4096:
            _matchers.clear()
        entry = (selector, NodeSelectorMatcher(selector))
        _matchers[id(selector)] = entry
    return entry[1].matches(node.metadata.labels, node.metadata.name)


def node_matches(node: Node, node_name: str, all_nodes: bool, selector: NodeSelector | None) -> bool:
    if node_name:
        return node.metadata.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node_selector_matches(selector, node)
    return False


class SliceIndex:
    """All ResourceSlices of a cycle: by node name, the others, and by pool.

    The pools gathered for a node are remembered (with the Node object they were
    computed for), so that an index reused while no slice changes answers at once.
    """

    __slots__ = ("_pools", "by_node", "by_pool", "others")

    def __init__(self, slices: Iterable[ResourceSlice]) -> None:
        self.by_node: dict[str, list[ResourceSlice]] = {}
        self.others: list[ResourceSlice] = []
        self.by_pool: dict[PoolID, list[ResourceSlice]] = {}
        self._pools: dict[tuple[str, bool], tuple[Node, list[Pool]]] = {}
        for s in sorted(slices, key=lambda s: s.metadata.name):
            spec = s.spec
            self.by_pool.setdefault((spec.driver, spec.pool.name), []).append(s)
            if spec.node_name:
                self.by_node.setdefault(spec.node_name, []).append(s)
            else:
                self.others.append(s)

    def for_node(self, node_name: str) -> list[ResourceSlice]:
        """Slices that may concern the node, in name order."""
        local = self.by_node.get(node_name)
        if not local:
            return self.others
        if not self.others:
            return local
        return sorted(local + self.others, key=lambda s: s.metadata.name)

    def pools(self, node: Node, partitionable_devices: bool = False) -> list[Pool]:
        """gather_pools, memoized per node object (a changed node, e.g. new labels, is a new object)."""
        key = (node.metadata.name, partitionable_devices)
        hit = self._pools.get(key)
        if hit is not None and hit[0] is node:
            return hit[1]
        pools = gather_pools(self, node, partitionable_devices)
        self._pools[key] = (node, pools)
        return pools


def gather_pools(index: SliceIndex, node: Node, partitionable_devices: bool = False) -> list[Pool]:
    """The pools with devices reachable from `node`."""
    pools: dict[PoolID, Pool] = {}
    for s in index.for_node(node.metadata.name):
        spec = s.spec
        if not partitionable_devices and spec.per_device_node_selection is not None:
            continue
        if spec.node_name or spec.all_nodes or spec.node_selector is not None:
            if node_matches(node, spec.node_name or "", bool(spec.all_nodes), spec.node_selector):
                _add_slice(pools, s)
        elif spec.per_device_node_selection:
            for d in spec.devices:
                if node_matches(node, d.node_name or "", bool(d.all_nodes), d.node_selector):
                    _add_slice(pools, s)
                    break
        # Otherwise: an unknown way of selecting nodes; other pools may still do.

    result: list[Pool] = []
    for pid in sorted(pools):
        pool = pools[pid]
        first = pool.slices[0].spec.pool
        complete = len(pool.slices) == first.resource_slice_count
        if not complete:
            obsolete, num = _check_slices_in_pool(index.by_pool.get(pid, ()), first.generation)
            if obsolete:
                continue
            complete = num == first.resource_slice_count
        pool.incomplete = not complete
        pool.invalid, pool.invalid_reason = _pool_is_invalid(pool)
        result.append(pool)
    return result


def _add_slice(pools: dict[PoolID, Pool], s: ResourceSlice) -> None:
    spec = s.spec
    pid = (spec.driver, spec.pool.name)
    pool = pools.get(pid)
    if pool is None:
        pools[pid] = Pool(spec.driver, spec.pool.name, [s])
        return
    current = pool.slices[0].spec.pool.generation
    if spec.pool.generation < current:
        return
    if spec.pool.generation > current:
        pool.slices = []
    pool.slices.append(s)


def _check_slices_in_pool(slices: Iterable[ResourceSlice], generation: int) -> tuple[bool, int]:
    """(the generation is obsolete, how many slices have it), over all slices of the pool."""
    num = 0
    for s in slices:
        g = s.spec.pool.generation
        if g == generation:
            num += 1
        elif g > generation:
            return True, 0
    return False, num


def _pool_is_invalid(pool: Pool) -> tuple[bool, str]:
    seen: set[str] = set()
    for s in pool.slices:
        for d in s.spec.devices:
            if d.name in seen:
                return True, f"duplicate device name {d.name}"
            seen.add(d.name)
    return False, ""
