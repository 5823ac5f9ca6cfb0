"""Fault injection for tests (`kubesched serve --test-endpoints`).

A rule makes matching requests fail with a given HTTP code: by verb (get, list,
watch, create, update, patch, delete, bind, or *), resource plural (or *) and
optionally object name, for `count` requests (-1: until cleared). With
`after: true` the request is carried out first and its answer replaced by the
error — the nasty case of a write that happened although the client was told
it failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REASONS = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


@dataclass
class Rule:
    verb: str = "*"
    resource: str = "*"
    name: str = ""
    code: int = 500
    message: str = ""
    count: int = 1
    after: bool = False

    @property
    def reason(self) -> str:
        return REASONS.get(self.code, "")


class Faults:
    def __init__(self) -> None:
        self.rules: list[Rule] = []

    def add(self, spec: dict[str, Any]) -> Rule:
        rule = Rule(**{k: v for k, v in spec.items() if k in Rule.__dataclass_fields__})
        if not rule.message:
            rule.message = (
                f"Internal error occurred: injected fault ({rule.code})"
                if rule.code >= 500
                else (f"injected fault ({rule.code})")
            )
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        self.rules.clear()

    def match(self, verb: str, resource: str, name: str) -> Rule | None:
        for rule in self.rules:
            if rule.count == 0:
                continue
            if rule.verb not in ("*", verb) or rule.resource not in ("*", resource):
                continue
            if rule.name and rule.name != name:
                continue
            if rule.count > 0:
                rule.count -= 1
            return rule
        return None
