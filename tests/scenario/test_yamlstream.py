"""yamlstream must read every stream as yaml.load_all with CSafeLoader does: same objects (types, values,
key order, shared aliases), same errors; serially and split across processes. Where it departs on purpose
(merge keys by its own rule, duplicate keys reported, alias bombs refused) the tests below say what it
does instead, without asking the installed PyYAML."""

from __future__ import annotations

import datetime as dt
import gc
import math
import weakref
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.scenario import yamlstream
from kubesched.scenario.yamlstream import DuplicateKey, Flagged, iter_documents

REFERENCE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def same(a: Any, b: Any, seen: dict[int, Any] | None = None, back: dict[int, Any] | None = None) -> bool:
    """Equal with the same types everywhere (1, 1.0 and True differ), NaN equal to NaN, datetimes with the
    same offset, and the same sharing: an object seen twice in `a` is one object seen twice in `b`."""
    seen = {} if seen is None else seen
    back = {} if back is None else back
    if type(a) is not type(b):
        return False
    if isinstance(a, dict | list | set):
        if id(a) in seen or id(b) in back:
            return seen.get(id(a)) is b and back.get(id(b)) is a
        seen[id(a)], back[id(b)] = b, a
        if isinstance(a, dict):
            return len(a) == len(b) and all(
                same(ka, kb, seen, back) and same(va, vb, seen, back)
                for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
            )
        if isinstance(a, set):
            return sorted(map(repr, a)) == sorted(map(repr, b))
        return len(a) == len(b) and all(same(x, y, seen, back) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y, seen, back) for x, y in zip(a, b, strict=True))
    return bool(repr(a) == repr(b))


def outcome(docs: Any) -> tuple[str, Any]:
    try:
        return "ok", [d.data if isinstance(d, Flagged) else d for d in docs]
    except yaml.YAMLError as err:
        return type(err).__name__, str(err)


def assert_same_as_reference(text: str, workers: int = 1) -> None:
    expected = outcome(yaml.load_all(text, Loader=REFERENCE))
    got = outcome(iter_documents(text, workers=workers))
    assert got[0] == expected[0], (got, expected)
    if got[0] == "ok":
        assert same(got[1], expected[1]), (got[1], expected[1])
    else:
        assert got[1] == expected[1]


CORPUS = {
    "booleans": "a: [yes, No, on, OFF, y, n, True, FALSE, 'yes', \"on\", Yes!]\n",
    "nulls": "a: ~\nb: null\nc: Null\nd:\ne: ''\n~: x\n",
    "ints": "a: [0, -0, +12, 017, 0o17, 0x1F, 0b101, 1_000, 190:20:30, 08, 1e3]\n",
    "floats": "a: [1.5, 1.0e+3, 6.8523015e+5, .inf, -.Inf, .NaN, 190:20:30.15, 1_000.5, 1., -.5]\n",
    "timestamps": (
        "a: [2002-12-14, 2001-12-14t21:59:43.10-05:00, 2001-12-14 21:59:43.10 -5, 2001-12-15T02:59:43.1Z,\n"
        "    2001-12-15 2:59:43.10, 2025-01-01T00:00:00+05:30, '2002-12-14']\n"
    ),
    "strings": (
        "plain: multi\n  line plain\nliteral: |\n  keep\n   this\n\nfolded: >-\n  fold\n  these\n"
        "keep: |+\n  end\n\nquoted: \"tab\\tand \\u00e9\"\nsingle: 'it''s'\nunicode: héllo ✓\n"
    ),
    "anchors": "base: &b {x: [1, 2], y: &s shared}\nagain: *b\nlist: [*s, *b]\n",
    "duplicates": "a: 1\na: 2\nb: {x: 1, x: [2]}\n1: int\ntrue: bool\n1.0: float\n",
    "keys": "? 2001-01-01\n: date\n0x10: hex\n.inf: inf\nnull: n\n? !!binary aGk=\n: bytes\n",
    "explicit tags": (
        "a: !!str 123\nb: !!int '42'\nc: !!float 1\nd: !!binary aGVsbG8=\ne: !!null ''\nf: !!bool yes\n"
        "g: !!set {x, y}\nh: !!omap [{a: 1}, {b: 2}]\ni: !!pairs [{a: 1}, {a: 2}]\nj: !!map {k: v}\n"
        "k: !!seq [1]\nl: ! 12\n"
    ),
    "value key": "=: equals\nx: {? &e = : 1, again: *e}\n",
    "recursive": "a: &r [*r, 1]\nm: &m {self: *m}\n",
    "documents": "--- 1\n--- |\n  text\n...\n---\n...\n--- !!str\n---\n- [a, b]\n",
    "directives": "%YAML 1.1\n%TAG !e! tag:yaml.org,2002:\n--- !e!str 12\n...\n%YAML 1.1\n--- {a: b}\n",
    "root scalar": "just a string\n",
    "empty": "",
    "comments only": "# nothing\n",
    "unhashable key": "? [1, 2]\n: x\n",
    "mapping key": "? {a: 1}\n: x\n",
    "unknown tag": "a: !foo 1\n",
    "merge of scalar": "a: {<<: 1}\n",
    "merge of list of scalars": "a: {<<: [1]}\n",
    "value as value": "a: =\n",
    "merge as value": "a: <<\n",
    "undefined alias": "a: *nope\n",
    "bad syntax": "a: [1, 2\nb: c\n",
    "tab indent": "a:\n\t- b\n",
    "document marker in quotes": 'a: "x\n---\ny"\n',
}


