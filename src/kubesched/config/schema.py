"""The v1 wire types and a strict JSON decoder with sigs.k8s.io/json's semantics.

kube-scheduler decodes the (YAML-converted) JSON into the Go types of
k8s.io/kube-scheduler/config/v1 with case-sensitive field matching, unknown
and duplicated fields collected as strict errors (with their full path), and
type mismatches reported as `json: cannot unmarshal ...`. The first type
mismatch is fatal and hides the strict errors. The Go type names below only
serve those messages.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from kubesched.gocompat.duration import DurationError, parse_duration
from kubesched.gocompat.jsonenc import go_float_literal
from kubesched.gocompat.strconv import go_quote, parse_int64


@dataclass(frozen=True)
class Scalar:
    kind: str  # int | float | bool | string | duration | bytes | raw
    go: str
    bits: int = 64


@dataclass(frozen=True)
class Ptr:
    elem: Any


@dataclass(frozen=True)
class Slice:
    elem: Any
    go: str


@dataclass(frozen=True)
class Map:
    elem: Any
    go: str


@dataclass(frozen=True)
class Struct:
    name: str  # reflect Name(), used in "Go struct field NAME.path"
    go: str  # reflect String(), used in "of type ..."
    fields: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


INT32 = Scalar("int", "int32", 32)
INT64 = Scalar("int", "int64", 64)
FLOAT32 = Scalar("float", "float32", 32)
BOOL = Scalar("bool", "bool")
STRING = Scalar("string", "string")
DURATION = Scalar("duration", "v1.Duration")
BYTES = Scalar("bytes", "[]uint8")
RAW = Scalar("raw", "runtime.RawExtension")
STRINGS = Slice(STRING, "[]string")
TYPE_META = {"apiVersion": STRING, "kind": STRING}


def named(go: str) -> Scalar:
    return Scalar("string", go)


# ---------------------------------------------------------------- core/v1 and meta/v1 pieces used by plugin args

LABEL_SELECTOR_REQUIREMENT = Struct(
    "LabelSelectorRequirement",
    "v1.LabelSelectorRequirement",
    {"key": STRING, "operator": named("v1.LabelSelectorOperator"), "values": STRINGS},
)
LABEL_SELECTOR = Struct(
    "LabelSelector",
    "v1.LabelSelector",
    {
        "matchLabels": Map(STRING, "map[string]string"),
        "matchExpressions": Slice(LABEL_SELECTOR_REQUIREMENT, "[]v1.LabelSelectorRequirement"),
    },
)
TOPOLOGY_SPREAD_CONSTRAINT = Struct(
    "TopologySpreadConstraint",
    "v1.TopologySpreadConstraint",
    {
        "maxSkew": INT32,
        "topologyKey": STRING,
        "whenUnsatisfiable": named("v1.UnsatisfiableConstraintAction"),
        "labelSelector": Ptr(LABEL_SELECTOR),
        "minDomains": Ptr(INT32),
        "nodeAffinityPolicy": Ptr(named("v1.NodeInclusionPolicy")),
        "nodeTaintsPolicy": Ptr(named("v1.NodeInclusionPolicy")),
        "matchLabelKeys": STRINGS,
    },
)
NODE_SELECTOR_REQUIREMENT = Struct(
    "NodeSelectorRequirement",
    "v1.NodeSelectorRequirement",
    {"key": STRING, "operator": named("v1.NodeSelectorOperator"), "values": STRINGS},
)
NODE_SELECTOR_TERM = Struct(
    "NodeSelectorTerm",
    "v1.NodeSelectorTerm",
    {
        "matchExpressions": Slice(NODE_SELECTOR_REQUIREMENT, "[]v1.NodeSelectorRequirement"),
        "matchFields": Slice(NODE_SELECTOR_REQUIREMENT, "[]v1.NodeSelectorRequirement"),
    },
)
NODE_SELECTOR = Struct(
    "NodeSelector", "v1.NodeSelector", {"nodeSelectorTerms": Slice(NODE_SELECTOR_TERM, "[]v1.NodeSelectorTerm")}
)
PREFERRED_SCHEDULING_TERM = Struct(
    "PreferredSchedulingTerm", "v1.PreferredSchedulingTerm", {"weight": INT32, "preference": NODE_SELECTOR_TERM}
)
NODE_AFFINITY = Struct(
    "NodeAffinity",
    "v1.NodeAffinity",
    {
        "requiredDuringSchedulingIgnoredDuringExecution": Ptr(NODE_SELECTOR),
        "preferredDuringSchedulingIgnoredDuringExecution": Slice(
            PREFERRED_SCHEDULING_TERM, "[]v1.PreferredSchedulingTerm"
        ),
    },
)

# ---------------------------------------------------------------- plugin args (kubescheduler.config.k8s.io/v1)

RESOURCE_SPEC = Struct("ResourceSpec", "v1.ResourceSpec", {"name": STRING, "weight": INT64})
SHAPE_POINT = Struct("UtilizationShapePoint", "v1.UtilizationShapePoint", {"utilization": INT32, "score": INT32})
SHAPE = Slice(SHAPE_POINT, "[]v1.UtilizationShapePoint")
RESOURCES = Slice(RESOURCE_SPEC, "[]v1.ResourceSpec")
SCORING_STRATEGY = Struct(
    "ScoringStrategy",
    "v1.ScoringStrategy",
    {
        "type": named("v1.ScoringStrategyType"),
        "resources": RESOURCES,
        "requestedToCapacityRatio": Ptr(
            Struct("RequestedToCapacityRatioParam", "v1.RequestedToCapacityRatioParam", {"shape": SHAPE})
        ),
    },
)

ARGS_KINDS: dict[str, Struct] = {
    "DefaultPreemptionArgs": Struct(
        "DefaultPreemptionArgs",
        "v1.DefaultPreemptionArgs",
        {**TYPE_META, "minCandidateNodesPercentage": Ptr(INT32), "minCandidateNodesAbsolute": Ptr(INT32)},
    ),
    "InterPodAffinityArgs": Struct(
        "InterPodAffinityArgs",
        "v1.InterPodAffinityArgs",
        {**TYPE_META, "hardPodAffinityWeight": Ptr(INT32), "ignorePreferredTermsOfExistingPods": BOOL},
    ),
    "NodeResourcesFitArgs": Struct(
        "NodeResourcesFitArgs",
        "v1.NodeResourcesFitArgs",
        {
            **TYPE_META,
            "ignoredResources": STRINGS,
            "ignoredResourceGroups": STRINGS,
            "scoringStrategy": Ptr(SCORING_STRATEGY),
        },
    ),
    "PodTopologySpreadArgs": Struct(
        "PodTopologySpreadArgs",
        "v1.PodTopologySpreadArgs",
        {
            **TYPE_META,
            "defaultConstraints": Slice(TOPOLOGY_SPREAD_CONSTRAINT, "[]v1.TopologySpreadConstraint"),
            "defaultingType": named("v1.PodTopologySpreadConstraintsDefaulting"),
        },
    ),
    "NodeResourcesBalancedAllocationArgs": Struct(
        "NodeResourcesBalancedAllocationArgs",
        "v1.NodeResourcesBalancedAllocationArgs",
        {**TYPE_META, "resources": RESOURCES},
    ),
    "VolumeBindingArgs": Struct(
        "VolumeBindingArgs", "v1.VolumeBindingArgs", {**TYPE_META, "bindTimeoutSeconds": Ptr(INT64), "shape": SHAPE}
    ),
    "NodeAffinityArgs": Struct(
        "NodeAffinityArgs", "v1.NodeAffinityArgs", {**TYPE_META, "addedAffinity": Ptr(NODE_AFFINITY)}
    ),
    "DynamicResourcesArgs": Struct(
        "DynamicResourcesArgs", "v1.DynamicResourcesArgs", {**TYPE_META, "filterTimeout": Ptr(DURATION)}
    ),
}

# ---------------------------------------------------------------- KubeSchedulerConfiguration

PLUGIN = Struct("Plugin", "v1.Plugin", {"name": STRING, "weight": Ptr(INT32)})
PLUGIN_SET = Struct(
    "PluginSet",
    "v1.PluginSet",
    {"enabled": Slice(PLUGIN, "[]v1.Plugin"), "disabled": Slice(PLUGIN, "[]v1.Plugin")},
)
# v1 field names of the extension points, in the order of the v1 Plugins struct.
EXTENSION_POINTS_V1 = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "multiPoint",
)
PLUGINS = Struct("Plugins", "v1.Plugins", {name: PLUGIN_SET for name in EXTENSION_POINTS_V1})
PLUGIN_CONFIG = Struct("PluginConfig", "v1.PluginConfig", {"name": STRING, "args": RAW})
PROFILE = Struct(
    "KubeSchedulerProfile",
    "v1.KubeSchedulerProfile",
    {
        "schedulerName": Ptr(STRING),
        "percentageOfNodesToScore": Ptr(INT32),
        "plugins": Ptr(PLUGINS),
        "pluginConfig": Slice(PLUGIN_CONFIG, "[]v1.PluginConfig"),
    },
)
EXTENDER = Struct(
    "Extender",
    "v1.Extender",
    {
        "urlPrefix": STRING,
        "filterVerb": STRING,
        "preemptVerb": STRING,
        "prioritizeVerb": STRING,
        "weight": INT64,
        "bindVerb": STRING,
        "enableHTTPS": BOOL,
        "tlsConfig": Ptr(
            Struct(
                "ExtenderTLSConfig",
                "v1.ExtenderTLSConfig",
                {
                    "insecure": BOOL,
                    "serverName": STRING,
                    "certFile": STRING,
                    "keyFile": STRING,
                    "caFile": STRING,
                    "certData": BYTES,
                    "keyData": BYTES,
                    "caData": BYTES,
                },
            )
        ),
        "httpTimeout": DURATION,
        "nodeCacheCapable": BOOL,
        "managedResources": Slice(
            Struct(
                "ExtenderManagedResource",
                "v1.ExtenderManagedResource",
                {"name": STRING, "ignoredByScheduler": BOOL},
            ),
            "[]v1.ExtenderManagedResource",
        ),
        "ignorable": BOOL,
    },
)
LEADER_ELECTION = Struct(
    "LeaderElectionConfiguration",
    "v1alpha1.LeaderElectionConfiguration",
    {
        "leaderElect": Ptr(BOOL),
        "leaseDuration": DURATION,
        "renewDeadline": DURATION,
        "retryPeriod": DURATION,
        "resourceLock": STRING,
        "resourceName": STRING,
        "resourceNamespace": STRING,
    },
)
CLIENT_CONNECTION = Struct(
    "ClientConnectionConfiguration",
    "v1alpha1.ClientConnectionConfiguration",
    {"kubeconfig": STRING, "acceptContentTypes": STRING, "contentType": STRING, "qps": FLOAT32, "burst": INT32},
)
KUBE_SCHEDULER_CONFIGURATION = Struct(
    "KubeSchedulerConfiguration",
    "v1.KubeSchedulerConfiguration",
    {
        **TYPE_META,
        "parallelism": Ptr(INT32),
        "leaderElection": LEADER_ELECTION,
        "clientConnection": CLIENT_CONNECTION,
        # inlined DebuggingConfiguration
        "enableProfiling": Ptr(BOOL),
        "enableContentionProfiling": Ptr(BOOL),
        "percentageOfNodesToScore": Ptr(INT32),
        "podInitialBackoffSeconds": Ptr(INT64),
        "podMaxBackoffSeconds": Ptr(INT64),
        "profiles": Slice(PROFILE, "[]v1.KubeSchedulerProfile"),
        "extenders": Slice(EXTENDER, "[]v1.Extender"),
        "delayCacheUntilActive": BOOL,
    },
)

# ---------------------------------------------------------------- decoding


class FloatLit(float):
    """A JSON number that came with a literal (JSON input): Go decodes the literal text."""

    lit: str

    def __new__(cls, lit: str) -> FloatLit:
        obj = super().__new__(cls, float(lit))
        obj.lit = lit
        return obj


class Pairs(dict):
    """A JSON object from JSON text: keeps every (key, value) pair, duplicates included, in order."""

    pairs: list[tuple[str, Any]]


class FatalDecodeError(Exception):
    """A non-strict decoding error: kube-scheduler reports only this."""


_SKIP = object()  # "no effect": Go leaves the zero value (null into a non-pointer)


def _kind_of(v: Any) -> str:
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "bool"
    return "number"


def _number_literal(v: Any) -> str:
    if isinstance(v, FloatLit):
        return v.lit
    if isinstance(v, float):
        return go_float_literal(v)
    return str(v)


def _parse_go_int(lit: str) -> int | None:
    """strconv.ParseInt(lit, 10, 64) on a JSON number literal; None when it fails."""
    try:
        return parse_int64(lit)
    except ValueError:
        return None


_INT_RANGE = {32: (-(1 << 31), (1 << 31) - 1), 64: (-(1 << 63), (1 << 63) - 1)}
_FLOAT32_MAX = 3.4028234663852886e38


class StrictDecoder:
    """Decodes a JSON-like value against a schema type, like kjson.UnmarshalStrict.

    Returns a cleaned value: structs become dicts holding only the known fields
    that were given (a null for a pointer/slice/map field is kept as None, a null
    for any other field is dropped), durations become nanoseconds, bytes become
    latin-1 text.
    """

    def __init__(self, sort_keys: bool) -> None:
        self.sort_keys = sort_keys
        self.strict: list[str] = []
        self.saved: str | None = None

    # The strict path (".a.b[0].c") and the error-context field stack ("a.b.c").
    def decode(self, value: Any, t: Any) -> Any:
        out = self._value(value, t, [], [], "")
        if self.saved is not None:
            raise FatalDecodeError(self.saved)
        return out

    def _type_error(self, what: str, go: str, fstack: list[str], struct: str) -> str:
        if struct or fstack:
            return f"json: cannot unmarshal {what} into Go struct field {struct}.{'.'.join(fstack)} of type {go}"
        return f"json: cannot unmarshal {what} into Go value of type {go}"

    def _save(self, msg: str) -> None:
        if self.saved is None:
            self.saved = msg

    def _items(self, v: dict) -> list[tuple[str, Any]]:
        if isinstance(v, Pairs):
            return list(v.pairs)
        items = list(v.items())
        if self.sort_keys:
            items.sort(key=lambda kv: kv[0].encode("utf-8"))
        return items

    def _value(self, v: Any, t: Any, spath: list[str], fstack: list[str], struct: str) -> Any:
        if isinstance(t, Ptr):
            if v is None:
                return None
            return self._value(v, t.elem, spath, fstack, struct)
        if isinstance(t, Struct):
            if v is None:
                return _SKIP
            if not isinstance(v, dict):
                self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
                return _SKIP
            out: dict[str, Any] = {}
            seen: set[str] = set()
            for k, x in self._items(v):
                ft = t.fields.get(k)
                if ft is None:
                    self.strict.append(f"unknown field {go_quote(_join(spath, k))}")
                    continue
                if k in seen:
                    self.strict.append(f"duplicate field {go_quote(_join(spath, k))}")
                seen.add(k)
                r = self._value(x, ft, [*spath, ("." if spath else "") + k], [*fstack, k], t.name)
                if r is not _SKIP:
                    out[k] = r
            return out
        if isinstance(t, Slice):
            if v is None:
                return None
            if not isinstance(v, list):
                self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
                return _SKIP
            res = []
            for i, x in enumerate(v):
                r = self._value(x, t.elem, [*spath, f"[{i}]"], fstack, struct)
                res.append(_zero(t.elem) if r is _SKIP else r)
            return res
        if isinstance(t, Map):
            if v is None:
                return None
            if not isinstance(v, dict):
                self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
                return _SKIP
            res_m: dict[str, Any] = {}
            seen_m: set[str] = set()
            for k, x in self._items(v):
                if k in seen_m:
                    self.strict.append(f"duplicate field {go_quote(_join(spath, k))}")
                seen_m.add(k)
                r = self._value(x, t.elem, [*spath, ("." if spath else "") + k], [*fstack, k], struct)
                res_m[k] = _zero(t.elem) if r is _SKIP else r
            return res_m
        return self._scalar(v, t, fstack, struct)

    def _scalar(self, v: Any, t: Scalar, fstack: list[str], struct: str) -> Any:
        kind = t.kind
        if kind == "raw":
            return v
        if kind == "duration":
            # metav1.Duration.UnmarshalJSON: a JSON string parsed by time.ParseDuration; errors abort decoding.
            if v is None:
                v = ""
            if not isinstance(v, str):
                raise FatalDecodeError(self._type_error(_kind_of(v), "string", fstack, struct))
            try:
                return parse_duration(v)
            except DurationError as e:
                raise FatalDecodeError(str(e)) from None
        if v is None:
            return _SKIP
        if kind == "bytes":
            if not isinstance(v, str):
                self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
                return _SKIP
            try:
                return base64.b64decode(v, validate=True).decode("latin-1")
            except (binascii.Error, ValueError):
                self._save(f"illegal base64 data at input byte {_bad_base64_offset(v)}")
                return _SKIP
        if isinstance(v, (dict, list)) or (isinstance(v, str) and kind != "string"):
            self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
            return _SKIP
        if isinstance(v, bool):
            if kind == "bool":
                return v
            self._save(self._type_error("bool", t.go, fstack, struct))
            return _SKIP
        if kind == "string":
            if isinstance(v, str):
                return v
            self._save(self._type_error("number", t.go, fstack, struct))
            return _SKIP
        if kind == "bool":
            self._save(self._type_error(_kind_of(v), t.go, fstack, struct))
            return _SKIP
        lit = _number_literal(v)
        if kind == "int":
            n = _parse_go_int(lit)
            lo, hi = _INT_RANGE[t.bits]
            if n is None or not lo <= n <= hi:
                self._save(self._type_error("number " + lit, t.go, fstack, struct))
                return _SKIP
            return n
        # float32
        try:
            f = float(lit)
        except ValueError:
            f = float("inf")
        if abs(f) > _FLOAT32_MAX:
            self._save(self._type_error("number " + lit, t.go, fstack, struct))
            return _SKIP
        return f


def _join(spath: list[str], key: str) -> str:
    prefix = "".join(spath)
    return f"{prefix}.{key}" if prefix else key


def _zero(t: Any) -> Any:
    if isinstance(t, Struct):
        return {}
    if isinstance(t, (Ptr, Slice, Map)):
        return None
    return {"int": 0, "float": 0.0, "bool": False, "string": "", "duration": 0, "bytes": None, "raw": None}[t.kind]


def _bad_base64_offset(s: str) -> int:
    """The offset base64.StdEncoding reports for malformed input (first bad byte or padding problem)."""
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    for i, ch in enumerate(s):
        if ch in "\r\n":
            continue
        if ch not in alphabet:
            if ch == "=":
                return i
            return i
    return max(len(s) - (len(s) % 4), 0)
