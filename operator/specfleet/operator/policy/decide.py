"""The decision core: signals + state → hold / enable / disable / set-k / set-schedule / rollback.

Order of concerns in one evaluation: paused → learn from the signals → verify the last change (may roll back)
→ mode pins → metrics fallback → acceptance collapse → the cost model's advice (hysteresis on the predicted
speed-up at the forecast concurrency) → gates (evidence, dwell, switching cost, cooldown, budget) → commit.
In Recommend mode everything runs but nothing is applied: the configuration in the state never changes.
"""

from __future__ import annotations

from dataclasses import replace

from specfleet.operator.api.policy_types import Fallback
from specfleet.operator.api.types import Signals, SpeculationMode
from specfleet.operator.policy.acceptance import collapse_floor
from specfleet.operator.policy.belief import speedup_belief
from specfleet.operator.policy.context import Context
from specfleet.operator.policy.decision import Action, Decision, Inputs, Reason
from specfleet.operator.policy.gates import CONFIDENCE, gate, recurring_peaks, watch_peaks
from specfleet.operator.policy.observe import Observation, learn
from specfleet.operator.policy.proposal import Kind, Proposal, hold, is_live, relative_gain
from specfleet.operator.policy.schedule import BATCH_GRID, LIVE_MIN_GAIN, drifted
from specfleet.operator.policy.state import TROUGH_FRACTION, PolicyState, SpecConfig, Verification
from specfleet.operator.policy.verify import verify


def decide(now: float, signals: Signals | None, state: PolicyState, ctx: Context) -> Decision:
    """One evaluation of the policy. Pure: the new state is in the returned decision."""
    if ctx.paused:
        return Decision(Action.HOLD, Reason.PAUSED, "paused: no changes", state.current, False, {}, state)
    state, obs = learn(now, signals, state, ctx)
    if obs.forecast is not None:
        state = watch_peaks(now, state.with_load(now, obs.forecast), obs, ctx)
    inputs = obs.inputs(ctx, state, now)
    proposal: Proposal | None = None
    if state.verification is not None:
        state, proposal = verify(now, state, obs, ctx)
        if proposal is None and state.verification is None:
            proposal = hold(Reason.VERIFIED, f"{state.current.describe()} verified", state.current)
    if proposal is None:
        proposal, inputs = _propose(now, state, obs, ctx, inputs)
    proposal, state = gate(now, proposal, state, obs, ctx)
    priced = {**inputs, "gain": round(proposal.gain, 4), **_pricing(proposal)}
    decision = _commit(now, proposal, state, obs, ctx, priced)
    return replace(decision, belief=speedup_belief(obs.predictor, ctx.k_range))


def _pricing(proposal: Proposal) -> Inputs:
    """How a change (made or held back) would be carried out, and what the gates priced it at."""
    if proposal.action == Action.HOLD and proposal.wants is None:
        return {}
    priced: Inputs = {"change": "live" if proposal.live else "restart"}
    if proposal.spread > 0:
        priced["gainLow"] = round(proposal.assured_gain(CONFIDENCE), 4)
    if proposal.cost is not None:
        priced["switchCost"] = round(proposal.cost, 1)
    return priced


def _propose(now: float, state: PolicyState, obs: Observation, ctx: Context, inputs: Inputs) -> tuple[Proposal, Inputs]:
    current = state.current
    if ctx.mode == SpeculationMode.OFF:
        return _pin(current, SpecConfig.off(), Action.DISABLE), inputs
    if ctx.mode == SpeculationMode.ON and not current.enabled:
        k = obs.predictor.best(obs.forecast, ctx.k_range)[0] if obs.forecast is not None else ctx.start_k
        target = ctx.enabled_config(obs.predictor, ctx.policy.clamp_k(k))
        return _pin(current, target, Action.ENABLE), inputs
    if state.missing_intervals >= ctx.policy.metrics_missing_intervals:
        return _fallback(state, ctx), inputs
    collapse = _collapse(current, obs, ctx)
    if collapse is not None:
        return collapse, inputs
    if obs.forecast is None:
        return hold(Reason.NO_FORECAST, "no concurrency observed yet", current), inputs
    return _advise(now, state, obs, ctx, inputs)


