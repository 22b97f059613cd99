"""Object identity and optimistic concurrency: uid, resourceVersion, generation, 409/404/400, PUT."""

from __future__ import annotations

from tests.emulator.conftest import Http
from tests.emulator.widgets import widget


def test_create_stamps_identity(http: Http, widgets: str, ns: str) -> None:
    code, obj = http("POST", widgets, widget("a"))
    assert code == 201
    meta = obj["metadata"]
    assert len(meta["uid"]) == 36
    assert meta["generation"] == 1
    assert meta["namespace"] == ns
    assert meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0


def test_resource_versions_increase_across_objects(http: Http, widgets: str) -> None:
    versions = [int(http("POST", widgets, widget(f"rv{i}"))[1]["metadata"]["resourceVersion"]) for i in range(3)]
    _, patched = http("PATCH", f"{widgets}/rv0", {"spec": {"replicas": 2}}, content_type="application/merge-patch+json")
    assert versions == sorted(set(versions))
    assert int(patched["metadata"]["resourceVersion"]) > versions[-1]


def test_generation_counts_spec_changes_only(http: Http, widgets: str) -> None:
    http("POST", widgets, widget("g"))
    merge = "application/merge-patch+json"
    _, labelled = http("PATCH", f"{widgets}/g", {"metadata": {"labels": {"a": "b"}}}, content_type=merge)
    _, status = http("PATCH", f"{widgets}/g/status", {"status": {"phase": "Up"}}, content_type=merge)
    _, respec = http("PATCH", f"{widgets}/g", {"spec": {"replicas": 4}}, content_type=merge)
    assert [labelled["metadata"]["generation"], status["metadata"]["generation"]] == [1, 1]
    assert respec["metadata"]["generation"] == 2


def test_noop_write_keeps_resource_version(http: Http, widgets: str) -> None:
    _, created = http("POST", widgets, widget("same"))
    _, again = http("PATCH", f"{widgets}/same", {"spec": {"replicas": 1}}, content_type="application/merge-patch+json")
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_generate_name(http: Http, widgets: str) -> None:
    body = widget("")
    body["metadata"] = {"generateName": "gen-"}
    _, first = http("POST", widgets, body)
    _, second = http("POST", widgets, body)
    names = {first["metadata"]["name"], second["metadata"]["name"]}
    assert len(names) == 2
    assert all(name.startswith("gen-") and len(name) == 9 for name in names)


def test_already_exists_is_a_409_status(http: Http, widgets: str) -> None:
    http("POST", widgets, widget("dup"))
    code, status = http("POST", widgets, widget("dup"))
    assert code == 409
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "code": 409,
        "reason": "AlreadyExists",
        "message": 'widgets.test.dev "dup" already exists',
        "details": {"name": "dup", "group": "test.dev", "kind": "widgets"},
    }


def test_not_found_is_a_404_status(http: Http, widgets: str) -> None:
    code, status = http("GET", f"{widgets}/nope")
    assert code == 404
    assert (status["reason"], status["message"]) == ("NotFound", 'widgets.test.dev "nope" not found')
    assert http("DELETE", f"{widgets}/nope")[0] == 404
    assert http("GET", "/apis/test.dev/v1/nothings")[0] == 404


def test_put_replaces_and_stale_version_conflicts(http: Http, widgets: str) -> None:
    _, created = http("POST", widgets, widget("p", mode="On", tags=["x"]))
    replacement = widget("p", replicas=3)
    replacement["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    code, replaced = http("PUT", f"{widgets}/p", replacement)
    assert code == 200
    assert replaced["spec"] == {"replicas": 3, "mode": "Auto"}  # tags gone, mode defaulted again
    assert replaced["metadata"]["uid"] == created["metadata"]["uid"]
    code, status = http("PUT", f"{widgets}/p", replacement)  # still carries the old version
    assert code == 409
    assert status["reason"] == "Conflict"
    assert status["message"].startswith(
        'Operation cannot be fulfilled on widgets.test.dev "p": the object has been modified'
    )


def test_stale_version_in_a_patch_conflicts(http: Http, widgets: str) -> None:
    _, created = http("POST", widgets, widget("pv"))
    http("PATCH", f"{widgets}/pv", {"spec": {"replicas": 2}}, content_type="application/merge-patch+json")
    stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "spec": {"replicas": 5}}
    assert http("PATCH", f"{widgets}/pv", stale, content_type="application/merge-patch+json")[0] == 409


def test_put_of_a_missing_object_or_wrong_name(http: Http, widgets: str) -> None:
    assert http("PUT", f"{widgets}/ghost", widget("ghost"))[0] == 404
    http("POST", widgets, widget("named"))
    code, status = http("PUT", f"{widgets}/named", widget("other"))
    assert code == 400
    assert "does not match the name on the URL" in status["message"]


def test_namespaces_list_and_get(http: Http, ns: str) -> None:
    code, listed = http("GET", "/api/v1/namespaces")
    assert code == 200
    assert listed["kind"] == "NamespaceList"
    assert {"default", ns} <= {item["metadata"]["name"] for item in listed["items"]}
    assert http("GET", f"/api/v1/namespaces/{ns}")[1]["status"] == {"phase": "Active"}


def test_lists_carry_kind_and_version(http: Http, widgets: str) -> None:
    http("POST", widgets, widget("l1"))
    _, listed = http("GET", widgets)
    assert (listed["kind"], listed["apiVersion"]) == ("WidgetList", "test.dev/v1")
    assert int(listed["metadata"]["resourceVersion"]) >= int(listed["items"][0]["metadata"]["resourceVersion"])


def test_invalid_name_is_refused(http: Http, widgets: str) -> None:
    code, status = http("POST", widgets, widget("Bad_Name"))
    assert code == 422
    assert status["details"]["causes"][0]["field"] == "metadata.name"
