"""The operator end to end: Kopf over HTTP against the emulator, resources created through the API."""

from __future__ import annotations

import contextlib
import copy
import json
import pathlib
from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.constants import (
    ANNOTATION_CONFIG_HASH,
    GROUP,
    LABEL_CONFIG_HASH,
    SDD_PLURAL,
    VERSION,
)
from specfleet.operator.api.crdgen import spec_decode_deployment_crd
from specfleet.operator.runner import BackgroundOperator
from tests.examples import EXAMPLES, INVALID, load
from tests.fixtures.operator import in_namespace, operator_config, wait_for

SDD_API = f"{GROUP}/{VERSION}"
CHILD_RESOURCES = {"deployments", "services", "poddisruptionbudgets"}


def _create(api_client: kubernetes.client.ApiClient, manifest: dict[str, Any]) -> dict[str, Any]:
    custom = kubernetes.client.CustomObjectsApi(api_client)
    created: dict[str, Any] = custom.create_namespaced_custom_object(
        GROUP, VERSION, manifest["metadata"]["namespace"], SDD_PLURAL, manifest
    )
    return created


def _patch_spec(api_client: kubernetes.client.ApiClient, namespace: str, name: str, patch: dict[str, Any]) -> None:
    kubernetes.client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
        GROUP, VERSION, namespace, SDD_PLURAL, name, patch
    )


def _sdd(emulator: EmulatorServer, namespace: str, name: str) -> dict[str, Any]:
    found = emulator.get(SDD_API, SDD_PLURAL, name, namespace)
    assert found is not None
    return found


def _deployment(emulator: EmulatorServer, namespace: str, name: str) -> dict[str, Any] | None:
    return emulator.get("apps/v1", "deployments", name, namespace)


def _observed(emulator: EmulatorServer, namespace: str, name: str) -> dict[str, Any] | None:
    obj = _sdd(emulator, namespace, name)
    status = obj.get("status") or {}
    return obj if status.get("observedGeneration") == obj["metadata"]["generation"] else None


def _child_writes(emulator: EmulatorServer, namespace: str) -> list[str]:
    return [
        f"{r.verb} {r.resource}/{r.name or r.body['metadata']['name']}"
        for r in emulator.requests
        if r.namespace == namespace and r.resource in CHILD_RESOURCES and r.verb in {"create", "patch", "update"}
    ]


def _events(emulator: EmulatorServer, namespace: str) -> list[dict[str, Any]]:
    return [
        r.body
        for r in emulator.requests
        if r.namespace == namespace and r.resource == "events" and r.verb == "create" and isinstance(r.body, dict)
    ]


@contextlib.contextmanager
def _crd_without_rules(emulator: EmulatorServer) -> Iterator[None]:
    crd = spec_decode_deployment_crd()
    relaxed = copy.deepcopy(crd)
    spec_schema = relaxed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["properties"]["speculation"].pop("x-kubernetes-validations")
    emulator.apply(relaxed)
    try:
        yield
    finally:
        emulator.apply(crd)


def _args(deployment: dict[str, Any]) -> list[str]:
    return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])


@pytest.mark.usefixtures("running_operator")
def test_create_renders_children_and_status(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    sdd = _create(api_client, in_namespace(load(EXAMPLES / "llama-8b-eagle3.yaml"), namespace))
    deployment = wait_for(lambda: _deployment(emulator, namespace, "llama-8b"), what="the Deployment")
    args = _args(deployment)
    assert json.loads(args[args.index("--speculative-config") + 1])["num_speculative_tokens"] == 3
    assert deployment["spec"]["replicas"] == 2
    assert deployment["metadata"]["ownerReferences"][0]["uid"] == sdd["metadata"]["uid"]
    wait_for(lambda: emulator.get("v1", "services", "llama-8b", namespace), what="the Service")
    wait_for(lambda: emulator.get("policy/v1", "poddisruptionbudgets", "llama-8b", namespace), what="the PDB")
    observed = wait_for(lambda: _observed(emulator, namespace, "llama-8b"), what="observedGeneration")
    status = observed["status"]
    assert status["speculation"]["enabled"] is True
    assert status["speculation"]["configHash"] == deployment["metadata"]["annotations"][ANNOTATION_CONFIG_HASH]
    assert status["selector"] == "app.kubernetes.io/instance=llama-8b,app.kubernetes.io/name=specfleet-engine"
    types = {c["type"]: c["status"] for c in status["conditions"]}
    assert types["Ready"] == "False"
    assert types["SpeculationActive"] == "True"
    reasons = wait_for(lambda: {e["reason"] for e in _events(emulator, namespace)} or None, what="Events")
    assert "Created" in reasons
    for event in _events(emulator, namespace):  # `kubectl describe` shows `From: specfleet`
        assert event["source"]["component"] == event["reportingComponent"] == "specfleet", event
        assert event["metadata"]["generateName"] == "specfleet-event-"


@pytest.mark.usefixtures("running_operator")
def test_k_change_rolls_the_pod_template(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    manifest = in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace)
    manifest["spec"]["policy"] = {"schedule": False}  # a fixed k: the spec's k is what the pods run
    _create(api_client, manifest)
    before = wait_for(lambda: _deployment(emulator, namespace, "code-assistant"), what="the Deployment")
    old_hash = before["spec"]["template"]["metadata"]["labels"][LABEL_CONFIG_HASH]
    _patch_spec(api_client, namespace, "code-assistant", {"spec": {"speculation": {"numSpeculativeTokens": 5}}})

    def moved() -> dict[str, Any] | None:
        current = _deployment(emulator, namespace, "code-assistant")
        labels = (current or {}).get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {})
        return current if labels.get(LABEL_CONFIG_HASH) not in (None, old_hash) else None

    after = wait_for(moved, what="the config hash to move")
    args = _args(after)
    assert json.loads(args[args.index("--speculative-config") + 1])["num_speculative_tokens"] == 5
    status = wait_for(lambda: _observed(emulator, namespace, "code-assistant"), what="observedGeneration")["status"]
    assert status["speculation"]["k"] == 5


