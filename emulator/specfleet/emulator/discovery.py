"""Discovery documents (/api, /apis, /apis/<group>/<version>, /version) built from the served types."""

from __future__ import annotations

from typing import Any

from specfleet.emulator.resources import ResourceType

KUBERNETES_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0+specfleet.emulator",
    "gitCommit": "",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23",
    "compiler": "gc",
    "platform": "linux/amd64",
}
_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
_SUBRESOURCE_VERBS = ["get", "patch", "update"]


def _versions_by_group(types: list[ResourceType]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for rt in types:
        versions = groups.setdefault(rt.group, [])
        if rt.version not in versions:
            versions.append(rt.version)
    return groups


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{version}", "version": version} for version in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def _resources(rt: ResourceType) -> list[dict[str, Any]]:
    main = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": _VERBS,
        **({"shortNames": list(rt.short_names)} if rt.short_names else {}),
        **({"categories": list(rt.categories)} if rt.categories else {}),
    }
    subresources = []
    if rt.status:
        subresources.append(
            {
                "name": f"{rt.plural}/status",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": _SUBRESOURCE_VERBS,
            }
        )
    if rt.scale:
        subresources.append(
            {
                "name": f"{rt.plural}/scale",
                "singularName": "",
                "namespaced": rt.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": _SUBRESOURCE_VERBS,
            }
        )
    return [main, *subresources]


def document(types: list[ResourceType], path: str) -> dict[str, Any] | None:
    """The discovery document at a path, or None when the path is not a discovery path."""
    parts = [part for part in path.split("/") if part]
    groups = _versions_by_group(types)
    match parts:
        case []:
            paths = ["/api", "/api/v1", "/apis", "/openapi/v3", "/version"]
            paths += [f"/apis/{g}/{v}" for g, vs in groups.items() if g for v in vs] + [
                f"/apis/{g}" for g in groups if g
            ]
            return {"paths": sorted(paths)}
        case ["version"]:
            return KUBERNETES_VERSION
        case ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        case ["apis"]:
            listed = [_group(g, vs) for g, vs in sorted(groups.items()) if g]
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": listed}
        case ["apis", group] if group in groups:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, groups[group])}
        case ["api", version] | ["apis", _, version]:
            group = parts[1] if parts[0] == "apis" else ""
            served = [rt for rt in types if (rt.group, rt.version) == (group, version)]
            if not served:
                return None
            return {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version,
                "resources": [entry for rt in served for entry in _resources(rt)],
            }
    return None
