"""The status of a fleet from its spec, speculation state and Deployment. Pure."""

from __future__ import annotations

from typing import Any

from specfleet.operator.api.types import (
    SpecDecodeDeploymentSpec,
    SpecDecodeDeploymentStatus,
    SpeculationState,
)
from specfleet.operator.render.children import ENGINE_CONTAINER
from specfleet.operator.status.conditions import set_condition

READY = "Ready"
PROGRESSING = "Progressing"
SPECULATION_ACTIVE = "SpeculationActive"
METRICS_AVAILABLE = "MetricsAvailable"
DEGRADED = "Degraded"
INVALID_SPEC = "InvalidSpec"


def fleet_status(
    previous: SpecDecodeDeploymentStatus,
    spec: SpecDecodeDeploymentSpec,
    state: SpeculationState,
    deployment: dict[str, Any] | None,
    selector: str,
    generation: int | None,
    now: str,
) -> SpecDecodeDeploymentStatus:
    """Replica counts and conditions after a reconcile; decisions, signals and policy state are kept."""
    dep_status = (deployment or {}).get("status", {})
    replicas = int(dep_status.get("replicas", 0))
    ready = int(dep_status.get("readyReplicas", 0))
    updated = int(dep_status.get("updatedReplicas", 0))
    conditions = previous.conditions
    all_ready = ready >= spec.replicas and replicas <= spec.replicas
    conditions = set_condition(
        conditions,
        READY,
        all_ready,
        "AllReplicasReady" if all_ready else "ReplicasNotReady",
        f"{ready}/{spec.replicas} replicas ready",
        now,
        generation,
    )
    rolling = updated < spec.replicas or replicas > spec.replicas
    conditions = set_condition(
        conditions,
        PROGRESSING,
        rolling,
        "RollingOut" if rolling else "RolloutComplete",
        f"{updated}/{spec.replicas} replicas run the current configuration",
        now,
        generation,
    )
    conditions = set_condition(
        conditions,
        SPECULATION_ACTIVE,
        state.enabled,
        "SpeculationOn" if state.enabled else "SpeculationOff",
        _describe(state),
        now,
        generation,
    )
    degraded = next((c for c in conditions if c.type == DEGRADED), None)
    # Only clear what a reconcile can judge; other reasons (a missing policy) belong to the evaluation loop.
    if degraded is None or degraded.reason == INVALID_SPEC:
        conditions = set_condition(conditions, DEGRADED, False, "ValidSpec", "spec is valid", now, generation)
    if not any(c.type == METRICS_AVAILABLE for c in conditions):
        conditions = set_condition(
            conditions, METRICS_AVAILABLE, "Unknown", "AwaitingMetrics", "no evaluation yet", now, generation
        )
    return previous.model_copy(
        update={
            "observed_generation": generation,
            "replicas": replicas,
            "ready_replicas": ready,
            "updated_replicas": updated,
            "selector": selector,
            "runtime_image": _runtime_image(deployment) or previous.runtime_image,
            "mode": spec.speculation.mode,
            "speculation": state,
            "conditions": conditions,
        }
    )


def ready_on_current(status: SpecDecodeDeploymentStatus) -> int:
    """Pods Ready on the current configuration, from the Deployment's counts. readyReplicas includes the old
    pods a rollout keeps serving (a surge pod's predecessor, or the n-1 a one-at-a-time rollout leaves), and
    updatedReplicas includes new pods not yet Ready; the pods beyond the updated ones are old, so at most
    readyReplicas less those are new and Ready. Counting the old pods made a rollout look done the moment it
    began: its measured restart time read a few seconds, and the new pods' metrics were owed before any
    could serve."""
    old = max(status.replicas - status.updated_replicas, 0)
    return max(min(status.updated_replicas, status.ready_replicas - old), 0)


def _runtime_image(deployment: dict[str, Any] | None) -> str | None:
    """The engine image the Deployment runs: the spec's, or the operator's default where the spec names none."""
    containers = (deployment or {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []
    image = next((c.get("image") for c in containers if c.get("name") == ENGINE_CONTAINER), None)
    return str(image) if image else None


def invalid_status(
    previous: SpecDecodeDeploymentStatus, error: str, generation: int | None, now: str
) -> SpecDecodeDeploymentStatus:
    """An invalid spec: say exactly what is wrong and change nothing else."""
    conditions = set_condition(previous.conditions, READY, False, INVALID_SPEC, error, now, generation)
    conditions = set_condition(conditions, DEGRADED, True, INVALID_SPEC, error, now, generation)
    return previous.model_copy(update={"observed_generation": generation, "conditions": conditions})


def _describe(state: SpeculationState) -> str:
    if not state.enabled:
        return f"speculation off: {state.reason or 'no reason recorded'}"
    detail = f"{state.method} k={state.k}"
    if state.schedule:
        detail += " with batch-size table " + ", ".join(f"≤{row.max_batch_size}:{row.k}" for row in state.schedule)
    return f"{detail}: {state.reason or 'no reason recorded'}"
