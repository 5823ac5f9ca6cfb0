"""Building a profile's Framework from its configuration (runtime.NewFramework, profile.NewMap).

Plugins are instantiated once per profile, then placed on each extension point:
first those enabled for each point explicitly (all points are checked before
any multiPoint expansion, so explicit errors come first), then the multiPoint
ones in the order upstream's expandMultiPointPlugins gives (explicit
re-configurations first, then multiPoint-only plugins, then the remaining
explicit ones). A bad profile fails here, at start-up, with upstream's error
text. Besides the registry's plugins, a profile may name out-of-tree ones by
import path; their args are decoded into the type they declare
(framework/registry.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.config.types import KubeSchedulerConfiguration, Plugins, PluginSet, Profile
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    MAX_TOTAL_SCORE,
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from kubesched.framework.registry import PluginArgsError, PluginLoadError, decode_args, is_import_path, load_plugin
from kubesched.framework.runtime import Framework

# A plugin factory: (args, handle) -> plugin. Classes with a `new` classmethod qualify.
PluginFactory = Callable[[Any, Any], Plugin]


class FrameworkError(Exception):
    """A profile that cannot be built (the "framework" stage of start-up)."""


# (config field, framework key, interface, Go interface name) in getExtensionPoints order.
_EXTENSION_POINTS: tuple[tuple[str, str, type[Plugin], str], ...] = (
    ("pre_filter", "preFilter", PreFilterPlugin, "PreFilterPlugin"),
    ("filter", "filter", FilterPlugin, "FilterPlugin"),
    ("post_filter", "postFilter", PostFilterPlugin, "PostFilterPlugin"),
    ("reserve", "reserve", ReservePlugin, "ReservePlugin"),
    ("pre_score", "preScore", PreScorePlugin, "PreScorePlugin"),
    ("score", "score", ScorePlugin, "ScorePlugin"),
    ("pre_bind", "preBind", PreBindPlugin, "PreBindPlugin"),
    ("bind", "bind", BindPlugin, "BindPlugin"),
    ("post_bind", "postBind", PostBindPlugin, "PostBindPlugin"),
    ("permit", "permit", PermitPlugin, "PermitPlugin"),
    ("pre_enqueue", "preEnqueue", PreEnqueuePlugin, "PreEnqueuePlugin"),
    ("queue_sort", "queueSort", QueueSortPlugin, "QueueSortPlugin"),
)


def _needed(plugins: Plugins) -> list[str]:
    names: list[str] = []
    for field_name, *_ in _EXTENSION_POINTS:
        for p in plugins.extension_point(field_name).enabled:
            if p.name not in names:
                names.append(p.name)
    for p in plugins.multi_point.enabled:
        if p.name not in names:
            names.append(p.name)
    return names


def _plugin_args(profile: Profile, name: str, factory: Any) -> Any:
    """The plugin's pluginConfig args, decoded into its declared args type when it has one."""
    raw = profile.args_for(name)
    args_type = getattr(factory, "args_type", None)
    if args_type is None:
        return raw
    try:
        return decode_args(args_type, raw)
    except PluginArgsError as err:
        where = next((i for i, pc in enumerate(profile.plugin_config) if pc.name == name), None)
        location = f"pluginConfig[{where}].args" if where is not None else "args (no pluginConfig entry)"
        raise FrameworkError(f'initializing plugin "{name}": {err.at(location)}') from None


def _instantiate(factory: PluginFactory, args: Any, handle: Any) -> Plugin:
    new = getattr(factory, "new", None)
    if new is not None:
        return new(args, handle)  # type: ignore[no-any-return]
    return factory(args, handle)


def _explicit(pset: PluginSet, pmap: Mapping[str, Plugin], iface: type[Plugin], iface_name: str) -> list[str]:
    """updatePluginList: the plugins enabled for one extension point by name."""
    enabled: list[str] = []
    for ref in pset.enabled:
        pg = pmap.get(ref.name)
        if pg is None:
            raise FrameworkError(f'{iface_name} "{ref.name}" does not exist')
        if not isinstance(pg, iface):
            raise FrameworkError(f'plugin "{ref.name}" does not extend {iface_name} plugin')
        if ref.name in enabled:
            raise FrameworkError(f'plugin "{ref.name}" already registered as "{iface_name}"')
        enabled.append(ref.name)
    return enabled


