"""What `kubesched explain` found, as plain data: rendered as tables or as docs/explain.md's JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.explain.claims import ClaimOnNode
from kubesched.explain.fixes import Fix
from kubesched.framework.status import Code, Status, code_name

SKIPPED = "Skip"  # the verdict of a filter its PreFilter said to skip (Code.SKIP)


def status_dict(st: Status | None) -> dict[str, Any]:
    if st is None:
        return {"code": code_name(Code.SUCCESS), "plugin": "", "reason": ""}
    return {"code": code_name(st.code), "plugin": st.plugin, "reason": st.message()}


@dataclass
class FilterVerdict:
    """One Filter plugin on one node: `code` is a Status code name, or "Skip"."""

    plugin: str
    code: str
    reason: str = ""
    first: bool = False  # the plugin upstream reports for this node (it stops at the first failure)

    def to_dict(self) -> dict[str, Any]:
        return {"plugin": self.plugin, "code": self.code, "reason": self.reason, "first": self.first}


@dataclass
class Victim:
    pod: str
    priority: int

    def to_dict(self) -> dict[str, Any]:
        return {"pod": self.pod, "priority": self.priority}


@dataclass
class NodePreemption:
    """Preemption's dry run on one node: the victims that would make the pod fit, or why none can."""

    possible: bool
    victims: list[Victim] = field(default_factory=list)
    pdb_violations: int = 0
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "possible": self.possible,
            "victims": [v.to_dict() for v in self.victims],
            "pdbViolations": self.pdb_violations,
            "reason": self.reason,
        }


@dataclass
class NodeReport:
    name: str
    examined: bool
    status: Status | None  # what upstream reports for the node (None: it passes every filter)
    filters: list[FilterVerdict] = field(default_factory=list)
    nominated_pods: list[str] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    preemption: NodePreemption | None = None
    claims: list[ClaimOnNode] | None = None  # the pod's ResourceClaims on this node (None: it has none)

    @property
    def feasible(self) -> bool:
        return self.status is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "examined": self.examined,
            "feasible": self.feasible,
            "status": status_dict(self.status),
            "filters": [f.to_dict() for f in self.filters],
            "nominatedPodsCounted": list(self.nominated_pods),
            "fixes": [f.to_dict() for f in self.fixes],
            "preemption": self.preemption.to_dict() if self.preemption is not None else None,
            "claims": [c.to_dict() for c in self.claims] if self.claims is not None else None,
        }


@dataclass
class PluginScore:
    raw: int
    normalized: int
    weighted: int

    def to_dict(self) -> dict[str, int]:
        return {"raw": self.raw, "normalized": self.normalized, "weighted": self.weighted}


@dataclass
class NodeScore:
    name: str
    plugins: dict[str, PluginScore]
    total: int

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "plugins": {k: v.to_dict() for k, v in self.plugins.items()}, "total": self.total}


@dataclass
class Sampling:
    """Which nodes the cycle examined (percentageOfNodesToScore, the rotating start, a nominated node)."""

    num_nodes: int
    candidates: int
    num_to_find: int
    percentage: int | None
    start_index: int
    examined: list[str]
    nominated_node: str = ""
    nominated_only: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "numNodes": self.num_nodes,
            "candidates": self.candidates,
            "numFeasibleToFind": self.num_to_find,
            "percentageOfNodesToScore": self.percentage,
            "startIndex": self.start_index,
            "examined": list(self.examined),
            "nominatedNode": self.nominated_node or None,
            "nominatedNodeOnly": self.nominated_only,
        }


@dataclass
class Preemption:
    """What DefaultPreemption's dry run would do for the pod (nothing is evicted by explain)."""

    eligible: bool
    message: str
    node: str = ""
    victims: list[Victim] = field(default_factory=list)
    pdb_violations: int = 0
    candidates: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "eligible": self.eligible,
            "message": self.message,
            "node": self.node or None,
            "victims": [v.to_dict() for v in self.victims],
            "pdbViolations": self.pdb_violations,
            "candidates": list(self.candidates),
        }


@dataclass
class Winner:
    node: str
    total: int | None
    tied: list[str]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "total": self.total, "tied": list(self.tied), "reason": self.reason}


@dataclass
class Capture:
    """The analysis of one scheduling attempt, made just before the cycle ran."""

    profile: str
    attempt: int
    pre_filter: Status | None
    skipped_filters: list[str]
    sampling: Sampling
    nodes: list[NodeReport]
    score_plugins: list[tuple[str, int]] = field(default_factory=list)
    skipped_scores: list[str] = field(default_factory=list)
    scores: list[NodeScore] = field(default_factory=list)
    preemption: Preemption | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class EarlierAttempt:
    """An attempt before the analysed one: what it decided, and what its preemption dry run found."""

    attempt: int
    node: str
    message: str
    preemption: Preemption | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "node": self.node or None,
            "message": self.message or None,
            "preemption": self.preemption.to_dict() if self.preemption is not None else None,
        }


@dataclass
class Outcome:
    status: str
    node: str | None
    nominated_node: str | None
    message: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "node": self.node,
            "nominatedNode": self.nominated_node,
            "message": self.message,
        }


@dataclass
class Explanation:
    pod: str
    outcome: Outcome
    capture: Capture | None
    winner: Winner | None = None
    earlier: list[EarlierAttempt] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The pod's ResourceClaims on the node it landed on (no devices when it did not land); None: no claims.
    claims: list[ClaimOnNode] | None = None

    def to_dict(self) -> dict[str, Any]:
        c = self.capture
        out: dict[str, Any] = {"pod": self.pod, "outcome": self.outcome.to_dict()}
        if c is None:
            out.update({"attempted": False, "notes": list(self.notes)})
            return out
        out.update(
            {
                "attempted": True,
                "profile": c.profile,
                "attempt": c.attempt,
                "earlierAttempts": [e.to_dict() for e in self.earlier],
                "preFilter": {**status_dict(c.pre_filter), "skippedFilters": list(c.skipped_filters)},
                "sampling": c.sampling.to_dict(),
                "nodes": [n.to_dict() for n in c.nodes],
                "scoring": {
                    "plugins": [{"name": n, "weight": w} for n, w in c.score_plugins],
                    "skippedPlugins": list(c.skipped_scores),
                    "nodes": [s.to_dict() for s in c.scores],
                },
                "winner": self.winner.to_dict() if self.winner is not None else None,
                "preemption": c.preemption.to_dict() if c.preemption is not None else None,
                "claims": [x.to_dict() for x in self.claims] if self.claims is not None else None,
                "notes": [*c.notes, *self.notes],
            }
        )
        return out
