"""NodeResourcesFit (noderesources/fit.go): does the pod fit the node's allocatable, and how well.

Filter: pods count, cpu, memory, ephemeral-storage and scalar resources (minus
ignored resources / resource groups). A request larger than the whole node is
UnschedulableAndUnresolvable (preemption cannot help); otherwise Unschedulable.
Score: LeastAllocated (default), MostAllocated or RequestedToCapacityRatio.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kubesched.api.core import Node, Pod
from kubesched.api.int64 import MAX_INT64, MIN_INT64, wrap
from kubesched.api.resources import is_extended_resource_name, is_scalar_resource_name
from kubesched.config.types import NodeResourcesFitArgs, ResourceSpec, ScoringStrategy
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ResourceSumsFilterPlugin,
    RowScore,
    SummableScorePlugin,
    VectorFilterPlugin,
)
from kubesched.framework.pod_sums import ExtraSums
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.framework.types import Resource as Res
from kubesched.plugins import names
from kubesched.plugins.noderesources.resource_allocation import ResourceAllocationScorer

_PRE_FILTER_KEY = "PreFilter" + names.NODE_RESOURCES_FIT
_PRE_SCORE_KEY = "PreScore" + names.NODE_RESOURCES_FIT

TOO_MANY_PODS = "Too many pods"


# Checked resources whose failure bits fit one int64 key (1 + 2 per resource <= 63 bits).
_PACKED_CHECKS = 30

# A checked resource: (label, request, allocatable column, free amount per node).
_Check = tuple[str, int, np.ndarray, np.ndarray]


def _at(a: np.ndarray, idx: np.ndarray | None) -> np.ndarray:
    """A column at the nodes `idx` (None: all nodes)."""
    return a if idx is None else a[idx]


def _less(a: np.ndarray, more: np.ndarray | None) -> np.ndarray:
    return a if more is None else a - more


class _FitStatuses:
    """fitsRequest's statuses over many nodes: a key per node saying which resources fail and which are
    beyond allocatable (unresolvable), and one Status per distinct key, made when first asked for.

    Up to _PACKED_CHECKS checked resources a key packs its bits into one int64; beyond that (many
    extended resources) a key is the number of a distinct row of bits, found by np.unique.
    """

    __slots__ = ("_checks", "_idx", "_labels", "_packed", "_plugin", "_rows", "_table", "_too_many")

    def __init__(
        self, plugin: str, too_many: np.ndarray | None, checks: list[_Check], idx: np.ndarray | None, names: list[str]
    ) -> None:
        self._plugin = plugin
        self._too_many = too_many
        self._checks = checks
        self._idx = idx
        self._labels = [TOO_MANY_PODS] + [f"Insufficient {name}" for name in names]
        self._packed = len(names) <= _PACKED_CHECKS
        self._rows: np.ndarray | None = None
        self._table: dict[int, Status] = {}

    @classmethod
    def packed(cls, plugin: str, names: list[str]) -> _FitStatuses:
        """The statuses of packed keys computed elsewhere (_row_key_of)."""
        return cls(plugin, None, [], None, names)

    def keys(self) -> np.ndarray:
        """Bit 0: too many pods; per checked resource j, bit 2j+1: insufficient, bit 2j+2: beyond allocatable."""
        idx = self._idx
        assert self._too_many is not None
        if self._packed:
            key = self._too_many.astype(np.int64)
            for j, (_name, q, alloc, free) in enumerate(self._checks):
                fail = q > free
                key |= (fail.astype(np.int64) << (2 * j + 1)) | (
                    (fail & (q > _at(alloc, idx))).astype(np.int64) << (2 * j + 2)
                )
            return key
        columns = [self._too_many]
        for _name, q, alloc, free in self._checks:
            fail = q > free
            columns += [fail, fail & (q > _at(alloc, idx))]
        distinct, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
        self._rows = distinct
        return inverse.reshape(-1).astype(np.int64)

    def _bit(self, k: int, b: int) -> bool:
        return bool(k >> b & 1) if self._packed else bool(self._rows[k, b])  # type: ignore[index]

    def status_of_key(self, k: int) -> Status:
        st = self._table.get(k)
        if st is None:
            labels = self._labels
            reasons = [labels[0]] if self._bit(k, 0) else []
            unresolvable = False
            for j in range(1, len(labels)):
                if self._bit(k, 2 * j - 1):
                    reasons.append(labels[j])
                    unresolvable |= self._bit(k, 2 * j)
            st = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE, *reasons)
            st.plugin = self._plugin
            self._table[k] = st
        return st


# The Resource attribute of each native resource fitsRequest compares (any other name is a scalar resource).
_ATTRS = {"cpu": "milli_cpu", "memory": "memory", "ephemeral-storage": "ephemeral_storage"}


def _row_key_of(checked: tuple[tuple[str, int], ...]) -> Callable[[NodeInfo], int]:
    """_FitStatuses' packed key of one node from its NodeInfo (fitsRequest's comparisons, Go's int64), for
    this request: what each resource is read as is settled once here, not once per node."""
    fields = [(_ATTRS.get(name), name, q, 1 << (2 * j + 1), 1 << (2 * j + 2)) for j, (name, q) in enumerate(checked)]

    def key(ni: NodeInfo) -> int:
        alloc, used = ni.allocatable, ni.requested
        k = 1 if len(ni.pods) >= alloc.allowed_pod_number else 0
        for attr, name, q, over, beyond in fields:
            if attr is not None:
                a = getattr(alloc, attr)
                free = a - getattr(used, attr)
            else:
                a = alloc.scalar.get(name, 0)
                free = a - used.scalar.get(name, 0)
            if not MIN_INT64 <= free <= MAX_INT64:
                free = wrap(free)
            if q > free:
                k |= over
                if q > a:
                    k |= beyond
        return k

    return key


class InsufficientResource:
    __slots__ = ("capacity", "reason", "requested", "resource", "unresolvable", "used")

    def __init__(
        self, resource: str, reason: str, requested: int, used: int, capacity: int, unresolvable: bool
    ) -> None:
        self.resource = resource
        self.reason = reason
        self.requested = requested
        self.used = used
        self.capacity = capacity
        self.unresolvable = unresolvable


class _PreScoreState:
    __slots__ = ("pod_requests",)

    def __init__(self, pod_requests: list[int]) -> None:
        self.pod_requests = pod_requests

    def clone(self) -> _PreScoreState:
        return self


def fit_request(pod: PodInfo) -> Res:
    """computePodResourceRequest: the pod's requests with every amount at least 0.

    Upstream builds it with Resource.SetMaxResource, max(0, value) per resource,
    so a negative request (a negative quantity, or one whose int64 wrapped)
    counts as none at all.
    """
    r = pod.requests
    if min(r.milli_cpu, r.memory, r.ephemeral_storage, *r.scalar.values()) >= 0:
        return r
    return Res(
        max(r.milli_cpu, 0),
        max(r.memory, 0),
        max(r.ephemeral_storage, 0),
        0,
        {name: max(v, 0) for name, v in r.scalar.items()},
    )


def fits_request(
    req: Res, ni: NodeInfo, ignored: frozenset[str] = frozenset(), ignored_groups: frozenset[str] = frozenset()
) -> list[InsufficientResource]:
    """fitsRequest: every resource the pod requests that the node cannot give it now."""
    return fits_amounts(req, ni.allocatable, ni.requested, len(ni.pods), ignored, ignored_groups)


def fits_amounts(
    req: Res,
    alloc: Res,
    used: Res,
    pod_count: int,
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """fitsRequest on plain sums: allocatable, requested and the number of pods on the node.

    allocatable - requested is Go's int64 subtraction (it wraps).
    """
    out: list[InsufficientResource] = []
    allowed = alloc.allowed_pod_number
    if pod_count + 1 > allowed:
        out.append(InsufficientResource("pods", TOO_MANY_PODS, 1, pod_count, allowed, False))
    if req.is_zero():
        return out
    if req.milli_cpu > 0 and req.milli_cpu > wrap(alloc.milli_cpu - used.milli_cpu):
        out.append(
            InsufficientResource(
                "cpu",
                "Insufficient cpu",
                req.milli_cpu,
                used.milli_cpu,
                alloc.milli_cpu,
                req.milli_cpu > alloc.milli_cpu,
            )
        )
    if req.memory > 0 and req.memory > wrap(alloc.memory - used.memory):
        out.append(
            InsufficientResource(
                "memory", "Insufficient memory", req.memory, used.memory, alloc.memory, req.memory > alloc.memory
            )
        )
    if req.ephemeral_storage > 0 and req.ephemeral_storage > wrap(alloc.ephemeral_storage - used.ephemeral_storage):
        out.append(
            InsufficientResource(
                "ephemeral-storage",
                "Insufficient ephemeral-storage",
                req.ephemeral_storage,
                used.ephemeral_storage,
                alloc.ephemeral_storage,
                req.ephemeral_storage > alloc.ephemeral_storage,
            )
        )
    for name in sorted(req.scalar):
        q = req.scalar[name]
        if q == 0 or _ignored(name, ignored, ignored_groups):
            continue
        a = alloc.scalar.get(name, 0)
        u = used.scalar.get(name, 0)
        if q > wrap(a - u):
            out.append(InsufficientResource(name, f"Insufficient {name}", q, u, a, q > a))
    return out


def _ignored(name: str, ignored: frozenset[str], groups: frozenset[str]) -> bool:
    if not is_extended_resource_name(name):
        return False
    return name in ignored or (bool(groups) and name.split("/")[0] in groups)


def insufficient_status(insufficient: list[InsufficientResource]) -> Status:
    code = Code.UNSCHEDULABLE
    if any(r.unresolvable for r in insufficient):
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    return Status(code, *(r.reason for r in insufficient))


class Fit(
    PreFilterPlugin,
    VectorFilterPlugin,
    ResourceSumsFilterPlugin,
    PreScorePlugin,
    SummableScorePlugin,
    EnqueueExtensions,
):
    name = names.NODE_RESOURCES_FIT

    def __init__(self, args: NodeResourcesFitArgs | None = None) -> None:
        args = args or NodeResourcesFitArgs(
            scoring_strategy=ScoringStrategy("LeastAllocated", [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)])
        )
        strategy = args.scoring_strategy
        if strategy is None:
            raise ValueError("scoring strategy not specified")
        self.ignored = frozenset(args.ignored_resources)
        self.ignored_groups = frozenset(args.ignored_resource_groups)
        shape = strategy.requested_to_capacity_ratio.shape if strategy.requested_to_capacity_ratio else None
        self.scorer = ResourceAllocationScorer(strategy.type, strategy.resources, use_requested=False, shape=shape)
        self._last_checked: tuple[Res, tuple[tuple[str, int], ...]] | None = None

    @classmethod
    def new(cls, args: Any, handle: Any) -> Fit:
        from kubesched.config import validate_node_resources_fit_args

        if args is not None:
            errors = validate_node_resources_fit_args(args)
            if errors:
                raise ValueError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        return cls(args)

    # ------------------------------------------------------------ PreFilter / Filter

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(_PRE_FILTER_KEY, fit_request(pod))
        return None, None

    def _request(self, state: CycleState) -> Res:
        try:
            return state.read(_PRE_FILTER_KEY)
        except KeyError as err:
            raise RuntimeError(f'error reading "{_PRE_FILTER_KEY}" from cycleState: {err}') from None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        insufficient = fits_request(self._request(state), node_info, self.ignored, self.ignored_groups)
        return insufficient_status(insufficient) if insufficient else None

    def filter_amounts(
        self, state: CycleState, pod: PodInfo, allocatable: Res, requested: Res, pod_count: int
    ) -> Status | None:
        insufficient = fits_amounts(
            self._request(state), allocatable, requested, pod_count, self.ignored, self.ignored_groups
        )
        return insufficient_status(insufficient) if insufficient else None

    def amounts_fit(self, state: CycleState, pod: PodInfo, allocatable: Res, requested: Res, pod_count: int) -> bool:
        req = self._request(state)
        if pod_count + 1 > allocatable.allowed_pod_number:
            return False
        if req.milli_cpu > 0 and req.milli_cpu > wrap(allocatable.milli_cpu - requested.milli_cpu):
            return False
        if req.memory > 0 and req.memory > wrap(allocatable.memory - requested.memory):
            return False
        if req.ephemeral_storage > 0 and req.ephemeral_storage > wrap(
            allocatable.ephemeral_storage - requested.ephemeral_storage
        ):
            return False
        for name, q in req.scalar.items():
            if (
                q
                and not _ignored(name, self.ignored, self.ignored_groups)
                and q > wrap(allocatable.scalar.get(name, 0) - requested.scalar.get(name, 0))
            ):
                return False
        return True

    def _checked(self, req: Res) -> tuple[tuple[str, int], ...]:
        """The resources fitsRequest compares for this request, in its order, with the amounts requested.

        Pods of one resource spec share their request object (pod_resources): the last answer is kept.
        """
        last = self._last_checked
        if last is not None and last[0] is req:
            return last[1]
        checked = self._compute_checked(req)
        self._last_checked = (req, checked)
        return checked

    def _compute_checked(self, req: Res) -> tuple[tuple[str, int], ...]:
        checked = []
        if req.milli_cpu > 0:
            checked.append(("cpu", req.milli_cpu))
        if req.memory > 0:
            checked.append(("memory", req.memory))
        if req.ephemeral_storage > 0:
            checked.append(("ephemeral-storage", req.ephemeral_storage))
        for name in sorted(req.scalar):
            q = req.scalar[name]
            if q != 0 and not _ignored(name, self.ignored, self.ignored_groups):
                checked.append((name, q))
        return tuple(checked)

    def _columns_verdicts(
        self, state: CycleState, snapshot: Snapshot, idx: np.ndarray | None, extra: ExtraSums | None
    ) -> FilterVerdicts:
        """fitsRequest over many nodes at once. Statuses come from a table keyed by which resources
        fail and which are unresolvable, so nodes failing alike share one Status."""
        failed, table = self._columns_table(self._request(state), snapshot, idx, extra)
        # Keys now, while the arrays they read (some are the snapshot's own columns) are this cycle's;
        # a pass without failures never needs them.
        keys = table.keys() if np.count_nonzero(failed) else table.keys
        return FilterVerdicts(failed, keys=keys, status_of_key=table.status_of_key)

    def _columns_table(
        self, req: Res, snapshot: Snapshot, idx: np.ndarray | None, extra: ExtraSums | None
    ) -> tuple[np.ndarray, _FitStatuses]:
        c = snapshot.columns
        # len(pods)+1 > allowedPodNumber, compared directly: allowed - len(pods) could leave int64.
        pod_count = _at(c.pod_count, idx) if extra is None else _at(c.pod_count, idx) + extra.pods
        too_many = pod_count >= _at(c.alloc_pods, idx)
        failed = too_many.copy()
        checked = self._checked(req)
        checks = self._resource_checks(checked, snapshot, idx, extra)
        for _name, q, _alloc, free in checks:
            failed |= q > free
        return failed, _FitStatuses(self.name, too_many, checks, idx, [name for name, _ in checked])

    def _resource_checks(
        self, checked: tuple[tuple[str, int], ...], snapshot: Snapshot, idx: np.ndarray | None, extra: ExtraSums | None
    ) -> list[_Check]:
        """(label, request, allocatable, free) per checked resource, in fitsRequest's order."""
        c = snapshot.columns
        checks: list[_Check] = []
        for name, q in checked:
            if name == "cpu":
                alloc, free = c.alloc_cpu, _less(_at(c.free_cpu, idx), None if extra is None else extra.cpu)
            elif name == "memory":
                alloc, free = c.alloc_mem, _less(_at(c.free_mem, idx), None if extra is None else extra.mem)
            elif name == "ephemeral-storage":
                alloc, free = c.alloc_eph, _less(_at(c.free_eph, idx), None if extra is None else extra.eph)
            else:
                alloc, used, _present = snapshot.scalar_columns(name)
                more = extra.scalar.get(name) if extra is not None else None
                free = _less(_at(alloc, idx) - _at(used, idx), more)
            checks.append((name, q, alloc, free))
        return checks

    def amounts_verdicts_all(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray, extra: ExtraSums
    ) -> FilterVerdicts:
        return self._columns_verdicts(state, snapshot, idx, extra)

    def amounts_fit_all(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray, extra: ExtraSums
    ) -> np.ndarray:
        # Only whether it fits (the dry run asks once per rank): no failure keys, no status table.
        c = snapshot.columns
        fits: np.ndarray = _at(c.pod_count, idx) + extra.pods < _at(c.alloc_pods, idx)
        for _name, q, _alloc, free in self._resource_checks(self._checked(self._request(state)), snapshot, idx, extra):
            fits &= q <= free
        return fits

    def amounts_key(self, state: CycleState, pod: PodInfo) -> tuple[tuple[str, int], ...]:
        # amounts_fit_all reads of the pod only the resources it checks (this plugin's ignored ones left out).
        return self._checked(self._request(state))

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        """fitsRequest on every node. A node's verdict depends on its row and the request only: the keys
        are kept per request on the snapshot, and pods alike recompute just the rows that changed."""
        req = self._request(state)
        checked = self._checked(req)
        if len(checked) > _PACKED_CHECKS:
            v = self._columns_verdicts(state, snapshot, None, None)
            return v if np.count_nonzero(v.failed) else None
        index = snapshot.row_scores_all(
            (self.name, self, checked),
            lambda: (
                _row_key_of(checked),
                lambda rows: self._columns_table(req, snapshot, rows, None)[1].keys(),
            ),
        )
        if not index.nonzero:  # no node fails (kept as rows change: no pass over every node's key)
            return None
        keys = index.values
        failed = keys != 0
        table = _FitStatuses.packed(self.name, [name for name, _ in checked])
        return FilterVerdicts(failed, keys=keys.copy(), status_of_key=table.status_of_key)

    # ------------------------------------------------------------ Score

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(_PRE_SCORE_KEY, _PreScoreState(self.scorer.pod_requests(pod)))
        return None

    def _pod_requests(self, state: CycleState, pod: PodInfo) -> list[int]:
        s = state.get(_PRE_SCORE_KEY)
        return s.pod_requests if s is not None else self.scorer.pod_requests(pod)

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        return self.scorer.score(node_info, self._pod_requests(state, pod)), None

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        return self.scorer.score_rows(snapshot, idx, self._pod_requests(state, pod))

    def score_terms(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> RowScore:
        return self.scorer.row_score(snapshot, self._pod_requests(state, pod))

    # ------------------------------------------------------------ queueing

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN), _pod_event
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE), _node_change
            ),
        ]


