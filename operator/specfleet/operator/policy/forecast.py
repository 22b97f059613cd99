"""Next-window concurrency per replica: damped Holt smoothing of the recent observations.

Under volatile load the forecast is raised to the window's p90: the costly mistake is speculating into a
surge (verification stops being free), so a noisy series is judged by its high end.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

LEVEL_RATE = 0.5
TREND_RATE = 0.3
DAMPING = 0.8
# Relative one-step error (sd / level) above which the series counts as volatile.
VOLATILE_CV = 0.25
P90_Z = 1.2816  # the standard normal's 90th percentile


@dataclass(frozen=True)
class Forecast:
    """Holt state: level, trend per interval, and the EW variance of one-step errors."""

    level: float | None = None
    trend: float = 0.0
    error_var: float = 0.0

    def observe(self, value: float) -> Forecast:
        if self.level is None:
            return Forecast(level=value)
        expected = self.level + DAMPING * self.trend
        level = expected + LEVEL_RATE * (value - expected)
        trend = DAMPING * self.trend + TREND_RATE * (level - self.level - DAMPING * self.trend)
        error_var = (1 - LEVEL_RATE) * self.error_var + LEVEL_RATE * (value - expected) ** 2
        return Forecast(level, trend, error_var)

    def volatile(self) -> bool:
        if self.level is None:
            return False
        return math.sqrt(self.error_var) > VOLATILE_CV * max(self.level, 1.0)

    def predict(self, steps: float, p90: float | None = None) -> float | None:
        """Concurrency `steps` intervals ahead (damped trend), never below zero; p90 when volatile."""
        if self.level is None:
            return None
        horizon = sum(DAMPING**i for i in range(1, max(round(steps), 1) + 1))
        value = max(self.level + horizon * self.trend, 0.0)
        if p90 is not None and self.volatile():
            return max(value, p90)
        return value

    def project(self, steps: float) -> float | None:
        """Where the level will be `steps` intervals ahead if the present trend holds (undamped; never below
        zero): the load a change that takes that long to carry out lands in."""
        if self.level is None:
            return None
        return max(self.level + steps * self.trend, 0.0)

    def reach(self, steps: float) -> float | None:
        """The high end of where the load may be within `steps` intervals: the rising trend's projection (a
        falling load may turn: never below the present level) plus the p90 of the one-step error (the noise a
        window's concurrency shows about the trend)."""
        if self.level is None:
            return None
        return self.level + max(steps * self.trend, 0.0) + P90_Z * math.sqrt(self.error_var)

    def to_dict(self) -> dict[str, float | None]:
        return {"level": self.level, "trend": self.trend, "errorVar": self.error_var}

    @classmethod
    def from_dict(cls, raw: Mapping[str, float | None]) -> Forecast:
        level = raw.get("level")
        return cls(
            level=None if level is None else float(level),
            trend=float(raw.get("trend") or 0.0),
            error_var=float(raw.get("errorVar") or 0.0),
        )
