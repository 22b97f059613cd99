"""Generate the CustomResourceDefinitions from the pydantic types (the types are the one source of truth)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from specfleet.operator.api.constants import (
    GROUP,
    POLICY_KIND,
    POLICY_PLURAL,
    POLICY_SHORT_NAMES,
    POLICY_SINGULAR,
    PROFILE_KIND,
    PROFILE_PLURAL,
    PROFILE_SHORT_NAMES,
    PROFILE_SINGULAR,
    SDD_KIND,
    SDD_PLURAL,
    SDD_SHORT_NAMES,
    SDD_SINGULAR,
    VERSION,
)
from specfleet.operator.api.policy_types import SpeculationPolicySpec
from specfleet.operator.api.profile_types import SpeculationProfileSpec, SpeculationProfileStatus
from specfleet.operator.api.types import (
    NAME_INVALID,
    NAME_RULE,
    SpecDecodeDeploymentSpec,
    SpecDecodeDeploymentStatus,
)

Schema = dict[str, Any]

# JSON-Schema keywords a structural OpenAPI v3 schema may carry; everything else is dropped.
_KEPT_KEYWORDS = {
    "type",
    "description",
    "properties",
    "required",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "maxProperties",
    "format",
    "x-kubernetes-validations",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
}

READY_CONDITION = '.status.conditions[?(@.type=="Ready")]'
# `kubectl get` shows the priority-0 columns; `-o wide` adds the priority-1 detail. Figures are rounded in
# status (see status/evaluation.py), so no column prints a float's full precision.
SDD_PRINTER_COLUMNS: list[Schema] = [
    {
        "name": "Ready",
        "type": "string",
        "jsonPath": f"{READY_CONDITION}.status",
        "description": "Whether every replica is ready (the Ready condition).",
    },
    {
        "name": "Reason",
        "type": "string",
        "jsonPath": f"{READY_CONDITION}.reason",
        "description": "Why the fleet is (not) ready.",
    },
    {
        "name": "Mode",
        "type": "string",
        "jsonPath": ".spec.speculation.mode",
        "description": "Speculation mode.",
    },
    {
        "name": "Spec",
        "type": "boolean",
        "jsonPath": ".status.speculation.enabled",
        "description": "Speculating now.",
    },
    {
        "name": "K",
        "type": "integer",
        "jsonPath": ".status.speculation.k",
        "description": "Draft tokens per step.",
    },
    {
        "name": "Method",
        "type": "string",
        "jsonPath": ".spec.speculation.method",
        "description": "Draft method.",
        "priority": 1,
    },
    {
        "name": "Accept-Len",
        "type": "number",
        "jsonPath": ".status.signals.acceptanceLength",
        "description": "Mean acceptance length over the last window.",
        "priority": 1,
    },
    {
        "name": "QPS",
        "type": "number",
        "jsonPath": ".status.signals.qps",
        "description": "Completed requests/s.",
        "priority": 1,
    },
    {
        "name": "Ready-Pods",
        "type": "integer",
        "jsonPath": ".status.readyReplicas",
        "description": "Ready pods.",
        "priority": 1,
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]

POLICY_PRINTER_COLUMNS: list[Schema] = [
    {
        "name": "Interval",
        "type": "integer",
        "jsonPath": ".spec.intervalSeconds",
        "description": "Seconds between evaluations.",
    },
    {
        "name": "Cooldown",
        "type": "integer",
        "jsonPath": ".spec.cooldownSeconds",
        "description": "Minimum seconds between restart-bound changes.",
    },
    {
        "name": "Fallback",
        "type": "string",
        "jsonPath": ".spec.fallback",
        "description": "What happens while metrics are missing.",
    },
    {
        "name": "Enable-Margin",
        "type": "number",
        "jsonPath": ".spec.enableMargin",
        "description": "Predicted gain above which speculation turns on.",
        "priority": 1,
    },
    {
        "name": "Disable-Margin",
        "type": "number",
        "jsonPath": ".spec.disableMargin",
        "description": "Predicted gain below which speculation turns off.",
        "priority": 1,
    },
    {
        "name": "Restarts/h",
        "type": "integer",
        "jsonPath": ".spec.maxRestartsPerHour",
        "description": "Restart-bound changes allowed per rolling hour.",
        "priority": 1,
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def openapi_schema(model: type[BaseModel]) -> Schema:
    """The structural OpenAPI v3 schema of a pydantic model, with every $ref inlined."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    return _structural(raw, raw.get("$defs", {}))


