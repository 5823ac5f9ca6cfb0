"""How the framework words a plugin's failure: a raised exception, a Score failure, a Bind failure."""

from __future__ import annotations

from kubesched.framework.interface import Plugin
from kubesched.framework.status import Status
from kubesched.gocompat.strconv import go_quote


def plugin_raised(point: str, plugin: Plugin, err: BaseException) -> Status:
    """A plugin that raises is contained: an Error status naming the plugin."""
    return Status.as_error(
        f"plugin {go_quote(plugin.name)} raised at {point}: {type(err).__name__}: {err}", plugin.name
    )


def score_failed(phase: str, plugin: Plugin, s: Status) -> Status:
    """A Score or NormalizeScore failure: "<phase>: plugin "<name>" failed with: <error>"."""
    return Status.as_error(f"{phase}: plugin {go_quote(plugin.name)} failed with: {s.message()}")


def bind_failed(plugin: str, s: Status) -> Status:
    """A Bind plugin's failure as the framework reports it."""
    if s.is_rejected():
        s.plugin = plugin
        return s
    return Status.as_error(f"running Bind plugin {go_quote(plugin)}: {s.message()}")