def _expand_multi_point(
    plugins: Plugins,
    pset: PluginSet,
    enabled: list[str],
    pmap: Mapping[str, Plugin],
    iface: type[Plugin],
    iface_name: str,
) -> list[str]:
    """expandMultiPointPlugins for one extension point: re-configured, multiPoint-only, then other explicit ones."""
    disabled = {p.name for p in pset.disabled}
    if "*" in disabled:
        return enabled
    multi: list[str] = []
    overrides: list[str] = []
    for ref in plugins.multi_point.enabled:
        pg = pmap.get(ref.name)
        if pg is None:
            raise FrameworkError(f'{iface_name} "{ref.name}" does not exist')
        if not isinstance(pg, iface) or ref.name in disabled:
            continue
        if ref.name in enabled:
            overrides.append(ref.name)
            continue
        if ref.name in multi:
            raise FrameworkError(f'plugin "{ref.name}" already registered as "{iface_name}"')
        multi.append(ref.name)
    return [n for n in enabled if n in overrides] + multi + [n for n in enabled if n not in overrides]


def _score_weights(plugins: Plugins, pmap: Mapping[str, Plugin]) -> dict[str, int]:
    weights: dict[str, int] = {}
    total = 0
    for ref in [*plugins.score.enabled, *plugins.multi_point.enabled]:
        pg = pmap.get(ref.name)
        if pg is None or not isinstance(pg, ScorePlugin) or ref.name in weights:
            continue
        w = ref.weight or 1
        weights[ref.name] = w
        # Go's int64 arithmetic: a negative weight makes MaxTotalScore - total wrap around.
        if w * MAX_NODE_SCORE > _int64(MAX_TOTAL_SCORE - total):
            raise FrameworkError("total score of Score plugins could overflow")
        total = _int64(total + w * MAX_NODE_SCORE)
    return weights


def _int64(x: int) -> int:
    return ((x + (1 << 63)) % (1 << 64)) - (1 << 63)


def build_framework(
    profile: Profile,
    registry: Mapping[str, PluginFactory],
    handle_for: Callable[[Framework | None], Any],
    percentage_of_nodes_to_score: int | None = None,
) -> Framework:
    """Instantiate and place the plugins of one profile; raises FrameworkError as upstream words it."""
    handle = handle_for(None)
    pmap: dict[str, Plugin] = {}
    needed = _needed(profile.plugins)
    wanted = set(needed)
    # Registered plugins in registry order, then those named by import path ("pkg.mod:Class").
    # A name that is neither keeps upstream's "... does not exist" error below.
    order = [n for n in registry if n in wanted]
    order += [n for n in needed if n not in registry and is_import_path(n)]
    for name in order:
        try:
            factory = registry[name] if name in registry else load_plugin(name)
            pmap[name] = _instantiate(factory, _plugin_args(profile, name, factory), handle)
        except FrameworkError:
            raise
        except PluginLoadError as err:
            raise FrameworkError(f'loading plugin "{name}": {err}') from err
        except Exception as err:
            raise FrameworkError(f'initializing plugin "{name}": {err}') from err
    # Every explicit extension point is checked before any multiPoint expansion, as NewFramework does.
    plugins = profile.plugins
    names = {
        key: _explicit(plugins.extension_point(field_name), pmap, iface, iface_name)
        for field_name, key, iface, iface_name in _EXTENSION_POINTS
    }
    if plugins.multi_point.enabled:
        for field_name, key, iface, iface_name in _EXTENSION_POINTS:
            pset = plugins.extension_point(field_name)
            names[key] = _expand_multi_point(plugins, pset, names[key], pmap, iface, iface_name)
    by_point = {key: [pmap[n] for n in lst] for key, lst in names.items()}
    if len(by_point["queueSort"]) != 1:
        raise FrameworkError(
            f'only one queue sort plugin required for profile with scheduler name "{profile.scheduler_name}", '
            f"but got {len(by_point['queueSort'])}"
        )
    if not by_point["bind"]:
        raise FrameworkError(
            f'at least one bind plugin is needed for profile with scheduler name "{profile.scheduler_name}"'
        )
    weights = _score_weights(profile.plugins, pmap)
    pct = profile.percentage_of_nodes_to_score
    fw = Framework(
        profile.scheduler_name, by_point, weights, pct if pct is not None else percentage_of_nodes_to_score, handle
    )
    fw.all_plugins = pmap
    handle_for(fw)
    return fw


def build_frameworks(
    cfg: KubeSchedulerConfiguration,
    registry: Mapping[str, PluginFactory],
    handle_for: Callable[[str, Framework | None], Any],
) -> dict[str, Framework]:
    """One Framework per profile, by scheduler name."""
    out: dict[str, Framework] = {}
    for profile in cfg.profiles:
        try:
            out[profile.scheduler_name] = build_framework(
                profile,
                registry,
                functools.partial(handle_for, profile.scheduler_name),
                cfg.percentage_of_nodes_to_score,
            )
        except FrameworkError as err:
            raise FrameworkError(
                f"initializing profiles: creating profile for scheduler name {profile.scheduler_name}: {err}"
            ) from err
    return out
