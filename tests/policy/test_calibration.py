"""The online fit of the step-time model, on plain data generated from a linear truth unlike the prior."""

from __future__ import annotations

import json
import random
from dataclasses import astuple, replace

import pytest

from specfleet.operator.policy.acceptance import PRIORS, extrapolate
from specfleet.operator.policy.calibration import PARAMETER_NAMES, Calibration
from specfleet.operator.policy.costmodel import CostModel, Parameters, StepShape
from specfleet.operator.policy.observe import learn
from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.schedule import render_schedule
from specfleet.operator.policy.state import PolicyState, SpecConfig
from tests.policy.helpers import COST_8B_H100, SHAREGPT, make_context, make_signals

COST = COST_8B_H100.with_context(900)
# A draft the traffic suits poorly: on the prior, k=1 only just beats a k=0 row at bs≈256.
WEAK = extrapolate((0.3, 0.1), 5, PRIORS["eagle3"])


def truth(cost: CostModel) -> Parameters:
    """An engine the roofline misjudges: verification past the knee is cheap, the drafter's pass costs more
    per sequence, and a k=0 row's tax is a third of what vLLM measured."""
    prior = cost.prior()
    return replace(
        prior,
        fixed=prior.fixed * 1.2,
        token=prior.token * 0.4,
        knee=prior.knee * 0.5,
        kv=prior.kv * 1.3,
        draft_fixed=prior.draft_fixed * 1.5,
        draft_sequence=prior.draft_sequence * 1.5,
        zero_row_fixed=prior.zero_row_fixed / 3,
        zero_row_sequence=prior.zero_row_sequence / 3,
    )


def observed(cost: CostModel, params: Parameters, shape: StepShape, noise: float) -> tuple[StepShape, float]:
    """The step time a pod reports at `shape` (its prompt tokens included), with relative `noise`."""
    return shape, cost.step(shape, astuple(params)) * (1 + noise)


# Prompt tokens admitted per generated token (ShareGPT-like: prompts a few times longer than the answers).
PROMPT_RATIO = 2.5


def feed(calibration: Calibration, cost: CostModel, params: Parameters, windows: int, *, seed: int = 0) -> Calibration:
    """`windows` observations of a day: off at some hours, tables (k=0..3 rows) at others, varying load; every
    step carries its share of the prompts, PROMPT_RATIO per token it generates."""
    rng = random.Random(seed)
    calibration = calibration.with_prompt_ratio(PROMPT_RATIO)
    for i in range(windows):
        batch = rng.choice((4, 16, 48, 96, 160, 256, 384))
        k, drafter = (0, False) if i % 3 == 0 else (rng.choice((0, 1, 2, 3)), True)
        context = rng.uniform(500, 1500)
        generated = batch * (1 + sum(WEAK[:k]))
        shape = StepShape(batch, batch * (k + 1), context, k, drafter, prompt_tokens=generated * PROMPT_RATIO)
        shape, step = observed(cost, params, shape, noise=rng.gauss(0, 0.02))
        calibration = calibration.observe(cost, shape, step, 30.0 * i, weight=0.25)
    return calibration


def rendered_zero_row(predictor: Predictor, batch: int) -> bool:
    return SpecConfig(enabled=True, k=5, schedule=render_schedule(predictor, range(1, 6))).k_at(batch) == 0


def test_without_evidence_the_prior_rules() -> None:
    predictor = Predictor(COST, SHAREGPT, Calibration())
    for batch in (1, 32, 256):
        assert predictor.step(0, batch, drafter_loaded=False) == COST.step_off(batch)
        assert predictor.step(3, batch, drafter_loaded=True) == COST.step_spec(3, batch)
    std = predictor.fitted.posterior.std()
    assert std[PARAMETER_NAMES.index("token")] == pytest.approx(0.5 * COST.prior().token)
    # The drafter's per-sequence cost may be as large as what a k=0 row pays per sequence (vLLM's measurement).
    assert std[PARAMETER_NAMES.index("draft_sequence")] == pytest.approx(COST.prior().zero_row_sequence)
    assert COST.prior().zero_row_sequence > 2 * COST.prior().draft_sequence


def test_the_fit_converges_to_a_different_linear_truth() -> None:
    params = truth(COST)
    fitted = Predictor(COST, WEAK, feed(Calibration(), COST, params, 400)).fitted
    for batch in (8, 64, 256):
        for k, drafter in ((0, False), (0, True), (1, True), (3, True)):
            shape = COST.shape(k, batch, drafter=drafter)
            assert fitted.step(shape) == pytest.approx(COST.step(shape, astuple(params)), rel=0.03)
    # The prompts' work is priced at the decode's per-token cost, so it is not read as a dearer decode.
    assert fitted.parameters.token == pytest.approx(params.token, rel=0.25)


