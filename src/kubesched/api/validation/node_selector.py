"""Node selectors (core validation): required node affinity of pods, node affinity of volumes."""

from __future__ import annotations

from kubesched.api.core import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.validation.meta import name_is_dns_subdomain, validate_label_name, validate_label_value
from kubesched.gocompat.field import FieldError, child, forbidden, index, invalid, required


def validate_node_selector_requirement(
    req: NodeSelectorRequirement, path: str, allow_invalid_label_values: bool = False
) -> list[FieldError]:
    errs: list[FieldError] = []
    values = child(path, "values")
    op = req.operator
    if op in ("In", "NotIn"):
        if not req.values:
            errs.append(required(values, "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if req.values:
            errs.append(forbidden(values, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(req.values) != 1:
            errs.append(required(values, "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(invalid(child(path, "operator"), op, "not a valid selector operator"))
    errs += validate_label_name(req.key, child(path, "key"))
    if not allow_invalid_label_values:
        for i, v in enumerate(req.values):
            errs += validate_label_value(v, index(values, i))
    return errs


def validate_node_field_selector_requirement(req: NodeSelectorRequirement, path: str) -> list[FieldError]:
    """matchFields: only metadata.name, with In/NotIn and exactly one node name."""
    errs: list[FieldError] = []
    if req.operator in ("In", "NotIn"):
        if len(req.values) != 1:
            errs.append(
                required(
                    child(path, "values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                )
            )
    else:
        errs.append(invalid(child(path, "operator"), req.operator, "not a valid selector operator"))
    if req.key != "metadata.name":
        errs.append(invalid(child(path, "key"), req.key, "not a valid field selector key"))
    else:
        for i, v in enumerate(req.values):
            errs += [invalid(index(child(path, "values"), i), v, m) for m in name_is_dns_subdomain(v, False)]
    return errs


def validate_node_selector_term(
    term: NodeSelectorTerm, path: str, allow_invalid_label_values: bool = False
) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, req in enumerate(term.match_expressions):
        errs += validate_node_selector_requirement(
            req, index(child(path, "matchExpressions"), j), allow_invalid_label_values
        )
    for j, req in enumerate(term.match_fields):
        errs += validate_node_field_selector_requirement(req, index(child(path, "matchFields"), j))
    return errs


def validate_node_selector(sel: NodeSelector, path: str, allow_invalid_label_values: bool = False) -> list[FieldError]:
    terms = child(path, "nodeSelectorTerms")
    if not sel.node_selector_terms:
        return [required(terms, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in enumerate(sel.node_selector_terms):
        errs += validate_node_selector_term(term, index(terms, i), allow_invalid_label_values)
    return errs
