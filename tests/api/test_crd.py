from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from specfleet.operator.api.crdgen import all_crds, spec_decode_deployment_crd, speculation_policy_crd
from specfleet.operator.api.quantity import QUANTITY_PATTERN
from specfleet.operator.api.types import MAX_RESOURCES, PORT_COLLIDES, Condition
from specfleet.operator.cli import main, render_crd_files
from specfleet.operator.status.conditions import set_condition
from specfleet.runtime.extra_args import EXTRA_ARG_SYNTAX_MESSAGE, MANAGED_FLAGS_MESSAGE
from tests.examples import ROOT

NOW = "2026-01-01T00:00:00Z"


def test_committed_crds_equal_generated() -> None:
    assert main(["crds", "--check", str(ROOT / "crds")]) == 0, "run `specfleet crds --write crds`"


def test_committed_crd_files_are_exactly_the_generated_set() -> None:
    committed = {p.name for p in (ROOT / "crds").glob("*.yaml")}
    assert committed == set(render_crd_files())


def _walk(schema: dict[str, Any], path: str = ""):  # type: ignore[no-untyped-def]
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _walk(sub, f"{path}.{name}")
    if "items" in schema:
        yield from _walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], f"{path}{{}}")


def test_schemas_are_structural_and_described() -> None:
    for crd in all_crds().values():
        root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for path, node in _walk(root["properties"]["spec"], ".spec"):
            assert "description" in node or path.endswith("[]") or path.endswith("}"), f"{path} lacks a description"
            untyped = node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-int-or-string")
            assert "type" in node or untyped, f"{path} has no type"
            assert not ("type" in node and node.get("x-kubernetes-int-or-string")), f"{path}: int-or-string is untyped"
            assert not {"$ref", "anyOf", "title"} & set(node), path
            assert not ("properties" in node and "additionalProperties" in node), path


def test_sdd_crd_has_subresources_and_columns() -> None:
    version = spec_decode_deployment_crd()["spec"]["versions"][0]
    assert version["subresources"]["status"] == {}
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }
    spec_names = spec_decode_deployment_crd()["spec"]["names"]
    assert spec_names["shortNames"] == ["sdd"]


def _columns(crd: dict[str, Any], priority: int) -> dict[str, str]:
    columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
    return {c["name"]: c["jsonPath"] for c in columns if c.get("priority", 0) == priority}


def test_sdd_columns_lead_with_the_ready_condition_and_keep_detail_for_wide() -> None:
    crd = spec_decode_deployment_crd()
    ready = '.status.conditions[?(@.type=="Ready")]'
    assert _columns(crd, 0) == {
        "Ready": f"{ready}.status",
        "Reason": f"{ready}.reason",
        "Mode": ".spec.speculation.mode",
        "Spec": ".status.speculation.enabled",
        "K": ".status.speculation.k",
        "Age": ".metadata.creationTimestamp",
    }
    assert set(_columns(crd, 1)) == {"Method", "Accept-Len", "QPS", "Ready-Pods"}


def test_policy_columns_keep_margins_and_budget_for_wide() -> None:
    crd = speculation_policy_crd()
    assert set(_columns(crd, 0)) == {"Interval", "Cooldown", "Fallback", "Age"}
    assert set(_columns(crd, 1)) == {"Enable-Margin", "Disable-Margin", "Restarts/h"}


def test_every_column_but_age_is_described() -> None:
    for crd in all_crds().values():
        for column in crd["spec"]["versions"][0]["additionalPrinterColumns"]:
            assert column["name"] == "Age" or column.get("description"), column["name"]


def test_conditions_have_the_metav1_condition_schema() -> None:
    root = spec_decode_deployment_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    conditions = root["properties"]["status"]["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    item = conditions["items"]
    assert sorted(item["required"]) == sorted(["type", "status", "lastTransitionTime", "reason", "message"])
    fields = item["properties"]
    assert fields["lastTransitionTime"] == {
        "type": "string",
        "format": "date-time",
        "description": fields["lastTransitionTime"]["description"],
    }
    assert fields["status"]["enum"] == ["True", "False", "Unknown"]
    assert fields["observedGeneration"]["format"] == "int64"
    assert fields["observedGeneration"]["minimum"] == 0
    assert fields["reason"]["pattern"] == "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    assert (fields["reason"]["minLength"], fields["reason"]["maxLength"]) == (1, 1024)
    assert fields["type"]["maxLength"] == 316
    assert fields["type"]["pattern"] == (
        r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
    )
    assert fields["message"]["maxLength"] == 32768
    assert "default" not in fields["message"]


def test_the_condition_model_refuses_what_the_apiserver_would() -> None:
    """Reasons come from signal readers too (PrometheusUnreachable, NoSeries): a bad one fails here, not in the API."""
    with pytest.raises(ValidationError, match="String should match pattern"):
        Condition(type="Ready", status="True", reason="no-series", message="", last_transition_time=NOW)
    with pytest.raises(ValidationError, match="not an RFC 3339 date-time"):
        Condition(type="Ready", status="True", reason="Fine", message="", last_transition_time="2026-01-01 00:00")
    with pytest.raises(ValidationError, match="message"):
        Condition.model_validate({"type": "Ready", "status": "True", "reason": "Fine", "lastTransitionTime": NOW})


def test_a_condition_message_is_cut_to_the_apiservers_limit() -> None:
    (condition,) = set_condition([], "Degraded", True, "InvalidSpec", "x" * 40000, NOW, 1)
    assert len(condition.message) == 32768
    assert condition.message.endswith("…")


def test_cel_rules_reach_the_schema() -> None:
    root = spec_decode_deployment_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    speculation = root["properties"]["spec"]["properties"]["speculation"]
    rules = [rule["message"] for rule in speculation["x-kubernetes-validations"]]
    assert any("draftModel is required" in message for message in rules)
    runtime = root["properties"]["spec"]["properties"]["runtime"]
    item_rules = runtime["properties"]["extraArgs"]["items"]["x-kubernetes-validations"]
    assert [rule["message"] for rule in item_rules] == [EXTRA_ARG_SYNTAX_MESSAGE, MANAGED_FLAGS_MESSAGE]
    assert {"rule": "self.port != 8081", "message": PORT_COLLIDES} in runtime["x-kubernetes-validations"]


def test_quantities_are_int_or_string_with_the_kubernetes_grammar() -> None:
    root = spec_decode_deployment_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    resources = root["properties"]["spec"]["properties"]["runtime"]["properties"]["resources"]["properties"]
    for kind in ("requests", "limits"):
        value = resources[kind]["additionalProperties"]
        assert value["x-kubernetes-int-or-string"] is True
        assert value["pattern"] == QUANTITY_PATTERN
        assert value["minimum"] == 0
        assert resources[kind]["maxProperties"] == MAX_RESOURCES


def test_config_map_references_are_described_as_config_maps() -> None:
    found = []
    for crd in all_crds().values():
        root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for path, node in _walk(root):
            if ".configMapKeyRef." in path:
                found.append(path)
                assert "Secret" not in node.get("description", ""), path
    assert ".spec.runtime.env[].valueFrom.configMapKeyRef.name" in found, found
