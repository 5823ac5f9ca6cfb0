"""Validation of PV, PVC, storage.k8s.io and resource.k8s.io kinds against kube-apiserver v1.34.1's words.

The corpus (corpus/storage/NAME.yaml) holds one defect per file; expected.json holds the first
error the real API server reported for it (written with tools/apiserver_verdict.py). Every other
object of the corpus, and every such object of the conformance cases and examples, must pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.decode import NAMESPACED, decode
from kubesched.api.quantity import parse_resource_quantity
from kubesched.api.validation import validate
from kubesched.api.validation.resource_cel import cel_compile_error
from kubesched.gocompat.field import to_aggregate

ROOT = Path(__file__).resolve().parents[3]
CORPUS = Path(__file__).parent / "corpus" / "storage"
EXPECTED: dict[str, dict[str, str]] = json.loads((CORPUS / "expected.json").read_text())

KINDS = frozenset(
    {
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "CSIStorageCapacity",
        "VolumeAttachment",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "ResourceSlice",
        "DeviceClass",
    }
)


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict) and d.get("kind") != "Scenario"]


def _object_name(doc: dict[str, Any]) -> str:
    kind, meta = doc["kind"], doc.get("metadata") or {}
    if kind in NAMESPACED:
        return f"{kind} {meta.get('namespace') or 'default'}/{meta.get('name', '')}"
    return f"{kind} {meta.get('name', '')}"


def _errors(doc: dict[str, Any]) -> list[str]:
    return to_aggregate(validate(doc["kind"], decode(doc["kind"], doc)))


def test_every_corpus_file_has_an_expectation() -> None:
    assert sorted(p.name for p in CORPUS.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_first_error_is_the_api_servers(name: str) -> None:
    want = EXPECTED[name]
    assert want["error"] in want["apiserver"]
    docs = [d for d in _documents(CORPUS / name) if _object_name(d) == want["object"]]
    assert len(docs) == 1, want["object"]
    doc = docs[0]
    errs = validate(doc["kind"], decode(doc["kind"], doc))
    assert errs, f"{want['object']} passed validation"
    assert str(errs[0]) == want["error"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_other_objects_pass(name: str) -> None:
    for doc in _documents(CORPUS / name):
        if _object_name(doc) != EXPECTED[name]["object"]:
            assert _errors(doc) == [], _object_name(doc)


def _manifests() -> list[Path]:
    return sorted([*(ROOT / "tests" / "conformance" / "cases").rglob("*.yaml"), *(ROOT / "examples").rglob("*.yaml")])


def test_conformance_cases_and_examples_pass() -> None:
    """We must not refuse what the API server accepts: every storage and DRA object there passes."""
    checked = 0
    for path in _manifests():
        for doc in _documents(path):
            if doc.get("kind") in KINDS:
                checked += 1
                assert _errors(doc) == [], f"{path.relative_to(ROOT)}: {_object_name(doc)}"
    assert checked > 50


@pytest.mark.parametrize(
    ("q", "value"),
    [("-1Gi", -(1 << 30)), ("-500m", -1), ("-1.5", -2), ("-2", -2), ("1500m", 2)],
)
def test_quantity_value_rounds_away_from_zero(q: str, value: int) -> None:
    assert parse_resource_quantity(q).value() == value


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ('device.driver == "a"', ""),
        (
            "device.foo.bar == 1",
            "compilation failed: ERROR: <input>:1:7: undefined field 'foo'\n | device.foo.bar == 1\n | ......^",
        ),
        (
            "'a'.startsWith(1)",
            "compilation failed: ERROR: <input>:1:15: found no matching overload for 'startsWith' applied to "
            "'string.(int)'\n | 'a'.startsWith(1)\n | ..............^",
        ),
        (
            "device.driver == 1",
            "compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_' applied to "
            "'(string, int)'\n | device.driver == 1\n | ..............^",
        ),
    ],
)
def test_cel_errors_in_cel_go_words(expression: str, error: str) -> None:
    """As kube-apiserver v1.34.1 answered for these selectors."""
    assert cel_compile_error(expression) == error
