"""SpeculationProfile: run the sweep as a Job against a dedicated engine pod, read its result into status.

Level-triggered, one step per tick: each tick reads the profile, its fleet, the prompts' ConfigMap, the
engine pod and the Job, and moves the phase on (Pending → Starting → Running → Succeeded or Failed). A new
generation (a spec change) starts over with a new Job. The result comes back through the Job pod's
termination message, which the operator validates (`decode_result`, then the fit's own bounds) before any of
it reaches the status: the Job has no API credentials, so nothing it runs can write to the cluster.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import kopf
from pydantic import ValidationError

from specfleet.operator.api.constants import API_VERSION, GROUP, PROFILE_KIND, PROFILE_PLURAL, VERSION
from specfleet.operator.api.parse import InvalidSpecError, describe_errors, parse_resource
from specfleet.operator.api.profile_result import ResultError, decode_result
from specfleet.operator.api.profile_types import (
    Crossover,
    ProfilePhase,
    SpeculationProfileSpec,
    SpeculationProfileStatus,
    StepCostFit,
)
from specfleet.operator.api.types import SpecDecodeDeploymentSpec, SpecDecodeDeploymentStatus, SpeculationState
from specfleet.operator.config import OperatorConfig
from specfleet.operator.handlers.children import apply_child
from specfleet.operator.handlers.context import OperatorContext, now_iso
from specfleet.operator.handlers.converge import status_patch
from specfleet.operator.handlers.fleet import owner_of
from specfleet.operator.handlers.pods import control_endpoint, serving_url
from specfleet.operator.kubeapi import Ref, sdd_ref
from specfleet.operator.policy.context import fleet_cost
from specfleet.operator.policy.costmodel import MeasuredPrior
from specfleet.operator.policy.profile_drift import acceptance_gap, recent, track_drift
from specfleet.operator.policy.profile_prior import fit_profile, measured_prior
from specfleet.operator.render.labels import Owner
from specfleet.operator.render.profile import (
    ProfileNotRunnableError,
    check_runnable,
    engine_name,
    engine_selector,
    job_name,
    render_engine,
    render_job,
)
from specfleet.operator.status.conditions import set_condition

log = logging.getLogger(__name__)
PROFILES = (GROUP, VERSION, PROFILE_PLURAL)
COMPLETED = "Completed"
JOB_NAME_LABEL = "job-name"  # set on a Job's pods by the Job controller
TERMINAL = (ProfilePhase.SUCCEEDED, ProfilePhase.FAILED)
UNFITTED = (
    "every step time is more than 5x off the roofline of the fleet's accelerator and sizeBillions, which reads as a "
    "measurement fault (as in the live fit); check those fields"
)


def profile_ref(namespace: str, name: str) -> Ref:
    return Ref(API_VERSION, PROFILE_KIND, namespace, name)


async def reconcile_profile(ctx: OperatorContext, body: dict[str, Any]) -> SpeculationProfileStatus:
    """One step of the profile's sweep; its status is written when it changed, and returned."""
    meta = body["metadata"]
    generation = int(meta.get("generation") or 1)
    owner = Owner(meta["name"], meta.get("namespace", "default"), meta["uid"], PROFILE_KIND)
    before = SpeculationProfileStatus.model_validate(body.get("status") or {})
    if before.observed_generation == generation and before.phase in TERMINAL:
        succeeded = before.phase == ProfilePhase.SUCCEEDED
        status = await _watch_drift(ctx, owner, body.get("spec"), before) if succeeded else before
    else:
        current = before if before.observed_generation == generation else fresh_status(before, generation)
        status = await _step(ctx, owner, body.get("spec"), generation, current)
    if status.phase in TERMINAL:
        await _stop_engine(ctx, owner)
    if status != before:
        patch = {"status": status_patch(body.get("status"), status)}
        await ctx.api.patch(profile_ref(owner.namespace, owner.name), patch, "status")
    return status


async def _stop_engine(ctx: OperatorContext, owner: Owner) -> None:
    """The engine holds GPUs: scaled to 0 as soon as the sweep has ended, whichever way (before the status
    says so, so a failed write only repeats this). It is deleted with its profile, by the garbage collector."""
    ref = Ref("apps/v1", "Deployment", owner.namespace, engine_name(owner.name))
    engine = await ctx.api.get(ref)
    if engine is not None and engine["spec"].get("replicas") != 0:
        await ctx.api.patch(ref, {"spec": {"replicas": 0}})