@pytest.mark.usefixtures("running_operator")
def test_a_fleet_whose_policy_runs_a_table_starts_with_it(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    """The default policy renders a batch-size→k table: the pods start with it (no restart to reach it), their
    engines at the deployment's ceiling k, and a new starting k in the spec leaves them running."""
    _create(api_client, in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace))
    status = wait_for(lambda: _observed(emulator, namespace, "code-assistant"), what="observedGeneration")["status"]
    speculation = status["speculation"]
    table = [(row["maxBatchSize"], row["k"]) for row in speculation["schedule"]]
    assert table, speculation
    assert speculation["k"] == max(k for _, k in table) <= 6, speculation
    assert [k for _, k in table] == sorted((k for _, k in table), reverse=True), table  # less k at more load
    assert speculation["reason"] == "starting table from the policy's prior"
    deployment = _deployment(emulator, namespace, "code-assistant")
    assert deployment is not None
    args = _args(deployment)
    config = json.loads(args[args.index("--speculative-config") + 1])
    assert config["num_speculative_tokens"] == 6  # maxSpeculativeTokens: every table the policy renders fits
    old_hash = deployment["spec"]["template"]["metadata"]["labels"][LABEL_CONFIG_HASH]
    _patch_spec(api_client, namespace, "code-assistant", {"spec": {"speculation": {"numSpeculativeTokens": 5}}})
    wait_for(lambda: _observed(emulator, namespace, "code-assistant"), what="the update to be handled")
    after = _deployment(emulator, namespace, "code-assistant")
    assert after is not None
    assert after["spec"]["template"]["metadata"]["labels"][LABEL_CONFIG_HASH] == old_hash


@pytest.mark.usefixtures("running_operator")
def test_irrelevant_change_patches_nothing(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    _create(api_client, in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace))
    wait_for(lambda: _observed(emulator, namespace, "code-assistant"), what="the first reconcile")
    writes_before = _child_writes(emulator, namespace)
    assert sorted(w.split()[0] for w in writes_before) == ["patch", "patch", "patch"]  # applied, which creates
    # A policy tweak and a label change do not touch what runs in the pods.
    _patch_spec(
        api_client,
        namespace,
        "code-assistant",
        {"metadata": {"labels": {"team": "search"}}, "spec": {"policy": {"dwellSeconds": 60}}},
    )
    wait_for(lambda: _observed(emulator, namespace, "code-assistant"), what="the update to be handled")
    assert _child_writes(emulator, namespace) == writes_before


@pytest.mark.usefixtures("running_operator")
def test_mode_off_removes_speculation_and_back(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    _create(api_client, in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace))
    wait_for(lambda: _deployment(emulator, namespace, "code-assistant"), what="the Deployment")
    _patch_spec(api_client, namespace, "code-assistant", {"spec": {"speculation": {"mode": "Off"}}})
    wait_for(
        lambda: not any("speculative" in a for a in _args(_deployment(emulator, namespace, "code-assistant") or {})),
        what="speculation to be removed",
    )
    _patch_spec(api_client, namespace, "code-assistant", {"spec": {"speculation": {"mode": "On"}}})
    wait_for(
        lambda: any("speculative" in a for a in _args(_deployment(emulator, namespace, "code-assistant") or {})),
        what="speculation to come back",
    )


