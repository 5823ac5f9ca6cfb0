"""`kubesched snapshot`: a live cluster captured as a scenario file that simulate, explain and capacity accept.

It lists, through the API server, what the scheduler reads: Nodes, Pods (bound
and pending; finished pods are left out, as the scheduler's informer leaves
them out), PersistentVolumes and claims, StorageClasses, CSI drivers and nodes,
PodDisruptionBudgets, PriorityClasses, Namespaces, the owners whose selectors
feed the default topology spreading (Services, ReplicationControllers,
ReplicaSets, StatefulSets) and, when the cluster serves them, DRA's
DeviceClasses, ResourceSlices, ResourceClaims and their templates.

Each object is trimmed to what scheduling reads: no managedFields,
resourceVersion, uid, generation or timestamps; node status keeps capacity,
allocatable, conditions and images; pod status keeps phase, conditions,
nominatedNodeName, startTime and resource claim statuses. A pod's uid is kept
only when a ResourceClaim refers to it (reservedFor, owner), so that the claim
still names its pod. Objects are decoded as a scenario's are; one that does not
decode is left out with a warning on stderr.

The connection comes from a kubeconfig (the `kubernetes` package's loader,
through kubesched.live.kubeconfig), or the in-cluster service account; requests
go through the REST client `kubesched run` uses (kubesched.live.rest).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

import yaml

from kubesched.errors import InputError
from kubesched.live.kubeconfig import Connection, load_connection
from kubesched.live.resources import BY_KIND

PAGE_SIZE = 500
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

# Kinds in creation order (what others refer to first); the optional ones may not be served at all.
KINDS: tuple[tuple[str, bool], ...] = (
    ("Namespace", True),
    ("PriorityClass", True),
    ("StorageClass", True),
    ("CSIDriver", False),
    ("CSINode", False),
    ("CSIStorageCapacity", False),
    ("DeviceClass", False),
    ("PersistentVolume", True),
    ("Node", True),
    ("ResourceSlice", False),
    ("PersistentVolumeClaim", True),
    ("ResourceClaimTemplate", False),
    ("ResourceClaim", False),
    ("VolumeAttachment", False),
    ("Service", True),
    ("ReplicationController", True),
    ("ReplicaSet", True),
    ("StatefulSet", True),
    ("PodDisruptionBudget", True),
    ("Pod", True),
)

_NODE_STATUS = ("capacity", "allocatable", "conditions", "images")
_POD_STATUS = ("phase", "conditions", "nominatedNodeName", "startTime", "resourceClaimStatuses")
_CONDITION = ("type", "status", "reason", "message")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
    p.add_argument("--context", help="the kubeconfig context to use (default: its current context)")


# ---------------------------------------------------------------- fetching


Fetch = Callable[[str], Mapping[str, Any] | None]


def default_kubeconfig() -> str | None:
    """kubectl's choice: $KUBECONFIG (its first file), else ~/.kube/config when it exists."""
    env = os.environ.get("KUBECONFIG")
    if env:
        return env.split(os.pathsep)[0]
    home = os.path.expanduser("~/.kube/config")
    return home if os.path.exists(home) else None


def _reason_phrase(code: int) -> str:
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return ""


def _transport_reason(err: Exception, path: str) -> str:
    """The OS's words for a failed request, as urllib gave them ("[Errno 111] Connection refused"), where
    asyncio words a refused connect its own way ("Connect call failed (address)"); else the client's."""
    cause = err.__context__
    if isinstance(cause, OSError) and cause.errno and str(cause.strerror or "").startswith("Connect call failed"):
        return f"[Errno {cause.errno}] {os.strerror(cause.errno)}"
    return str(err).removeprefix(f"GET {path}: ")


