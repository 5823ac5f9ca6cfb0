"""Out-of-tree plugins: loaded by import path and by entry point, enabled like in-tree ones, args typed and
checked, bad references and bad args refused in one line, a raising plugin contained."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubesched.cli import main
from kubesched.configcheck import check_config
from kubesched.errors import InputError
from kubesched.framework.registry import decode_args, is_import_path, plugin_names
from kubesched.plugins.registry import Registry, RegistryError
from kubesched.testing import Env, make_node, make_pod, placements, simulate, write_entry_points

SRC = Path(__file__).resolve().parents[2] / "src"

PLUGINS = """
import dataclasses
from typing import Annotated

import msgspec

from kubesched.plugin_api import (
    Code, EnqueueExtensions, FilterPlugin, PermitPlugin, PreBindPlugin, PreEnqueuePlugin, PreFilterPlugin,
    PreScorePlugin, ReservePlugin, ScorePlugin, Status,
)


class ZoneArgs(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    zone: str = "a"
    zone_label: str = "zone"
    bonus: Annotated[int, msgspec.Meta(ge=0, le=100)] = 100
    extra: list[dict[str, int]] = []
    ratio: float = 1.0


class PreferZone(ScorePlugin):
    name = "PreferZone"
    args_type = ZoneArgs

    def __init__(self, args):
        self.args = args

    @classmethod
    def new(cls, args, handle):
        return cls(args)

    def score(self, state, pod, node_info):
        labels = node_info.node.metadata.labels
        bonus = int(self.args.bonus * self.args.ratio)
        return (bonus if labels.get(self.args.zone_label) == self.args.zone else 0), None


@dataclasses.dataclass
class LabelArgs:
    label: str
    value: str = "yes"

    def __post_init__(self):
        if not self.label:
            raise ValueError("label: must not be empty")


class OnlyLabeled(FilterPlugin):
    args_type = LabelArgs

    @classmethod
    def new(cls, args, handle):
        p = cls()
        p.args = args
        return p

    def filter(self, state, pod, node_info):
        if node_info.node.metadata.labels.get(self.args.label) != self.args.value:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"node(s) without {self.args.label}={self.args.value}")
        return None


class RawArgs(FilterPlugin):
    name = "RawArgs"

    @classmethod
    def new(cls, args, handle):
        p = cls()
        p.args = args
        return p

    def filter(self, state, pod, node_info):
        return None


def _boom(pod):
    if pod.labels.get("boom") == "yes":
        raise ZeroDivisionError("division by zero")


class BoomPreEnqueue(PreEnqueuePlugin):
    def pre_enqueue(self, pod):
        _boom(pod)


class BoomPreFilter(PreFilterPlugin):
    def pre_filter(self, state, pod, nodes):
        _boom(pod)
        return None, None


class BoomFilter(FilterPlugin):
    def filter(self, state, pod, node_info):
        _boom(pod)


class BoomPreScore(PreScorePlugin):
    def pre_score(self, state, pod, nodes):
        _boom(pod)


class BoomScore(ScorePlugin):
    def score(self, state, pod, node_info):
        _boom(pod)
        return 0, None


class BoomReserve(ReservePlugin):
    def reserve(self, state, pod, node_name):
        _boom(pod)

    def unreserve(self, state, pod, node_name):
        _boom(pod)


class BoomPermit(PermitPlugin):
    def permit(self, state, pod, node_name):
        _boom(pod)
        return None, 0


class BoomPreBind(PreBindPlugin):
    def pre_bind(self, state, pod, node_name):
        _boom(pod)


class Incomplete(FilterPlugin):
    pass


class BadEvents(FilterPlugin, EnqueueExtensions):
    def filter(self, state, pod, node_info):
        return None

    def events_to_register(self):
        raise RuntimeError("no events today")


class BadArgsType(FilterPlugin):
    args_type = dict

    def filter(self, state, pod, node_info):
        return None


class NotAPlugin:
    pass


