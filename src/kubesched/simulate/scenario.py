"""Scenario files: ordinary Kubernetes manifests, optionally headed by a `kind: Scenario` document.

(../shared/conformance/FORMAT.md.) Pods with spec.nodeName are already running;
the others are pending and are created, in document order, once the
simulation starts. Every error names the file, the object and the field.

Documents are decoded as they are read (yamlstream reads them as PyYAML's
SafeLoader would), and a manifest's parsed mapping is not kept: for a large
scenario those mappings take several times the memory of the decoded objects.
`Manifest.raw` reads the text again the first time one is asked for. As before,
a YAML error anywhere is reported ahead of a bad manifest before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubesched.api.decode import KINDS, NAMESPACED, DecodeError, decode
from kubesched.collector import collector_paused
from kubesched.errors import InputError
from kubesched.simulate.yamlstream import Flagged, iter_documents

MODES = ("sequential", "batch")


class _RawSource:
    """The text a scenario came from, parsed again (once, for every manifest) when a `raw` is asked for."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._docs: list[Any] | None = None

    def document(self, index: int) -> Mapping[str, Any]:
        if self._docs is None:
            with collector_paused():
                self._docs = [_data(d) for d in iter_documents(self.text, workers=1) if d is not None]
        return self._docs[index]  # type: ignore[no-any-return]


class Manifest:
    """A decoded object; `index` is its position among the scenario's (non-empty) documents."""

    __slots__ = ("_raw", "_source", "index", "kind", "obj")

    def __init__(
        self,
        kind: str,
        obj: Any,
        raw: Mapping[str, Any] | None = None,
        index: int = 0,
        source: _RawSource | None = None,
    ) -> None:
        if raw is None and source is None:
            raise ValueError("a Manifest needs its raw mapping or the source to read it from")
        self.kind = kind
        self.obj = obj
        self.index = index
        self._raw = raw
        self._source = source

    @property
    def raw(self) -> Mapping[str, Any]:
        """The manifest as parsed from YAML."""
        if self._raw is None:
            self._raw = self._source.document(self.index)  # type: ignore[union-attr]  # set when raw is not
        return self._raw

    @property
    def ref(self) -> str:
        return object_ref(self.kind, self.obj.metadata.name, self.obj.metadata.namespace)

    def __repr__(self) -> str:
        return f"Manifest({self.kind!r}, {self.obj!r}, index={self.index})"


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


def _yaml_error(source: str, err: yaml.YAMLError) -> InputError:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return InputError(source, f"malformed YAML: {where}{problem}")


def load_documents(text: str, source: str) -> list[Any]:
    """The stream's non-empty documents, as yaml.load_all with the SafeLoader gives them."""
    try:
        with collector_paused():
            return [_data(d) for d in iter_documents(text) if d is not None]
    except yaml.YAMLError as err:
        raise _yaml_error(source, err) from None


def _data(doc: Any) -> Any:
    return doc.data if doc.__class__ is Flagged else doc


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


def parse_scenario(text: str, source: str, workers: int | None = None) -> Scenario:
    """The scenario in `text`; `workers` is how many processes may read the YAML (see iter_documents)."""
    sc = Scenario(source=source)
    raws = _RawSource(text)
    first_error: InputError | None = None
    i = 0
    try:
        with collector_paused():
            for raw in iter_documents(text, workers):
                if raw is None:
                    continue
                if first_error is None:
                    try:
                        _add_document(sc, raw, i, raws)
                    except InputError as err:
                        # Read on: malformed YAML further down is what a whole-file parse reports first.
                        first_error = err
                i += 1
    except yaml.YAMLError as err:
        raise _yaml_error(source, err) from None
    if first_error is not None:
        raise first_error
    return sc


def _add_document(sc: Scenario, raw: Any, i: int, raws: _RawSource) -> None:
    source = sc.source
    if raw.__class__ is Flagged:
        dup = raw.duplicates[0]
        kind = raw.data.get("kind") if isinstance(raw.data, Mapping) else None
        what = _describe(raw.data, kind) if isinstance(kind, str) and kind else f"document {i + 1}"
        raise InputError(source, f'line {dup.line}: key "{dup.key}" already set in map', what, dup.path)
    if not isinstance(raw, Mapping):
        raise InputError(source, f"document {i + 1} is not a mapping")
    kind = raw.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError(source, "missing kind", f"document {i + 1}", "kind")
    if kind == "Scenario":
        if i != 0:
            raise InputError(source, "the Scenario header must be the first document", f"document {i + 1}")
        _read_header(sc, raw)
        return
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
    sc.manifests.append(Manifest(kind, obj, None, i, raws))


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
    if cfg is not None:
        from kubesched.framework.registry import plugin_names, preload

        # Out-of-tree plugins may bring kinds of their own (e.g. PodGroup): known before the objects are read.
        preload(plugin_names(cfg))
    ext = raw.get("extender") or []
    sc.extender = list(ext) if isinstance(ext, list) else [ext]
    sc.graceful_termination = bool(raw.get("gracefulTermination", False))


def load_scenario(path: str | Path, workers: int | None = None) -> Scenario:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as err:
        raise InputError(str(p), f"cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise InputError(str(p), f"cannot read: not UTF-8 text ({err.reason} at byte {err.start})") from None
    return parse_scenario(text, str(p), workers)
