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

import random
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import yaml

from kubesched.api.decode import NAMESPACED
from kubesched.api.intake import FieldValidation, IntakeError, Skip, admit, resolve_kind
from kubesched.api.validation.scheduling import check_global_default
from kubesched.cluster.admission import priority_refusal
from kubesched.collector import collector_paused
from kubesched.errors import InputError
from kubesched.progress import SILENT, Progress
from kubesched.scenario.jsonstream import JSONStreamError, iter_json_documents, looks_like_json
from kubesched.scenario.yamlstream import DuplicateKey, Flagged, iter_documents
from kubesched.workloads.expand import WORKLOAD_KINDS, children, note, workload_name
from kubesched.workloads.model import Cluster
from kubesched.workloads.naming import new_uid

MODES = ("sequential", "batch")


class _RawSource:
    """The text a scenario came from, parsed again (once, for every manifest) when a `raw` is asked for."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._docs: list[Any] | None = None

    def document(self, index: int) -> Mapping[str, Any]:
        if self._docs is None:
            with collector_paused(keep=True):
                self._docs = [_data(d) for d in _documents(self.text, 1) if d is not None]
        return self._docs[index]


@dataclass(frozen=True, slots=True)
class _RawPatch:
    """How a manifest's raw mapping differs from its document: an item of a List, a generated name."""

    item: int | None = None
    kind: str = ""
    api_version: str = ""
    name: str = ""


class Manifest:
    """A decoded object; `index` is its position among the scenario's (non-empty) documents."""

    __slots__ = ("_patch", "_raw", "_source", "after", "generated", "index", "kind", "obj", "workload")

    def __init__(
        self,
        kind: str,
        obj: Any,
        raw: Mapping[str, Any] | None = None,
        index: int = 0,
        source: _RawSource | None = None,
        patch: _RawPatch | None = None,
    ) -> None:
        if raw is None and source is None:
            raise ValueError("a Manifest needs its raw mapping or the source to read it from")
        self.kind = kind
        self.obj = obj
        self.index = index
        self._raw = raw
        self._source = source
        self._patch = patch
        # The workload (kind/name, e.g. deployment/web) whose controller made or owns this object.
        self.workload: str | None = None
        # A pod its StatefulSet creates only once this one (namespace/name) is running (OrderedReady).
        self.after: str | None = None
        # Made by a controller, not declared.
        self.generated = False

    @property
    def raw(self) -> Mapping[str, Any]:
        """The manifest as parsed from YAML (a List's item; with the name the API server generated)."""
        if self._raw is None:
            raw = self._source.document(self.index)  # type: ignore[union-attr]  # set when raw is not
            if self._patch is not None:
                raw = _patched(raw, self._patch)
            self._raw = raw
        return self._raw

    @property
    def ref(self) -> str:
        return object_ref(self.kind, self.obj.metadata.name, self.obj.metadata.namespace)

    def __repr__(self) -> str:
        return f"Manifest({self.kind!r}, {self.obj!r}, index={self.index})"


def _patched(raw: Mapping[str, Any], patch: _RawPatch) -> Mapping[str, Any]:
    if patch.item is not None:
        raw = raw["items"][patch.item]
    out = dict(raw)
    if patch.kind and not out.get("kind"):
        out["kind"] = patch.kind
    if patch.api_version and not out.get("apiVersion"):
        out["apiVersion"] = patch.api_version
    if patch.name:
        out["metadata"] = {**(out.get("metadata") or {}), "name": patch.name}
    return out


@dataclass
class Scenario:
    source: str
    description: str = ""
    mode: str = "sequential"
    config: Mapping[str, Any] | None = None
    extender: list[Any] = field(default_factory=list)
    graceful_termination: bool = False
    manifests: list[Manifest] = field(default_factory=list)
    # What the loader noticed and did not refuse, one line each ("note: ..." / "warning: ..."), for stderr.
    notes: list[str] = field(default_factory=list)

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


