"""PURE acceptance model: per-prompt-class profiles and per-request draws.

A profile gives the unconditional acceptance a_i of draft position i (a_i = accepted_per_pos[i-1] / drafts) at
temperature 0. EAGLE-family and draft-model drafts are close to an iid-alpha chain (conditional acceptance
a_i/a_{i-1} roughly flat with depth); n-gram is not: a low first position (is there a match at all?) and high
conditionals once a match exists. Each request draws its own chain around the profile, which gives the
per-request spread of L.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from specfleet.simulator.perf import DraftFamily

FloatArray = NDArray[np.float64]
MAX_POSITIONS = 8
# Temperature 1 lowers speed-up by 4-30 % (EAGLE-3 paper): each conditional acceptance loses this share per
# unit of temperature, about 13 % on L(k=3) for an EAGLE chain.
TEMPERATURE_PENALTY = 0.12
MAX_CONDITIONAL = 0.97


@dataclass(frozen=True)
class AcceptanceProfile:
    """Unconditional acceptance by position (temperature 0), the class's sampling temperature and spread."""

    family: DraftFamily
    cumulative: tuple[float, ...]
    temperature: float = 0.0
    # Standard deviation of the per-request log-multiplier on conditional acceptance.
    spread: float = 0.15

    @cached_property
    def conditional(self) -> FloatArray:
        """Conditional acceptance of each position given the previous one was accepted, at the temperature."""
        a = np.asarray(self.cumulative, float)
        previous = np.concatenate(([1.0], a[:-1]))
        c = np.divide(a, previous, out=np.zeros_like(a), where=previous > 0)
        scaled: FloatArray = np.clip(c * (1.0 - TEMPERATURE_PENALTY * self.temperature), 0.0, MAX_CONDITIONAL)
        return scaled

    def mean_length(self, k: int) -> float:
        """Expected tokens per verify step, E(k) = 1 + sum_{i<=k} a_i, at the profile's temperature."""
        return 1.0 + float(np.cumprod(self.conditional)[:k].sum())


def _padded(conditional: FloatArray) -> FloatArray:
    """Conditionals extended to MAX_POSITIONS by repeating the deepest one (iid tail)."""
    tail = np.full(MAX_POSITIONS - len(conditional), conditional[-1])
    padded: FloatArray = np.concatenate((conditional, tail))[:MAX_POSITIONS]
    return padded


def draw_requests(profile: AcceptanceProfile, n: int, rng: np.random.Generator) -> FloatArray:
    """Per-request unconditional acceptance a_i, shape (n, MAX_POSITIONS).

    The multiplier m is log-normal with mean 1. EAGLE-family chains scale every conditional (a request is easy
    or hard throughout); a_i then carries m^i, so position i is divided by E[m^i] = exp(s^2 i(i-1)/2) to keep
    the fleet-wide mean on the profile. n-gram scales only the first position (whether a match exists).
    """
    sigma = profile.spread
    log_m = sigma * rng.standard_normal(n)[:, None] - sigma**2 / 2
    conditional = np.broadcast_to(_padded(profile.conditional), (n, MAX_POSITIONS))
    if profile.family is not DraftFamily.NGRAM:
        depth = np.arange(MAX_POSITIONS)
        conditional = conditional * np.exp(log_m - sigma**2 * depth)
    else:
        conditional = conditional.copy()
        conditional[:, :1] *= np.exp(log_m[:, 0:1])
    chains: FloatArray = np.cumprod(np.clip(conditional, 0.0, MAX_CONDITIONAL), axis=1, dtype=float)
    return chains