def _pin(current: SpecConfig, target: SpecConfig, action: Action) -> Proposal:
    if current.enabled == target.enabled:
        return hold(Reason.PINNED, f"mode pins {current.describe()}", current)
    return Proposal(action, Reason.PINNED, f"mode pins {target.describe()}", target, Kind.PIN)


def _fallback(state: PolicyState, ctx: Context) -> Proposal:
    why = f"no signals for {state.missing_intervals} intervals"
    if ctx.policy.fallback == Fallback.OFF and state.current.enabled and ctx.mode != SpeculationMode.ON:
        reason = f"{why}: fallback Off"
        return Proposal(Action.DISABLE, Reason.METRICS_MISSING, reason, SpecConfig.off(), Kind.SAFETY)
    return hold(Reason.METRICS_MISSING, f"{why}: fallback {ctx.policy.fallback}", state.current)


def _collapse(current: SpecConfig, obs: Observation, ctx: Context) -> Proposal | None:
    threshold = collapse_floor(ctx.policy.collapse_acceptance_length, obs.drafted_k)
    if obs.length is None or obs.length >= threshold or obs.samples < ctx.policy.min_samples:
        return None
    why = f"acceptance collapsed: L={obs.length:.2f} < {threshold:.2f} at k={obs.drafted_k:.1f}"
    if ctx.mode == SpeculationMode.ON:
        return hold(Reason.COLLAPSE, f"{why}, but mode On pins speculation", current)
    return Proposal(Action.DISABLE, Reason.COLLAPSE, why, SpecConfig.off(), Kind.SAFETY)


def _advise(now: float, state: PolicyState, obs: Observation, ctx: Context, inputs: Inputs) -> tuple[Proposal, Inputs]:
    """Hysteresis on S(k*, B̂): enable above 1 + enable margin, disable below 1 + disable margin."""
    assert obs.landing_load is not None
    policy, current, predictor = ctx.policy, state.current, obs.predictor
    # Turning speculation on or off restarts the pods: it is judged at the load it will land in.
    b_hat = obs.landing_load
    k_best, s_raw = predictor.best(b_hat, ctx.k_range)
    s_best = predictor.guarded(b_hat, ctx.k_range)
    # What staying costs: off would carry the same load at its own batch (see `settled_speedup`).
    s_current = (
        predictor.carried_speedup(current, b_hat) if current.enabled else predictor.config_speedup(current, b_hat)
    )
    enable_above, disable_below = 1 + policy.enable_margin, 1 + policy.disable_margin
    inputs = {
        **inputs,
        "kStar": k_best,
        "speedupBest": round(s_raw, 4),
        "speedupGuarded": round(s_best, 4),
        "speedupCurrent": round(s_current, 4),
        "enableAbove": enable_above,
        "disableBelow": disable_below,
    }
    at = f"S(k={k_best}, B̂={b_hat:.1f})={s_best:.2f}"  # the guarded value: thresholds apply to it
    if not current.enabled:
        if s_best <= enable_above:
            return hold(Reason.STEADY, f"{at} ≤ {enable_above:.2f}: stay off", current), inputs
        target = ctx.enabled_config(predictor, k_best)
        walled = _walled(target, b_hat, obs, ctx, enabling=True)
        if walled:
            return hold(Reason.CAPACITY, f"{at}, but {walled}: stay off", current), inputs
        gain = relative_gain(1.0, predictor.config_speedup(target, b_hat))
        spread = predictor.tpot_ratio_std(SpecConfig.off(), target, b_hat)
        reason = f"{at} > {enable_above:.2f}"
        return Proposal(Action.ENABLE, Reason.GAIN, reason, target, gain=gain, spread=spread), inputs
    # The wall comes first: a loss too small to pay for a restart now would otherwise hold the fleet speculating
    # until it crosses the wall, and then for the whole peak, losing more the larger the batch.
    walled = _walled(current, b_hat, obs, ctx) if ctx.mode != SpeculationMode.ON else None
    if walled:
        reason = f"{walled}: off while a rollout can still land ({at})"
        return Proposal(Action.DISABLE, Reason.CAPACITY, reason, SpecConfig.off(), Kind.TROUGH), inputs
    if s_best < disable_below and ctx.mode != SpeculationMode.ON:
        # Priced against the bar the SRE set: the margin stands for the drafter's tax on memory and tails. Made
        # on the prediction, not its bound (see CONFIDENCE): a fleet that stays on while it loses slows down and
        # its batch grows, so the loss feeds itself; going off when it did not lose forfeits a bounded gain.
        gain = disable_below / s_current - 1
        reason = f"{at} < {disable_below:.2f}"
        return Proposal(Action.DISABLE, Reason.LOSS, reason, SpecConfig.off(), gain=gain), inputs
    recurring = recurring_peaks(now, state) if ctx.mode != SpeculationMode.ON else None
    if recurring and s_best > enable_above:
        reason = f"{recurring}: off while the load is low ({at})"
        return Proposal(Action.DISABLE, Reason.RECURRING_PEAKS, reason, SpecConfig.off(), Kind.TROUGH), inputs
    return _retune(state, obs, ctx, k_best, at), inputs


