"""API errors: the server's Status object, mapped onto the errors the scheduler already knows.

404 becomes the store's NotFound (a KeyError, which preemption treats as "already
gone"), 409 the store's Conflict; everything else is an ApiError carrying the
HTTP code and the Status reason. str() of each is the Status message, as
client-go's StatusError prints it, so the scheduler's messages match upstream.
"""

from __future__ import annotations

from typing import Any

import msgspec
import orjson

from kubesched.cluster.store import Conflict, NotFound

# The reason of a transport failure where nothing listened (an API server down or restarting).
CONNECTION_REFUSED = "ConnectionRefused"


class ApiError(RuntimeError):
    """A non-2xx answer from the API server (or a transport failure, code 0)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def __str__(self) -> str:
        return self.message

    @property
    def retriable(self) -> bool:
        """util.Retriable: internal errors, unavailable servers, refused connections (not timeouts, not resets)."""
        return self.code in (500, 503) or self.reason == CONNECTION_REFUSED


def parse_status(body: bytes) -> dict[str, Any]:
    try:
        st = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        return {"message": body[:512].decode("utf-8", "replace")}
    return st if isinstance(st, dict) else {}


def error_for(code: int, body: bytes, kind: str = "", key: str = "") -> Exception:
    """The exception for an error answer: NotFound, Conflict or ApiError."""
    st = parse_status(body)
    message = str(st.get("message") or f"the server responded with HTTP {code}")
    reason = str(st.get("reason") or "")
    if code == 404:
        err = NotFound(kind or "object", key)
        err.args = (message,)
        return err
    if code == 409:
        c = Conflict(message)
        c.reason = reason  # type: ignore[attr-defined]
        return c
    return ApiError(code, reason, message)


def is_gone(code: int, status: dict[str, Any]) -> bool:
    """410 Gone / reason Expired: the resourceVersion is too old to watch from."""
    return code == 410 or status.get("code") == 410 or status.get("reason") in ("Expired", "Gone")


class Status(msgspec.Struct, rename="camel", omit_defaults=True):
    """metav1.Status: what the API server answers to a binding (201) or on an error."""

    kind: str = ""
    api_version: str = ""
    status: str = ""
    message: str = ""
    reason: str = ""
    code: int = 0


def decode_status(body: bytes) -> Status:
    try:
        return msgspec.json.decode(body, type=Status)
    except msgspec.DecodeError:
        return Status(status="Failure", message=body[:512].decode("utf-8", "replace"))
