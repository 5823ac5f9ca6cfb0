"""Label and field selectors of list and watch requests."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
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


# One requirement each, its operands bound first (functools.partial), the labels or the object last.
def _label_in(key: str, values: set[str], labels: dict[str, str]) -> bool:
    return labels.get(key) in values


def _label_not_in(key: str, values: set[str], labels: dict[str, str]) -> bool:
    return labels.get(key) not in values


def _label_equals(key: str, value: str, labels: dict[str, str]) -> bool:
    return labels.get(key) == value


def _label_not_equals(key: str, value: str, labels: dict[str, str]) -> bool:
    return labels.get(key) != value


def _label_exists(key: str, labels: dict[str, str]) -> bool:
    return key in labels


def _label_absent(key: str, labels: dict[str, str]) -> bool:
    return key not in labels


def _field_equals(path: str, value: str, obj: dict[str, Any]) -> bool:
    return field_value(obj, path) == value


def _field_not_equals(path: str, value: str, obj: dict[str, Any]) -> bool:
    return field_value(obj, path) != value


def label_matcher(text: str) -> Matcher:
    """labels.Parse: =, ==, !=, in, notin, exists, !exists."""
    tests: list[Callable[[dict[str, str]], bool]] = []
    for term in _split(text or ""):
        m = _SET.match(term)
        if m:
            key, op, vals = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",") if v.strip()}
            if op == "in":
                tests.append(partial(_label_in, key, vals))
            else:
                tests.append(partial(_label_not_in, key, vals))
            continue
        m = _EQ.match(term)
        if m:
            key, op, val = m.groups()
            if op == "!=":
                tests.append(partial(_label_not_equals, key, val))
            else:
                tests.append(partial(_label_equals, key, val))
            continue
        if term.startswith("!") and re.match(r"^![^\s!=()]+$", term):
            tests.append(partial(_label_absent, term[1:]))
        elif re.match(r"^[^\s!=()]+$", term):
            tests.append(partial(_label_exists, term))
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
            tests.append(partial(_field_not_equals, key, val))
        else:
            tests.append(partial(_field_equals, key, val))
    return lambda obj: all(t(obj) for t in tests)
