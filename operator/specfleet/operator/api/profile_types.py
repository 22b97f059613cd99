"""API types of the SpeculationProfile resource: a measured sweep of one fleet's model and draft on its prompts.

The point and crossover models are those of `specfleet profile`'s report (`specfleet.profile.report` uses
them), so what the profiling Job measures lands in the resource's status unchanged.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from specfleet.operator.api.base import ApiModel
from specfleet.operator.api.types import Condition
from specfleet.runtime.engine_flags import MAX_K

Metric = Literal["throughput", "tpot"]
# within: speculation stops winning inside the sweep; belowSweep: it never wins; aboveSweep: it always wins.
Bound = Literal["within", "belowSweep", "aboveSweep"]

# The sweep's size is bounded so that its result fits a container's termination message (see profile_result.py).
MAX_CONCURRENCIES = 6
MAX_K_VALUES = 4
CONFIG_MAP_KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"
Concurrency = Annotated[int, Field(ge=1, le=1024)]
DraftK = Annotated[int, Field(ge=1, le=MAX_K)]


class Summary(ApiModel):
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None


class SpecCounts(ApiModel):
    """The engine's speculative-decoding counters, increase over exactly the point's interval."""

    drafts: float
    draft_tokens: float
    accepted: float
    accepted_by_position: list[float] = []


class ProfilePoint(ApiModel):
    """One measured (k, concurrency) point."""

    k: int
    concurrency: int
    requests: int
    output_tokens: int
    duration_seconds: float
    throughput_tokens_per_second: float
    requests_per_second: float
    tpot_seconds: Summary
    ttft_seconds: Summary
    acceptance_length: float | None = None  # 1 + accepted / drafts: tokens per request per step
    acceptance_by_position: list[float] | None = None  # accepted at position i / drafts
    counters: SpecCounts | None = None  # None: the engine exposes no speculation counters (k=0)
    # mean TPOT * L: one engine step (each step emits L tokens per request); what a step-cost fit consumes
    step_seconds: float | None = None


class Crossover(ApiModel):
    """Where speculation with k stops beating k=0 on `metric`, by linear interpolation in log(concurrency)."""

    k: int
    metric: Metric
    bound: Bound
    concurrency: float | None = None  # None with aboveSweep


class FleetRef(ApiModel):
    name: str = Field(description="Name of the SpecDecodeDeployment in this namespace.", min_length=1, max_length=63)


class ConfigMapKeyRef(ApiModel):
    """A key of a ConfigMap in the profile's own namespace (never another: a tenant reads only their own)."""

    name: str = Field(description="ConfigMap name.", min_length=1, max_length=253)
    key: str = Field(description="Key holding the JSONL of requests.", pattern=CONFIG_MAP_KEY_PATTERN, max_length=253)


class PromptsSpec(ApiModel):
    config_map_key_ref: ConfigMapKeyRef = Field(
        description="The requests to replay: OpenAI chat or completion request bodies, one JSON object a line."
    )


class SweepSpec(ApiModel):
    """The points to measure: every k (and k=0, the baseline) at every concurrency."""

    concurrencies: list[Concurrency] = Field(
        description="Concurrent requests per point, e.g. [1, 2, 4, 8].", min_length=1, max_length=MAX_CONCURRENCIES
    )
    k: list[DraftK] = Field(
        description="Draft tokens per step to measure, each at most the fleet's maxSpeculativeTokens; k=0 always is.",
        min_length=1,
        max_length=MAX_K_VALUES,
    )
    requests_per_point: int | None = Field(
        default=None, ge=1, le=10_000, description="Requests per point (default: max(8, 4 x concurrency))."
    )


class SamplingSpec(ApiModel):
    """Defaults for the replay; every other sampling parameter is each request's own."""

    max_tokens: int | None = Field(
        default=None, ge=1, le=32_768, description="Cap on every request's output tokens (default: the request's)."
    )


