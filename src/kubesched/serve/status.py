"""Error answers of `kubesched serve`: metav1.Status objects with upstream's codes, reasons and messages."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error answer: raised anywhere in a handler, sent as a Status with `code`."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    st: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 300 else "Failure",
    }
    if message:
        st["message"] = message
    if reason:
        st["reason"] = reason
    if details:
        st["details"] = details
    st["code"] = code
    return st