def test_the_fit_reranks_a_cheap_zero_row_against_k1() -> None:
    start = COST.prior()
    params = replace(start, zero_row_fixed=start.zero_row_fixed / 10, zero_row_sequence=start.zero_row_sequence / 10)
    prior = Predictor(COST, WEAK, Calibration())
    # The premise: the prior, taxing a k=0 row as vLLM measured, ranks k=1 above it at bs=256 ...
    assert prior.speedup(1, 256) > prior.speedup(0, 256, drafter_loaded=True)
    # ... where the truth's k=0 row, taxed a tenth as much, is faster than k=1.
    off = COST.step(COST.shape(0, 256, drafter=False), astuple(params))
    taxed = COST.step(COST.shape(0, 256, drafter=True), astuple(params))
    k1 = COST.step(COST.shape(1, 256, drafter=True), astuple(params))
    assert off / taxed > (1 + WEAK[0]) * off / k1
    fitted = Predictor(COST, WEAK, feed(Calibration(), COST, params, 400))
    assert fitted.speedup(0, 256, drafter_loaded=True) > fitted.speedup(1, 256)


def test_a_zero_row_is_written_where_the_fitted_tax_is_surely_below_the_loss() -> None:
    """The prior's tax is too uncertain to bet a k=0 row on; evidence of a cheap drafter and a dear verify
    makes it a sure win past the knee."""
    prior = COST.prior()
    dear_verify = replace(prior, token=prior.token * 2.5, knee=prior.knee * 2.5, draft_fixed=prior.draft_fixed * 0.5)
    assert not rendered_zero_row(Predictor(COST, WEAK, Calibration()), 384)
    fitted = Predictor(COST, WEAK, feed(Calibration(), COST, dear_verify, 400))
    assert fitted.drafter_tax(384, pessimism=1.0) < 1 - fitted.best(384, range(1, 6))[1]
    assert rendered_zero_row(fitted, 384)


def test_a_factor_per_mode_could_not_rerank_but_the_fit_does() -> None:
    """Scaling every step by one factor leaves the ranking; only a different shape changes it."""
    uniform = Parameters(*(2 * v for v in astuple(COST.prior())))
    fitted = Predictor(COST, WEAK, feed(Calibration(), COST, uniform, 300))
    prior = Predictor(COST, WEAK, Calibration())
    for batch in (16, 256):
        assert fitted.best(batch, range(1, 6))[0] == prior.best(batch, range(1, 6))[0]
        shape = fitted.shape(1, batch, drafter_loaded=True)
        assert fitted.step(1, batch, drafter_loaded=True) == pytest.approx(2 * COST.step(shape), rel=0.03)


def test_uncertainty_shrinks_with_evidence() -> None:
    params, shape = truth(COST), COST.shape(1, 256, drafter=True)
    spreads = [
        Predictor(COST, WEAK, feed(Calibration(), COST, params, n)).fitted.step_std(shape) for n in (0, 10, 100, 400)
    ]
    assert spreads == sorted(spreads, reverse=True)
    assert spreads[-1] < spreads[0] / 5


def test_off_hours_teach_the_verify_cost() -> None:
    """Only plain decoding observed: the target's parameters move, the drafter's stay at the prior."""
    params, rng = truth(COST), random.Random(1)
    calibration = Calibration()
    for i, batch in enumerate((8, 64, 128, 256, 512, 1024) * 20):
        shape = StepShape(batch, batch, rng.uniform(200, 2000), 0, False)
        shape, step = observed(COST, params, shape, noise=0.0)
        calibration = calibration.observe(COST, shape, step, 30.0 * i, weight=0.25)
    fitted = calibration.fitted(COST)
    # A plain batch of 1024 tokens is the forward that verifies k=3 for 256 sequences.
    verify = StepShape(256, 1024, 900, 0, False)
    assert fitted.step(verify) == pytest.approx(COST.step(verify, astuple(params)), rel=0.05)
    assert fitted.parameters.draft_fixed == pytest.approx(COST.prior().draft_fixed, rel=0.05)


def test_faults_change_nothing_and_old_evidence_fades() -> None:
    shape = COST.shape(0, 16, drafter=False)
    empty = Calibration()
    assert empty.observe(COST, shape, 100 * COST.step_off(16), 0.0, 1.0) == empty
    assert empty.observe(COST, shape, 0.0, 0.0, 1.0) == empty
    once = empty.observe(COST, shape, COST.step_off(16), 0.0, 1.0)
    later = once.observe(COST, shape, COST.step_off(16), 4 * 3600.0, 1.0)
    assert later.evidence.weight == pytest.approx(1.5)  # halved, plus the new one
    assert len(later.evidence.gram) == len(once.evidence.gram) == len(PARAMETER_NAMES) ** 2


