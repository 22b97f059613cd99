"""System-owned metadata: uid, resourceVersion, creationTimestamp, generation, generateName."""

from __future__ import annotations

import datetime
import secrets
import string
import uuid
from typing import Any

# Fields of metadata that clients cannot set or change; the server keeps its own values.
_SYSTEM_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's: no vowels, no look-alike digits


def now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def generated_name(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))


def stamp_created(obj: dict[str, Any]) -> None:
    """Give a new object its identity; the name must already be set."""
    meta = obj.setdefault("metadata", {})
    for key in _SYSTEM_FIELDS:
        meta.pop(key, None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now()
    meta["generation"] = 1


def keep_system_fields(new: dict[str, Any], old: dict[str, Any]) -> None:
    """Carry the server-owned metadata of the stored object into an updated one."""
    meta = new.setdefault("metadata", {})
    old_meta = old.get("metadata", {})
    for key in _SYSTEM_FIELDS:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    for key in ("name", "namespace"):
        if key in old_meta:
            meta[key] = old_meta[key]


def content_changed(new: dict[str, Any], old: dict[str, Any], status_is_subresource: bool) -> bool:
    """Whether the spec-like content changed, which bumps `generation` (metadata never does)."""
    ignored = {"metadata", "status"} if status_is_subresource else {"metadata"}
    return {k: v for k, v in new.items() if k not in ignored} != {k: v for k, v in old.items() if k not in ignored}


def without_resource_version(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as compared for no-op writes, which the apiserver does not store (a change of ownership
    alone is stored: managedFields keep their times when their fields do not change)."""
    meta = {k: v for k, v in obj.get("metadata", {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}


def name_alphabet_ok(name: str) -> bool:
    """DNS-1123 subdomain check that the apiserver applies to most object names."""
    allowed = set(string.ascii_lowercase + string.digits + "-.")
    return 0 < len(name) <= 253 and set(name) <= allowed and name[0].isalnum() and name[-1].isalnum()