class ReprofileSpec(ApiModel):
    """When the operator runs the sweep again by itself: the fleet's live acceptance has left the profile's."""

    on_drift: bool = Field(default=True, description="Re-profile when acceptance drifts persistently.")
    tolerance: float = Field(
        default=0.2,
        ge=0.01,
        le=1.0,
        description="Relative gap between the live and the profiled acceptance length that counts as drift.",
    )
    after_seconds: int = Field(
        default=3600,
        ge=60,
        le=7 * 86_400,
        description="How long the gap must last, without a break, before the sweep runs again.",
    )


class SpeculationProfileSpec(ApiModel):
    """What to profile: a fleet's model and draft, on these prompts, over this sweep."""

    fleet_ref: FleetRef = Field(description="The fleet whose model, draft and runtime the profiling pod runs.")
    prompts: PromptsSpec = Field(description="Where the requests to replay come from.")
    sweep: SweepSpec = Field(description="Concurrencies and k values to measure.")
    sampling: SamplingSpec = Field(default_factory=SamplingSpec, description="Sampling defaults of the replay.")
    active_deadline_seconds: int = Field(
        default=3600, ge=60, le=86_400, description="How long the profiling Job may run before it counts as failed."
    )
    reprofile: ReprofileSpec = Field(
        default_factory=ReprofileSpec, description="Running the sweep again when live acceptance drifts from it."
    )


class ProfilePhase(StrEnum):
    PENDING = "Pending"  # waiting for the fleet or the prompts
    STARTING = "Starting"  # the profiling engine pod loads the model
    RUNNING = "Running"  # the Job sweeps
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


class FittedParameter(ApiModel):
    name: str = Field(description="Step-cost parameter (seconds per unit of its feature).")
    mean: float = Field(description="Posterior mean.")
    std: float = Field(description="Posterior standard deviation.")


class StepCostFit(ApiModel):
    """The step-cost model fitted to the measured points: the fleet's policy starts from it (its prior)."""

    parameters: list[FittedParameter] = Field(description="Parameters in the cost model's order.")
    observations: int = Field(ge=0, description="Points the fit used.")
    context_tokens: float = Field(description="Mean context per running sequence the fit assumed.")


class AcceptanceDrift(ApiModel):
    """A gap between the live and the profiled acceptance length, and since when it has lasted."""

    since: str = Field(description="When the gap first exceeded the tolerance, without a break since.")
    positions: int = Field(ge=1, description="Draft positions compared.")
    profiled_acceptance_length: float = Field(description="Acceptance length over those positions, profiled.")
    live_acceptance_length: float = Field(description="Acceptance length over those positions, live.")


class SpeculationProfileStatus(ApiModel):
    """The sweep's progress and, once it succeeded, its result."""

    model_config = ConfigDict(extra="ignore")

    observed_generation: int | None = Field(default=None, description="Generation last reconciled.")
    phase: ProfilePhase | None = Field(default=None, description="Pending, Starting, Running, Succeeded, Failed.")
    message: str | None = Field(default=None, description="What it waits for, or why it failed.")
    job: str | None = Field(default=None, description="The profiling Job of this generation.")
    runs: int = Field(default=0, ge=0, description="Sweeps of this generation run again on drift.")
    drift: AcceptanceDrift | None = Field(
        default=None, description="The fleet's live acceptance outside the tolerance of the profile's, if it is."
    )
    started_at: str | None = Field(default=None, description="When this generation's sweep was started.")
    completed_at: str | None = Field(default=None, description="When the result was read.")
    profiled_generation: int | None = Field(default=None, description="Generation the result was measured for.")
    model: str | None = Field(default=None, description="The model measured.")
    method: str | None = Field(default=None, description="The draft method measured.")
    summary: str | None = Field(default=None, description="The throughput crossover per k, one line.")
    points: list[ProfilePoint] = Field(default_factory=list, description="Measured points, per (k, concurrency).")
    crossovers: list[Crossover] = Field(default_factory=list, description="Crossover concurrency per k and metric.")
    fit: StepCostFit | None = Field(default=None, description="The step-cost model fitted to the points.")
    conditions: list[Condition] = Field(default_factory=list, description="Completed condition.")
