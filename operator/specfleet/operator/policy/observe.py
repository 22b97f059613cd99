"""Fold one window of signals into the state: forecast, acceptance memory, the cost fit, missing counter."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from specfleet.operator.api.types import Signals
from specfleet.operator.policy.acceptance import (
    AcceptanceMemory,
    Curve,
    clean,
    curve_from_length,
    merge,
    remembered,
)
from specfleet.operator.policy.calibration import Calibration, observation_weight
from specfleet.operator.policy.context import Context
from specfleet.operator.policy.costmodel import CostModel, context_from_signals
from specfleet.operator.policy.decision import Inputs
from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.state import PolicyState, SpecConfig


@dataclass(frozen=True)
class Observation:
    """What this evaluation knows, derived from the signals and the updated state."""

    batch: float | None  # measured concurrency per replica
    forecast: float | None  # B̂: forecast concurrency per replica for the next window
    # The concurrency per replica when a rolling restart begun now would end, if the trend holds.
    rollout_forecast: float | None
    # The high end of the load per replica over the horizon a change is valued on (the expected dwell).
    reach: float | None
    fresh: bool  # the signals were measured under the configuration the fleet runs
    length: float | None  # measured L under the running configuration
    drafted_k: float  # mean drafts per verify step that L was measured at (0 when nothing was drafted)
    tpot: float | None
    samples: int
    pods: int
    predictor: Predictor
    queued: float | None = None  # requests waiting per replica (mean over the window): the load not carried

    @property
    def landing_load(self) -> float | None:
        """The load a restart-bound change is judged at: the next window's or, on a rising trend, the one at
        the rollout's end."""
        if self.forecast is None:
            return None
        return max(self.forecast, self.rollout_forecast or 0.0)

    def inputs(self, ctx: Context, state: PolicyState, now: float) -> Inputs:
        values: Inputs = {
            "mode": str(ctx.mode),
            "concurrency": self.batch,
            "forecast": self.forecast,
            "rolloutForecast": self.rollout_forecast,
            "reach": self.reach,
            "acceptanceLength": self.length,
            "tpot": self.tpot,
            "queued": self.queued,
            "samples": self.samples,
            "pods": self.pods,
            "contextTokens": self.predictor.cost.context_tokens,
            "missingIntervals": state.missing_intervals,
            "restartsLastHour": len(state.restarts_in_hour(now)),
        }
        values.update({f"a{i + 1}": a for i, a in enumerate(self.predictor.curve)})
        if self.batch is not None:
            values.update(self._fit_inputs(state.current, self.batch))
        return {key: round(v, 4) if isinstance(v, float) else v for key, v in values.items()}

    def _fit_inputs(self, current: SpecConfig, batch: float) -> Inputs:
        """What the fit believes at the measured batch: the running config's step time and its uncertainty,
        and the drafter's tax on a k=0 row."""
        predictor, b = self.predictor, max(batch, 1.0)
        shape = predictor.shape(current.k_at(b), b, drafter_loaded=current.enabled)
        return {
            "fitWeight": predictor.calibration.evidence.weight,
            "fitStepMs": 1e3 * predictor.fitted.step(shape),
            "fitStepStdMs": 1e3 * predictor.fitted.step_std(shape),
            "fitDrafterTax": predictor.drafter_tax(b),
        }


def learn(now: float, signals: Signals | None, state: PolicyState, ctx: Context) -> tuple[PolicyState, Observation]:
    batch = signals.concurrency_per_replica if signals is not None else None
    if signals is None or batch is None:
        # Only a Ready pod of the current configuration owes metrics: while none is (a new fleet, a rollout's
        # first pod still loading), no signals is expected, not a fault that the fallback should answer.
        expected = ctx.fleet.ready_replicas > 0
        state = replace(state, missing_intervals=state.missing_intervals + int(expected))
        return state, _observation(now, None, state, ctx, ctx.cost, fresh=False)
    cost = ctx.cost.with_context(context_from_signals(ctx.cost, signals.kv_cache_usage, batch))
    fresh = _fresh(signals, ctx)
    state = replace(state, missing_intervals=0, forecast=state.forecast.observe(fleet_load(batch, ctx)))
    if fresh and state.current.enabled and (signals.samples or 0) >= ctx.policy.min_samples:
        measured = _measured_curve(signals, state.current)
        if measured:
            state = replace(state, acceptance=AcceptanceMemory(merge(measured, state.acceptance), now))
    if fresh and signals.tpot_seconds is not None:
        weight = observation_weight(ctx.policy.interval_seconds, ctx.policy.window_seconds)
        calibration = _calibrate(state.calibration, cost, state.current, batch, signals, now, weight)
        state = replace(state, calibration=calibration)
    return state, _observation(now, signals, state, ctx, cost, fresh=fresh)


def fleet_load(batch: float, ctx: Context) -> float:
    """The fleet's load per replica. While a fleet without a surge pod rolls, one pod is out of service and
    the others carry its share: the mean per serving pod is n/(n-1) of the fleet's load per replica for the
    rollout's length, a step that the forecast would otherwise carry forward as a rise. (With a surge pod the
    old pod serves until its replacement is Ready: n pods serve throughout.) The capacity gate prices the
    rollout's own share from the fleet's load."""
    replicas = ctx.fleet.replicas
    if ctx.fleet.ready or ctx.surge or replicas < 2:
        return batch
    return batch * (replicas - 1) / replicas


