"""The operator end to end (Kopf over HTTP against the emulator): its configured runtime image and a fleet's
pod settings reach the Deployment, and the fleet's status shows the image its pods run."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest

from specfleet.emulator import EmulatorServer
from specfleet.operator.runner import BackgroundOperator
from tests.examples import EXAMPLES, load
from tests.fixtures.operator import in_namespace, operator_config, wait_for
from tests.operator.test_reconcile import _create, _deployment, _patch_spec, _sdd

IMAGE = "registry.test/specfleet-runtime:7.7.7"
NAME = "llama-8b-cached"


@pytest.fixture
def operator_with_image(emulator: EmulatorServer, kubeconfig: pathlib.Path) -> Iterator[BackgroundOperator]:
    with BackgroundOperator(operator_config(kubeconfig, runtime_image=IMAGE)) as operator:
        yield operator


def _image(emulator: EmulatorServer, namespace: str) -> str | None:
    deployment: dict[str, Any] = _deployment(emulator, namespace, NAME) or {}
    containers = deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or [{}]
    image = containers[0].get("image")
    return str(image) if image else None


def _shown(emulator: EmulatorServer, namespace: str) -> str | None:
    return (_sdd(emulator, namespace, NAME).get("status") or {}).get("runtimeImage")


@pytest.mark.usefixtures("operator_with_image")
def test_the_operators_image_applies_until_the_fleet_names_its_own(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    _create(api_client, in_namespace(load(EXAMPLES / "llama-8b-model-cache.yaml"), namespace))
    wait_for(lambda: _image(emulator, namespace) == IMAGE, what="the operator's runtime image")
    pod = (_deployment(emulator, namespace, NAME) or {})["spec"]["template"]["spec"]
    assert {"name": "models", "persistentVolumeClaim": {"claimName": "model-cache"}} in pod["volumes"]
    assert pod["serviceAccountName"] == "model-reader"
    assert pod["automountServiceAccountToken"] is False
    wait_for(lambda: _shown(emulator, namespace) == IMAGE, what="status.runtimeImage")
    assert "image" not in _sdd(emulator, namespace, NAME)["spec"]["runtime"]  # no schema default stored

    _patch_spec(api_client, namespace, NAME, {"spec": {"runtime": {"image": "registry.test/custom:1"}}})
    wait_for(lambda: _image(emulator, namespace) == "registry.test/custom:1", what="the fleet's own image")
    wait_for(lambda: _shown(emulator, namespace) == "registry.test/custom:1", what="status.runtimeImage to follow")