class RestFetch:
    """GETs through the live REST client (kubesched.live.rest: pooled connections, the kubeconfig's
    credentials, rate limited as `kubesched run` is), each run to completion on a private event loop
    so that the snapshot itself stays plain sequential code."""

    def __init__(self, conn: Connection, timeout: float = 60.0) -> None:
        from kubesched.live.rest import RestClient

        self.server = conn.server
        self._loop = asyncio.new_event_loop()
        self._client = RestClient(conn, timeout=timeout)
        self._loop.run_until_complete(self._client.open())

    def __call__(self, path: str) -> Mapping[str, Any] | None:
        """The JSON at `path` (None on 404); any other failure is an InputError naming the server."""
        from kubesched.live.errors import ApiError

        try:
            code, body = self._loop.run_until_complete(self._client.request("GET", path))
        except ApiError as err:  # a transport failure (code 0)
            raise InputError(self.server, f"cannot reach the API server: {_transport_reason(err, path)}") from None
        if code == 404:
            return None
        if code >= 300:
            detail = body.decode(errors="replace")
            with contextlib.suppress(ValueError, AttributeError):
                detail = json.loads(detail).get("message", detail)
            message = f"GET {path}: {code} {_reason_phrase(code)}: {detail}".rstrip(": ")
            raise InputError(self.server, message)
        try:
            return json.loads(body)
        except ValueError as err:
            raise InputError(self.server, f"GET {path}: not JSON: {err}") from None

    def close(self) -> None:
        self._loop.run_until_complete(self._client.close())
        self._loop.run_until_complete(self._loop.shutdown_default_executor())  # the credentials' thread
        self._loop.close()


@contextlib.contextmanager
def http_fetch(kubeconfig: str | None, context: str | None) -> Iterator[tuple[Fetch, str]]:
    """A GET function for the cluster (None on 404) and the server's URL, closed on leaving."""
    try:
        import httptools  # noqa: F401 - the REST client's HTTP parser
        import kubernetes  # noqa: F401 - the kubeconfig loader
        import orjson  # noqa: F401 - the REST client's JSON
    except ImportError:
        raise InputError("snapshot", "needs the 'live' extra: pip install 'kubesched[live]'") from None
    fetch = RestFetch(load_connection(kubeconfig, context))
    try:
        yield fetch, fetch.server
    finally:
        fetch.close()


