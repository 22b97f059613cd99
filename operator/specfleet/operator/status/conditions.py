"""Kubernetes-style conditions: set one, keeping lastTransitionTime unless the status flips. Pure."""

from __future__ import annotations

from specfleet.operator.api.types import CONDITION_MESSAGE_MAX, Condition, ConditionStatus

ELLIPSIS = "…"


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
        message=bounded(message),
        last_transition_time=transition,
        observed_generation=generation,
    )
    if previous is None:
        return [*conditions, updated]
    return [updated if c.type == type_ else c for c in conditions]


def bounded(message: str) -> str:
    """A message within metav1.Condition's limit: a longer one (an error echoing hostile input) would make the
    apiserver refuse the whole status write."""
    if len(message) <= CONDITION_MESSAGE_MAX:
        return message
    return message[: CONDITION_MESSAGE_MAX - len(ELLIPSIS)] + ELLIPSIS


def condition_status(conditions: list[Condition], type_: str) -> ConditionStatus | None:
    found = next((c for c in conditions if c.type == type_), None)
    return ConditionStatus(found.status) if found is not None else None
