"""Every request is recorded in Kubernetes terms: verb, group, resource, subresource, namespace, name."""

from __future__ import annotations

from specfleet.emulator import EmulatorServer, RecordedRequest
from specfleet.emulator.paths import ApiPath, parse_path
from tests.emulator.conftest import Http
from tests.emulator.widgets import widget


def test_requests_map_to_rbac_verbs(emulator: EmulatorServer, http: Http, widgets: str, ns: str) -> None:
    http("POST", widgets, widget("r"))
    emulator.clear_requests()
    http("GET", widgets)
    http("GET", f"{widgets}/r")
    http("PATCH", f"{widgets}/r/status", {"status": {}}, content_type="application/merge-patch+json")
    http("PUT", f"{widgets}/r", widget("r"))
    http("DELETE", f"{widgets}/r")
    http("DELETE", widgets)
    http("GET", "/apis/test.dev/v1")
    assert [request.rbac for request in emulator.requests] == [
        ("list", "test.dev", "widgets"),
        ("get", "test.dev", "widgets"),
        ("patch", "test.dev", "widgets/status"),
        ("update", "test.dev", "widgets"),
        ("delete", "test.dev", "widgets"),
        ("deletecollection", "test.dev", "widgets"),
        ("get", "", "/apis/test.dev/v1"),
    ]
    patch: RecordedRequest = emulator.requests[2]
    assert (patch.method, patch.namespace, patch.name, patch.subresource) == ("PATCH", ns, "r", "status")
    assert (patch.content_type, patch.body, patch.api_version) == (
        "application/merge-patch+json",
        {"status": {}},
        "v1",
    )


def test_watch_and_create_verbs(emulator: EmulatorServer, http: Http, ns: str) -> None:
    emulator.clear_requests()
    http(
        "POST",
        f"/api/v1/namespaces/{ns}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
    )
    http("GET", f"/api/v1/namespaces/{ns}/configmaps?watch=true&timeoutSeconds=0.1")
    assert [(r.verb, r.api_group, r.resource, r.query.get("watch")) for r in emulator.requests] == [
        ("create", "", "configmaps", None),
        ("watch", "", "configmaps", "true"),
    ]


def test_paths_parse_namespaces_as_a_resource() -> None:
    assert parse_path("/api/v1/namespaces") == ApiPath("", "v1", "namespaces")
    assert parse_path("/api/v1/namespaces/x") == ApiPath("", "v1", "namespaces", None, "x")
    assert parse_path("/api/v1/namespaces/x/status") == ApiPath("", "v1", "namespaces", None, "x", "status")
    assert parse_path("/api/v1/namespaces/x/pods/p/log") == ApiPath("", "v1", "pods", "x", "p", "log")
    assert parse_path("/apis/apps/v1") == ApiPath("apps", "v1")
    assert not parse_path("/apis/apps").is_resource


def test_a_tests_reaction_wins_until_dropped(emulator: EmulatorServer, http: Http, widgets: str) -> None:
    """Reactions a test adds answer first; dropped, the emulator serves alone again (and without kmock's
    history scan, which a left-over reaction would impose on every later request of the session)."""
    http("POST", widgets, widget("q"))
    emulator.emulator[f"get {widgets}/q"][:1] << 503
    try:
        assert http("GET", f"{widgets}/q")[0] == 503
        assert http("GET", f"{widgets}/q")[0] == 200  # used up: the emulator answers again
    finally:
        emulator.emulator.drop_reactions()
    assert emulator.emulator._payloads == [emulator.emulator._own]
    assert http("GET", f"{widgets}/q")[0] == 200
