"""OpenAPI v3 documents (/openapi/v3, /openapi/v3/apis/<group>/<version>) built from the served types.

What `kubectl explain` reads: the index of group-versions, then each group-version's component schemas
tagged with their group/version/kind. A CRD's own structural schema is served as registered, descriptions
included; a built-in type without one is an open object.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from specfleet.emulator.resources import ResourceType

_PREFIX = ("openapi", "v3")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def schema_name(rt: ResourceType) -> str:
    """`dev.specfleet.v1alpha1.SpecDecodeDeployment`: the group reversed, as Kubernetes names definitions."""
    reversed_group = ".".join(reversed(rt.group.split("."))) if rt.group else "io.k8s.api.core"
    return f"{reversed_group}.{rt.version}.{rt.kind}"


def _schema(rt: ResourceType) -> dict[str, Any]:
    schema = dict(rt.schema) if rt.schema else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    return {**schema, "x-kubernetes-group-version-kind": [gvk]}


# kubectl validates on the server (it sends fieldValidation=Strict) when a kind's patch operation lists this
# parameter; otherwise it falls back to client-side validation against OpenAPI v2, which is not served.
_FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "description": "How the server treats fields the schema does not declare: Ignore, Warn or Strict.",
    "schema": {"type": "string", "enum": ["Ignore", "Warn", "Strict"]},
}


def _paths(rt: ResourceType) -> dict[str, Any]:
    """The resource's item path with a `get` and a `patch` that name its kind: how clients map a resource to
    its schema, and learn that the server validates fields."""
    base = f"/{_gv_path(rt.group, rt.version)}" + ("/namespaces/{namespace}" if rt.namespaced else "")
    ref = {"$ref": f"#/components/schemas/{schema_name(rt)}"}
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    responses = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
    get = {
        "operationId": f"read{rt.kind}",
        "responses": responses,
        "x-kubernetes-action": "get",
        "x-kubernetes-group-version-kind": gvk,
    }
    patch = {
        "operationId": f"patch{rt.kind}",
        "parameters": [_FIELD_VALIDATION],
        "responses": responses,
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": gvk,
    }
    return {f"{base}/{rt.plural}/{{name}}": {"get": get, "patch": patch}}


def group_version(types: list[ResourceType], group: str, version: str) -> dict[str, Any] | None:
    served = [rt for rt in types if (rt.group, rt.version) == (group, version)]
    if not served:
        return None
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": {path: item for rt in served for path, item in _paths(rt).items()},
        "components": {"schemas": {schema_name(rt): _schema(rt) for rt in served}},
    }


def index(types: list[ResourceType]) -> dict[str, Any]:
    """Every group-version, with a hash of its document so clients refetch only what changed."""
    paths: dict[str, Any] = {}
    for group, version in sorted({(rt.group, rt.version) for rt in types}):
        body = json.dumps(group_version(types, group, version), sort_keys=True).encode()
        digest = hashlib.sha256(body).hexdigest()[:32].upper()
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def document(types: list[ResourceType], path: str) -> dict[str, Any] | None:
    """The OpenAPI document at a path, or None when the path is not one."""
    parts = tuple(part for part in path.split("/") if part)
    if parts[:2] != _PREFIX:
        return None
    match parts[2:]:
        case ():
            return index(types)
        case ("api", version):
            return group_version(types, "", version)
        case ("apis", group, version):
            return group_version(types, group, version)
    return None