def parse_scenario(
    text: str,
    source: str,
    workers: int | None = None,
    validation: FieldValidation = FieldValidation.STRICT,
    seed: int = 0,
    existing: Scenario | None = None,
    progress: Progress = SILENT,
) -> Scenario:
    """The scenario in `text`, every object taken in as the API server would (kubesched.api.intake).

    `workers` is how many processes may read the YAML (see iter_documents); `validation` is kubectl's
    --validate level for unknown and duplicate fields; `seed` makes generated names (generateName);
    `existing`: a cluster already loaded whose objects admission sees (a pod file's PriorityClasses);
    `progress` is told how many documents are read (of an estimate: the YAML document separators).
    """
    loader = _Loader(Scenario(source=source), _RawSource(text), validation, seed)
    stage = progress.stage(f"reading {source}", _estimated_documents(text), "objects")
    if existing is not None:
        loader.classes.update((m.obj.metadata.name, m.obj) for m in existing.manifests if m.kind == "PriorityClass")
    first_error: InputError | None = None
    i = 0
    try:
        with collector_paused(keep=True):
            for raw in _documents(text, workers):
                if raw is None:
                    continue
                if first_error is None:
                    try:
                        loader.document(raw, i)
                    except InputError as err:
                        # Read on: malformed YAML further down is what a whole-file parse reports first.
                        first_error = err
                i += 1
                stage.update(i)
    except yaml.YAMLError as err:
        raise _yaml_error(source, err) from None
    except JSONStreamError as err:
        raise InputError(source, f"malformed JSON: {err}") from None
    finally:
        stage.finish()
    if first_error is not None:
        raise first_error
    return loader.finish()


def _estimated_documents(text: str) -> int | None:
    """About how many documents a YAML stream holds (None for JSON): enough for a progress bar."""
    if looks_like_json(text):
        return None
    return text.count("\n---") + (0 if text.startswith("---") else 1)


def _documents(text: str, workers: int | None) -> Iterator[Any]:
    """The stream's documents: JSON values when it starts as JSON does, else YAML documents."""
    return iter_json_documents(text) if looks_like_json(text) else iter_documents(text, workers)


