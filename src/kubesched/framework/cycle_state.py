"""CycleState: data shared between the extension points of one scheduling cycle."""

from __future__ import annotations

from typing import Any, Protocol

# A PreBind plugin that started work the API completes later (volume binding: the PV controller) writes the
# time before which Bind must not be called; the scheduler parks the binding cycle until then.
BIND_NOT_BEFORE = "kubesched/bind-not-before"
# Upstream's PreBind plugins run one after another in the binding goroutine, and such a plugin blocks until its
# work is done: the plugins after it run when the wait ends. The index of the next one is kept here meanwhile.
PRE_BIND_NEXT = "kubesched/pre-bind-next"


class StateData(Protocol):
    """What a plugin stores in CycleState. `clone()` is used by preemption's dry runs."""

    def clone(self) -> StateData: ...


class NotFoundError(KeyError):
    """fwk.ErrNotFound: its text is exactly "not found", which upstream messages show."""

    def __str__(self) -> str:
        return "not found"


class CycleState:
    """Plugin state keyed by name (prefix keys with the plugin name to avoid clashes)."""

    __slots__ = ("_data", "record_plugin_metrics", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: frozenset[str] = frozenset()
        self.skip_score_plugins: frozenset[str] = frozenset()
        self.record_plugin_metrics = False

    def read(self, key: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            raise NotFoundError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        c = CycleState()
        for k, v in self._data.items():
            clone = getattr(v, "clone", None)
            c._data[k] = clone() if clone is not None else v
        c.skip_filter_plugins = self.skip_filter_plugins
        c.skip_score_plugins = self.skip_score_plugins
        c.record_plugin_metrics = self.record_plugin_metrics
        return c
