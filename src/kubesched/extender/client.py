"""HTTPExtender (pkg/scheduler/extender.go): the scheduler's side of one configured extender.

Each verb is a POST of the extender/v1 JSON to `urlPrefix/verb`. An unset verb means the
extender does not take part in that step: Filter returns the nodes unchanged and Prioritize
scores every node 0 with weight 0, without any request, as upstream.

Filter returns NodeInfos, as the 1.34 Extender interface does: the caller's own NodeInfos when
the extender answers with NodeNames (nodeCacheCapable), or fresh NodeInfos built only from the
Node objects it sent back, without pods, image states or anything else the cache knows. Scoring
then sees those nodes empty; that is what the reference does, and the golden cases check it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.core import Container, Node, Pod
from kubesched.config.types import Extender
from kubesched.extender import wire
from kubesched.extender.gojson import GoJSONError, GoType, Unmarshaler, decode_first
from kubesched.extender.transport import Poster, TransportError, build_tls_context
from kubesched.framework.snapshot import Snapshot
from kubesched.framework.types import NodeInfo, PodInfo
from kubesched.preemption.evaluator import Victims


class ExtenderCallError(Exception):
    """An extender call that failed; str() is the reference's error text."""


@dataclass
class FilterReply:
    """What Filter returns: the nodes still feasible, and the failed ones with their reasons."""

    nodes: list[NodeInfo]
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)


