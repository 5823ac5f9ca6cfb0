"""Why a pod did not fit: NodeToStatus, Diagnosis and FitError (framework/types.go).

FitError.message() builds the text users search for:
"0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {k: v}. <PostFilter text>"
— the reasons of every node counted, formatted as "<count> <reason>" and sorted
as strings, exactly as upstream sorts them.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from kubesched.framework.snapshot import Snapshot
from kubesched.framework.status import Code, Status
from kubesched.framework.types import NodeInfo

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
EXTENDER_NAME = "Extender"


class NodeToStatus:
    """Statuses of the nodes that failed, by name, plus one status for every node not listed.

    A filtering pass hands over its failures in bulk (`add_groups`: snapshot
    indices sharing one Status), kept as an index array over the snapshot's
    nodes; single statuses (`set`) go to a dict. Counting reasons and picking
    the nodes preemption may help then take a few array operations, not one
    step per node.
    """

    __slots__ = ("_dense", "_list", "_nodes", "_pos", "absent", "explicit")

    def __init__(self, statuses: dict[str, Status] | None = None, absent: Status | None = None) -> None:
        self.explicit: dict[str, Status] = statuses if statuses is not None else {}
        self.absent = absent if absent is not None else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        self._dense: np.ndarray | None = None  # snapshot index -> index into _list, -1 when none
        self._list: list[Status] = []
        self._nodes: list[NodeInfo] = []
        # name -> position in _nodes, built when first needed (NodeInfo.index moves when the snapshot is rebuilt).
        self._pos: dict[str, int] | None = None

    def add_groups(self, snapshot: Snapshot, groups: list[tuple[np.ndarray, Status]]) -> None:
        """Record `status` for every node of `idx` (snapshot indices), for each (idx, status) of `groups`."""
        if self._dense is None or self._nodes is not snapshot.nodes:
            self._materialize()
            self._dense = np.full(snapshot.num_nodes, -1, np.int32)
            self._list = []
            self._nodes = snapshot.nodes
            self._pos = None
        for idx, st in groups:
            self._dense[idx] = len(self._list)
            self._list.append(st)
        if self.explicit:
            for name in list(self.explicit):
                i = self._position(name)
                if i >= 0 and self._dense[i] >= 0:
                    del self.explicit[name]

    def _position(self, name: str) -> int:
        if self._pos is None:
            self._pos = {ni.name: i for i, ni in enumerate(self._nodes)}
        return self._pos.get(name, -1)

    def _materialize(self) -> None:
        """Move bulk statuses into the dict (when the snapshot's node list changed under them)."""
        if self._dense is None:
            return
        for i in np.flatnonzero(self._dense >= 0).tolist():
            self.explicit.setdefault(self._nodes[i].name, self._list[self._dense[i]])
        self._dense = None

    def _bulk_index(self, name: str) -> int:
        if self._dense is None:
            return -1
        i = self._position(name)
        return int(self._dense[i]) if i >= 0 else -1

    def get(self, name: str) -> Status:
        st = self.explicit.get(name)
        if st is not None:
            return st
        j = self._bulk_index(name)
        return self._list[j] if j >= 0 else self.absent

    def set(self, name: str, status: Status) -> None:
        if self._dense is not None:
            i = self._position(name)
            if i >= 0:
                self._dense[i] = -1
        self.explicit[name] = status

    def __len__(self) -> int:
        bulk = int(np.count_nonzero(self._dense >= 0)) if self._dense is not None else 0
        return bulk + len(self.explicit)

    def items(self) -> Iterator[tuple[str, Status]]:
        if self._dense is not None:
            nodes, lst, dense = self._nodes, self._list, self._dense
            for i in np.flatnonzero(dense >= 0).tolist():
                yield nodes[i].name, lst[dense[i]]
        yield from self.explicit.items()

    @property
    def statuses(self) -> dict[str, Status]:
        """Every listed node's status, by name (a copy)."""
        return dict(self.items())

    def reason_counts(self, num_all_nodes: int) -> dict[str, int]:
        """How many nodes give each reason, the unlisted ones counting the absent status."""
        counts: dict[str, int] = {}
        listed = len(self.explicit)
        if self._dense is not None:
            used = self._dense[self._dense >= 0]
            listed += len(used)
            for j, n in enumerate(np.bincount(used, minlength=len(self._list)).tolist()):
                if n:
                    for r in self._list[j].reasons:
                        counts[r] = counts.get(r, 0) + n
        for st in self.explicit.values():
            for r in st.reasons:
                counts[r] = counts.get(r, 0) + 1
        missing = num_all_nodes - listed
        if missing > 0:
            for r in self.absent.reasons:
                counts[r] = counts.get(r, 0) + missing
        return counts

    def nodes_for_status_code(self, snapshot: Snapshot, code: Code) -> list[NodeInfo]:
        """Nodes whose status has `code` (absent ones too when the absent status has it), in snapshot order."""
        n = snapshot.num_nodes
        by_name = self.explicit
        if self._dense is not None and self._nodes is snapshot.nodes:
            listed = self._dense >= 0
            codes = np.array([st.code == code for st in self._list] + [False], bool)
            mask = codes[np.where(listed, self._dense, len(self._list))]
        else:
            # Bulk statuses of another node list: go by name.
            listed = np.zeros(n, bool)
            mask = np.zeros(n, bool)
            by_name = dict(self.items())
        node_map = snapshot.node_map
        for name, st in by_name.items():
            ni = node_map.get(name)
            if ni is not None:
                listed[ni.index] = True
                mask[ni.index] = st.code == code
        if self.absent.code == code:
            mask |= ~listed
        nodes = snapshot.nodes
        return list(map(nodes.__getitem__, mask.nonzero()[0].tolist()))


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
    return sorted(f"{v} {k}" for k, v in node_to_status.reason_counts(num_all_nodes).items())


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
