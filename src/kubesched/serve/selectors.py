"""Label and field selectors of list and watch requests."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Matcher = Callable[[dict[str, Any]], bool]


class SelectorError(ValueError):
    """A selector the server cannot parse (HTTP 400)."""


def _split(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


_SET = re.compile(r"^([^\s!=()]+)\s+(in|notin)\s+\((.*)\)$")
_EQ = re.compile(r"^([^\s!=]+)\s*(==|=|!=)\s*([^\s]*)$")


def label_matcher(text: str) -> Matcher:
    """labels.Parse: =, ==, !=, in, notin, exists, !exists."""
    tests: list[Callable[[dict[str, str]], bool]] = []
    for term in _split(text or ""):
        m = _SET.match(term)
        if m:
            key, op, vals = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",") if v.strip()}
            if op == "in":
                tests.append(lambda lb, k=key, vs=vals: lb.get(k) in vs)
            else:
                tests.append(lambda lb, k=key, vs=vals: lb.get(k) not in vs)
            continue
        m = _EQ.match(term)
        if m:
            key, op, val = m.groups()
            if op == "!=":
                tests.append(lambda lb, k=key, v=val: lb.get(k) != v)
            else:
                tests.append(lambda lb, k=key, v=val: lb.get(k) == v)
            continue
        if term.startswith("!") and re.match(r"^![^\s!=()]+$", term):
            tests.append(lambda lb, k=term[1:]: k not in lb)
        elif re.match(r"^[^\s!=()]+$", term):
            tests.append(lambda lb, k=term: k in lb)
        else:
            raise SelectorError(f"unable to parse requirement: {term!r}")

    def match(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(t(labels) for t in tests)

    return match


def field_value(obj: dict[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def field_matcher(text: str) -> Matcher:
    """fields.ParseSelector: key=value, key==value, key!=value, ANDed."""
    tests: list[Callable[[dict[str, Any]], bool]] = []
    for term in _split(text or ""):
        m = _EQ.match(term)
        if not m:
            raise SelectorError(f"invalid selector: {term!r}; can't understand it")
        key, op, val = m.groups()
        if op == "!=":
            tests.append(lambda o, k=key, v=val: field_value(o, k) != v)
        else:
            tests.append(lambda o, k=key, v=val: field_value(o, k) == v)
    return lambda obj: all(t(obj) for t in tests)