class HTTPExtender:
    """One `extenders:` entry of the configuration, speaking HTTP."""

    def __init__(self, config: Extender) -> None:
        self.config = config
        self.url_prefix = config.url_prefix
        self.filter_verb = config.filter_verb
        self.prioritize_verb = config.prioritize_verb
        self.preempt_verb = config.preempt_verb
        self.bind_verb = config.bind_verb
        self.weight = config.weight
        self.node_cache_capable = config.node_cache_capable
        self.ignorable = config.ignorable
        self.managed_resources = frozenset(r.name for r in config.managed_resources)
        tls = build_tls_context(config)
        server_name = config.tls_config.server_name if config.tls_config else ""
        self.poster = Poster(config.http_timeout, tls, server_name)

    def __repr__(self) -> str:
        return f"HTTPExtender({self.url_prefix!r})"

    # ------------------------------------------------------------ capabilities

    def name(self) -> str:
        return self.url_prefix

    def is_ignorable(self) -> bool:
        return self.ignorable

    def supports_preemption(self) -> bool:
        return bool(self.preempt_verb)

    def is_binder(self) -> bool:
        return bool(self.bind_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.prioritize_verb)

    def is_filter(self) -> bool:
        return bool(self.filter_verb)

    def is_interested(self, pod: PodInfo | Pod) -> bool:
        """True without managed resources, else if a container or init container requests or limits one."""
        if not self.managed_resources:
            return True
        spec = _pod(pod).spec
        return self._has_managed(spec.containers) or self._has_managed(spec.init_containers)

    def _has_managed(self, containers: Sequence[Container]) -> bool:
        m = self.managed_resources
        return any(not m.isdisjoint(c.resources.requests) or not m.isdisjoint(c.resources.limits) for c in containers)

    # ------------------------------------------------------------ verbs

    def filter(self, pod: PodInfo | Pod, nodes: Sequence[NodeInfo]) -> FilterReply:
        if not self.filter_verb:
            return FilterReply(list(nodes))
        body = wire.extender_args(_pod(pod), [_node(ni) for ni in nodes], self.node_cache_capable)
        res = self._send(self.filter_verb, body, wire.EXTENDER_FILTER_RESULT)
        error = wire.field_of(res, "Error", "")
        if error:
            raise ExtenderCallError(error)
        names = wire.field_of(res, "NodeNames")
        node_list = wire.field_of(res, "Nodes")
        kept: list[NodeInfo] = []
        if self.node_cache_capable and names is not None:
            by_name = {ni.name: ni for ni in nodes}
            for name in names:
                ni = by_name.get(name)
                if ni is None:
                    raise ExtenderCallError(
                        f'extender "{self.url_prefix}" claims a filtered node "{name}" '
                        "which is not found in the input node list"
                    )
                kept.append(ni)
        elif node_list is not None:
            kept = [NodeInfo(self._node_from(item)) for item in wire.field_of(node_list, "items", [])]
        return FilterReply(
            kept,
            dict(wire.field_of(res, "FailedNodes", {})),
            dict(wire.field_of(res, "FailedAndUnresolvableNodes", {})),
        )

    def prioritize(self, pod: PodInfo | Pod, nodes: Sequence[NodeInfo]) -> tuple[list[tuple[str, int]], int]:
        """(host, score) pairs as the extender gave them, and this extender's weight."""
        if not self.prioritize_verb:
            return [(ni.name, 0) for ni in nodes], 0
        body = wire.extender_args(_pod(pod), [_node(ni) for ni in nodes], self.node_cache_capable)
        res = self._send(self.prioritize_verb, body, wire.HOST_PRIORITY_LIST)
        return wire.host_priorities(res), self.weight

    def process_preemption(
        self, pod: PodInfo | Pod, victims: Mapping[str, Victims], snapshot: Snapshot
    ) -> dict[str, Victims]:
        """Let the extender trim the candidates; its MetaVictims (UIDs) are mapped back to the node's pods."""
        if not self.supports_preemption():
            raise ExtenderCallError(
                f"preempt verb is not defined for extender {self.url_prefix} but run into ProcessPreemption"
            )
        plain = {n: ([pi.pod for pi in v.pods], v.num_pdb_violations) for n, v in victims.items()}
        body = wire.preemption_args(_pod(pod), plain, self.node_cache_capable)
        res = self._send(self.preempt_verb, body, wire.EXTENDER_PREEMPTION_RESULT)
        out: dict[str, Victims] = {}
        for node, meta in wire.field_of(res, "NodeNameToMetaVictims", {}).items():
            ni = snapshot.get(node)
            if ni is None or ni.node is None:
                raise ExtenderCallError(f'nodeinfo not found for node name "{node}"')
            pods = [self._victim(ni, wire.field_of(mp, "UID", "")) for mp in wire.field_of(meta, "Pods", [])]
            out[node] = Victims(pods, wire.field_of(meta, "NumPDBViolations", 0))
        return out

    def bind(self, pod: PodInfo | Pod, node: str) -> None:
        if not self.is_binder():
            raise ExtenderCallError("unexpected empty bindVerb in extender")
        meta = _pod(pod).metadata
        body = wire.binding_args(meta.name, meta.namespace, meta.uid, node)
        res = self._send(self.bind_verb, body, wire.EXTENDER_BINDING_RESULT)
        error = wire.field_of(res, "Error", "")
        if error:
            raise ExtenderCallError(error)

    # ------------------------------------------------------------ plumbing

    def _send(self, verb: str, body: bytes, result: GoType) -> Any:
        url = self.url_prefix.rstrip("/") + "/" + verb
        try:
            resp = self.poster.post(url, body)
        except TransportError as err:
            raise ExtenderCallError(str(err)) from None
        if resp.status != 200:
            raise ExtenderCallError(f"failed {verb} with extender at URL {url}, code {resp.status}")
        try:
            return Unmarshaler().run(decode_first(resp.body), result)
        except GoJSONError as err:
            raise ExtenderCallError(str(err)) from None

    def _node_from(self, item: Mapping[str, Any] | None) -> Node:
        try:
            return wire.decode_node(item or {})
        except ValueError as err:
            raise ExtenderCallError(str(err)) from None

    def _victim(self, ni: NodeInfo, uid: str) -> PodInfo:
        for pi in ni.pods:
            if pi.uid == uid:
                return pi
        raise ExtenderCallError(
            f"extender: {self.url_prefix} claims to preempt pod (UID: &{{{uid}}}) on node: {ni.name}, "
            "but the pod is not found on that node"
        )


def _pod(pod: PodInfo | Pod) -> Pod:
    return pod.pod if isinstance(pod, PodInfo) else pod


def _node(ni: NodeInfo) -> Node:
    if ni.node is None:
        raise ExtenderCallError(f"node {ni.name!r} has no Node object")
    return ni.node
