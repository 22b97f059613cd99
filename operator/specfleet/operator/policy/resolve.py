"""The effective policy: inline spec.policy over the referenced SpeculationPolicy over the defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from specfleet.operator.api.policy_types import Fallback, PolicySpec
from specfleet.operator.policy import defaults as d


@dataclass(frozen=True)
class ResolvedPolicy:
    """Every policy field with a concrete value (field names match `PolicySpec`)."""

    interval_seconds: int = d.INTERVAL_SECONDS
    window_seconds: int = d.WINDOW_SECONDS
    enable_margin: float = d.ENABLE_MARGIN
    disable_margin: float = d.DISABLE_MARGIN
    dwell_seconds: int = d.DWELL_SECONDS
    cooldown_seconds: int = d.COOLDOWN_SECONDS
    max_restarts_per_hour: int = d.MAX_RESTARTS_PER_HOUR
    restart_cost_seconds: float = d.RESTART_COST_SECONDS
    expected_dwell_seconds: float = d.EXPECTED_DWELL_SECONDS
    fallback: Fallback = d.FALLBACK
    metrics_missing_intervals: int = d.METRICS_MISSING_INTERVALS
    collapse_acceptance_length: float = d.COLLAPSE_ACCEPTANCE_LENGTH
    min_k: int = d.MIN_K
    max_k: int = d.DEFAULT_START_K
    min_samples: int = d.MIN_SAMPLES
    min_pods: int = d.MIN_PODS
    verification_windows: int = d.VERIFICATION_WINDOWS
    rollback_tolerance: float = d.ROLLBACK_TOLERANCE
    ready_deadline_seconds: int = d.READY_DEADLINE_SECONDS
    schedule: bool = d.SCHEDULE

    def clamp_k(self, k: int) -> int:
        """k brought inside the policy's bounds."""
        return max(self.min_k, min(self.max_k, k))


def resolve_policy(referenced: PolicySpec | None, inline: PolicySpec | None, max_k: int) -> ResolvedPolicy:
    """Field by field: inline if set, else the referenced policy's value, else the documented default.

    `max_k` is the deployment's ceiling (maxSpeculativeTokens): a policy may lower it, not raise it.
    Bounds that the two sources only violate together (min_k > max_k, enable <= disable margin) are repaired
    towards safety: min_k is capped at max_k, and the disable margin is kept below the enable margin.
    """
    values: dict[str, Any] = {}
    for field in fields(ResolvedPolicy):
        for source in (inline, referenced):
            value = getattr(source, field.name, None) if source is not None else None
            if value is not None:
                values[field.name] = value
                break
    values["max_k"] = min(values.get("max_k", max_k), max_k)
    values["min_k"] = min(values.get("min_k", d.MIN_K), values["max_k"])
    if "fallback" in values:
        values["fallback"] = Fallback(values["fallback"])
    enable = values.get("enable_margin", d.ENABLE_MARGIN)
    if values.get("disable_margin", d.DISABLE_MARGIN) >= enable:
        # Mixed sources may meet the CEL rule separately and break it together; keep hysteresis.
        values["disable_margin"] = enable - d.HYSTERESIS_GAP
    return ResolvedPolicy(**values)
