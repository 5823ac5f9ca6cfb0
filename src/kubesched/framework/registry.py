"""Out-of-tree plugins: found by import path or entry point, checked on loading, args decoded (runtime/registry.go).

kube-scheduler compiles out-of-tree plugins into its binary (app.WithPlugin)
and decodes their args through the scheme they register. Python needs
neither: a plugin is a class, found at start-up by one of two routes:

- an import path in the configuration, `name: mypkg.plugins:MyPlugin`, in a
  profile's `plugins` (any extension point or multiPoint) and `pluginConfig`;
- an entry point of the `kubesched.plugins` group, whose name is the plugin's
  name in configurations (`Coscheduling = "mypkg.coscheduling:Coscheduling"`).

A class is checked when it is loaded, not when it first runs (as pluggy does):
it derives from Plugin, defines the methods of every extension point it
claims, and declares its args type (`args_type`) as a dataclass or a msgspec
Struct, or none. Its pluginConfig args are decoded into that type strictly:
an unknown field, a wrong type or a failed check is an error naming the field.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.metadata
import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
import msgspec.inspect as mi

from kubesched.framework.interface import (
    EXTENSION_POINTS,
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
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)

ENTRY_POINT_GROUP = "kubesched.plugins"

_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")

# What each interface asks a plugin to define (the base classes only raise NotImplementedError).
_REQUIRED_METHODS: tuple[tuple[type, str, tuple[str, ...]], ...] = (
    (PreEnqueuePlugin, "PreEnqueuePlugin", ("pre_enqueue",)),
    (QueueSortPlugin, "QueueSortPlugin", ("less",)),
    (PreFilterPlugin, "PreFilterPlugin", ("pre_filter",)),
    (FilterPlugin, "FilterPlugin", ("filter",)),
    (PostFilterPlugin, "PostFilterPlugin", ("post_filter",)),
    (PreScorePlugin, "PreScorePlugin", ("pre_score",)),
    (ScorePlugin, "ScorePlugin", ("score",)),
    (ReservePlugin, "ReservePlugin", ("reserve", "unreserve")),
    (PermitPlugin, "PermitPlugin", ("permit",)),
    (PreBindPlugin, "PreBindPlugin", ("pre_bind",)),
    (BindPlugin, "BindPlugin", ("bind",)),
    (PostBindPlugin, "PostBindPlugin", ("post_bind",)),
    (EnqueueExtensions, "EnqueueExtensions", ("events_to_register",)),
)


class PluginLoadError(Exception):
    """An out-of-tree plugin that cannot be used: not importable, not a plugin, or incomplete."""


class PluginArgsError(Exception):
    """pluginConfig args that do not decode into the plugin's args type.

    `field` is the path of the bad field inside the args ("" when the whole args, or a
    check of the type itself, are at fault); `reason` says what is wrong with it.
    """

    def __init__(self, reason: str, field: str = "") -> None:
        super().__init__(f"{field}: {reason}" if field else reason)
        self.reason = reason
        self.field = field

    def at(self, location: str) -> str:
        """The error with the args' own location in front, e.g. "pluginConfig[2].args.weight: ..."."""
        return f"{location}.{self.field}: {self.reason}" if self.field else f"{location}: {self.reason}"


def is_import_path(name: str) -> bool:
    """True for a "package.module:Class" reference (a plugin named by where it lives)."""
    return bool(_IMPORT_PATH.match(name))


def import_object(ref: str) -> Any:
    """The object a "package.module:Attr" reference names; PluginLoadError says what is missing."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise PluginLoadError(f"{ref!r} is not of the form 'package.module:Class'")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        raise PluginLoadError(f'cannot import module "{module_name}": {err}') from err
    except Exception as err:  # whatever the module raised while importing, said in one line
        raise PluginLoadError(f'importing module "{module_name}" failed: {type(err).__name__}: {err}') from err
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PluginLoadError(f'module "{module_name}" has no attribute "{attr}"') from None
    return obj


def check_plugin_class(cls: Any, name: str) -> type[Plugin]:
    """The class, checked as a plugin named `name`: derived from Plugin, complete, with a usable args type.

    When the class's own `name` differs, a subclass carrying `name` is returned: a plugin
    answers to the name the configuration (or its entry point) gives it, in weights,
    pluginConfig and messages alike.
    """
    if not isinstance(cls, type) or not issubclass(cls, Plugin):
        what = f"class {cls.__module__}.{cls.__qualname__}" if isinstance(cls, type) else type(cls).__name__
        raise PluginLoadError(f"{what} is not a subclass of kubesched.plugin_api.Plugin")
    if not any(issubclass(cls, iface) for iface in EXTENSION_POINTS.values()):
        raise PluginLoadError(
            f"class {cls.__qualname__} implements no extension point (derive from FilterPlugin, ScorePlugin, ...)"
        )
    for iface, iface_name, methods in _REQUIRED_METHODS:
        if not issubclass(cls, iface):
            continue
        for m in methods:
            if getattr(cls, m) is getattr(iface, m):
                raise PluginLoadError(f"class {cls.__qualname__} extends {iface_name} but does not define {m}()")
    args_type = getattr(cls, "args_type", None)
    if args_type is not None and not _is_args_type(args_type):
        raise PluginLoadError(
            f"class {cls.__qualname__}: args_type must be a dataclass or a msgspec.Struct, got {args_type!r}"
        )
    if cls.name == name:
        return cls
    return type(cls.__name__, (cls,), {"name": name, "__module__": cls.__module__, "__qualname__": cls.__qualname__})


def _is_args_type(t: Any) -> bool:
    return isinstance(t, type) and (issubclass(t, msgspec.Struct) or dataclasses.is_dataclass(t))


def load_plugin(ref: str) -> type[Plugin]:
    """The plugin class an import-path name refers to, checked; its name is the import path."""
    return check_plugin_class(import_object(ref), ref)


def entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """The installed `kubesched.plugins` entry points, by plugin name."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def load_entry_point(ep: importlib.metadata.EntryPoint) -> type[Plugin]:
    """The plugin class of an entry point, checked; its name is the entry point's name."""
    try:
        obj = ep.load()
    except Exception as err:  # a broken distribution is reported, not raised through
        raise PluginLoadError(
            f'entry point "{ep.name} = {ep.value}" (group {ENTRY_POINT_GROUP}) failed to load: '
            f"{type(err).__name__}: {err}"
        ) from err
    try:
        return check_plugin_class(obj, ep.name)
    except PluginLoadError as err:
        raise PluginLoadError(f'entry point "{ep.name} = {ep.value}": {err}') from None


