"""Stability and safety gates between a proposal and an action.

Unit of the switching-cost test: seconds of fleet-wide relative TPOT. A switch predicted to change the speed by
`gain` (relative) for the expected dwell earns gain * expected_dwell; it must pay off at the gain's lower bound,
CONFIDENCE standard deviations of the fit below (a change the fleet's evidence does not back yet waits for it; a
proposal without a spread, a disable for a loss, is judged on its gain); the rolling restart costs, for each
replica's restart time in turn, the TPOT rise it causes at the forecast load (see `_switch_cost`); without a
surge pod a change also waits while the replicas left in service could not carry the forecast load. The budget
counts every restart-bound change in the rolling hour, rollbacks included; a TUNE change also keeps one restart
in reserve for its own rollback. Peaks where speculation lost that recur faster than the fleet can follow
(`recurring_peaks`) hold turning speculation on, as one does while a repeat of it would cost more than speculating
earns (`peak_risk`), and a TROUGH change (off while the load is low, before the next one or before the capacity
wall, see `decide._walled`) passes only the capacity gate and the budget.

A live change (a new batch-size→k table pushed to the running pods, see `proposal.is_live`) costs about
nothing: no pod restarts and no capacity is lost. It passes only the evidence gate, waits for a restart-bound
change's verification, and needs a predicted gain of at least `LIVE_MIN_GAIN`; with the table's drift
threshold and the rows' own hysteresis (`schedule.render_schedule`), that keeps it from flapping. No dwell,
switching cost, cooldown or budget.
"""

from __future__ import annotations

import math
from dataclasses import replace

from specfleet.operator.policy.context import Context
from specfleet.operator.policy.decision import Action, Reason
from specfleet.operator.policy.observe import Observation
from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.proposal import Kind, Proposal, is_live
from specfleet.operator.policy.schedule import LIVE_MIN_GAIN
from specfleet.operator.policy.state import DAY_S, TROUGH_FRACTION, Pending, PolicyState, SpecConfig

# Requests waiting per replica (window mean) from which a fleet is taken to be queueing: not carrying its load.
SATURATED_QUEUE = 1.0
# Forced restarts to off at saturated peaks, within a day, from which the peaks count as recurring.
RECURRING_PEAKS = 2
# Standard deviations of the fit below its predicted gain that a restart-bound change must still pay off at
# (a disable for a loss at the load now goes on the prediction, see decide._advise).
CONFIDENCE = 1.0


def gate(
    now: float, proposal: Proposal, state: PolicyState, obs: Observation, ctx: Context
) -> tuple[Proposal, PolicyState]:
    """The proposal if every gate of its kind passes, else a hold that says which gate stopped it."""
    if proposal.action == Action.HOLD:
        return proposal, replace(state, pending=None)
    if is_live(state.current, proposal.target, ctx.live_tables):
        live = replace(proposal, reason=f"{proposal.reason} (live)", live=True, cost=0.0)
        return _live_gates(live, state, obs, ctx)
    proposal = replace(proposal, reason=f"{proposal.reason} (restart)")
    if proposal.kind == Kind.TROUGH:
        short = _short_of_capacity(proposal, state, obs, ctx)
        if short:
            return _blocked(proposal, Reason.CAPACITY, short), state
    if proposal.kind == Kind.TUNE:
        proposal, state = _tune_gates(now, proposal, state, obs, ctx)
        if proposal.action == Action.HOLD:
            return proposal, state
    used = len(state.restarts_in_hour(now))
    reserve = 1 if proposal.kind == Kind.TUNE and ctx.policy.max_restarts_per_hour >= 2 else 0
    if used + 1 + reserve > ctx.policy.max_restarts_per_hour:
        detail = f"restart budget spent ({used}/{ctx.policy.max_restarts_per_hour} in the last hour)"
        return _blocked(proposal, Reason.BUDGET, detail), state
    return proposal, state


def _live_gates(proposal: Proposal, state: PolicyState, obs: Observation, ctx: Context) -> tuple[Proposal, PolicyState]:
    if proposal.kind != Kind.TUNE:
        return proposal, state  # a live rollback: cheaper still than the restart it replaces
    blocked, state = _evidence_gates(proposal, state, obs, ctx)
    if blocked is not None:
        return blocked, state
    if proposal.gain < LIVE_MIN_GAIN:
        detail = f"gain {proposal.gain:.1%} < {LIVE_MIN_GAIN:.0%} (live-change hysteresis)"
        return _blocked(proposal, Reason.HYSTERESIS, detail), replace(state, pending=None)
    return proposal, replace(state, pending=None)