def _walled(
    speculating: SpecConfig, b_hat: float, obs: Observation, ctx: Context, *, enabling: bool = False
) -> str | None:
    """Why speculating now would leave the fleet stuck speculating, or None. Without a surge pod no restart
    lands past the capacity wall (`Predictor.capacity_wall`): a fleet that crosses it speculating stays so
    until the load falls back, at loads at least the wall's, and speculation gains less the larger the batch.
    So where the load may reach the wall within the expected dwell (`reach`), speculating is judged at the wall,
    against the bar it is turned on by: below it, off now, while a rollout can still land (a TROUGH change);
    an off fleet turns it on only where the fit's bound there clears the bar (see CONFIDENCE)."""
    if ctx.surge or obs.reach is None:
        return None
    replicas = max(ctx.fleet.replicas, 1)
    wall = obs.predictor.capacity_wall(speculating, replicas)
    # Turning speculation on near the wall waits for a trough of it, as peaks do (TROUGH_FRACTION): the load's
    # noise, and the batch a rollout without a surge pod leaves on the pods in service, would soon reach it.
    if enabling and b_hat > TROUGH_FRACTION * wall:
        return (
            f"B̂ is above {TROUGH_FRACTION:.0%} of B={wall:.0f} per replica, past which {replicas - 1} of "
            f"{replicas} could not carry the load while one restarts"
        )
    if not b_hat < wall <= obs.reach:
        return None
    s_wall = obs.predictor.config_speedup(speculating, wall)
    judged, bound = s_wall, ""
    if enabling:
        # Turning speculation on towards the wall is made only on confidence: S there CONFIDENCE deviations down
        # must still clear the bar. Turning it off goes on the prediction, as a loss does (`_advise`).
        judged = s_wall * (1 - CONFIDENCE * obs.predictor.tpot_ratio_std(SpecConfig.off(), speculating, wall))
        bound = f" (at least {judged:.2f})"
    if judged >= 1 + ctx.policy.enable_margin:
        return None
    return (
        f"the load may reach B={wall:.0f} per replica within {ctx.policy.expected_dwell_seconds:.0f} s "
        f"(up to {obs.reach:.0f}), past which {replicas - 1} of {replicas} could not carry it while one restarts, "
        f"and S there is {s_wall:.2f}{bound}"
    )


