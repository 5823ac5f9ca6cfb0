"""The plugin contract: one base class per extension point (kube-scheduler's framework/interface.go).

A plugin subclasses the extension points it implements. Every extension point
receives the pod as a `PodInfo` (the parsed pod, with `.pod` the API object).

Hot plugins may also offer a whole-snapshot fast path (`VectorFilterPlugin`,
`VectorScorePlugin`): the runtime uses it when present; the per-node method
stays the reference, and tests prove that both agree.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.ma  # np.unique imports it on first call: better now than in the middle of a scheduling cycle

from kubesched.framework.status import Status

if TYPE_CHECKING:
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.events import ClusterEventWithHint
    from kubesched.framework.snapshot import Snapshot
    from kubesched.framework.types import NodeInfo, PodInfo

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = (1 << 63) - 1


class Plugin:
    """Base of every plugin; `name` is what configurations refer to."""

    name: ClassVar[str] = ""
    # The type pluginConfig args are decoded into (a dataclass or msgspec Struct); None: args come as given.
    args_type: ClassVar[type | None] = None

    @classmethod
    def new(cls, args: Any, handle: Any) -> Plugin:
        """The factory the registry calls: typed args (None when the plugin takes none) and the profile's handle."""
        return cls()

    def __repr__(self) -> str:
        return f"<plugin {self.name}>"


class EnqueueExtensions:
    """A plugin that says which cluster events may undo its rejections."""

    def events_to_register(self) -> list[ClusterEventWithHint]:
        raise NotImplementedError


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    # The length of every tuple sort_key returns, when it is always the same (the queue's heap then lays the
    # key out flat in its entries); None when it varies or is not known.
    sort_key_length: ClassVar[int | None] = None

    def less(self, a: Any, b: Any) -> bool:
        """True when queued pod `a` should be scheduled before `b`."""
        raise NotImplementedError

    def sort_key(self, qpi: Any) -> tuple[Any, ...] | None:
        """Optional: a key equivalent to `less`, for a faster heap."""
        return None


class PreFilterResult:
    """PreFilter may narrow the nodes to evaluate; None (`node_names is None`) means all."""

    __slots__ = ("node_names",)

    def __init__(self, node_names: set[str] | None) -> None:
        self.node_names = node_names

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.all_nodes():
            return self
        if self.all_nodes():
            return PreFilterResult(set(other.node_names or ()))
        return PreFilterResult(self.node_names & other.node_names)  # type: ignore[operator]


class PreFilterExtensions:
    """Incremental updates of PreFilter state (nominated pods, preemption dry runs)."""

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo) -> Status | None:
        raise NotImplementedError

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node_info: NodeInfo) -> Status | None:
        raise NotImplementedError


class PreFilterPlugin(Plugin):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        raise NotImplementedError

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None


class FilterPlugin(Plugin):
    # Whether the verdict on a node may change when pods come and go on it. Plugins that only read the
    # Node object (labels, taints, name) say False, which lets preemption's dry runs skip them.
    depends_on_node_pods: ClassVar[bool] = True

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        raise NotImplementedError


