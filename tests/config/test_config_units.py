"""Focused tests of the config package: defaults, plugin merging, decoding errors, Go formatting."""

from __future__ import annotations

import pytest

from kubesched.config import (
    KNOWN_PLUGINS,
    ConfigError,
    default_configuration,
    encode_defaulted,
    load_config,
    load_config_mapping,
    validate_node_resources_fit_args,
)
from kubesched.config.defaults import merge_plugin_set
from kubesched.config.types import (
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeResourcesFitArgs,
    PluginRef,
    PodTopologySpreadArgs,
    ResourceSpec,
    ScoringStrategy,
    VolumeBindingArgs,
)
from kubesched.gocompat.duration import DurationError, format_duration, parse_duration

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
DEFAULT_ORDER = [
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 0),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
]


def _multi_point(cfg, i: int = 0) -> list[tuple[str, int]]:
    return [(p.name, p.weight) for p in cfg.profiles[i].plugins.multi_point.enabled]


def _decode_error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(text, "t.yaml")
    assert info.value.stage == "decode"
    return info.value


# ---------------------------------------------------------------- defaults


def test_defaults_of_header_only_file() -> None:
    cfg = load_config(HEADER)
    assert cfg.parallelism == 16
    assert cfg.percentage_of_nodes_to_score == 0
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    assert cfg.enable_profiling and cfg.enable_contention_profiling
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (True, 15.0, 10.0, 2.0)
    assert (le.resource_lock, le.resource_name, le.resource_namespace) == ("leases", "kube-scheduler", "kube-system")
    cc = cfg.client_connection
    assert (cc.qps, cc.burst, cc.content_type) == (50.0, 100, "application/vnd.kubernetes.protobuf")
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]
    assert _multi_point(cfg) == DEFAULT_ORDER
    prof = cfg.profiles[0]
    assert [pc.name for pc in prof.plugin_config] == [
        "DefaultPreemption",
        "DynamicResources",
        "InterPodAffinity",
        "NodeAffinity",
        "NodeResourcesBalancedAllocation",
        "NodeResourcesFit",
        "PodTopologySpread",
        "VolumeBinding",
    ]
    assert prof.args_for("DefaultPreemption") == DefaultPreemptionArgs(10, 100)
    assert prof.args_for("InterPodAffinity") == InterPodAffinityArgs(1, False)
    assert prof.args_for("DynamicResources") == DynamicResourcesArgs(10.0)
    assert prof.args_for("PodTopologySpread") == PodTopologySpreadArgs([], "System")
    assert prof.args_for("VolumeBinding") == VolumeBindingArgs(600, [])
    fit = prof.args_for("NodeResourcesFit")
    assert fit.scoring_strategy == ScoringStrategy(
        "LeastAllocated", [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
    )
    for point in ("pre_enqueue", "queue_sort", "filter", "score", "bind"):
        ps = prof.plugins.extension_point(point)
        assert ps.enabled == [] and ps.disabled == []


def test_default_configuration_equals_minimal_file() -> None:
    assert encode_defaulted(default_configuration()) == encode_defaulted(load_config(HEADER))
    assert encode_defaulted(load_config(HEADER + "profiles: []\n")) == encode_defaulted(default_configuration())


def test_zero_durations_and_client_values_take_defaults() -> None:
    cfg = load_config(HEADER + "leaderElection:\n  leaseDuration: 0s\n  retryPeriod: 0s\nclientConnection:\n  qps: 0\n")
    assert (cfg.leader_election.lease_duration, cfg.leader_election.retry_period) == (15.0, 2.0)
    assert cfg.client_connection.qps == 50.0


def test_contention_profiling_follows_profiling() -> None:
    cfg = load_config(HEADER + "enableProfiling: false\n")
    assert (cfg.enable_profiling, cfg.enable_contention_profiling) == (False, False)


def test_scheduler_name_defaulted_only_for_a_single_profile() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(HEADER + "profiles:\n- {}\n- schedulerName: b\n")
    assert info.value.stage == "validate"
    assert info.value.errors == ["profiles[0].schedulerName: Required value"]


def test_user_args_completed_and_kept_first() -> None:
    cfg = load_config(
        HEADER
        + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
        + "        type: MostAllocated\n        resources:\n        - name: cpu\n"
        + "        - name: gpu\n          weight: 4\n"
    )
    prof = cfg.profiles[0]
    assert prof.plugin_config[0].name == "NodeResourcesFit"
    assert [pc.name for pc in prof.plugin_config].count("NodeResourcesFit") == 1
    assert prof.plugin_config[0].args.scoring_strategy == ScoringStrategy(
        "MostAllocated", [ResourceSpec("cpu", 1), ResourceSpec("gpu", 4)]
    )
    assert [pc.name for pc in prof.plugin_config[1:]] == sorted(pc.name for pc in prof.plugin_config[1:])


# ---------------------------------------------------------------- mergePluginSet


def _set(enabled=(), disabled=()):
    return {
        "enabled": [{"name": n, "weight": w} for n, w in enabled],
        "disabled": [{"name": n} for n in disabled],
    }


def test_merge_disable_all_keeps_only_custom() -> None:
    merged = merge_plugin_set(_set([("A", None), ("B", 2)]), _set([("C", None), ("A", 5)], ["*"]))
    assert merged == {
        "enabled": [{"name": "C", "weight": None}, {"name": "A", "weight": 5}],
        "disabled": [{"name": "*", "weight": None}],
    }


def test_merge_override_keeps_position_and_appends_custom() -> None:
    merged = merge_plugin_set(_set([("A", 1), ("B", 2), ("C", 3)]), _set([("X", 7), ("B", 9)]))
    assert merged["enabled"] == [
        {"name": "A", "weight": 1},
        {"name": "B", "weight": 9},
        {"name": "C", "weight": 3},
        {"name": "X", "weight": 7},
    ]
    assert "disabled" not in merged


def test_merge_disabled_then_reenabled_moves_to_end() -> None:
    merged = merge_plugin_set(_set([("A", 1), ("B", 2)]), _set([("A", 4)], ["A"]))
    assert [p["name"] for p in merged["enabled"]] == ["B", "A"]


def test_multipoint_override_through_config() -> None:
    cfg = load_config(
        HEADER
        + "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: ImageLocality\n        weight: 10\n"
        + "      - name: TaintToleration\n      - name: MyPlugin\n        weight: 4\n      disabled:\n"
        + "      - name: NodePorts\n"
    )
    got = _multi_point(cfg)
    expected = [(n, w) for n, w in DEFAULT_ORDER if n != "NodePorts"]
    expected = [(n, 10 if n == "ImageLocality" else 0 if n == "TaintToleration" else w) for n, w in expected]
    assert got == [*expected, ("MyPlugin", 4)]
    assert cfg.profiles[0].plugins.multi_point.disabled == [PluginRef("NodePorts", 0)]


def test_disabled_score_plugin_keeps_its_default_args() -> None:
    cfg = load_config(
        HEADER + "profiles:\n- plugins:\n    score:\n      disabled:\n      - name: NodeResourcesBalancedAllocation\n"
    )
    assert cfg.profiles[0].args_for("NodeResourcesBalancedAllocation") is not None


# ---------------------------------------------------------------- decoding errors


@pytest.mark.parametrize(
    "text",
    ["profiles:\n  - a: b\n c: d\n", "parallelism: [1, 2\n", "a: b: c\n", "x: *nope\n", "\tparallelism: 1\n"],
)
def test_malformed_yaml_is_a_config_error(text: str) -> None:
    err = _decode_error(HEADER + text)
    assert err.message.startswith("yaml: ")
    assert err.errors == [err.message]


def test_malformed_yaml_line_numbers_follow_yaml_v2() -> None:
    assert _decode_error(HEADER + "profiles:\n  - a: b\n c: d\n").message == "yaml: line 4: did not find expected key"


def test_unknown_fields_are_reported_with_paths_in_sorted_order() -> None:
    err = _decode_error(
        HEADER
        + "zeta: 1\nleaderElection:\n  leaderElec: true\nprofiles:\n- schedulerName: x\n  plugins:\n"
        + "    score:\n      enabled:\n      - name: A\n        wieght: 1\n"
    )
    assert err.message == (
        'strict decoding error: unknown field "leaderElection.leaderElec", '
        'unknown field "profiles[0].plugins.score.enabled[0].wieght", unknown field "zeta"'
    )


def test_duplicate_keys_come_before_unknown_fields() -> None:
    err = _decode_error(HEADER + "bogus: 1\nparallelism: 1\nparallelism: 2\n")
    assert err.message == (
        'strict decoding error: yaml: unmarshal errors:\n  line 5: key "parallelism" already set in map, '
        'unknown field "bogus"'
    )


def test_type_errors_are_fatal_and_alone() -> None:
    err = _decode_error(HEADER + "bogus: 1\nparallelism: abc\n")
    assert (
        err.message
        == "json: cannot unmarshal string into Go struct field KubeSchedulerConfiguration.parallelism of type int32"
    )
    err = _decode_error(HEADER + "profiles:\n- schedulerName: 5\n")
    assert err.message == (
        "json: cannot unmarshal number into Go struct field KubeSchedulerProfile.profiles.schedulerName of type string"
    )
    err = _decode_error(HEADER + "leaderElection:\n  leaseDuration: abc\n")
    assert err.message == 'time: invalid duration "abc"'


def test_args_errors_are_nested() -> None:
    err = _decode_error(
        HEADER + "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n"
        "        tipe: x\n"
    )
    assert err.message == (
        "strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: decoding args for "
        'plugin NodeResourcesFit: strict decoding error: unknown field "scoringStrategy.tipe"'
    )
    err = _decode_error(
        HEADER + "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: x\n"
    )
    assert err.message == (
        "decoding .profiles[0].pluginConfig[0]: decoding args for plugin InterPodAffinity: json: cannot unmarshal "
        "string into Go struct field InterPodAffinityArgs.hardPodAffinityWeight of type int32"
    )


def test_missing_and_unregistered_kinds() -> None:
    assert _decode_error("apiVersion: kubescheduler.config.k8s.io/v1\n").message == (
        "Object 'Kind' is missing in 'apiVersion: kubescheduler.config.k8s.io/v1\n'"
    )
    assert _decode_error("kind: KubeSchedulerConfiguration\n").message == (
        "Object 'apiVersion' is missing in 'kind: KubeSchedulerConfiguration\n'"
    )
    assert _decode_error("apiVersion: kubescheduler.config.k8s.io/v1\nkind: Foo\n").message.startswith(
        'no kind "Foo" is registered for version "kubescheduler.config.k8s.io/v1" in scheme'
    )


def test_yaml_v2_scalars() -> None:
    cfg = load_config(HEADER + "enableProfiling: no\nparallelism: 0x10\npodMaxBackoffSeconds: 2e1\n")
    assert (cfg.enable_profiling, cfg.parallelism, cfg.pod_max_backoff_seconds) == (False, 16, 20)


def test_unknown_plugin_args_kept_raw() -> None:
    cfg = load_config(HEADER + "profiles:\n- pluginConfig:\n  - name: Mine\n    args:\n      foo: [1, {b: c}]\n")
    assert cfg.profiles[0].args_for("Mine") == {"foo": [1, {"b": "c"}]}


def test_json_input_and_duplicate_fields() -> None:
    err = _decode_error(
        '{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",'
        ' "parallelism": 2, "parallelism": 3}'
    )
    assert err.message == 'strict decoding error: duplicate field "parallelism"'


def test_load_config_mapping() -> None:
    cfg = load_config_mapping(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 100,
            "profiles": [{"schedulerName": "default-scheduler", "plugins": {"score": {"disabled": [{"name": "*"}]}}}],
        },
        "scenario.yaml",
    )
    assert cfg.percentage_of_nodes_to_score == 100
    assert cfg.profiles[0].plugins.score.disabled == [PluginRef("*", 0)]
    with pytest.raises(ConfigError) as info:
        load_config_mapping(
            {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "parallelizm": 3},
            "scenario.yaml",
        )
    assert info.value.message == 'strict decoding error: unknown field "parallelizm"'
    assert info.value.display == 'scenario.yaml: strict decoding error: unknown field "parallelizm"'