_LIST_SUFFIX = "List"
# generateName's random suffix: utilrand.String's alphabet (no vowels, no look-alike digits).
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class _Loader:
    """One scenario being read: documents in, manifests and notes out."""

    def __init__(self, sc: Scenario, raws: _RawSource, validation: FieldValidation, seed: int) -> None:
        self.sc = sc
        self.raws = raws
        self.validation = validation
        self.rng = random.Random(seed)
        self.skipped: dict[tuple[str, str], list[Any]] = {}
        self.names: set[tuple[str, str, str]] = set()
        classes: dict[str, Any] = {}
        self.classes = classes  # PriorityClasses read so far, by name (this dict, updated in place)
        # The pods' admission, against the classes read so far (created before); no reference back to the
        # loader, which would make a cycle.
        self._pod_admission: Callable[[Any], str | None] = lambda pod: priority_refusal(pod, classes)

    def document(self, doc: Any, i: int) -> None:
        duplicates: tuple[DuplicateKey, ...] = ()
        if doc.__class__ is Flagged:
            doc, duplicates = doc.data, doc.duplicates
        if doc.__class__ is not dict and not isinstance(doc, Mapping):  # (isinstance of an ABC is slow)
            raise InputError(self.sc.source, "document is not a mapping", f"document {i + 1}")
        kind = doc.get("kind")
        if kind == "Scenario":
            if duplicates:
                dup = duplicates[0]
                message = f'line {dup.line}: key "{dup.key}" already set in map'
                raise InputError(self.sc.source, message, "Scenario", dup.path)
            if i != 0:
                raise InputError(self.sc.source, "the Scenario header must be the first document", f"document {i + 1}")
            _read_header(self.sc, doc)
            return
        if isinstance(kind, str) and kind.endswith(_LIST_SUFFIX) and "items" in doc:
            self.list_document(doc, i, duplicates)
            return
        self.manifest(doc, i, None, duplicates)

    def list_document(self, doc: Mapping[str, Any], i: int, duplicates: tuple[DuplicateKey, ...]) -> None:
        """`kind: List` (kubectl get -o yaml) or a typed list (PodList): its items, whose kind and
        apiVersion a typed list may leave out."""
        kind, api_version = str(doc["kind"]), doc.get("apiVersion")
        items = doc.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            message = "json: cannot unmarshal object into items of type []runtime.RawExtension"
            raise InputError(self.sc.source, message, kind, "items")
        item_kind = "" if kind == _LIST_SUFFIX else kind[: -len(_LIST_SUFFIX)]
        for j, item in enumerate(items):
            where = f"document {i + 1}, items[{j}]"
            if not isinstance(item, Mapping):
                raise InputError(self.sc.source, "list item is not a mapping", where)
            prefix = f"items[{j}]."
            item_dups = tuple(d._replace(path=d.path[len(prefix) :]) for d in duplicates if d.path.startswith(prefix))
            if item_kind:
                filled = {"kind": item_kind, "apiVersion": api_version, **item}
                patch = _RawPatch(j, item_kind, str(api_version or ""))
            else:
                filled, patch = dict(item), _RawPatch(j)
            self.manifest(filled, i, patch, item_dups, where)

    def manifest(
        self,
        raw: Mapping[str, Any],
        i: int,
        patch: _RawPatch | None,
        duplicates: tuple[DuplicateKey, ...],
        where: str | None = None,
        generated: bool = False,
    ) -> Manifest | None:
        """Take in one object; `where` it is, for errors (None: document i); `generated`: made by a controller
        (its raw mapping is kept, not re-read)."""
        source = self.sc.source
        try:
            resolved = resolve_kind(raw)
        except IntakeError as err:
            kind = raw.get("kind") if isinstance(raw.get("kind"), str) else None
            where = where or f"document {i + 1}"
            raise InputError(source, err.message, _describe(raw, kind) if kind else where, err.field) from None
        if isinstance(resolved, Skip):
            self.skipped.setdefault((resolved.kind, resolved.api_version), [resolved.why, 0])[1] += 1
            return None
        kind = resolved
        meta: Any = raw.get("metadata")
        is_map = meta.__class__ is dict or isinstance(meta, Mapping)  # (isinstance of an ABC is slow)
        if is_map and not meta.get("name") and isinstance(meta.get("generateName"), str):
            name = self.generate_name(kind, meta)
            raw = {**raw, "metadata": {**meta, "name": name}}
            patch = _RawPatch(patch.item, patch.kind, patch.api_version, name) if patch else _RawPatch(name=name)
        elif not is_map or not meta.get("name"):
            where = where or f"document {i + 1}"
            raise InputError(
                source, "Required value: name or generateName is required", f"{kind} ({where})", "metadata.name"
            )

        def warn(field_path: str, message: str) -> None:
            ref = _describe(raw, kind)  # named lazily: most objects have nothing to warn about
            self.sc.notes.append("warning: " + str(InputError(source, message, ref, field_path)))

        try:
            obj = admit(kind, raw, self.validation, warn, duplicates, self._pod_admission if kind == "Pod" else None)
        except IntakeError as err:
            raise InputError(source, err.message, _describe(raw, kind), err.field) from None
        if kind == "PriorityClass":
            # The Priority admission plugin: one globalDefault class at most.
            refused = check_global_default(obj, (m.obj for m in self.sc.manifests if m.kind == "PriorityClass"))
            if refused:
                raise InputError(source, refused, _describe(raw, kind))
            self.classes[obj.metadata.name] = obj
        m = Manifest(kind, obj, dict(raw), i) if generated else Manifest(kind, obj, None, i, self.raws, patch)
        m.generated = generated
        self.sc.manifests.append(m)
        return m

    def generate_name(self, kind: str, meta: Mapping[str, Any]) -> str:
        """The API server's SimpleNameGenerator: the prefix (at most 58 characters) and 5 random ones."""
        base = str(meta["generateName"])[:58]
        namespace = str(meta.get("namespace") or "")
        while True:
            name = base + "".join(self.rng.choice(_NAME_ALPHABET) for _ in range(5))
            if (kind, namespace, name) not in self.names:
                self.names.add((kind, namespace, name))
                return name

    def run_controllers(self) -> None:
        """What the workloads' controllers create, each child right after its workload (see workloads/)."""
        declared = self.sc.manifests
        if not any(m.kind in WORKLOAD_KINDS for m in declared):
            return
        cluster = Cluster(
            rng=self.rng,
            pods=[m.obj for m in declared if m.kind == "Pod"],
            nodes=[m.obj for m in declared if m.kind == "Node"],
            claims={_ns_name(m.obj) for m in declared if m.kind == "PersistentVolumeClaim"},
        )
        self.sc.manifests = []
        for m in declared:
            self.sc.manifests.append(m)
            if m.kind in WORKLOAD_KINDS:
                self.expand(m, cluster)
        owners = {
            (m.kind, *_ns_name(m.obj)): m.workload or workload_name(m.kind, m.obj.metadata.name)
            for m in self.sc.manifests
            if m.kind in WORKLOAD_KINDS
        }
        for m in self.sc.manifests:
            if m.kind == "Pod" and m.workload is None:
                for ref in m.obj.metadata.owner_references:
                    if ref.controller:
                        m.workload = owners.get((ref.kind, _ns_name(m.obj)[0], ref.name))

    def expand(self, m: Manifest, cluster: Cluster, root: Manifest | None = None) -> None:
        """Create a workload's children (and theirs: a Deployment's ReplicaSet makes pods), all listed under the
        workload the user wrote (`root`); what the API server refuses of them is reported against it."""
        root = root or m
        workload = workload_name(root.kind, root.obj.metadata.name)
        why = note(m.kind, m.obj)
        if why is not None:
            self.sc.notes.append(f"note: {self.sc.source}: {m.ref}: {why}")
        meta = m.obj.metadata
        if not meta.uid:
            m.obj = msgspec.structs.replace(m.obj, metadata=msgspec.structs.replace(meta, uid=new_uid(self.rng)))
        for child in children(m.kind, m.obj, cluster):
            try:
                made = self.manifest(
                    child.raw, m.index, None, (), f"{child.kind} made by its controller", generated=True
                )
            except InputError as err:
                what = f"the {child.kind} its controller makes ({err.obj})" if err.obj else f"its {child.kind}"
                field = err.field
                if field and child.kind == "Pod":
                    base = "spec.jobTemplate.spec.template" if root.kind == "CronJob" else "spec.template"
                    field = f"{base}.{field}"
                raise InputError(self.sc.source, f"{what} is refused: {err.message}", root.ref, field) from None
            if made is None:
                continue
            made.workload = workload
            made.after = child.after
            if made.kind in WORKLOAD_KINDS:
                self.expand(made, cluster, root)

    def finish(self) -> Scenario:
        self.run_controllers()
        sc = self.sc
        for (kind, api_version), (why, count) in self.skipped.items():
            sc.notes.append(f"note: {sc.source}: skipped {count} {kind} ({api_version}): {why}")
        nodes = {m.obj.metadata.name for m in sc.manifests if m.kind == "Node"}
        for m in sc.manifests:
            if m.kind == "Pod" and m.obj.spec.node_name and m.obj.spec.node_name not in nodes:
                message = (
                    f'node "{m.obj.spec.node_name}" does not exist: the scheduler never sees the node, '
                    "so this pod counts nowhere"
                )
                sc.notes.append("warning: " + str(InputError(sc.source, message, m.ref, "spec.nodeName")))
        return sc


