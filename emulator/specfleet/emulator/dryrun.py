"""Server-side dry run: `dryRun=All` on a write runs every check and answers what would be stored.

The API server takes the directive from the query (`?dryRun=All`, what create, update and patch send) or
from the DeleteOptions body (what `kubectl delete --dry-run=server` sends); "All" is its only value.
"""

from __future__ import annotations

from typing import Any

from specfleet.emulator import errors

ALL = "All"
WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})


def requested(verb: str, query: dict[str, str], options: dict[str, Any]) -> bool:
    """Whether a request is a dry run; an unknown directive is refused, as the API server does."""
    if verb not in WRITES:
        return False
    sent = options.get("dryRun") or []
    values = [*([query["dryRun"]] if "dryRun" in query else []), *(sent if isinstance(sent, list) else [sent])]
    for value in values:
        if value != ALL:  # the API server validates the options as an object of their own: 422
            message = f'dryRun: Unsupported value: "{value}": supported values: "All"'
            raise errors.ApiError(422, "Invalid", message)
    return bool(values)


def as_created(obj: dict[str, Any]) -> dict[str, Any]:
    """A dry-run create's answer: the object as admitted, without the resourceVersion it was never given."""
    meta = {key: value for key, value in obj.get("metadata", {}).items() if key != "resourceVersion"}
    return {**obj, "metadata": meta}
