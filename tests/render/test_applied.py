"""When applying a rendering would change nothing: values in place, and nothing the operator owns left out."""

from __future__ import annotations

from typing import Any

from specfleet.operator.render.applied import applied_fields, covers, in_place, is_subset


def test_subset_ignores_server_defaults() -> None:
    desired = {"spec": {"replicas": 2, "template": {"containers": [{"name": "a", "args": ["x"]}]}}}
    current = {
        "spec": {
            "replicas": 2,
            "progressDeadlineSeconds": 600,
            "template": {"containers": [{"name": "a", "args": ["x"], "terminationMessagePath": "/dev/x"}]},
        }
    }
    assert is_subset(desired, current)
    assert not is_subset({"spec": {"replicas": 3}}, current)
    assert not is_subset({"spec": {"template": {"containers": [{"name": "a", "args": ["x", "y"]}]}}}, current)


def test_subset_matches_named_items_by_name() -> None:
    desired = {"containers": [{"name": "engine", "image": "e:1"}], "args": ["a", "b"]}
    with_sidecar = {
        "containers": [{"name": "proxy", "image": "p:1"}, {"name": "engine", "image": "e:1"}],
        "args": ["a", "b"],
    }
    assert is_subset(desired, with_sidecar)  # another manager's container is not drift
    assert not is_subset(desired, {**with_sidecar, "containers": [{"name": "proxy", "image": "p:1"}]})
    assert not is_subset(desired, {**with_sidecar, "containers": [{"name": "engine", "image": "e:2"}]})
    assert not is_subset(desired, {**with_sidecar, "args": ["b", "a"]})  # unnamed lists match whole, in order


FIELDS = {
    "f:metadata": {"f:annotations": {"f:a": {}}},
    "f:spec": {
        "f:nodeSelector": {"f:gpu": {}},
        "f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}}},
        "f:finalizers": {'v:"x"': {}},
    },
}


def _rendered(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"annotations": {"a": "1"}}, "spec": {"ports": [{"port": 80}], "finalizers": ["x"], **spec}}


def test_covers_resolves_fields_keys_and_set_values() -> None:
    assert covers(FIELDS, _rendered(nodeSelector={"gpu": "h100"}))
    assert not covers(FIELDS, _rendered())  # the node selector is no longer rendered: applying would prune it
    assert not covers(FIELDS, _rendered(nodeSelector={"gpu": "h100"}, ports=[{"port": 81}]))


def test_in_place_needs_the_operators_apply_entry() -> None:
    rendered = _rendered(nodeSelector={"gpu": "h100"})
    entry = {"manager": "specfleet", "operation": "Apply", "fieldsV1": FIELDS}
    other = {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:metadata": {"f:labels": {"f:x": {}}}}}
    current = {**rendered, "metadata": {**rendered["metadata"], "labels": {"x": "y"}, "managedFields": [other, entry]}}
    assert applied_fields(current, "specfleet") == FIELDS
    assert in_place(rendered, current, "specfleet")  # another manager's label is not drift
    assert not in_place(
        rendered, {**current, "spec": {**current["spec"], "nodeSelector": {"gpu": "a100"}}}, "specfleet"
    )
    created_by_hand = {**rendered, "metadata": {**rendered["metadata"], "managedFields": [other]}}
    assert not in_place(rendered, created_by_hand, "specfleet")  # applied once to take ownership