@pytest.mark.parametrize("text", CORPUS.values(), ids=list(CORPUS))
def test_corpus_matches_safe_loader(text: str) -> None:
    assert_same_as_reference(text)
    got = outcome(iter_documents(text))
    if got[0] == "ok":  # and the pure-Python SafeLoader agrees on what loads (its error messages differ)
        python = outcome(yaml.load_all(text, Loader=yaml.SafeLoader))
        assert python[0] == "ok" and same(got[1], python[1])


def test_aliases_are_shared_like_safe_loader() -> None:
    doc = next(iter_documents("base: &b {x: [1]}\nm: {<<: *b, y: 2}\nagain: *b\n"))
    assert doc["again"] is doc["base"]
    assert doc["m"]["x"] is doc["base"]["x"]


def test_kubernetes_manifests_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    monkeypatch.setattr(yamlstream.Loader, "construct_document", lambda self, node: calls.append(node))
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: web}}\nspec:\n  containers:\n"
        "  - name: c\n    image: registry.k8s.io/pause:3.10.1\n    ports: [{containerPort: 80}]\n"
        "    resources: {requests: {cpu: 100m, memory: 500Mi}}\n  priority: 10\n  hostNetwork: false\n"
        "status: {startTime: 2025-01-01T00:00:00Z}\n"
    )
    assert_same_as_reference(text)
    assert calls == []


def test_python_errors_in_constructors_become_yaml_errors() -> None:
    for text, problem in (
        ("a: !!int abc\n", "cannot construct !!int from 'abc': invalid literal for int() with base 10: 'abc'"),
        ("a: !!bool maybe\n", "cannot construct !!bool from 'maybe'"),
        ("a: 2020-01-01 10:00:00 +30\n", "cannot construct !!timestamp from '2020-01-01 10:00:00 +30': offset"),
    ):
        with pytest.raises(yaml.constructor.ConstructorError) as err:
            list(iter_documents(text))
        assert err.value.problem is not None and err.value.problem.startswith(problem)
        assert err.value.problem_mark is not None and err.value.problem_mark.line == 0


# ---------------------------------------------------------------- random streams

_PLAIN = [
    "yes", "No", "on", "OFF", "y", "~", "null", "1e3", "1.5e+3", "017", "0o17", "0x1F", "0b11", "1_000",
    "190:20:30", "-0", "+12", ".inf", "-.Inf", ".NaN", "2002-12-14", "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5", "2001-12-15T02:59:43.1Z", "plain text", "3.10.1", "100m", "500Mi", "=", "<<",
    "'yes'", "\"0x1F\"", "\"é ✓\"", "!!str 1", "!!int '7'", "!!float 3", "!!binary aGk=", "!!null ''", "",
]  # fmt: skip


