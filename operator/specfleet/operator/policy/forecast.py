"""Next-window concurrency per replica: damped Holt smoothing of the recent observations.

Under volatile load the forecast is raised to the window's p90: the costly mistake is speculating into a
surge (verification stops being free), so a noisy series is judged by its high end. A slow drift beside the
Holt trend gives the high end of the load an hour ahead (`Forecast.reach`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

LEVEL_RATE = 0.5
TREND_RATE = 0.3
DAMPING = 0.8
# Relative one-step error (sd / level) above which the series counts as volatile.
VOLATILE_CV = 0.25
P90_Z = 1.2816  # the standard normal's 90th percentile
# Weight of each interval in the slow drift and error variance (a memory of about 20 intervals). The Holt
# trend follows a change within a few intervals, and so does its error variance; projected over an hour, that
# trend's noise alone would touch any ceiling. The reach, an hour ahead, uses the slow pair.
SLOW_RATE = 0.05


def _drift_noise() -> float:
    """The slow drift's standard deviation per unit of one-step error sd when the load is steady noise: what
    the smoothing alone makes of noise. The errors of (level, trend, drift) follow x' = A x + g e under white
    noise e; their stationary covariance P = A P Aᵀ + g gᵀ is solved in closed form,
    vec P = (I - A ⊗ A)⁻¹ vec(g gᵀ)."""
    alpha, beta, phi, rate = LEVEL_RATE, LEVEL_RATE * TREND_RATE, DAMPING, SLOW_RATE
    step = np.array(
        [
            [1 - alpha, (1 - alpha) * phi, 0.0],
            [-beta, phi * (1 - beta), 0.0],
            [-rate * alpha, rate * (1 - alpha) * phi, 1 - rate],  # the drift follows the level's steps
        ]
    )
    gain = np.array([alpha, beta, rate * alpha])
    cov = np.linalg.solve(np.eye(9) - np.kron(step, step), np.outer(gain, gain).ravel()).reshape(3, 3)
    # The one-step error adds the (level + damped trend) error to the noise itself.
    ahead = np.array([1.0, phi, 0.0])
    return math.sqrt(cov[2, 2] / (1 + ahead @ cov @ ahead))


# A steady series' drift is noise of this sd (per one-step error sd); about 0.025 for the constants above.
DRIFT_NOISE = _drift_noise()


@dataclass(frozen=True)
class Forecast:
    """Holt state: level, trend per interval, and the EW variance of one-step errors; and the slow pair, the
    drift per interval (EW of the level's steps) and the slow EW variance of one-step errors."""

    level: float | None = None
    trend: float = 0.0
    error_var: float = 0.0
    drift: float = 0.0
    noise_var: float = 0.0

    def observe(self, value: float) -> Forecast:
        if self.level is None:
            return Forecast(level=value)
        expected = self.level + DAMPING * self.trend
        level = expected + LEVEL_RATE * (value - expected)
        trend = DAMPING * self.trend + TREND_RATE * (level - self.level - DAMPING * self.trend)
        error_var = (1 - LEVEL_RATE) * self.error_var + LEVEL_RATE * (value - expected) ** 2
        drift = (1 - SLOW_RATE) * self.drift + SLOW_RATE * (level - self.level)
        noise_var = (1 - SLOW_RATE) * self.noise_var + SLOW_RATE * (value - expected) ** 2
        return Forecast(level, trend, error_var, drift, noise_var)

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
        """The high end (p90) of where the load may be within `steps` intervals: the drift's projection (a
        falling load may turn: never below the present level) plus the p90 of its uncertainty, the one-step
        error (the noise a window's concurrency shows about the trend) and the drift's own noise carried over
        the steps. The slow drift is what makes that bounded: projected over an hour of intervals, the fast
        trend's noise alone would touch any ceiling."""
        if self.level is None:
            return None
        spread = math.hypot(math.sqrt(self.error_var), steps * DRIFT_NOISE * math.sqrt(self.noise_var))
        return self.level + steps * max(self.drift, 0.0) + P90_Z * spread

    def to_dict(self) -> dict[str, float | None]:
        return {
            "level": self.level,
            "trend": self.trend,
            "errorVar": self.error_var,
            "drift": self.drift,
            "noiseVar": self.noise_var,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, float | None]) -> Forecast:
        level = raw.get("level")
        return cls(
            level=None if level is None else float(level),
            trend=float(raw.get("trend") or 0.0),
            error_var=float(raw.get("errorVar") or 0.0),
            # A state saved before the slow pair existed starts it from the fast one.
            drift=float(raw.get("drift", raw.get("trend")) or 0.0),
            noise_var=float(raw.get("noiseVar", raw.get("errorVar")) or 0.0),
        )
