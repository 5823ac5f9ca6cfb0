"""Golden KubeSchedulerConfiguration cases (copied from the shared conformance suite into cases/)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kubesched.config import (
    ConfigError,
    encode_defaulted,
    load_config,
    load_config_file,
    validate_node_resources_fit_args,
)
from kubesched.config.types import NodeResourcesFitArgs
from kubesched.gocompat.field import aggregate_message

CASES_DIR = Path(__file__).parent / "cases"
CASES = sorted(p.name[: -len(".yaml")] for p in CASES_DIR.glob("*.yaml"))
FIT_PREFIX = 'initializing plugin "NodeResourcesFit": '


def _expected(name: str) -> dict:
    return json.loads((CASES_DIR / f"{name}.expected.json").read_text())


def _text(name: str) -> str:
    return (CASES_DIR / f"{name}.yaml").read_text()


def test_cases_present() -> None:
    assert len(CASES) >= 35
    for name in CASES:
        assert (CASES_DIR / f"{name}.expected.json").exists(), name


@pytest.mark.parametrize("name", [n for n in CASES if _expected(n)["stage"] != "framework"])
def test_decode_validate_defaulted(name: str) -> None:
    exp = _expected(name)
    try:
        cfg = load_config(_text(name), name)
    except ConfigError as e:
        assert not exp["valid"], f"unexpected {e.stage} error: {e.message}"
        assert e.stage == exp["stage"]
        assert Counter(e.errors) == Counter(exp["errors"])
        assert e.message == exp["message"]
        assert e.source == name
        assert e.display == f"{name}: {exp['message']}"
        return
    assert exp["valid"], f"accepted, but upstream fails at {exp['stage']}: {exp['message']}"
    assert exp["stage"] == "ok"
    assert encode_defaulted(cfg) == exp["defaulted"]


@pytest.mark.parametrize("name", [n for n in CASES if _expected(n)["stage"] == "framework"])
def test_framework_cases_pass_config_stages(name: str) -> None:
    """Upstream rejects these only when building the framework; the config loader must accept them."""
    cfg = load_config(_text(name), name)
    exp = _expected(name)
    (message,) = exp["errors"]
    if FIT_PREFIX not in message:
        return
    want = message.split(FIT_PREFIX, 1)[1]
    fit_args = [pc.args for p in cfg.profiles for pc in p.plugin_config if pc.name == "NodeResourcesFit"]
    assert len(fit_args) == 1 and isinstance(fit_args[0], NodeResourcesFitArgs)
    errors = validate_node_resources_fit_args(fit_args[0])
    assert errors, "expected NodeResourcesFit args errors"
    assert aggregate_message(errors) == want
    if len(errors) == 1:
        assert errors == [want]


def test_framework_fit_cases_exist() -> None:
    fit = [n for n in CASES if FIT_PREFIX in (_expected(n)["message"] or "")]
    assert len(fit) == 4  # three args errors plus the RequestedToCapacityRatio shape case


def test_load_config_file_matches_text() -> None:
    path = CASES_DIR / "valid-two-profiles.yaml"
    assert encode_defaulted(load_config_file(path)) == _expected("valid-two-profiles")["defaulted"]
    with pytest.raises(ConfigError) as info:
        load_config_file(CASES_DIR / "misspelled-field.yaml")
    assert info.value.source == str(CASES_DIR / "misspelled-field.yaml")
    assert info.value.stage == "decode"
