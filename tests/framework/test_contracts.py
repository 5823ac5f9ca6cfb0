"""The plugin contract: the Handle and ClusterClient Protocols, and what implements them.

A plugin types against framework.handle.Handle and calls handle.client through
framework.cluster_client.ClusterClient; it must then work with the scheduler's
handles, testing.Env's and configcheck's, over the embedded cluster and over a
real API server alike. The typed assignments below say so to a type checker;
the tests check the same at run time, signature by signature.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kubesched
from kubesched.cluster.client import EmbeddedClient
from kubesched.cluster.store import ClusterStore
from kubesched.framework.cluster_client import ClusterClient
from kubesched.framework.handle import Handle
from kubesched.framework.profile_handle import ProfileHandle, new_handle
from kubesched.live.client import LiveClient
from kubesched.scenario import parse_scenario
from kubesched.simulate.runner import Simulation
from kubesched.testing import Env

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(kubesched.__file__).parent

# What a type checker verifies (mypy, pyright): each implementation is assignable to its Protocol.
EMBEDDED: ClusterClient = EmbeddedClient(ClusterStore())
OFFLINE: Handle = new_handle("default-scheduler", EMBEDDED)


def _live_is_a_cluster_client(client: LiveClient) -> ClusterClient:
    return client


def _env_handle_is_a_handle(env: Env) -> Handle:
    return env.handle


def protocol_members(proto: type) -> tuple[dict[str, Callable[..., Any]], set[str]]:
    """The Protocol's methods (name -> function) and its data members (annotated names)."""
    methods: dict[str, Callable[..., Any]] = {
        name: fn
        for name, fn in vars(proto).items()
        if inspect.isfunction(fn) and not (name.startswith("__") and name.endswith("__"))
    }
    return methods, set(vars(proto).get("__annotations__", {}))


def _accepts_anything(annotation: object) -> bool:
    return annotation in ("Any", "object")


def signature_mismatches(impl: Callable[..., Any], spec: Callable[..., Any]) -> list[str]:
    """Why `impl` cannot stand in for `spec` (empty: it can).

    Each parameter of the spec at the same place, with the same name, kind and default, and a type
    the implementation accepts; extra parameters of the implementation optional; the result what the
    spec promises (anything, when the spec says object or Any).
    """
    want = list(inspect.signature(spec).parameters.values())[1:]
    have = list(inspect.signature(impl).parameters.values())[1:]
    problems = []
    for i, p in enumerate(want):
        if i >= len(have):
            problems.append(f"missing parameter {p.name!r}")
            continue
        q = have[i]
        if (q.name, q.kind) != (p.name, p.kind):
            problems.append(f"parameter {i + 1} is {q.name!r} ({q.kind}), the contract has {p.name!r} ({p.kind})")
        if p.default is not inspect.Parameter.empty and q.default != p.default:
            problems.append(f"{p.name!r} defaults to {q.default!r}, the contract to {p.default!r}")
        if q.annotation != p.annotation and not _accepts_anything(q.annotation):
            problems.append(f"{p.name!r} takes {q.annotation}, the contract passes {p.annotation}")
    for q in have[len(want) :]:
        if q.default is inspect.Parameter.empty and q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD):
            problems.append(f"extra required parameter {q.name!r}")
    want_ret = inspect.signature(spec).return_annotation
    have_ret = inspect.signature(impl).return_annotation
    if not _accepts_anything(want_ret) and have_ret != want_ret:
        problems.append(f"returns {have_ret}, the contract {want_ret}")
    return problems


def conformance_problems(obj: object, proto: type) -> dict[str, list[str]]:
    methods, data = protocol_members(proto)
    problems: dict[str, list[str]] = {}
    for name in sorted(data):
        if not hasattr(obj, name):
            problems[name] = ["missing attribute"]
    for name, spec in methods.items():
        impl = getattr(type(obj) if not isinstance(obj, type) else obj, name, None)
        if not callable(impl):
            problems[name] = ["missing method"]
            continue
        found = signature_mismatches(impl, spec)
        if found:
            problems[name] = found
    return problems


@pytest.mark.parametrize("client", [EmbeddedClient, LiveClient], ids=["embedded", "live"])
def test_both_api_clients_satisfy_the_cluster_client_contract(client: type) -> None:
    assert conformance_problems(client, ClusterClient) == {}


def test_the_contract_checker_sees_a_client_that_does_not_conform() -> None:
    """A guard for the test above: a renamed parameter, a missing default, a missing method are all seen."""

    class Sloppy:
        def get_pod(self, ns: str, name: str) -> None:
            return None

        def delete_pod(self, namespace: str, name: str, grace_seconds: float | None) -> None:
            return None

    problems = conformance_problems(Sloppy, ClusterClient)
    assert "parameter 1 is 'ns'" in problems["get_pod"][0]
    assert any("returns None" in p for p in problems["get_pod"])
    assert problems["delete_pod"] == ["'grace_seconds' defaults to <class 'inspect._empty'>, the contract to None"]
    assert problems["bind"] == ["missing method"]


def _handles() -> dict[str, ProfileHandle]:
    scenario = parse_scenario("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n", "<test>")
    scheduler = Simulation(scenario).scheduler
    return {
        "scheduler": scheduler.handles["default-scheduler"],
        "testing.Env": Env([]).handle,
        "new_handle defaults": new_handle("p", EmbeddedClient(ClusterStore())),
    }


@pytest.mark.parametrize("where", ["scheduler", "testing.Env", "new_handle defaults"])
def test_every_handle_satisfies_the_handle_contract(where: str) -> None:
    handle = _handles()[where]
    assert conformance_problems(handle, Handle) == {}
    assert conformance_problems(handle.client, ClusterClient) == {}


def _handle_members_used(path: Path) -> set[str]:
    """The X of every `handle.X` / `<...>.handle.X` in a module."""
    used = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not isinstance(node, ast.Attribute):
            continue
        v = node.value
        if (isinstance(v, ast.Name) and v.id == "handle") or (isinstance(v, ast.Attribute) and v.attr == "handle"):
            used.add(node.attr)
    return used


def test_the_handle_contract_declares_every_member_plugins_use() -> None:
    """In-tree plugins, preemption, the framework runtime, explain and the example plugins reach only these."""
    roots = [SRC / "plugins", SRC / "preemption", SRC / "framework", SRC / "explain", ROOT / "examples" / "plugins"]
    used: dict[str, set[str]] = {}
    for root in roots:
        for path in root.rglob("*.py"):
            for member in _handle_members_used(path):
                used.setdefault(member, set()).add(str(path.relative_to(ROOT)))
    methods, data = protocol_members(Handle)
    undeclared = {m: sorted(paths) for m, paths in used.items() if m not in methods and m not in data}
    assert undeclared == {}
    # The guard sees what it should: members of several kinds, from several places.
    assert {"lister", "client", "framework", "run_after_cycles", "metrics_observe_victims"} <= set(used)
