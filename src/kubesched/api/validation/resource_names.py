"""The names, lists and sets of resource.k8s.io/v1 as its validation checks them (validateSlice,
validateSet, qualified names): shared by claims, classes and slices."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TypeVar

from kubesched.api.validation.meta import name_is_dns_label, name_is_dns_subdomain
from kubesched.api.validation.volumes import validate_csi_driver_name
from kubesched.gocompat.field import FieldError, child, duplicate, index, invalid, required, too_long, too_many
from kubesched.gocompat.names import regex_error

T = TypeVar("T")

DEVICE_MAX_ID_LENGTH = 32

C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER = re.compile(C_IDENTIFIER_FMT)
C_IDENTIFIER_ERR = regex_error(
    "a valid C identifier must start with alphabetic character or '_', "
    "followed by a string of alphanumeric characters or '_'",
    C_IDENTIFIER_FMT,
    "my_name",
    "MY_NAME",
    "MyName",
)


def validate_list(
    items: Sequence[T], limit: int, check: Callable[[T, str], list[FieldError]], path: str
) -> list[FieldError]:
    """validateSlice: every item, then the length."""
    if not items:
        return []
    errs: list[FieldError] = []
    for i, item in enumerate(items):
        errs += check(item, index(path, i))
    if len(items) > limit:
        errs.append(too_many(path, len(items), limit))
    return errs


def validate_unique(keys: Sequence[str], path: str, field: str = "") -> list[FieldError]:
    """validateSet's uniqueness check: each repeat at its own index (and key field)."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, k in enumerate(keys):
        if k in seen:
            errs.append(duplicate(child(index(path, i), field) if field else index(path, i), k))
        seen.add(k)
    return errs


def dns_label(name: str, path: str) -> list[FieldError]:
    return [invalid(path, name, m) for m in name_is_dns_label(name, False)]


def dns_subdomain(name: str, path: str) -> list[FieldError]:
    return [invalid(path, name, m) for m in name_is_dns_subdomain(name, False)]


def _c_identifier(name: str, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(name) > DEVICE_MAX_ID_LENGTH:
        errs.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    if not _C_IDENTIFIER.fullmatch(name):
        errs.append(invalid(path, name, C_IDENTIFIER_ERR))
    return errs


@lru_cache(maxsize=1 << 12)
def qualified_name_problems(name: str) -> tuple[FieldError, ...]:
    """validateQualifiedName at an empty path: an optional domain (a driver name) and a C identifier."""
    if not name:
        return (required("", "name required"),)
    parts = name.split("/")
    errs: list[FieldError] = []
    if len(parts) == 1:
        errs += _c_identifier(parts[0], "")
    elif len(parts) == 2:
        if not parts[0]:
            errs.append(required("", "the domain must not be empty"))
        else:
            errs += validate_csi_driver_name(parts[0], "")
        if not parts[1]:
            errs.append(required("", "the name must not be empty"))
        else:
            errs += _c_identifier(parts[1], "")
    return tuple(errs)


def qualified_name(name: str, path: str) -> list[FieldError]:
    """The problems of a qualified name (memoized: attribute names repeat on every device), at `path`."""
    return [FieldError(e.type, path, e.value, e.detail) for e in qualified_name_problems(name)]


def fully_qualified_name(name: str, path: str) -> list[FieldError]:
    errs = qualified_name(name, path)
    if name and "/" not in name:
        errs.append(invalid(path, name, "must include a domain"))
    return errs