# ---------------------------------------------------------------- validation details


def _validate_errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(HEADER + text)
    assert info.value.stage == "validate"
    return info.value.errors


def test_validation_messages() -> None:
    assert _validate_errors("parallelism: 0\n") == [
        "parallelism: Invalid value: 0: should be an integer value greater than zero"
    ]
    assert _validate_errors(
        "profiles:\n- pluginConfig:\n  - name: DynamicResources\n    args:\n      filterTimeout: -1s\n"
    ) == ['profiles[0].pluginConfig[0].args.filterTimeout: Invalid value: "-1s": must be zero or positive']
    assert _validate_errors(
        "profiles:\n- pluginConfig:\n  - name: DefaultPreemption\n    args:\n"
        "      minCandidateNodesPercentage: 0\n      minCandidateNodesAbsolute: 0\n"
    ) == [
        "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 0: "
        "cannot be zero at the same time as minCandidateNodesAbsolute",
        "profiles[0].pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: 0: "
        "cannot be zero at the same time as minCandidateNodesPercentage",
    ]
    assert _validate_errors(
        "profiles:\n- pluginConfig:\n  - name: VolumeBinding\n    args:\n"
        "      shape:\n      - {utilization: 0, score: 10}\n"
    ) == [
        'profiles[0].pluginConfig[0].args.shape: Invalid value: [{"Utilization":0,"Score":10}]: '
        "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring"
    ]


