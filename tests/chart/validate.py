"""Validate rendered manifests offline: built-in kinds against the Kubernetes schemas (kubernetes-validate),
custom resources against their CRD's openAPIV3Schema, as an API server with strict field validation would."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.chart.helm import CHART
from tests.fixtures.deps import require_module

KUBERNETES_VERSION = "1.35.0"
SCHEMAS = Path(__file__).parent / "schemas"
# Every object may carry these, whatever its CRD's schema lists.
ROOT_FIELDS = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}


def strict(schema: Any) -> Any:
    """The schema, refusing unknown fields wherever the CRD lists its fields and preserves no others."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: strict(value) for key, value in schema.items()}
    closed = not schema.get("x-kubernetes-preserve-unknown-fields")
    if "properties" in schema and "additionalProperties" not in schema and closed:
        result["additionalProperties"] = False
    return result


def custom_resource_schema(crd_schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON schema for whole objects of a CRD: its openAPIV3Schema, strict, with the root fields allowed."""
    root = dict(crd_schema)
    root["properties"] = {**ROOT_FIELDS, **root.get("properties", {})}
    return dict(strict(root))


@cache
def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> schema, for the chart's own CRDs and the vendored prometheus-operator ones."""
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted((CHART / "crds").rglob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            for version in crd["spec"]["versions"]:
                key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
                schemas[key] = custom_resource_schema(version["schema"]["openAPIV3Schema"])
    for path in sorted(SCHEMAS.glob("*.json")):
        vendored = json.loads(path.read_text())
        schemas[(vendored["apiVersion"], vendored["kind"])] = custom_resource_schema(vendored["openAPIV3Schema"])
    return schemas


def violations(manifest: Mapping[str, Any]) -> list[str]:
    """Schema errors of one manifest (empty: valid); unknown kinds are an error too."""
    key = (str(manifest.get("apiVersion")), str(manifest.get("kind")))
    name = f"{key[1]}/{manifest.get('metadata', {}).get('name')}"
    schema = _crd_schemas().get(key)
    if schema is not None:
        validator = jsonschema.Draft7Validator(schema)
        return [
            f"{name}: {'/'.join(map(str, error.absolute_path))}: {error.message}"
            for error in validator.iter_errors(manifest)
        ]
    return _kubernetes_violations(name, manifest)


def _kubernetes_violations(name: str, manifest: Mapping[str, Any]) -> list[str]:
    require_module("kubernetes_validate")
    import kubernetes_validate

    try:
        kubernetes_validate.validate(dict(manifest), KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{name}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError as exc:
        return [f"{name}: no Kubernetes {KUBERNETES_VERSION} schema ({exc.__class__.__name__})"]
    return []


def all_violations(manifests: Iterable[Mapping[str, Any]]) -> list[str]:
    return [problem for manifest in manifests for problem in violations(manifest)]
