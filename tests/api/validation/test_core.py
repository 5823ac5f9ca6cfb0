"""Validation of Node, Namespace, Service, ReplicationController, ReplicaSet, StatefulSet,
PriorityClass and PodDisruptionBudget against what a real kube-apiserver v1.34.1 said
(corpus/core/expected.json, written by tools/apiserver_verdict.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.api.decode import NAMESPACED, DecodeError, decode
from kubesched.api.intake import TOLERATED
from kubesched.api.scheduling import PriorityClass
from kubesched.api.validation import validate, validated_kinds
from kubesched.api.validation.apps import statefulset_template_spec
from kubesched.api.validation.scheduling import check_global_default
from kubesched.gocompat.names import is_dns1123_label

CORPUS = Path(__file__).parent / "corpus" / "core"
EXPECTED: dict[str, dict[str, str]] = json.loads((CORPUS / "expected.json").read_text())
ROOT = Path(__file__).parents[3]


def _documents(path: Path) -> list[dict[str, Any]]:
    parts = re.split(r"(?m)^---[ \t]*$", path.read_text())
    return [d for d in (yaml.safe_load(p) for p in parts if p.strip()) if isinstance(d, dict)]


def _object_name(raw: dict[str, Any], namespaced: bool) -> str:
    meta = raw.get("metadata") or {}
    if namespaced:
        return f"{raw['kind']} {meta.get('namespace') or 'default'}/{meta.get('name')}"
    return f"{raw['kind']} {meta.get('name')}"


def test_every_corpus_file_has_an_expectation() -> None:
    assert sorted(p.name for p in CORPUS.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_defect(name: str) -> None:
    """The last document is refused with the API server's first error (its own words)."""
    want = EXPECTED[name]
    assert want["error"] in want["apiserver"]
    docs = _documents(CORPUS / name)
    raw = docs[-1]
    kind = raw["kind"]
    assert _object_name(raw, kind in NAMESPACED) == want["object"]
    obj = decode(kind, raw)
    errs = validate(kind, obj)
    if errs:
        assert str(errs[0]) == want["error"]
        return
    # Not a validation error: the Priority admission plugin's refusal of a second default class.
    assert kind == "PriorityClass"
    earlier = [decode("PriorityClass", d) for d in docs[:-1] if d["kind"] == "PriorityClass"]
    message = check_global_default(obj, earlier)
    assert message == want["apiserver"]
    assert want["error"] in message


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_good_documents_pass(name: str) -> None:
    for raw in _documents(CORPUS / name)[:-1]:
        assert validate(raw["kind"], decode(raw["kind"], raw)) == [], raw["metadata"]["name"]


def _manifests() -> list[Path]:
    found = {*(ROOT / "tests" / "conformance" / "cases").rglob("*.yaml"), *(ROOT / "examples").rglob("*.yaml")}
    return sorted(found)


@pytest.mark.parametrize("path", _manifests(), ids=lambda p: str(p.relative_to(ROOT)))
def test_manifests_the_server_accepts_pass(path: Path) -> None:
    """Regression guard: we must not refuse what the API server accepts (nor what the golden cases hold:
    the few rules they break are tolerated with a warning, see intake.TOLERATED)."""
    kinds = validated_kinds()
    for raw in _documents(path):
        kind = raw.get("kind")
        if kind in kinds:
            errs = [e for e in validate(kind, decode(kind, raw)) if e.detail not in TOLERATED]
            assert errs == [], f"{kind} {raw['metadata'].get('name')}: {errs[0]}"


def test_node_spec_null_is_accepted() -> None:
    node = decode("Node", {"metadata": {"name": "n1", "labels": None}, "spec": None})
    assert node.spec.taints == [] and not node.spec.unschedulable
    assert validate("Node", node) == []


def test_dns_label_with_dots_says_so() -> None:
    assert is_dns1123_label("a.b") == ["must not contain dots"]
    assert is_dns1123_label("a" * 30 + "." + "b" * 40) == [
        "must be no more than 63 characters",
        "must not contain dots",
    ]
    assert is_dns1123_label("a..b")[0].startswith("a lowercase RFC 1123 label")


def test_statefulset_pods_get_claim_volumes_first() -> None:
    ss = decode(
        "StatefulSet",
        {
            "metadata": {"name": "db"},
            "spec": {
                "template": {"spec": {"volumes": [{"name": "data", "emptyDir": {}}, {"name": "conf", "emptyDir": {}}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "logs"}}, {"metadata": {"name": "data"}}],
            },
        },
    )
    vols = statefulset_template_spec(ss).volumes
    assert [v.name for v in vols] == ["logs", "data", "conf"]
    assert vols[1].persistent_volume_claim is not None and vols[1].persistent_volume_claim.claim_name == "data"


def _pc(name: str, value: int, default: bool) -> PriorityClass:
    return decode("PriorityClass", {"metadata": {"name": name}, "value": value, "globalDefault": default})


def test_second_default_names_the_lowest_existing_default() -> None:
    existing = [_pc("a", 300, True), _pc("b", 100, True), _pc("c", 50, False)]
    assert check_global_default(_pc("d", 1, False), existing) is None
    assert check_global_default(_pc("d", 1, True), [_pc("c", 50, False)]) is None
    assert check_global_default(_pc("d", 1, True), existing) == (
        'priorityclasses.scheduling.k8s.io "d" is forbidden: '
        "PriorityClass b is already marked as default. Only one default can exist"
    )


def test_template_quantities_are_checked_at_decode() -> None:
    raw = {"spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "lots"}}}]}}}}
    for kind in ("ReplicationController", "ReplicaSet", "StatefulSet"):
        with pytest.raises(DecodeError) as err:
            decode(kind, raw)
        assert err.value.field == "spec.template.spec.containers[0].resources.limits[cpu]"
