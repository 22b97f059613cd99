"""What the apiserver itself does to particular kinds on write (the built-in admission and strategies)."""

from __future__ import annotations

import base64
from typing import Any

from specfleet.emulator.errors import ApiError, invalid
from specfleet.emulator.resources import CRD_GROUP, ResourceType, types_of_crd
from specfleet.emulator.schema import cause


def is_crd(rt: ResourceType) -> bool:
    return (rt.group, rt.plural) == (CRD_GROUP, "customresourcedefinitions")


def admit(rt: ResourceType, obj: dict[str, Any]) -> None:
    """Server-side changes to an object about to be stored (in place)."""
    if (rt.group, rt.plural) == ("", "namespaces"):
        terminating = bool(obj["metadata"].get("deletionTimestamp"))
        obj["status"] = {"phase": "Terminating" if terminating else "Active"}
    elif (rt.group, rt.plural) == ("", "secrets"):
        obj["type"] = obj.get("type") or "Opaque"  # the API server's default for a Secret of no type
        if "stringData" in obj:
            encoded = {key: base64.b64encode(str(v).encode()).decode() for key, v in obj.pop("stringData").items()}
            obj["data"] = {**(obj.get("data") or {}), **encoded}
    elif is_crd(rt):
        _check_crd(rt, obj)
        obj["status"] = _crd_status(obj)


def _check_crd(rt: ResourceType, crd: dict[str, Any]) -> None:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    name = crd["metadata"]["name"]
    causes = [
        cause(f"spec.{field}", "FieldValueRequired", "Required value")
        for field, value in (
            ("group", spec.get("group")),
            ("names.plural", names.get("plural")),
            ("names.kind", names.get("kind")),
            ("versions", spec.get("versions")),
        )
        if not value
    ]
    expected = f"{names.get('plural')}.{spec.get('group')}"
    if not causes and name != expected:
        causes.append(
            cause(
                "metadata.name",
                "FieldValueInvalid",
                f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
            )
        )
    if causes:
        raise invalid(rt, name, causes)
    try:
        types_of_crd(crd)
    except (KeyError, TypeError) as exc:
        raise ApiError(400, "BadRequest", f"malformed CustomResourceDefinition: {exc}") from exc


def _crd_status(crd: dict[str, Any]) -> dict[str, Any]:
    """What the apiextensions controller reports once it has accepted the names: established."""
    spec = crd["spec"]
    condition = {"status": "True", "lastTransitionTime": crd["metadata"].get("creationTimestamp")}
    return {
        "acceptedNames": spec["names"],
        "conditions": [
            {**condition, "type": "NamesAccepted", "reason": "NoConflicts", "message": "no conflicts found"},
            {
                **condition,
                "type": "Established",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
        "storedVersions": [v["name"] for v in spec["versions"] if v.get("storage")] or [spec["versions"][0]["name"]],
    }
