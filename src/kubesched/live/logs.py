"""Structured logs: a message plus key/value pairs, as text (klog-like) or JSON lines.

Callers log with `extra={...}` (or `kubesched.klog.info`); those keys become the
structured fields. `-v N` works as klog's: info records of V(0)..V(N) are shown,
warnings and errors always. Text lines start with klog's severity letter (I, W,
E) whatever the V; JSON lines carry `"v": N` on info records, as klog's JSON
format does, and object references as {"name", "namespace"}.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

import orjson

from kubesched.klog import ObjectRef, set_verbosity, verbosity

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
_JSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD}


def _severity(levelno: int) -> str:
    if levelno >= logging.ERROR:
        return "E"
    return "W" if levelno >= logging.WARNING else "I"


def _json_default(v: Any) -> Any:
    if isinstance(v, ObjectRef):
        return {"name": v.name, "namespace": v.namespace} if v.namespace else {"name": v.name}
    return str(v)


def _text_value(v: Any) -> str:
    if isinstance(v, ObjectRef):
        v = str(v)
    return orjson.dumps(v, default=_json_default, option=_JSON_OPTIONS).decode()


class TextFormatter(logging.Formatter):
    """I1102 15:04:05.123456    1234 logger] "message" key="value" ..."""

    def format(self, record: logging.LogRecord) -> str:
        t = time.localtime(record.created)
        us = int((record.created % 1) * 1e6)
        stamp = time.strftime("%m%d %H:%M:%S", t)
        head = f"{_severity(record.levelno)}{stamp}.{us:06d} {os.getpid():7d} {record.name}]"
        parts = [head, orjson.dumps(record.getMessage()).decode()]
        for k, v in _fields(record).items():
            parts.append(f"{k}={_text_value(v)}")
        if record.exc_info:
            parts.append("\n" + self.formatException(record.exc_info))
        return " ".join(parts)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        v = verbosity(record.levelno)
        doc: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": "info" if v is not None else record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if v is not None:
            doc["v"] = v
        doc.update(_fields(record))
        if record.exc_info:
            doc["err"] = self.formatException(record.exc_info)
        return orjson.dumps(doc, default=_json_default, option=_JSON_OPTIONS).decode()


def setup_logging(fmt: str = "text", v: int = 0) -> None:
    """Logs of the `kubesched` loggers to stderr, in `fmt`, at klog verbosity `v`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger("kubesched")
    root.handlers[:] = [handler]
    root.propagate = False
    set_verbosity(root, v)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
