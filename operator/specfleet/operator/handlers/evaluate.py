"""The slow control loop: signals → policy → action, for one fleet per timer tick."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from specfleet.operator.api.constants import ANNOTATION_PAUSED
from specfleet.operator.api.parse import InvalidSpecError, parse_resource
from specfleet.operator.api.policy_types import PolicySpec
from specfleet.operator.api.types import (
    Signals,
    SpecDecodeDeploymentSpec,
    SpecDecodeDeploymentStatus,
    SpeculationState,
)
from specfleet.operator.handlers.context import OperatorContext, now_iso
from specfleet.operator.handlers.converge import status_patch
from specfleet.operator.handlers.fleet import EventNote, SyncResult, hashed_speculation, sync_fleet
from specfleet.operator.handlers.policy_ref import PolicyNotFoundError, resolve
from specfleet.operator.handlers.profile import CompletedProfile, measured_for
from specfleet.operator.handlers.signals_hub import Watched
from specfleet.operator.kubeapi import sdd_ref
from specfleet.operator.policy.context import Context, Fleet, build_context, initial_state
from specfleet.operator.policy.decide import decide
from specfleet.operator.policy.defaults import INTERVAL_SECONDS
from specfleet.operator.policy.state import PolicyState
from specfleet.operator.signals.model import FleetTarget, PodEndpoint, Unavailable
from specfleet.operator.status.conditions import set_condition
from specfleet.operator.status.evaluation import fold_evaluation, to_spec_config
from specfleet.operator.status.fleet import DEGRADED, ready_on_current


def is_paused(body: dict[str, Any]) -> bool:
    return str(body["metadata"].get("annotations", {}).get(ANNOTATION_PAUSED, "")).lower() == "true"


def watched(
    namespace: str,
    name: str,
    spec: SpecDecodeDeploymentSpec,
    config_hash: str,
    pods: list[PodEndpoint],
    ctx: OperatorContext,
    window: float,
) -> Watched:
    return Watched(
        target=FleetTarget(namespace, name, config_hash, tuple(pods)),
        source=ctx.signals.source_of(namespace, spec.prometheus),
        window_seconds=window,
    )


async def evaluate(
    ctx: OperatorContext,
    body: dict[str, Any],
    pods: list[PodEndpoint],
    fleet: Callable[[], Sequence[Watched]],
    profiles: Sequence[CompletedProfile] = (),
) -> SyncResult | None:
    """One evaluation; None when there is nothing to evaluate yet (invalid spec, never reconciled).

    A completed SpeculationProfile of the model and draft the fleet runs is the cost model's prior."""
    meta = body["metadata"]
    namespace, name = meta.get("namespace", "default"), meta["name"]
    try:
        spec = parse_resource(body)
    except InvalidSpecError:
        return None
    previous = SpecDecodeDeploymentStatus.model_validate(body.get("status") or {})
    running = previous.speculation
    if running is None or running.config_hash is None:
        return None
    now = now_iso()
    if not _due(ctx, (namespace, name), spec.policy):
        return None
    try:
        policy = await resolve(ctx, namespace, spec)
    except PolicyNotFoundError as exc:
        return _policy_missing(previous, str(exc), meta.get("generation"), now)
    previous = _policy_found(previous, meta.get("generation"), now)
    ctx.intervals[(namespace, name)] = float(policy.interval_seconds)
    me = watched(namespace, name, spec, running.config_hash, pods, ctx, float(policy.window_seconds))
    signals = await ctx.signals.read(me, fleet)
    fleet_state = Fleet(spec.replicas, ready_on_current(previous), running.config_hash)
    context = build_context(spec, policy, fleet_state, paused=is_paused(body), measured=measured_for(spec, profiles))
    state = _state(previous, running, context)
    started = time.perf_counter()
    decision = decide(time.time(), signals if isinstance(signals, Signals) else None, state, context)
    ctx.evaluated_at[(namespace, name)] = time.monotonic()
    outcome = fold_evaluation(previous, signals, decision, str(spec.speculation.method), now, meta.get("generation"))
    notes = [EventNote(n.type, n.reason, n.message) for n in outcome.events]
    result = SyncResult(outcome.status, notes)
    if outcome.apply is not None:
        ahead, version = await _record_intent(ctx, body, spec, outcome.status, outcome.apply, now)
        applied = await sync_fleet(ctx, {**body, "status": ahead.to_api()}, state=outcome.apply)
        result = SyncResult(applied.status, notes + applied.events, resource_version=version)
    ctx.metrics.record(
        namespace, name, decision, result.status.speculation or running, not isinstance(signals, Unavailable)
    )
    ctx.metrics.evaluation_seconds.observe(time.perf_counter() - started)
    return result


