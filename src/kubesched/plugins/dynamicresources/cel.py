"""CEL device selectors (k8s.io/dynamic-resource-allocation/cel), on Google's cel-cpp (cel-expr-python).

Upstream evaluates selectors with cel-go in the Kubernetes "stored expressions"
environment plus a `device` variable. cel-expr-python wraps cel-cpp, the other
reference implementation of the spec: same parser, same type checker, same
runtime semantics (heterogeneous equality, error values, macros), with the
bindings (`cel.bind`), strings and optional extensions. What cel-go has as
Kubernetes-specific library is provided here:

- `device.driver`, `device.attributes[domain][id]`, `device.capacity[domain][id]`
  are declared as the variables `device.driver`, `device.attributes`,
  `device.capacity` (CEL resolves a qualified name to the longest declared
  variable), so `device.foo` is a compile error as upstream.
- Quantities and semantic versions are values of their own types upstream.
  cel-cpp cannot carry opaque host objects, so they travel as one-entry maps
  holding a canonical form (equal values have equal maps, so `==` keeps
  Quantity.Equal semantics), and the library functions (`quantity()`,
  `compareTo`, `isLessThan`, `add`, `semver()`, `major()`...) read that form.
- Upstream answers an empty map for a domain a device has none of
  (`device.attributes["other.example.com"]`); here the domains named literally
  in the expression get an empty map when the device lacks them.

Expressions are compiled once and cached; results are cached per device by the
allocator's caller (`MatchCache`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cmp_to_key
from typing import TYPE_CHECKING, Any

from kubesched.api.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    from kubesched.api.resource import Device

_QUANTITY_KEY = "@kubernetes.Quantity"
_SEMVER_KEY = "@kubernetes.Semver"

_VAR_DRIVER = "device.driver"
_VAR_ATTRIBUTES = "device.attributes"
_VAR_CAPACITY = "device.capacity"

_DOMAIN_REF = re.compile(r"""device\s*\.\s*(attributes|capacity)\s*\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\]""")

_MAX_INT64 = (1 << 63) - 1
_MIN_INT64 = -(1 << 63)


class CELError(Exception):
    """A compile or runtime error, worded as apiserver/cel-go would word it."""


# ---------------------------------------------------------------- quantities


def quantity_value(q: Fraction) -> dict[str, str]:
    """The CEL form of a quantity."""
    return {_QUANTITY_KEY: f"{q.numerator}/{q.denominator}"}


def _quantity_of(v: Any) -> Fraction:
    if isinstance(v, dict) and _QUANTITY_KEY in v:
        return Fraction(v[_QUANTITY_KEY])
    raise CELError("no such overload")


def _fn_quantity(s: str) -> dict[str, str]:
    try:
        return quantity_value(parse_quantity(s))
    except QuantityError as err:
        # resource.ParseQuantity's own error (format, suffix or numeric part).
        raise CELError(str(err)) from None


def _fn_is_quantity(s: str) -> bool:
    try:
        parse_quantity(s)
    except QuantityError:
        return False
    return True


def _fn_is_integer(v: Any) -> bool:
    q = _quantity_of(v)
    return q.denominator == 1 and _MIN_INT64 <= q.numerator <= _MAX_INT64


def _fn_as_integer(v: Any) -> int:
    q = _quantity_of(v)
    if q.denominator != 1 or not _MIN_INT64 <= q.numerator <= _MAX_INT64:
        raise CELError("cannot convert value to integer")
    return q.numerator


def _fn_as_approximate_float(v: Any) -> float:
    return float(_quantity_of(v))


def _fn_sign(v: Any) -> int:
    q = _quantity_of(v)
    return (q > 0) - (q < 0)


def _fn_add(a: Any, b: Any) -> dict[str, str]:
    rhs = Fraction(b) if isinstance(b, int) else _quantity_of(b)
    return quantity_value(_quantity_of(a) + rhs)


def _fn_sub(a: Any, b: Any) -> dict[str, str]:
    rhs = Fraction(b) if isinstance(b, int) else _quantity_of(b)
    return quantity_value(_quantity_of(a) - rhs)


# ---------------------------------------------------------------- semantic versions

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def parse_semver(s: str) -> tuple[int, int, int, tuple[str, ...]]:
    """blang/semver Parse (strict): major.minor.patch[-pre][+build]; build metadata is dropped."""
    m = _SEMVER.match(s)
    if m is None:
        raise CELError(f"invalid semantic version {s!r}")
    pre = tuple(m.group(4).split(".")) if m.group(4) else ()
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), pre


def semver_value(s: str) -> dict[str, str]:
    """The CEL form of a version: its canonical text without build metadata (equality ignores it)."""
    major, minor, patch, pre = parse_semver(s)
    text = f"{major}.{minor}.{patch}" + ("-" + ".".join(pre) if pre else "")
    return {_SEMVER_KEY: text}


def _semver_of(v: Any) -> tuple[int, int, int, tuple[str, ...]]:
    if isinstance(v, dict) and _SEMVER_KEY in v:
        return parse_semver(v[_SEMVER_KEY])
    raise CELError("no such overload")


def _pre_cmp(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    if not a or not b:
        return (not a) - (not b)  # a release ranks above its pre-releases
    for x, y in zip(a, b, strict=False):
        if x == y:
            continue
        xn, yn = x.isdigit(), y.isdigit()
        if xn and yn:
            return (int(x) > int(y)) - (int(x) < int(y))
        if xn != yn:
            return -1 if xn else 1
        return (x > y) - (x < y)
    return (len(a) > len(b)) - (len(a) < len(b))


def semver_compare(a: tuple[int, int, int, tuple[str, ...]], b: tuple[int, int, int, tuple[str, ...]]) -> int:
    if a[:3] != b[:3]:
        return (a[:3] > b[:3]) - (a[:3] < b[:3])
    return _pre_cmp(a[3], b[3])


def _fn_semver(s: str) -> dict[str, str]:
    return semver_value(s)


def _fn_is_semver(s: str) -> bool:
    return _SEMVER.match(s) is not None


# ---------------------------------------------------------------- shared member functions


def _compare(a: Any, b: Any) -> int:
    if isinstance(a, dict) and _QUANTITY_KEY in a:
        x, y = _quantity_of(a), _quantity_of(b)
        return (x > y) - (x < y)
    return semver_compare(_semver_of(a), _semver_of(b))


def _fn_compare_to(a: Any, b: Any) -> int:
    return _compare(a, b)


def _fn_is_less_than(a: Any, b: Any) -> bool:
    return _compare(a, b) < 0


def _fn_is_greater_than(a: Any, b: Any) -> bool:
    return _compare(a, b) > 0


def _fn_major(v: Any) -> int:
    return _semver_of(v)[0]


def _fn_minor(v: Any) -> int:
    return _semver_of(v)[1]


def _fn_patch(v: Any) -> int:
    return _semver_of(v)[2]


def _fn_semver_normalize(s: str, normalize: bool) -> dict[str, str]:
    if normalize:
        s = _normalize_semver(s)
    return semver_value(s)


def _fn_is_semver_normalize(s: str, normalize: bool) -> bool:
    if normalize:
        s = _normalize_semver(s)
    return _SEMVER.match(s) is not None


def _normalize_semver(s: str) -> str:
    """SemverLib's normalization: strip a leading v, fill missing minor/patch, drop leading zeros."""
    s = s.removeprefix("v")
    core, sep, rest = s.partition("-") if "-" in s else s.partition("+")
    parts = core.split(".")
    while len(parts) < 3:
        parts.append("0")
    parts = [p.lstrip("0") or "0" if p.isdigit() else p for p in parts]
    return ".".join(parts) + (sep + rest if sep else "")


