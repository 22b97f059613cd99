from __future__ import annotations

from typing import Any

from specfleet.operator.api.crdgen import all_crds, spec_decode_deployment_crd
from specfleet.operator.api.quantity import QUANTITY_PATTERN
from specfleet.operator.api.types import MAX_RESOURCES, PORT_COLLIDES
from specfleet.operator.cli import main, render_crd_files
from specfleet.runtime.extra_args import EXTRA_ARG_SYNTAX_MESSAGE, MANAGED_FLAGS_MESSAGE
from tests.examples import ROOT


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
    columns = [c["name"] for c in version["additionalPrinterColumns"]]
    for wanted in ("Mode", "Method", "K", "Accept-Len", "QPS", "Ready", "Age"):
        assert wanted in columns
    spec_names = spec_decode_deployment_crd()["spec"]["names"]
    assert spec_names["shortNames"] == ["sdd"]


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
