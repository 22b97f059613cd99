"""The step-time model: the fitted 8B/H100 constants, roofline derivation, knee, draft LMs, drafter tax."""

from __future__ import annotations

import pytest

from specfleet.simulator.evaluation import Scenario
from specfleet.simulator.hardware import H100, H200, LLAMA_1B, LLAMA_8B, LLAMA_70B, QWEN3_0_6B, QWEN3_8B
from specfleet.simulator.perf import (
    FIT_EAGLE_8B_H100,
    FIT_TARGET_S,
    DraftFamily,
    derive_target,
    replica_perf,
    zero_row_tax,
)
from specfleet.simulator.traces import builtin_trace


def test_8b_on_h100_is_the_fitted_model_below_the_knee() -> None:
    perf = replica_perf(LLAMA_8B, H100, 1)
    assert (perf.target.fixed_s, perf.target.per_token_s, perf.target.per_kv_s) == FIT_TARGET_S
    assert perf.eagle == FIT_EAGLE_8B_H100
    # The roofline derivation at the fit's own efficiencies lands on the fit.
    derived = derive_target(LLAMA_8B, H100, 1)
    assert derived.fixed_s == pytest.approx(FIT_TARGET_S[0])
    assert derived.per_token_s == pytest.approx(FIT_TARGET_S[1])


def test_knee_at_the_roofline_ridge_and_steeper_past_it() -> None:
    """The ridge is ≈295 batched tokens on H100 and ≈206 on H200; past it each token costs more."""
    assert derive_target(LLAMA_8B, H100, 1).knee_tokens == pytest.approx(295, abs=5)
    assert derive_target(LLAMA_8B, H200, 1).knee_tokens == pytest.approx(206, abs=5)
    target = replica_perf(LLAMA_8B, H100, 1).target
    below = float(target.seconds(200, 0) - target.seconds(100, 0))
    above = float(target.seconds(600, 0) - target.seconds(500, 0))
    assert above == pytest.approx(1.5 * below)


def test_70b_tp4_bs1_step_sits_above_its_weight_read_floor() -> None:
    """70B TP4 on H100 reads weights for 10.5 ms per token, plus all-reduce."""
    step = float(replica_perf(LLAMA_70B, H100, 4).step_seconds(None, 1, 0, 1000))
    assert 0.0105 < step < 0.020


def test_h200_is_faster_where_memory_bound_and_equal_flops() -> None:
    h100, h200 = derive_target(LLAMA_70B, H100, 4), derive_target(LLAMA_70B, H200, 4)
    assert h200.fixed_s < h100.fixed_s
    assert h200.per_kv_s < h100.per_kv_s
    assert h200.per_token_s == pytest.approx(h100.per_token_s)


def test_draft_lm_pays_k_passes_of_its_own_weights_and_kv() -> None:
    perf = replica_perf(QWEN3_8B, H100, 1, drafter=QWEN3_0_6B)
    cost = perf.draft_lm
    one, three = (float(cost.seconds(8, k, 8000)) for k in (1, 3))
    assert three == pytest.approx(3 * one)
    # Its own KV: the 0.6B drafter reads nearly as many KV bytes per token as its 8B target.
    assert cost.per_pass_kv_s == pytest.approx(perf.target.per_kv_s * 28 / 36, rel=0.01)
    smaller = replica_perf(LLAMA_70B, H100, 4, drafter=LLAMA_1B).draft_lm
    assert smaller.per_pass_kv_s < cost.per_pass_kv_s


def test_drafter_tax_of_k0_rows_is_the_measured_one() -> None:
    """A pod with a drafter loaded pays +6.6 % at concurrency 2 and +21.6 % at 189 where its table says k=0."""
    perf = replica_perf(LLAMA_8B, H100, 1)
    for batch, tax in ((2, 0.066), (189, 0.216)):
        with_drafter = float(perf.step_seconds(DraftFamily.EAGLE, batch, 0, batch * 400))
        without = float(perf.step_seconds(None, batch, 0, batch * 400))
        assert with_drafter / without - 1 == pytest.approx(tax)
    assert float(zero_row_tax(1)) == pytest.approx(0.066)
    assert float(zero_row_tax(1000)) == pytest.approx(0.216)


def test_a_drafter_twice_as_costly_doubles_draft_time_and_tax() -> None:
    perf = replica_perf(LLAMA_8B, H100, 1)
    costly = perf.with_draft_scale(2.0)
    base = perf.step_seconds(DraftFamily.EAGLE, 8, 3, 8000) - perf.step_seconds(None, 8, 3, 8000)
    double = costly.step_seconds(DraftFamily.EAGLE, 8, 3, 8000) - costly.step_seconds(None, 8, 3, 8000)
    assert float(double) == pytest.approx(2 * float(base))
    assert costly.zero_row_tax_scale == 2.0


def test_ngram_drafts_cost_far_less_than_eagle() -> None:
    perf = replica_perf(LLAMA_8B, H100, 1)
    eagle = perf.step_seconds(DraftFamily.EAGLE, 8, 3, 8000) - perf.step_seconds(None, 8, 3, 8000)
    ngram = perf.step_seconds(DraftFamily.NGRAM, 8, 3, 8000) - perf.step_seconds(None, 8, 3, 8000)
    assert float(ngram) < float(eagle) / 5


def test_truths_change_the_fleet_not_the_policy() -> None:
    """A scenario's truth picks the model the fleet runs on; the policy's deployment spec is the same."""
    trace = builtin_trace("constant", 1.0, 0.1)
    calibrated = Scenario("s", trace)
    steep, h200, costly = (Scenario("s", trace, truth=t) for t in ("steep", "h200", "drafter-2x"))
    assert steep.perf().target.past_knee_per_token_s == pytest.approx(
        3 * calibrated.perf().target.past_knee_per_token_s
    )
    assert h200.perf().target.fixed_s < calibrated.perf().target.fixed_s
    assert costly.perf().eagle.fixed_s == pytest.approx(2 * calibrated.perf().eagle.fixed_s)
    assert h200.deployment_spec() == calibrated.deployment_spec()
    with pytest.raises(ValueError, match="unknown truth"):
        Scenario("s", trace, truth="optimistic").perf()