# ---------------------------------------------------------------- Kubernetes list and regex libraries


def _ordered(values: list[Any]) -> list[Any]:
    if any(isinstance(v, dict) for v in values):
        return sorted(values, key=cmp_to_key(_compare))
    return sorted(values)


def _fn_is_sorted(values: list[Any]) -> bool:
    try:
        return list(values) == _ordered(list(values))
    except TypeError:
        raise CELError("no such overload") from None


def _fn_sum(values: list[Any]) -> Any:
    total: Any = 0
    for v in values:
        if isinstance(v, dict):
            total = quantity_value(
                (_quantity_of(total) if isinstance(total, dict) else Fraction(total)) + _quantity_of(v)
            )
        else:
            total = total + v
    return total


def _extreme(values: list[Any], pick_max: bool) -> Any:
    if not values:
        raise CELError(f"{'max' if pick_max else 'min'} called on empty list")
    try:
        ordered = _ordered(list(values))
    except TypeError:
        raise CELError("no such overload") from None
    return ordered[-1] if pick_max else ordered[0]


def _fn_min(values: list[Any]) -> Any:
    return _extreme(values, False)


def _fn_max(values: list[Any]) -> Any:
    return _extreme(values, True)


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise CELError(f"Illegal regex: {err}") from None


def _fn_find(s: str, pattern: str) -> str:
    m = _regex(pattern).search(s)
    return m.group(0) if m is not None else ""


def _fn_find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    out = [m.group(0) for m in _regex(pattern).finditer(s)]
    return out if limit < 0 else out[:limit]


# ---------------------------------------------------------------- environment


_Overload = tuple[str, Any, list[Any], bool, Callable[..., Any]]