def list_all(get: Fetch, kind: str) -> list[dict[str, Any]] | None:
    """Every object of `kind` (paginated), or None when the server does not serve the kind."""
    r = BY_KIND[kind]
    path = r.collection_path()
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        query = {"limit": str(PAGE_SIZE)}
        if token:
            query["continue"] = token
        page = get(f"{path}?{urllib.parse.urlencode(query)}")
        if page is None:
            return None
        items.extend(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return items


# ---------------------------------------------------------------- trimming


def _meta(meta: Mapping[str, Any], keep_uid: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": meta.get("name", "")}
    if meta.get("namespace"):
        out["namespace"] = meta["namespace"]
    if keep_uid and meta.get("uid"):
        out["uid"] = meta["uid"]
    if meta.get("labels"):
        out["labels"] = dict(meta["labels"])
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    if annotations:
        out["annotations"] = annotations
    if meta.get("ownerReferences"):
        out["ownerReferences"] = list(meta["ownerReferences"])
    return out


def _conditions(conds: Any) -> list[dict[str, Any]]:
    return [{k: c[k] for k in _CONDITION if c.get(k)} for c in conds or []]


def trim(kind: str, obj: Mapping[str, Any], keep_uids: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The object as a scenario holds it: apiVersion, kind, trimmed metadata, and what scheduling reads."""
    meta = obj.get("metadata") or {}
    out: dict[str, Any] = {
        "apiVersion": BY_KIND[kind].group_version,
        "kind": kind,
        "metadata": _meta(meta, meta.get("uid") in keep_uids),
    }
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata", "status"):
            continue
        out[key] = value
    status = obj.get("status") or {}
    if kind == "Node":
        spec = {k: v for k, v in (obj.get("spec") or {}).items() if k in ("taints", "unschedulable")}
        if spec:
            out["spec"] = spec
        else:
            out.pop("spec", None)
        kept = {k: status[k] for k in _NODE_STATUS if status.get(k)}
        if "conditions" in kept:
            kept["conditions"] = [{"type": c.get("type"), "status": c.get("status")} for c in kept["conditions"]]
        out["status"] = kept
    elif kind == "Pod":
        kept = {k: status[k] for k in _POD_STATUS if status.get(k)}
        if "conditions" in kept:
            kept["conditions"] = _conditions(kept["conditions"])
        out["status"] = kept
    elif kind in ("Service", "ReplicationController", "ReplicaSet", "StatefulSet"):
        # The whole spec: the scheduler reads only the selector, but loading validates the rest as the
        # API server did (a Service's ports, a ReplicaSet's template). Status is left out above.
        pass
    elif kind == "PodDisruptionBudget" and status:
        out["status"] = {k: v for k, v in status.items() if k not in ("observedGeneration", "conditions")}
    elif kind in ("PersistentVolume", "PersistentVolumeClaim") and status:
        out["status"] = {k: v for k, v in status.items() if k not in ("conditions", "lastPhaseTransitionTime")}
    elif kind == "ResourceClaim" and status:
        out["status"] = dict(status)
    return out


def _claim_pod_uids(claims: list[dict[str, Any]]) -> frozenset[str]:
    uids: set[str] = set()
    for c in claims:
        for ref in (c.get("status") or {}).get("reservedFor") or []:
            if ref.get("uid"):
                uids.add(ref["uid"])
        for ref in (c.get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("kind") == "Pod" and ref.get("uid"):
                uids.add(ref["uid"])
    return frozenset(uids)


def _pod_order(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bound pods first; pending pods in the API server's list order.

    That is the order a scheduler starting now would queue them in (its informer lists them, then
    equal priorities keep their arrival order); creation times, with their one-second resolution,
    could not order pods created together anyway.
    """
    return sorted(pods, key=lambda p: 0 if (p.get("spec") or {}).get("nodeName") else 1)


def _keep_pod(p: Mapping[str, Any]) -> bool:
    """What the scheduler's informer would hold: no finished pods, no pending pods already being deleted."""
    phase = (p.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return False
    bound = bool((p.get("spec") or {}).get("nodeName"))
    return bound or not (p.get("metadata") or {}).get("deletionTimestamp")


# ---------------------------------------------------------------- the snapshot


def snapshot(get: Fetch, source: str, warn: Callable[[str], None]) -> list[dict[str, Any]]:
    """The scenario documents: a Scenario header, then every captured object in creation order."""
    import kubesched.api.resource  # noqa: F401 - registers the DRA kinds with the decoder
    from kubesched.api.decode import KINDS as DECODABLE
    from kubesched.api.decode import DecodeError, decode
    from kubesched.scenario import object_ref

    raw: dict[str, list[dict[str, Any]]] = {}
    for kind, required in KINDS:
        if kind not in DECODABLE:
            continue
        items = list_all(get, kind)
        if items is None:
            if required:
                raise InputError(source, f"the API server does not serve {BY_KIND[kind].collection_path()}")
            continue
        raw[kind] = items
    keep_uids = _claim_pod_uids(raw.get("ResourceClaim", []))
    raw["Pod"] = _pod_order([p for p in raw.get("Pod", []) if _keep_pod(p)])
    header = {
        "kind": "Scenario",
        "description": f"snapshot of {source} at {datetime.now(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}",
        # Every pending pod is in the cluster at once: they reach the scheduler together.
        "mode": "batch",
    }
    docs: list[dict[str, Any]] = [header]
    for kind, _ in KINDS:
        for obj in raw.get(kind, []):
            doc = trim(kind, obj, keep_uids)
            m = doc["metadata"]
            try:
                decode(kind, doc)
            except DecodeError as err:
                ref = object_ref(kind, m.get("name", "?"), m.get("namespace"))
                where = f" {err.field}:" if err.field else ""
                warn(f"warning: {source}: {ref}:{where} {err.message}: left out of the snapshot")
                continue
            docs.append(doc)
    return docs


def to_yaml(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False)


def iter_counts(docs: list[dict[str, Any]]) -> Iterator[tuple[str, int]]:
    counts: dict[str, int] = {}
    for d in docs[1:]:
        counts[d["kind"]] = counts.get(d["kind"], 0) + 1
    yield from counts.items()


def run(args: argparse.Namespace) -> int:
    with http_fetch(args.kubeconfig or default_kubeconfig(), args.context) as (get, server):
        docs = snapshot(get, server, lambda msg: print(msg, file=sys.stderr))
    sys.stdout.write(to_yaml(docs))
    summary = ", ".join(f"{n} {kind}" for kind, n in iter_counts(docs))
    print(f"captured {summary or 'nothing'} from {server}", file=sys.stderr)
    return 0
