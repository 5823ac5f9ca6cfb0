"""The framework runtime (framework/runtime/framework.go): runs a profile's plugins.

One Framework per profile. It holds one list of plugins per extension point,
built once, and runs them with upstream's semantics: PreFilter stops at the
first UnschedulableAndUnresolvable, Filter stops at a node's first failure,
scores are normalized, range-checked and weighted, Reserve/Permit/PreBind/Bind
wrap errors the way upstream words them.

Filtering is done for all candidate nodes at once: plugins with a vector path
judge the whole snapshot in a few array operations; plugins without one run
node by node, in scheduling order, only on nodes that the vector plugins before
them did not already reject, and only until enough feasible nodes are found.
Nodes with nominated pods of equal or higher priority always take the per-node
path with those pods added (RunFilterPluginsWithNominatedPods).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    FilterVerdicts,
    NodeScoreList,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ResourceSumsFilterPlugin,
    ScorePlugin,
    VectorFilterPlugin,
    VectorScorePlugin,
    pods_matter_only_by_sums,
)
from kubesched.framework.pod_sums import FILTER_VERDICTS_KEY, ExtraSums, ge_priority_nominations
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.framework.waiting_pods import WaitingPod, WaitingPods
from kubesched.gocompat.strconv import go_quote

if TYPE_CHECKING:
    from kubesched.framework.snapshot import Snapshot

_NO_FAILURE = np.int32(1 << 30)
_ENQUEUE_EXTENSION_POINTS = (PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, ReservePlugin, PermitPlugin)
MAX_PERMIT_TIMEOUT = 15 * 60.0


def _bind_failed(plugin: str, s: Status) -> Status:
    """A Bind plugin's failure as the framework reports it."""
    if s.is_rejected():
        s.plugin = plugin
        return s
    return Status.as_error(f"running Bind plugin {go_quote(plugin)}: {s.message()}")


def _plugin_raised(point: str, plugin: Plugin, err: BaseException) -> Status:
    """A plugin that raises is contained: an Error status naming the plugin."""
    return Status.as_error(
        f"plugin {go_quote(plugin.name)} raised at {point}: {type(err).__name__}: {err}", plugin.name
    )


def _score_failed(phase: str, plugin: Plugin, s: Status) -> Status:
    """A Score or NormalizeScore failure: "<phase>: plugin "<name>" failed with: <error>"."""
    return Status.as_error(f"{phase}: plugin {go_quote(plugin.name)} failed with: {s.message()}")


class FilterOutcome:
    """The result of filtering: feasible node indices (in scheduling order) and, lazily, why others failed."""

    __slots__ = ("_failed", "_grouper", "_status_of", "_statuses", "error", "feasible", "processed")

    def __init__(
        self,
        feasible: np.ndarray,
        processed: int,
        failed: np.ndarray,
        status_of: Callable[[int], Status],
        error: Status | None = None,
        grouper: Callable[[np.ndarray], list[tuple[np.ndarray, Status]]] | None = None,
    ) -> None:
        self.feasible = feasible
        self.processed = processed
        self._failed = failed
        self._status_of = status_of
        self.error = error
        self._statuses: dict[int, Status] | None = None
        self._grouper = grouper

    def groups(self) -> list[tuple[np.ndarray, Status]]:
        """The failed nodes as (snapshot indices, status) per distinct status."""
        if self._grouper is not None:
            return self._grouper(self._failed)
        by_status: dict[int, tuple[list[int], Status]] = {}
        for i, st in self.statuses().items():
            by_status.setdefault(id(st), ([], st))[0].append(i)
        return [(np.array(ix, np.int64), st) for ix, st in by_status.values()]

    def statuses(self) -> dict[int, Status]:
        """Snapshot index -> the status of its first failing plugin, for every processed failing node."""
        if self._statuses is None:
            self._statuses = {int(i): self._status_of(int(i)) for i in self._failed}
        return self._statuses

    @property
    def num_failed(self) -> int:
        return len(self._failed)