def fresh_status(before: SpeculationProfileStatus, generation: int) -> SpeculationProfileStatus:
    """A new generation's status: the last result stays (a fleet keeps its prior while re-profiling)."""
    return before.model_copy(
        update={
            "observed_generation": generation,
            "phase": None,
            "message": None,
            "job": None,
            "started_at": None,
            "runs": 0,
            "drift": None,
        }
    )


async def _watch_drift(
    ctx: OperatorContext, owner: Owner, raw_spec: Any, status: SpeculationProfileStatus
) -> SpeculationProfileStatus:
    """After a sweep: track the gap between the fleet's live acceptance and the profile's, and start the sweep
    again once it has lasted `reprofile.afterSeconds` without a break (`policy/profile_drift.py`)."""
    try:
        spec = SpeculationProfileSpec.model_validate(raw_spec or {})
    except ValidationError:
        return status
    if not spec.reprofile.on_drift:
        return status.model_copy(update={"drift": None})
    fleet, now = await ctx.api.get(sdd_ref(owner.namespace, spec.fleet_ref.name)), now_iso()
    live = _live_acceptance(fleet, status, now, ctx.config.interval_seconds)
    if live is None:
        return status  # no fresh evidence either way: the record holds
    gap = acceptance_gap(status.points, *live)
    step = track_drift(status.drift, gap, spec.reprofile, now)
    if not step.reprofile:
        return status.model_copy(update={"drift": step.drift})
    assert step.drift is not None
    why = (
        f"re-profiling: live acceptance length {step.drift.live_acceptance_length:.2f} against the profiled "
        f"{step.drift.profiled_acceptance_length:.2f} over {step.drift.positions} positions since {step.drift.since}"
    )
    log.info("SpeculationProfile %s/%s: %s", owner.namespace, owner.name, why)
    again = status.model_copy(update={"runs": status.runs + 1, "drift": None, "job": None, "started_at": None})
    return _phase(again, ProfilePhase.PENDING, why, status.observed_generation or 1)


def _live_acceptance(
    fleet: dict[str, Any] | None, status: SpeculationProfileStatus, now: str, interval_seconds: float
) -> tuple[list[float] | None, SpeculationState | None] | None:
    """The fleet's live per-position acceptance and running configuration, when they are fresh and of the
    model and draft the profile measured; None otherwise."""
    if fleet is None:
        return None
    try:
        fleet_spec = parse_resource(fleet)
        fleet_status = SpecDecodeDeploymentStatus.model_validate(fleet.get("status") or {})
    except (InvalidSpecError, ValidationError):
        return None
    if (fleet_spec.model.name, str(fleet_spec.speculation.method)) != (status.model, status.method):
        return None
    signals = fleet_status.signals
    if signals is None or not recent(signals.observed_at, now, max(3 * interval_seconds, 300.0)):
        return None
    return signals.acceptance_by_position, fleet_status.speculation


async def _step(
    ctx: OperatorContext, owner: Owner, raw_spec: Any, generation: int, status: SpeculationProfileStatus
) -> SpeculationProfileStatus:
    try:
        spec = SpeculationProfileSpec.model_validate(raw_spec or {})
    except ValidationError as exc:
        return _phase(status, ProfilePhase.FAILED, f"invalid spec: {describe_errors(exc, root='spec')}", generation)
    fleet = await ctx.api.get(sdd_ref(owner.namespace, spec.fleet_ref.name))
    if fleet is None:
        return _phase(status, ProfilePhase.PENDING, f"fleet {spec.fleet_ref.name} not found", generation)
    try:
        fleet_spec = parse_resource(fleet)
        check_runnable(spec, fleet_spec)
    except (InvalidSpecError, ProfileNotRunnableError) as exc:
        return _phase(status, ProfilePhase.FAILED, f"fleet {spec.fleet_ref.name}: {exc}", generation)
    missing = await _prompts_missing(ctx, owner.namespace, spec)
    if missing:
        return _phase(status, ProfilePhase.PENDING, missing, generation)
    await apply_child(ctx.api, render_engine(owner, owner_of(fleet), fleet_spec, ctx.config.runtime_image))
    job = await ctx.api.get(Ref("batch/v1", "Job", owner.namespace, job_name(owner.name, generation, status.runs)))
    if job is None:
        return await _start(ctx, owner, spec, fleet_spec, str(fleet["metadata"]["name"]), generation, status)
    return await _finish(ctx, owner, job, fleet_spec, generation, status)


