"""Stability and safety gates between a proposal and an action.

Unit of the switching-cost test: replica-seconds of serving capacity. A switch predicted to change each
replica's throughput by `gain` (relative) for the expected dwell earns gain * expected_dwell * replicas; the
rolling restart costs restart_cost_seconds per replica. The budget counts every restart-bound change in the
rolling hour, rollbacks included; a TUNE change also keeps one restart in reserve for its own rollback.
"""

from __future__ import annotations

from dataclasses import replace

from specfleet.operator.policy.context import Context
from specfleet.operator.policy.decision import Action, Reason
from specfleet.operator.policy.observe import Observation
from specfleet.operator.policy.proposal import Kind, Proposal
from specfleet.operator.policy.state import Pending, PolicyState


def gate(
    now: float, proposal: Proposal, state: PolicyState, obs: Observation, ctx: Context
) -> tuple[Proposal, PolicyState]:
    """The proposal if every gate of its kind passes, else a hold that says which gate stopped it."""
    if proposal.action == Action.HOLD:
        return proposal, replace(state, pending=None)
    if proposal.kind == Kind.TUNE:
        blocked, state = _tune_gates(now, proposal, state, obs, ctx)
        if blocked is not None:
            return blocked, state
    used = len(state.restarts_in_hour(now))
    reserve = 1 if proposal.kind == Kind.TUNE and ctx.policy.max_restarts_per_hour >= 2 else 0
    if used + 1 + reserve > ctx.policy.max_restarts_per_hour:
        detail = f"restart budget spent ({used}/{ctx.policy.max_restarts_per_hour} in the last hour)"
        return _blocked(proposal, Reason.BUDGET, detail), state
    return proposal, state


def _tune_gates(
    now: float, proposal: Proposal, state: PolicyState, obs: Observation, ctx: Context
) -> tuple[Proposal | None, PolicyState]:
    policy = ctx.policy
    if state.verification is not None:
        return _blocked(proposal, Reason.VERIFYING, "the last change is still being verified"), state
    thin = _thin_evidence(obs, state, ctx)
    if thin:
        return _blocked(proposal, Reason.THIN_EVIDENCE, thin), replace(state, pending=None)
    pending = state.pending if state.pending and state.pending.action == proposal.action else None
    state = replace(state, pending=pending or Pending(str(proposal.action), now))
    assert state.pending is not None
    held = now - state.pending.since
    if held < policy.dwell_seconds:
        return _blocked(proposal, Reason.DWELL, f"held {held:.0f}/{policy.dwell_seconds} s"), state
    replicas = max(ctx.fleet.replicas, 0)
    earned = proposal.gain * policy.expected_dwell_seconds * replicas
    cost = policy.restart_cost_seconds * replicas
    if earned <= cost:
        detail = f"gain {earned:.0f} ≤ restart cost {cost:.0f} replica-seconds"
        return _blocked(proposal, Reason.SWITCHING_COST, detail), state
    if state.last_change_at is not None and now - state.last_change_at < policy.cooldown_seconds:
        since = now - state.last_change_at
        detail = f"{since:.0f}/{policy.cooldown_seconds} s since the last change"
        return _blocked(proposal, Reason.COOLDOWN, detail), state
    return None, state


def _thin_evidence(obs: Observation, state: PolicyState, ctx: Context) -> str | None:
    if obs.pods < ctx.policy.min_pods:
        return f"{obs.pods} pods reporting < {ctx.policy.min_pods}"
    if state.current.enabled and obs.samples < ctx.policy.min_samples:
        return f"{obs.samples} acceptance samples < {ctx.policy.min_samples}"
    return None


def _blocked(proposal: Proposal, code: Reason, detail: str) -> Proposal:
    reason = f"wants {proposal.action} to {proposal.target.describe()} ({proposal.reason}); {detail}"
    return Proposal(Action.HOLD, code, reason, proposal.target, proposal.kind, proposal.gain)