class Framework:
    """A profile's plugins, per extension point, and the methods that run them."""

    def __init__(
        self,
        profile_name: str,
        plugins: dict[str, list[Plugin]],
        score_weights: dict[str, int],
        percentage_of_nodes_to_score: int | None,
        handle: Any,
    ) -> None:
        self.profile_name = profile_name
        self.plugins_by_name: dict[str, Plugin] = {}
        for lst in plugins.values():
            for p in lst:
                self.plugins_by_name[p.name] = p
        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = plugins.get("preEnqueue", [])  # type: ignore[assignment]
        self.queue_sort_plugins: list[QueueSortPlugin] = plugins.get("queueSort", [])  # type: ignore[assignment]
        self.pre_filter_plugins: list[PreFilterPlugin] = plugins.get("preFilter", [])  # type: ignore[assignment]
        self.filter_plugins: list[FilterPlugin] = plugins.get("filter", [])  # type: ignore[assignment]
        self.post_filter_plugins: list[PostFilterPlugin] = plugins.get("postFilter", [])  # type: ignore[assignment]
        self.pre_score_plugins: list[PreScorePlugin] = plugins.get("preScore", [])  # type: ignore[assignment]
        self.score_plugins: list[ScorePlugin] = plugins.get("score", [])  # type: ignore[assignment]
        self.reserve_plugins: list[ReservePlugin] = plugins.get("reserve", [])  # type: ignore[assignment]
        self.permit_plugins: list[PermitPlugin] = plugins.get("permit", [])  # type: ignore[assignment]
        self.pre_bind_plugins: list[PreBindPlugin] = plugins.get("preBind", [])  # type: ignore[assignment]
        self.bind_plugins: list[BindPlugin] = plugins.get("bind", [])  # type: ignore[assignment]
        self.post_bind_plugins: list[PostBindPlugin] = plugins.get("postBind", [])  # type: ignore[assignment]
        self.score_weights = score_weights
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.handle = handle
        self.all_plugins: dict[str, Plugin] = dict(self.plugins_by_name)
        self.waiting_pods = WaitingPods()
        # False runs every plugin through its per-node reference methods (tests compare both paths).
        self.use_vector_paths = True
        self._pre_filter_ext = [
            (p, ext) for p in self.pre_filter_plugins if (ext := p.pre_filter_extensions()) is not None
        ]

    # ------------------------------------------------------------ queue

    def queue_sort(self) -> QueueSortPlugin:
        return self.queue_sort_plugins[0]

    def enqueue_extensions(self) -> list[Plugin]:
        """The instantiated plugins that register cluster events (fillEnqueueExtensions).

        Only PreEnqueue, PreFilter, Filter, Reserve and Permit plugins qualify
        (shouldHaveEnqueueExtensions), judged by what the plugin implements, not
        where the profile enables it; a PreBind-only plugin registers nothing.
        """
        return [p for p in self.all_plugins.values() if isinstance(p, _ENQUEUE_EXTENSION_POINTS)]

    def has_enqueue_extensions(self, p: Plugin) -> bool:
        return isinstance(p, EnqueueExtensions)

    # ------------------------------------------------------------ PreFilter

    def run_pre_filter_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        skip: set[str] = set()
        result: PreFilterResult | None = None
        plugins_with_nodes: list[str] = []
        return_status: Status | None = None
        try:
            for pl in self.pre_filter_plugins:
                try:
                    r, s = pl.pre_filter(state, pod, nodes)
                except Exception as err:  # noqa: BLE001
                    return None, _plugin_raised("PreFilter", pl, err), set()
                if s is not None and s.code == Code.SKIP:
                    skip.add(pl.name)
                    continue
                if s is not None and s.code != Code.SUCCESS:
                    s.plugin = pl.name
                    if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        return None, s, set()
                    if s.code == Code.UNSCHEDULABLE:
                        return_status = s
                        continue
                    return (
                        None,
                        Status.as_error(f"running PreFilter plugin {go_quote(pl.name)}: {s.message()}", pl.name),
                        set(),
                    )
                if r is not None and not r.all_nodes():
                    plugins_with_nodes.append(pl.name)
                    result = r if result is None else result.merge(r)
                    if not result.all_nodes() and not result.node_names:
                        # sets.List: the plugin names sorted.
                        listed = sorted(plugins_with_nodes)
                        if len(listed) == 1:
                            msg = f"node(s) didn't satisfy plugin {listed[0]}"
                        else:
                            msg = f"node(s) didn't satisfy plugin(s) [{' '.join(listed)}] simultaneously"
                        return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg), set(plugins_with_nodes)
            return result, return_status, set(plugins_with_nodes)
        finally:
            state.skip_filter_plugins = frozenset(skip)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        for pl, ext in self._pre_filter_ext:
            if pl.name in state.skip_filter_plugins:
                continue
            try:
                s = ext.add_pod(state, pod, to_add, node_info)
            except Exception as err:  # noqa: BLE001
                return _plugin_raised("PreFilter AddPod", pl, err)
            if s is not None and s.code != Code.SUCCESS:
                return Status.as_error(f"running AddPod on PreFilter plugin {go_quote(pl.name)}: {s.message()}")
        return None

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        for pl, ext in self._pre_filter_ext:
            if pl.name in state.skip_filter_plugins:
                continue
            try:
                s = ext.remove_pod(state, pod, to_remove, node_info)
            except Exception as err:  # noqa: BLE001
                return _plugin_raised("PreFilter RemovePod", pl, err)
            if s is not None and s.code != Code.SUCCESS:
                return Status.as_error(f"running RemovePod on PreFilter plugin {go_quote(pl.name)}: {s.message()}")
        return None

    # ------------------------------------------------------------ Filter, node by node

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        skip = state.skip_filter_plugins
        for pl in self.filter_plugins:
            if pl.name in skip:
                continue
            try:
                s = pl.filter(state, pod, node_info)
            except Exception as err:  # noqa: BLE001
                return _plugin_raised("Filter", pl, err)
            if s is not None and s.code != Code.SUCCESS:
                if not s.is_rejected():
                    s = Status.as_error(f"running {go_quote(pl.name)} filter plugin: {s.message()}")
                s.plugin = pl.name
                return s
        return None

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        """Filter twice when the node has nominated pods of equal or higher priority: with them, then without."""
        status: Status | None = None
        pods_added = False
        for i in range(2):
            state_to_use, info_to_use = state, node_info
            if i == 0:
                added, state_out, info_out, err = self._add_ge_nominated_pods(state, pod, node_info)
                if err is not None:
                    return err
                pods_added = added
                state_to_use, info_to_use = state_out, info_out
            elif not pods_added or status is not None:
                break
            status = self.run_filter_plugins(state_to_use, pod, info_to_use)
            if status is not None and not status.is_rejected():
                return status
        return status

    def _add_ge_nominated_pods(
        self, state: CycleState, pod: PodInfo, node_info: NodeInfo
    ) -> tuple[bool, CycleState, NodeInfo, Status | None]:
        nominated = self.handle.nominated_pods_for_node(node_info.name)
        if not nominated:
            return False, state, node_info, None
        info_out = node_info.clone()
        state_out = state.clone()
        added = False
        for pi in nominated:
            if pi.priority >= pod.priority and pi.uid != pod.uid:
                info_out.add_pod(pi)
                s = self.run_pre_filter_extension_add_pod(state_out, pod, pi, info_out)
                if s is not None:
                    return False, state, node_info, s
                added = True
        return added, state_out, info_out, None

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    # ------------------------------------------------------------ Filter, all nodes

    def _count_nominated(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        plugins: list[FilterPlugin],
        nominated: ExtraSums,
        first_fail: np.ndarray | None,
    ) -> tuple[np.ndarray, _NominatedVerdicts | None]:
        """Re-judge nodes with nominated pods of equal or higher priority, those pods counted in the sums."""
        if first_fail is None:
            first_fail = np.full(snapshot.num_nodes, _NO_FAILURE, np.int32)
        idx = np.flatnonzero(nominated.pods > 0)
        if not len(idx):
            return first_fail, None
        extra = nominated.take(idx)
        out = _NominatedVerdicts(snapshot.num_nodes)
        for pos, pl in enumerate(plugins):
            if not isinstance(pl, ResourceSumsFilterPlugin):
                continue
            live = first_fail[idx] >= pos
            if not live.any():
                break
            verdicts = pl.amounts_verdicts_all(state, pod, snapshot, idx, extra)
            hit = np.flatnonzero(live & verdicts.failed)
            if len(hit):
                first_fail[idx[hit]] = pos
                out.rows[idx[hit]] = hit
                out.verdicts[pos] = verdicts
        return first_fail, (out if out.verdicts else None)

    def find_feasible(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, order: np.ndarray, num_to_find: int
    ) -> FilterOutcome:
        """Run the Filter plugins over `order` (snapshot indices, in scheduling order).

        Stops, as upstream, once `num_to_find` feasible nodes are found; `processed`
        counts the nodes examined up to that point. Three passes: the vector plugins
        on all nodes, the nominated pods, then node by node what is left.
        """
        vp = self._filter_vector_pass(state, pod, snapshot)
        if vp.error is not None:
            return _error_outcome(vp.error)
        special = self._filter_nominated_pass(state, pod, snapshot, vp)
        if not vp.per_node and not special:
            return vp.outcome(order, num_to_find)
        return self._filter_per_node_pass(state, pod, snapshot, vp, special, order, num_to_find)

    def _filter_vector_pass(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> _VectorPass:
        """The plugins with a vector path judge every node at once; the others are left for the per-node pass.

        Their verdicts are also stashed in the cycle state (FILTER_VERDICTS_KEY) for plugins that read them.
        """
        skip = state.skip_filter_plugins
        plugins = [p for p in self.filter_plugins if p.name not in skip]
        vp = _VectorPass(plugins)
        n_all = snapshot.num_nodes
        first_fail: np.ndarray | None = None
        verdicts = vp.verdicts
        per_node = vp.per_node
        vector = self.use_vector_paths
        stash: dict[str, np.ndarray | None] = {}
        state.write(FILTER_VERDICTS_KEY, stash)
        for pos, pl in enumerate(plugins):
            if vector and isinstance(pl, VectorFilterPlugin):
                try:
                    v = pl.filter_all(state, pod, snapshot)
                except Exception as err:  # noqa: BLE001
                    vp.error = _plugin_raised("Filter", pl, err)
                    return vp
                if v is None:
                    stash[pl.name] = None  # passes on every node
                    continue
                verdicts[pos] = v
                stash[pl.name] = v.failed
                if first_fail is None:
                    first_fail = np.full(n_all, _NO_FAILURE, np.int32)
                first_fail[v.failed & (first_fail == _NO_FAILURE)] = pos
            else:
                per_node.append(pos)
        vp.first_fail = first_fail
        return vp

    def _filter_nominated_pass(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, vp: _VectorPass
    ) -> dict[int, list[PodInfo]]:
        """Nominated pods of equal or higher priority (RunFilterPluginsWithNominatedPods).

        When they matter only by the sums the resource filters read, they are counted into the
        vector verdicts (vp); otherwise the nodes they are on are returned (snapshot index ->
        those pods), for the per-node pass to filter with them.
        """
        nominator = self.handle.nominator()
        if nominator is None or not nominator.has_nominations():
            return {}
        if (
            not vp.per_node
            and self.use_vector_paths
            and pods_matter_only_by_sums(self.filter_plugins, state.skip_filter_plugins)
        ):
            # Nominated pods only add to the sums the resource filters read: count them in without
            # cloning NodeInfos (the second, pod-less pass can only pass when the first one did).
            sums = nominator.sums_at_least(snapshot.nodes, pod)
            if sums is not None:
                vp.first_fail, vp.nominated = self._count_nominated(
                    state, pod, snapshot, vp.plugins, sums, vp.first_fail
                )
            return {}
        node_map = snapshot.node_map
        return {
            node_map[name].index: pods
            for name, pods in ge_priority_nominations(nominator, pod).items()
            if name in node_map
        }

    def _filter_per_node_pass(
        self,
        state: CycleState,
        pod: PodInfo,
        snapshot: Snapshot,
        vp: _VectorPass,
        special: dict[int, list[PodInfo]],
        order: np.ndarray,
        num_to_find: int,
    ) -> FilterOutcome:
        """Node by node in `order`: the plugins without a vector path, up to a node's first vector failure.

        Nodes in `special` are filtered with their nominated pods instead. Stops one feasible node
        past `num_to_find`, as upstream cancels its parallel search.
        """
        plugins = vp.plugins
        per_node = vp.per_node
        vector_status = vp.status
        nodes = snapshot.nodes
        feasible_list: list[int] = []
        statuses: dict[int, Status] = {}
        processed = 0
        ff = vp.first_fail
        for raw in order:
            i = int(raw)
            processed += 1
            if i in special:
                st = self.run_filter_plugins_with_nominated_pods(state, pod, nodes[i])
            else:
                limit = int(ff[i]) if ff is not None else int(_NO_FAILURE)
                st = None
                ni = nodes[i]
                for pos in per_node:
                    if pos > limit:
                        break
                    pl = plugins[pos]
                    try:
                        s = pl.filter(state, pod, ni)
                    except Exception as err:  # noqa: BLE001
                        return _error_outcome(_plugin_raised("Filter", pl, err))
                    if s is not None and s.code != Code.SUCCESS:
                        if not s.is_rejected():
                            s = Status.as_error(f"running {go_quote(pl.name)} filter plugin: {s.message()}")
                        s.plugin = pl.name
                        st = s
                        break
                if st is None and limit != int(_NO_FAILURE):
                    st = vector_status(i)
            if st is None:
                if len(feasible_list) >= num_to_find:
                    # One more than needed: upstream cancels here, without counting this node.
                    processed -= 1
                    break
                feasible_list.append(i)
            else:
                if st.code == Code.ERROR:
                    return _error_outcome(st)
                statuses[i] = st
        failed = np.fromiter(statuses.keys(), np.int64, len(statuses))
        return FilterOutcome(np.array(feasible_list, np.int64), processed, failed, statuses.__getitem__)

    # ------------------------------------------------------------ PostFilter

    def run_post_filter_plugins(
        self, state: CycleState, pod: PodInfo, node_to_status: Any
    ) -> tuple[PostFilterResult | None, Status]:
        result: PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        for pl in self.post_filter_plugins:
            try:
                r, s = pl.post_filter(state, pod, node_to_status)
            except Exception as err:  # noqa: BLE001
                return None, _plugin_raised("PostFilter", pl, err)
            if s is None or s.code == Code.SUCCESS:
                return r, s if s is not None else Status(Code.SUCCESS)
            if s.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                s.plugin = pl.name
                return r, s
            if not s.is_rejected():
                return None, Status(Code.ERROR, *s.reasons, plugin=pl.name, error=s.error)
            if r is not None and r.mode != PostFilterResult.MODE_NOOP:
                result = r
            reasons.extend(s.reasons)
            if not rejector:
                rejector = pl.name
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    # ------------------------------------------------------------ PreScore / Score

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def run_pre_score_plugins(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        skip: set[str] = set()
        try:
            for pl in self.pre_score_plugins:
                try:
                    s = pl.pre_score(state, pod, nodes)
                except Exception as err:  # noqa: BLE001
                    return _plugin_raised("PreScore", pl, err)
                if s is not None and s.code == Code.SKIP:
                    skip.add(pl.name)
                    continue
                if s is not None and s.code != Code.SUCCESS:
                    return Status.as_error(f"running PreScore plugin {go_quote(pl.name)}: {s.message()}")
            return None
        finally:
            state.skip_score_plugins = frozenset(skip)

    def run_score_plugins(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, idx: np.ndarray
    ) -> tuple[np.ndarray | None, dict[str, np.ndarray], Status | None]:
        """Totals over `idx` and each plugin's weighted scores; or an Error status.

        As RunScorePlugins: every plugin scores every node, then every plugin
        normalizes, then the scores are range-checked and weighted; each phase
        reports its own error.
        """
        nodes = snapshot.nodes
        plugins = [pl for pl in self.score_plugins if pl.name not in state.skip_score_plugins]
        raw: list[np.ndarray] = []
        for pl in plugins:
            try:
                if self.use_vector_paths and isinstance(pl, VectorScorePlugin):
                    scores = np.asarray(pl.score_all(state, pod, snapshot, idx), np.int64)
                else:
                    scores = np.empty(len(idx), np.int64)
                    for k, i in enumerate(idx):
                        v, s = pl.score(state, pod, nodes[int(i)])
                        if s is not None and s.code != Code.SUCCESS:
                            return None, {}, _score_failed("running Score plugins", pl, s)
                        scores[k] = v
            except Exception as err:  # noqa: BLE001
                return None, {}, _plugin_raised("Score", pl, err)
            raw.append(scores)
        names: list[Any] = []

        def node_names() -> Any:
            if not names:
                names.append(snapshot.node_names()[idx])
            return names[0]

        for k, pl in enumerate(plugins):
            if not pl.has_normalize():
                continue
            lst = NodeScoreList(node_names, raw[k])
            try:
                s = pl.normalize_score(state, pod, lst)
            except Exception as err:  # noqa: BLE001
                return None, {}, _plugin_raised("NormalizeScore", pl, err)
            if s is not None and s.code != Code.SUCCESS:
                return None, {}, _score_failed("running Normalize on Score plugins", pl, s)
            raw[k] = lst.scores
        total = np.zeros(len(idx), np.int64)
        per_plugin: dict[str, np.ndarray] = {}
        if raw and len(idx):
            # One pass over all plugins' scores for the range check (the common case: all in range).
            stacked = np.stack(raw)
            in_range = stacked.max() <= MAX_NODE_SCORE and stacked.min() >= MIN_NODE_SCORE
        else:
            in_range = True
        if not in_range:
            # Upstream checks node by node (in parallel, the first node usually first), each node's
            # plugins in order: the error names the first node's first out-of-range plugin.
            out = (stacked > MAX_NODE_SCORE) | (stacked < MIN_NODE_SCORE)
            node = int(np.flatnonzero(out.any(axis=0))[0])
            k = int(np.flatnonzero(out[:, node])[0])
            return (
                None,
                {},
                Status.as_error(
                    f"applying score defaultWeights on Score plugins: plugin {go_quote(plugins[k].name)} returns an "
                    f"invalid score {int(stacked[k, node])}, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                ),
            )
        for pl, scores in zip(plugins, raw, strict=True):
            weighted = scores * self.score_weights.get(pl.name, 1)
            per_plugin[pl.name] = weighted
            total += weighted
        return total, per_plugin, None

    # ------------------------------------------------------------ Reserve / Permit

    def run_reserve_plugins_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        for pl in self.reserve_plugins:
            try:
                s = pl.reserve(state, pod, node)
            except Exception as err:  # noqa: BLE001
                return _plugin_raised("Reserve", pl, err)
            if s is not None and s.code != Code.SUCCESS:
                if s.is_rejected():
                    s.plugin = pl.name
                    return s
                return Status.as_error(f"running Reserve plugin {go_quote(pl.name)}: {s.message()}")
        return None

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for pl in reversed(self.reserve_plugins):
            # Unreserve must go on for the other plugins even if one raises.
            with contextlib.suppress(Exception):
                pl.unreserve(state, pod, node)

    def run_permit_plugins(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        waits: dict[str, float] = {}
        for pl in self.permit_plugins:
            try:
                s, timeout = pl.permit(state, pod, node)
            except Exception as err:  # noqa: BLE001
                return _plugin_raised("Permit", pl, err)
            if s is None or s.code == Code.SUCCESS:
                continue
            if s.is_rejected():
                s.plugin = pl.name
                return s
            if s.code == Code.WAIT:
                waits[pl.name] = min(timeout, MAX_PERMIT_TIMEOUT)
                continue
            return Status.as_error(f"running Permit plugin {go_quote(pl.name)}: {s.message()}", pl.name)
        if waits:
            self.waiting_pods.add(WaitingPod(pod, node, waits, self.handle.now()))
            return Status(
                Code.WAIT, f"one or more plugins asked to wait and no plugin rejected pod {go_quote(pod.name)}"
            )
        return None

    # ------------------------------------------------------------ PreBind / Bind / PostBind

    def run_pre_bind_plugins(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        for pl in self.pre_bind_plugins:
            try:
                s = pl.pre_bind(state, pod, node)
            except Exception as err:  # noqa: BLE001
                return _plugin_raised("PreBind", pl, err)
            if s is not None and s.code != Code.SUCCESS:
                if s.is_rejected():
                    s.plugin = pl.name
                    return s
                return Status.as_error(f"running PreBind plugin {go_quote(pl.name)}: {s.message()}")
        return None

    def run_bind_plugins(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        if not self.bind_plugins:
            return Status(Code.SKIP)
        s: Status | None = Status(Code.SKIP)
        for pl in self.bind_plugins:
            try:
                s = pl.bind(state, pod, node)
            except Exception as err:  # noqa: BLE001
                return _plugin_raised("Bind", pl, err)
            if s is not None and s.code == Code.SKIP:
                continue
            if s is not None and s.code != Code.SUCCESS:
                return _bind_failed(pl.name, s)
            return s
        return s

    @property
    def binds_by_default(self) -> bool:
        """Whether the only Bind plugin's work is the client's bind call (DefaultBinder's; see default_bind_status)."""
        return len(self.bind_plugins) == 1 and self.bind_plugins[0].binds_through_client

    def default_bind_status(self, err: BaseException | None) -> Status | None:
        """What run_bind_plugins returns when that plugin's bind call ended with `err` (None: bound)."""
        return None if err is None else _bind_failed(self.bind_plugins[0].name, Status.as_error(err))

    def run_post_bind_plugins(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for pl in self.post_bind_plugins:
            # PostBind is informational: a raising plugin changes nothing.
            with contextlib.suppress(Exception):
                pl.post_bind(state, pod, node)


class _VectorPass:
    """What the vector pass of find_feasible found, and how to word it.

    `first_fail[i]` is the position (in `plugins`) of node i's first failing vector plugin
    (_NO_FAILURE: none; the array is None when no vector plugin failed anywhere), `verdicts`
    those plugins' verdicts by position, `per_node` the positions left for the per-node pass,
    `nominated` the verdicts re-judged with nominated pods counted, `error` a plugin's failure.
    """

    __slots__ = ("error", "first_fail", "nominated", "per_node", "plugins", "verdicts")

    def __init__(self, plugins: list[FilterPlugin]) -> None:
        self.plugins = plugins
        self.first_fail: np.ndarray | None = None
        self.verdicts: dict[int, FilterVerdicts] = {}
        self.per_node: list[int] = []
        self.nominated: _NominatedVerdicts | None = None
        self.error: Status | None = None

    def status(self, i: int) -> Status:
        """Node i's status: its first failing vector plugin's verdict."""
        first_fail = self.first_fail
        assert first_fail is not None
        pos = int(first_fail[i])
        nominated = self.nominated
        if nominated is not None and nominated.rows[i] >= 0:
            s = nominated.verdicts[pos].status(int(nominated.rows[i]))
        else:
            s = self.verdicts[pos].status(i)
        s.plugin = self.plugins[pos].name
        return s

    def groups(self, failed: np.ndarray) -> list[tuple[np.ndarray, Status]]:
        assert self.first_fail is not None
        return _group_failures(failed, self.first_fail, self.verdicts, self.plugins, self.nominated)

    def outcome(self, order: np.ndarray, num_to_find: int) -> FilterOutcome:
        """The outcome when the vector verdicts decide every node (no per-node plugin, no nominated pod to add)."""
        first_fail = self.first_fail
        if first_fail is None:
            feasible = order[:num_to_find]
            return FilterOutcome(feasible, len(feasible), order[:0], self.status)
        ok = first_fail[order] == _NO_FAILURE
        total_ok = int(np.count_nonzero(ok))
        if total_ok <= num_to_find:
            processed = len(order)
        else:
            # Upstream stops when it meets one feasible node more than it needs (not counted);
            # the failures met before that one are counted as processed.
            processed = int(np.searchsorted(np.cumsum(ok), num_to_find + 1))
        head = order[:processed]
        ok_head = ok[:processed]
        return FilterOutcome(head[ok_head], processed, head[~ok_head], self.status, grouper=self.groups)


class _NominatedVerdicts:
    """Nodes whose first failure comes from re-judging them with their nominated pods counted.

    `rows[i]` is node i's row in the re-judged verdicts (-1: not re-judged), and
    `verdicts[pos]` those of the plugin at position pos.
    """

    __slots__ = ("rows", "verdicts")

    def __init__(self, n: int) -> None:
        self.rows = np.full(n, -1, np.int64)
        self.verdicts: dict[int, FilterVerdicts] = {}


def _group_failures(
    failed: np.ndarray,
    first_fail: np.ndarray,
    verdicts: dict[int, FilterVerdicts],
    plugins: list[FilterPlugin],
    nominated: _NominatedVerdicts | None,
) -> list[tuple[np.ndarray, Status]]:
    """The statuses of the failed nodes (snapshot indices), grouped by their first failing plugin's verdict."""
    out: list[tuple[np.ndarray, Status]] = []
    ff = first_fail[failed]
    rows = nominated.rows[failed] if nominated is not None else None
    for pos in np.unique(ff).tolist():
        sel = ff == pos
        parts: list[tuple[np.ndarray, FilterVerdicts, np.ndarray]] = []
        if rows is None:
            parts.append((failed[sel], verdicts[pos], failed[sel]))
        else:
            base = sel & (rows < 0)
            over = sel & (rows >= 0)
            if base.any():
                parts.append((failed[base], verdicts[pos], failed[base]))
            if over.any():
                parts.append((failed[over], nominated.verdicts[pos], rows[over]))  # type: ignore[union-attr]
        for nodes, v, at in parts:
            for js, st in v.grouped(at):
                st.plugin = plugins[pos].name
                out.append((nodes[js], st))
    return out


def _error_outcome(status: Status) -> FilterOutcome:
    empty = np.zeros(0, np.int64)
    return FilterOutcome(empty, 0, empty, lambda _i: status, error=status)
