"""ObjectMeta, labels, annotations and label selectors (apimachinery's validation of metav1).

Names, label keys and label values repeat across thousands of objects of a large scenario, so
their checks are memoized by value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache

from kubesched.api.meta import LabelSelector, ObjectMeta
from kubesched.config.field import (
    FieldError,
    child,
    forbidden,
    index,
    invalid,
    required,
    too_long,
)
from kubesched.config.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)

# A name check: (name, is it a generateName prefix) -> messages.
NameCheck = Callable[[str, bool], tuple[str, ...]]

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def _mask_trailing_dash(name: str, prefix: bool) -> str:
    """A generateName prefix may end in '-': the random suffix follows it."""
    return name[:-1] + "a" if prefix and len(name) > 1 and name.endswith("-") else name


@lru_cache(maxsize=1 << 14)
def name_is_dns_subdomain(name: str, prefix: bool) -> tuple[str, ...]:
    return tuple(is_dns1123_subdomain(_mask_trailing_dash(name, prefix)))


@lru_cache(maxsize=1 << 12)
def name_is_dns_label(name: str, prefix: bool) -> tuple[str, ...]:
    return tuple(is_dns1123_label(_mask_trailing_dash(name, prefix)))


@lru_cache(maxsize=1 << 12)
def name_is_dns1035_label(name: str, prefix: bool) -> tuple[str, ...]:
    return tuple(is_dns1035_label(_mask_trailing_dash(name, prefix)))


@lru_cache(maxsize=1 << 14)
def _label_key_messages(key: str) -> tuple[str, ...]:
    return tuple(is_qualified_name(key))


@lru_cache(maxsize=1 << 14)
def _label_value_messages(value: str) -> tuple[str, ...]:
    return tuple(is_valid_label_value(value))


def validate_label_name(name: str, path: str) -> list[FieldError]:
    return [invalid(path, name, msg) for msg in _label_key_messages(name)]


def validate_label_value(value: str, path: str) -> list[FieldError]:
    return [invalid(path, value, msg) for msg in _label_value_messages(value)]


def validate_labels(labels: Mapping[str, str], path: str) -> list[FieldError]:
    """ValidateLabels: qualified-name keys and label values (in key order: Go's map order is random)."""
    for k, v in labels.items():
        if _label_key_messages(k) or _label_value_messages(v):
            break
    else:
        return []
    errs: list[FieldError] = []
    for k in sorted(labels) if len(labels) > 1 else labels:
        errs += validate_label_name(k, path)
        errs += validate_label_value(labels[k], path)
    return errs


def _utf8_len(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode())


def validate_annotations(annotations: Mapping[str, str], path: str) -> list[FieldError]:
    """ValidateAnnotations: keys are qualified names (lower-cased first); 256 KiB in all."""
    total = 0
    for k, v in annotations.items():
        if _label_key_messages(k.lower()):
            break
        total += _utf8_len(k) + _utf8_len(v)
    else:
        if total <= TOTAL_ANNOTATION_SIZE_LIMIT:
            return []
    errs: list[FieldError] = []
    total = 0
    for k in sorted(annotations) if len(annotations) > 1 else annotations:
        errs += [invalid(path, k, msg) for msg in _label_key_messages(k.lower())]
        total += len(k.encode()) + len(annotations[k].encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def validate_object_meta(
    meta: ObjectMeta, namespaced: bool, name_check: NameCheck, path: str = "metadata"
) -> list[FieldError]:
    """ValidateObjectMeta on create, for the parts a scheduler's world reads."""
    errs: list[FieldError] = []
    if meta.generate_name:
        errs += [
            invalid(child(path, "generateName"), meta.generate_name, m) for m in name_check(meta.generate_name, True)
        ]
    if not meta.name:
        # The API server generates a name from generateName (prefix + 5 characters) before validating;
        # the generated name fails only where the prefix already did.
        if not meta.generate_name:
            errs.append(required(child(path, "name"), "name or generateName is required"))
    else:
        errs += [invalid(child(path, "name"), meta.name, m) for m in name_check(meta.name, False)]
    if namespaced and meta.namespace:
        errs += [invalid(child(path, "namespace"), meta.namespace, m) for m in name_is_dns_label(meta.namespace, False)]
    if meta.labels:
        errs += validate_labels(meta.labels, child(path, "labels"))
    if meta.annotations:
        errs += validate_annotations(meta.annotations, child(path, "annotations"))
    return errs


# ---------------------------------------------------------------- label selectors

_IN_NOT_IN = ("In", "NotIn")
_EXISTS = ("Exists", "DoesNotExist")


def validate_label_selector(
    sel: LabelSelector | None, path: str, allow_invalid_label_values: bool = False
) -> list[FieldError]:
    """metav1validation.ValidateLabelSelector."""
    if sel is None:
        return []
    errs = validate_labels(sel.match_labels, child(path, "matchLabels")) if sel.match_labels else []
    for i, req in enumerate(sel.match_expressions):
        rp = index(child(path, "matchExpressions"), i)
        if req.operator in _IN_NOT_IN:
            if not req.values:
                errs.append(required(child(rp, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        elif req.operator in _EXISTS:
            if req.values:
                errs.append(
                    forbidden(child(rp, "values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
                )
        else:
            errs.append(invalid(child(rp, "operator"), req.operator, "not a valid selector operator"))
        errs += validate_label_name(req.key, child(rp, "key"))
        if not allow_invalid_label_values:
            for j, v in enumerate(req.values):
                errs += validate_label_value(v, index(child(rp, "values"), j))
    return errs
