"""klog's verbosity levels on Python's logging (k8s.io/klog/v2: `logger.V(n).Info(msg, kv...)`).

kube-scheduler logs every message at a verbosity and `-v N` shows those at N or
below: binds and unschedulable pods at 2, each attempt at 3, queue moves at 4 and
up. Here V(n) is the logging level INFO - n, so V(0) is INFO and V(10) DEBUG;
one `isEnabledFor` check decides, as klog's `V(n).Enabled()`, and handlers and
formatters see ordinary records. Messages, keys and levels are upstream's, so a
search through kubesched's logs finds what it finds in kube-scheduler's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

MAX_VERBOSITY = 10


def level(v: int) -> int:
    """The logging level of V(v)."""
    return logging.INFO - min(max(v, 0), MAX_VERBOSITY)


def verbosity(levelno: int) -> int | None:
    """V of an info record (None for warnings and errors)."""
    if levelno > logging.INFO:
        return None
    return min(logging.INFO - levelno, MAX_VERBOSITY)


def set_verbosity(logger: logging.Logger, v: int) -> None:
    """`-v v`: show V(0)..V(v) and every warning and error."""
    logger.setLevel(level(v))


def info(logger: logging.Logger, v: int, msg: str, **kv: Any) -> None:
    """`logger.V(v).Info(msg, kv...)`: nothing is built unless that verbosity is on."""
    lv = logging.INFO - v
    if logger.isEnabledFor(lv):
        logger.log(lv, msg, extra=kv)


def enabled(logger: logging.Logger, v: int) -> bool:
    return logger.isEnabledFor(logging.INFO - v)


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """klog.KObj: "namespace/name" in text logs, {"name", "namespace"} in JSON ones."""

    name: str
    namespace: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def kobj(key: str) -> ObjectRef:
    """The reference of an object key ("namespace/name", or a bare name for cluster-scoped objects)."""
    ns, _, name = key.rpartition("/")
    return ObjectRef(name, ns)
