"""Labels, selectors and owner references shared by every rendered child object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specfleet.operator.api.constants import (
    API_VERSION,
    LABEL_COMPONENT,
    LABEL_DEPLOYMENT,
    LABEL_INSTANCE,
    LABEL_MANAGED_BY,
    LABEL_NAME,
    LABEL_PART_OF,
    MANAGER,
    SDD_KIND,
)

ENGINE_APP = "specfleet-engine"


@dataclass(frozen=True)
class Owner:
    """The resource the children belong to: a SpecDecodeDeployment, or a SpeculationProfile."""

    name: str
    namespace: str
    uid: str
    kind: str = SDD_KIND

    def reference(self) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


def selector_labels(owner: Owner) -> dict[str, str]:
    """Labels that select the fleet's pods; immutable for the life of the Deployment."""
    return {LABEL_NAME: ENGINE_APP, LABEL_INSTANCE: owner.name}


def selector_string(owner: Owner) -> str:
    """The pod selector in the string form the scale subresource wants."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector_labels(owner).items()))


def common_labels(owner: Owner) -> dict[str, str]:
    return {
        **selector_labels(owner),
        LABEL_COMPONENT: "inference",
        LABEL_PART_OF: "specfleet",
        LABEL_MANAGED_BY: MANAGER,
        LABEL_DEPLOYMENT: owner.name,
    }


def object_meta(owner: Owner, name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": owner.namespace,
        "labels": common_labels(owner),
        "ownerReferences": [owner.reference()],
    }
    if annotations:
        meta["annotations"] = annotations
    return meta
