"""Watch streams: resumption from a resourceVersion, selectors, timeouts, bookmarks, 410 Gone."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from specfleet.emulator import EmulatorServer
from tests.emulator.conftest import Http, call
from tests.emulator.widgets import widget, widget_crd

MERGE = "application/merge-patch+json"


def watch(srv: EmulatorServer, path: str, **query: str) -> list[dict[str, Any]]:
    """Every event of one watch request, which ends by its timeoutSeconds (1 s unless given)."""
    params = "&".join(f"{key}={value}" for key, value in {"watch": "true", "timeoutSeconds": "1", **query}.items())
    with urllib.request.urlopen(f"{srv.url}{path}?{params}", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("application/json")
        return [json.loads(line) for line in response if line.strip()]


def summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(event["type"], event["object"]["metadata"].get("name", "")) for event in events]


def rv(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["resourceVersion"])


def test_resume_sends_only_later_changes_in_order(emulator: EmulatorServer, http: Http, widgets: str) -> None:
    _, first = http("POST", widgets, widget("w1"))
    http("POST", widgets, widget("w2"))
    http("PATCH", f"{widgets}/w1", {"spec": {"replicas": 2}}, content_type=MERGE)
    http("DELETE", f"{widgets}/w2")
    events = watch(emulator, widgets, resourceVersion=rv(first))
    assert summary(events) == [("ADDED", "w2"), ("MODIFIED", "w1"), ("DELETED", "w2")]
    versions = [int(rv(event["object"])) for event in events]
    assert versions == sorted(versions)
    assert versions[0] > int(rv(first))
    assert watch(emulator, widgets, resourceVersion=rv(events[-1]["object"])) == []  # nothing replayed


def test_without_a_version_the_current_objects_come_first(emulator: EmulatorServer, http: Http, widgets: str) -> None:
    http("POST", widgets, widget("a"))
    http("POST", widgets, widget("b"))
    assert summary(watch(emulator, widgets)) == [("ADDED", "a"), ("ADDED", "b")]
    assert summary(watch(emulator, widgets, resourceVersion="0")) == [("ADDED", "a"), ("ADDED", "b")]


def test_initial_events_end_with_a_bookmark(emulator: EmulatorServer, http: Http, widgets: str) -> None:
    http("POST", widgets, widget("i"))
    events = watch(
        emulator,
        widgets,
        sendInitialEvents="true",
        allowWatchBookmarks="true",
        resourceVersionMatch="NotOlderThan",
    )
    assert [event["type"] for event in events][:2] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_label_selector_turns_leaving_and_entering_into_deleted_and_added(
    emulator: EmulatorServer, http: Http, widgets: str
) -> None:
    _, start = http("GET", widgets)
    labelled = widget("sel")
    labelled["metadata"]["labels"] = {"app": "x"}
    http("POST", widgets, labelled)
    http("POST", widgets, widget("other"))
    http("PATCH", f"{widgets}/sel", {"metadata": {"labels": {"app": "y"}}}, content_type=MERGE)
    http("PATCH", f"{widgets}/sel", {"metadata": {"labels": {"app": "x"}}}, content_type=MERGE)
    since = start["metadata"]["resourceVersion"]
    assert summary(watch(emulator, widgets, resourceVersion=since, labelSelector="app=x")) == [
        ("ADDED", "sel"),
        ("DELETED", "sel"),
        ("ADDED", "sel"),
    ]
    assert summary(watch(emulator, widgets, resourceVersion=since, labelSelector="app")) == [
        ("ADDED", "sel"),
        ("MODIFIED", "sel"),
        ("MODIFIED", "sel"),
    ]
    assert summary(watch(emulator, widgets, resourceVersion=since, fieldSelector="metadata.name=other")) == [
        ("ADDED", "other")
    ]


def test_watch_of_one_named_object(emulator: EmulatorServer, http: Http, widgets: str) -> None:
    _, start = http("GET", widgets)
    http("POST", widgets, widget("one"))
    http("POST", widgets, widget("two"))
    since = start["metadata"]["resourceVersion"]
    assert summary(watch(emulator, f"{widgets}/two", resourceVersion=since)) == [("ADDED", "two")]


def test_timeout_ends_the_stream(emulator: EmulatorServer, widgets: str) -> None:
    started = time.monotonic()
    assert watch(emulator, widgets, resourceVersion="1", labelSelector="none=none") == []
    assert 0.9 <= time.monotonic() - started < 3


def test_bookmarks_carry_the_current_version() -> None:
    with EmulatorServer(bookmark_interval=0.2) as srv:
        srv.apply(widget_crd())
        srv.apply(widget("b", namespace="default"))
        events = watch(srv, "/apis/test.dev/v1/widgets", resourceVersion="1", allowWatchBookmarks="true")
        bookmarks = [event for event in events if event["type"] == "BOOKMARK"]
        assert len(bookmarks) >= 3  # ~every 0.2 s for 1 s, and one at the end
        assert bookmarks[-1]["object"] == {
            "kind": "Widget",
            "apiVersion": "test.dev/v1",
            "metadata": {"resourceVersion": rv(srv.get("test.dev/v1", "widgets", "b", "default") or {})},
        }


def test_too_old_version_is_gone() -> None:
    with EmulatorServer(history_limit=3) as srv:
        for name in ("a", "b", "c", "d", "e"):
            srv.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}})
        (event,) = watch(srv, "/api/v1/namespaces/default/configmaps", resourceVersion="2")
        assert event["type"] == "ERROR"
        assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")
        code, listed = call(srv, "GET", "/api/v1/namespaces/default/configmaps")
        assert code == 200
        assert (
            len(
                watch(
                    srv,
                    "/api/v1/namespaces/default/configmaps",
                    resourceVersion=listed["metadata"]["resourceVersion"],
                )
            )
            == 0
        )