def _evidence_gates(
    proposal: Proposal, state: PolicyState, obs: Observation, ctx: Context
) -> tuple[Proposal | None, PolicyState]:
    """What every tuning change waits for, live or not: the last restart's verification and enough evidence."""
    if state.verification is not None:
        return _blocked(proposal, Reason.VERIFYING, "the last change is still being verified"), state
    thin = _thin_evidence(obs, state, ctx)
    if thin:
        return _blocked(proposal, Reason.THIN_EVIDENCE, thin), replace(state, pending=None)
    return None, state


def _tune_gates(
    now: float, proposal: Proposal, state: PolicyState, obs: Observation, ctx: Context
) -> tuple[Proposal, PolicyState]:
    """The proposal priced at its restart cost if every tuning gate passes, else the hold of the first that fails."""
    policy = ctx.policy
    blocked, state = _evidence_gates(proposal, state, obs, ctx)
    if blocked is not None:
        return blocked, state
    recurring = recurring_peaks(now, state) if proposal.action == Action.ENABLE else None
    if recurring:
        detail = f"{recurring}; speculation waits {_free_in(now, state) / 60:.0f} min more"
        return _blocked(proposal, Reason.RECURRING_PEAKS, detail), replace(state, pending=None)
    risk = peak_risk(now, proposal, state, obs, ctx) if proposal.action == Action.ENABLE else None
    if risk:
        return _blocked(proposal, Reason.PEAK_RISK, risk), replace(state, pending=None)
    pending = state.pending if state.pending and state.pending.action == proposal.action else None
    state = replace(state, pending=pending or Pending(str(proposal.action), now))
    assert state.pending is not None
    held = now - state.pending.since
    if held < policy.dwell_seconds:
        return _blocked(proposal, Reason.DWELL, f"held {held:.0f}/{policy.dwell_seconds} s"), state
    if _peak_loss(proposal) and obs.forecast is not None:
        loss = speculating_loss(obs.predictor, state.current, obs.forecast)
        state = state.with_peak(state.pending.since, now, obs.forecast, loss)
    short = _short_of_capacity(proposal, state, obs, ctx)
    if short:
        return _blocked(proposal, Reason.CAPACITY, short), state
    cost = _switch_cost(state, obs, ctx)
    earned = proposal.gain * policy.expected_dwell_seconds
    assured = proposal.assured_gain(CONFIDENCE) * policy.expected_dwell_seconds
    bound = f", at least {assured:.0f}" if proposal.spread else ""
    priced = f"gain {earned:.0f}{bound} s of TPOT"
    if cost > 0 and assured <= cost:
        detail = f"{priced} ≤ restart cost {cost:.0f} s"
        return _blocked(replace(proposal, cost=cost), Reason.SWITCHING_COST, detail), state
    proposal = replace(proposal, cost=cost, reason=f"{proposal.reason}; {priced} > restart cost {cost:.0f} s")
    if state.last_change_at is not None and now - state.last_change_at < policy.cooldown_seconds:
        since = now - state.last_change_at
        detail = f"{since:.0f}/{policy.cooldown_seconds} s since the last change"
        return _blocked(proposal, Reason.COOLDOWN, detail), state
    return proposal, state


def recurring_peaks(now: float, state: PolicyState) -> str | None:
    """What makes the load's peaks ones the fleet cannot follow, or None. A peak where speculation lost is
    one where a restart to off was wanted for longer than the dwell (made or held back for capacity): it lands,
    if at all, after the dwell and the whole rollout, well into the peak. Once that has happened twice in a day,
    the peaks recur faster than the fleet can follow them, and the little speculating earns between them (few
    requests arrive off-peak) does not pay for speculating into the next one: the fleet goes off while the load
    is low and stays off until the older of them is a day old. A surge pod keeps a rollout's capacity, not its
    delay, so it changes nothing here."""
    peaks = state.peaks_in_day(now)
    if len(peaks) < RECURRING_PEAKS:
        return None
    period = (peaks[-1] - peaks[0]) / (len(peaks) - 1)
    return f"{len(peaks)} peaks in the last day, about {period / 60:.0f} min apart, where speculation lost"


