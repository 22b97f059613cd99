"""Garbage collection: what goes when an owner (or a namespace) goes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

Key = TypeVar("Key")


def dependents(owner_uid: str, objects: Iterable[tuple[Key, dict[str, Any]]]) -> list[Key]:
    """Keys of the objects that name the owner in their metadata.ownerReferences."""
    return [
        key
        for key, obj in objects
        if any(ref.get("uid") == owner_uid for ref in obj.get("metadata", {}).get("ownerReferences") or [])
    ]


def orphaned(obj: dict[str, Any], owner_uid: str) -> dict[str, Any]:
    """A dependent with the owner's reference removed (propagationPolicy=Orphan)."""
    meta = dict(obj.get("metadata", {}))
    refs = [ref for ref in meta.get("ownerReferences") or [] if ref.get("uid") != owner_uid]
    if refs:
        meta["ownerReferences"] = refs
    else:
        meta.pop("ownerReferences", None)
    return {**obj, "metadata": meta}


def in_namespace(namespace: str, objects: Iterable[tuple[Key, dict[str, Any]]]) -> list[Key]:
    """Keys of the objects living in a namespace being deleted."""
    return [key for key, obj in objects if obj.get("metadata", {}).get("namespace") == namespace]