@st.composite
def flow_documents(draw: st.DrawFn, merges: bool = True) -> str:
    """A flow-style document of random maps, sequences and tricky scalars, with anchors, aliases and
    (if `merges`) merge keys, some of them invalid, which the comparison covers as well."""
    anchors: list[str] = []

    def node(depth: int) -> str:
        choice = draw(st.integers(0, 9 if depth < 3 else 5))
        if choice <= 4:
            text = draw(st.sampled_from(_PLAIN))
        elif choice == 5:
            if not anchors:
                return draw(st.sampled_from(_PLAIN))
            return "*" + draw(st.sampled_from(anchors))
        elif choice <= 7:
            text = "[" + ", ".join(node(depth + 1) for _ in range(draw(st.integers(0, 3)))) + "]"
        else:
            pairs = []
            for _ in range(draw(st.integers(0, 4))):
                if merges and anchors and draw(st.integers(0, 4)) == 0:
                    merged = draw(st.lists(st.sampled_from(anchors), min_size=1, max_size=2))
                    value = "*" + merged[0] if len(merged) == 1 else "[" + ", ".join("*" + a for a in merged) + "]"
                    pairs.append(f"<<: {value}")
                else:
                    key = draw(st.sampled_from([p for p in _PLAIN if p not in ("", "<<")]))
                    pairs.append(f"{key}: {node(depth + 1)}")
            text = "{" + ", ".join(pairs) + "}"
        if draw(st.integers(0, 3)) == 0:
            name = f"a{len(anchors)}"
            anchors.append(name)
            return f"&{name} {text}"
        return text

    return node(0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(flow_documents(merges=False), min_size=1, max_size=4))
def test_random_streams_match_safe_loader(docs: list[str]) -> None:
    assert_same_as_reference("".join(f"--- {d}\n" for d in docs))


def merge_model(text: str) -> tuple[str, Any]:
    """Our merge rule written plainly over PyYAML's composed nodes (composition is not what changed
    between PyYAML releases; construction of merges is): scalars as SafeConstructor builds them, merged
    mappings first with the earliest winning, then the mapping's own keys, the last of those winning."""
    loader = yaml.SafeLoader("")

    def build(node: Any, memo: dict[int, Any]) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_object(node, deep=True)
        if id(node) in memo:
            return memo[id(node)]
        if isinstance(node, yaml.SequenceNode):
            out_list: list[Any] = []
            memo[id(node)] = out_list
            out_list.extend(build(n, memo) for n in node.value)
            return out_list
        out: dict[Any, Any] = {}
        memo[id(node)] = out
        merged: dict[Any, Any] = {}
        for k, v in node.value:
            if k.tag == "tag:yaml.org,2002:merge":
                sources = [v] if isinstance(v, yaml.MappingNode) else v.value
                if not isinstance(v, yaml.MappingNode | yaml.SequenceNode) or not all(
                    isinstance(n, yaml.MappingNode) for n in sources
                ):
                    raise yaml.constructor.ConstructorError(None, None, "bad merge", None)
                for src in sources:
                    for key, value in build(src, memo).items():
                        merged.setdefault(key, value)
        out.update(merged)
        for k, v in node.value:
            if k.tag != "tag:yaml.org,2002:merge":
                key = "=" if k.tag == "tag:yaml.org,2002:value" else build(k, memo)
                out[key] = build(v, memo)
        return out

    try:
        return "ok", [None if n is None else build(n, {}) for n in yaml.compose_all(text, Loader=yaml.SafeLoader)]
    except yaml.YAMLError:
        return "error", None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(flow_documents(), min_size=1, max_size=4))
def test_random_merges_follow_our_rule(docs: list[str]) -> None:
    text = "".join(f"--- {d}\n" for d in docs)
    expected = merge_model(text)
    got = outcome(iter_documents(text, workers=1))
    assert (got[0] == "ok") == (expected[0] == "ok"), (got, expected)
    if got[0] == "ok":
        assert same(got[1], expected[1]), (got[1], expected[1])


