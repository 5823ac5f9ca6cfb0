"""The in-tree registry (framework/plugins/registry.go): plugin name -> factory.

Factories are named by import path and loaded on first use, so that a profile
that does not enable a plugin never imports it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from kubesched.plugins import names

IN_TREE: dict[str, str] = {
    names.SCHEDULING_GATES: "kubesched.plugins.schedulinggates:SchedulingGates",
    names.PRIORITY_SORT: "kubesched.plugins.prioritysort:PrioritySort",
    names.NODE_UNSCHEDULABLE: "kubesched.plugins.nodeunschedulable:NodeUnschedulable",
    names.NODE_NAME: "kubesched.plugins.nodename:NodeName",
    names.TAINT_TOLERATION: "kubesched.plugins.tainttoleration:TaintToleration",
    names.NODE_AFFINITY: "kubesched.plugins.nodeaffinity:NodeAffinity",
    names.NODE_PORTS: "kubesched.plugins.nodeports:NodePorts",
    names.NODE_RESOURCES_FIT: "kubesched.plugins.noderesources.fit:Fit",
    names.VOLUME_RESTRICTIONS: "kubesched.plugins.volumerestrictions:VolumeRestrictions",
    names.NODE_VOLUME_LIMITS: "kubesched.plugins.nodevolumelimits:NodeVolumeLimits",
    names.VOLUME_BINDING: "kubesched.plugins.volumebinding.plugin:VolumeBinding",
    names.VOLUME_ZONE: "kubesched.plugins.volumezone:VolumeZone",
    names.POD_TOPOLOGY_SPREAD: "kubesched.plugins.podtopologyspread.plugin:PodTopologySpread",
    names.INTER_POD_AFFINITY: "kubesched.plugins.interpodaffinity.plugin:InterPodAffinity",
    names.DYNAMIC_RESOURCES: "kubesched.plugins.dynamicresources.plugin:DynamicResources",
    names.DEFAULT_PREEMPTION: "kubesched.plugins.defaultpreemption:DefaultPreemption",
    names.NODE_RESOURCES_BALANCED_ALLOCATION: "kubesched.plugins.noderesources.balanced_allocation:BalancedAllocation",
    names.IMAGE_LOCALITY: "kubesched.plugins.imagelocality:ImageLocality",
    names.DEFAULT_BINDER: "kubesched.plugins.defaultbinder:DefaultBinder",
}


class RegistryError(ValueError):
    """A plugin reference that cannot be loaded."""


def load_factory(ref: str) -> Any:
    """ "package.module:Class" -> the class (or any callable factory)."""
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise RegistryError(f"{ref!r} is not of the form 'package.module:Factory'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise RegistryError(f"cannot import {module_name!r} for plugin {ref!r}: {err}") from err
    try:
        return getattr(module, attr)
    except AttributeError:
        raise RegistryError(f"module {module_name!r} has no {attr!r} (plugin {ref!r})") from None


class Registry(Mapping[str, Any]):
    """Plugin name -> factory, resolving import paths lazily; out-of-tree plugins can be merged in."""

    def __init__(self, refs: Mapping[str, Any] | None = None) -> None:
        self._refs: dict[str, Any] = dict(IN_TREE if refs is None else refs)
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            ref = self._refs[name]
            self._loaded[name] = load_factory(ref) if isinstance(ref, str) else ref
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._refs)

    def __len__(self) -> int:
        return len(self._refs)

    def register(self, name: str, factory: Any) -> None:
        if name in self._refs:
            raise RegistryError(f'a plugin named "{name}" already exists')
        self._refs[name] = factory