def _function(cel: Any, name: str, *overloads: _Overload) -> Any:
    """A function declaration; each overload is (id, result type, parameter types, is a member, implementation)."""
    return cel.FunctionDecl(
        name,
        [cel.Overload(oid, ret, params, is_member=member, impl=impl) for oid, ret, params, member, impl in overloads],
    )


def _quantity_functions(cel: Any, q: Any) -> list[Any]:
    """Kubernetes' quantity library (apiserver/pkg/cel/library/quantity.go)."""
    T = cel.Type
    return [
        _function(cel, "quantity", ("quantity_string", q, [T.STRING], False, _fn_quantity)),
        _function(cel, "isQuantity", ("is_quantity_string", T.BOOL, [T.STRING], False, _fn_is_quantity)),
        _function(cel, "isInteger", ("quantity_is_integer", T.BOOL, [q], True, _fn_is_integer)),
        _function(cel, "asInteger", ("quantity_as_integer", T.INT, [q], True, _fn_as_integer)),
        _function(cel, "asApproximateFloat", ("quantity_as_float", T.DOUBLE, [q], True, _fn_as_approximate_float)),
        _function(cel, "sign", ("quantity_sign", T.INT, [q], True, _fn_sign)),
        _function(
            cel,
            "add",
            ("quantity_add", q, [q, q], True, _fn_add),
            ("quantity_add_int", q, [q, T.INT], True, _fn_add),
        ),
        _function(
            cel,
            "sub",
            ("quantity_sub", q, [q, q], True, _fn_sub),
            ("quantity_sub_int", q, [q, T.INT], True, _fn_sub),
        ),
        _function(cel, "compareTo", ("k8s_compare_to", T.INT, [q, q], True, _fn_compare_to)),
        _function(cel, "isLessThan", ("k8s_is_less_than", T.BOOL, [q, q], True, _fn_is_less_than)),
        _function(cel, "isGreaterThan", ("k8s_is_greater_than", T.BOOL, [q, q], True, _fn_is_greater_than)),
    ]


def _semver_functions(cel: Any, q: Any) -> list[Any]:
    """Kubernetes' semver library (apiserver/pkg/cel/library/semverlib.go)."""
    T = cel.Type
    return [
        _function(
            cel,
            "semver",
            ("string_to_semver", q, [T.STRING], False, _fn_semver),
            ("string_bool_to_semver", q, [T.STRING, T.BOOL], False, _fn_semver_normalize),
        ),
        _function(
            cel,
            "isSemver",
            ("is_semver_string", T.BOOL, [T.STRING], False, _fn_is_semver),
            ("is_semver_string_bool", T.BOOL, [T.STRING, T.BOOL], False, _fn_is_semver_normalize),
        ),
        _function(cel, "major", ("semver_major", T.INT, [q], True, _fn_major)),
        _function(cel, "minor", ("semver_minor", T.INT, [q], True, _fn_minor)),
        _function(cel, "patch", ("semver_patch", T.INT, [q], True, _fn_patch)),
    ]


def _list_and_regex_functions(cel: Any) -> list[Any]:
    """Kubernetes' lists and regex libraries (apiserver/pkg/cel/library/lists.go, regex.go)."""
    T = cel.Type
    dyn_list = T.List(T.DYN)
    return [
        _function(cel, "isSorted", ("list_is_sorted", T.BOOL, [dyn_list], True, _fn_is_sorted)),
        _function(cel, "sum", ("list_sum", T.DYN, [dyn_list], True, _fn_sum)),
        _function(cel, "min", ("list_min", T.DYN, [dyn_list], True, _fn_min)),
        _function(cel, "max", ("list_max", T.DYN, [dyn_list], True, _fn_max)),
        _function(cel, "find", ("string_find", T.STRING, [T.STRING, T.STRING], True, _fn_find)),
        _function(
            cel,
            "findAll",
            ("string_find_all", T.List(T.STRING), [T.STRING, T.STRING], True, _fn_find_all),
            ("string_find_all_n", T.List(T.STRING), [T.STRING, T.STRING, T.INT], True, _fn_find_all),
        ),
    ]


class _Env:
    """The compiled-once cel-cpp environment and its function table."""

    def __init__(self) -> None:
        from cel_expr_python import cel
        from cel_expr_python.ext import ext_bindings, ext_math, ext_optional, ext_strings

        T = cel.Type
        dyn_map = T.Map(T.STRING, T.DYN)
        q = dyn_map  # quantities and versions are maps, see the module docstring
        functions = [*_quantity_functions(cel, q), *_semver_functions(cel, q), *_list_and_regex_functions(cel)]
        variables = {
            _VAR_DRIVER: T.STRING,
            _VAR_ATTRIBUTES: T.Map(T.STRING, dyn_map),
            _VAR_CAPACITY: T.Map(T.STRING, T.Map(T.STRING, q)),
        }
        self.bool_type = T.BOOL
        self.dyn_type = T.DYN
        self.error_type = T.ERROR
        self.env = cel.NewEnv(
            variables=variables,
            extensions=[
                ext_bindings.ExtBindings(),
                ext_strings.ExtStrings(),
                ext_optional.ExtOptional(),
                ext_math.ExtMath(),
            ],
            functions=functions,
        )


