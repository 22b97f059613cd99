"""The pod-template fields of a fleet reach its pods beside the operator's own, and the runtime image is the
spec's or else the operator's."""

from __future__ import annotations

import copy
from typing import Any

from specfleet.operator.api.constants import LABEL_CONFIG_HASH
from specfleet.operator.api.parse import parse_spec
from specfleet.operator.api.pod_types import MANAGED_MOUNTS
from specfleet.operator.api.types import SpecDecodeDeploymentStatus
from specfleet.operator.render.children import render_children
from specfleet.operator.render.engine import initial_speculation
from specfleet.operator.render.labels import Owner
from specfleet.operator.status.fleet import fleet_status
from tests.examples import EXAMPLES, load

OWNER = Owner(name="llama-8b-cached", namespace="default", uid="uid-1")
IMAGE = "registry.test/specfleet-runtime:9.9.9"
NOW = "2026-01-01T00:00:00Z"
CACHED = load(EXAMPLES / "llama-8b-model-cache.yaml")["spec"]


def _deployment(raw: dict[str, Any], image: str = IMAGE) -> dict[str, Any]:
    spec = parse_spec(raw)
    return render_children(OWNER, spec, initial_speculation(spec), image)[0]


def _pod(raw: dict[str, Any]) -> dict[str, Any]:
    return dict(_deployment(raw)["spec"]["template"]["spec"])


def test_the_fleets_pod_settings_reach_its_pods() -> None:
    pod = _pod(CACHED)
    runtime = CACHED["runtime"]
    assert pod["serviceAccountName"] == "model-reader"
    assert pod["priorityClassName"] == "inference-high"
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["imagePullSecrets"] == [{"name": "registry-credentials"}]
    assert pod["affinity"] == runtime["affinity"]
    # The user's volumes and mounts come after the operator's, which stay as they are.
    assert [v["name"] for v in pod["volumes"]] == [*MANAGED_MOUNTS, "models"]
    assert pod["volumes"][-1] == {"name": "models", "persistentVolumeClaim": {"claimName": "model-cache"}}
    (container,) = pod["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts == {**MANAGED_MOUNTS, "models": "/cache/huggingface"}
    # The engine never holds a Kubernetes API token, whichever ServiceAccount it runs as.
    assert pod["automountServiceAccountToken"] is False


def test_a_fleet_without_them_renders_none_of_them() -> None:
    plain = copy.deepcopy(CACHED)
    plain["runtime"] = {}
    pod = _pod(plain)
    absent = {"serviceAccountName", "priorityClassName", "runtimeClassName", "imagePullSecrets", "affinity"}
    assert not absent & set(pod)
    assert [v["name"] for v in pod["volumes"]] == list(MANAGED_MOUNTS)


def test_the_image_is_the_specs_else_the_operators_and_status_shows_it() -> None:
    default = _deployment(CACHED)
    named = copy.deepcopy(CACHED)
    named["runtime"]["image"] = "registry.test/custom-runtime:1"
    custom = _deployment(named)
    assert default["spec"]["template"]["spec"]["containers"][0]["image"] == IMAGE
    assert custom["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.test/custom-runtime:1"
    spec = parse_spec(CACHED)
    previous = SpecDecodeDeploymentStatus()
    for deployment, shown in ((default, IMAGE), (custom, "registry.test/custom-runtime:1")):
        status = fleet_status(previous, spec, initial_speculation(spec), deployment, "s", 1, NOW)
        assert status.runtime_image == shown
        assert status.to_api()["runtimeImage"] == shown
    # A status refresh without the Deployment keeps what it last showed.
    kept = fleet_status(
        SpecDecodeDeploymentStatus(runtime_image=IMAGE), spec, initial_speculation(spec), None, "s", 1, NOW
    )
    assert kept.runtime_image == IMAGE


def test_pod_settings_roll_the_pods_but_keep_the_configuration_hash() -> None:
    """They change the pod template (the Deployment rolls it) and not what the engine computes (its hash)."""
    before = _deployment(CACHED)
    changed = copy.deepcopy(CACHED)
    changed["runtime"]["volumeMounts"][0]["readOnly"] = True
    changed["runtime"]["priorityClassName"] = "inference-low"
    after = _deployment(changed)
    assert after["spec"]["template"]["spec"] != before["spec"]["template"]["spec"]
    hashes = {d["spec"]["template"]["metadata"]["labels"][LABEL_CONFIG_HASH] for d in (before, after)}
    assert len(hashes) == 1
    other_image = _deployment(CACHED, image="registry.test/specfleet-runtime:10.0.0")
    assert other_image["spec"]["template"]["spec"] != before["spec"]["template"]["spec"]
