"""Building a profile's Framework (runtime.NewFramework): multiPoint expansion, overrides, errors, weights."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.config.types import PluginRef, Plugins, PluginSet, Profile
from kubesched.framework.interface import (
    BindPlugin,
    FilterPlugin,
    Plugin,
    PreBindPlugin,
    PreFilterPlugin,
    QueueSortPlugin,
    ScorePlugin,
)
from kubesched.framework.profile import FrameworkError, build_framework
from kubesched.framework.runtime import Framework


def _plugin(name: str, *bases: type[Plugin]) -> type[Plugin]:
    return type(name, bases, {"name": name})


REGISTRY: dict[str, Any] = {
    "Sort": _plugin("Sort", QueueSortPlugin),
    "Binder": _plugin("Binder", BindPlugin),
    "A": _plugin("A", PreFilterPlugin, FilterPlugin),
    "B": _plugin("B", FilterPlugin, ScorePlugin),
    "C": _plugin("C", FilterPlugin),
    "D": _plugin("D", FilterPlugin),
    "S1": _plugin("S1", ScorePlugin),
    "S2": _plugin("S2", ScorePlugin),
}


def _refs(*items: str | tuple[str, int]) -> list[PluginRef]:
    return [PluginRef(i) if isinstance(i, str) else PluginRef(i[0], i[1]) for i in items]


def _profile(multi: list[Any] | None = None, **points: tuple[list[Any], list[str]] | list[Any]) -> Profile:
    plugins = Plugins(
        queue_sort=PluginSet(_refs("Sort")),
        bind=PluginSet(_refs("Binder")),
        multi_point=PluginSet(_refs(*(multi or []))),
    )
    for field, spec in points.items():
        enabled, disabled = spec if isinstance(spec, tuple) else (spec, [])
        setattr(plugins, field, PluginSet(_refs(*enabled), _refs(*disabled)))
    return Profile(scheduler_name="test", plugins=plugins)


def _build(profile: Profile, registry: dict[str, Any] | None = None) -> Framework:
    return build_framework(profile, registry or REGISTRY, lambda fw: None)


def _names(plugins: list[Plugin]) -> list[str]:
    return [p.name for p in plugins]


def _error(profile: Profile, registry: dict[str, Any] | None = None) -> str:
    with pytest.raises(FrameworkError) as err:
        _build(profile, registry)
    return str(err.value)


def test_multi_point_expands_to_every_extension_point_a_plugin_implements() -> None:
    fw = _build(_profile(["A", "B", "C", "S1"]))
    assert _names(fw.pre_filter_plugins) == ["A"]
    assert _names(fw.filter_plugins) == ["A", "B", "C"]
    assert _names(fw.score_plugins) == ["B", "S1"]
    assert _names(fw.queue_sort_plugins) == ["Sort"]
    assert _names(fw.bind_plugins) == ["Binder"]
    assert fw.profile_name == "test"


def test_explicit_extension_point_overrides_multi_point_order() -> None:
    # expandMultiPointPlugins: overrides (in their explicit order), then multiPoint-only, then other explicit ones
    fw = _build(_profile(["A", "B", "C"], filter=["D", "C"]))
    assert _names(fw.filter_plugins) == ["C", "A", "B", "D"]
    fw = _build(_profile(["A", "B", "C"], filter=["C", "A"]))
    assert _names(fw.filter_plugins) == ["C", "A", "B"]


def test_disabled_plugins_and_star() -> None:
    fw = _build(_profile(["A", "B", "C"], filter=([], ["B"])))
    assert _names(fw.filter_plugins) == ["A", "C"]
    assert _names(fw.pre_filter_plugins) == ["A"]
    fw = _build(_profile(["A", "B", "C"], filter=(["D"], ["*"])))
    assert _names(fw.filter_plugins) == ["D"]
    assert _names(fw.score_plugins) == ["B"]  # other points still expand


@pytest.mark.parametrize(
    ("profile", "message"),
    [
        (_profile(["Nope"]), 'PreFilterPlugin "Nope" does not exist'),
        (_profile(filter=["Nope"]), 'FilterPlugin "Nope" does not exist'),
        (_profile(filter=["S1"]), 'plugin "S1" does not extend FilterPlugin plugin'),
        (_profile(filter=["C", "C"]), 'plugin "C" already registered as "FilterPlugin"'),
        (_profile(["A", "A"]), 'plugin "A" already registered as "PreFilterPlugin"'),
        # with PreFilter disabled entirely, the first point to meet the unknown plugin is Filter
        (_profile(["Nope"], pre_filter=([], ["*"])), 'FilterPlugin "Nope" does not exist'),
    ],
)
def test_configuration_errors_use_upstreams_text(profile: Profile, message: str) -> None:
    assert _error(profile) == message


def test_queue_sort_and_bind_are_required() -> None:
    p = _profile(["A"])
    p.plugins.queue_sort = PluginSet()
    assert _error(p) == 'only one queue sort plugin required for profile with scheduler name "test", but got 0'
    p = _profile(["A"])
    p.plugins.bind = PluginSet()
    assert _error(p) == 'at least one bind plugin is needed for profile with scheduler name "test"'


def test_plugin_factory_errors_are_wrapped() -> None:
    class Bad(FilterPlugin):
        name = "Bad"

        @classmethod
        def new(cls, args: Any, handle: Any) -> Plugin:
            raise ValueError("args are wrong")

    assert _error(_profile(["Bad"]), {**REGISTRY, "Bad": Bad}) == 'initializing plugin "Bad": args are wrong'


def test_explicit_errors_come_before_multi_point_errors() -> None:
    assert _error(_profile(["Y"], filter=["X"])) == 'FilterPlugin "X" does not exist'


def test_score_weights_default_to_one_and_explicit_score_weight_wins() -> None:
    fw = _build(_profile([("S1", 0), ("S2", 5), "B"]))
    assert fw.score_weights == {"S1": 1, "S2": 5, "B": 1}
    fw = _build(_profile([("S1", 3)], score=[("S1", 7)]))
    assert fw.score_weights == {"S1": 7}
    assert _names(fw.score_plugins) == ["S1"]


def test_score_weight_overflow() -> None:
    big = (2**63 - 1) // 100
    _build(_profile([("S1", big)]))  # exactly at the limit: fine
    assert _error(_profile([("S1", big), ("S2", 1)])) == "total score of Score plugins could overflow"


def test_percentage_of_nodes_to_score_from_profile_or_global() -> None:
    p = _profile(["A"])
    assert build_framework(p, REGISTRY, lambda fw: None, 30).percentage_of_nodes_to_score == 30
    p.percentage_of_nodes_to_score = 70
    assert build_framework(p, REGISTRY, lambda fw: None, 30).percentage_of_nodes_to_score == 70


def test_enqueue_extensions_are_the_rejecting_points() -> None:
    fw = _build(_profile(["A", "B", "S1"]))
    assert [p.name for p in fw.enqueue_extensions()] == ["A", "B"]


def test_pre_bind_only_plugins_have_no_enqueue_extensions() -> None:
    registry = {**REGISTRY, "PB": _plugin("PB", PreBindPlugin)}
    fw = _build(_profile(["A", "PB"]), registry)
    assert _names(fw.pre_bind_plugins) == ["PB"]
    assert [p.name for p in fw.enqueue_extensions()] == ["A"]


def test_enqueue_extensions_follow_what_a_plugin_implements_not_where_it_is_enabled() -> None:
    # fillEnqueueExtensions runs for every instantiated plugin: B (Filter and Score) enabled only at Score counts.
    fw = _build(_profile(score=["B"]))
    assert [p.name for p in fw.enqueue_extensions()] == ["B"]
