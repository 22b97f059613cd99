"""Children converge continuously: the real operator (Kopf) against the emulator repairs hand edits and
deletions of the Deployment, Service and PDB it owns, leaves other managers' fields alone, and writes nothing
for an unchanged fleet (Server-Side Apply with the field manager `specfleet`)."""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import kubernetes.client
import pytest

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.constants import MANAGER
from specfleet.operator.config import DEFAULT_RUNTIME_IMAGE
from specfleet.operator.handlers.fleet import drifted
from specfleet.operator.runner import BackgroundOperator
from tests.examples import EXAMPLES, load
from tests.fixtures.operator import in_namespace, operator_config, wait_for
from tests.operator.test_reconcile import CHILD_RESOURCES, _create, _deployment, _observed

pytestmark = pytest.mark.slow

NAME = "code-assistant"
# Longer than every wait for a repair below: a repair seen in time came from the watch, not from the timer.
SLOW_TICKS = 60.0
QUICK_TICKS = 1.0
REPAIR_WAIT = 20.0
PATHS = {
    "deployments": ("apps/v1", "deployments"),
    "services": ("v1", "services"),
    "poddisruptionbudgets": ("policy/v1", "poddisruptionbudgets"),
}


@pytest.fixture
def slow_ticks(kubeconfig: pathlib.Path) -> Iterator[BackgroundOperator]:
    with BackgroundOperator(operator_config(kubeconfig, interval_seconds=SLOW_TICKS)) as operator:
        yield operator


@pytest.fixture
def quick_ticks(kubeconfig: pathlib.Path, namespace: str) -> Iterator[BackgroundOperator]:
    # Its own namespace only: the session's emulator keeps every earlier test's fleets, whose ticks (each a
    # signals read) would otherwise share this operator's every second with the one under test.
    config = operator_config(kubeconfig, interval_seconds=QUICK_TICKS, namespaces=(namespace,))
    with BackgroundOperator(config) as operator:
        yield operator


def _fleet(emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str) -> dict[str, Any]:
    """The example fleet with 2 replicas, reconciled; its Deployment as first applied."""
    manifest = in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace)
    manifest["spec"]["replicas"] = 2
    _create(api_client, manifest)
    wait_for(lambda: _observed(emulator, namespace, NAME), what="the first reconcile")
    for resource in CHILD_RESOURCES:
        wait_for(lambda r=resource: _child(emulator, namespace, r), what=f"the {resource}")  # type: ignore[misc]
    deployment = _deployment(emulator, namespace, NAME)
    assert deployment is not None
    return deployment


def _child(emulator: EmulatorServer, namespace: str, resource: str) -> dict[str, Any] | None:
    api_version, plural = PATHS[resource]
    return emulator.get(api_version, plural, NAME, namespace)


def _applies(emulator: EmulatorServer, namespace: str) -> list[str]:
    """The operator's writes of children, as `resource/name`."""
    return [
        f"{r.resource}/{r.name}"
        for r in emulator.requests
        if r.namespace == namespace and r.resource in CHILD_RESOURCES and r.verb in {"create", "patch", "update"}
        if r.query.get("fieldManager") == MANAGER
    ]


def _image(deployment: dict[str, Any] | None) -> str | None:
    containers = (deployment or {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])
    image = containers[0].get("image")
    return str(image) if image else None