async def _prompts_missing(ctx: OperatorContext, namespace: str, spec: SpeculationProfileSpec) -> str | None:
    """Why the prompts cannot be mounted yet; the ConfigMap is always the profile's own namespace's."""
    ref = spec.prompts.config_map_key_ref
    config_map = await ctx.api.get(Ref("v1", "ConfigMap", namespace, ref.name))
    if config_map is None:
        return f"ConfigMap {ref.name} not found"
    if ref.key not in (config_map.get("data") or {}):
        return f"ConfigMap {ref.name} has no key {ref.key}"
    return None


async def _start(
    ctx: OperatorContext,
    owner: Owner,
    spec: SpeculationProfileSpec,
    fleet_spec: SpecDecodeDeploymentSpec,
    fleet_name: str,
    generation: int,
    status: SpeculationProfileStatus,
) -> SpeculationProfileStatus:
    """The Job, once the engine pod is Ready (its address goes into the Job's arguments)."""
    selector = ",".join(f"{k}={v}" for k, v in sorted(engine_selector(owner).items()))
    pods = await ctx.api.list(Ref("v1", "Pod", owner.namespace), label_selector=selector)
    ready = [(pod, control_endpoint(pod), serving_url(pod)) for pod in pods]
    address = next(((control.base_url, url) for _, control, url in ready if control and url), None)
    if address is None:
        message = f"waiting for the profiling engine {engine_name(owner.name)} to be Ready (it loads the model)"
        return _phase(status, ProfilePhase.STARTING, message, generation)
    control_url, engine_url = address
    image = ctx.config.profiler_image
    job = render_job(owner, generation, spec, fleet_name, image, engine_url, control_url, status.runs)
    await apply_child(ctx.api, job)
    update = {"job": job["metadata"]["name"], "started_at": now_iso()}
    running = status.model_copy(update=update)
    return _phase(running, ProfilePhase.RUNNING, f"sweeping {engine_url} with {fleet_spec.model.name}", generation)


async def _finish(
    ctx: OperatorContext,
    owner: Owner,
    job: dict[str, Any],
    fleet_spec: SpecDecodeDeploymentSpec,
    generation: int,
    status: SpeculationProfileStatus,
) -> SpeculationProfileStatus:
    job_status = job.get("status") or {}
    status = status.model_copy(update={"job": job["metadata"]["name"]})
    if not job_status.get("succeeded") and not job_status.get("failed") and not _job_failed(job_status):
        return _phase(status, ProfilePhase.RUNNING, status.message or "sweeping", generation)
    message = await _termination_message(ctx, owner.namespace, job)
    if not job_status.get("succeeded"):
        return _phase(status, ProfilePhase.FAILED, f"the sweep failed: {_failure(message, job_status)}", generation)
    try:
        points, crossovers = decode_result(message or "")
    except ResultError as exc:
        return _phase(status, ProfilePhase.FAILED, f"the Job's result: {exc}", generation)
    fit = fit_profile(fleet_cost(fleet_spec), points)
    done = status.model_copy(
        update={
            "points": points,
            "crossovers": crossovers,
            "fit": fit,
            "summary": crossover_summary(crossovers),
            "profiled_generation": generation,
            "model": fleet_spec.model.name,
            "method": str(fleet_spec.speculation.method),
            "completed_at": now_iso(),
        }
    )
    measured = f"{len(points)} points; throughput crossovers: {done.summary or 'none'}"
    if fit is None:
        measured += f"; no point fitted: {UNFITTED}"
    return _phase(done, ProfilePhase.SUCCEEDED, measured, generation)


def _failure(message: str | None, job_status: dict[str, Any]) -> str:
    """The error `specfleet profile` logged (the message falls back to the log), or the Job's own reason."""
    if message:
        try:
            points, _ = decode_result(message)
        except ResultError:
            return message[-512:]
        return f"it stopped after {len(points)} points (see the Job's log)"
    return _job_failure(job_status) or "the Job failed"


def _job_failed(job_status: dict[str, Any]) -> bool:
    return any(c.get("type") == "Failed" and c.get("status") == "True" for c in job_status.get("conditions", []))


