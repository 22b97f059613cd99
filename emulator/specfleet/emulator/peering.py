"""The CRDs of Kopf's peering (kopf.dev/v1 ClusterKopfPeering and KopfPeering), as Kopf documents them."""

from __future__ import annotations

from typing import Any


def _peering_crd(kind: str, scope: str) -> dict[str, Any]:
    plural = kind.lower() + "s"
    schema = {
        "type": "object",
        "properties": {"status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.kopf.dev"},
        "spec": {
            "scope": scope,
            "group": "kopf.dev",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def kopf_peering_crds() -> list[dict[str, Any]]:
    """Both peering CRDs; apply them to let Kopf run with peering (standalone=False)."""
    return [_peering_crd("ClusterKopfPeering", "Cluster"), _peering_crd("KopfPeering", "Namespaced")]
