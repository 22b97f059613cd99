"""Three-way merge patches, as `kubectl apply` computes them. Pure.

The operator stores what it last applied on each child; a change is a JSON merge patch of the new rendering
plus nulls for keys the operator set before and no longer renders, so fields that other controllers or the
API server own are left alone.
"""

from __future__ import annotations

import json
from typing import Any

from specfleet.operator.api.constants import GROUP
from specfleet.runtime.engine_args import canonical_json

ANNOTATION_LAST_APPLIED = f"{GROUP}/last-applied"


def with_last_applied(desired: dict[str, Any]) -> dict[str, Any]:
    """The desired object carrying its own rendering as the last-applied annotation."""
    annotations = {
        **desired["metadata"].get("annotations", {}),
        ANNOTATION_LAST_APPLIED: canonical_json(desired),
    }
    return {**desired, "metadata": {**desired["metadata"], "annotations": annotations}}


def last_applied(current: dict[str, Any]) -> dict[str, Any]:
    raw = current.get("metadata", {}).get("annotations", {}).get(ANNOTATION_LAST_APPLIED)
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def is_subset(desired: Any, current: Any) -> bool:
    """True when every value the operator renders is already in place (server defaults are ignored)."""
    if isinstance(desired, dict):
        return isinstance(current, dict) and all(
            key in current and is_subset(value, current[key]) for key, value in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(current, list)
            and len(desired) == len(current)
            and all(is_subset(d, c) for d, c in zip(desired, current, strict=True))
        )
    return bool(desired == current)


def three_way_patch(previous: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    """A merge patch that sets `desired` and removes what `previous` had that `desired` no longer has."""
    patch: dict[str, Any] = {}
    for key, value in desired.items():
        before = previous.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            patch[key] = three_way_patch(before, value)
        else:
            patch[key] = value
    for key in previous.keys() - desired.keys():
        patch[key] = None
    return patch
