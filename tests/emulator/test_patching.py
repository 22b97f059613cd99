"""Patch formats: merge, strategic (keyed lists), JSON patch (with `test`); server-side apply is in test_apply.py."""

from __future__ import annotations

import pytest

from specfleet.emulator.patching import PatchError, apply_patch, merge_patch, strategic_merge_patch
from tests.emulator.conftest import Http
from tests.emulator.widgets import widget

POD_SPEC = {
    "containers": [
        {"name": "a", "image": "a:1"},
        {"name": "b", "image": "b:1", "env": [{"name": "X", "value": "1"}]},
    ]
}


def test_merge_patch_merges_objects_and_deletes_nulls() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}, "l": [1, 2]}, {"a": {"b": None, "d": 3}, "l": [3]}) == {
        "a": {"c": 2, "d": 3},
        "l": [3],
    }


def test_strategic_merge_patch_merges_containers_by_name() -> None:
    patched = strategic_merge_patch(
        POD_SPEC,
        {"containers": [{"name": "b", "env": [{"name": "Y", "value": "2"}]}, {"name": "c", "image": "c:1"}]},
    )
    assert patched["containers"] == [
        {"name": "a", "image": "a:1"},
        {"name": "b", "image": "b:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
        {"name": "c", "image": "c:1"},
    ]


def test_strategic_merge_patch_directives() -> None:
    patch = {
        "$setElementOrder/containers": [{"name": "b"}],
        "containers": [{"name": "a", "$patch": "delete"}],
    }
    assert strategic_merge_patch(POD_SPEC, patch)["containers"] == [POD_SPEC["containers"][1]]
    assert strategic_merge_patch({"f": ["x", "y"]}, {"$deleteFromPrimitiveList/f": ["x"]}) == {"f": ["y"]}
    assert strategic_merge_patch({"s": {"a": 1}}, {"s": {"$patch": "replace", "b": 2}}) == {"s": {"b": 2}}


def test_json_patch_and_failed_test() -> None:
    ops = [{"op": "test", "path": "/a", "value": 1}, {"op": "add", "path": "/l/-", "value": 3}]
    assert apply_patch("application/json-patch+json", {"a": 1, "l": [2]}, ops) == {"a": 1, "l": [2, 3]}
    with pytest.raises(PatchError):
        apply_patch("application/json-patch+json", {"a": 2, "l": []}, ops)


def test_json_patch_over_http_guards_with_resource_version(http: Http, widgets: str) -> None:
    _, created = http("POST", widgets, widget("jp"))
    version = created["metadata"]["resourceVersion"]
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": version},
        {"op": "add", "path": "/metadata/finalizers", "value": ["test.dev/f"]},
    ]
    code, patched = http("PATCH", f"{widgets}/jp", ops, content_type="application/json-patch+json")
    assert code == 200
    assert patched["metadata"]["finalizers"] == ["test.dev/f"]
    code, status = http("PATCH", f"{widgets}/jp", ops, content_type="application/json-patch+json")
    assert code == 422
    assert status["reason"] == "Invalid"


def test_unknown_patch_type_is_415(http: Http, widgets: str) -> None:
    http("POST", widgets, widget("pt"))
    assert http("PATCH", f"{widgets}/pt", {"spec": {}}, content_type="text/plain")[0] == 415
