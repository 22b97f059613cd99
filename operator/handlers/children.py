"""Create or patch one child object so it matches its rendering; leave it alone when it already does."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from specfleet.operator.kubeapi import ApiError, KubeApi, Ref
from specfleet.operator.render.patch import is_subset, last_applied, three_way_patch, with_last_applied


class Outcome(StrEnum):
    CREATED = "Created"
    PATCHED = "Patched"
    UNCHANGED = "Unchanged"


async def apply_child(api: KubeApi, rendered: dict[str, Any]) -> tuple[Outcome, dict[str, Any]]:
    """Converge one child; idempotent, and safe to race with another writer (409 → re-read)."""
    desired = with_last_applied(rendered)
    ref = Ref.of(desired)
    current = await api.get(ref)
    if current is None:
        try:
            return Outcome.CREATED, await api.create(desired)
        except ApiError as exc:
            if exc.status != 409:
                raise
            current = await api.get(ref)
            if current is None:
                raise
    if is_subset(desired, current):
        return Outcome.UNCHANGED, current
    patch = three_way_patch(last_applied(current), desired)
    return Outcome.PATCHED, await api.patch(ref, patch)