def _structural(node: Schema, defs: dict[str, Schema]) -> Schema:
    if "$ref" in node:
        target = defs[node["$ref"].split("/")[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _structural(merged, defs)
    variants = node.get("anyOf")
    if variants is not None:
        return _structural_union(node, variants, defs)
    out: Schema = {key: value for key, value in node.items() if key in _KEPT_KEYWORDS}
    _convert_bounds(node, out)
    if "properties" in node:
        out["properties"] = {name: _structural(sub, defs) for name, sub in node["properties"].items()}
        out["type"] = "object"
    if "items" in node:
        out["items"] = _structural(node["items"], defs)
    additional = node.get("additionalProperties")
    if isinstance(additional, dict) and additional:
        out["additionalProperties"] = _structural(additional, defs)
    elif additional is True or (node.get("type") == "object" and "properties" not in node and not additional):
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _structural_union(node: Schema, variants: list[Schema], defs: dict[str, Schema]) -> Schema:
    """Optional fields become the non-null variant; true unions of scalars accept any value."""
    concrete = [variant for variant in variants if variant.get("type") != "null"]
    outer = {key: value for key, value in node.items() if key not in {"anyOf", "title"}}
    if outer.get("default", 0) is None:
        del outer["default"]
    if len(concrete) == 1:
        return _structural({**concrete[0], **outer}, defs)
    described = {key: value for key, value in outer.items() if key == "description"}
    return {**described, "x-kubernetes-preserve-unknown-fields": True}


def _convert_bounds(node: Schema, out: Schema) -> None:
    """JSON Schema's numeric exclusive bounds → OpenAPI v3.0's boolean form."""
    for bound, plain in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if bound in node:
            out[plain] = node[bound]
            out[bound] = True


def _resource_schema(
    spec: type[BaseModel], status: type[BaseModel] | None, description: str, rules: list[Schema] | None = None
) -> Schema:
    properties: Schema = {
        "apiVersion": {"type": "string", "description": "API version of the object."},
        "kind": {"type": "string", "description": "Kind of the object."},
        "metadata": {"type": "object"},
        "spec": openapi_schema(spec),
    }
    if status is not None:
        properties["status"] = openapi_schema(status)
    schema: Schema = {"type": "object", "description": description, "properties": properties, "required": ["spec"]}
    if rules:
        schema["x-kubernetes-validations"] = rules
    return schema


def _crd(
    kind: str,
    plural: str,
    singular: str,
    short_names: list[str],
    version: Schema,
) -> Schema:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{GROUP}",
            "labels": {"app.kubernetes.io/name": "specfleet", "app.kubernetes.io/part-of": "specfleet"},
        },
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": singular,
                "shortNames": short_names,
                "categories": ["specfleet"],
            },
            "versions": [version],
        },
    }


def _version(schema: Schema, columns: list[Schema], **extra: Any) -> Schema:
    """The one served and stored version, with its schema and printer columns."""
    return {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
        **extra,
        "additionalPrinterColumns": columns,
    }


def spec_decode_deployment_crd() -> Schema:
    """The SpecDecodeDeployment CRD, with status and scale subresources and printer columns."""
    schema = _resource_schema(
        SpecDecodeDeploymentSpec,
        SpecDecodeDeploymentStatus,
        "A fleet of vLLM pods serving one model with speculative decoding that specfleet turns on, "
        "off or re-tunes as the load regime changes.",
        [{"rule": NAME_RULE, "message": NAME_INVALID}],
    )
    subresources = {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }
    version = _version(schema, SDD_PRINTER_COLUMNS, subresources=subresources)
    return _crd(SDD_KIND, SDD_PLURAL, SDD_SINGULAR, SDD_SHORT_NAMES, version)


def speculation_policy_crd() -> Schema:
    """The SpeculationPolicy CRD: SRE-owned rules referenced by many deployments."""
    schema = _resource_schema(
        SpeculationPolicySpec,
        None,
        "Thresholds, windows and safety limits that govern speculation for the deployments referencing it.",
    )
    version = _version(schema, POLICY_PRINTER_COLUMNS)
    return _crd(POLICY_KIND, POLICY_PLURAL, POLICY_SINGULAR, POLICY_SHORT_NAMES, version)


PROFILE_PRINTER_COLUMNS = [
    {"name": "Fleet", "type": "string", "jsonPath": ".spec.fleetRef.name", "description": "Fleet profiled."},
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "Where the sweep stands."},
    {
        "name": "Crossovers",
        "type": "string",
        "jsonPath": ".status.summary",
        "description": "Throughput crossover concurrency per k.",
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def speculation_profile_crd() -> Schema:
    """The SpeculationProfile CRD: a measured sweep of one fleet's model and draft, with a status subresource."""
    schema = _resource_schema(
        SpeculationProfileSpec,
        SpeculationProfileStatus,
        "A sweep over concurrency and k of one fleet's model and draft on the user's prompts, run by the operator "
        "as a Job against a dedicated engine pod; its crossovers and fitted step costs seed the fleet's policy.",
        [{"rule": NAME_RULE, "message": NAME_INVALID}],
    )
    version = _version(schema, PROFILE_PRINTER_COLUMNS, subresources={"status": {}})
    return _crd(PROFILE_KIND, PROFILE_PLURAL, PROFILE_SINGULAR, PROFILE_SHORT_NAMES, version)


def all_crds() -> dict[str, Schema]:
    """File name → CRD, as committed under crds/."""
    return {
        f"{SDD_PLURAL}.{GROUP}.yaml": spec_decode_deployment_crd(),
        f"{POLICY_PLURAL}.{GROUP}.yaml": speculation_policy_crd(),
        f"{PROFILE_PLURAL}.{GROUP}.yaml": speculation_profile_crd(),
    }
