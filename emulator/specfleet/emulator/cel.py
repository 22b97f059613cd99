"""`x-kubernetes-validations` CEL rules, evaluated with cel-python as the apiserver evaluates them."""

from __future__ import annotations

import functools
from typing import Any

import celpy

from specfleet.emulator.schema import Cause, Schema, cause, child_schemas

_MISSING = object()
# How the apiserver prints each `reason` of a rule in its field error.
_PREFIXES = {
    "FieldValueInvalid": 'Invalid value: "{kind}": ',
    "FieldValueForbidden": "Forbidden: ",
    "FieldValueRequired": "Required value: ",
    "FieldValueDuplicate": 'Duplicate value: "{kind}": ',
}


@functools.lru_cache(maxsize=512)
def _program(expression: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression))


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    """The rule's result; evaluation errors come back as exceptions, whichever way celpy reports them."""
    result = _program(expression).evaluate({key: celpy.json_to_cel(value) for key, value in activation.items()})
    if isinstance(result, Exception):
        raise result
    return result


def _check_rule(rule: dict[str, Any], value: Any, old: Any, path: str, kind: str) -> Cause | None:
    """One rule's failure; `kind` is the schema type the apiserver shows as the invalid value."""
    expression = rule["rule"]
    uses_old = "oldSelf" in expression
    if uses_old and old is _MISSING:
        return None  # a transition rule only applies to updates of an existing value
    activation = {"self": value, "oldSelf": old} if uses_old else {"self": value}
    try:
        passed = bool(_evaluate(expression, activation))
        message = rule.get("message") or f"failed rule: {expression}"
        if not passed and rule.get("messageExpression"):
            message = str(_evaluate(rule["messageExpression"], activation))
    except Exception as exc:  # celpy raises several unrelated types for runtime errors
        passed, message = False, f"{exc.args[0] if exc.args else exc} evaluating rule: {expression}"
    if passed:
        return None
    reason = rule.get("reason", "FieldValueInvalid")
    field = path + rule.get("fieldPath", "") if path else rule.get("fieldPath", "").lstrip(".")
    prefix = _PREFIXES.get(reason, _PREFIXES["FieldValueInvalid"]).format(kind=kind)
    return cause(field, reason, prefix + message)


def check_rules(value: Any, schema: Schema, old: Any = _MISSING, path: str = "") -> list[Cause]:
    """Every failed rule in the tree; `old` is the stored object on updates (for `oldSelf`).

    Ratcheting, as the apiserver does since Kubernetes 1.30: a value an update leaves unchanged is not
    re-judged, so objects admitted before a CRD tightened its rules can still have metadata and status written.
    """
    if old is not _MISSING and old == value:
        return []
    causes = []
    for rule in schema.get("x-kubernetes-validations", []):
        failure = _check_rule(rule, value, old, path, schema.get("type", "object"))
        if failure is not None:
            causes.append(failure)
    for child, sub, child_path in child_schemas(value, schema, path):
        key = child_path[len(path) :].lstrip(".").strip("[]")
        causes += check_rules(child, sub, _old_child(old, key), child_path)
    return causes


def _old_child(old: Any, key: str) -> Any:
    """The old value at the same place; list items are not correlated (atomic lists, as in Kubernetes)."""
    return old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
