"""Filter, node by node or over all nodes at once, and PostFilter (framework.go: RunFilterPlugins and the rest).

Filtering is done for all candidate nodes at once: plugins with a vector path
judge the whole snapshot in a few array operations; plugins without one run
node by node, in scheduling order, only on nodes that the vector plugins before
them did not already reject, and only until enough feasible nodes are found.
Nodes with nominated pods of equal or higher priority always take the per-node
path with those pods added (RunFilterPluginsWithNominatedPods).

A mixin of the Framework (framework.py), which sets the attributes it reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import (
    FilterPlugin,
    PostFilterPlugin,
    PostFilterResult,
    ResourceSumsFilterPlugin,
    VectorFilterPlugin,
    pods_matter_only_by_sums,
)
from kubesched.framework.pod_sums import FILTER_VERDICTS_KEY, ExtraSums, ge_priority_nominations
from kubesched.framework.runtime.filter_outcome import (
    NO_FAILURE,
    FilterOutcome,
    NominatedVerdicts,
    VectorPass,
    error_outcome,
)
from kubesched.framework.runtime.plugin_failures import plugin_raised
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.gocompat.strconv import go_quote

if TYPE_CHECKING:
    from kubesched.framework.snapshot import Snapshot


class FilterPasses:
    """The Filter and PostFilter extension points; the Framework sets the attributes below."""

    filter_plugins: list[FilterPlugin]
    post_filter_plugins: list[PostFilterPlugin]
    use_vector_paths: bool
    handle: Any
    # The Filter plugins run, by the set of those PreFilter skipped: the plugins, and each again where it
    # has a vector path (else None).
    _filter_runs: dict[frozenset[str], tuple[list[FilterPlugin], list[VectorFilterPlugin | None]]]

    if TYPE_CHECKING:  # the Framework's own (framework.py)

        def run_pre_filter_extension_add_pod(
            self, state: CycleState, pod: PodInfo, to_add: PodInfo, node_info: NodeInfo
        ) -> Status | None: ...

    # ------------------------------------------------------------ Filter, node by node

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        skip = state.skip_filter_plugins
        for pl in self.filter_plugins:
            if pl.name in skip:
                continue
            try:
                s = pl.filter(state, pod, node_info)
            except Exception as err:  # noqa: BLE001
                return plugin_raised("Filter", pl, err)
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
    ) -> tuple[np.ndarray, NominatedVerdicts | None]:
        """Re-judge nodes with nominated pods of equal or higher priority, those pods counted in the sums."""
        if first_fail is None:
            first_fail = np.full(snapshot.num_nodes, NO_FAILURE, np.int32)
        idx = np.flatnonzero(nominated.pods > 0)
        if not len(idx):
            return first_fail, None
        extra = nominated.take(idx)
        out = NominatedVerdicts(snapshot.num_nodes)
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
            return error_outcome(vp.error)
        special = self._filter_nominated_pass(state, pod, snapshot, vp)
        if not vp.per_node and not special:
            return vp.outcome(order, num_to_find)
        return self._filter_per_node_pass(state, pod, snapshot, vp, special, order, num_to_find)

    def _filter_vector_pass(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> VectorPass:
        """The plugins with a vector path judge every node at once; the others are left for the per-node pass.

        Their verdicts are also stashed in the cycle state (FILTER_VERDICTS_KEY) for plugins that read them.
        """
        plugins, vector_of = self._filter_run(state.skip_filter_plugins)
        vp = VectorPass(plugins)
        n_all = snapshot.num_nodes
        first_fail: np.ndarray | None = None
        verdicts = vp.verdicts
        per_node = vp.per_node
        vector = self.use_vector_paths
        stash: dict[str, np.ndarray | None] = {}
        state.write(FILTER_VERDICTS_KEY, stash)
        for pos, pl in enumerate(plugins):
            vector_pl = vector_of[pos] if vector else None
            if vector_pl is not None:
                try:
                    v = vector_pl.filter_all(state, pod, snapshot)
                except Exception as err:  # noqa: BLE001
                    vp.error = plugin_raised("Filter", pl, err)
                    return vp
                if v is None:
                    stash[pl.name] = None  # passes on every node
                    continue
                verdicts[pos] = v
                stash[pl.name] = v.failed
                if first_fail is None:
                    first_fail = np.full(n_all, NO_FAILURE, np.int32)
                first_fail[v.failed & (first_fail == NO_FAILURE)] = pos
            else:
                per_node.append(pos)
        vp.first_fail = first_fail
        return vp

    def _filter_run(self, skip: frozenset[str]) -> tuple[list[FilterPlugin], list[VectorFilterPlugin | None]]:
        """The plugins not skipped, and each again where it has a vector path; kept per skipped set (read-only).

        Pods alike skip alike, and the plugins do not change once the profile is built.
        """
        run = self._filter_runs.get(skip)
        if run is None:
            plugins = [p for p in self.filter_plugins if p.name not in skip]
            run = self._filter_runs[skip] = (
                plugins,
                [p if isinstance(p, VectorFilterPlugin) else None for p in plugins],
            )
        return run

    def _filter_nominated_pass(
        self, state: CycleState, pod: PodInfo, snapshot: Snapshot, vp: VectorPass
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
        vp: VectorPass,
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
                limit = int(ff[i]) if ff is not None else int(NO_FAILURE)
                st = None
                ni = nodes[i]
                for pos in per_node:
                    if pos > limit:
                        break
                    pl = plugins[pos]
                    try:
                        s = pl.filter(state, pod, ni)
                    except Exception as err:  # noqa: BLE001
                        return error_outcome(plugin_raised("Filter", pl, err))
                    if s is not None and s.code != Code.SUCCESS:
                        if not s.is_rejected():
                            s = Status.as_error(f"running {go_quote(pl.name)} filter plugin: {s.message()}")
                        s.plugin = pl.name
                        st = s
                        break
                if st is None and limit != int(NO_FAILURE):
                    st = vector_status(i)
            if st is None:
                if len(feasible_list) >= num_to_find:
                    # One more than needed: upstream cancels here, without counting this node.
                    processed -= 1
                    break
                feasible_list.append(i)
            else:
                if st.code == Code.ERROR:
                    return error_outcome(st)
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
                return None, plugin_raised("PostFilter", pl, err)
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
