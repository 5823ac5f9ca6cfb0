"""`kubesched serve` against hostile requests: refused as kube-apiserver v1.34.1 refuses them (texts
checked against it), and the server keeps serving. The API runs in process, on a thread of its own."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from tests.live.conftest import Api, make_pod, nodes_yaml

from kubesched.scenario import parse_scenario
from kubesched.serve import listwatch
from kubesched.serve.api import ApiServer
from kubesched.serve.body import MAX_BODY_BYTES, MAX_DEPTH
from kubesched.serve.cluster import ServedCluster
from kubesched.serve.server import load_cluster

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
PODS = "/api/v1/namespaces/default/pods"
YAML = "application/yaml"
JSON = "application/json"


@dataclass
class Answer:
    code: int
    body: Any
    warnings: list[str]


@dataclass
class Served:
    api: Api
    server: ApiServer

    def send(self, method: str, path: str, data: bytes | str, ctype: str = JSON) -> Answer:
        raw = data.encode() if isinstance(data, str) else data
        req = urllib.request.Request(self.api.url + path, data=raw, method=method)
        req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return Answer(resp.status, json.loads(resp.read()), resp.headers.get_all("Warning") or [])
        except urllib.error.HTTPError as err:
            return Answer(err.code, json.loads(err.read()), err.headers.get_all("Warning") or [])

    def alive(self) -> None:
        assert self.api.get(LEASES)["kind"] == "LeaseList"


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    cluster = ServedCluster()
    load_cluster(cluster, parse_scenario(nodes_yaml(1), "scenario.yaml"))
    cluster.store.deliver()
    server = ApiServer(cluster)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def start() -> tuple[web.AppRunner, int]:
        runner = web.AppRunner(server.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    runner, port = asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    try:
        yield Served(Api(f"http://127.0.0.1:{port}"), server)
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def lease(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name}, **extra}


def status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    st: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
    st["message"] = message
    st["reason"] = reason
    if details:
        st["details"] = details
    st["code"] = code
    return st


# ---------------------------------------------------------------- size


def _sized(name: str, size: int) -> bytes:
    """A Lease of exactly `size` bytes (JSON)."""
    base = json.dumps(lease(name, spec={"holderIdentity": ""}))
    body = base.replace('"holderIdentity": ""', '"holderIdentity": "' + "x" * (size - len(base)) + '"')
    assert len(body) == size
    return body.encode()


def test_bodies_over_3_mib_are_413(served: Served) -> None:
    too_large = status(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")
    assert served.send("POST", LEASES, _sized("big", MAX_BODY_BYTES + 1)).body == too_large
    assert served.send("POST", LEASES, _sized("edge", MAX_BODY_BYTES)).code == 201  # the limit itself is fine
    assert served.send("PUT", f"{LEASES}/edge", _sized("edge", MAX_BODY_BYTES + 1)).body == too_large
    patch = b'{"spec": {"holderIdentity": "' + b"x" * MAX_BODY_BYTES + b'"}}'
    answer = served.send("PATCH", f"{LEASES}/edge", patch, "application/merge-patch+json")
    assert answer.code == 413 and answer.body == too_large
    served.alive()


# ---------------------------------------------------------------- YAML


BOMB = "\n".join(
    [
        "apiVersion: coordination.k8s.io/v1",
        "kind: Lease",
        "metadata: {name: lol}",
        "spec:",
        '  x0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"  x{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)),
    ]
)


def test_yaml_alias_bomb_is_refused(served: Served) -> None:
    answer = served.send("POST", f"{LEASES}?fieldValidation=Strict", BOMB, YAML)
    message = "the object provided is unrecognized (must be of type Lease): yaml: document contains excessive aliasing"
    assert answer.body == status(400, "BadRequest", message)
    assert served.send("GET", f"{LEASES}/lol", b"").code == 404
    served.alive()


DUP_POD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: c
    image: pause
    resources:
      requests:
        cpu: 100m
        cpu: 200m
        memory: 1Mi
        memory: 2Mi
"""
YAML_DUPS = ['line 12: key "cpu" already set in map', 'line 14: key "memory" already set in map']