def test_schema_invalid_resources_are_refused_by_the_api(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    for path in sorted(INVALID.glob("*.yaml")):
        with pytest.raises(kubernetes.client.ApiException) as caught:
            _create(api_client, in_namespace(load(path), namespace))
        assert caught.value.status == 422, path.name


@pytest.mark.usefixtures("running_operator")
def test_invalid_stored_resource_gets_condition_and_event_others_served(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    # Admitted under an older CRD without the rule, then the CRD upgrade tightened validation.
    with _crd_without_rules(emulator):
        emulator.apply(in_namespace(load(INVALID / "missing-draft.yaml"), namespace))
    _create(api_client, in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace))

    def invalid_condition() -> dict[str, Any] | None:
        conditions = (_sdd(emulator, namespace, "missing-draft").get("status") or {}).get("conditions", [])
        return next((c for c in conditions if c["type"] == "Ready" and c["reason"] == "InvalidSpec"), None)

    condition = wait_for(invalid_condition, what="the InvalidSpec condition")
    assert "spec.speculation: draftModel is required" in condition["message"]
    warnings = wait_for(
        lambda: [e for e in _events(emulator, namespace) if e.get("reason") == "InvalidSpec"],
        what="the Event",
    )
    assert warnings[0]["type"] == "Warning"
    assert warnings[0]["involvedObject"]["name"] == "missing-draft"
    assert _deployment(emulator, namespace, "missing-draft") is None
    wait_for(lambda: _deployment(emulator, namespace, "code-assistant"), what="the valid resource to be served")


def test_restart_mid_way_converges_without_duplicates(
    emulator: EmulatorServer,
    api_client: kubernetes.client.ApiClient,
    kubeconfig: pathlib.Path,
    namespace: str,
) -> None:
    with BackgroundOperator(operator_config(kubeconfig)):
        _create(api_client, in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace))
        wait_for(lambda: _deployment(emulator, namespace, "code-assistant"), what="the first Deployment")
    # While the operator is down: a second resource appears and the first one's k changes.
    second = in_namespace(load(EXAMPLES / "llama-8b-eagle3.yaml"), namespace)
    _create(api_client, second)
    _patch_spec(api_client, namespace, "code-assistant", {"spec": {"speculation": {"numSpeculativeTokens": 6}}})
    with BackgroundOperator(operator_config(kubeconfig)):
        wait_for(lambda: _observed(emulator, namespace, "code-assistant"), what="resume of the first")
        wait_for(lambda: _observed(emulator, namespace, "llama-8b"), what="the second")
    assert sorted(emulator.created("deployments", namespace)) == ["code-assistant", "llama-8b"]
    args = _args(_deployment(emulator, namespace, "code-assistant") or {})
    assert json.loads(args[args.index("--speculative-config") + 1])["num_speculative_tokens"] == 6


@pytest.mark.usefixtures("running_operator")
def test_deleted_child_is_recreated_and_status_follows_the_deployment(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    _create(api_client, in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace))
    wait_for(lambda: _deployment(emulator, namespace, "code-assistant"), what="the Deployment")
    apps = kubernetes.client.AppsV1Api(api_client)
    # Play the Deployment controller: report the pod ready.
    apps.patch_namespaced_deployment_status(
        "code-assistant", namespace, {"status": {"replicas": 1, "readyReplicas": 1, "updatedReplicas": 1}}
    )

    def ready() -> bool:
        conditions = (_sdd(emulator, namespace, "code-assistant").get("status") or {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    wait_for(ready, what="Ready=True from the Deployment's status")
    assert _sdd(emulator, namespace, "code-assistant")["status"]["readyReplicas"] == 1
    apps.delete_namespaced_deployment("code-assistant", namespace)
    wait_for(
        lambda: (_deployment(emulator, namespace, "code-assistant") or {}).get("metadata", {}).get("uid"),
        what="the Deployment to be re-created",
    )


@pytest.mark.usefixtures("running_operator")
def test_deleting_the_resource_garbage_collects_children(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    _create(api_client, in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace))
    wait_for(
        lambda: emulator.get("policy/v1", "poddisruptionbudgets", "code-assistant", namespace),
        what="children",
    )
    # The operator releases its finalizer (it stops the fleet's timer), then owner references do the rest.
    kubernetes.client.CustomObjectsApi(api_client).delete_namespaced_custom_object(
        GROUP, VERSION, namespace, SDD_PLURAL, "code-assistant"
    )
    wait_for(lambda: emulator.get(SDD_API, SDD_PLURAL, "code-assistant", namespace) is None, what="the deletion")
    wait_for(lambda: _deployment(emulator, namespace, "code-assistant") is None, what="garbage collection")
    assert emulator.get("v1", "services", "code-assistant", namespace) is None
