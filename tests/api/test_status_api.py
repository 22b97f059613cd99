"""The status schema as the API server applies it: conditions refused where metav1.Condition's would be, and
the printer columns `kubectl get` (and `-o wide`) show."""

from __future__ import annotations

import json
import pathlib
import subprocess
from typing import Any

import kubernetes.client
import pytest

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.constants import GROUP, SDD_PLURAL, VERSION
from specfleet.operator.api.types import SpecDecodeDeploymentStatus
from specfleet.operator.handlers.converge import status_patch
from tests.examples import EXAMPLES, load
from tests.fixtures.deps import require_binary
from tests.fixtures.operator import in_namespace

NOW = "2026-01-01T00:00:00Z"
READY = {
    "type": "Ready",
    "status": "True",
    "reason": "AllReplicasReady",
    "message": "2/2 ready",
    "lastTransitionTime": NOW,
}


def _fleet(api_client: kubernetes.client.ApiClient, namespace: str) -> str:
    manifest = in_namespace(load(EXAMPLES / "llama-8b-eagle3.yaml"), namespace)
    kubernetes.client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        GROUP, VERSION, namespace, SDD_PLURAL, manifest
    )
    return str(manifest["metadata"]["name"])


def _patch_status(api_client: kubernetes.client.ApiClient, namespace: str, name: str, status: dict[str, Any]) -> None:
    kubernetes.client.CustomObjectsApi(api_client).patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, SDD_PLURAL, name, {"status": status}
    )


@pytest.mark.parametrize(
    ("condition", "field", "message"),
    [
        ({**READY, "lastTransitionTime": "yesterday"}, "lastTransitionTime", "must be of type date-time"),
        ({**READY, "reason": "all ready"}, "reason", "should match"),
        ({**READY, "reason": ""}, "reason", "at least 1 chars long"),
        ({**READY, "status": "Yes"}, "status", "Unsupported value"),
        ({**READY, "type": "not a type!"}, "type", "should match"),
        ({k: v for k, v in READY.items() if k != "message"}, "message", "Required value"),
        ({**READY, "observedGeneration": -1}, "observedGeneration", "greater than or equal to 0"),
    ],
    ids=["time", "reason-pattern", "reason-empty", "status", "type", "message-required", "generation"],
)
def test_the_api_refuses_a_condition_metav1_would_refuse(
    api_client: kubernetes.client.ApiClient, namespace: str, condition: dict[str, Any], field: str, message: str
) -> None:
    name = _fleet(api_client, namespace)
    with pytest.raises(kubernetes.client.ApiException) as caught:
        _patch_status(api_client, namespace, name, {"conditions": [condition]})
    assert caught.value.status == 422
    causes = [(c["field"], c["message"]) for c in json.loads(caught.value.body)["details"]["causes"]]
    assert any(f == f"status.conditions[0].{field}" and message in text for f, text in causes), causes


def test_the_api_refuses_two_conditions_of_one_type(api_client: kubernetes.client.ApiClient, namespace: str) -> None:
    name = _fleet(api_client, namespace)
    with pytest.raises(kubernetes.client.ApiException) as caught:
        _patch_status(api_client, namespace, name, {"conditions": [READY, {**READY, "status": "False"}]})
    assert caught.value.status == 422
    assert "Duplicate value" in caught.value.body


def test_kubectl_get_shows_ready_and_reason_and_wide_adds_the_detail(
    api_client: kubernetes.client.ApiClient, kubeconfig: pathlib.Path, tmp_path: pathlib.Path, namespace: str
) -> None:
    name = _fleet(api_client, namespace)
    not_ready = {**READY, "status": "False", "reason": "ReplicasNotReady", "message": "1/2 ready"}
    status = {
        "conditions": [not_ready],
        "speculation": {"enabled": True, "method": "eagle3", "k": 3},
        "signals": {"acceptanceLength": 1.59, "qps": 12.35},
        "readyReplicas": 1,
    }
    _patch_status(api_client, namespace, name, status)
    kubectl = [require_binary("kubectl"), f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path}", "-n", namespace]

    def get(*args: str) -> list[list[str]]:
        done = subprocess.run([*kubectl, "get", "sdd", *args], capture_output=True, text=True, timeout=60, check=True)
        return [line.split() for line in done.stdout.splitlines()]

    header, row = get()
    assert header == ["NAME", "READY", "REASON", "MODE", "SPEC", "K", "AGE"]
    assert row[:-1] == [name, "False", "ReplicasNotReady", "Auto", "true", "3"]
    header, row = get("-o", "wide")
    assert header[:-1] == ["NAME", "READY", "REASON", "MODE", "SPEC", "K", "METHOD", "ACCEPT-LEN", "QPS", "READY-PODS"]
    assert row[:-1] == [name, "False", "ReplicasNotReady", "Auto", "true", "3", "eagle3", "1.59", "12.35", "1"]


def test_a_field_status_no_longer_holds_is_removed_by_the_merge_patch(
    api_client: kubernetes.client.ApiClient, emulator: EmulatorServer, namespace: str
) -> None:
    name = _fleet(api_client, namespace)
    advice = {"action": "disable", "target": "off", "reason": "loss: S=0.91 < 1.02", "since": NOW}
    _patch_status(api_client, namespace, name, {"conditions": [READY], "recommendation": advice})
    before = emulator.get(f"{GROUP}/{VERSION}", SDD_PLURAL, name, namespace)["status"]  # type: ignore[index]
    withdrawn = SpecDecodeDeploymentStatus.model_validate(before).model_copy(update={"recommendation": None})
    patch = status_patch(before, withdrawn)
    assert patch["recommendation"] is None
    _patch_status(api_client, namespace, name, patch)
    after = emulator.get(f"{GROUP}/{VERSION}", SDD_PLURAL, name, namespace)["status"]  # type: ignore[index]
    assert "recommendation" not in after
    assert after["conditions"] == [READY]
