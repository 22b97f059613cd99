"""RBAC arithmetic over plain data: what a recorded API request needs, and what rendered roles grant. PURE.

A need is (verb, apiGroup, resource, namespace). The resource may carry a subresource, as RBAC rules spell
it ("specdecodedeployments/status"); the namespace is None for cluster-scoped resources and for requests
across all namespaces. Requests without a resource (discovery: /api, /apis, /version, /openapi) need
nothing here: every authenticated user may read them through the system:discovery role.

Rules are scoped as the chart binds them: a ClusterRole (through a ClusterRoleBinding) grants in every
namespace and at cluster scope; a Role (through a RoleBinding) grants only in its own namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

Rules = Sequence[Mapping[str, Any]]
# Rules by scope: None holds the cluster-wide rules, a namespace name the rules of the Roles in it.
ScopedRules = Mapping[str | None, Rules]


class Grant(NamedTuple):
    verb: str
    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.verb} {self.group or 'core'}/{self.resource}"


class Need(NamedTuple):
    verb: str
    group: str
    resource: str
    namespace: str | None = None

    @property
    def grant(self) -> Grant:
        return Grant(self.verb, self.group, self.resource)

    def __str__(self) -> str:
        return f"{self.grant} in {self.namespace or 'cluster scope'}"


class Request(Protocol):
    """What the emulator records per request (specfleet.emulator.recording.RecordedRequest)."""

    @property
    def verb(self) -> str: ...
    @property
    def api_group(self) -> str | None: ...
    @property
    def resource(self) -> str | None: ...
    @property
    def subresource(self) -> str | None: ...
    @property
    def namespace(self) -> str | None: ...


def need_of(request: Request) -> Need | None:
    """The permission a request needs, or None for non-resource (discovery) requests."""
    if request.api_group is None or not request.resource:
        return None
    resource = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    return Need(request.verb, request.api_group, resource, request.namespace)


def needs_of(requests: Iterable[Request]) -> set[Need]:
    return {need for need in map(need_of, requests) if need is not None}


def scoped_rules(manifests: Iterable[Mapping[str, Any]]) -> dict[str | None, list[Mapping[str, Any]]]:
    """The rules of rendered ClusterRoles (scope None) and Roles (scope: their namespace)."""
    scoped: dict[str | None, list[Mapping[str, Any]]] = {}
    for doc in manifests:
        if doc.get("kind") in {"ClusterRole", "Role"}:
            scope = doc["metadata"].get("namespace") if doc["kind"] == "Role" else None
            scoped.setdefault(scope, []).extend(doc.get("rules") or [])
    return scoped


def grants_of(rules: Rules) -> set[Grant]:
    """Every (verb, group, resource) the rules grant; wildcards stay "*" and are matched by `permits`."""
    return {
        Grant(verb, group, resource)
        for rule in rules
        if not rule.get("nonResourceURLs")
        for verb in rule.get("verbs", [])
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
    }


def permits(grant: Grant, need: Need) -> bool:
    return all(have in (want, "*") for have, want in zip(grant, need.grant, strict=True))


def _granted(need: Need, scoped: ScopedRules) -> bool:
    scopes = [None] if need.namespace is None else [None, need.namespace]
    return any(permits(grant, need) for scope in scopes for grant in grants_of(scoped.get(scope, [])))


def uncovered(needs: Iterable[Need], scoped: ScopedRules) -> set[Need]:
    """Needs no rule grants (the operator would get 403 Forbidden)."""
    return {need for need in needs if not _granted(need, scoped)}


def excess(needs: Iterable[Need], scoped: ScopedRules) -> set[tuple[str | None, Grant]]:
    """(scope, grant) pairs no need used: least privilege says remove them, or say why they stay."""
    used = list(needs)
    return {
        (scope, grant)
        for scope, rules in scoped.items()
        for grant in grants_of(rules)
        if not any(permits(grant, need) for need in used if scope is None or need.namespace == scope)
    }


def assert_rbac_covers(
    requests: Iterable[Request], rendered_rules: ScopedRules, unexercised: Mapping[Grant, str] | None = None
) -> None:
    """Fail unless the rules grant every request, and each other grant is listed in `unexercised` with why."""
    needs = needs_of(requests)
    missing = uncovered(needs, rendered_rules)
    assert not missing, "the rules do not grant: " + "; ".join(sorted(map(str, missing)))
    extra = {(scope, grant) for scope, grant in excess(needs, rendered_rules) if grant not in (unexercised or {})}
    assert not extra, "the rules grant what the run never used: " + "; ".join(
        sorted(f"{grant} ({scope or 'ClusterRole'})" for scope, grant in extra)
    )
