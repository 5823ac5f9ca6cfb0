"""Pod validation against what kube-apiserver v1.34.1 answered for the same manifests.

corpus/pod/: one defect per file; `error` is the first error the server lists, `apiserver` its
whole message (written by tools/apiserver_verdict.py). pod_cases/: the server's answers to pods
with many defects (the order of the whole list) and to pods it accepts that look suspicious.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.core import PodSpec
from kubesched.api.decode import KINDS, decode
from kubesched.api.validation import validate, validated_kinds
from kubesched.api.validation.pod import validate_pod_spec
from kubesched.gocompat.field import FieldError, to_aggregate
from kubesched.scenario import object_ref
from kubesched.scenario.yamlstream import Flagged, iter_documents

HERE = Path(__file__).parent
CORPUS = HERE / "corpus" / "pod"
CASES = HERE / "pod_cases"
ROOT = HERE.parents[2]


def _expected(directory: Path) -> list[tuple[str, dict[str, str]]]:
    return sorted(json.loads((directory / "expected.json").read_text()).items())


def _documents(path: Path) -> list[dict[str, Any]]:
    docs = [d.data if isinstance(d, Flagged) else d for d in iter_documents(path.read_text(), workers=1)]
    return [d for d in docs if isinstance(d, dict) and d.get("kind")]


def _ref(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    return object_ref(doc["kind"], meta.get("name", ""), meta.get("namespace"))


def _offending(path: Path, ref: str) -> dict[str, Any]:
    (doc,) = [d for d in _documents(path) if _ref(d) == ref]
    return doc


def _message(doc: dict[str, Any], errs: list[FieldError]) -> str:
    """The server's words for a refused object: NewInvalid over ErrorList.ToAggregate()."""
    msgs = to_aggregate(errs)
    if not msgs:
        return ""
    body = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    return f'{doc["kind"]} "{doc["metadata"]["name"]}" is invalid: {body}'


@pytest.mark.parametrize(("name", "entry"), _expected(CORPUS), ids=[n for n, _ in _expected(CORPUS)])
def test_corpus_first_error_is_the_servers(name: str, entry: dict[str, str]) -> None:
    doc = _offending(CORPUS / name, entry["object"])
    errs = validate(doc["kind"], decode(doc["kind"], doc))
    assert errs, "accepted what the API server refuses"
    assert str(errs[0]) == entry["error"]
    assert entry["error"] in entry["apiserver"]
    # The whole list too, in the server's order.
    assert _message(doc, errs) == entry["apiserver"]


@pytest.mark.parametrize(("name", "entry"), _expected(CASES), ids=[n for n, _ in _expected(CASES)])
def test_cases_match_the_server(name: str, entry: dict[str, str]) -> None:
    doc = _offending(CASES / name, entry["object"])
    assert _message(doc, validate(doc["kind"], decode(doc["kind"], doc))) == entry["apiserver"]


def _good_documents() -> list[tuple[str, dict[str, Any]]]:
    """Every document of the corpus but the one with the defect."""
    out = []
    for directory in (CORPUS, CASES):
        offending = {(n, e["object"]) for n, e in _expected(directory)}
        for path in sorted(directory.glob("*.yaml")):
            out += [(path.name, d) for d in _documents(path) if (path.name, _ref(d)) not in offending]
    return out


# What the API server said about the repository's own manifests where it refused one in validation
# (tools/apiserver_verdict.py over tests/conformance/cases and examples): path -> object -> errors.
REFUSED = json.loads((CASES / "repository.json").read_text())


def _repository_manifests() -> list[tuple[str, dict[str, Any]]]:
    """The objects of the conformance cases and examples."""
    out = []
    for top in (ROOT / "tests" / "conformance" / "cases", ROOT / "examples"):
        for path in sorted(top.rglob("*.yaml")):
            out += [(str(path.relative_to(ROOT)), d) for d in _documents(path) if d["kind"] in KINDS]
    return out


def _validated(docs: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """The documents of the kinds that have a validator (more as other kinds get theirs)."""
    kinds = validated_kinds()
    return [(where, d) for where, d in docs if d["kind"] in kinds]


@pytest.mark.parametrize(("where", "doc"), _validated(_good_documents() + _repository_manifests()))
def test_what_the_server_accepts_has_no_errors(where: str, doc: dict[str, Any]) -> None:
    """Every other object was accepted by the API server; the few it refused are refused in its words."""
    errs = to_aggregate(validate(doc["kind"], decode(doc["kind"], doc)))
    refused = REFUSED.get(where, {}).get(_ref(doc))
    if refused is None:
        assert errs == []
    else:
        assert (errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]") == refused


def test_repository_has_pods_to_check() -> None:
    assert sum(d["kind"] == "Pod" for _, d in _repository_manifests()) > 100


def test_pod_template_spec_is_not_defaulted() -> None:
    """A template's requests are not defaulted from its limits (the API server's answer for a ReplicaSet)."""
    spec = decode(
        "Pod",
        {
            "spec": {
                "containers": [
                    {"name": "app", "image": "pause", "resources": {"limits": {"cpu": "-1", "example.com/gpu": "1"}}}
                ]
            }
        },
    ).spec
    assert isinstance(spec, PodSpec)
    path = "spec.template.spec.containers[0].resources.limits[cpu]"
    assert [str(e) for e in validate_pod_spec(spec, "spec.template.spec")] == [
        f'{path}: Invalid value: "-1": must be greater than or equal to 0'
    ]


def test_generate_name_alone_is_a_name() -> None:
    """The API server generates the name before validating: a valid generateName is enough."""
    pod = decode("Pod", {"metadata": {"generateName": "web-"}, "spec": {"containers": [{"name": "a", "image": "i"}]}})
    assert validate("Pod", pod) == []


def _pod_level(requests: dict[str, str], *container_cpu: str) -> Any:
    containers = [
        {"name": f"c{i}", "image": "pause", "resources": {"requests": {"cpu": cpu}}}
        for i, cpu in enumerate(container_cpu)
    ]
    resources = {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": requests}
    return decode("Pod", {"metadata": {"name": "p"}, "spec": {"resources": resources, "containers": containers}})


def test_pod_level_resources_sum_the_containers_requests() -> None:
    """validatePodResourceConsistency over two containers requesting the same resource: their requests are
    summed (AggregateContainerRequests) and the pod's must cover the sum, printed as Quantity.String() does."""
    assert validate("Pod", _pod_level({"cpu": "300m"}, "100m", "200m")) == []
    assert validate("Pod", _pod_level({}, "100m", "200m")) == []
    assert [str(e) for e in validate("Pod", _pod_level({"cpu": "250m"}, "100m", "200m"))] == [
        'spec.resources.requests[cpu]: Invalid value: "250m": must be greater than or equal to aggregate'
        " container requests of 300m"
    ]
