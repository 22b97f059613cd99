from __future__ import annotations

import random

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
    # A state saved before the slow pair existed starts it from the fast one.
    saved = Forecast.from_dict({"level": 8.0, "trend": 1.5, "errorVar": 4.0})
    assert (saved.drift, saved.noise_var) == (1.5, 4.0)


def test_a_steady_noisy_load_does_not_reach_far() -> None:
    """A steady load's trend is noise; projected over an hour of intervals the fast trend would touch any
    ceiling (here it goes past three times the load). The reach projects the slow drift and adds the p90 of
    its noise: it stays within a few errors of the level (below twice the load 99 % of the time), while a real
    ramp under the same noise is carried toward the end of the horizon, and a falling load is never projected
    below its level."""
    rng = random.Random(7)
    forecast, projected, reaches = Forecast(), [], []
    for i in range(3000):  # a day and a night of 30-second intervals at 40 ± 4
        forecast = forecast.observe(40.0 + rng.gauss(0.0, 4.0))
        if i >= 100 and forecast.level is not None:
            projected.append(forecast.level + 60 * forecast.trend)
            reaches.append(forecast.reach(60) or 0.0)
    assert max(projected) > 120
    reaches.sort()
    assert 40.0 + 4.0 < reaches[len(reaches) // 2] < reaches[int(0.99 * len(reaches))] < 80.0
    ramp = feed([10.0 + 0.5 * i + rng.gauss(0.0, 4.0) for i in range(120)])
    assert ramp.level is not None
    reach = ramp.reach(60)
    assert reach is not None
    assert reach > ramp.level + 20
    falling = feed([100.0 - 0.5 * i + rng.gauss(0.0, 4.0) for i in range(120)])
    assert falling.level is not None
    assert (falling.reach(60) or 0.0) > falling.level
