"""The SpeculationProfile's spec: the example parses, and what the sweep's bounds and the namespace rule refuse."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from specfleet.operator.api.crdgen import speculation_profile_crd
from specfleet.operator.api.profile_types import MAX_CONCURRENCIES, MAX_K_VALUES, SpeculationProfileSpec
from tests.examples import EXAMPLES, load

EXAMPLE = load(EXAMPLES / "llama-8b-profile.yaml")["spec"]


def _with(**changes: Any) -> dict[str, Any]:
    return {**EXAMPLE, **changes}


def test_the_example_parses() -> None:
    spec = SpeculationProfileSpec.model_validate(EXAMPLE)
    assert spec.sweep.k == [1, 3, 5]
    assert spec.prompts.config_map_key_ref.key == "requests.jsonl"


@pytest.mark.parametrize(
    "spec",
    [
        _with(sweep={"concurrencies": list(range(1, MAX_CONCURRENCIES + 2)), "k": [1]}),
        _with(sweep={"concurrencies": [1], "k": list(range(1, MAX_K_VALUES + 2))}),
        _with(sweep={"concurrencies": [0], "k": [1]}),
        _with(sweep={"concurrencies": [1], "k": [0]}),  # k=0 is always measured, never asked for
        _with(sweep={"concurrencies": [], "k": [1]}),
        # Another namespace's ConfigMap cannot even be named.
        _with(prompts={"configMapKeyRef": {"name": "prompts", "key": "x", "namespace": "other"}}),
        _with(prompts={"configMapKeyRef": {"name": "prompts", "key": "../etc/passwd"}}),
        _with(fleetRef={"name": "llama-8b", "namespace": "other"}),
    ],
)
def test_what_the_spec_refuses(spec: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SpeculationProfileSpec.model_validate(spec)


def test_kubectl_shows_the_phase_and_the_crossovers() -> None:
    version = speculation_profile_crd()["spec"]["versions"][0]
    columns = {column["name"]: column["jsonPath"] for column in version["additionalPrinterColumns"]}
    assert columns["Phase"] == ".status.phase"
    assert columns["Crossovers"] == ".status.summary"
    assert version["subresources"] == {"status": {}}
