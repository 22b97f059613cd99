"""The scale subresource: an autoscaling/v1 Scale view onto a resource's replica fields."""

from __future__ import annotations

import copy
from typing import Any

from specfleet.emulator.resources import ScalePaths
from specfleet.emulator.tables import json_path


def _selector_string(value: Any) -> str:
    """A selector as Scale.status.selector shows it: a label-selector string."""
    if isinstance(value, dict):
        labels = value.get("matchLabels", value)
        return ",".join(f"{key}={val}" for key, val in sorted(labels.items()))
    return str(value) if value is not None else ""


def scale_of(paths: ScalePaths, obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    spec = json_path(obj, paths.spec_replicas)
    status = json_path(obj, paths.status_replicas)
    selector = json_path(obj, paths.label_selector or ".spec.selector")
    scale_status: dict[str, Any] = {"replicas": status[0] if status else 0}
    if selector:
        scale_status["selector"] = _selector_string(selector[0])
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: meta[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in meta
        },
        "spec": {"replicas": spec[0] if spec else 0},
        "status": scale_status,
    }


def with_replicas(paths: ScalePaths, obj: dict[str, Any], replicas: int) -> dict[str, Any]:
    """The object with the spec replicas field (a plain `.a.b` path) set."""
    result = copy.deepcopy(obj)
    *parents, leaf = paths.spec_replicas.strip(".").split(".")
    node = result
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = replicas
    return result