MERGES = "one: &one {a: 1, b: 1}\ntwo: &two {b: 2, c: 2}\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("m: {<<: *one, a: 9}", {"a": 9, "b": 1}),
        ("m: {<<: [*one, *two], d: 4}", {"a": 1, "b": 1, "c": 2, "d": 4}),
        ("m: {<<: [*two, *one]}", {"b": 2, "c": 2, "a": 1}),
        ("m:\n  <<: {z: 0}\n  <<: *two", {"z": 0, "b": 2, "c": 2}),
        ("n: &n {<<: *one, q: 1}\nm: {<<: *n, a: 5}", {"a": 5, "b": 1, "q": 1}),
        ("m: {d: 4, <<: *one, a: 7}", {"a": 7, "b": 1, "d": 4}),
        ("m: &m {a: 1, <<: *m}", {"a": 1}),
        ("m: {<<: *one, x: !!set {s}}", {"a": 1, "b": 1, "x": {"s"}}),  # SafeConstructor builds this one
    ],
)
def test_merge_keys_by_our_rule(text: str, expected: dict[str, Any]) -> None:
    """Own keys win over merged ones, an earlier merged mapping over a later one; merged keys come first,
    in the order they first appear: the same with every PyYAML release."""
    doc = next(iter_documents(MERGES + text + "\n", workers=1))
    assert list(doc["m"].items()) == list(expected.items())


# ---------------------------------------------------------------- duplicate keys and alias bombs


@pytest.mark.parametrize("fallback", ["", "z: !!set {s}\n"], ids=["fast", "safeconstructor"])
def test_duplicate_keys_are_reported_with_path_and_line(fallback: str) -> None:
    text = (
        "kind: Pod\nspec:\n  containers:\n  - name: c\n    resources:\n"
        "      requests: {cpu: 1, memory: 1Gi, cpu: 2}\n  nodeName: a\n  nodeName: b\n" + fallback
    )
    doc = next(iter_documents(text, workers=1))
    assert isinstance(doc, Flagged)
    assert doc.data["spec"]["nodeName"] == "b"
    assert doc.data["spec"]["containers"][0]["resources"]["requests"] == {"cpu": 2, "memory": "1Gi"}
    assert doc.duplicates == (
        DuplicateKey("spec.containers[0].resources.requests.cpu", "cpu", 6),
        DuplicateKey("spec.nodeName", "nodeName", 8),
    )


def test_keys_overriding_merged_ones_are_not_duplicates() -> None:
    doc = next(iter_documents(MERGES + "m: {<<: [*one, *two], a: 3}\n", workers=1))
    assert not isinstance(doc, Flagged)


