"""What kube-scheduler would say about a configuration file at start-up: decode, validate, build profiles.

The third step builds every profile's framework (plugin constructors, unknown
plugins, score weights) exactly as the scheduler does, without a cluster.
"""

from __future__ import annotations

import difflib
import random
import re
from typing import Any

from kubesched.config import ConfigError, encode_defaulted, load_config
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.framework.handle import Handle, Lister
from kubesched.framework.profile import FrameworkError, build_frameworks
from kubesched.framework.snapshot import Snapshot
from kubesched.gocompat.field import aggregate_message
from kubesched.plugins.registry import Registry


def _offline_handle(profile: str, _fw: Any) -> Handle:
    empty = Lister(lambda _key: None, lambda: ())
    return Handle(
        profile, Snapshot, None, lambda _kind: empty, lambda: None, lambda: 0.0, random.Random(0), lambda _pods: None
    )


def check_config(text: str, source: str = "<config>", registry: Registry | None = None) -> dict[str, Any]:
    """{"valid", "stage", "errors", "message", "defaulted"?} as ../shared/conformance/config records them."""
    try:
        cfg = load_config(text, source)
    except ConfigError as err:
        return {"valid": False, "stage": err.stage, "errors": err.errors, "message": err.message}
    try:
        build_frameworks(cfg, registry or Registry(), _offline_handle)
    except FrameworkError as err:
        msg = str(err)
        return {"valid": False, "stage": "framework", "errors": [msg], "message": aggregate_message([msg])}
    return {"valid": True, "stage": "ok", "errors": [], "message": None, "defaulted": encode_defaulted(cfg)}


def check_profiles(cfg: KubeSchedulerConfiguration, source: str, registry: Registry | None = None) -> None:
    """Build every profile without a cluster, as the scheduler will: a bad plugin fails before anything starts."""
    try:
        build_frameworks(cfg, registry or Registry(), _offline_handle)
    except FrameworkError as err:
        raise InputError(source, str(err)) from None


_UNKNOWN_PLUGIN = re.compile(r'(?:\w*Plugin|plugin) "([^"]+)" does not exist')


def plugin_hint(message: str, registry: Registry | None = None) -> str | None:
    """After upstream's message for an unknown plugin: the closest known name, and where out-of-tree ones go."""
    m = _UNKNOWN_PLUGIN.search(message)
    if m is None:
        return None
    close = difflib.get_close_matches(m.group(1), sorted(registry or Registry()), n=1, cutoff=0.6)
    guess = f'did you mean "{close[0]}"? ' if close else ""
    return f"hint: {guess}out-of-tree plugins: see docs/plugins.md"
