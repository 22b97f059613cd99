from __future__ import annotations

from pathlib import Path

import pytest

from specfleet.operator.api.parse import InvalidSpecError, parse_resource, parse_spec
from specfleet.operator.api.policy_types import SpeculationPolicySpec
from specfleet.operator.api.types import SpecDecodeDeploymentSpec, SpeculationMode
from tests.examples import expected_error, invalid_examples, load, valid_examples


@pytest.mark.parametrize("path", valid_examples(), ids=lambda p: p.stem)
def test_examples_parse(path: Path) -> None:
    spec = parse_spec(load(path)["spec"])
    assert spec.model.name
    assert 1 <= spec.speculation.num_speculative_tokens <= spec.speculation.max_speculative_tokens <= 16


@pytest.mark.parametrize("path", valid_examples("SpeculationPolicy"), ids=lambda p: p.stem)
def test_policy_examples_parse(path: Path) -> None:
    policy = SpeculationPolicySpec.model_validate(load(path)["spec"])
    assert policy.enable_margin is None or policy.disable_margin is None or policy.enable_margin > policy.disable_margin


@pytest.mark.parametrize("path", invalid_examples(), ids=lambda p: p.stem)
def test_invalid_examples_are_refused_with_the_expected_error(path: Path) -> None:
    with pytest.raises(InvalidSpecError) as caught:
        parse_resource(load(path))
    assert expected_error(path) in str(caught.value)


def test_defaults_are_documented_values() -> None:
    spec = SpecDecodeDeploymentSpec.model_validate({"model": {"name": "m"}, "speculation": {"method": "ngram"}})
    assert spec.replicas == 1
    assert spec.speculation.mode == SpeculationMode.AUTO
    assert spec.speculation.num_speculative_tokens == 3
    assert spec.speculation.max_speculative_tokens == 5
    assert spec.model.tensor_parallel_size == 1


def test_error_names_every_wrong_field() -> None:
    with pytest.raises(InvalidSpecError) as caught:
        parse_spec({"replicas": -2, "model": {"name": ""}, "bogus": 1})
    message = str(caught.value)
    assert "spec.replicas" in message
    assert "spec.model.name" in message
    assert "spec.bogus" in message
