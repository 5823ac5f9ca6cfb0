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


class CycleState(dict[str, Any]):
    """Plugin state keyed by name (prefix keys with the plugin name to avoid clashes).

    A dict itself: read, get and write are its own methods (C calls; a cycle makes a score of them).
    """

    __slots__ = ("record_plugin_metrics", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        super().__init__()
        self.skip_filter_plugins: frozenset[str] = frozenset()
        self.skip_score_plugins: frozenset[str] = frozenset()
        self.record_plugin_metrics = False

    def __missing__(self, key: str) -> Any:
        raise NotFoundError(key)

    # read(key): the value, else NotFoundError (through __missing__); get(key, default); write(key, value).
    read = dict.__getitem__
    write = dict.__setitem__

    def delete(self, key: str) -> None:
        self.pop(key, None)

    def clone(self) -> CycleState:
        c = CycleState()
        for k, v in self.items():
            clone = getattr(v, "clone", None)
            c[k] = clone() if clone is not None else v
        c.skip_filter_plugins = self.skip_filter_plugins
        c.skip_score_plugins = self.skip_score_plugins
        c.record_plugin_metrics = self.record_plugin_metrics
        return c

    # Identity, as any state object: a dict's contents comparison and unhashability are not wanted here.
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__  # type: ignore[assignment]

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"CycleState({dict.__repr__(self)})"
