from __future__ import annotations

import pytest

from specfleet.operator.policy.acceptance import (
    MEMORY_HALF_LIFE_S,
    PRIORS,
    AcceptanceMemory,
    clean,
    collapse_floor,
    curve_from_length,
    expected_tokens,
    extrapolate,
    prior_curve,
    remembered,
)

PRIOR = PRIORS["eagle3"]


def test_measured_noise_is_made_monotone_and_bounded() -> None:
    assert clean([0.7, 0.75, -0.1, 1.5]) == (0.7, 0.7, 0.0, 0.0)


def test_ngram_extrapolation_keeps_its_high_conditional_rate() -> None:
    curve = extrapolate([0.16, 0.13, 0.11], 5, PRIORS["ngram"])
    assert curve[3] / curve[2] == pytest.approx((0.11 / 0.16) ** 0.5)


def test_curve_from_length_reproduces_the_length() -> None:
    assert expected_tokens(curve_from_length(2.25, 3), 3) == pytest.approx(2.25, abs=1e-6)
    assert curve_from_length(9.0, 3) == pytest.approx((1.0, 1.0, 1.0), abs=1e-6)


def test_memory_fades_toward_the_prior() -> None:
    measured = (0.2, 0.1, 0.05)
    memory = AcceptanceMemory(measured, measured_at=0.0)
    assert remembered(memory, PRIOR, 0.0, 3) == pytest.approx(measured)
    half = remembered(memory, PRIOR, MEMORY_HALF_LIFE_S, 3)
    prior = prior_curve(PRIOR, 3)
    assert half == pytest.approx(tuple((m + p) / 2 for m, p in zip(measured, prior, strict=True)))
    assert remembered(None, PRIOR, 0.0, 3) == prior


def test_collapse_is_judged_against_what_the_running_k_can_give() -> None:
    assert collapse_floor(1.3, 3) == pytest.approx(1.3)
    assert collapse_floor(1.3, 1) == pytest.approx(1.1)  # a k=1 row gives at most 1 + a_1
    assert collapse_floor(1.3, 5) == pytest.approx(1.3)  # deep positions of a poor drafter add little
    assert collapse_floor(1.3, 0) == 1.0  # nothing drafted: no length can be below it


def test_unmeasured_positions_never_extrapolate_above_the_prior() -> None:
    # A steep measured shape is kept; a flat one is capped at the prior's conditional rate beyond it.
    steep = extrapolate([0.6, 0.3], 4, PRIORS["eagle3"])
    assert steep[2] / steep[1] == pytest.approx(0.5)
    flat = extrapolate([0.6, 0.59], 4, PRIORS["eagle3"])
    assert flat[2] / flat[1] == pytest.approx(PRIORS["eagle3"].conditional)
