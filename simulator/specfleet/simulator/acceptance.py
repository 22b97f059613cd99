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
    """Per-request unconditional acceptance a_i, shape (n, MAX_POSITIONS): a view of a position-major array.

    The multiplier m is log-normal with mean 1. EAGLE-family chains scale every conditional (a request is easy
    or hard throughout); a_i then carries m^i, so position i is divided by E[m^i] = exp(s^2 i(i-1)/2) to keep
    the fleet-wide mean on the profile. n-gram scales only the first position (whether a match exists).
    Computed in place: a day's requests make this array hundreds of megabytes.
    """
    sigma = profile.spread
    log_m = sigma * rng.standard_normal(n) - sigma**2 / 2
    conditional = _padded(profile.conditional)[:, None]
    if profile.family is not DraftFamily.NGRAM:
        chains = log_m - sigma**2 * np.arange(MAX_POSITIONS)[:, None]
        np.exp(chains, out=chains)
        chains *= conditional
    else:
        chains = np.repeat(conditional, n, axis=1)
        chains[0] *= np.exp(log_m)
    np.clip(chains, 0.0, MAX_CONDITIONAL, out=chains)
    np.cumprod(chains, axis=0, out=chains)
    by_request: FloatArray = chains.T
    return by_request
