"""Whether a child already is what the operator applies, judged from the stored object alone. Pure.

The operator owns its children's fields through Server-Side Apply (field manager `specfleet`). Applying a
rendering changes nothing when every rendered value is in place and every field the operator's managedFields
entry holds is still rendered (nothing to prune), so that request is skipped: an unchanged fleet writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

APPLY = "Apply"
# Key fields the API server defaults before it keys a list item (a port's protocol).
_KEY_DEFAULTS = {"protocol": "TCP"}


def is_subset(desired: Any, current: Any) -> bool:
    """True when every value the operator renders is already in place (server defaults are ignored).

    Lists of named items (containers, env, volumes, ports) are matched by name, as the API server merges them:
    an item another manager added (a sidecar) is theirs, not drift. Other lists must match whole.
    """
    if isinstance(desired, dict):
        return isinstance(current, dict) and all(
            key in current and is_subset(value, current[key]) for key, value in desired.items()
        )
    if isinstance(desired, list) and desired and all(isinstance(item, dict) and "name" in item for item in desired):
        by_name = {item.get("name"): item for item in current} if _named(current) else {}
        return all(item["name"] in by_name and is_subset(item, by_name[item["name"]]) for item in desired)
    if isinstance(desired, list):
        return (
            isinstance(current, list)
            and len(desired) == len(current)
            and all(is_subset(d, c) for d, c in zip(desired, current, strict=True))
        )
    return bool(desired == current)


def _named(items: Any) -> bool:
    return isinstance(items, list) and all(isinstance(item, dict) for item in items)


def applied_fields(current: Mapping[str, Any], manager: str) -> dict[str, Any] | None:
    """The `fieldsV1` of `manager`'s Apply entry in the object's managedFields, None if it applied nothing."""
    for entry in current.get("metadata", {}).get("managedFields") or []:
        if entry.get("manager") == manager and entry.get("operation") == APPLY and not entry.get("subresource"):
            fields = entry.get("fieldsV1")
            return dict(fields) if isinstance(fields, dict) else {}
    return None


def covers(fields: Mapping[str, Any], obj: Any) -> bool:
    """True when every field of a `fieldsV1` tree exists in `obj` (applying `obj` would prune nothing)."""
    for element, below in fields.items():
        if element == ".":
            continue
        child = _child(obj, element)
        if child is _MISSING or (below and not covers(below, child)):
            return False
    return True


_MISSING = object()


def _child(obj: Any, element: str) -> Any:
    kind, _, rest = element.partition(":")
    if kind == "f":
        return obj.get(rest, _MISSING) if isinstance(obj, dict) else _MISSING
    if not isinstance(obj, list):
        return _MISSING
    if kind == "k":
        key = json.loads(rest)
        matches = (item for item in obj if isinstance(item, dict) and _keyed(item, key))
    elif kind == "v":
        value = json.loads(rest)
        matches = (item for item in obj if item == value)
    else:
        return _MISSING
    return next(matches, _MISSING)


def _keyed(item: Mapping[str, Any], key: Mapping[str, Any]) -> bool:
    return all(item.get(name, _KEY_DEFAULTS.get(name)) == value for name, value in key.items())


def in_place(rendered: Mapping[str, Any], current: Mapping[str, Any], manager: str) -> bool:
    """Applying `rendered` as `manager` would change nothing in `current`."""
    fields = applied_fields(current, manager)
    return fields is not None and covers(fields, rendered) and is_subset(rendered, current)
