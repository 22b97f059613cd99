"""The step-time model: the fitted 8B/H100 constants, roofline derivation, drafter tax."""

from __future__ import annotations

import pytest

from specfleet.operator.simulator.hardware import H100, H200, LLAMA_8B, LLAMA_70B
from specfleet.operator.simulator.perf import (
    FIT_EAGLE_8B_H100,
    FIT_TARGET_8B_H100,
    DraftFamily,
    derive_target,
    replica_perf,
)


def test_8b_on_h100_is_the_fitted_model() -> None:
    perf = replica_perf(LLAMA_8B, H100, 1)
    assert perf.target == FIT_TARGET_8B_H100
    assert perf.eagle == FIT_EAGLE_8B_H100
    # The roofline derivation at the fit's own efficiencies lands on the fit.
    derived = derive_target(LLAMA_8B, H100, 1)
    assert derived.fixed_s == pytest.approx(FIT_TARGET_8B_H100.fixed_s)
    assert derived.per_token_s == pytest.approx(FIT_TARGET_8B_H100.per_token_s)


def test_knee_near_the_roofline_ridge() -> None:
    """calibration.md: fixed over per-token term ≈ 280 batched tokens, the H100 ridge ≈ 295."""
    knee = FIT_TARGET_8B_H100.fixed_s / FIT_TARGET_8B_H100.per_token_s
    assert 250 <= knee <= 310


def test_70b_tp4_bs1_step_sits_above_its_weight_read_floor() -> None:
    """calibration.md: 70B TP4 on H100 reads weights for 10.5 ms per token, plus all-reduce."""
    step = float(replica_perf(LLAMA_70B, H100, 4).step_seconds(None, 1, 0, 1000))
    assert 0.0105 < step < 0.020


def test_h200_is_faster_where_memory_bound_and_equal_flops() -> None:
    h100, h200 = derive_target(LLAMA_70B, H100, 4), derive_target(LLAMA_70B, H200, 4)
    assert h200.fixed_s < h100.fixed_s
    assert h200.per_kv_s < h100.per_kv_s
    assert h200.per_token_s == pytest.approx(h100.per_token_s)


def test_drafter_tax_at_k0() -> None:
    """A pod with a drafter loaded pays its pass even when the batch-size table says k=0."""
    perf = replica_perf(LLAMA_8B, H100, 1)
    with_drafter = float(perf.step_seconds(DraftFamily.EAGLE, 200, 0, 200 * 1000))
    without = float(perf.step_seconds(None, 200, 0, 200 * 1000))
    assert with_drafter - without == pytest.approx(FIT_EAGLE_8B_H100.seconds(0, 200 * 1000))


def test_ngram_drafts_cost_far_less_than_eagle() -> None:
    perf = replica_perf(LLAMA_8B, H100, 1)
    eagle = perf.step_seconds(DraftFamily.EAGLE, 8, 3, 8000) - perf.step_seconds(None, 8, 3, 8000)
    ngram = perf.step_seconds(DraftFamily.NGRAM, 8, 3, 8000) - perf.step_seconds(None, 8, 3, 8000)
    assert float(ngram) < float(eagle) / 5
