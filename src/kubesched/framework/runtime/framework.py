"""The Framework (framework/runtime/framework.go): a profile's plugins, per extension point, and their runs.

One Framework per profile. It holds one list of plugins per extension point,
built once, and runs them with upstream's semantics: PreFilter stops at the
first UnschedulableAndUnresolvable, Filter stops at a node's first failure,
scores are normalized, range-checked and weighted, Reserve/Permit/PreBind/Bind
wrap errors the way upstream words them.

The queue's points and PreFilter are here; Filter and PostFilter in
filter_passes.py, PreScore and Score in score_passes.py, Reserve to PostBind in
binding_points.py. Those are mixins of the one Framework class, so that each
extension point is a plain method call, as upstream's methods on its framework.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import (
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    VectorFilterPlugin,
)
from kubesched.framework.runtime.binding_points import BindingPoints
from kubesched.framework.runtime.filter_passes import FilterPasses
from kubesched.framework.runtime.plugin_failures import plugin_raised
from kubesched.framework.runtime.score_passes import ScorePasses, ScoreRun
from kubesched.framework.runtime.skip_sets import SkipSets
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.framework.waiting_pods import WaitingPods
from kubesched.gocompat.strconv import go_quote

SUCCESS, SKIP_CODE = Code.SUCCESS, Code.SKIP
_ENQUEUE_EXTENSION_POINTS = (PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, ReservePlugin, PermitPlugin)


class Framework(FilterPasses, ScorePasses, BindingPoints):
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
        self._score_runs: dict[frozenset[str], ScoreRun] = {}
        # Set for good once a summed total met a score out of range (-1 in its row): totals are checked since.
        self._totals_out_of_range = [False]
        self._filter_runs: dict[frozenset[str], tuple[list[FilterPlugin], list[VectorFilterPlugin | None]]] = {}
        self._pre_filter_ext = [
            (p, ext) for p in self.pre_filter_plugins if (ext := p.pre_filter_extensions()) is not None
        ]
        # Each PreFilter / PreScore plugin with its bit in the skipped set's mask (see skip_sets).
        self._pre_filter_bits = [(p, 1 << k) for k, p in enumerate(self.pre_filter_plugins)]
        self._pre_filter_skips = SkipSets([p.name for p in self.pre_filter_plugins])
        self._pre_score_bits = [(p, 1 << k) for k, p in enumerate(self.pre_score_plugins)]
        self._pre_score_skips = SkipSets([p.name for p in self.pre_score_plugins])

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
        skip = 0
        result: PreFilterResult | None = None
        plugins_with_nodes: list[str] = []
        return_status: Status | None = None
        try:
            for pl, bit in self._pre_filter_bits:
                try:
                    r, s = pl.pre_filter(state, pod, nodes)
                except Exception as err:  # noqa: BLE001
                    return None, plugin_raised("PreFilter", pl, err), set()
                # (Most plugins answer None or SKIP: one test each, the code read once.)
                code = s.code if s is not None else SUCCESS
                if code == SKIP_CODE:
                    skip |= bit
                    continue
                if code != SUCCESS:
                    assert s is not None
                    s.plugin = pl.name
                    if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        return None, s, set()
                    if code == Code.UNSCHEDULABLE:
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
            state.skip_filter_plugins = self._pre_filter_skips.of(skip)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        for pl, ext in self._pre_filter_ext:
            if pl.name in state.skip_filter_plugins:
                continue
            try:
                s = ext.add_pod(state, pod, to_add, node_info)
            except Exception as err:  # noqa: BLE001
                return plugin_raised("PreFilter AddPod", pl, err)
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
                return plugin_raised("PreFilter RemovePod", pl, err)
            if s is not None and s.code != Code.SUCCESS:
                return Status.as_error(f"running RemovePod on PreFilter plugin {go_quote(pl.name)}: {s.message()}")
        return None