class ResourceSumsFilterPlugin(FilterPlugin):
    """A Filter whose verdict depends on the node's pods only through their summed requests and number.

    Knowing that, the runtime can count nominated pods and preemption can try victims by arithmetic,
    without cloning NodeInfos and re-running filters; the answers are the ones `filter` would give.
    """

    def filter_amounts(
        self, state: CycleState, pod: PodInfo, allocatable: Any, requested: Any, pod_count: int
    ) -> Status | None:
        raise NotImplementedError

    def amounts_fit(self, state: CycleState, pod: PodInfo, allocatable: Any, requested: Any, pod_count: int) -> bool:
        """filter_amounts(...) is None, without building the status (the hot question in dry runs)."""
        return self.filter_amounts(state, pod, allocatable, requested, pod_count) is None

    def amounts_verdicts_all(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray, extra: Any
    ) -> FilterVerdicts:
        """filter_amounts for the snapshot nodes `idx` (by position k), each with `extra` (ExtraSums) added."""
        from kubesched.framework.pod_sums import with_extra

        def amounts(k: int) -> tuple[Any, Any, int]:
            ni = snapshot.nodes[int(idx[k])]
            used, count = with_extra(ni.requested, len(ni.pods), extra, k)
            return ni.allocatable, used, count

        failed = np.array([not self.amounts_fit(state, pod, *amounts(k)) for k in range(len(idx))], bool)

        def status_of(k: int) -> Status:
            st = self.filter_amounts(state, pod, *amounts(k))
            return st if st is not None else Status.as_error(f"filter {self.name!r} gave different verdicts")

        return FilterVerdicts(failed, status_of)

    def amounts_fit_all(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray, extra: Any
    ) -> np.ndarray:
        """amounts_fit for the snapshot nodes `idx`, each with `extra` (an ExtraSums) added to its pods."""
        return ~self.amounts_verdicts_all(state, pod, snapshot, idx, extra).failed

    def amounts_key(self, state: CycleState, pod: PodInfo) -> Hashable | None:
        """All that amounts_fit_all reads besides a node's row and `extra`, as a key (pods with equal keys get
        equal answers), so that preemption can keep a node's dry run for the next preemptor alike; None when
        unknown (the default: nothing is kept)."""
        return None


def pods_matter_only_by_sums(plugins: Sequence[FilterPlugin], skip: frozenset[str]) -> bool:
    """True when every active filter either ignores the node's pods or only sums them."""
    return all(p.name in skip or not p.depends_on_node_pods or isinstance(p, ResourceSumsFilterPlugin) for p in plugins)


# Keys below this are grouped by np.bincount (an array this long at most) rather than np.unique.
_BINCOUNT_KEYS = 1 << 12


class FilterVerdicts:
    """A whole-snapshot Filter result: which nodes fail (by snapshot index) and why.

    Plugins whose failures fall into a few kinds give `keys` (one integer per
    node) and `status_of_key`: nodes with equal keys share one Status, so the
    statuses of thousands of failing nodes are grouped with one `np.unique`.
    """

    __slots__ = ("_keys", "_status_of", "failed", "status_of_key")

    def __init__(
        self,
        failed: np.ndarray,
        status_of: Callable[[int], Status] | None = None,
        keys: np.ndarray | Callable[[], np.ndarray] | None = None,
        status_of_key: Callable[[int], Status] | None = None,
    ) -> None:
        self.failed = failed
        # An array, or a function computing it when a status is first asked for.
        self._keys = keys
        self.status_of_key = status_of_key
        if status_of is None and (keys is None or status_of_key is None):
            raise ValueError("FilterVerdicts needs status_of, or keys and status_of_key")
        # None: by key (not a bound method kept on self, which would make a reference cycle).
        self._status_of = status_of

    @property
    def keys(self) -> np.ndarray | None:
        k = self._keys
        if k is not None and not isinstance(k, np.ndarray):
            k = self._keys = k()
        return k

    def _by_key(self, i: int) -> Status:
        return self.status_of_key(int(self.keys[i]))  # type: ignore[index,misc]

    @classmethod
    def uniform(cls, failed: np.ndarray, status: Status) -> FilterVerdicts:
        return cls(failed, keys=np.zeros(len(failed), np.int8), status_of_key=lambda _k: status)

    def status(self, i: int) -> Status:
        if self._status_of is None:
            return self._by_key(i)
        return self._status_of(i)

    def grouped(self, rows: np.ndarray) -> list[tuple[np.ndarray, Status]]:
        """The statuses of `rows`, as (positions into rows, status) per distinct status."""
        if self.keys is not None and self.status_of_key is not None:
            keys = self.keys[rows]
            if not len(keys):
                return []
            if keys[keys.argmin()] >= 0 and keys[keys.argmax()] < _BINCOUNT_KEYS:
                # Small keys (the usual verdict codes and packed bits): counted, not sorted as by np.unique.
                uniq = np.bincount(keys).nonzero()[0]
            else:
                uniq = np.unique(keys)
            if len(uniq) == 1:
                return [(np.arange(len(rows)), self.status_of_key(int(uniq[0])))]
            return [((keys == k).nonzero()[0], self.status_of_key(k)) for k in uniq.tolist()]
        by_status: dict[int, tuple[list[int], Status]] = {}
        for j, r in enumerate(rows.tolist()):
            st = self.status(r)
            by_status.setdefault(id(st), ([], st))[0].append(j)
        return [(np.array(js, np.int64), st) for js, st in by_status.values()]