def test_yaml_duplicate_keys_follow_field_validation(served: Served) -> None:
    answer = served.send("POST", f"{PODS}?fieldValidation=Strict", DUP_POD.format(name="dup"), YAML)
    message = 'Pod in version "v1" cannot be handled as a Pod: strict decoding error: yaml: unmarshal errors:\n  '
    assert answer.body == status(400, "BadRequest", message + "\n  ".join(YAML_DUPS))
    warned = [f'299 - "{w}"'.replace('"cpu"', '\\"cpu\\"').replace('"memory"', '\\"memory\\"') for w in YAML_DUPS]
    for query, name, warnings in [
        ("?fieldValidation=Warn", "dup-warn", warned),
        ("", "dup-default", warned),  # the server's default is Warn
        ("?fieldValidation=Ignore", "dup-ignore", []),
    ]:
        answer = served.send("POST", PODS + query, DUP_POD.format(name=name), YAML)
        assert answer.code == 201 and answer.warnings == warnings, (query, answer)
        assert answer.body["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "200m", "memory": "2Mi"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [\n", "yaml: line 2: "),  # libyaml's words, close to go-yaml's (a port of it)
        ("- 1\n", "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type"),
        ("spec: {x: " + "[" * 5000 + "]" * 5000 + "}\n", "yaml: line 1: exceeded maximum nesting depth"),
        ("spec: {x: .inf}\n", "json: unsupported value: +Inf"),
        ("spec: {x: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "}\n", f"exceeded max depth of {MAX_DEPTH}"),
    ],
)
def test_yaml_that_cannot_be_an_object(served: Served, text: str, message: str) -> None:
    answer = served.send("POST", LEASES, text, YAML)
    assert answer.code == 400, answer
    assert answer.body["message"].startswith("the object provided is unrecognized (must be of type Lease): ")
    assert message in answer.body["message"]
    served.alive()


def test_yaml_values_become_json_values(served: Served) -> None:
    """As sigs.k8s.io/yaml converts them: keys become strings, timestamps and !!binary stay text, numbers
    past 64 bits become floats; the stored object can be listed."""
    text = (
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: typed}\n"
        "spec: {2: two, true: yes, t: 2002-12-14, b: !!binary aGVsbG8=, n: 123456789012345678901234567890}\n"
    )
    answer = served.send("POST", LEASES, text, YAML)
    assert answer.code == 201, answer
    spec = served.api.get(f"{LEASES}/typed")["spec"]
    assert spec == {"2": "two", "true": True, "t": "2002-12-14", "b": "hello", "n": 1.2345678901234568e29}
    served.alive()


# ---------------------------------------------------------------- JSON

DUP_JSON = (
    '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"jdup","name":"jdup2"},"spec":{"containers":'
    '[{"name":"c","image":"pause","resources":{"requests":{"cpu":"100m","cpu":"200m"}}}]}}'
)
JSON_DUPS = ['duplicate field "metadata.name"', 'duplicate field "spec.containers[0].resources.requests.cpu"']


def test_json_duplicate_keys_follow_field_validation(served: Served) -> None:
    answer = served.send("POST", f"{PODS}?fieldValidation=Strict", DUP_JSON)
    message = 'Pod in version "v1" cannot be handled as a Pod: strict decoding error: ' + ", ".join(JSON_DUPS)
    assert answer.body == status(400, "BadRequest", message)
    answer = served.send("POST", f"{PODS}?fieldValidation=Warn", DUP_JSON)
    assert answer.code == 201 and answer.body["metadata"]["name"] == "jdup2"  # the last value wins
    assert answer.warnings == ['299 - "' + w.replace('"', '\\"') + '"' for w in JSON_DUPS]
    # Keys compare as decoded ("ab" twice), and are printed as decoded.
    escaped = json.dumps(lease("esc"))[:-1] + r', "spec": {"a\u0062": 1, "ab": 2, "x\"y": 1, "x\"y": 2}}'
    answer = served.send("POST", f"{LEASES}?fieldValidation=Strict", escaped)
    assert answer.body["message"] == (
        'Lease in version "coordination.k8s.io/v1" cannot be handled as a Lease: strict decoding error: '
        'duplicate field "spec.ab", duplicate field "spec.x\\"y"'
    )


def test_bad_field_validation(served: Served) -> None:
    answer = served.send("POST", f"{PODS}?fieldValidation=strict", json.dumps(make_pod("fv")))
    cause = 'Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"'
    details = {
        "group": "meta.k8s.io",
        "kind": "CreateOptions",
        "causes": [{"reason": "FieldValueNotSupported", "message": cause, "field": "fieldValidation"}],
    }
    message = f'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: {cause}'
    assert answer.body == status(422, "Invalid", message, details)


