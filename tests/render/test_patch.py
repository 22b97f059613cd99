from __future__ import annotations

from specfleet.operator.render.patch import (
    is_subset,
    last_applied,
    three_way_patch,
    with_last_applied,
)


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


def test_three_way_patch_removes_what_was_dropped() -> None:
    previous = {"metadata": {"annotations": {"a": "1", "b": "2"}}, "spec": {"nodeSelector": {"gpu": "h100"}}}
    desired = {"metadata": {"annotations": {"a": "1"}}, "spec": {}}
    patch = three_way_patch(previous, desired)
    assert patch == {"metadata": {"annotations": {"a": "1", "b": None}}, "spec": {"nodeSelector": None}}


def test_last_applied_round_trip() -> None:
    desired = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"type": "ClusterIP"},
    }
    stamped = with_last_applied(desired)
    assert last_applied(stamped) == desired
    assert last_applied({"metadata": {"annotations": {"specfleet.dev/last-applied": "not json"}}}) == {}
