from __future__ import annotations

import pytest

from specfleet.operator.policy.forecast import Forecast


def feed(values: list[float]) -> Forecast:
    forecast = Forecast()
    for value in values:
        forecast = forecast.observe(value)
    return forecast


def test_empty_forecast_predicts_nothing() -> None:
    assert Forecast().predict(4) is None


def test_constant_series_predicts_itself() -> None:
    assert feed([20.0] * 10).predict(4) == pytest.approx(20.0)


def test_rising_series_is_extrapolated() -> None:
    forecast = feed([float(10 + 2 * i) for i in range(20)])
    predicted = forecast.predict(4)
    assert predicted is not None
    assert predicted > 48


def test_a_projection_holds_the_trend_over_its_whole_horizon() -> None:
    """Unlike the damped forecast (a few intervals of trend at most), a projection carries the trend to the
    end of a rollout, 40 intervals ahead here."""
    forecast = feed([float(10 + 2 * i) for i in range(20)])
    projected, damped = forecast.project(40), forecast.predict(40)
    assert projected is not None
    assert damped is not None
    assert forecast.level is not None
    assert forecast.trend > 1
    assert projected == pytest.approx(forecast.level + 40 * forecast.trend)
    assert projected > damped + 40
    assert feed([float(100 - 10 * i) for i in range(10)]).project(40) == 0.0
    assert Forecast().project(4) is None


def test_never_negative() -> None:
    predicted = feed([float(100 - 10 * i) for i in range(10)]).predict(10)
    assert predicted is not None
    assert predicted >= 0


def test_volatile_series_uses_p90() -> None:
    forecast = feed([5.0, 40.0, 3.0, 50.0, 4.0, 45.0, 6.0, 42.0])
    assert forecast.volatile()
    assert forecast.predict(4, p90=60.0) == 60.0
    assert not feed([20.0] * 8).volatile()
    assert feed([20.0] * 8).predict(4, p90=60.0) == pytest.approx(20.0)


def test_round_trip() -> None:
    forecast = feed([3.0, 5.0, 8.0])
    assert Forecast.from_dict(forecast.to_dict()) == forecast
