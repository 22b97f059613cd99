from __future__ import annotations

import pytest

from specfleet.operator.policy.calibration import OFF, SPEC, Calibration, bucket
from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.state import SpecConfig
from tests.policy.helpers import COST_8B_H100, SHAREGPT


def test_buckets_are_powers_of_two() -> None:
    assert [bucket(b) for b in (0, 1, 2, 3, 4, 7, 8, 100)] == [0, 0, 1, 1, 2, 2, 3, 6]


def test_factor_converges_to_observed_ratio() -> None:
    calibration = Calibration()
    for _ in range(30):
        calibration = calibration.observe(OFF, 16, observed_s=0.013, predicted_s=0.010)
    assert calibration.factor(OFF, 16) == pytest.approx(1.3, rel=1e-3)
    assert calibration.factor(OFF, 20) == pytest.approx(1.3, rel=1e-3)  # same bucket
    # Never-observed mode borrows the other's factor: a systematic error cancels in the speed-up.
    assert calibration.factor(SPEC, 16) == pytest.approx(1.3, rel=1e-3)


def test_nearest_bucket_is_used() -> None:
    calibration = Calibration().observe(OFF, 2, 0.02, 0.01).observe(OFF, 256, 0.005, 0.01)
    assert calibration.factor(OFF, 4) == calibration.factor(OFF, 2)
    assert calibration.factor(OFF, 200) == calibration.factor(OFF, 256)


def test_garbage_ratios_are_ignored() -> None:
    calibration = Calibration()
    assert calibration.observe(OFF, 8, 10.0, 0.01) == calibration
    assert calibration.observe(OFF, 8, 0.0, 0.01) == calibration


def test_round_trip() -> None:
    calibration = Calibration().observe(OFF, 8, 0.012, 0.01).observe(SPEC, 64, 0.02, 0.025)
    assert Calibration.from_dict(calibration.to_dict()).to_dict() == calibration.to_dict()


def test_correction_moves_predicted_tpot_toward_observation() -> None:
    config = SpecConfig(enabled=True, k=3)
    prior = Predictor(COST_8B_H100, SHAREGPT, Calibration())
    observed = prior.tpot(config, 32) * 1.4
    calibration = Calibration()
    for _ in range(20):
        step = COST_8B_H100.step_spec(3, 32)
        calibration = calibration.observe(SPEC, 32, observed * (1 + sum(SHAREGPT)), step)
    assert Predictor(COST_8B_H100, SHAREGPT, calibration).tpot(config, 32) == pytest.approx(observed, rel=0.01)
    # A slower spec path lowers the predicted speed-up.
    slower = Calibration({OFF: {5: 1.0}, SPEC: {5: 1.4}})
    assert Predictor(COST_8B_H100, SHAREGPT, slower).speedup(3, 32) < prior.speedup(3, 32) / 1.3