def test_node_affinity_args_validation() -> None:
    errors = _validate_errors(
        "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n      addedAffinity:\n"
        "        requiredDuringSchedulingIgnoredDuringExecution:\n          nodeSelectorTerms:\n"
        "          - matchExpressions:\n            - key: zone\n              operator: Foo\n"
        "            - key: zone\n              operator: Gt\n              values: ['x']\n"
    )
    base = "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    assert errors == [
        f'{base}.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Foo": supported values: '
        '"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
        f'{base}.nodeSelectorTerms[0].matchExpressions[1].values[0]: Invalid value: "x": '
        "for 'Gt', 'Lt' operators, the value must be an integer",
    ]


def test_node_resources_fit_args_errors() -> None:
    args = NodeResourcesFitArgs(
        ignored_resources=["ok", "-bad-"],
        scoring_strategy=ScoringStrategy("MostAllocated", [ResourceSpec("cpu", 0), ResourceSpec("memory", 100)]),
    )
    errors = validate_node_resources_fit_args(args)
    assert len(errors) == 2
    assert errors[0].startswith('ignoredResources[1]: Invalid value: "-bad-": name part must consist of')
    assert (
        errors[1]
        == "scoringStrategy.resources[0].weight: Invalid value: 0: resource weight of cpu not in valid range (0, 100]"
    )
    assert (
        validate_node_resources_fit_args(
            NodeResourcesFitArgs(scoring_strategy=ScoringStrategy("LeastAllocated", [ResourceSpec("cpu", 1)]))
        )
        == []
    )


