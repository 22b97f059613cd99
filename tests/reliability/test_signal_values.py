"""Values Prometheus may return that are not numbers to act on (pure, on plain data)."""

from __future__ import annotations

import math

import pytest

from specfleet.operator.api.types import Signals
from specfleet.operator.signals.model import FleetTarget, LabelMapping, Unavailable
from specfleet.operator.signals.promql import parse_results
from specfleet.operator.signals.rates import fleet_signals

LABELS = LabelMapping()
TARGET = FleetTarget("ns", "chat", "h1")


def _rows(value: str) -> dict[str, list[dict[str, object]]]:
    metric = {"namespace": "ns", "specfleet_dev_deployment": "chat", "specfleet_dev_config_hash": "h1", "pod": "p0"}
    return {
        "counter:drafts": [{"metric": metric, "value": [0, value]}],
        "counter:accepted": [{"metric": metric, "value": [0, value]}],
        "gauge:running_mean": [{"metric": metric, "value": [0, value]}],
    }


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf"])
def test_only_non_finite_values_make_metrics_unavailable(value: str) -> None:
    result = fleet_signals(parse_results(_rows(value), LABELS), [TARGET], 30.0, "t")[TARGET.key]
    assert isinstance(result, Unavailable)
    assert result.reason == "NonFiniteValues"
    assert "NaN or ±Inf" in result.message


def test_finite_values_are_signals() -> None:
    result = fleet_signals(parse_results(_rows("2.5"), LABELS), [TARGET], 30.0, "t")[TARGET.key]
    assert isinstance(result, Signals)
    assert result.acceptance_length is not None
    assert math.isclose(result.acceptance_length, 2.0)