def _ns_name(obj: Any) -> tuple[str, str]:
    return obj.metadata.namespace or "default", obj.metadata.name


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


STDIN = "-"
STDIN_SOURCE = "STDIN"  # what kubectl calls standard input in its errors


def read_text(path: str | Path) -> tuple[str, str]:
    """The text of a file, or of standard input for "-", and the name errors give it."""
    if str(path) == STDIN:
        try:
            return sys.stdin.buffer.read().decode("utf-8"), STDIN_SOURCE
        except UnicodeDecodeError as err:
            raise InputError(STDIN_SOURCE, f"cannot read: not UTF-8 text ({err.reason} at byte {err.start})") from None
    p = Path(path)
    try:
        # Bytes then one decode: a text-mode read decodes chunk by chunk (a tenth of a second on 45 MB).
        text = p.read_bytes().decode("utf-8")
        if "\r" in text:  # line ends as text mode reads them (universal newlines)
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        return text, str(p)
    except IsADirectoryError:
        raise InputError(str(p), "cannot read: is a directory") from None
    except OSError as err:
        raise InputError(str(p), f"cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise InputError(str(p), f"cannot read: not UTF-8 text ({err.reason} at byte {err.start})") from None


def load_scenario(
    path: str | Path,
    workers: int | None = None,
    validation: FieldValidation = FieldValidation.STRICT,
    seed: int = 0,
    existing: Scenario | None = None,
    progress: Progress | None = None,
) -> Scenario:
    """A scenario file (YAML or JSON; "-" for standard input): see parse_scenario."""
    text, source = read_text(path)
    return parse_scenario(text, source, workers, validation, seed, existing, progress or SILENT)