_ENV: _Env | None = None


def _env() -> _Env:
    global _ENV
    if _ENV is None:
        _ENV = _Env()
    return _ENV


# ---------------------------------------------------------------- compile and evaluate


_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")
_NO_SUCH_KEY = re.compile(r'^Key not found in map : "?(.*?)"?$')


def _clean(text: str) -> str:
    text = _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", text.strip(), count=1))
    m = _NO_SUCH_KEY.match(text)
    if m is not None:
        return f"no such key: {m.group(1)}"
    if text.startswith("No matching overloads found"):
        return "no such overload" + text[len("No matching overloads found") :].replace(" : ", ": ", 1)
    return text


@dataclass(slots=True)
class CompilationResult:
    """A compiled selector, or the error that upstream would report for it."""

    expression: str
    program: Any = None
    error: str = ""
    domains: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


_cache: dict[str, CompilationResult] = {}


def compile_expression(expression: str) -> CompilationResult:
    """Compile once per expression (cel.Cache upstream keeps the 10 most recent; compiled programs are cheap here)."""
    r = _cache.get(expression)
    if r is not None:
        return r
    env = _env()
    try:
        program = env.env.compile(expression)
    except RuntimeError as err:
        r = CompilationResult(expression, error="compilation failed: " + _clean(str(err)))
    else:
        out = program.return_type()
        if out != env.bool_type and out != env.dyn_type:
            r = CompilationResult(
                expression,
                error=f"must evaluate to bool or the unknown type, not {out.name().lower()}",
            )
        else:
            attrs: set[str] = set()
            caps: set[str] = set()
            for m in _DOMAIN_REF.finditer(expression):
                domain = m.group(2) if m.group(2) is not None else m.group(3)
                (attrs if m.group(1) == "attributes" else caps).add(domain)
            r = CompilationResult(expression, program=program, domains=(frozenset(attrs), frozenset(caps)))
    _cache[expression] = r
    return r


class DeviceInput:
    """A device as CEL sees it: attributes and capacity grouped by domain (unqualified names in the driver's)."""

    __slots__ = ("attributes", "capacity", "driver", "error")

    def __init__(self, driver: str, device: Device) -> None:
        self.driver = driver
        self.error = ""
        attributes: dict[str, dict[str, Any]] = {}
        for name, attr in device.attributes.items():
            try:
                value = _attribute_value(attr)
            except CELError as err:
                self.error = f"attribute {name}: {err}"
                value = None
            domain, ident = _split_qualified(name, driver)
            attributes.setdefault(domain, {})[ident] = value
        capacity: dict[str, dict[str, Any]] = {}
        for name, cap in device.capacity.items():
            try:
                q = parse_quantity(cap.value)
            except QuantityError as err:
                self.error = f"capacity {name}: {err}"
                q = Fraction(0)
            domain, ident = _split_qualified(name, driver)
            capacity.setdefault(domain, {})[ident] = quantity_value(q)
        self.attributes = attributes
        self.capacity = capacity


def _split_qualified(name: str, default_domain: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    if not sep:
        return default_domain, name
    return domain, ident


def _attribute_value(attr: Any) -> Any:
    if attr.int_value is not None:
        return attr.int_value
    if attr.bool_value is not None:
        return attr.bool_value
    if attr.string_value is not None:
        return attr.string_value
    if attr.version_value is not None:
        try:
            return semver_value(attr.version_value)
        except CELError as err:
            raise CELError(f"parse semantic version: {err}") from None
    raise CELError("unsupported attribute value")


def device_matches(compiled: CompilationResult, device: DeviceInput) -> bool:
    """Evaluate a compiled selector for one device; raises CELError with upstream's runtime error text."""
    if device.error:
        raise CELError(device.error)
    attributes, capacity = device.attributes, device.capacity
    want_attrs, want_caps = compiled.domains
    missing = [d for d in want_attrs if d not in attributes]
    if missing:
        attributes = {**attributes, **{d: {} for d in missing}}
    missing = [d for d in want_caps if d not in capacity]
    if missing:
        capacity = {**capacity, **{d: {} for d in missing}}
    env = _env()
    result = compiled.program.eval(
        data={_VAR_DRIVER: device.driver, _VAR_ATTRIBUTES: attributes, _VAR_CAPACITY: capacity}
    )
    t = result.type()
    if t == env.error_type:
        raise CELError(_clean(str(result.value())))
    if t != env.bool_type:
        raise CELError(f"CEL result of type {t.name().lower()} could not be converted to bool")
    return bool(result.value())