@pytest.mark.usefixtures("slow_ticks")
def test_hand_edits_of_replicas_and_image_are_put_back_once_each(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    rendered = _fleet(emulator, api_client, namespace)
    apps = kubernetes.client.AppsV1Api(api_client)
    before = len(_applies(emulator, namespace))
    apps.patch_namespaced_deployment(NAME, namespace, {"spec": {"replicas": 7}}, field_manager="kubectl-edit")
    wait_for(
        lambda: (_deployment(emulator, namespace, NAME) or {})["spec"]["replicas"] == 2,
        timeout=REPAIR_WAIT,
        what="replicas 7 to be put back to 2",
    )
    edit = {"spec": {"template": {"spec": {"containers": [{"name": "engine", "image": "evil:1"}]}}}}
    apps.patch_namespaced_deployment(NAME, namespace, edit, field_manager="kubectl-edit")
    wait_for(
        lambda: _image(_deployment(emulator, namespace, NAME)) == _image(rendered),
        timeout=REPAIR_WAIT,
        what="the image to be put back",
    )
    time.sleep(3)  # whatever else the repairs caused (their own watch events) has happened by now
    assert _applies(emulator, namespace)[before:] == [f"deployments/{NAME}", f"deployments/{NAME}"]
    repaired = _deployment(emulator, namespace, NAME) or {}
    assert repaired["spec"] == rendered["spec"]
    # The edits' manager owned nothing but what was taken back: its managedFields entry is gone.
    assert [entry["manager"] for entry in repaired["metadata"]["managedFields"]] == [MANAGER]


@pytest.mark.usefixtures("slow_ticks")
def test_deleted_service_pdb_and_deployment_are_recreated(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    _fleet(emulator, api_client, namespace)
    core, policy = kubernetes.client.CoreV1Api(api_client), kubernetes.client.PolicyV1Api(api_client)
    apps = kubernetes.client.AppsV1Api(api_client)
    deletes: dict[str, Callable[[], object]] = {
        "services": lambda: core.delete_namespaced_service(NAME, namespace),
        "poddisruptionbudgets": lambda: policy.delete_namespaced_pod_disruption_budget(NAME, namespace),
        "deployments": lambda: apps.delete_namespaced_deployment(NAME, namespace),
    }
    for resource, delete in deletes.items():
        uid = (_child(emulator, namespace, resource) or {})["metadata"]["uid"]
        delete()

        def recreated(r: str = resource, old: str = uid) -> bool:
            return (_child(emulator, namespace, r) or {}).get("metadata", {}).get("uid") not in (None, old)

        wait_for(recreated, timeout=REPAIR_WAIT, what=f"the {resource} to be recreated")
    assert sorted(emulator.created("services", namespace)) == [NAME, NAME]
    assert sorted(emulator.created("poddisruptionbudgets", namespace)) == [NAME, NAME]
    assert sorted(emulator.created("deployments", namespace)) == [NAME, NAME]


@pytest.mark.usefixtures("quick_ticks")
def test_other_managers_fields_stay_and_an_unchanged_fleet_writes_nothing(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    _fleet(emulator, api_client, namespace)
    theirs = {"metadata": {"annotations": {"team.example/owner": "search"}, "labels": {"team": "search"}}}
    sidecar = {"spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "proxy:1"}]}}}}
    apps = kubernetes.client.AppsV1Api(api_client)
    apps.patch_namespaced_deployment(NAME, namespace, theirs, field_manager="tool")
    apps.patch_namespaced_deployment(NAME, namespace, sidecar, field_manager="tool")  # a strategic merge: added
    kubernetes.client.CoreV1Api(api_client).patch_namespaced_service(NAME, namespace, theirs, field_manager="tool")
    time.sleep(1)  # the edits' own watch events are handled
    before = len(_applies(emulator, namespace))
    time.sleep(6 * QUICK_TICKS)  # several ticks
    assert _applies(emulator, namespace)[before:] == []
    for resource in ("deployments", "services"):
        meta = (_child(emulator, namespace, resource) or {})["metadata"]
        assert meta["annotations"]["team.example/owner"] == "search"
        assert meta["labels"]["team"] == "search"
        assert {entry["manager"] for entry in meta["managedFields"]} == {MANAGER, "tool"}
    containers = (_deployment(emulator, namespace, NAME) or {})["spec"]["template"]["spec"]["containers"]
    assert [container["name"] for container in containers] == ["engine", "proxy"]


@pytest.mark.usefixtures("quick_ticks")
def test_a_failed_repair_on_the_delete_event_is_made_good_by_a_tick(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    _fleet(emulator, api_client, namespace)
    # The API refuses the next three applies of the Service: the delete event's repair fails (Kopf does not
    # retry event handlers), and so do at least two ticks'; a failed tick must be retried at the next interval
    # (1 s here), not after Kopf's default backoff of a minute, for a later tick to bring it back in time.
    emulator.emulator[f"patch /api/v1/namespaces/{namespace}/services/{NAME}"][:3] << 500
    try:
        kubernetes.client.CoreV1Api(api_client).delete_namespaced_service(NAME, namespace)
        wait_for(
            lambda: _child(emulator, namespace, "services"), timeout=REPAIR_WAIT, what="the Service to be recreated"
        )
    finally:  # the session's emulator is shared: a reaction left behind slows every later request
        emulator.emulator.drop_reactions()
    assert _applies(emulator, namespace).count(f"services/{NAME}") >= 4  # created, refused three times, recreated


def test_drifted_names_what_differs_and_waits_for_a_pending_spec_change(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str, kubeconfig: pathlib.Path
) -> None:
    with BackgroundOperator(operator_config(kubeconfig, interval_seconds=SLOW_TICKS)):
        deployment = _fleet(emulator, api_client, namespace)
        fleet = _observed(emulator, namespace, NAME) or {}
        found = {
            "Deployment": [deployment],
            "Service": [_child(emulator, namespace, "services") or {}],
            "PodDisruptionBudget": [_child(emulator, namespace, "poddisruptionbudgets") or {}],
        }
    assert drifted(fleet, found, DEFAULT_RUNTIME_IMAGE) == []
    scaled = {**deployment, "spec": {**deployment["spec"], "replicas": 7}}
    assert drifted(fleet, {**found, "Deployment": [scaled]}, DEFAULT_RUNTIME_IMAGE) == [f"Deployment {NAME}"]
    assert drifted(fleet, {**found, "Service": []}, DEFAULT_RUNTIME_IMAGE) == [f"Service {NAME}"]
    assert drifted(fleet, {"Deployment": [deployment]}, DEFAULT_RUNTIME_IMAGE, {"Deployment"}) == []
    pending = {**fleet, "metadata": {**fleet["metadata"], "generation": fleet["metadata"]["generation"] + 1}}
    assert (
        drifted(pending, {}, DEFAULT_RUNTIME_IMAGE) == []
    )  # the change handler renders the new spec; nothing is re-applied here