class Nothing(__import__("kubesched.plugin_api").plugin_api.Plugin):
    pass
"""

_counter = itertools.count()


@pytest.fixture
def mod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh, importable module holding PLUGINS; its name (unique per test: no stale sys.modules)."""
    name = f"oot_plugins_{next(_counter)}"
    (tmp_path / f"{name}.py").write_text(PLUGINS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _config(enabled: list[dict[str, Any]], plugin_config: list[dict[str, Any]] | None = None, **points: Any) -> dict:
    plugins: dict[str, Any] = {"multiPoint": {"enabled": enabled}} if enabled else {}
    plugins.update(points)
    return {
        "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins, "pluginConfig": plugin_config or []}]
    }


def _zones() -> list[Any]:
    return [make_node("n-a", labels={"zone": "a"}), make_node("n-b", labels={"zone": "b", "gpu": "yes"})]


# ---------------------------------------------------------------- enabling by import path


def test_import_path_plugin_decides_placements_with_typed_args(mod: str) -> None:
    ref = f"{mod}:PreferZone"
    pods = [make_pod("p1", cpu="100m"), make_pod("p2", cpu="100m")]
    # The default scores put p2 beside p1's node's neighbour (spreading); PreferZone with weight 10 wins.
    cfg = _config([{"name": ref, "weight": 10}], [{"name": ref, "args": {"zone": "b"}}])
    assert placements(simulate([*_zones(), *pods], cfg)) == {"default/p1": "n-b", "default/p2": "n-b"}
    cfg = _config([{"name": ref, "weight": 10}], [{"name": ref, "args": {"zone": "a", "zoneLabel": "zone"}}])
    assert placements(simulate([*_zones(), *pods], cfg)) == {"default/p1": "n-a", "default/p2": "n-a"}
    # Without the plugin the default spreading applies: one pod on each node.
    assert sorted(placements(simulate([*_zones(), *pods])).values()) == ["n-a", "n-b"]


def test_import_path_plugin_enabled_per_extension_point_with_dataclass_args(mod: str) -> None:
    ref = f"{mod}:OnlyLabeled"
    cfg = _config([], [{"name": ref, "args": {"label": "gpu"}}], filter={"enabled": [{"name": ref}]})
    result = simulate([*_zones(), make_pod("p", cpu="100m")], cfg)
    assert placements(result) == {"default/p": "n-b"}
    cfg = _config([], [{"name": ref, "args": {"label": "gpu", "value": "no"}}], filter={"enabled": [{"name": ref}]})
    (outcome,) = simulate([*_zones(), make_pod("p", cpu="100m")], cfg).results
    assert outcome.status == "Unschedulable"
    assert outcome.message == (
        "0/2 nodes are available: 2 node(s) without gpu=no. no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_plugin_is_named_by_its_config_name_in_weights_and_messages(mod: str) -> None:
    ref = f"{mod}:PreferZone"
    cfg = _config([{"name": ref, "weight": 7}], [{"name": ref, "args": {"zone": "b", "bonus": 10}}])
    result = simulate([*_zones(), make_pod("p", cpu="100m")], cfg)
    per_plugin = result.results[0].attempt.plugin_scores
    assert per_plugin[ref] == {"n-a": 0, "n-b": 70}


def test_plugin_without_args_type_gets_args_as_given(mod: str) -> None:
    from kubesched.config import load_config_mapping
    from kubesched.framework.profile import build_framework

    ref = f"{mod}:RawArgs"
    cfg = load_config_mapping(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            **_config([{"name": ref}], [{"name": ref, "args": {"anything": [1, 2]}}]),
        }
    )
    fw = build_framework(cfg.profiles[0], Registry(), lambda _fw: Env(_zones()).handle)
    assert fw.plugins_by_name[ref].args == {"anything": [1, 2]}  # type: ignore[attr-defined]


def test_json_config_file_args(mod: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = f"{mod}:PreferZone"
    cfg = tmp_path / "sched.json"
    body = _config([{"name": ref, "weight": 10}], [{"name": ref, "args": {"zone": "b", "ratio": 0.5}}])
    cfg.write_text(
        json.dumps({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", **body})
    )
    scenario = tmp_path / "s.yaml"
    node = (
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {}, labels: {{zone: {}}}}}\n"
        "status: {{capacity: {{pods: '9'}}}}\n"
    )
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"
    scenario.write_text("---\n".join([node.format("n-a", "a"), node.format("n-b", "b"), pod]))
    assert main(["simulate", str(scenario), "--config", str(cfg), "-o", "json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    # JSON numbers (kept with their literal by the config decoder) arrive as plain floats: 10 x 100 x 0.5.
    assert result["node"] == "n-b" and result["scores"]["n-b"] - result["scores"]["n-a"] == 500


def test_config_check_and_plugin_names_see_import_paths(mod: str) -> None:
    ref = f"{mod}:PreferZone"
    text = textwrap.dedent(
        f"""
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        profiles:
        - schedulerName: default-scheduler
          plugins:
            score:
              enabled:
              - name: {ref}
                weight: 2
        """
    )
    assert check_config(text)["valid"] is True
    assert ref in plugin_names({"profiles": [{"plugins": {"score": {"enabled": [{"name": ref}]}}}]})
    assert is_import_path(ref) and not is_import_path("PreferZone") and not is_import_path("a b:C")


# ---------------------------------------------------------------- entry points


def test_entry_point_plugin_by_its_short_name(mod: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    eps = tmp_path / "eps"
    write_entry_points(eps, {"ZonePreference": f"{mod}:PreferZone"})
    monkeypatch.syspath_prepend(str(eps))
    reg = Registry()
    assert "ZonePreference" in reg and "NodeResourcesFit" in reg
    cfg = _config([{"name": "ZonePreference", "weight": 10}], [{"name": "ZonePreference", "args": {"zone": "b"}}])
    result = simulate([*_zones(), make_pod("p", cpu="100m")], cfg)
    assert placements(result) == {"default/p": "n-b"}
    assert set(result.results[0].attempt.plugin_scores) >= {"ZonePreference", "NodeResourcesFit"}
    # Registry(refs) is exactly what it is given.
    assert "ZonePreference" not in Registry({})


def test_entry_point_clashing_with_an_in_tree_name_is_refused(
    mod: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eps = tmp_path / "eps"
    write_entry_points(eps, {"NodeName": f"{mod}:OnlyLabeled"}, dist="clash")
    monkeypatch.syspath_prepend(str(eps))
    with pytest.raises(RegistryError, match=r'a plugin named "NodeName" already exists \(entry point "NodeName = '):
        Registry()["NodeName"]
    with pytest.raises(InputError) as err:
        simulate([*_zones(), make_pod("p")])
    assert 'initializing plugin "NodeName": a plugin named "NodeName" already exists' in str(err.value)


def test_broken_entry_point_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_entry_points(tmp_path, {"Broken": "no_such_module_xyz:Plugin"}, dist="broken")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InputError) as err:
        simulate([*_zones(), make_pod("p")], _config([{"name": "Broken"}]))
    msg = str(err.value)
    assert msg.startswith("<test>: Scenario: config: initializing profiles: creating profile for scheduler name ")
    assert (
        'initializing plugin "Broken": entry point "Broken = no_such_module_xyz:Plugin" (group kubesched.plugins)'
        in msg
    )
    assert "failed to load: ModuleNotFoundError: No module named 'no_such_module_xyz'" in msg


# ---------------------------------------------------------------- bad references


@pytest.mark.parametrize(
    ("ref", "error"),
    [
        (
            "no_such_pkg_xyz.plugins:Thing",
            "cannot import module \"no_such_pkg_xyz.plugins\": No module named 'no_such_pkg_xyz'",
        ),
        ("{mod}:Missing", 'module "{mod}" has no attribute "Missing"'),
        ("{mod}:NotAPlugin", "class {mod}.NotAPlugin is not a subclass of kubesched.plugin_api.Plugin"),
        ("{mod}:_boom", "function is not a subclass of kubesched.plugin_api.Plugin"),
        ("{mod}:Nothing", "class Nothing implements no extension point (derive from FilterPlugin, ScorePlugin, ...)"),
        ("{mod}:Incomplete", "class Incomplete extends FilterPlugin but does not define filter()"),
        (
            "{mod}:BadArgsType",
            "class BadArgsType: args_type must be a dataclass or a msgspec.Struct, got <class 'dict'>",
        ),
    ],
)
def test_bad_plugin_reference_is_one_line_naming_file_profile_and_plugin(
    mod: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], ref: str, error: str
) -> None:
    ref, error = ref.format(mod=mod), error.format(mod=mod)
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        f"- schedulerName: gang\n  plugins:\n    filter:\n      enabled:\n      - name: {ref}\n"
    )
    scenario = tmp_path / "s.yaml"
    scenario.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: '1'}}\n")
    assert main(["simulate", str(scenario), "--config", str(cfg)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"error: {cfg}: initializing profiles: creating profile for scheduler name gang: "
        f'loading plugin "{ref}": {error}\n'
    )


def test_kubesched_run_refuses_a_bad_plugin_before_connecting(
    mod: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
        f"- schedulerName: x\n  plugins:\n    filter:\n      enabled:\n      - name: {mod}:Incomplete\n"
    )
    # No kubeconfig exists: the profile is refused before any connection is tried.
    code = main(["run", "--config", str(cfg), "--kubeconfig", str(tmp_path / "none")])
    assert code == 2
    assert capsys.readouterr().err == (
        f"error: {cfg}: initializing profiles: creating profile for scheduler name x: "
        f'loading plugin "{mod}:Incomplete": class Incomplete extends FilterPlugin but does not define filter()\n'
    )


def test_events_to_register_raising_refuses_the_profile(mod: str) -> None:
    ref = f"{mod}:BadEvents"
    with pytest.raises(InputError) as err:
        simulate(_zones(), _config([{"name": ref}]))
    assert str(err.value) == (
        f'<test>: Scenario: config: plugin "{ref}": events_to_register raised RuntimeError: no events today'
    )


def test_unknown_plain_name_keeps_upstreams_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r'FilterPlugin "NoSuchPlugin" does not exist$'):
        simulate(_zones(), _config([], filter={"enabled": [{"name": "NoSuchPlugin"}]}))


# ---------------------------------------------------------------- bad args


@pytest.mark.parametrize(
    ("plugin", "args", "error"),
    [
        ("PreferZone", {"zone": "a", "bogus": 1}, 'pluginConfig[0].args: strict decoding error: unknown field "bogus"'),
        (
            "PreferZone",
            {"extra": [{"x": 1}, {"y": "2"}]},
            "pluginConfig[0].args.extra[1][...]: expected `int`, got `str`",
        ),
        ("PreferZone", {"zone": 3}, "pluginConfig[0].args.zone: expected `str`, got `int`"),
        ("PreferZone", {"bonus": 101}, "pluginConfig[0].args.bonus: expected `int` <= 100"),
        ("PreferZone", [1], "pluginConfig[0].args: must be a mapping of fields, got list"),
        ("OnlyLabeled", {"label": ""}, "pluginConfig[0].args: label: must not be empty"),
        ("OnlyLabeled", {"value": "x"}, "pluginConfig[0].args: object missing required field `label`"),
        ("OnlyLabeled", None, "args (no pluginConfig entry): object missing required field `label`"),
    ],
)
def test_bad_args_name_the_field(mod: str, plugin: str, args: Any, error: str) -> None:
    ref = f"{mod}:{plugin}"
    plugin_config = [] if args is None else [{"name": ref, "args": args}]
    with pytest.raises(InputError) as err:
        simulate(_zones(), _config([{"name": ref}], plugin_config))
    assert str(err.value) == (
        "<test>: Scenario: config: initializing profiles: creating profile for scheduler name default-scheduler: "
        f'initializing plugin "{ref}": {error}'
    )


def test_args_accept_api_version_and_kind_and_defaults(mod: str) -> None:
    module = __import__(mod)
    args = decode_args(module.ZoneArgs, {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "ZoneArgs"})
    assert args == module.ZoneArgs()
    assert decode_args(module.LabelArgs, {"label": "x"}) == module.LabelArgs("x", "yes")


# ---------------------------------------------------------------- a plugin that raises


@pytest.mark.parametrize(
    ("plugin", "point"),
    [
        ("BoomPreFilter", "PreFilter"),
        ("BoomFilter", "Filter"),
        ("BoomPreScore", "PreScore"),
        ("BoomScore", "Score"),
        ("BoomReserve", "Reserve"),
        ("BoomPermit", "Permit"),
        ("BoomPreBind", "PreBind"),
    ],
)
def test_raising_plugin_gives_the_pod_an_error_naming_it(mod: str, plugin: str, point: str) -> None:
    ref = f"{mod}:{plugin}"
    pods = [make_pod("before", cpu="100m"), make_pod("victim", cpu="100m", labels={"boom": "yes"})]
    pods.append(make_pod("after", cpu="100m"))
    result = simulate([*_zones(), *pods], _config([{"name": ref}]))
    by_key = {o.key: o for o in result.results}
    assert by_key["default/before"].status == by_key["default/after"].status == "Scheduled"
    victim = by_key["default/victim"]
    assert victim.status == "Unschedulable" and victim.node is None
    assert victim.message == f'plugin "{ref}" raised at {point}: ZeroDivisionError: division by zero'
    assert victim.attempt is not None and victim.attempt.reason == "SchedulerError"


def test_raising_pre_enqueue_plugin_holds_only_that_pod(mod: str, caplog: pytest.LogCaptureFixture) -> None:
    ref = f"{mod}:BoomPreEnqueue"
    pods = [make_pod("victim", cpu="100m", labels={"boom": "yes"}), make_pod("after", cpu="100m")]
    result = simulate([*_zones(), *pods], _config([{"name": ref}]))
    assert {o.key: o.status for o in result.results} == {"default/victim": "Pending", "default/after": "Scheduled"}
    assert f"PreEnqueue plugin '{ref}' raised for pod default/victim: ZeroDivisionError" in caplog.text


def test_raising_plugin_contained_end_to_end_with_kubesched_simulate(mod: str, tmp_path: Path) -> None:
    ref = f"{mod}:BoomFilter"
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        textwrap.dedent(
            f"""
            kind: Scenario
            config:
              apiVersion: kubescheduler.config.k8s.io/v1
              kind: KubeSchedulerConfiguration
              profiles:
              - schedulerName: default-scheduler
                plugins:
                  multiPoint:
                    enabled:
                    - name: {ref}
            ---
            apiVersion: v1
            kind: Node
            metadata: {{name: n1}}
            status: {{capacity: {{cpu: "2", memory: 4Gi, pods: "10"}}}}
            ---
            apiVersion: v1
            kind: Pod
            metadata: {{name: victim, labels: {{boom: "yes"}}}}
            spec: {{containers: [{{name: c, image: x}}]}}
            ---
            apiVersion: v1
            kind: Pod
            metadata: {{name: fine}}
            spec: {{containers: [{{name: c, image: x}}]}}
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(SRC)])}
    proc = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", "simulate", str(scenario), "-o", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    results = {r["pod"]: r for r in json.loads(proc.stdout)["results"]}
    assert results["default/fine"]["status"] == "Scheduled" and results["default/fine"]["node"] == "n1"
    assert results["default/victim"]["status"] == "Unschedulable"
    assert results["default/victim"]["message"] == (
        f'plugin "{ref}" raised at Filter: ZeroDivisionError: division by zero'
    )
