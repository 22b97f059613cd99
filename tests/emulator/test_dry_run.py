"""Server-side dry run (`dryRun=All`): every check runs and the answer shows the result, but nothing is stored,
no resourceVersion moves and no watcher hears of it; over raw HTTP and with the real kubectl."""

from __future__ import annotations

import pathlib

import yaml

from specfleet.emulator import EmulatorServer
from tests.emulator.conftest import Http, Kubectl, kubectl_fails
from tests.emulator.test_watch import rv, summary, watch
from tests.emulator.widgets import API_VERSION, PLURAL, widget

MERGE = "application/merge-patch+json"
DRY = "?dryRun=All"


def _store_version(http: Http) -> str:
    """The store's current resourceVersion, read from a list of anything."""
    _, namespaces = http("GET", "/api/v1/namespaces")
    return str(namespaces["metadata"]["resourceVersion"])


def test_dry_run_create_answers_the_defaulted_object_and_stores_nothing(
    emulator: EmulatorServer, http: Http, widgets: str, ns: str
) -> None:
    before = _store_version(http)
    status, answer = http("POST", widgets + DRY, widget("dry", speculation={"k": 2}))
    assert status == 201
    assert answer["spec"]["mode"] == "Auto"  # the schema's default, as a real create would store it
    assert answer["spec"]["speculation"]["maxK"] == 5
    assert answer["metadata"]["uid"]
    assert answer["metadata"]["creationTimestamp"]
    assert "resourceVersion" not in answer["metadata"]
    assert emulator.get(API_VERSION, PLURAL, "dry", ns) is None
    assert _store_version(http) == before
    assert http("GET", f"{widgets}/dry")[0] == 404


def test_dry_run_update_patch_and_delete_change_nothing_and_notify_nobody(
    emulator: EmulatorServer, http: Http, widgets: str, ns: str
) -> None:
    _, stored = http("POST", widgets, widget("w", replicas=2))
    status, patched = http("PATCH", f"{widgets}/w{DRY}", {"spec": {"replicas": 7}}, content_type=MERGE)
    assert (status, patched["spec"]["replicas"], rv(patched)) == (200, 7, rv(stored))
    status, replaced = http("PUT", f"{widgets}/w{DRY}", {**stored, "spec": {"replicas": 4, "mode": "On"}})
    assert (status, replaced["spec"], rv(replaced)) == (200, {"replicas": 4, "mode": "On"}, rv(stored))
    assert replaced["metadata"]["generation"] == 2  # what the write would have made of it
    status, deleted = http("DELETE", f"{widgets}/w", {"dryRun": ["All"]})
    assert status == 200
    assert deleted["metadata"]["name"] == "w"
    assert emulator.get(API_VERSION, PLURAL, "w", ns) == stored
    assert summary(watch(emulator, widgets, resourceVersion=rv(stored))) == []


def test_dry_run_delete_of_a_namespace_keeps_what_is_in_it(http: Http, widgets: str, ns: str) -> None:
    http("POST", widgets, widget("kept"))
    status, _ = http("DELETE", f"/api/v1/namespaces/{ns}{DRY}")
    assert status == 200
    assert http("GET", f"/api/v1/namespaces/{ns}")[0] == 200
    assert http("GET", f"{widgets}/kept")[0] == 200


def test_dry_run_answers_conflicts_and_invalid_objects_as_a_real_write_does(http: Http, widgets: str) -> None:
    _, stored = http("POST", widgets, widget("c"))
    status, body = http("POST", widgets + DRY, widget("c"))
    assert (status, body["reason"]) == (409, "AlreadyExists")
    status, body = http("POST", widgets + DRY, widget("bad", replicas=11))
    assert (status, body["reason"]) == (422, "Invalid")
    assert "spec.replicas" in body["message"]
    stale = {**stored, "metadata": {**stored["metadata"], "resourceVersion": "1"}}
    status, body = http("PUT", f"{widgets}/c{DRY}", stale)
    assert (status, body["reason"]) == (409, "Conflict")
    status, body = http("POST", f"{widgets}?dryRun=Some", widget("other"))
    assert status == 422
    assert 'supported values: "All"' in body["message"]
    assert http("GET", f"{widgets}/other")[0] == 404


def test_kubectl_server_dry_run_of_create_apply_and_delete(
    kubectl: Kubectl, emulator: EmulatorServer, widgets: str, ns: str, tmp_path: pathlib.Path
) -> None:
    manifest = tmp_path / "widget.yaml"
    manifest.write_text(yaml.safe_dump(widget("kd", replicas=2)))
    assert "created (server dry run)" in kubectl("create", "--dry-run=server", "-f", str(manifest))
    assert "created (server dry run)" in kubectl("apply", "--dry-run=server", "-f", str(manifest))
    applied = kubectl("apply", "--server-side", "--dry-run=server", "-f", str(manifest))
    assert "serverside-applied (server dry run)" in applied
    assert emulator.get(API_VERSION, PLURAL, "kd", ns) is None
    kubectl("apply", "-f", str(manifest))
    stored = emulator.get(API_VERSION, PLURAL, "kd", ns)
    manifest.write_text(yaml.safe_dump(widget("kd", replicas=5)))
    shown = kubectl("apply", "--dry-run=server", "-f", str(manifest), "-o", "jsonpath={.spec.replicas}")
    assert shown == "5"
    assert "(server dry run)" in kubectl("delete", "--dry-run=server", "-f", str(manifest))
    assert emulator.get(API_VERSION, PLURAL, "kd", ns) == stored
    assert "(server dry run)" in kubectl("create", "namespace", f"{ns}-dry", "--dry-run=server")
    assert emulator.get("v1", "namespaces", f"{ns}-dry") is None
    assert "AlreadyExists" in kubectl_fails(kubectl, "create", "--dry-run=server", "-f", str(manifest))