def _job_failure(job_status: dict[str, Any]) -> str | None:
    failed = (c for c in job_status.get("conditions", []) if c.get("type") == "Failed")
    return next((f"{c.get('reason', '')}: {c.get('message', '')}" for c in failed), None)


async def _termination_message(ctx: OperatorContext, namespace: str, job: dict[str, Any]) -> str | None:
    """The `profile` container's termination message, from a pod the Job itself owns (not a look-alike)."""
    uid = job["metadata"].get("uid")
    pods = await ctx.api.list(Ref("v1", "Pod", namespace), label_selector=f"{JOB_NAME_LABEL}={job['metadata']['name']}")
    for pod in pods:
        owners = pod["metadata"].get("ownerReferences") or []
        if not any(o.get("uid") == uid and o.get("controller") for o in owners):
            continue
        for container in (pod.get("status") or {}).get("containerStatuses", []):
            terminated = (container.get("state") or {}).get("terminated") or {}
            if container.get("name") == "profile" and terminated.get("message"):
                return str(terminated["message"])
    return None


def crossover_summary(crossovers: list[Crossover]) -> str:
    """`k=1: 6.3, k=3: 2.1`: the throughput crossover concurrency per k (`>` the sweep, `<` the sweep)."""
    parts = []
    for c in sorted((c for c in crossovers if c.metric == "throughput"), key=lambda c: c.k):
        if c.bound == "aboveSweep":
            parts.append(f"k={c.k}: above sweep")
        elif c.bound == "belowSweep":
            parts.append(f"k={c.k}: below sweep")
        else:
            parts.append(f"k={c.k}: {c.concurrency:.3g}")
    return ", ".join(parts)


def _phase(
    status: SpeculationProfileStatus, phase: ProfilePhase, message: str, generation: int
) -> SpeculationProfileStatus:
    done = phase in TERMINAL
    reason = phase.value if done else "InProgress"
    conditions = set_condition(status.conditions, COMPLETED, done, reason, message, now_iso(), generation)
    return status.model_copy(update={"phase": phase, "message": message, "conditions": conditions})


# ---------------------------------------------------------------- Kopf


def register_profiles(registry: kopf.OperatorRegistry, config: OperatorConfig) -> None:
    """The profile's timer (each tick one step of its sweep) and the index of completed fits by fleet."""
    kopf.timer(*PROFILES, interval=config.interval_seconds, backoff=config.interval_seconds, registry=registry)(
        on_profile_tick
    )
    kopf.index(*PROFILES, registry=registry)(fleet_profiles)


async def on_profile_tick(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    ctx: OperatorContext = memo.ctx
    meta = body["metadata"]
    fresh = await ctx.api.get(profile_ref(meta.get("namespace", "default"), meta["name"]))
    if fresh is None or fresh["metadata"].get("deletionTimestamp"):
        return
    runs = SpeculationProfileStatus.model_validate(fresh.get("status") or {}).runs
    status = await reconcile_profile(ctx, fresh)
    if status.runs > runs:
        kopf.event(fresh, type="Normal", reason="Reprofiling", message=status.message or "")


@dataclass(frozen=True)
class CompletedProfile:
    """A profile's fit, with what it measured: a fleet uses it only while it runs that model and draft."""

    model: str
    method: str
    completed_at: str
    fit: StepCostFit


def fleet_profiles(namespace: str, spec: kopf.Spec, status: kopf.Status, **_: Any) -> Any:
    """Each completed profile's fit, by the fleet it profiled."""
    fleet, fit = (spec.get("fleetRef") or {}).get("name"), status.get("fit")
    if not fleet or not fit or not status.get("model") or not status.get("method"):
        return None
    try:
        parsed = StepCostFit.model_validate(json.loads(json.dumps(dict(fit))))
    except ValidationError:
        return None
    found = CompletedProfile(str(status["model"]), str(status["method"]), str(status.get("completedAt") or ""), parsed)
    return {(namespace, str(fleet)): found}


def measured_for(spec: SpecDecodeDeploymentSpec, profiles: Iterable[CompletedProfile]) -> MeasuredPrior | None:
    """The newest completed profile of the model and draft method the fleet runs now, as its prior."""
    method = str(spec.speculation.method)
    matching = [p for p in profiles if p.model == spec.model.name and p.method == method]
    newest = max(matching, key=lambda p: p.completed_at, default=None)
    return measured_prior(newest.fit) if newest is not None else None
