"""CEL device selectors as kube-apiserver compiles them (resource.k8s.io/v1): compiled with the
scheduler's own CEL environment, their errors reworded where cel-cpp words them unlike cel-go."""

from __future__ import annotations

import re
from functools import lru_cache

from kubesched.api.resource import DeviceSelector
from kubesched.gocompat.field import FieldError, child, invalid, required, too_long

CEL_EXPRESSION_MAX_LENGTH = 10 * 1024

_UNDECLARED_DEVICE_FIELD = re.compile(
    r"^(compilation failed: ERROR: <input>:)\d+:\d+: undeclared reference to 'device\.(\w+)[\w.]*' \(in container ''\)"
)
_NO_OVERLOAD = re.compile(r"found no matching overload for '([^']+)' applied to '\((.*)\)'")


def _split_types(text: str) -> list[str]:
    """The argument types of a CEL overload message, split at top-level commas."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return out


def _caret_index(expression: str, message: str) -> int:
    """The offset in `expression` of the position a compile error names (line:column, 1-based)."""
    m = re.search(r"<input>:(\d+):(\d+):", message)
    if m is None:
        return -1
    line, column = int(m.group(1)), int(m.group(2))
    lines = expression.split("\n")
    if line > len(lines):
        return -1
    return sum(len(x) + 1 for x in lines[: line - 1]) + column - 1


@lru_cache(maxsize=1 << 10)
def cel_compile_error(expression: str) -> str:
    """Why kube-apiserver would refuse a CEL selector ("" when it compiles).

    The scheduler's evaluator is cel-cpp; where its compile errors are worded differently
    from cel-go's (a missing field of `device`, a method called on the wrong types, an empty
    expression), they are reworded.
    """
    # Imported here: the evaluator lives with the DynamicResources plugin and is only needed
    # when there are selectors to check.
    from kubesched.plugins.dynamicresources.cel import compile_expression

    error = compile_expression(expression).error
    if not error:
        return ""
    m = _UNDECLARED_DEVICE_FIELD.match(error)
    if m is not None:
        found = re.search(r"\bdevice\s*\.\s*" + re.escape(m.group(2)) + r"\b", expression)
        if found is not None:
            dot = expression.index(".", found.start())
            line = expression.count("\n", 0, dot) + 1
            column = dot - (expression.rfind("\n", 0, dot) + 1)
            text = expression.split("\n")[line - 1]
            return (
                f"{m.group(1)}{line}:{column + 1}: undefined field '{m.group(2)}'\n | {text}\n | " + "." * column + "^"
            )
    m = _NO_OVERLOAD.search(error)
    if m is not None:
        at = _caret_index(expression, error)
        name = m.group(1)
        before = expression[:at].rstrip() if at >= 0 else ""
        if before.endswith(name) and before[: len(before) - len(name)].rstrip().endswith("."):
            types = _split_types(m.group(2))
            member = f"{types[0]}.({', '.join(types[1:])})"
            error = error[: m.start(2) - 1] + member + error[m.end(2) + 1 :]
    if expression == "":
        error = error.replace("<input>:1:1:", "<input>:1:0:", 1)
    return error


def validate_device_selector(sel: DeviceSelector, path: str) -> list[FieldError]:
    if sel.cel is None:
        return [required(child(path, "cel"))]
    expression = sel.cel.expression
    path = child(path, "cel", "expression")
    if len(expression) > CEL_EXPRESSION_MAX_LENGTH:
        return [too_long(path, CEL_EXPRESSION_MAX_LENGTH)]
    error = cel_compile_error(expression)
    return [invalid(path, expression, error)] if error else []