def peak_risk(now: float, proposal: Proposal, state: PolicyState, obs: Observation, ctx: Context) -> str | None:
    """Why turning speculation on risks more than it earns, should the last day's peak where speculation lost
    come back, or None. A load that has reached a peak may reach it again, and a fleet caught speculating there
    loses until a restart to off lands: the dwell and the whole rollout. How often peaks come is known from one
    only as one in the time since it began: the chance of a repeat within the expected dwell is taken as that
    rate times the dwell (at most 1), so a peak that does not come back weighs less as it ages. Both sides weigh
    the relative TPOT by the sequences it applies to (per replica), as a mean TPOT over requests does:
    speculating at a light load earns little, a peak's loss falls on many. A peak the fleet left as its loss
    began (a rise the forecast saw coming) costs next to nothing; one that stepped past the crossover at once
    costs dear."""
    peaks, peak, load = state.peaks_in_day(now), state.peak_load, obs.forecast
    if not peaks or peak is None or load is None:
        return None
    dwell = ctx.policy.expected_dwell_seconds
    repeat = min(1.0, dwell / max(now - peaks[-1], 1.0))
    # The fit's evidence from the peak fades as the fleet runs at light load: what it believed there then counts.
    loss = max(speculating_loss(obs.predictor, proposal.target, peak), state.peak_loss or 0.0)
    reaction = _reaction_seconds(state, ctx)
    risk = repeat * loss * peak * reaction
    earned = proposal.assured_gain(CONFIDENCE) * load * dwell
    if risk <= 0 or earned > risk:
        return None
    return (
        f"should the peak of B̂={peak:.0f} per replica come back ({repeat:.0%} likely within {dwell:.0f} s, one "
        f"in the {(now - peaks[-1]) / 60:.0f} min since it began), speculating there loses {loss:.0%} for the "
        f"{reaction:.0f} s a restart to off takes ({risk:.0f} sequence-seconds of TPOT), more than the "
        f"{max(earned, 0.0):.0f} it earns at B̂={load:.0f} over {dwell:.0f} s"
    )


def watch_peaks(now: float, state: PolicyState, obs: Observation, ctx: Context) -> PolicyState:
    """The state with what an off fleet learns about peaks it was not caught in. It keeps when the fit last
    said speculating would clear the bar to turn it on, and at what load; should the load then step up, to
    twice that (a trough to a peak: TROUGH_FRACTION) and where speculating would clear the bar to turn it off,
    in less time than a restart to off takes (`_reaction_seconds`), that peak is recorded as one where
    speculation lost: a fleet that had turned speculation on at the first load would have been caught
    speculating in it. A fleet held off by the peaks it saw learns of those that keep coming; a diurnal rise,
    which takes hours, records nothing, nor does a load's noise about the crossover or a rollout's readings."""
    b_hat, load = obs.landing_load, obs.forecast
    # A rollout's readings are no steady load: new pods start empty while the old drain.
    if state.current.enabled or state.verification is not None or b_hat is None or load is None:
        return state
    k_best = obs.predictor.best(b_hat, ctx.k_range)[0]
    s_best = obs.predictor.guarded(b_hat, ctx.k_range)
    if s_best > 1 + ctx.policy.enable_margin:
        return replace(state, enable_cleared_at=now, enable_cleared_load=load)
    cleared, before = state.enable_cleared_at, state.enable_cleared_load
    if s_best >= 1 + ctx.policy.disable_margin or cleared is None or before is None:
        return state
    if now - cleared > _reaction_seconds(state, ctx) or TROUGH_FRACTION * load < before:
        return state
    loss = speculating_loss(obs.predictor, ctx.enabled_config(obs.predictor, k_best), load)
    return state.with_peak(now, now, load, loss)


def speculating_loss(predictor: Predictor, config: SpecConfig, load: float) -> float:
    """The relative TPOT `config` loses against speculation off at `load` per replica (negative: it gains),
    off settled at its own batch for the same throughput (see `Predictor.carried_speedup`)."""
    return 1 / predictor.carried_speedup(config, load) - 1


def _free_in(now: float, state: PolicyState) -> float:
    return DAY_S - (now - state.peaks_in_day(now)[-RECURRING_PEAKS])


