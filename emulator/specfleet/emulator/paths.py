"""Kubernetes API URL paths: what a request addresses, and the RBAC verb it amounts to."""

from __future__ import annotations

from dataclasses import dataclass

# /api/v1/namespaces/<name>/<these> address a namespace's subresource, not a namespaced resource.
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True)
class ApiPath:
    """The parts of a resource URL; `group` is None for non-resource paths (discovery, /version)."""

    group: str | None = None
    version: str | None = None
    plural: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None

    @property
    def is_resource(self) -> bool:
        return self.group is not None and self.plural is not None


def parse_path(path: str) -> ApiPath:
    """Split /api/v1/namespaces/ns/pods/name/status and the like into its parts.

    kmock's own parser crashes on /api/v1/namespaces and reads /api/v1/namespaces/x as
    "namespace x"; here `namespaces` followed by nothing or one segment is the resource itself.
    """
    parts = [part for part in path.split("/") if part]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return ApiPath()
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return ApiPath(group=group, version=version)
    plural, name = rest[0], rest[1] if len(rest) > 1 else None
    subresource = "/".join(rest[2:]) or None
    return ApiPath(group, version, plural, namespace, name, subresource)


def verb_of(method: str, path: ApiPath, query: dict[str, str]) -> str:
    """The Kubernetes (RBAC) verb of a request: get, list, watch, create, update, patch, delete, ..."""
    method = method.upper()
    if not path.is_resource:
        return method.lower()
    if method == "GET":
        if query.get("watch") in ("true", "1"):
            return "watch"
        return "get" if path.name else "list"
    collection_verbs = {"POST": "create", "DELETE": "deletecollection"}
    object_verbs = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    verbs = object_verbs if path.name else collection_verbs
    return verbs.get(method, method.lower())
