"""Deletion: finalizers hold objects, owners take dependents along (or orphan them), namespaces cascade."""

from __future__ import annotations

from typing import Any

from specfleet.emulator import EmulatorServer
from tests.emulator.conftest import Http
from tests.emulator.widgets import widget

MERGE = "application/merge-patch+json"


def _configmap(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
            }
        ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def test_finalizers_hold_deletion_until_released(http: Http, widgets: str) -> None:
    held = widget("held")
    held["metadata"]["finalizers"] = ["test.dev/hold"]
    http("POST", widgets, held)
    code, marked = http("DELETE", f"{widgets}/held")
    assert code == 200
    assert marked["metadata"]["deletionTimestamp"]
    assert http("GET", f"{widgets}/held")[0] == 200
    _, again = http("DELETE", f"{widgets}/held")
    assert again["metadata"]["deletionTimestamp"] == marked["metadata"]["deletionTimestamp"]
    _, released = http("PATCH", f"{widgets}/held", {"metadata": {"finalizers": None}}, content_type=MERGE)
    assert released["metadata"].get("finalizers") is None
    assert http("GET", f"{widgets}/held")[0] == 404


def test_deletion_timestamp_cannot_be_cleared(http: Http, widgets: str) -> None:
    held = widget("sticky")
    held["metadata"]["finalizers"] = ["a", "b"]
    http("POST", widgets, held)
    http("DELETE", f"{widgets}/sticky")
    _, patched = http(
        "PATCH",
        f"{widgets}/sticky",
        {"metadata": {"deletionTimestamp": None, "finalizers": ["a"]}},
        content_type=MERGE,
    )
    assert patched["metadata"]["deletionTimestamp"]
    assert patched["metadata"]["finalizers"] == ["a"]


def test_owner_deletion_collects_dependents(http: Http, widgets: str, ns: str) -> None:
    _, owner = http("POST", widgets, widget("owner"))
    configmaps = f"/api/v1/namespaces/{ns}/configmaps"
    http("POST", configmaps, _configmap("child", owner))
    _, child = http("GET", f"{configmaps}/child")
    http("POST", configmaps, _configmap("grandchild", child))
    http("POST", configmaps, _configmap("bystander"))
    http("DELETE", f"{widgets}/owner")
    assert [http("GET", f"{configmaps}/{name}")[0] for name in ("child", "grandchild", "bystander")] == [
        404,
        404,
        200,
    ]


def test_orphan_propagation_keeps_dependents(http: Http, widgets: str, ns: str) -> None:
    _, owner = http("POST", widgets, widget("orphaner"))
    configmaps = f"/api/v1/namespaces/{ns}/configmaps"
    http("POST", configmaps, _configmap("orphan", owner))
    http("DELETE", f"{widgets}/orphaner", {"propagationPolicy": "Orphan"})
    code, orphan = http("GET", f"{configmaps}/orphan")
    assert code == 200
    assert "ownerReferences" not in orphan["metadata"]


def test_namespace_deletion_removes_its_objects(emulator: EmulatorServer, http: Http, widgets: str, ns: str) -> None:
    http("POST", widgets, widget("inside"))
    http("DELETE", f"/api/v1/namespaces/{ns}")
    assert emulator.get("test.dev/v1", "widgets", "inside", ns) is None
    assert http("GET", f"/api/v1/namespaces/{ns}")[0] == 404


def test_delete_collection_by_label(http: Http, widgets: str) -> None:
    for name, team in (("x1", "a"), ("x2", "a"), ("x3", "b")):
        body = widget(name)
        body["metadata"]["labels"] = {"team": team}
        http("POST", widgets, body)
    code, deleted = http("DELETE", f"{widgets}?labelSelector=team%3Da")
    assert code == 200
    assert sorted(item["metadata"]["name"] for item in deleted["items"]) == ["x1", "x2"]
    assert [item["metadata"]["name"] for item in http("GET", widgets)[1]["items"]] == ["x3"]
