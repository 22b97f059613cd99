"""Kubernetes-style conditions: set one, keeping lastTransitionTime unless the status flips. Pure."""

from __future__ import annotations

from specfleet.operator.api.types import Condition, ConditionStatus


def set_condition(
    conditions: list[Condition],
    type_: str,
    status: bool | str,
    reason: str,
    message: str,
    now: str,
    generation: int | None,
) -> list[Condition]:
    """The conditions with `type_` set; other conditions are kept in their order."""
    if isinstance(status, bool):
        value = ConditionStatus.TRUE if status else ConditionStatus.FALSE
    else:
        value = ConditionStatus(status)
    previous = next((c for c in conditions if c.type == type_), None)
    transition = previous.last_transition_time if previous is not None and previous.status == value else now
    updated = Condition(
        type=type_,
        status=value,
        reason=reason,
        message=message,
        last_transition_time=transition,
        observed_generation=generation,
    )
    if previous is None:
        return [*conditions, updated]
    return [updated if c.type == type_ else c for c in conditions]


def condition_status(conditions: list[Condition], type_: str) -> ConditionStatus | None:
    found = next((c for c in conditions if c.type == type_), None)
    return ConditionStatus(found.status) if found is not None else None