@pytest.mark.parametrize("depth", [100_000, 1_000, MAX_DEPTH + 1])
def test_deep_json(served: Served, depth: int) -> None:
    """Refused however deep (orjson stops at 1024, our bound at MAX_DEPTH), and nothing deeper than answers
    can be written gets stored: a later list of the kind still works."""
    body = json.dumps(lease(f"deep{depth}"))[:-1] + ', "spec": {"x": ' + "[" * depth + "]" * depth + "}}"
    answer = served.send("POST", LEASES, body)
    assert answer.code == 400, answer
    prefix = (
        "the object provided is unrecognized (must be of type Lease): couldn't get version/kind; json parse error: "
    )
    assert answer.body["message"].startswith(prefix + "exceeded max depth")
    served.alive()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"apiVersion":', "unexpected end of data"),
        ("[1, 2]", "json: cannot unmarshal array into Go value of type struct"),
        ('"s"', "json: cannot unmarshal string into Go value of type struct"),
        ("", "unexpected end of JSON input"),
    ],
)
def test_json_that_cannot_be_an_object(served: Served, body: str, message: str) -> None:
    answer = served.send("POST", LEASES, body)
    assert answer.code == 400 and message in answer.body["message"], answer


# ---------------------------------------------------------------- patches


def test_patch_duplicates_and_bounds(served: Served) -> None:
    served.api.create(LEASES, lease("p"))
    dup = '{"metadata":{"labels":{"a":"1","a":"2"}}}'
    answer = served.send("PATCH", f"{LEASES}/p?fieldValidation=Strict", dup, "application/strategic-merge-patch+json")
    cause = (
        'Invalid value: "map[metadata:map[labels:map[a:2]]]": '
        'strict decoding error: duplicate field "metadata.labels.a"'
    )
    assert answer.body == status(
        422,
        "Invalid",
        f' "" is invalid: patch: {cause}',
        {"causes": [{"reason": "FieldValueInvalid", "message": cause, "field": "patch"}]},
    )
    answer = served.send("PATCH", f"{LEASES}/p?fieldValidation=Strict", dup, "application/merge-patch+json")
    assert answer.code == 422 and answer.body["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert answer.body["message"].endswith('": strict decoding error: duplicate field "metadata.labels.a"')
    answer = served.send("PATCH", f"{LEASES}/p?fieldValidation=Warn", dup, "application/merge-patch+json")
    assert answer.code == 200 and answer.warnings == ['299 - "duplicate field \\"metadata.labels.a\\""']
    assert answer.body["metadata"]["labels"] == {"a": "2"}
    ops = '[{"op": "add", "path": "/metadata/labels", "value": {"b": "1", "b": "2"}}]'
    answer = served.send("PATCH", f"{LEASES}/p?fieldValidation=Strict", ops, "application/json-patch+json")
    assert answer.code == 422 and answer.body["message"].endswith('duplicate field "metadata.labels.b"')

    jp = "application/json-patch+json"
    many = json.dumps([{"op": "test", "path": "/kind", "value": "Lease"}] * 10_001)
    assert served.send("PATCH", f"{LEASES}/p", many, jp).body == status(
        413,
        "RequestEntityTooLarge",
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001",
    )
    bomb = [{"op": "add", "path": "/metadata/annotations", "value": {"a": "x" * 1000}}]
    bomb += [{"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/c{i}"} for i in range(40)]
    answer = served.send("PATCH", f"{LEASES}/p", json.dumps(bomb), jp)
    assert answer.code == 422 and "Unable to copy" in answer.body["message"], answer
    assert served.send("PATCH", f"{LEASES}/p", '{"op": "add"}', jp).body == status(
        400,
        "BadRequest",
        "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
    )
    assert served.send("PATCH", f"{LEASES}/p", "[1]", jp).body["message"] == (
        "error decoding patch: json: cannot unmarshal number into Go value of type handlers.jsonPatchOp"
    )
    assert served.send("PATCH", f"{LEASES}/p", "[1]", "application/merge-patch+json").body["message"] == (
        "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"
    )
    odd = '{"$setElementOrder/conditions": 5, "$deleteFromPrimitiveList/finalizers": 7}'
    assert served.send("PATCH", f"{LEASES}/p", odd, "application/strategic-merge-patch+json").code == 200
    # Each patch within the bound, the object they make beyond it: refused, not stored.
    nested: Any = {}
    for _ in range(150):
        nested = {"a": nested}
    assert served.send("PATCH", f"{LEASES}/p", json.dumps({"spec": nested}), "application/merge-patch+json").code == 200
    deeper = [{"op": "add", "path": "/spec" + "/a" * 149, "value": json.loads("[" * 150 + "]" * 150)}]
    answer = served.send("PATCH", f"{LEASES}/p", json.dumps(deeper), jp)
    assert answer.body == status(400, "BadRequest", f"exceeded max depth of {MAX_DEPTH}")
    served.alive()


# ---------------------------------------------------------------- query parameters, lists, bugs


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("limit=abc", 'strconv.ParseInt: parsing "abc": invalid syntax'),
        ("limit=99999999999999999999", 'strconv.ParseInt: parsing "99999999999999999999": value out of range'),
        ("watch=1&timeoutSeconds=nan", 'strconv.ParseInt: parsing "nan": invalid syntax'),
    ],
)
def test_bad_numbers_in_the_query(served: Served, query: str, message: str) -> None:
    assert served.send("GET", f"{PODS}?{query}", b"").body == status(400, "BadRequest", message)


