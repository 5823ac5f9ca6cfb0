"""A Job's podFailurePolicy and successPolicy as ValidateJob checks them (pkg/apis/batch/validation):
rules with their own limits, operators and index-interval grammar, apart from the JobSpec's scalars."""

from __future__ import annotations

from kubesched.api.batch import (
    JobSpec,
    PodFailurePolicy,
    PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern,
    SuccessPolicy,
    SuccessPolicyRule,
)
from kubesched.api.validation.core import validate_nonnegative
from kubesched.gocompat.field import (
    DUPLICATE,
    INVALID,
    FieldError,
    GoJSON,
    child,
    index,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from kubesched.gocompat.names import is_qualified_name
from kubesched.gocompat.strconv import go_quote, parse_int64

MAX_POD_FAILURE_POLICY_RULES = 20
MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES = 255
MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS = 20
MAX_JOB_SUCCESS_POLICY_SUCCEEDED_INDEXES_LIMIT = 64 * 1024
MAX_SUCCESS_POLICY_RULE = 20
_POD_FAILURE_POLICY_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]  # sorted, as sets.List gives them
_EXIT_CODES_OPERATORS = ["In", "NotIn"]
_CONDITION_STATUSES = ["False", "True", "Unknown"]


class _OmittedValueError(FieldError):
    """A field.Error whose bad value is field.OmitValueType{}: the body names the type and the detail only."""

    def body(self) -> str:
        return f"{self.type}: {self.detail}" if self.detail else self.type


def _go_list(values: list[str]) -> str:
    """fmt's %q of a []string: ["a" "b"]."""
    return "[" + " ".join(go_quote(v) for v in values) + "]"


def _validate_on_exit_codes(
    req: PodFailurePolicyOnExitCodesRequirement, path: str, container_names: set[str]
) -> list[FieldError]:
    """validatePodFailurePolicyRuleOnExitCodes."""
    errs: list[FieldError] = []
    operator_path = child(path, "operator")
    if not req.operator:
        errs.append(required(operator_path, f"valid values: {_go_list(_EXIT_CODES_OPERATORS)}"))
    elif req.operator not in _EXIT_CODES_OPERATORS:
        errs.append(not_supported(operator_path, GoJSON(req.operator), _EXIT_CODES_OPERATORS))
    if req.container_name is not None and req.container_name not in container_names:
        msg = "must be one of the container or initContainer names in the pod template"
        errs.append(invalid(child(path, "containerName"), req.container_name, msg))
    values_path = child(path, "values")
    values = req.values or []
    if not values:
        errs.append(invalid(values_path, GoJSON(req.values), "at least one value is required"))
    elif len(values) > MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES:
        errs.append(too_many(values_path, len(values), MAX_POD_FAILURE_POLICY_ON_EXIT_CODES_VALUES))
    ordered = True
    seen: set[int] = set()
    for j, code in enumerate(values):
        value_path = index(values_path, j)
        if req.operator == "In" and code == 0:
            errs.append(invalid(value_path, code, "must not be 0 for the In operator"))
        if code in seen:
            errs.append(FieldError(DUPLICATE, value_path, code))
        else:
            seen.add(code)
        if j > 0 and values[j - 1] > code:
            ordered = False
    if not ordered:
        errs.append(invalid(values_path, GoJSON(values), "must be ordered"))
    return errs


def _validate_on_pod_conditions(patterns: list[PodFailurePolicyOnPodConditionsPattern], path: str) -> list[FieldError]:
    """validatePodFailurePolicyRuleOnPodConditions."""
    errs: list[FieldError] = []
    if len(patterns) > MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS:
        errs.append(too_many(path, len(patterns), MAX_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERNS))
    for j, pattern in enumerate(patterns):
        pattern_path = index(path, j)
        errs += _validate_qualified_name(pattern.type, child(pattern_path, "type"))
        status_path = child(pattern_path, "status")
        if not pattern.status:
            errs.append(required(status_path, f"valid values: {_go_list(_CONDITION_STATUSES)}"))
        elif pattern.status not in _CONDITION_STATUSES:
            errs.append(not_supported(status_path, GoJSON(pattern.status), _CONDITION_STATUSES))
    return errs


def _validate_qualified_name(value: str, path: str) -> list[FieldError]:
    """ValidateQualifiedName."""
    return [invalid(path, value, m) for m in is_qualified_name(value)]


def validate_pod_failure_policy(spec: JobSpec, policy: PodFailurePolicy, path: str) -> list[FieldError]:
    """validatePodFailurePolicy."""
    errs: list[FieldError] = []
    rules_path = child(path, "rules")
    if len(policy.rules) > MAX_POD_FAILURE_POLICY_RULES:
        errs.append(too_many(rules_path, len(policy.rules), MAX_POD_FAILURE_POLICY_RULES))
    pod_spec = spec.template.spec
    container_names = {c.name for c in pod_spec.containers} | {c.name for c in pod_spec.init_containers}
    for i, rule in enumerate(policy.rules):
        rule_path = index(rules_path, i)
        action_path = child(rule_path, "action")
        if not rule.action:
            errs.append(required(action_path, f"valid values: {_go_list(_POD_FAILURE_POLICY_ACTIONS)}"))
        elif rule.action == "FailIndex":
            if spec.backoff_limit_per_index is None:
                msg = "requires the backoffLimitPerIndex to be set"
                errs.append(invalid(action_path, GoJSON(rule.action), msg))
        elif rule.action not in _POD_FAILURE_POLICY_ACTIONS:
            errs.append(not_supported(action_path, GoJSON(rule.action), _POD_FAILURE_POLICY_ACTIONS))
        if rule.on_exit_codes is not None:
            errs += _validate_on_exit_codes(rule.on_exit_codes, child(rule_path, "onExitCodes"), container_names)
        if rule.on_pod_conditions:
            errs += _validate_on_pod_conditions(rule.on_pod_conditions, child(rule_path, "onPodConditions"))
        if rule.on_exit_codes is not None and rule.on_pod_conditions:
            msg = "specifying both OnExitCodes and OnPodConditions is not supported"
            errs.append(_OmittedValueError(INVALID, rule_path, None, msg))
        if rule.on_exit_codes is None and not rule.on_pod_conditions:
            msg = "specifying one of OnExitCodes and OnPodConditions is required"
            errs.append(_OmittedValueError(INVALID, rule_path, None, msg))
    return errs


