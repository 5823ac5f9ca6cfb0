"""build_extenders: upstream's buildExtenders (order, ignoredByScheduler, construction errors)."""

from __future__ import annotations

import pytest
from extender_helpers import extender_config

from kubesched.config import default_configuration
from kubesched.config.types import ExtenderManagedResource, ExtenderTLSConfig, NodeResourcesFitArgs
from kubesched.extender.build import build_extenders
from kubesched.framework.profile import FrameworkError


def test_no_extenders():
    assert build_extenders(default_configuration()) == []


def test_ignorable_extenders_go_last_in_their_order():
    cfg = default_configuration()
    cfg.extenders = [
        extender_config("http://a", ignorable=True),
        extender_config("http://b"),
        extender_config("http://c", ignorable=True),
        extender_config("http://d"),
    ]
    assert [e.name() for e in build_extenders(cfg)] == ["http://b", "http://d", "http://a", "http://c"]


def test_resources_ignored_by_scheduler_become_fit_ignored_resources():
    cfg = default_configuration()
    fit = cfg.profiles[0].args_for("NodeResourcesFit")
    assert isinstance(fit, NodeResourcesFitArgs)
    fit.ignored_resources = ["example.com/old"]
    a = extender_config("http://a")
    a.managed_resources = [
        ExtenderManagedResource("example.com/gpu", ignored_by_scheduler=True),
        ExtenderManagedResource("example.com/fpga"),
    ]
    b = extender_config("http://b")
    b.managed_resources = [ExtenderManagedResource("example.com/nic", ignored_by_scheduler=True)]
    cfg.extenders = [a, b]
    build_extenders(cfg)
    assert fit.ignored_resources == ["example.com/gpu", "example.com/nic"]


def test_ignored_resources_need_fit_args_in_every_profile():
    cfg = default_configuration()
    cfg.profiles[0].plugin_config = [pc for pc in cfg.profiles[0].plugin_config if pc.name != "NodeResourcesFit"]
    ext = extender_config("http://a")
    ext.managed_resources = [ExtenderManagedResource("example.com/gpu", ignored_by_scheduler=True)]
    cfg.extenders = [ext]
    with pytest.raises(FrameworkError, match="can't find NodeResourcesFitArgs in plugin config"):
        build_extenders(cfg)


def test_insecure_with_a_ca_is_refused():
    cfg = default_configuration()
    ext = extender_config("https://a")
    ext.tls_config = ExtenderTLSConfig(insecure=True, ca_data="-----BEGIN CERTIFICATE-----")
    cfg.extenders = [ext]
    with pytest.raises(FrameworkError, match="specifying a root certificates file with the insecure flag"):
        build_extenders(cfg)
