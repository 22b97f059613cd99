"""A small test CRD (test.dev/v1 Widget) with what specfleet's CRD uses: schema limits, defaults,
CEL rules (one a transition rule), status and scale subresources, printer columns."""

from __future__ import annotations

from typing import Any

GROUP = "test.dev"
API_VERSION = f"{GROUP}/v1"
PLURAL = "widgets"
KIND = "Widget"

_SPEC = {
    "type": "object",
    "required": ["replicas"],
    "properties": {
        "replicas": {"type": "integer", "minimum": 0, "maximum": 10},
        "mode": {"type": "string", "enum": ["Auto", "On", "Off"], "default": "Auto"},
        "model": {
            "type": "string",
            "minLength": 1,
            "maxLength": 20,
            "pattern": "^[a-z0-9-]*$",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "model is immutable"}],
        },
        "tags": {"type": "array", "maxItems": 3, "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "speculation": {
            "type": "object",
            "properties": {"k": {"type": "integer"}, "maxK": {"type": "integer", "default": 5}},
            "x-kubernetes-validations": [
                {"rule": "!has(self.k) || self.k <= self.maxK", "message": "k must not exceed maxK"}
            ],
        },
    },
}
_STATUS = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,  # Kopf keeps its progress and handler results here
    "properties": {
        "replicas": {"type": "integer"},
        "selector": {"type": "string"},
        "phase": {"type": "string"},
        "conditions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"type": {"type": "string"}, "status": {"type": "string"}},
            },
        },
    },
}
_COLUMNS = [
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def widget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": KIND, "plural": PLURAL, "singular": "widget", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": _SPEC, "status": _STATUS},
                        }
                    },
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                    "additionalPrinterColumns": _COLUMNS,
                }
            ],
        },
    }


def widget(name: str, namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    """A Widget manifest; without a namespace it lands where the request URL says."""
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": {"replicas": 1, **spec}}
