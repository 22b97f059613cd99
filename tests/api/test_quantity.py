"""Container resources and ports, refused as the API server would refuse them in the pod the operator renders."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
import yaml

from specfleet.operator.api.parse import InvalidSpecError, parse_spec
from specfleet.operator.api.quantity import quantity_value
from specfleet.operator.api.types import SpeculationState
from specfleet.operator.config import DEFAULT_RUNTIME_IMAGE
from specfleet.operator.render.children import render_children
from specfleet.operator.render.labels import Owner


def _spec(runtime: dict[str, Any]) -> dict[str, Any]:
    return {"model": {"name": "m"}, "speculation": {"method": "ngram"}, "runtime": runtime}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", Decimal(8)),
        ("+8", Decimal(8)),
        ("500m", Decimal("0.5")),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("2.", Decimal(2)),
        ("16Gi", Decimal(16 * 1024**3)),
        ("1k", Decimal(1000)),
        ("5e3", Decimal(5000)),
        ("5E-3", Decimal("0.005")),
        ("100n", Decimal("1e-7")),
        ("0", Decimal(0)),
    ],
)
def test_the_kubernetes_grammar_is_accepted(text: str, value: Decimal) -> None:
    assert quantity_value(text) == value
    assert parse_spec(_spec({"resources": {"requests": {"cpu": text}}})).runtime.resources.requests["cpu"] == text


@pytest.mark.parametrize("text", ["1.2.3", "5e", "-1", "-500m", "1K", "1gi", "e3", "", "1 Gi", "1e1.5", "0x10", "∞"])
def test_what_is_not_a_quantity_is_refused(text: str) -> None:
    with pytest.raises(
        InvalidSpecError, match=re.escape(f"spec.runtime.resources.requests.cpu: '{text}' is not a Kubernetes")
    ):
        parse_spec(_spec({"resources": {"requests": {"cpu": text}}}))


def test_integers_are_quantities_as_for_the_api_server() -> None:
    manifest = yaml.safe_load("resources: {requests: {cpu: 8, memory: 16Gi}, limits: {cpu: 8, amd.com/gpu: 2}}")
    spec = parse_spec(_spec(manifest))
    assert spec.runtime.resources.requests == {"cpu": "8", "memory": "16Gi"}
    container = render_children(Owner("f", "ns", "u"), spec, SpeculationState(enabled=False), DEFAULT_RUNTIME_IMAGE)[0][
        "spec"
    ]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["amd.com/gpu"] == "2"


@pytest.mark.parametrize("value", [-1, True, 0.5])
def test_negative_integers_booleans_and_floats_are_refused(value: object) -> None:
    with pytest.raises(InvalidSpecError, match=re.escape("spec.runtime.resources.requests.cpu")):
        parse_spec(_spec({"resources": {"requests": {"cpu": value}}}))


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"limits": {"nvidia.com/gpu": "0.5"}}, "limits[nvidia.com/gpu]: '0.5': extended resources"),
        ({"limits": {"amd.com/gpu": "1500m"}}, "limits[amd.com/gpu]: '1500m': extended resources"),
        ({"requests": {"nvidia.com/gpu": "1.5"}}, "requests[nvidia.com/gpu]: '1.5': extended resources"),
        ({"requests": {"amd.com/gpu": "1"}}, "requests[amd.com/gpu]: '1': a request of an extended resource"),
        (
            {"requests": {"amd.com/gpu": "1"}, "limits": {"amd.com/gpu": "2"}},
            "requests[amd.com/gpu]: '1': a request of an extended resource needs a limit equal to it",
        ),
        ({"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}}, "requests[cpu]: '2' is more than its limit '1500m'"),
        ({"requests": {"memory": "17Gi"}, "limits": {"memory": "16Gi"}}, "requests[memory]: '17Gi' is more than"),
    ],
)
def test_resources_the_api_server_would_refuse(resources: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidSpecError) as caught:
        parse_spec(_spec({"resources": resources}))
    assert f"spec.runtime.resources: {message}" in str(caught.value)


@pytest.mark.parametrize(
    "resources",
    [
        {"requests": {"nvidia.com/gpu": "2"}},  # the operator fills its limit
        {"requests": {"amd.com/gpu": 2}, "limits": {"amd.com/gpu": "2"}},
        {"requests": {"cpu": "1500m", "memory": "16Gi"}, "limits": {"cpu": "2", "memory": "16Gi"}},
        {"requests": {"hugepages-2Mi": "1Gi", "example.kubernetes.io/thing": "0.5"}},  # native, not extended
    ],
)
def test_resources_the_api_server_accepts(resources: dict[str, Any]) -> None:
    assert parse_spec(_spec({"resources": resources})).runtime.resources.requests


def test_the_engine_port_may_not_be_the_health_port() -> None:
    with pytest.raises(InvalidSpecError, match=re.escape("spec.runtime.port: port must differ from 8081")):
        parse_spec(_spec({"port": 8081}))
    assert parse_spec(_spec({"port": 8082})).runtime.port == 8082
