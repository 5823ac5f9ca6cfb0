"""Structured logs: a message plus key/value pairs, as text (klog-like) or JSON lines.

Callers log with `extra={...}`; those keys become the structured fields.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

import orjson

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD}


class TextFormatter(logging.Formatter):
    """I1102 15:04:05.123456    1234 logger] "message" key="value" ..."""

    def format(self, record: logging.LogRecord) -> str:
        t = time.localtime(record.created)
        us = int((record.created % 1) * 1e6)
        head = f"{record.levelname[0]}{time.strftime('%m%d %H:%M:%S', t)}.{us:06d} {os.getpid():7d} {record.name}]"
        parts = [head, orjson.dumps(record.getMessage()).decode()]
        for k, v in _fields(record).items():
            parts.append(f"{k}={orjson.dumps(v, default=str).decode()}")
        if record.exc_info:
            parts.append("\n" + self.formatException(record.exc_info))
        return " ".join(parts)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        doc.update(_fields(record))
        if record.exc_info:
            doc["err"] = self.formatException(record.exc_info)
        return orjson.dumps(doc, default=str).decode()


def setup_logging(fmt: str = "text", verbosity: int = 0) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger("kubesched")
    root.handlers[:] = [handler]
    root.propagate = False
    root.setLevel(logging.DEBUG if verbosity >= 4 else logging.INFO)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
