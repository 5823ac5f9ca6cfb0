"""A trace file's rows (CSV or JSON Lines) and their fields, read and checked: every error names the
file, the line and the field. Apart from building the trace, which these rows only feed."""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kubesched.api.core import Pod
from kubesched.api.decode import DecodeError, decode
from kubesched.cluster.clock import MAX_SECONDS
from kubesched.errors import InputError

FIELDS = ("time", "name", "template", "spec", "priorityClass", "duration")
REQUIRED = ("time", "name")

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def csv_rows(text: str, source: str) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) for each data row; comment and blank lines skipped."""
    lines = text.splitlines()
    kept: list[int] = []  # original line number of each line handed to the reader

    def feed() -> Iterator[str]:
        for i, raw in enumerate(lines, start=1):
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            kept.append(i)
            yield raw

    reader = csv.reader(feed())
    header: list[str] | None = None
    consumed = 0
    for row in reader:
        start = kept[consumed]
        consumed = reader.line_num
        cells = [c.strip() for c in row]
        if header is None:
            header = cells
            for col in header:
                if col not in FIELDS:
                    raise InputError(
                        source, f"unknown column {col!r} (columns: {', '.join(FIELDS)})", f"line {start}", col or "?"
                    )
            for col in REQUIRED:
                if col not in header:
                    raise InputError(source, f"missing column {col!r} in the header row", f"line {start}", col)
            dup = sorted({c for c in header if header.count(c) > 1})
            if dup:
                raise InputError(source, "column given twice in the header row", f"line {start}", dup[0])
            continue
        if len(cells) != len(header):
            raise InputError(
                source, f"{len(cells)} values for {len(header)} columns ({','.join(header)})", f"line {start}"
            )
        yield start, dict(zip(header, cells, strict=True))
    if header is None:
        raise InputError(source, "empty trace: no header row (columns: " + ", ".join(FIELDS) + ")")


def jsonl_rows(text: str, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    for i, raw in enumerate(text.splitlines(), start=1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as err:
            raise InputError(source, f"malformed JSON: column {err.colno}: {err.msg}", f"line {i}") from None
        if not isinstance(obj, dict):
            raise InputError(source, f"must be a JSON object, got {type(obj).__name__}", f"line {i}")
        for key in obj:
            if key not in FIELDS:
                raise InputError(source, f"unknown field (fields: {', '.join(FIELDS)})", f"line {i}", str(key))
        yield i, obj


def detect_format(path: str, text: str) -> str:
    """'csv' or 'jsonl': by extension, else by the first meaningful character."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    for raw in text.splitlines():
        s = raw.strip()
        if s and not s.startswith("#"):
            return "jsonl" if s.startswith("{") else "csv"
    return "csv"


# ------------------------------------------------------------------ fields


def _shown(value: Any) -> str:
    """The value as the user wrote it, cut short: a 400-digit number need not fill the terminal."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text)} characters)"


def seconds(value: Any, source: str, line: int, field: str, optional: bool) -> float | None:
    if value is None or (isinstance(value, str) and value == ""):
        if optional:
            return None
        raise InputError(source, "required", f"line {line}", field)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InputError(source, f"must be a number of seconds, got {_shown(value)}", f"line {line}", field)
    try:
        number = float(value)
    except ValueError:
        raise InputError(source, f"must be a number of seconds, got {_shown(value)}", f"line {line}", field) from None
    except OverflowError:  # a JSON integer with hundreds of digits
        number = math.inf
    if not math.isfinite(number) or number < 0:
        raise InputError(source, f"must be a finite number >= 0, got {_shown(value)}", f"line {line}", field)
    if number > MAX_SECONDS:
        # The virtual clock could not date what happens then (a datetime ends at year 9999).
        raise InputError(
            source,
            f"must be at most {MAX_SECONDS:,.0f} seconds (about 317 years), got {_shown(value)}",
            f"line {line}",
            field,
        )
    return number + 0.0  # -0.0 is 0


def text_field(value: Any, source: str, line: int, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(source, f"must be a string, got {value!r}", f"line {line}", field)
    return value.strip()


def split_name(value: str, source: str, line: int) -> tuple[str, str]:
    if not value:
        raise InputError(source, "required", f"line {line}", "name")
    ns, _, name = value.rpartition("/")
    if ns and not _DNS1123_LABEL.match(ns):
        raise InputError(source, f"namespace {ns!r} is not a valid DNS-1123 label", f"line {line}", "name")
    if not _DNS1123_SUBDOMAIN.match(name) or len(name) > 253:
        raise InputError(
            source,
            f"{name!r} is not a valid pod name (lowercase letters, digits, '-' and '.')",
            f"line {line}",
            "name",
        )
    return ns, name


def inline_pod(value: Any, source: str, line: int) -> Pod:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise InputError(source, f"malformed JSON: column {err.colno}: {err.msg}", f"line {line}", "spec") from None
    if not isinstance(value, Mapping):
        raise InputError(source, "must be a JSON object (a PodSpec or a Pod manifest)", f"line {line}", "spec")
    whole = "spec" in value
    raw: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": dict(value.get("metadata") or {}) if whole else {},
        "spec": value["spec"] if whole else value,
    }
    raw["metadata"]["name"] = "trace-pod"
    try:
        pod: Pod = decode("Pod", raw)
    except DecodeError as err:
        # The decoder names the field as in a Pod manifest (spec.containers[0]...): the column is `spec`.
        raise InputError(source, err.message, f"line {line}", err.field or "spec") from None
    if not pod.spec.containers:
        raise InputError(source, "a pod needs at least one container", f"line {line}", "spec.containers")
    return pod