def _peak_loss(proposal: Proposal) -> bool:
    return proposal.action == Action.DISABLE and proposal.code == Reason.LOSS


def _queueing_now(proposal: Proposal, state: PolicyState, obs: Observation) -> bool:
    """Whether the fleet already queues as it runs, on every replica, while the change would serve more at a
    full KV cache: holding keeps a queue that grows for as long as the load lasts, and the change is the way
    out (a rollout lengthens the queue for its duration; the change then drains it)."""
    if obs.queued is None or obs.queued < SATURATED_QUEUE:
        return False
    limit = obs.predictor.batch_limit(obs.forecast or 1.0)
    return obs.predictor.tpot(proposal.target, limit) < obs.predictor.tpot(state.current, limit)


def _short_of_capacity(proposal: Proposal, state: PolicyState, obs: Observation, ctx: Context) -> str | None:
    """Why the replicas left in service could not carry the forecast load during a rollout without a surge
    pod, or None. Past the KV cache's limit the excess queues for the whole rollout and long after it: no
    gain in TPOT pays for that, so such a change waits for the load to fall."""
    replicas = max(ctx.fleet.replicas, 1)
    if ctx.surge or obs.forecast is None or _queueing_now(proposal, state, obs):
        return None
    if math.isfinite(obs.predictor.rollout_batch(state.current, obs.forecast, replicas)):
        return None
    limit = obs.predictor.batch_limit(obs.forecast)
    return (
        f"{replicas - 1} of {replicas} replicas cannot carry B̂={obs.forecast:.0f} while one restarts: each would "
        f"need more sequences than the {limit:.0f} its KV cache holds (spec.rollout.maxSurge 0)"
    )


def _switch_cost(state: PolicyState, obs: Observation, ctx: Context) -> float:
    """What a rolling restart costs, in seconds of the fleet's whole TPOT (relative change x duration), to be
    beaten by the gain's lower bound held for the expected dwell.

    Without a surge pod, the rollout — each replica out for its restart in turn — slows the others by the predicted
    `rollout_slowdown` at the forecast load, never less than the capacity share one pod carries (1/n); a restart is
    thus cheap off-peak and dear near saturation, where it is deferred. With a surge pod no capacity is lost: the
    rollout costs that share only (the restart's GPU time and risk). The restart time is the policy's, or the last
    rollout's measured time per pod when that was longer; a policy's zero turns the test off.
    """
    replicas = max(ctx.fleet.replicas, 1)
    load = obs.forecast if obs.forecast is not None else 1.0
    lost = 0.0 if ctx.surge else obs.predictor.rollout_slowdown(state.current, load, replicas)
    return _restart_seconds(state, ctx) * replicas * max(lost, 1.0 / replicas)


def _restart_seconds(state: PolicyState, ctx: Context) -> float:
    """One pod's restart: the policy's, or the last rollout's measured time per pod when that was longer; a
    policy's zero turns the restart's pricing off."""
    policy = ctx.policy
    return policy.restart_cost_seconds and max(policy.restart_cost_seconds, state.restart_seconds or 0.0)


def _reaction_seconds(state: PolicyState, ctx: Context) -> float:
    """How long a fleet caught speculating in a peak loses: the dwell, then every replica's restart to off."""
    return ctx.policy.dwell_seconds + max(ctx.fleet.replicas, 1) * _restart_seconds(state, ctx)


def _thin_evidence(obs: Observation, state: PolicyState, ctx: Context) -> str | None:
    if obs.pods < ctx.policy.min_pods:
        return f"{obs.pods} pods reporting < {ctx.policy.min_pods}"
    # Acceptance is only sampled while the engine drafts: a table at its k=0 row measures none, and needs
    # none to be judged (its cost is the drafter tax, not acceptance).
    drafting = state.current.k_at(obs.batch) > 0 if obs.batch is not None else state.current.enabled
    if drafting and obs.samples < ctx.policy.min_samples:
        return f"{obs.samples} acceptance samples < {ctx.policy.min_samples}"
    return None


def _blocked(proposal: Proposal, code: Reason, detail: str) -> Proposal:
    wants = f"{proposal.action} to {proposal.target.describe()}"
    reason = f"wants {wants} ({proposal.reason}); {detail}"
    return replace(proposal, action=Action.HOLD, code=code, reason=reason, wants=wants)