def preload(names: Iterable[str]) -> None:
    """Import the modules of out-of-tree plugins (by import path or entry point name), ignoring failures.

    A plugin module may teach the scenario loader its own kinds (api.decode.register_kind)
    when it is imported; this makes them known before the scenario's objects are read.
    A failure is reported in full later, when the profile is built.
    """
    installed: dict[str, importlib.metadata.EntryPoint] | None = None
    for name in names:
        if is_import_path(name):
            with contextlib.suppress(Exception):
                importlib.import_module(name.partition(":")[0])
            continue
        if installed is None:
            installed = entry_points()
        ep = installed.get(name)
        if ep is not None:
            with contextlib.suppress(Exception):
                ep.load()


def plugin_names(config: Any) -> list[str]:
    """Every plugin name a configuration enables, as a typed configuration or a raw v1 mapping."""
    out: list[str] = []
    profiles = getattr(config, "profiles", None)
    if profiles is not None:
        for prof in profiles:
            plugins = prof.plugins
            for field in dataclasses.fields(plugins):
                out.extend(ref.name for ref in getattr(plugins, field.name).enabled)
        return out
    if not isinstance(config, Mapping):
        return out
    for prof in config.get("profiles") or ():
        if not isinstance(prof, Mapping) or not isinstance(prof.get("plugins"), Mapping):
            continue
        for pset in prof["plugins"].values():
            enabled = pset.get("enabled") if isinstance(pset, Mapping) else None
            for ref in enabled or ():
                if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
                    out.append(ref["name"])
    return out


# ---------------------------------------------------------------- typed args


def decode_args(args_type: type, raw: Any) -> Any:
    """pluginConfig args (a mapping, or None when not given) as an `args_type` instance.

    Strict as kube-scheduler's decoding of typed args: apiVersion/kind are
    accepted and dropped, unknown fields are errors, types are not coerced.
    A check the type runs itself (`__post_init__` raising ValueError) is
    reported with its message, which should name the field.
    """
    if isinstance(raw, args_type):
        return raw
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise PluginArgsError(f"must be a mapping of fields, got {type(raw).__name__}")
    value = {k: _plain(v) for k, v in raw.items() if k not in ("apiVersion", "kind")}
    unknown = _unknown_fields(value, mi.type_info(args_type), "")
    if unknown:
        raise PluginArgsError("strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown))
    try:
        return msgspec.convert(value, args_type)
    except msgspec.ValidationError as err:
        text = str(err)
        m = re.search(r" - at `\$(?P<path>[^`]*)`$", text)
        msg, path = (text, "") if m is None else (text[: m.start()], m.group("path").lstrip("."))
        # msgspec's own messages start with a capital; a message of the type's own check stays as written.
        if msg.startswith(("Expected", "Object", "Invalid")):
            msg = msg[:1].lower() + msg[1:]
        raise PluginArgsError(msg, path) from None


def _plain(v: Any) -> Any:
    """JSON-like values as plain builtins (the config decoder's JSON numbers are float subclasses)."""
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, float) and type(v) is not float:
        return float(v)
    return v


def _unknown_fields(value: Any, info: Any, path: str) -> list[str]:
    """Paths of the keys in `value` that `info` (msgspec type info) has no field for."""
    if isinstance(info, (mi.StructType, mi.DataclassType, mi.TypedDictType)) and isinstance(value, Mapping):
        fields = {f.encode_name: f for f in info.fields}
        out: list[str] = []
        for k, v in value.items():
            p = f"{path}.{k}" if path else str(k)
            f = fields.get(k)
            if f is None:
                out.append(p)
            else:
                out.extend(_unknown_fields(v, f.type, p))
        return out
    if isinstance(info, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)) and isinstance(value, list):
        return [u for i, v in enumerate(value) for u in _unknown_fields(v, info.item_type, f"{path}[{i}]")]
    if isinstance(info, mi.DictType) and isinstance(value, Mapping):
        return [u for k, v in value.items() for u in _unknown_fields(v, info.value_type, f"{path}[{k}]")]
    if isinstance(info, mi.UnionType) and isinstance(value, Mapping):
        for t in info.types:
            if isinstance(t, (mi.StructType, mi.DataclassType, mi.TypedDictType)):
                return _unknown_fields(value, t, path)
    return []
