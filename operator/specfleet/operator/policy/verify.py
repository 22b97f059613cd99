"""Verification after a restart-bound change: pods Ready in time, and TPOT as predicted."""

from __future__ import annotations

from dataclasses import replace

from specfleet.operator.api.types import SpeculationMode
from specfleet.operator.policy.context import Context
from specfleet.operator.policy.decision import Action, Reason
from specfleet.operator.policy.observe import Observation
from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.proposal import Kind, Proposal
from specfleet.operator.policy.state import PolicyState, SpecConfig, Verification


def verify(now: float, state: PolicyState, obs: Observation, ctx: Context) -> tuple[PolicyState, Proposal | None]:
    """Advance the verification of the last change; a rollback proposal if the change failed it."""
    v = state.verification
    assert v is not None
    policy = ctx.policy
    ready_at = v.ready_at if v.ready_at is not None else (now if ctx.fleet.ready else None)
    v = _track_progress(now, v, obs, ctx)
    overdue = now - v.since > policy.ready_deadline_seconds
    if ready_at is None:
        # A rolling change of many replicas may take longer than the deadline: it is only late when no new
        # pod has become Ready for a whole deadline (a crash-looping config stalls at its first pod).
        stalled = now - (v.progress_at or v.since) > policy.ready_deadline_seconds
        if stalled:
            fleet = ctx.fleet
            ready = f"{fleet.ready_replicas}/{fleet.replicas}"
            why = f"pods not Ready within {policy.ready_deadline_seconds} s ({ready} ready)"
            return _rollback(state, ctx, Reason.ROLLBACK_UNREADY, why)
        return replace(state, verification=v), None
    if v.ready_at is None:
        # The rollout just completed: its pace prices the next switch.
        state = replace(state, restart_seconds=(ready_at - v.since) / max(ctx.fleet.replicas, 1))
    v = _count_window(now, replace(v, ready_at=ready_at), state.current, obs, ctx)
    if len(v.ratios) >= policy.verification_windows:
        mean = sum(v.ratios) / len(v.ratios)
        if mean > 1 + policy.rollback_tolerance:
            why = f"TPOT {mean - 1:.0%} above prediction over {len(v.ratios)} windows"
            return _rollback(state, ctx, Reason.ROLLBACK_TPOT, why)
        return _verified(state), None
    if overdue:
        return _verified(state), None  # Ready, but too little traffic to compare TPOT: accept.
    return replace(state, verification=v), None


def _track_progress(now: float, v: Verification, obs: Observation, ctx: Context) -> Verification:
    """Progress is a new pod Ready, or a new pod reporting metrics under the new configuration: a rolling
    restart behind a Ready count that includes the old pods (maxUnavailable 1: n-1 Ready throughout) still
    shows up, pod by pod, in the signals of the new configuration hash."""
    reporting = obs.pods if obs.batch is not None and obs.fresh else 0
    if ctx.fleet.ready_replicas > v.progress_ready or reporting > v.progress_pods:
        ready = max(ctx.fleet.ready_replicas, v.progress_ready)
        return replace(v, progress_ready=ready, progress_pods=max(reporting, v.progress_pods), progress_at=now)
    return v


def _count_window(now: float, v: Verification, current: SpecConfig, obs: Observation, ctx: Context) -> Verification:
    """Add a TPOT ratio once a whole window has passed under the new config since the last one counted."""
    start = v.last_window_at if v.last_window_at is not None else v.ready_at
    assert start is not None
    if obs.tpot is None or obs.batch is None or now - start < ctx.policy.window_seconds:
        return v
    # The prediction the change was made on (its curve and calibration), at the load actually seen.
    predicted = Predictor(obs.predictor.cost, v.curve, v.calibration).tpot(current, obs.batch)
    return replace(v, last_window_at=now, ratios=(*v.ratios, obs.tpot / predicted))


def _verified(state: PolicyState) -> PolicyState:
    return replace(state, last_good=state.current, verification=None)


def _allowed(config: SpecConfig, mode: SpeculationMode) -> bool:
    return not (mode == SpeculationMode.ON and not config.enabled) and not (
        mode == SpeculationMode.OFF and config.enabled
    )


def _rollback(state: PolicyState, ctx: Context, code: Reason, why: str) -> tuple[PolicyState, Proposal]:
    target = state.last_good
    if target == state.current or not _allowed(target, ctx.mode):
        reason = f"{why}; no other good configuration allowed in mode {ctx.mode}"
        return replace(state, verification=None), Proposal(
            Action.HOLD, Reason.NO_ROLLBACK_TARGET, reason, state.current, Kind.SAFETY
        )
    reason = f"{why}: back to {target.describe()}"
    return state, Proposal(Action.ROLLBACK, code, reason, target, Kind.SAFETY)