def test_the_fit_round_trips_through_the_status() -> None:
    calibration = feed(Calibration(), COST, truth(COST), 50)
    raw = json.loads(json.dumps(calibration.to_dict()))
    assert Calibration.from_dict(raw) == calibration
    state = PolicyState(current=SpecConfig(enabled=True, k=3), last_good=SpecConfig.off(), calibration=calibration)
    restored = PolicyState.from_dict(json.loads(json.dumps(state.to_dict())))
    assert restored.calibration.fitted(COST).values == calibration.fitted(COST).values


def test_a_status_from_the_scalar_calibration_starts_from_the_prior() -> None:
    assert Calibration.from_dict({"off": {"4": 1.2}, "spec": {"4": 1.1}}) == Calibration()
    assert Calibration.from_dict({"gram": [1.0, 2.0], "moment": [1.0]}) == Calibration()


def test_prompt_work_slows_every_step_and_dilutes_the_speed_up() -> None:
    """Each generated token carries the same share of the prompts in either mode: TPOT rises, and S moves
    towards 1 (a gain and a loss alike), since the prompts cost what they cost however the tokens decode."""
    config = SpecConfig(enabled=True, k=3)
    quiet = Predictor(COST, SHAREGPT, Calibration())
    busy = Predictor(COST, SHAREGPT, Calibration().with_prompt_ratio(PROMPT_RATIO))
    assert busy.tpot(config, 64) > quiet.tpot(config, 64)
    assert busy.tpot(SpecConfig.off(), 64) > quiet.tpot(SpecConfig.off(), 64)
    assert 1.0 < busy.speedup(3, 8) < quiet.speedup(3, 8)
    weak, weak_busy = (replace(p, curve=WEAK) for p in (quiet, busy))
    assert weak.speedup(1, 1024) < weak_busy.speedup(1, 1024) < 1.0
    # A window whose pods report no token counters keeps the last ratio.
    assert busy.calibration.with_prompt_ratio(None) == busy.calibration


def test_windows_of_signals_feed_the_fit_and_the_decision_inputs() -> None:
    """An off fleet whose steps run 30 % slower than the roofline: the fit moves there through `learn`."""
    ctx = make_context()
    state = PolicyState(current=SpecConfig.off(), last_good=SpecConfig.off())
    for i in range(200):
        batch = (16, 64, 160)[i % 3]
        tpot = 1.3 * COST_8B_H100.step_off(batch)
        signals = make_signals(batch, enabled=False, tpot_seconds=tpot, qps=0.0)
        state, obs = learn(30.0 * i, signals, state, ctx)
    assert obs.predictor.tpot(SpecConfig.off(), 64) == pytest.approx(1.3 * COST_8B_H100.step_off(64), rel=0.03)
    inputs = obs.inputs(ctx, state, 6000.0)
    weight, step, spread = (inputs[key] for key in ("fitWeight", "fitStepMs", "fitStepStdMs"))
    assert isinstance(weight, float)
    assert isinstance(step, float)
    assert isinstance(spread, float)
    assert weight > 10
    assert obs.batch == 64
    assert step == pytest.approx(1e3 * 1.3 * COST_8B_H100.step_off(64), rel=0.03)
    assert 0 < spread < 0.05 * step


def test_the_pods_prompt_tokens_are_priced_as_prompt_work_not_as_decode() -> None:
    """An off fleet at the roofline serving prompts 2.5x its answers: with the pods' prompt ratio the fit keeps
    the per-token decode cost where it is; without it, it reads the prompts as a dearer decode."""
    ctx = make_context()

    def fleet_fit(reported: float | None) -> Predictor:
        state = PolicyState(current=SpecConfig.off(), last_good=SpecConfig.off())
        for i in range(200):
            batch = (16, 64, 160)[i % 3]
            step = COST_8B_H100.step(COST_8B_H100.shape(0, batch, drafter=False, prompt_tokens=batch * PROMPT_RATIO))
            signals = make_signals(batch, enabled=False, tpot_seconds=step, prompt_tokens_per_output=reported)
            state, obs = learn(30.0 * i, signals, state, ctx)
        return obs.predictor

    informed, blind = fleet_fit(PROMPT_RATIO), fleet_fit(None)
    assert informed.calibration.prompt_ratio == PROMPT_RATIO
    prior_token = COST_8B_H100.prior().token
    assert informed.fitted.parameters.token == pytest.approx(prior_token, rel=0.05)
    assert blind.fitted.parameters.token > 1.2 * prior_token
