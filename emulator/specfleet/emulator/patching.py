"""PATCH bodies applied to stored objects: JSON merge patch, strategic merge patch, JSON patch."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch  # type: ignore[import-untyped]

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Lists that Kubernetes merges item by item (patchMergeKey) instead of replacing them whole.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "conditions": "type",
    "ownerReferences": "uid",
    "ports": "containerPort|port",
}
_DIRECTIVE_PREFIXES = ("$setElementOrder/", "$retainKeys", "$deleteFromPrimitiveList/")


class PatchError(ValueError):
    """A patch that cannot be applied (malformed, or a failed JSON-patch `test`)."""


class UnsupportedPatchTypeError(PatchError):
    """A PATCH whose content type names no patch format the API knows."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A merge patch that merges the well-known keyed lists (containers by name, ...) item by item."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {key: value for key, value in patch.items() if key != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [item for item in result.get(field, []) if item not in value]
        elif key == "$patch" or key.startswith(_DIRECTIVE_PREFIXES):
            continue
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in _MERGE_KEYS and isinstance(result.get(key), list):
            result[key] = _merge_keyed_list(result[key], value, _MERGE_KEYS[key])
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    return result


def _merge_keyed_list(items: list[Any], patch: list[Any], keys: str) -> list[Any]:
    if not all(isinstance(item, dict) for item in [*items, *patch]):
        return copy.deepcopy(patch)
    key = next((k for k in keys.split("|") if any(k in item for item in patch)), keys.split("|")[0])
    merged = list(items)
    for change in patch:
        index = next((i for i, item in enumerate(merged) if item.get(key) == change.get(key)), None)
        if change.get("$patch") == "delete":
            merged = [item for item in merged if item.get(key) != change.get(key)]
        elif index is None:
            merged.append(strategic_merge_patch({}, change))
        else:
            merged[index] = strategic_merge_patch(merged[index], change)
    return merged


def json_patch(target: dict[str, Any], ops: Any) -> dict[str, Any]:
    """RFC 6902 operations (add, remove, replace, move, copy, test)."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    try:
        result: dict[str, Any] = jsonpatch.apply_patch(target, ops, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise PatchError(str(exc)) from exc
    return result


def apply_patch(content_type: str, target: dict[str, Any], patch: Any) -> dict[str, Any]:
    """The patched object for a PATCH request's content type."""
    media_type = content_type.split(";")[0].strip()
    if media_type == JSON_PATCH:
        return json_patch(target, patch)
    if not isinstance(patch, dict):
        raise PatchError(f"a {media_type} body must be an object")
    if media_type == STRATEGIC_PATCH:
        result: dict[str, Any] = strategic_merge_patch(target, patch)
        return result
    if media_type in (MERGE_PATCH, APPLY_PATCH):
        merged: dict[str, Any] = merge_patch(target, patch)
        return merged
    raise UnsupportedPatchTypeError(f"the body of the request was in an unknown format: {media_type}")
