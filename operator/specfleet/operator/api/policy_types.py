"""API types of the SpeculationPolicy resource: the rules SREs own, shared by many deployments."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from specfleet.runtime.engine_flags import MAX_K


class Fallback(StrEnum):
    HOLD = "Hold"
    OFF = "Off"


class PolicySpec(BaseModel):
    """Thresholds, windows and safety limits of the speculation policy.

    Every field is optional: an unset field inherits from the referenced SpeculationPolicy, then from the
    operator's documented defaults (see `specfleet.operator.policy.defaults`).
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_enum_values=True,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.enableMargin) || !has(self.disableMargin) "
                    "|| self.enableMargin > self.disableMargin",
                    "message": "enableMargin must be greater than disableMargin (hysteresis)",
                },
                {
                    "rule": "!has(self.minK) || !has(self.maxK) || self.minK <= self.maxK",
                    "message": "minK must not exceed maxK",
                },
            ]
        },
    )

    interval_seconds: int | None = Field(
        default=None, ge=5, le=3600, description="How often the policy is evaluated (default 30)."
    )
    window_seconds: int | None = Field(
        default=None, ge=10, le=86400, description="Rate window of the signals (default 120)."
    )
    enable_margin: float | None = Field(
        default=None,
        ge=0,
        le=2,
        description="Speculation turns on when predicted speed-up exceeds 1 + this (default 0.10).",
    )
    disable_margin: float | None = Field(
        default=None,
        ge=-0.5,
        le=2,
        description="Speculation turns off when predicted speed-up falls below 1 + this (default 0.02).",
    )
    dwell_seconds: int | None = Field(
        default=None,
        ge=0,
        le=86400,
        description="How long a condition must hold before acting (default 120).",
    )
    cooldown_seconds: int | None = Field(
        default=None, ge=0, le=86400, description="Minimum time between restart-bound changes (default 600)."
    )
    max_restarts_per_hour: int | None = Field(
        default=None, ge=0, le=60, description="Restart-bound changes allowed per rolling hour (default 2)."
    )
    restart_cost_seconds: float | None = Field(
        default=None,
        ge=0,
        le=3600,
        description="Time one pod takes to restart (seconds, default 90; the measured time is used when longer).",
    )
    expected_dwell_seconds: float | None = Field(
        default=None,
        ge=0,
        le=86400,
        description="How long a new configuration is expected to last (default 1800).",
    )
    fallback: Fallback | None = Field(
        default=None, description="What to do when metrics are unavailable: Hold (default) or Off."
    )
    metrics_missing_intervals: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description=(
            "Intervals without metrics, counted while a pod of the current configuration is Ready, before the"
            " fallback applies (default 3)."
        ),
    )
    collapse_acceptance_length: float | None = Field(
        default=None,
        ge=1,
        le=17,
        description=(
            "Acceptance length below which speculation is switched off at k ≥ 3 (default 1.3); below k=3 scaled"
            " to the k that ran: 1 + (value - 1)·k/3."
        ),
    )
    min_k: int | None = Field(default=None, ge=1, le=MAX_K, description="Smallest k the policy may choose (default 1).")
    max_k: int | None = Field(
        default=None,
        ge=1,
        le=MAX_K,
        description="Largest k the policy may choose (default: the deployment's max).",
    )
    min_samples: int | None = Field(
        default=None,
        ge=0,
        le=1_000_000,
        description="Verify rounds needed before acting on acceptance (default 50).",
    )
    min_pods: int | None = Field(
        default=None, ge=0, le=1000, description="Pods that must report before acting (default 1)."
    )
    verification_windows: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="Windows after a change in which TPOT must match the prediction (default 2).",
    )
    rollback_tolerance: float | None = Field(
        default=None,
        ge=0,
        le=10,
        description="Relative TPOT regression beyond the prediction that triggers rollback (default 0.15).",
    )
    ready_deadline_seconds: int | None = Field(
        default=None,
        ge=30,
        le=86400,
        description="Time new pods have to become Ready before rollback (default 900).",
    )
    schedule: bool | None = Field(
        default=None,
        description="Render vLLM's batch-size→k table where the topology allows it (default true).",
    )

    @model_validator(mode="after")
    def _check_cross_fields(self) -> PolicySpec:
        if (
            self.enable_margin is not None
            and self.disable_margin is not None
            and self.enable_margin <= self.disable_margin
        ):
            raise ValueError("enableMargin must be greater than disableMargin (hysteresis)")
        if self.min_k is not None and self.max_k is not None and self.min_k > self.max_k:
            raise ValueError("minK must not exceed maxK")
        return self


class SpeculationPolicySpec(PolicySpec):
    """Spec of a SpeculationPolicy resource."""
