"""A tenant cannot reach a managed engine setting, a colliding port or an impossible quantity through the API.

The CRD (CEL rules and schema, as the emulator evaluates them) refuses each bypass with 422; a resource that
got in under an older CRD is marked InvalidSpec by the operator's own check, and its pods are left unchanged.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.crdgen import spec_decode_deployment_crd
from specfleet.operator.api.quantity import EXTENDED_EQUAL, EXTENDED_WHOLE
from specfleet.operator.api.types import PORT_COLLIDES, RUNTIME_ENV
from specfleet.runtime.extra_args import EXTRA_ARG_SYNTAX_MESSAGE, MANAGED_FLAGS_MESSAGE
from tests.api.test_extra_args import BYPASSES, LEGITIMATE
from tests.examples import EXAMPLES, load
from tests.fixtures.operator import in_namespace, wait_for
from tests.operator.test_reconcile import _create, _deployment, _patch_spec, _sdd

# RE2's `$` (the API server's) does not match before a trailing newline, Python's does; the Python check uses
# fullmatch to agree with RE2, and this case is covered in tests/api.
API_BYPASSES = [(extra, message) for extra, message in BYPASSES if extra != ["--enforce-eager\n"]]


def _fleet(namespace: str, name: str, runtime: dict[str, Any]) -> dict[str, Any]:
    manifest = in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace)
    manifest["metadata"]["name"] = name
    manifest["spec"]["speculation"]["mode"] = "Off"
    manifest["spec"]["runtime"] = runtime
    return manifest


def _refused(api_client: kubernetes.client.ApiClient, manifest: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(kubernetes.client.ApiException) as caught:
        _create(api_client, manifest)
    assert caught.value.status == 422, caught.value.body
    status: dict[str, Any] = json.loads(caught.value.body)
    return status


def _causes(status: dict[str, Any]) -> list[tuple[str, str]]:
    return [(cause["field"], cause["message"]) for cause in status["details"]["causes"]]


@pytest.mark.parametrize(("extra", "message"), API_BYPASSES, ids=[repr(b[0]) for b in API_BYPASSES])
def test_the_crd_refuses_every_bypass(
    api_client: kubernetes.client.ApiClient, namespace: str, extra: list[str], message: str
) -> None:
    status = _refused(api_client, _fleet(namespace, "bypass", {"extraArgs": extra}))
    causes = _causes(status)
    assert causes, status
    for field, text in causes:
        assert field.startswith("spec.runtime.extraArgs["), field
        assert text.endswith(EXTRA_ARG_SYNTAX_MESSAGE) or text.endswith(MANAGED_FLAGS_MESSAGE), text


def test_the_crd_accepts_legitimate_extra_args(api_client: kubernetes.client.ApiClient, namespace: str) -> None:
    created = _create(api_client, _fleet(namespace, "legit", {"extraArgs": LEGITIMATE}))
    assert created["spec"]["runtime"]["extraArgs"] == LEGITIMATE


@pytest.mark.parametrize(
    ("runtime", "field", "message"),
    [
        ({"port": 8081}, "spec.runtime", PORT_COLLIDES),
        ({"env": [{"name": "SPECFLEET_ENGINE_EXTRA_ARGS", "value": "--port 9999"}]}, "spec.runtime", RUNTIME_ENV),
        ({"resources": {"requests": {"cpu": "-1"}}}, "spec.runtime.resources.requests[cpu]", "should match"),
        ({"resources": {"requests": {"cpu": -1}}}, "spec.runtime.resources.requests[cpu]", "greater than or equal"),
        ({"resources": {"limits": {"memory": "1.2.3"}}}, "spec.runtime.resources.limits[memory]", "should match"),
        ({"resources": {"limits": {"memory": "5e"}}}, "spec.runtime.resources.limits[memory]", "should match"),
        ({"resources": {"limits": {"nvidia.com/gpu": "0.5"}}}, "spec.runtime.resources.limits", EXTENDED_WHOLE),
        ({"resources": {"requests": {"amd.com/gpu": 1}}}, "spec.runtime.resources", EXTENDED_EQUAL),
        (
            {"resources": {"requests": {"amd.com/gpu": 1}, "limits": {"amd.com/gpu": 2}}},
            "spec.runtime.resources",
            EXTENDED_EQUAL,
        ),
    ],
)
def test_the_crd_refuses_colliding_ports_runtime_env_and_impossible_quantities(
    api_client: kubernetes.client.ApiClient, namespace: str, runtime: dict[str, Any], field: str, message: str
) -> None:
    causes = _causes(_refused(api_client, _fleet(namespace, "bad-runtime", runtime)))
    assert any(cause_field == field and message in text for cause_field, text in causes), causes


def test_the_crd_takes_integer_quantities_as_the_api_server_does(
    api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    resources = {"requests": {"cpu": 8, "memory": "16Gi", "amd.com/gpu": 2}, "limits": {"cpu": 8, "amd.com/gpu": 2}}
    created = _create(api_client, _fleet(namespace, "ints", {"resources": resources}))
    assert created["spec"]["runtime"]["resources"] == resources


@contextlib.contextmanager
def _crd_without_engine_arg_rules(emulator: EmulatorServer) -> Iterator[None]:
    """The CRD as it was before these rules (a resource admitted then is still stored)."""
    crd = spec_decode_deployment_crd()
    relaxed = copy.deepcopy(crd)
    runtime = relaxed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["runtime"]
    runtime["properties"]["extraArgs"]["items"].pop("x-kubernetes-validations")
    emulator.apply(relaxed)
    try:
        yield
    finally:
        emulator.apply(crd)


def _invalid_message(emulator: EmulatorServer, namespace: str, name: str) -> str | None:
    conditions = (_sdd(emulator, namespace, name).get("status") or {}).get("conditions", [])
    return next((c["message"] for c in conditions if c["type"] == "Ready" and c["reason"] == "InvalidSpec"), None)


@pytest.mark.usefixtures("running_operator")
def test_a_stored_bypass_is_marked_and_changes_nothing(
    emulator: EmulatorServer, api_client: kubernetes.client.ApiClient, namespace: str
) -> None:
    _create(api_client, _fleet(namespace, "tenant", {"extraArgs": ["--max-num-seqs=64"]}))
    before = wait_for(lambda: _deployment(emulator, namespace, "tenant"), what="the tenant's Deployment")
    with _crd_without_engine_arg_rules(emulator):
        _patch_spec(api_client, namespace, "tenant", {"spec": {"runtime": {"extraArgs": ["--por=9999"]}}})
        emulator.apply(in_namespace(_fleet(namespace, "fresh", {"extraArgs": ["\u2014model=evil"]}), namespace))
    message = wait_for(lambda: _invalid_message(emulator, namespace, "tenant"), what="the InvalidSpec condition")
    assert message == "spec.runtime.extraArgs[0]: '--por=9999' would set --port, which the operator manages"
    fresh = wait_for(lambda: _invalid_message(emulator, namespace, "fresh"), what="InvalidSpec on the new fleet")
    assert "'\u2014model=evil' is not --name or --name=value: vLLM would take it as the model" in fresh
    after = _deployment(emulator, namespace, "tenant")
    assert after is not None
    assert after["spec"]["template"] == before["spec"]["template"]
    assert _deployment(emulator, namespace, "fresh") is None