def bomb(levels: int, width: int = 9) -> str:
    lines = ["kind: ConfigMap", "data:", '  x0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"  x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("fallback", ["", "z: !!set {s}\n"], ids=["fast", "safeconstructor"])
def test_alias_bombs_are_refused_as_go_yaml_refuses_them(fallback: str) -> None:
    with pytest.raises(yaml.YAMLError, match="document contains excessive aliasing"):
        list(iter_documents(bomb(9) + fallback, workers=1))


def test_ordinary_aliases_are_fine() -> None:
    doc = next(iter_documents(bomb(3), workers=1))
    assert len(doc["data"]["x2"]) == 9


# ---------------------------------------------------------------- split across processes


def pods(n: int, start: int = 0) -> list[str]:
    return [
        f"kind: Pod\nmetadata: {{name: p{i}, labels: {{ok: yes}}}}\nspec:\n  priority: {i}\n"
        f"  containers: [{{name: c, resources: {{requests: {{cpu: {i % 7}00m}}}}}}]\n"
        for i in range(start, start + n)
    ]


@pytest.fixture
def forking() -> None:
    if not yamlstream._can_fork():
        pytest.skip("this process may not fork")


def split_at(monkeypatch: pytest.MonkeyPatch, fraction: float) -> list[list[int]]:
    """Make the split land at the first document start after `fraction` of the text; record the bounds."""
    used: list[list[int]] = []
    real = yamlstream._bounds

    def bounds(text: str, parts: int) -> list[int]:
        monkeypatch.setattr(yamlstream, "_FIRST_SHARE", fraction)
        used.append(real(text, parts))
        return used[-1]

    monkeypatch.setattr(yamlstream, "_bounds", bounds)
    return used


def test_split_stream_gives_the_same_documents(forking: None, monkeypatch: pytest.MonkeyPatch) -> None:
    used = split_at(monkeypatch, 0.4)
    text = "---\n".join(pods(1500)) + "--- &a {x: 1}\n---\n--- {<<: {y: 2}, z: 2001-12-14}\n"
    assert_same_as_reference(text, workers=2)
    assert len(used[0]) == 3


def test_split_stream_three_ways(forking: None, monkeypatch: pytest.MonkeyPatch) -> None:
    used = split_at(monkeypatch, 0.2)
    assert_same_as_reference("---\n".join(pods(2000)), workers=3)
    assert len(used[0]) == 4


@pytest.mark.parametrize(
    "tail",
    [
        "kind: Pod\nmetadata: {name: bad\n",  # malformed in the second part
        "kind: Pod\nmetadata: {name: x}\nspec: !!int abc\n",  # a constructor error there
        'kind: Pod\nmetadata:\n  name: "x\n---\ny"\n',  # a quoted scalar across a document marker
    ],
)
def test_error_in_second_part_is_the_serial_error(forking: None, monkeypatch: pytest.MonkeyPatch, tail: str) -> None:
    text = "---\n".join([*pods(800), tail, *pods(5, 900)])
    serial = outcome(iter_documents(text, workers=1))
    assert serial[0] != "ok"
    used = split_at(monkeypatch, 0.3)
    assert outcome(iter_documents(text, workers=2)) == serial
    assert len(used[0]) == 3 and used[0][1] < text.index(tail)


def test_split_after_a_directive_falls_back(forking: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first part ends with a directive that belongs to the second: it fails, and the serial reread
    # must still give every document once.
    head = "---\n".join(pods(300))
    text = head + "...\n%YAML 1.1\n--- {a: 1}\n---\n" + "---\n".join(pods(300, 300))
    split_at(monkeypatch, len(head) / len(text))
    assert_same_as_reference(text, workers=2)


def test_a_dead_worker_falls_back(forking: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def die(*_: Any) -> None:
        import os

        os._exit(1)

    monkeypatch.setattr(yamlstream, "_worker", die)
    split_at(monkeypatch, 0.4)
    assert_same_as_reference("---\n".join(pods(500)), workers=2)


def test_no_split_without_a_document_start() -> None:
    assert yamlstream._bounds("a: 1\nb: 2\n" * 1000, 2) == [0, 10_000]


def test_small_streams_are_read_in_process() -> None:
    assert yamlstream._default_workers("a: 1\n") == 1


def test_same_datetimes_as_reference() -> None:
    [doc] = iter_documents("a: 2025-01-01T00:00:00+05:30\n")
    assert doc["a"].utcoffset() == dt.timedelta(hours=5, minutes=30)


def test_the_parser_is_freed_without_the_collector() -> None:
    # Loading runs with the collector paused: a reference cycle through the loader would keep the parser
    # and its copy of the text alive.
    was = gc.isenabled()
    gc.disable()
    try:
        loader = yamlstream.Loader("a: [1, yes]\n")
        assert loader.get_single_data() == {"a": [1, True]}
        ref = weakref.ref(loader)
        del loader
        assert ref() is None
    finally:
        if was:
            gc.enable()


@pytest.mark.parametrize("text", ["a: 1\n---\nb: [x, 2]\n", "a: &x {k: 1}\nb: {<<: *x, j: 2}\n", "a: !!set {x}\n"])
def test_the_parser_is_freed_after_a_stream_without_the_collector(text: str) -> None:
    # The fast constructor's functions call each other: that cycle must not keep the loader either.
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        assert list(iter_documents(text, workers=1)) == list(yaml.load_all(text, Loader=REFERENCE))
        assert not [o for o in gc.get_objects() if isinstance(o, yamlstream.Loader)]
    finally:
        if was:
            gc.enable()


def test_a_merged_mapping_with_duplicate_keys_merges_what_it_builds_to() -> None:
    # Found by test_random_merges_follow_our_rule: `=` sends the document down the slow path, where the merged
    # mapping's duplicate `No` once gave its first value instead of its last (the mapping builds to the last).
    text = "--- &a2 {yes: yes, yes: &a1 {yes: yes, No: yes, No: No, =: &a0 yes}, <<: *a1}\n"
    got = outcome(iter_documents(text, workers=1))
    assert got == merge_model(text)
    assert got[1][0][False] is False
