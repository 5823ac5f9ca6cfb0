"""Why a pod did not fit: NodeToStatus, Diagnosis and FitError (framework/types.go).

FitError.message() builds the text users search for:
"0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {k: v}. <PostFilter text>"
— the reasons of every node counted, formatted as "<count> <reason>" and sorted
as strings, exactly as upstream sorts them.
"""

from __future__ import annotations

from collections.abc import Iterator

from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
EXTENDER_NAME = "Extender"


class NodeToStatus:
    """Statuses of the nodes that failed, by name, plus one status for every node not listed."""

    __slots__ = ("absent", "statuses")

    def __init__(self, statuses: dict[str, Status] | None = None, absent: Status | None = None) -> None:
        self.statuses: dict[str, Status] = statuses if statuses is not None else {}
        self.absent = absent if absent is not None else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def get(self, name: str) -> Status:
        return self.statuses.get(name, self.absent)

    def set(self, name: str, status: Status) -> None:
        self.statuses[name] = status

    def __len__(self) -> int:
        return len(self.statuses)

    def items(self) -> Iterator[tuple[str, Status]]:
        return iter(self.statuses.items())

    def nodes_for_status_code(self, snapshot: Snapshot, code: Code) -> list[NodeInfo]:
        """Nodes whose status has `code` (absent ones too when the absent status has it), in snapshot order."""
        if self.absent.code == code:
            return [ni for ni in snapshot.nodes if self.get(ni.name).code == code]
        return [ni for ni in snapshot.nodes if (s := self.statuses.get(ni.name)) is not None and s.code == code]


class Diagnosis:
    __slots__ = ("node_to_status", "pending_plugins", "post_filter_msg", "pre_filter_msg", "unschedulable_plugins")

    def __init__(self) -> None:
        self.node_to_status = NodeToStatus()
        self.unschedulable_plugins: set[str] = set()
        self.pending_plugins: set[str] = set()
        self.pre_filter_msg = ""
        self.post_filter_msg = ""

    def add_plugin_status(self, s: Status) -> None:
        if not s.plugin:
            return
        if s.is_rejected():
            self.unschedulable_plugins.add(s.plugin)
        if s.code == Code.PENDING:
            self.pending_plugins.add(s.plugin)


def reasons_histogram(node_to_status: NodeToStatus, num_all_nodes: int) -> list[str]:
    counts: dict[str, int] = {}
    for _, st in node_to_status.items():
        for r in st.reasons:
            counts[r] = counts.get(r, 0) + 1
    missing = num_all_nodes - len(node_to_status)
    if missing > 0:
        for r in node_to_status.absent.reasons:
            counts[r] = counts.get(r, 0) + missing
    return sorted(f"{v} {k}" for k, v in counts.items())


class FitError(Exception):
    """The pod fits no node; `message()` is the FailedScheduling text."""

    def __init__(self, pod_key: str, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__(pod_key)
        self.pod_key = pod_key
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def message(self) -> str:
        d = self.diagnosis
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            hist = reasons_histogram(d.node_to_status, self.num_all_nodes)
            if hist:
                msg += " " + ", ".join(hist) + "."
        if d.post_filter_msg:
            msg += f" {d.post_filter_msg}"
        return msg

    def __str__(self) -> str:
        return self.message()
