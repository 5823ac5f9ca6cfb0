"""Plugin results: Code and Status (k8s.io/kube-scheduler/framework, interface.go).

As upstream, success is `None`: the happy path allocates nothing. Helpers
below accept `Status | None` so callers never test for None themselves.
"""

from __future__ import annotations

from typing import ClassVar


class Code(int):
    """The outcome of a plugin call.

    SUCCESS: the plugin ran and the pod may proceed.
    ERROR: an internal error; the pod is retried with backoff, reason SchedulerError.
    UNSCHEDULABLE: the pod does not fit now, but preemption or a cluster change may help.
    UNSCHEDULABLE_AND_UNRESOLVABLE: the pod does not fit and preemption would not help
        (e.g. a node selector mismatch); preemption skips such nodes.
    WAIT: a Permit plugin asks the pod to wait (with a timeout).
    SKIP: PreFilter/PreScore say the plugin has nothing to do for this pod; its
        Filter/Score are then not run. Bind: the plugin does not bind this pod.
    PENDING: the pod waits for something outside the scheduler (no backoff penalty).

    An int with named constants rather than an IntEnum: CPython 3.11 reads an enum's
    members through EnumType.__getattr__, several times slower than a plain class
    attribute, and the scheduling path reads codes dozens of times per pod.
    """

    __slots__ = ()

    SUCCESS: ClassVar[Code]
    ERROR: ClassVar[Code]
    UNSCHEDULABLE: ClassVar[Code]
    UNSCHEDULABLE_AND_UNRESOLVABLE: ClassVar[Code]
    WAIT: ClassVar[Code]
    SKIP: ClassVar[Code]
    PENDING: ClassVar[Code]

    def __repr__(self) -> str:
        return f"<Code.{_CONSTANTS[self]}: {int(self)}>"


_CONSTANTS = ("SUCCESS", "ERROR", "UNSCHEDULABLE", "UNSCHEDULABLE_AND_UNRESOLVABLE", "WAIT", "SKIP", "PENDING")
Code.SUCCESS = Code(0)
Code.ERROR = Code(1)
Code.UNSCHEDULABLE = Code(2)
Code.UNSCHEDULABLE_AND_UNRESOLVABLE = Code(3)
Code.WAIT = Code(4)
Code.SKIP = Code(5)
Code.PENDING = Code(6)

_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}

_REJECTED = frozenset((Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING))


class Status:
    """A non-success result: a code, the reasons (joined by ', ' into the message), the plugin."""

    __slots__ = ("code", "error", "plugin", "reasons")

    def __init__(self, code: Code, *reasons: str, plugin: str = "", error: BaseException | None = None) -> None:
        self.code = code
        self.reasons: tuple[str, ...] = reasons
        self.plugin = plugin
        self.error = error
        if error is not None and not reasons:
            self.reasons = (str(error),)

    @classmethod
    def as_error(cls, err: BaseException | str, plugin: str = "") -> Status:
        """fwk.AsStatus: an Error status carrying the error's text."""
        if isinstance(err, str):
            err = RuntimeError(err)
        return cls(Code.ERROR, plugin=plugin, error=err)

    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        self.plugin = plugin
        return self

    def is_rejected(self) -> bool:
        return self.code in _REJECTED

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def __repr__(self) -> str:
        p = f", plugin={self.plugin}" if self.plugin else ""
        return f"Status({_CODE_NAMES[self.code]}, {self.message()!r}{p})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self.code == other.code and self.reasons == other.reasons

    def __hash__(self) -> int:
        return hash((self.code, self.reasons))


# The Skip a PreFilter or PreScore plugin answers for a pod it has nothing to do with: one shared object.
# The framework only reads a Skip's code (it never names the plugin on it), so sharing it is safe.
SKIP = Status(Code.SKIP)


def code_of(s: Status | None) -> Code:
    return Code.SUCCESS if s is None else s.code


def is_success(s: Status | None) -> bool:
    return s is None or s.code == Code.SUCCESS


def is_rejected(s: Status | None) -> bool:
    return s is not None and s.code in _REJECTED


def message_of(s: Status | None) -> str:
    return "" if s is None else s.message()


def code_name(code: Code) -> str:
    return _CODE_NAMES[code]


class SchedulingError(Exception):
    """An Error status raised through the scheduler loop (e.g. from a plugin)."""
