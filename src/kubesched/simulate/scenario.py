"""Scenario files: ordinary Kubernetes manifests, optionally headed by a `kind: Scenario` document.

(../shared/conformance/FORMAT.md.) Pods with spec.nodeName are already running;
the others are pending and are created, in document order, once the
simulation starts. Every error names the file, the object and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubesched.api.decode import KINDS, NAMESPACED, DecodeError, decode
from kubesched.errors import InputError

MODES = ("sequential", "batch")


@dataclass
class Manifest:
    kind: str
    obj: Any
    raw: Mapping[str, Any]
    index: int

    @property
    def ref(self) -> str:
        return object_ref(self.kind, self.obj.metadata.name, self.obj.metadata.namespace)


@dataclass
class Scenario:
    source: str
    description: str = ""
    mode: str = "sequential"
    config: Mapping[str, Any] | None = None
    extender: list[Any] = field(default_factory=list)
    graceful_termination: bool = False
    manifests: list[Manifest] = field(default_factory=list)

    def pending_pods(self) -> list[Manifest]:
        return [m for m in self.manifests if m.kind == "Pod" and not m.obj.spec.node_name]

    def objects(self) -> list[Manifest]:
        """Everything that exists before scheduling starts."""
        return [m for m in self.manifests if not (m.kind == "Pod" and not m.obj.spec.node_name)]


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    pass


def _yaml_error(source: str, err: yaml.YAMLError) -> InputError:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return InputError(source, f"malformed YAML: {where}{problem}")


def load_documents(text: str, source: str) -> list[Any]:
    try:
        return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except yaml.YAMLError as err:
        raise _yaml_error(source, err) from None


def object_ref(kind: str, name: str, namespace: str | None) -> str:
    """How errors name an object: "Pod default/web-1", "Node n1" (namespaced kinds default to "default")."""
    if namespace or kind in NAMESPACED:
        return f"{kind} {namespace or 'default'}/{name}"
    return f"{kind} {name}"


def _describe(raw: Mapping[str, Any], kind: str) -> str:
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        meta = {}
    return object_ref(kind, str(meta.get("name", "?")), meta.get("namespace"))


def parse_scenario(text: str, source: str) -> Scenario:
    docs = load_documents(text, source)
    sc = Scenario(source=source)
    for i, raw in enumerate(docs):
        if not isinstance(raw, Mapping):
            raise InputError(source, f"document {i + 1} is not a mapping")
        kind = raw.get("kind")
        if not isinstance(kind, str) or not kind:
            raise InputError(source, "missing kind", f"document {i + 1}", "kind")
        if kind == "Scenario":
            if i != 0:
                raise InputError(source, "the Scenario header must be the first document", f"document {i + 1}")
            _read_header(sc, raw)
            continue
        if kind not in KINDS:
            raise InputError(
                source, f"unknown kind {kind!r} (known: {', '.join(sorted(KINDS))})", _describe(raw, kind), "kind"
            )
        meta = raw.get("metadata")
        if not isinstance(meta, Mapping) or not meta.get("name"):
            raise InputError(source, "missing name", f"{kind} (document {i + 1})", "metadata.name")
        try:
            obj = decode(kind, raw)
        except DecodeError as err:
            raise InputError(source, err.message, _describe(raw, kind), err.field) from None
        sc.manifests.append(Manifest(kind, obj, raw, i))
    return sc


def _read_header(sc: Scenario, raw: Mapping[str, Any]) -> None:
    allowed = {"kind", "apiVersion", "description", "mode", "config", "extender", "gracefulTermination"}
    for key in raw:
        if key not in allowed:
            raise InputError(sc.source, f"unknown field {key!r}", "Scenario", str(key))
    mode = raw.get("mode", "sequential")
    if mode not in MODES:
        raise InputError(
            sc.source, f"unsupported value {mode!r}: supported values: sequential, batch", "Scenario", "mode"
        )
    sc.mode = mode
    sc.description = str(raw.get("description", ""))
    cfg = raw.get("config")
    if cfg is not None and not isinstance(cfg, Mapping):
        raise InputError(sc.source, "must be a KubeSchedulerConfiguration mapping", "Scenario", "config")
    sc.config = cfg
    ext = raw.get("extender") or []
    sc.extender = list(ext) if isinstance(ext, list) else [ext]
    sc.graceful_termination = bool(raw.get("gracefulTermination", False))


def load_scenario(path: str | Path) -> Scenario:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as err:
        raise InputError(str(p), f"cannot read: {err.strerror or err}") from None
    return parse_scenario(text, str(p))
