"""Converge one SpecDecodeDeployment: render its children, apply them, and compute its status."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specfleet.operator.api.constants import MANAGER
from specfleet.operator.api.parse import InvalidSpecError, parse_resource
from specfleet.operator.api.types import SpecDecodeDeploymentSpec, SpecDecodeDeploymentStatus, SpeculationState
from specfleet.operator.handlers.children import Outcome, apply_child
from specfleet.operator.handlers.context import OperatorContext, now_iso
from specfleet.operator.handlers.policy_ref import PolicyNotFoundError, resolve
from specfleet.operator.render.applied import in_place
from specfleet.operator.render.children import render_children, render_control_secret
from specfleet.operator.render.engine import engine_config, initial_speculation, pinned_speculation
from specfleet.operator.render.labels import Owner, selector_string
from specfleet.operator.status.fleet import fleet_status, invalid_status
from specfleet.operator.status.starting import starting_speculation

log = logging.getLogger(__name__)


@dataclass
class EventNote:
    """A Kubernetes Event to post about the resource."""

    type: str
    reason: str
    message: str


@dataclass
class SyncResult:
    status: SpecDecodeDeploymentStatus
    events: list[EventNote] = field(default_factory=list)
    # The object's resourceVersion the status was computed on, when the step itself wrote to it.
    resource_version: str | None = None


def owner_of(body: dict[str, Any]) -> Owner:
    meta = body["metadata"]
    return Owner(name=meta["name"], namespace=meta.get("namespace", "default"), uid=meta["uid"])


async def sync_fleet(
    ctx: OperatorContext,
    body: dict[str, Any],
    state: SpeculationState | None = None,
    restart_from_spec: bool = False,
) -> SyncResult:
    """Render and apply the children for `state` (default: the state in status, with the spec's pins)."""
    meta = body["metadata"]
    previous = SpecDecodeDeploymentStatus.model_validate(body.get("status") or {})
    generation = meta.get("generation")
    now = now_iso()
    try:
        spec = parse_resource(body)
    except InvalidSpecError as exc:
        message = str(exc)
        already_reported = any(c.reason == "InvalidSpec" and c.message == message for c in previous.conditions)
        warnings = [] if already_reported else [EventNote("Warning", "InvalidSpec", message)]
        return SyncResult(invalid_status(previous, message, generation, now), warnings)
    owner = owner_of(body)
    current = state or (None if restart_from_spec else previous.speculation)
    if current is None:
        current = await _starting(ctx, owner.namespace, spec, now)
    pinned = hashed_speculation(spec, current, now)
    config_hash = str(pinned.config_hash)
    events: list[EventNote] = []
    deployment: dict[str, Any] | None = None
    # The control Secret first: the pods mount its token, the operator authenticates its live tables with it.
    # Applied without reading it back (the operator reads no Secret of a fleet's namespace): the token is
    # derived, the same at every apply.
    await ctx.api.apply(render_control_secret(owner, await ctx.live.token(ctx.api, owner)), MANAGER, force=True)
    for child in render_children(owner, spec, pinned, ctx.config.runtime_image):
        outcome, stored = await apply_child(ctx.api, child)
        if child["kind"] == "Deployment":
            deployment = stored
        if outcome != Outcome.UNCHANGED:
            events.append(EventNote("Normal", outcome.value, _child_message(outcome, child, config_hash)))
    status = fleet_status(previous, spec, pinned, deployment, selector_string(owner), generation, now)
    return SyncResult(status, events)


async def _starting(ctx: OperatorContext, namespace: str, spec: SpecDecodeDeploymentSpec, now: str) -> SpeculationState:
    """The configuration new pods start with: the policy's table where it runs one (see `starting_speculation`).
    A policy not found yet starts the spec's; the evaluation reports it."""
    try:
        policy = await resolve(ctx, namespace, spec)
    except PolicyNotFoundError:
        policy = None
    return starting_speculation(spec, policy, now)


def hashed_speculation(spec: SpecDecodeDeploymentSpec, state: SpeculationState, now: str) -> SpeculationState:
    """`state` with the spec's pins applied and the hash of the engine configuration it renders."""
    pinned = pinned_speculation(spec, state)
    config_hash = engine_config(spec, pinned).config_hash()
    if pinned.config_hash != config_hash:
        pinned = pinned.model_copy(update={"config_hash": config_hash, "since": now})
    return pinned


def drifted(
    body: dict[str, Any],
    found: Mapping[str, Sequence[dict[str, Any]]],
    runtime_image: str,
    kinds: Collection[str] | None = None,
) -> list[str]:
    """The children (of `kinds`, default all) that are missing from `found` (stored children by kind) or differ
    from what the fleet renders now (with the operator's `runtime_image`); none while a spec change is still to
    be handled, since its handler renders it (re-rendering the old spec here would roll back what that handler
    is about to apply)."""
    meta, status = body["metadata"], body.get("status") or {}
    if status.get("observedGeneration") != meta.get("generation") or not status.get("speculation"):
        return []
    try:
        spec = parse_resource(body)
    except InvalidSpecError:
        return []
    state = hashed_speculation(spec, SpeculationState.model_validate(status["speculation"]), now_iso())
    names = []
    for child in render_children(owner_of(body), spec, state, runtime_image):
        if kinds is not None and child["kind"] not in kinds:
            continue
        name = child["metadata"]["name"]
        stored = next((c for c in found.get(child["kind"], ()) if c["metadata"]["name"] == name), None)
        if stored is None or not in_place(child, stored, MANAGER):
            names.append(f"{child['kind']} {name}")
    return names


def replica_status(body: dict[str, Any], deployment: dict[str, Any]) -> SyncResult:
    """The owner's status with the Deployment's replica counts, its configuration untouched."""
    previous = SpecDecodeDeploymentStatus.model_validate(body.get("status") or {})
    try:
        spec = parse_resource(body)
    except InvalidSpecError:
        return SyncResult(previous)
    state = previous.speculation or initial_speculation(spec)
    owner = owner_of(body)
    generation = previous.observed_generation
    return SyncResult(fleet_status(previous, spec, state, deployment, selector_string(owner), generation, now_iso()))


def _child_message(outcome: Outcome, child: dict[str, Any], config_hash: str) -> str:
    text = f"{outcome.value.lower()} {child['kind']} {child['metadata']['name']}"
    if child["kind"] == "Deployment":
        text += f" (config {config_hash})"
    return text
