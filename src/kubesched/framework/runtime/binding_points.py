"""Reserve, Permit, PreBind, Bind and PostBind (framework.go), with upstream's wording of their failures.

A mixin of the Framework (framework.py), which sets the attributes it reads.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kubesched.framework.cycle_state import BIND_NOT_BEFORE, PRE_BIND_NEXT, CycleState
from kubesched.framework.interface import BindPlugin, PermitPlugin, PostBindPlugin, PreBindPlugin, ReservePlugin
from kubesched.framework.runtime.plugin_failures import bind_failed, plugin_raised
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.framework.waiting_pods import WaitingPod, WaitingPods
from kubesched.gocompat.strconv import go_quote

# Permit's longest wait (maxTimeout).
MAX_PERMIT_TIMEOUT = 15 * 60.0


class BindingPoints:
    """The extension points from Reserve to PostBind; the Framework sets the attributes below."""

    reserve_plugins: list[ReservePlugin]
    permit_plugins: list[PermitPlugin]
    pre_bind_plugins: list[PreBindPlugin]
    bind_plugins: list[BindPlugin]
    post_bind_plugins: list[PostBindPlugin]
    waiting_pods: WaitingPods
    handle: Any

    # ------------------------------------------------------------ Reserve / Permit

    def run_reserve_plugins_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        for pl in self.reserve_plugins:
            try:
                s = pl.reserve(state, pod, node)
            except Exception as err:  # noqa: BLE001
                return plugin_raised("Reserve", pl, err)
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
                return plugin_raised("Permit", pl, err)
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
        """The PreBind plugins in order, from the first or, after a wait (PRE_BIND_NEXT), from where it stopped.

        A plugin that asks to wait (BIND_NOT_BEFORE) stops the run there: the binding cycle is parked and the
        rest run when the wait is over, as upstream's blocking PreBind makes them."""
        plugins = self.pre_bind_plugins
        first: int = state.pop(PRE_BIND_NEXT, 0)
        for i, pl in enumerate(plugins[first:] if first else plugins, first):
            try:
                s = pl.pre_bind(state, pod, node)
            except Exception as err:  # noqa: BLE001
                return plugin_raised("PreBind", pl, err)
            if s is not None and s.code != Code.SUCCESS:
                if s.is_rejected():
                    s.plugin = pl.name
                    return s
                return Status.as_error(f"running PreBind plugin {go_quote(pl.name)}: {s.message()}")
            if state.get(BIND_NOT_BEFORE) is not None:
                state.write(PRE_BIND_NEXT, i + 1)
                return None
        return None

    def run_bind_plugins(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        """The first Bind plugin that does not skip binds; Skip (the last plugin's) when all skip or none is set."""
        s: Status | None = None
        for pl in self.bind_plugins:
            try:
                s = pl.bind(state, pod, node)
            except Exception as err:  # noqa: BLE001
                return plugin_raised("Bind", pl, err)
            if s is not None and s.code == Code.SKIP:
                continue
            if s is not None and s.code != Code.SUCCESS:
                return bind_failed(pl.name, s)
            return s
        return Status(Code.SKIP) if s is None else s

    @property
    def binds_by_default(self) -> bool:
        """Whether the only Bind plugin's work is the client's bind call (DefaultBinder's; see default_bind_status)."""
        return len(self.bind_plugins) == 1 and self.bind_plugins[0].binds_through_client

    def default_bind_status(self, err: BaseException | None) -> Status | None:
        """What run_bind_plugins returns when that plugin's bind call ended with `err` (None: bound)."""
        return None if err is None else bind_failed(self.bind_plugins[0].name, Status.as_error(err))

    def run_post_bind_plugins(self, state: CycleState, pod: PodInfo, node: str) -> None:
        for pl in self.post_bind_plugins:
            # PostBind is informational: a raising plugin changes nothing.
            with contextlib.suppress(Exception):
                pl.post_bind(state, pod, node)
