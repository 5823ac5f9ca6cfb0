"""CEL selectors: upstream's DRA environment (device.driver / attributes / capacity, quantities, semver)."""

from __future__ import annotations

import itertools

import pytest
from dra_helpers import DRIVER, gpu, resource_slice

from kubesched.plugins.dynamicresources import cel


def _device(**extra: object) -> cel.DeviceInput:
    d = gpu("g0", "t4", 16, numa=1, **extra)  # type: ignore[arg-type]
    d["attributes"]["other.example.com/rack"] = {"string": "r1"}
    d["attributes"]["fw"] = {"version": "1.2.3-rc.1"}
    _, s = resource_slice("s", [d], node="n1")
    return cel.DeviceInput(DRIVER, s.spec.devices[0])


def _eval(expr: str, device: cel.DeviceInput | None = None) -> bool:
    c = cel.compile_expression(expr)
    assert not c.error, c.error
    return cel.device_matches(c, device or _device())


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.driver == "other"', False),
        ('device.attributes["gpu.example.com"].model == "t4"', True),
        ('device.attributes["gpu.example.com"].memoryGi >= 16', True),
        ('device.attributes["gpu.example.com"].memoryGi > 16', False),
        ('device.attributes["other.example.com"].rack == "r1"', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("16Gi")) == 0', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0', False),
        ('device.capacity["gpu.example.com"].memory == quantity("16384Mi")', True),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("17179869185"))', True),
        ('device.capacity["gpu.example.com"].memory.asInteger() == 17179869184', True),
        ('quantity("1.5").add(quantity("500m")).compareTo(quantity("2")) == 0', True),
        ('quantity("1").sub(2).sign() == -1', True),
        ('isQuantity("1Gi") && !isQuantity("1 Gi")', True),
        ('device.attributes["gpu.example.com"].fw.isLessThan(semver("1.2.3"))', True),
        ('device.attributes["gpu.example.com"].fw.major() == 1', True),
        ('semver("1.10.0").isGreaterThan(semver("1.9.0"))', True),
        ('isSemver("1.0") == false && isSemver("v1.0", true)', True),
        ('cel.bind(d, device.attributes["gpu.example.com"], d.model == "t4" && d.numa == 1)', True),
        ('device.attributes["gpu.example.com"].model.startsWith("t") && "T4".lowerAscii() == "t4"', True),
        ('device.attributes["gpu.example.com"].model == 4', False),  # heterogeneous equality is false, not an error
        ('has(device.attributes["gpu.example.com"].model)', True),
        ('has(device.attributes["gpu.example.com"].nothing)', False),
        ('"missing.example.com" in device.attributes', False),
        ('device.attributes["missing.example.com"].size() == 0', True),  # absent domain: empty map
        ('device.attributes["gpu.example.com"].?nothing.orValue("x") == "x"', True),
        ("[1, 2, 3].all(x, x > 0) && [1, 2].exists_one(x, x == 2)", True),
        ("[1, 2, 3].isSorted() && [1, 2, 3].sum() == 6 && [2, 1].min() == 1 && [2, 1].max() == 2", True),
        ('device.attributes["gpu.example.com"].model.find("[0-9]") == "4"', True),
        ('"a1b2".findAll("[0-9]") == ["1", "2"]', True),
    ],
)
def test_expressions_evaluate_as_in_the_kubernetes_environment(expr: str, want: bool) -> None:
    assert _eval(expr) is want


@pytest.mark.parametrize(
    ("expr", "error"),
    [
        ('device.attributes["gpu.example.com"].nothing == "x"', "no such key: nothing"),
        ('device.attributes["missing.example.com"].x == 1', "no such key: x"),
        ('quantity("bad").sign() == 1', "quantities must match the regular expression"),
        ('device.attributes["gpu.example.com"].model', "could not be converted to bool"),
        ("1 / 0 == 1", "divide by zero"),
    ],
)
def test_runtime_errors(expr: str, error: str) -> None:
    with pytest.raises(cel.CELError, match=error.replace("(", r"\(").replace("[", r"\[")):
        _eval(expr)


@pytest.mark.parametrize(
    ("expr", "error"),
    [
        ("device.driver == 1", "compilation failed: ERROR: <input>:1:15: found no matching overload for '_==_'"),
        ("device.foo", "compilation failed: ERROR: <input>:1:7: undeclared reference to 'device.foo'"),
        ('device.driver + "x"', "must evaluate to bool or the unknown type, not string"),
        ("1 +", "compilation failed: ERROR: <input>:1:4: Syntax error"),
    ],
)
def test_compile_errors(expr: str, error: str) -> None:
    c = cel.compile_expression(expr)
    assert c.program is None
    assert c.error.startswith(error)


def test_expressions_are_compiled_once() -> None:
    a = cel.compile_expression('device.driver == "once.example.com"')
    b = cel.compile_expression('device.driver == "once.example.com"')
    assert a is b


def test_unqualified_names_belong_to_the_driver_domain() -> None:
    d = _device()
    assert set(d.attributes) == {DRIVER, "other.example.com"}
    assert "model" in d.attributes[DRIVER]
    assert set(d.capacity) == {DRIVER}


def test_semver_order_follows_precedence_rules() -> None:
    order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11"]
    order += ["1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"]
    for lo, hi in itertools.pairwise(order):
        assert _eval(f'semver("{lo}").isLessThan(semver("{hi}"))'), (lo, hi)
        assert not _eval(f'semver("{hi}").isLessThan(semver("{lo}"))'), (lo, hi)
    assert _eval('semver("1.0.0+build.1") == semver("1.0.0+build.2")')


def test_bad_version_attribute_is_a_runtime_error() -> None:
    d = gpu("g0")
    d["attributes"]["fw"] = {"version": "01.2.3"}
    _, s = resource_slice("s", [d], node="n1")
    with pytest.raises(cel.CELError, match="attribute fw: parse semantic version"):
        cel.device_matches(cel.compile_expression("true"), cel.DeviceInput(DRIVER, s.spec.devices[0]))
