"""The resource types the emulator serves: built-in ones and those registered by CRDs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CRD_GROUP = "apiextensions.k8s.io"


@dataclass(frozen=True)
class ScalePaths:
    """Where a resource keeps what its scale subresource shows (JSON paths like `.spec.replicas`)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = None


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status: bool = False  # status is a subresource: split from writes to the main resource
    scale: ScalePaths | None = None
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    printer_columns: tuple[dict[str, Any], ...] = field(default=(), compare=False, hash=False)
    crd_name: str | None = None  # the CRD that registered it; None for built-ins

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.group, self.version, self.plural)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """`plural.group`, as messages name a resource (`deployments.apps`, `pods`)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def subresources(self) -> tuple[str, ...]:
        return tuple(name for name, on in (("status", self.status), ("scale", self.scale)) if on)


def _builtin(api_version: str, plural: str, kind: str, *short: str, **extra: Any) -> ResourceType:
    group, _, version = api_version.rpartition("/")
    return ResourceType(group, version, plural, kind, singular=kind.lower(), short_names=short, **extra)


BUILTINS: tuple[ResourceType, ...] = (
    _builtin("v1", "namespaces", "Namespace", "ns", namespaced=False, status=True),
    _builtin("v1", "pods", "Pod", "po"),
    _builtin("v1", "services", "Service", "svc"),
    _builtin("v1", "events", "Event", "ev"),
    _builtin("v1", "configmaps", "ConfigMap", "cm"),
    _builtin("v1", "secrets", "Secret"),
    _builtin("v1", "serviceaccounts", "ServiceAccount", "sa"),
    _builtin("apps/v1", "deployments", "Deployment", "deploy", status=True, scale=ScalePaths()),
    _builtin("batch/v1", "jobs", "Job", status=True),
    _builtin("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", "pdb", status=True),
    _builtin("events.k8s.io/v1", "events", "Event", "ev"),
    _builtin("coordination.k8s.io/v1", "leases", "Lease"),
    _builtin("rbac.authorization.k8s.io/v1", "roles", "Role"),
    _builtin("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding"),
    _builtin("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", namespaced=False),
    _builtin("rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False),
    _builtin(
        f"{CRD_GROUP}/v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        "crd",
        "crds",
        namespaced=False,
        status=True,
    ),
)


def types_of_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """One resource type per served version of an apiextensions.k8s.io/v1 CRD."""
    spec = crd.get("spec", {})
    names = spec.get("names", {})
    result = []
    for version in spec.get("versions", []):
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or {}
        scale = subresources.get("scale")
        result.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                plural=names["plural"],
                kind=names["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=names.get("singular", names["kind"].lower()),
                short_names=tuple(names.get("shortNames", ())),
                categories=tuple(names.get("categories", ())),
                status="status" in subresources,
                scale=_scale_paths(scale) if scale is not None else None,
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
                printer_columns=tuple(version.get("additionalPrinterColumns", ())),
                crd_name=crd["metadata"]["name"],
            )
        )
    return result


def _scale_paths(scale: dict[str, Any]) -> ScalePaths:
    return ScalePaths(
        spec_replicas=scale.get("specReplicasPath", ".spec.replicas"),
        status_replicas=scale.get("statusReplicasPath", ".status.replicas"),
        label_selector=scale.get("labelSelectorPath"),
    )


class Registry:
    """Resource types by (group, version, plural), plus lookups by kind for in-process writes."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {rt.key: rt for rt in BUILTINS}

    def find(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        return next((rt for rt in self._types.values() if (rt.api_version, rt.kind) == (api_version, kind)), None)

    def all(self) -> list[ResourceType]:
        return list(self._types.values())

    def register_crd(self, crd: dict[str, Any]) -> None:
        self.unregister_crd(crd["metadata"]["name"])
        for rt in types_of_crd(crd):
            self._types[rt.key] = rt

    def unregister_crd(self, crd_name: str) -> list[ResourceType]:
        gone = [rt for rt in self._types.values() if rt.crd_name == crd_name]
        for rt in gone:
            del self._types[rt.key]
        return gone