class VectorFilterPlugin(FilterPlugin):
    """A Filter plugin that can judge every node of the snapshot at once."""

    def filter_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> FilterVerdicts | None:
        """None means every node passes."""
        raise NotImplementedError


class PostFilterResult:
    """What PostFilter (preemption) achieved: the node to nominate, if any."""

    __slots__ = ("mode", "nominated_node_name")

    MODE_NOOP = 0
    MODE_OVERRIDE = 1

    def __init__(self, nominated_node_name: str = "", mode: int = 1) -> None:
        self.nominated_node_name = nominated_node_name
        self.mode = mode


class PostFilterPlugin(Plugin):
    def post_filter(
        self, state: CycleState, pod: PodInfo, node_to_status: Any
    ) -> tuple[PostFilterResult | None, Status | None]:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        raise NotImplementedError


class NodeScoreList:
    """Scores of one plugin for the feasible nodes: names and an int64 array, same order."""

    __slots__ = ("_names", "scores")

    def __init__(self, names: Sequence[str] | Callable[[], Sequence[str]], scores: np.ndarray) -> None:
        # The names, or a function giving them (most plugins never read them).
        self._names = names
        self.scores = scores

    @property
    def names(self) -> Sequence[str]:
        if callable(self._names):
            self._names = self._names()
        return self._names


class ScorePlugin(Plugin):
    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status | None]:
        raise NotImplementedError

    def has_normalize(self) -> bool:
        """ScoreExtensions() != nil upstream."""
        return type(self).normalize_score is not ScorePlugin.normalize_score

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: NodeScoreList) -> Status | None:
        """Rewrite `scores.scores` in place into [0, MAX_NODE_SCORE]."""
        return None


class VectorScorePlugin(ScorePlugin):
    """A Score plugin that can score the given snapshot indices at once."""

    def score_all(self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class RowScore:
    """A Score plugin's scores for one pod as a function of a node's row alone (its amounts: allocatable,
    requested, number of pods), with no NormalizeScore after: what `Snapshot.row_scores` keeps per `key`.
    `build()` gives `one(node_info)` and `many(indices)` (the same numbers for several rows at once)."""

    __slots__ = ("build", "key")

    def __init__(
        self,
        key: Hashable,
        build: Callable[[], tuple[Callable[[NodeInfo], int], Callable[[np.ndarray], np.ndarray]]],
    ) -> None:
        self.key = key
        self.build = build


class SummableScorePlugin(VectorScorePlugin):
    """A vector Score plugin that can say, for some pods, what its scores add to the totals without an array per
    pod: the score passes then keep the weighted totals per node, row by row, when a cycle needs no per-plugin
    scores (nothing reports them)."""

    def score_terms(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> int | RowScore | None:
        """An int: every node's score, NormalizeScore done; a RowScore (a plugin without NormalizeScore); None:
        neither holds for this pod (its scores are made as usual)."""
        raise NotImplementedError


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        """(status, timeout in seconds): WAIT holds the pod at Permit until allowed, rejected or timed out."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError


class BindPlugin(Plugin):
    # True for a binder whose whole work is `client.bind(namespace, name, uid, node)` (DefaultBinder): live mode
    # then starts that call without a thread waiting on it (Scheduler.bind_caller).
    binds_through_client = False

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """SKIP lets the next Bind plugin bind the pod."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


EXTENSION_POINTS: dict[str, type[Plugin]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}
