"""Apply one child object as rendered, with Server-Side Apply; leave it alone when it already is."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from specfleet.operator.api.constants import MANAGER
from specfleet.operator.kubeapi import KubeApi, Ref
from specfleet.operator.render.applied import in_place


class Outcome(StrEnum):
    CREATED = "Created"
    PATCHED = "Patched"
    UNCHANGED = "Unchanged"


async def apply_child(api: KubeApi, rendered: dict[str, Any]) -> tuple[Outcome, dict[str, Any]]:
    """Converge one child; idempotent, and safe to race with another writer.

    The operator is the authority for every field it renders, so it applies with force: a hand edit of one of
    them is put back, whoever made it. Fields it does not render stay with their owners.
    """
    current = await api.get(Ref.of(rendered))
    if current is not None and in_place(rendered, current, MANAGER):
        return Outcome.UNCHANGED, current
    stored = await api.apply(rendered, MANAGER, force=True)
    return (Outcome.CREATED if current is None else Outcome.PATCHED), stored
