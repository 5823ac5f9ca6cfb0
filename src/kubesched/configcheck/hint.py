"""A hint after upstream's "plugin does not exist" message: the closest known name, and where others go."""

from __future__ import annotations

import difflib
import re

from kubesched.plugins.registry import Registry

_UNKNOWN_PLUGIN = re.compile(r'(?:\w*Plugin|plugin) "([^"]+)" does not exist')


def plugin_hint(message: str, registry: Registry | None = None) -> str | None:
    """After upstream's message for an unknown plugin: the closest known name, and where out-of-tree ones go."""
    m = _UNKNOWN_PLUGIN.search(message)
    if m is None:
        return None
    close = difflib.get_close_matches(m.group(1), sorted(registry or Registry()), n=1, cutoff=0.6)
    guess = f'did you mean "{close[0]}"? ' if close else ""
    return f"hint: {guess}out-of-tree plugins: see docs/plugins.md"
