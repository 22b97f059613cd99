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

from specfleet.operator.handlers.context import OperatorContext
from specfleet.operator.handlers.fleet import SyncResult
from specfleet.operator.kubeapi import ApiError, sdd_ref

CONFLICT_RETRIES = 5
# A step returns the new status, or None when there is nothing to write.
Step = Callable[[dict[str, Any]], Awaitable[SyncResult | None]]


async def converge(ctx: OperatorContext, namespace: str, name: str, step: Step) -> SyncResult | None:
    """Run `step` on the fresh object and write the status it returns; retried on a conflicting write."""
    ref = sdd_ref(namespace, name)
    async with ctx.lock((namespace, name)):
        for _attempt in range(CONFLICT_RETRIES):
            owner = await ctx.api.get(ref)
            if owner is None or owner["metadata"].get("deletionTimestamp"):
                return None
            result = await step(owner)
            if result is None:
                return None
            status = result.status.to_api()
            if status != owner.get("status"):
                version = result.resource_version or owner["metadata"]["resourceVersion"]
                try:
                    await ctx.api.patch(
                        ref, {"metadata": {"resourceVersion": version}, "status": status}, subresource="status"
                    )
                except ApiError as exc:
                    if exc.status == 409:
                        continue
                    raise
            for note in result.events:
                kopf.event(owner, type=note.type, reason=note.reason, message=note.message)
            return result
    raise kopf.TemporaryError(f"status of {namespace}/{name} kept changing under us; retrying", delay=1)