def _parse_index_interval(interval: str, completions: int) -> tuple[int, int, str]:
    """parseIndexInterval: (first, last, "") or (0, 0, the error)."""
    limits = interval.split("-")
    if len(limits) > 2:
        return (
            0,
            0,
            (
                f"the fragment {go_quote(interval)} violates the requirement that an index interval "
                "can have at most two parts separated by '-'"
            ),
        )
    try:
        x = parse_int64(limits[0])  # strconv.Atoi
    except ValueError:
        return 0, 0, f"cannot convert string to integer for index: {go_quote(limits[0])}"
    if x >= completions:
        return 0, 0, f"too large index: {go_quote(limits[0])}"
    if len(limits) == 1:
        return x, x, ""
    try:
        y = parse_int64(limits[1])  # strconv.Atoi
    except ValueError:
        return 0, 0, f"cannot convert string to integer for index: {go_quote(limits[1])}"
    if y >= completions:
        return 0, 0, f"too large index: {go_quote(limits[1])}"
    if x >= y:
        return 0, 0, f"non-increasing order, previous: {x}, current: {y}"
    return x, y, ""


def _indexes_total(indexes: str, completions: int) -> tuple[int, str]:
    """validateIndexesFormat: how many indexes the list holds, or the error."""
    if not indexes:
        return 0, ""
    last: int | None = None
    total = 0
    for interval in indexes.split(","):
        x, y, err = _parse_index_interval(interval, completions)
        if err:
            return 0, err
        if last is not None and last >= x:
            return 0, f"non-increasing order, previous: {last}, current: {x}"
        total += y - x + 1
        last = y
    return total, ""


def _success_policy_value(policy: SuccessPolicy) -> GoJSON:
    """An internal batch.SuccessPolicy as encoding/json writes it (no JSON tags)."""
    rules = [{"SucceededIndexes": r.succeeded_indexes, "SucceededCount": r.succeeded_count} for r in policy.rules]
    return GoJSON({"Rules": rules or None})


def _validate_success_policy_rule(rule: SuccessPolicyRule, completions: int | None, path: str) -> list[FieldError]:
    """validateSuccessPolicyRule. Upstream dereferences completions, which an Indexed Job must have (its
    absence is already an error); without it the comparisons are skipped here."""
    errs: list[FieldError] = []
    if rule.succeeded_count is None and rule.succeeded_indexes is None:
        errs.append(required(path, "at least one of succeededCount or succeededIndexes must be specified"))
    total = 0
    if rule.succeeded_indexes is not None:
        indexes_path = child(path, "succeededIndexes")
        if len(rule.succeeded_indexes.encode()) > MAX_JOB_SUCCESS_POLICY_SUCCEEDED_INDEXES_LIMIT:
            errs.append(too_long(indexes_path, MAX_JOB_SUCCESS_POLICY_SUCCEEDED_INDEXES_LIMIT))
        if completions is not None:
            total, err = _indexes_total(rule.succeeded_indexes, completions)
            if err:
                msg = f"error parsing succeededIndexes: {err}"
                errs.append(invalid(indexes_path, rule.succeeded_indexes, msg))
    if rule.succeeded_count is not None:
        count_path = child(path, "succeededCount")
        errs += validate_nonnegative(rule.succeeded_count, count_path)
        if completions is not None:
            if rule.succeeded_count > completions:
                msg = f"must be less than or equal to {completions} (the number of specified completions)"
                errs.append(invalid(count_path, rule.succeeded_count, msg))
            if rule.succeeded_indexes is not None and rule.succeeded_count > total:
                msg = (
                    f"must be less than or equal to {total} "
                    "(the number of indexes in the specified succeededIndexes field)"
                )
                errs.append(invalid(count_path, rule.succeeded_count, msg))
    return errs


def validate_success_policy(spec: JobSpec, policy: SuccessPolicy, path: str) -> list[FieldError]:
    """validateJobSpec's successPolicy part: Indexed Jobs only, at most MAX_SUCCESS_POLICY_RULE rules."""
    errs: list[FieldError] = []
    if spec.completion_mode != "Indexed":
        value = _success_policy_value(policy)
        errs.append(invalid(path, value, "requires indexed completion mode"))
    else:
        rules = policy.rules
        rules_path = child(path, "rules")
        if not rules:
            msg = "at least one rules must be specified when the successPolicy is specified"
            errs.append(required(rules_path, msg))
        if len(rules) > MAX_SUCCESS_POLICY_RULE:
            errs.append(too_many(rules_path, len(rules), MAX_SUCCESS_POLICY_RULE))
        for i, rule in enumerate(rules):
            errs += _validate_success_policy_rule(rule, spec.completions, index(rules_path, i))
    return errs
