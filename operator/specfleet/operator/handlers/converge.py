"""One writer at a time per fleet, always from a fresh read, with the status write guarded by resourceVersion.

Kopf runs a resource's change handlers, its timer and the child-event handler concurrently, each with its own
snapshot of the body. Written from stale snapshots, one would undo another (an old observedGeneration, or
worse, an old speculation config that the next reconcile rolls the pods back to). So every writer takes the
fleet's lock, reads the object afresh, computes, and writes status only if nobody wrote in between.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import kopf

from specfleet.operator.api.base import ApiModel
from specfleet.operator.handlers.context import OperatorContext
from specfleet.operator.handlers.fleet import SyncResult
from specfleet.operator.kubeapi import ApiError, sdd_ref

CONFLICT_RETRIES = 5
# A step returns the new status, or None when there is nothing to write.
Step = Callable[[dict[str, Any]], Awaitable[SyncResult | None]]


def status_patch(before: dict[str, Any] | None, status: ApiModel) -> dict[str, Any]:
    """The status as a merge patch over `before`: a field it no longer holds is written as null, since a merge
    patch keeps whatever it does not mention (a withdrawn recommendation would stay in status for good)."""
    after = status.to_api()
    fields = {field.alias or name for name, field in type(status).model_fields.items()}
    gone = {key: None for key in before or {} if key in fields and key not in after}
    return {**after, **gone}


async def converge(
    ctx: OperatorContext, namespace: str, name: str, step: Step, first: dict[str, Any] | None = None
) -> SyncResult | None:
    """Run `step` on the fresh object and write the status it returns; retried on a conflicting write.

    `first` saves a read when the caller's snapshot is likely current and its step writes nothing before a
    guarded write (a stale snapshot then only costs a conflict and a retry on a fresh read).
    """
    ref = sdd_ref(namespace, name)
    async with ctx.lock((namespace, name)):
        for attempt in range(CONFLICT_RETRIES):
            owner = first if attempt == 0 and first is not None else await ctx.api.get(ref)
            if owner is None or owner["metadata"].get("deletionTimestamp"):
                return None
            try:
                result = await _write(ctx, owner, await step(owner))
            except ApiError as exc:
                if exc.status == 409:
                    continue
                raise
            if result is None:
                return None
            for note in result.events:
                kopf.event(owner, type=note.type, reason=note.reason, message=note.message)
            return result
    raise kopf.TemporaryError(f"status of {namespace}/{name} kept changing under us; retrying", delay=1)


async def _write(ctx: OperatorContext, owner: dict[str, Any], result: SyncResult | None) -> SyncResult | None:
    """Write the status a step computed, unless unchanged; a 409 means someone wrote in between."""
    if result is None:
        return None
    status = status_patch(owner.get("status"), result.status)
    if status != owner.get("status"):
        meta = owner["metadata"]
        version = result.resource_version or meta["resourceVersion"]
        guarded = {"metadata": {"resourceVersion": version}, "status": status}
        await ctx.api.patch(sdd_ref(meta.get("namespace", "default"), meta["name"]), guarded, subresource="status")
    return result