def test_continue_tokens_are_bounded(served: Served) -> None:
    for name in ("c1", "c2"):
        served.api.create(LEASES, lease(name))
    first = served.api.get(f"{LEASES}?limit=1")["metadata"]["continue"]
    for _ in range(listwatch.MAX_CONTINUES):
        served.api.get(f"{LEASES}?limit=1")
    assert len(served.server._snapshots) <= listwatch.MAX_CONTINUES
    assert served.send("GET", f"{LEASES}?limit=1&continue={first}", b"").code == 410


def test_a_bug_costs_one_request_a_500(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(served.server, "_list", broken)
    assert served.send("GET", PODS, b"").body == status(
        500, "InternalError", "Internal error occurred: boom", {"causes": [{"message": "boom"}]}
    )
    monkeypatch.undo()
    served.alive()


# ---------------------------------------------------------------- objects checked as the API server checks them


def _pod_json(name: str, **spec: Any) -> str:
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container], **spec}}
    return json.dumps(body)


def test_invalid_objects_are_refused_in_the_servers_words(served: Served) -> None:
    bad = json.loads(_pod_json("neg"))
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "-8"
    got = served.send("POST", PODS + "?fieldValidation=Strict", json.dumps(bad))
    assert (got.code, got.body["reason"]) == (422, "Invalid")
    assert got.body["message"] == (
        'Pod "neg" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value: "-8": '
        "must be greater than or equal to 0"
    )
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}},
        },
    }
    got = served.send("POST", "/apis/apps/v1/namespaces/default/replicasets", json.dumps(rs))
    assert got.code == 422
    message = 'ReplicaSet.apps "web" is invalid: spec.template.spec.containers[0].image: Required value'
    assert got.body["message"] == message
    served.alive()


def test_unknown_fields_follow_field_validation(served: Served) -> None:
    typo = _pod_json("typo", nodeSelectr={"disk": "ssd"})
    got = served.send("POST", PODS + "?fieldValidation=Strict", typo)
    assert (got.code, got.body["message"]) == (
        400,
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.nodeSelectr"',
    )
    got = served.send("POST", PODS, typo)  # the server's default is Warn
    assert got.code == 201 and "nodeSelectr" not in json.dumps(got.body)
    assert got.warnings == ['299 - "unknown field \\"spec.nodeSelectr\\""']
    got = served.send("POST", PODS + "?fieldValidation=Ignore", _pod_json("typo2", nodeSelectr={"a": "b"}))
    assert got.code == 201 and got.warnings == []


def test_wrong_types_are_refused_whatever_the_validation(served: Served) -> None:
    got = served.send("POST", PODS + "?fieldValidation=Ignore", _pod_json("typed", priority="high"))
    assert (got.code, got.body["message"]) == (
        400,
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field '
        "PodSpec.spec.priority of type int32",
    )


def test_unknown_top_level_fields_are_not_stored(served: Served) -> None:
    body = json.loads(_pod_json("top"))
    body["specs"] = {"x": 1}
    got = served.send("POST", PODS, json.dumps(body))
    assert got.code == 201 and "specs" not in got.body
    assert got.warnings == ['299 - "unknown field \\"specs\\""']