async def _record_intent(
    ctx: OperatorContext,
    body: dict[str, Any],
    spec: SpecDecodeDeploymentSpec,
    status: SpecDecodeDeploymentStatus,
    target: SpeculationState,
    now: str,
) -> tuple[SpecDecodeDeploymentStatus, str]:
    """Persist the decision and the configuration it asks for before any pod changes (a write-ahead).

    Killed after this, a restarted operator resumes towards the new configuration; killed before, the
    decision never happened. Without it a kill between the rollout and Kopf's status patch left the old
    configuration in status, and the restart rolled the fleet back, then the policy rolled it forward again.
    """
    ahead = status.model_copy(update={"speculation": hashed_speculation(spec, target, now)})
    meta = body["metadata"]
    guarded = {
        "metadata": {"resourceVersion": meta["resourceVersion"]},
        "status": status_patch(body.get("status"), ahead),
    }
    written = await ctx.api.patch(sdd_ref(meta.get("namespace", "default"), meta["name"]), guarded, "status")
    return ahead, str(written["metadata"]["resourceVersion"])


def _due(ctx: OperatorContext, key: tuple[str, str], inline: PolicySpec | None) -> bool:
    """Time for this fleet's next evaluation (checked before any API read, so idle ticks cost nothing).

    The inline interval, else the default; a referenced policy's interval is applied once it is known.
    """
    now = time.monotonic()
    last = ctx.evaluated_at.get(key)
    interval = ctx.intervals.get(key) or (inline.interval_seconds if inline else None) or INTERVAL_SECONDS
    # Half a timer tick of slack, so a 30 s policy on a 30 s timer never skips every other tick.
    return last is None or now - last >= interval - ctx.config.interval_seconds / 2


def _state(previous: SpecDecodeDeploymentStatus, running: SpeculationState, context: Context) -> PolicyState:
    """The policy's memory, with `current` always what the pods run (a spec pin may have changed it)."""
    state = PolicyState.from_dict(previous.policy_state) if previous.policy_state else initial_state(context)
    current = to_spec_config(running)
    if state.current == current:
        return state
    fresh = not previous.policy_state
    return dataclasses.replace(state, current=current, last_good=current if fresh else state.last_good)


def _policy_found(previous: SpecDecodeDeploymentStatus, generation: int | None, now: str) -> SpecDecodeDeploymentStatus:
    if not any(c.type == DEGRADED and c.reason == "PolicyNotFound" for c in previous.conditions):
        return previous
    conditions = set_condition(previous.conditions, DEGRADED, False, "PolicyResolved", "policy found", now, generation)
    return previous.model_copy(update={"conditions": conditions})


def _policy_missing(previous: SpecDecodeDeploymentStatus, message: str, generation: int | None, now: str) -> SyncResult:
    already = any(c.type == DEGRADED and c.reason == "PolicyNotFound" for c in previous.conditions)
    conditions = set_condition(
        previous.conditions, DEGRADED, True, "PolicyNotFound", f"{message}; holding", now, generation
    )
    events = [] if already else [EventNote("Warning", "PolicyNotFound", f"{message}; no change until it exists")]
    return SyncResult(previous.model_copy(update={"conditions": conditions}), events)
