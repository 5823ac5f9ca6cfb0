"""The memoized and short-cut checks of admission agree with the plain ones they stand for.

Pod specs found valid are remembered (pod.py), valid names skip the name cache (meta.py),
quantities seen valid skip parsing (decode.py) and a pod that sets no priority skips the Priority
admission plugin's computation (cluster/admission.py): each is tested here against the plain check,
over the pod corpus and over inputs chosen to sit next to a cached one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from kubesched.api import decode as decode_module
from kubesched.api.core import Pod
from kubesched.api.decode import DecodeError, decode
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.scheduling import SYSTEM_PRIORITY_CLASSES, PriorityClass
from kubesched.api.validation import pod as pod_validation
from kubesched.api.validation.meta import _mask_trailing_dash, name_is_dns_subdomain
from kubesched.api.validation.pod import validate_pod
from kubesched.cluster.admission import global_default_class, priority_refusal
from kubesched.gocompat.field import FieldError
from kubesched.gocompat.names import is_dns1123_subdomain
from kubesched.scenario.yamlstream import Flagged, iter_documents

HERE = Path(__file__).parent


def _pods() -> list[Pod]:
    """Every pod of the corpora that decodes (valid and invalid ones)."""
    out = []
    for path in sorted([*(HERE / "corpus" / "pod").glob("*.yaml"), *(HERE / "pod_cases").glob("*.yaml")]):
        for doc in iter_documents(path.read_text(), workers=1):
            raw = doc.data if isinstance(doc, Flagged) else doc
            if isinstance(raw, dict) and raw.get("kind") == "Pod":
                try:
                    out.append(decode("Pod", raw))
                except DecodeError:
                    continue
    return out


def _plain(pod: Pod) -> list[FieldError]:
    """validate_pod with nothing remembered from any other pod."""
    pod_validation._VALID_SPECS.clear()
    return validate_pod(pod)


def _as_text(errs: list[FieldError]) -> list[tuple[str, str]]:
    return [(e.field, e.body()) for e in errs]


def test_remembered_specs_give_each_pod_its_own_errors() -> None:
    pods = _pods()
    assert len(pods) > 100
    cold = [_as_text(_plain(p)) for p in pods]
    assert any(cold) and not all(cold)
    pod_validation._VALID_SPECS.clear()
    for _ in range(2):  # the second round with every valid spec remembered
        assert [_as_text(validate_pod(p)) for p in pods] == cold


def _with_image(pod: Pod, image: str, init: bool = False) -> Pod:
    spec = pod.spec
    if init:
        container = msgspec.structs.replace(spec.containers[0], name="init", image=image)
        spec = msgspec.structs.replace(spec, init_containers=[container])
    else:
        spec = msgspec.structs.replace(spec, containers=[msgspec.structs.replace(spec.containers[0], image=image)])
    return msgspec.structs.replace(pod, spec=spec)


def _pod(**spec: Any) -> Pod:
    raw = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}
    return msgspec.convert(raw, Pod)


@pytest.mark.parametrize("init", [False, True])
def test_an_image_with_whitespace_is_refused_after_its_clean_twin(init: bool) -> None:
    clean = _with_image(_pod(), "registry/pause:3.10", init)
    spaced = _with_image(_pod(), " registry/pause:3.10", init)
    pod_validation._VALID_SPECS.clear()
    assert validate_pod(clean) == []
    where = "spec.initContainers[0].image" if init else "spec.containers[0].image"
    assert [e.field for e in validate_pod(spaced)] == [where]
    assert _as_text(validate_pod(spaced)) == _as_text(_plain(spaced))


def test_a_spec_with_node_name_and_volumes_is_remembered_as_without_them() -> None:
    pod_validation._VALID_SPECS.clear()
    bare = _pod()
    bound = _pod(nodeName="node-1", volumes=[{"name": "v", "emptyDir": {}}])
    assert validate_pod(bare) == [] and len(pod_validation._VALID_SPECS) == 1
    assert validate_pod(bound) == [] and len(pod_validation._VALID_SPECS) == 1
    badly_bound = _pod(nodeName="Node_1")
    assert _as_text(validate_pod(badly_bound)) == _as_text(_plain(badly_bound)) != []


NAMES = [
    "a",
    "pod-1",
    "web.default.svc",
    "a-",
    "-a",
    "A",
    "a_b",
    "a..b",
    ".a",
    "a.",
    "",
    "x" * 253,
    "x" * 254,
    ("a" * 63 + ".") * 4,
    "é",
    "a" * 252 + "-",
]


@pytest.mark.parametrize("prefix", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_name_check_is_is_dns1123_subdomain(name: str, prefix: bool) -> None:
    assert name_is_dns_subdomain(name, prefix) == tuple(is_dns1123_subdomain(_mask_trailing_dash(name, prefix)))


QUANTITIES: list[Any] = ["1", "100m", "1Gi", "1.5", "-1", "1e3", "1E", "abc", "", " 1", "1 ", 1, 1.0, 1.5, -2]
QUANTITIES += [float("nan"), float("inf"), True, False, None, [1], {"a": 1}, 10**30, "9" * 40]


def _parses(q: Any) -> bool:
    if q.__class__ not in (str, int, float):
        return False
    try:
        parse_quantity(q)
    except QuantityError:
        return False
    return True


@pytest.mark.parametrize("warm", [False, True])
def test_quantities_seen_valid_are_the_ones_that_parse(warm: bool) -> None:
    decode_module._VALID_TEXTS.clear()
    decode_module._VALID_NUMBERS.clear()
    rounds = 2 if warm else 1
    for _ in range(rounds):
        for q in QUANTITIES:
            assert decode_module._valid_quantity(q) == _parses(q), q
            if isinstance(q, list | dict):
                continue
            assert decode_module._list_valid({"cpu": q}) == _parses(q), q
            assert decode_module._list_valid({"cpu": "1", "memory": q}) == _parses(q), q


def _refusal_reference(pod: Pod, classes: dict[str, PriorityClass]) -> str | None:
    """priority_refusal without its early return: the class's (or the default's) value and policy first."""
    spec = pod.spec
    name = spec.priority_class_name
    if name:
        if name in SYSTEM_PRIORITY_CLASSES and name not in classes:
            value, policy = SYSTEM_PRIORITY_CLASSES[name], "PreemptLowerPriority"
        elif name in classes:
            value, policy = classes[name].value, classes[name].preemption_policy or "PreemptLowerPriority"
        else:
            return f'pods "{pod.metadata.name}" is forbidden: no PriorityClass with name {name} was found'
    else:
        default = global_default_class(classes)
        value = default.value if default is not None else 0
        policy = (default.preemption_policy if default is not None else "") or "PreemptLowerPriority"
    forbidden = f'pods "{pod.metadata.name}" is forbidden: '
    computed = "priority admission controller computed"
    if spec.priority is not None and spec.priority != value:
        return (
            f"{forbidden}the integer value of priority ({spec.priority}) must not be provided in pod spec; "
            f"{computed} {value} from the given PriorityClass name"
        )
    if spec.preemption_policy and spec.preemption_policy != policy:
        return (
            f"{forbidden}the string value of PreemptionPolicy ({spec.preemption_policy}) must not be provided in "
            f"pod spec; {computed} {policy} from the given PriorityClass name"
        )
    return None


def _class(name: str, value: int, default: bool = False, policy: str | None = None) -> PriorityClass:
    raw = {"metadata": {"name": name}, "value": value, "globalDefault": default, "preemptionPolicy": policy}
    return msgspec.convert(raw, PriorityClass)


def test_priority_refusal_is_the_plugins_for_every_combination() -> None:
    class_sets = [
        {},
        {"high": _class("high", 1000)},
        {"high": _class("high", 1000), "base": _class("base", 7, default=True, policy="Never")},
        {"zero": _class("zero", 0, default=True)},
    ]
    seen = set()
    for classes in class_sets:
        for name in ["", "high", "zero", "missing", "system-node-critical"]:
            for priority in [None, 0, 7, 1000]:
                for policy in [None, "", "Never", "PreemptLowerPriority"]:
                    pod = _pod(priorityClassName=name, priority=priority, preemptionPolicy=policy)
                    got = priority_refusal(pod, classes)
                    assert got == _refusal_reference(pod, classes), (classes, name, priority, policy)
                    seen.add(got is None)
    assert seen == {True, False}
