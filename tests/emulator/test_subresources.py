"""Status and scale subresources: split writes for CRDs that declare them and for Deployments."""

from __future__ import annotations

from specfleet.emulator import EmulatorServer
from tests.emulator.conftest import Http
from tests.emulator.widgets import widget

MERGE = "application/merge-patch+json"


def test_main_resource_writes_ignore_status(http: Http, widgets: str) -> None:
    body = widget("s")
    body["status"] = {"phase": "Forged"}
    _, created = http("POST", widgets, body)
    assert "status" not in created
    http("PATCH", f"{widgets}/s/status", {"status": {"phase": "Real"}}, content_type=MERGE)
    _, patched = http(
        "PATCH", f"{widgets}/s", {"spec": {"replicas": 2}, "status": {"phase": "Forged"}}, content_type=MERGE
    )
    assert patched["status"] == {"phase": "Real"}
    assert patched["spec"]["replicas"] == 2


def test_status_writes_touch_only_status(http: Http, widgets: str) -> None:
    http("POST", widgets, widget("t"))
    _, current = http("GET", f"{widgets}/t")
    current["spec"]["replicas"] = 9
    current["status"] = {"phase": "Up"}
    code, stored = http("PUT", f"{widgets}/t/status", current)
    assert code == 200
    assert stored["status"] == {"phase": "Up"}
    assert stored["spec"]["replicas"] == 1


def test_scale_subresource_reads_and_writes_replicas(http: Http, widgets: str, ns: str) -> None:
    http("POST", widgets, widget("sc", replicas=2))
    http("PATCH", f"{widgets}/sc/status", {"status": {"replicas": 1, "selector": "app=sc"}}, content_type=MERGE)
    code, scale = http("GET", f"{widgets}/sc/scale")
    assert code == 200
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert (scale["spec"], scale["status"], scale["metadata"]["namespace"]) == (
        {"replicas": 2},
        {"replicas": 1, "selector": "app=sc"},
        ns,
    )
    _, scaled = http("PATCH", f"{widgets}/sc/scale", {"spec": {"replicas": 4}}, content_type=MERGE)
    assert scaled["spec"]["replicas"] == 4
    _, stored = http("GET", f"{widgets}/sc")
    assert stored["spec"]["replicas"] == 4
    assert stored["metadata"]["generation"] == 2
    scale = {**scaled, "spec": {"replicas": 11}}
    assert http("PUT", f"{widgets}/sc/scale", scale)[0] == 422  # the schema's maximum still holds


def test_deployment_status_is_a_subresource(emulator: EmulatorServer, http: Http, ns: str) -> None:
    deployments = f"/apis/apps/v1/namespaces/{ns}/deployments"
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}},
        "status": {"readyReplicas": 5},
    }
    _, created = http("POST", deployments, body)
    assert "status" not in created
    emulator.apply({**body, "metadata": {"name": "d", "namespace": ns}, "status": {"readyReplicas": 1}})
    stored = emulator.get("apps/v1", "deployments", "d", ns)
    assert stored is not None
    assert stored["status"] == {"readyReplicas": 1}
    assert http("GET", f"{deployments}/d/scale")[1]["status"]["selector"] == "app=d"


def test_unknown_subresource_is_404(http: Http, widgets: str) -> None:
    http("POST", widgets, widget("u"))
    assert http("GET", f"{widgets}/u/log")[0] == 404