def test_known_plugins() -> None:
    assert len(KNOWN_PLUGINS) == len(set(KNOWN_PLUGINS)) == 19
    assert {n for n, _ in DEFAULT_ORDER} <= set(KNOWN_PLUGINS)
    assert "EBSLimits" not in KNOWN_PLUGINS


# ---------------------------------------------------------------- Go durations


@pytest.mark.parametrize(
    ("text", "ns", "formatted"),
    [
        ("15s", 15_000_000_000, "15s"),
        ("1m", 60_000_000_000, "1m0s"),
        ("1h30m", 5_400_000_000_000, "1h30m0s"),
        ("1.5s", 1_500_000_000, "1.5s"),
        ("300ms", 300_000_000, "300ms"),
        ("-1.5h", -5_400_000_000_000, "-1h30m0s"),
        ("2h45m0.5s", 9_900_500_000_000, "2h45m0.5s"),
        ("0", 0, "0s"),
        ("1500ns", 1500, "1.5µs"),
        ("10us", 10_000, "10µs"),
    ],
)
def test_duration_parse_and_format(text: str, ns: int, formatted: str) -> None:
    assert parse_duration(text) == ns
    assert format_duration(ns) == formatted


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("abc", 'time: invalid duration "abc"'),
        ("5", 'time: missing unit in duration "5"'),
        ("5x", 'time: unknown unit "x" in duration "5x"'),
        (".s", 'time: invalid duration ".s"'),
    ],
)
def test_duration_errors(text: str, message: str) -> None:
    with pytest.raises(DurationError) as info:
        parse_duration(text)
    assert str(info.value) == message