def _fresh(signals: Signals, ctx: Context) -> bool:
    running = ctx.fleet.config_hash
    return signals.config_hash is None or running is None or signals.config_hash == running


def _measured_curve(signals: Signals, current: SpecConfig) -> Curve | None:
    depth = drafted_depth(signals, current)
    if signals.acceptance_by_position:
        return clean(signals.acceptance_by_position)[:depth]
    if signals.acceptance_length is not None:
        return curve_from_length(signals.acceptance_length, depth)
    return None


def drafted_depth(signals: Signals, current: SpecConfig) -> int:
    """How many positions were drafted on (nearly) every verify step of the window.

    vLLM divides each position's accepted count by all drafts, so under a batch-size table a position that
    only the smaller batches draft reads too low (a row of k=1 makes a_2 look like zero). Positions up to the
    k of the busiest batches (the p90 concurrency) are unbiased; the mean k per draft, (L-1)/acceptance rate,
    caps that where the signals carry it.
    """
    if not current.schedule:
        return max(current.k, 1)
    busiest = signals.concurrency_p90 or signals.concurrency_per_replica or 1.0
    depth = current.k_at(busiest)
    rate, length = signals.draft_acceptance_rate, signals.acceptance_length
    if rate and length is not None and length > 1:
        depth = min(depth, math.floor((length - 1) / rate + 1e-6))
    return max(depth, 1)


def drafted_k(signals: Signals, current: SpecConfig) -> float:
    """Mean drafts per verify step in the window: drafted ÷ drafts, i.e. (L - 1) ÷ acceptance rate where the
    signals carry both; else the k the config runs at the measured batch (a table's row)."""
    rate, length = signals.draft_acceptance_rate, signals.acceptance_length
    if current.enabled and rate and length is not None and length > 1:
        return min((length - 1) / rate, float(current.k))
    return float(current.k_at(signals.concurrency_per_replica or 1.0))


def _calibrate(
    calibration: Calibration,
    cost: CostModel,
    current: SpecConfig,
    batch: float,
    signals: Signals,
    now: float,
    weight: float,
) -> Calibration:
    """One observed step time at the batch, context and k that ran: TPOT off, TPOT·L under speculation.

    A table's k=0 row is still a speculating engine (the drafter runs): its steps teach the drafter's tax.
    The prompts admitted meanwhile shared the steps through chunked prefill: the step's forward carried the
    pods' prompt tokens per generated token times the L tokens per sequence it generated, so their cost is
    fitted as the prompt's, not the decode's. Pods that do not report token counters leave the last ratio.
    """
    assert signals.tpot_seconds is not None
    b = max(batch, 1.0)
    k = current.k_at(b)
    length = 1.0 if k == 0 else signals.acceptance_length
    if length is None:
        return calibration
    step_s = signals.tpot_seconds * length
    calibration = calibration.with_prompt_ratio(signals.prompt_tokens_per_output)
    prompt = b * length * calibration.prompt_ratio
    shape = cost.shape(k, b, drafter=current.enabled, prompt_tokens=prompt)
    return calibration.observe(cost, shape, step_s, now, weight)


def rollout_seconds(state: PolicyState, ctx: Context) -> float:
    """How long a rolling restart takes: each replica in turn, at the policy's restart time or the last
    rollout's measured time per pod when that was longer."""
    restart = max(ctx.policy.restart_cost_seconds, state.restart_seconds or 0.0)
    return max(ctx.fleet.replicas, 1) * restart


def _observation(
    now: float, signals: Signals | None, state: PolicyState, ctx: Context, cost: CostModel, *, fresh: bool
) -> Observation:
    steps = ctx.policy.window_seconds / ctx.policy.interval_seconds
    p90 = signals.concurrency_p90 if signals is not None else None
    curve = remembered(state.acceptance, ctx.prior, now, ctx.policy.max_k)
    return Observation(
        batch=signals.concurrency_per_replica if signals is not None else None,
        forecast=state.forecast.predict(steps, p90),
        rollout_forecast=state.forecast.project(rollout_seconds(state, ctx) / ctx.policy.interval_seconds),
        reach=state.forecast.reach(ctx.policy.expected_dwell_seconds / ctx.policy.interval_seconds),
        fresh=fresh,
        length=signals.acceptance_length if signals is not None and fresh and state.current.enabled else None,
        drafted_k=drafted_k(signals, state.current) if signals is not None else 0.0,
        tpot=signals.tpot_seconds if signals is not None and fresh else None,
        samples=(signals.samples or 0) if signals is not None else 0,
        pods=signals.pods if signals is not None and signals.pods is not None else ctx.fleet.ready_replicas,
        predictor=Predictor(cost, curve, state.calibration),
        queued=_queued(signals),
    )


def _queued(signals: Signals | None) -> float | None:
    if signals is None or signals.waiting_requests is None or not signals.pods:
        return None
    return signals.waiting_requests / signals.pods
