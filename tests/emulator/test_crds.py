"""CRD registration: discovery, cluster scope, deletion taking the resource and its objects along."""

from __future__ import annotations

import copy
from typing import Any

from specfleet.emulator import EmulatorServer
from tests.emulator.conftest import Http
from tests.emulator.widgets import widget_crd


def _gadget_crd(scope: str = "Cluster") -> dict[str, Any]:
    crd = copy.deepcopy(widget_crd())
    crd["metadata"]["name"] = "gadgets.gadgets.test.dev"
    crd["spec"].update(
        group="gadgets.test.dev",
        scope=scope,
        names={"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
    )
    return crd


def test_posted_crd_appears_in_discovery(http: Http) -> None:
    code, created = http("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _gadget_crd())
    assert code == 201
    conditions = {c["type"]: c["status"] for c in created["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    groups = {group["name"] for group in http("GET", "/apis")[1]["groups"]}
    assert {"gadgets.test.dev", "apps", "kopf.dev"} <= groups
    assert http("GET", "/apis/gadgets.test.dev")[1]["preferredVersion"]["version"] == "v1"
    resources = {r["name"]: r for r in http("GET", "/apis/gadgets.test.dev/v1")[1]["resources"]}
    assert set(resources) == {"gadgets", "gadgets/status", "gadgets/scale"}
    assert resources["gadgets"]["namespaced"] is False
    assert resources["gadgets/scale"]["kind"] == "Scale"


def test_openapi_v3_follows_registration(http: Http) -> None:
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    crd = _gadget_crd()
    crd["metadata"]["name"] = "doohickeys.doohickeys.test.dev"
    crd["spec"].update(group="doohickeys.test.dev", names={"kind": "Doohickey", "plural": "doohickeys"})
    assert http("POST", crds, crd)[0] == 201
    code, index = http("GET", "/openapi/v3")
    assert code == 200
    url = index["paths"]["apis/doohickeys.test.dev/v1"]["serverRelativeURL"]
    document = http("GET", url)[1]
    schema = document["components"]["schemas"]["dev.test.doohickeys.v1.Doohickey"]
    gvk = {"group": "doohickeys.test.dev", "version": "v1", "kind": "Doohickey"}
    assert schema["x-kubernetes-group-version-kind"] == [gvk]
    served = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["spec"] == served["properties"]["spec"]
    get = document["paths"]["/apis/doohickeys.test.dev/v1/doohickeys/{name}"]["get"]  # cluster-scoped
    assert get["x-kubernetes-group-version-kind"] == gvk
    assert http("DELETE", f"{crds}/doohickeys.doohickeys.test.dev")[0] == 200
    assert "apis/doohickeys.test.dev/v1" not in http("GET", "/openapi/v3")[1]["paths"]
    assert http("GET", "/openapi/v3/apis/doohickeys.test.dev/v1")[0] == 404


def test_cluster_scoped_objects_and_crd_deletion(http: Http) -> None:
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    http(
        "POST",
        crds,
        _gadget_crd()
        | {
            "metadata": {"name": "gizmos.gizmos.test.dev"},
            "spec": {
                **_gadget_crd()["spec"],
                "group": "gizmos.test.dev",
                "names": {"kind": "Gizmo", "plural": "gizmos"},
            },
        },
    )
    code, gizmo = http(
        "POST",
        "/apis/gizmos.test.dev/v1/gizmos",
        {
            "apiVersion": "gizmos.test.dev/v1",
            "kind": "Gizmo",
            "metadata": {"name": "g"},
            "spec": {"replicas": 1},
        },
    )
    assert code == 201
    assert "namespace" not in gizmo["metadata"]
    assert http("GET", "/apis/gizmos.test.dev/v1/namespaces/default/gizmos")[0] == 404
    assert http("DELETE", f"{crds}/gizmos.gizmos.test.dev")[0] == 200
    assert http("GET", "/apis/gizmos.test.dev/v1")[0] == 404
    assert http("GET", "/apis/gizmos.test.dev/v1/gizmos")[0] == 404


def test_crd_name_must_match_its_names(http: Http) -> None:
    crd = _gadget_crd()
    crd["metadata"]["name"] = "wrong.name"
    code, status = http("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert code == 422
    assert status["details"]["causes"][0]["field"] == "metadata.name"


def test_peering_crds_are_installed(emulator: EmulatorServer) -> None:
    for plural in ("clusterkopfpeerings", "kopfpeerings"):
        assert emulator.get("apiextensions.k8s.io/v1", "customresourcedefinitions", f"{plural}.kopf.dev") is not None


def test_table_output_uses_printer_columns(http: Http, widgets: str) -> None:
    http(
        "POST",
        widgets,
        {
            "apiVersion": "test.dev/v1",
            "kind": "Widget",
            "metadata": {"name": "tbl"},
            "spec": {"replicas": 3, "mode": "On"},
        },
    )
    http(
        "PATCH",
        f"{widgets}/tbl/status",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        content_type="application/merge-patch+json",
    )
    code, table = http("GET", widgets, accept="application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    assert code == 200
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Replicas", "Mode", "Ready", "Age"]
    (row,) = table["rows"]
    assert row["cells"][:4] == ["tbl", 3, "On", "True"]
    assert row["cells"][4].endswith("s")
    assert row["object"]["metadata"]["name"] == "tbl"