def _retune(state: PolicyState, obs: Observation, ctx: Context, k_best: int, at: str) -> Proposal:
    """Keep speculating, with a re-rendered table (on acceptance drift) or a better fixed k."""
    current, predictor = state.current, obs.predictor
    assert obs.forecast is not None
    if ctx.table_supported:
        target = ctx.enabled_config(predictor, k_best, incumbent=current)
        if current.schedule is not None and not drifted(state.table_curve, predictor.curve):
            return _refit_table(current, target, obs, ctx, at)
        # A new table costs a restart only when the pods run none yet; live, it may as well be right at loads
        # the forecast does not reach yet, since the engine picks the row of its running batch every step.
        live = is_live(current, target, ctx.live_tables)
        top = BATCH_GRID[-1] if live else max(2 * obs.forecast, 1.0)
        gains: dict[float, float] = {
            b: relative_gain(predictor.config_speedup(current, b), predictor.config_speedup(target, b))
            for b in BATCH_GRID
            if b <= top
        }
        batch = max(gains, key=gains.__getitem__)
        gain = gains[batch]
        action, code, reason = Action.SET_SCHEDULE, Reason.DRIFT, f"acceptance drifted; {at}"
    else:
        target = SpecConfig(enabled=True, k=k_best)
        batch = obs.forecast
        gain = relative_gain(predictor.config_speedup(current, batch), predictor.speedup(k_best, batch))
        action, code, reason = Action.SET_K, Reason.GAIN, f"{at} vs {current.describe()}"
    if target == current:
        return hold(Reason.STEADY, f"{at}: {current.describe()} is best", current)
    spread = predictor.tpot_ratio_std(current, target, batch)
    return Proposal(action, code, reason, target, gain=gain, spread=spread)


def _refit_table(current: SpecConfig, target: SpecConfig, obs: Observation, ctx: Context, at: str) -> Proposal:
    """Acceptance has not moved, but the cost fit may have since the table was rendered (past the knee it
    learns what verification really costs). A table rendered from the fit replaces the running one live, and
    only for a gain at the load running now: priced there alone, a change at loads never seen cannot flap."""
    assert obs.forecast is not None
    if target == current or not is_live(current, target, ctx.live_tables):
        return hold(Reason.STEADY, f"{at}: table current", current)
    b = obs.forecast
    gain = relative_gain(obs.predictor.config_speedup(current, b), obs.predictor.config_speedup(target, b))
    if gain < LIVE_MIN_GAIN:
        return hold(Reason.STEADY, f"{at}: table current ({gain:+.1%} for the table the fit renders)", current)
    spread = obs.predictor.tpot_ratio_std(current, target, b)
    return Proposal(Action.SET_SCHEDULE, Reason.GAIN, f"the cost fit moved; {at}", target, gain=gain, spread=spread)


def _commit(
    now: float, proposal: Proposal, state: PolicyState, obs: Observation, ctx: Context, inputs: Inputs
) -> Decision:
    applied = ctx.mode != SpeculationMode.RECOMMEND
    if proposal.action == Action.HOLD:
        return Decision(
            proposal.action, proposal.code, proposal.reason, state.current, applied, inputs, state, proposal.wants
        )
    if applied and proposal.live:
        # Nothing restarts: no restart counted, no cooldown started, nothing to verify.
        state = replace(state, current=proposal.target, pending=None, table_curve=obs.predictor.curve)
    elif applied:
        # A rollback returns to a configuration already known good: nothing to verify.
        rollback = proposal.action == Action.ROLLBACK
        verification = None if rollback else Verification(now, obs.predictor.curve, state.calibration)
        state = state.after_change(now, proposal.target, verification)
        state = replace(state, table_curve=obs.predictor.curve if proposal.target.schedule else None)
    return Decision(
        proposal.action, proposal.code, proposal.reason, proposal.target, applied, inputs, state, live=proposal.live
    )
