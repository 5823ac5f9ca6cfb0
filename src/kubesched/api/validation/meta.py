"""ObjectMeta, labels, annotations and label selectors (apimachinery's validation of metav1).

Names, label keys and label values repeat across thousands of objects of a large scenario, so
their checks are memoized by value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache

from kubesched.api.meta import LabelSelector, ObjectMeta, OwnerReference
from kubesched.gocompat.field import FieldError, GoJSON, child, forbidden, index, invalid, required, too_long
from kubesched.gocompat.names import (
    DNS1123_SUBDOMAIN_FMT,
    DNS1123_SUBDOMAIN_MAX,
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


# A valid subdomain (one fullmatch): most names, and unique ones (pod-0 ... pod-149999) that a cache
# would only fill up with. It ends alphanumeric, so a generateName prefix's mask leaves it as it is.
_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_FMT)


def name_is_dns_subdomain(name: str, prefix: bool) -> tuple[str, ...]:
    if len(name) <= DNS1123_SUBDOMAIN_MAX and _SUBDOMAIN.fullmatch(name):
        return ()
    return _name_subdomain_messages(name, prefix)


@lru_cache(maxsize=1 << 12)
def _name_subdomain_messages(name: str, prefix: bool) -> tuple[str, ...]:
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
    meta: ObjectMeta, namespaced: bool, name_check: NameCheck, path: str = "metadata", kube_finalizers: bool = True
) -> list[FieldError]:
    """ValidateObjectMeta on create, for the parts a scheduler's world reads.

    `kube_finalizers` adds the core API's finalizer rule (core's ValidateObjectMeta); kinds validated only by
    the generic registry (policy's PodDisruptionBudget) go without it.
    """
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
        refused = name_check(meta.name, False)
        if refused:
            errs += [invalid(child(path, "name"), meta.name, m) for m in refused]
    if namespaced and meta.namespace:
        errs += [invalid(child(path, "namespace"), meta.namespace, m) for m in name_is_dns_label(meta.namespace, False)]
    if meta.labels:
        errs += validate_labels(meta.labels, child(path, "labels"))
    if meta.annotations:
        errs += validate_annotations(meta.annotations, child(path, "annotations"))
    if meta.owner_references:
        errs += validate_owner_references(meta.owner_references, child(path, "ownerReferences"))
    if meta.finalizers:
        errs += validate_finalizers(meta.finalizers, child(path, "finalizers"))
        if kube_finalizers:
            errs += validate_kube_finalizer_names(meta.finalizers, child(path, "finalizers"))
    return errs


# ---------------------------------------------------------------- owner references and finalizers

# Kinds that may not own objects (apimachinery's BannedOwners): (group, version, kind).
_BANNED_OWNERS = {("", "v1", "Event")}


def _owner_json(ref: OwnerReference) -> dict[str, object]:
    """An OwnerReference as encoding/json writes it (the pointer fields only when set)."""
    out: dict[str, object] = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name, "uid": ref.uid}
    if ref.controller is not None:
        out["controller"] = ref.controller
    if ref.block_owner_deletion is not None:
        out["blockOwnerDeletion"] = ref.block_owner_deletion
    return out


def _group_version(api_version: str) -> tuple[str, str]:
    """schema.ParseGroupVersion, with what FromAPIVersionAndKind keeps of an unparsable one (nothing)."""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", api_version
    if len(parts) == 2:
        return parts[0], parts[1]
    return "", ""


def validate_owner_references(refs: list[OwnerReference], path: str) -> list[FieldError]:
    """ValidateOwnerReferences: every field set, no banned owner, at most one controller.

    Upstream reports at the list's path, without an index.
    """
    errs: list[FieldError] = []
    first_controller = ""
    for ref in refs:
        group, version = _group_version(ref.api_version)
        if not version:
            errs.append(invalid(child(path, "apiVersion"), ref.api_version, "version must not be empty"))
        if not ref.kind:
            errs.append(invalid(child(path, "kind"), ref.kind, "must not be empty"))
        if not ref.name:
            errs.append(invalid(child(path, "name"), ref.name, "must not be empty"))
        if not ref.uid:
            errs.append(invalid(child(path, "uid"), ref.uid, "must not be empty"))
        if (group, version, ref.kind) in _BANNED_OWNERS:
            gvk = f"{group}/{version}, Kind={ref.kind}"
            errs.append(invalid(path, GoJSON(_owner_json(ref)), f"{gvk} is disallowed from being an owner"))
        if ref.controller:
            name = f"{ref.kind}/{ref.name}"
            if first_controller:
                errs.append(
                    invalid(
                        path,
                        GoJSON([_owner_json(r) for r in refs]),
                        'Only one reference can have Controller set to true. Found "true" in references for '
                        f"{first_controller} and {name}",
                    )
                )
            else:
                first_controller = name
    return errs


_ORPHAN = "orphan"
_FOREGROUND = "foregroundDeletion"
# helper.IsStandardFinalizerName: the finalizers a name without a '/' may be.
_STANDARD_FINALIZERS = frozenset(("kubernetes", _ORPHAN, _FOREGROUND))


def validate_finalizers(finalizers: list[str], path: str) -> list[FieldError]:
    """ValidateFinalizers: qualified names (reported at the list's path), not both orphan and foreground."""
    errs: list[FieldError] = []
    for f in finalizers:
        errs += [invalid(path, f, m) for m in _label_key_messages(f)]
    if _ORPHAN in finalizers and _FOREGROUND in finalizers:
        errs.append(
            invalid(path, GoJSON(list(finalizers)), f"finalizer {_ORPHAN} and {_FOREGROUND} cannot be both set")
        )
    return errs


KUBE_FINALIZER_ERROR = "name is neither a standard finalizer name nor is it fully qualified"


def is_kube_finalizer_name(name: str) -> bool:
    """The core API's extra rule: a finalizer without a '/' must be a standard one."""
    return "/" in name or name in _STANDARD_FINALIZERS


def validate_kube_finalizer_names(finalizers: list[str], path: str) -> list[FieldError]:
    bad = (i for i, f in enumerate(finalizers) if not is_kube_finalizer_name(f))
    return [invalid(index(path, i), finalizers[i], KUBE_FINALIZER_ERROR) for i in bad]


# ---------------------------------------------------------------- path segment names

_NAME_MAY_NOT_BE = (".", "..")
_NAME_MAY_NOT_CONTAIN = ("/", "%")


@lru_cache(maxsize=1 << 12)
def name_is_path_segment(name: str, prefix: bool) -> tuple[str, ...]:
    """path.ValidatePathSegmentName: the names the generic registry allows every kind."""
    if not prefix:
        for bad in _NAME_MAY_NOT_BE:
            if name == bad:
                return (f"may not be '{bad}'",)
    return tuple(f"may not contain '{bad}'" for bad in _NAME_MAY_NOT_CONTAIN if bad in name)


# The ObjectMeta fields a template's metadata may not set (annotations and labels it may), named as
# upstream's reflection names them (the Go field name, first letter lower-cased: "uID").
_TEMPLATE_META_FORBIDDEN = (
    ("name", "name"),
    ("generate_name", "generateName"),
    ("namespace", "namespace"),
    ("uid", "uID"),
    ("resource_version", "resourceVersion"),
    ("creation_timestamp", "creationTimestamp"),
    ("deletion_timestamp", "deletionTimestamp"),
    ("deletion_grace_period_seconds", "deletionGracePeriodSeconds"),
    ("owner_references", "ownerReferences"),
    ("finalizers", "finalizers"),
)


def validate_template_object_meta(meta: ObjectMeta, path: str) -> list[FieldError]:
    """ValidateTemplateObjectMeta (claim templates of DRA and of ephemeral volumes): annotations and
    labels only; anything else "cannot be set"."""
    errs = validate_annotations(meta.annotations, child(path, "annotations")) if meta.annotations else []
    if meta.labels:
        errs += validate_labels(meta.labels, child(path, "labels"))
    for attr, name in _TEMPLATE_META_FORBIDDEN:
        if getattr(meta, attr):
            errs.append(forbidden(child(path, name), "cannot be set"))
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