def _pod_event(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if new is None:
        if not old.spec.node_name and not old.status.nominated_node_name:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE
    if new.metadata.uid == pod.metadata.uid:
        return QueueingHint.QUEUE
    if not new.spec.node_name:
        return QueueingHint.QUEUE_SKIP
    target = fit_request(PodInfo(pod))
    before, after = PodInfo(old).requests, PodInfo(new).requests
    for name in ("cpu", "memory", "ephemeral-storage", *target.scalar):
        if target.get(name) and before.get(name) > after.get(name):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    req = fit_request(PodInfo(pod))
    fresh = NodeInfo(new)
    if fits_request(req, fresh):
        return QueueingHint.QUEUE_SKIP
    if old is None:
        return QueueingHint.QUEUE
    before = NodeInfo(old).allocatable
    after = fresh.allocatable
    if after.allowed_pod_number > before.allowed_pod_number:
        return QueueingHint.QUEUE
    if req.is_zero():
        return QueueingHint.QUEUE_SKIP
    for name in ("cpu", "memory", "ephemeral-storage"):
        if req.get(name) > 0 and after.get(name) > before.get(name):
            return QueueingHint.QUEUE
    for name, q in req.scalar.items():
        if q and is_scalar_resource_name(name) and after.scalar.get(name, 0) > before.scalar.get(name, 0):
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def node_fits(pod: Pod, node: Node) -> bool:
    """isFit: does the pod fit the node when nothing else runs there."""
    return not fits_request(fit_request(PodInfo(pod)), NodeInfo(node))
