"""Per-position acceptance: extrapolation beyond the measured depth, priors per method, memory while off.

a_i is the unconditional probability that draft position i is accepted (cumulative: a_1 >= a_2 >= ...).
Beyond the measured positions the curve continues with a constant conditional acceptance (the iid-alpha model,
a fair fit for EAGLE-family drafters on published per-position traces), estimated from the measured curve itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Curve = tuple[float, ...]


@dataclass(frozen=True)
class AcceptancePrior:
    """a_1 and the conditional acceptance of every deeper position, before anything is measured."""

    first: float
    conditional: float


# EAGLE from the SpecDecode-Bench ShareGPT trace (0.62/0.38/0.25); n-gram from its ShareGPT row (low first
# position, high once a match exists); the others are conservative guesses that measurement replaces.
PRIORS: dict[str, AcceptancePrior] = {
    "eagle3": AcceptancePrior(0.62, 0.63),
    "mtp": AcceptancePrior(0.62, 0.63),
    "draft_model": AcceptancePrior(0.55, 0.6),
    "ngram": AcceptancePrior(0.16, 0.83),
    "suffix": AcceptancePrior(0.25, 0.8),
}
# The drafts per step the collapse threshold (an acceptance length) is stated for: the default start-up k.
COLLAPSE_REFERENCE_K = 3
# While speculation is off the last measured curve fades back to the prior with this half-life.
MEMORY_HALF_LIFE_S = 3600.0


def prior_curve(prior: AcceptancePrior, depth: int) -> Curve:
    return tuple(prior.first * prior.conditional**i for i in range(depth))


def clean(measured: Sequence[float]) -> Curve:
    """Measured a_i clipped to [0, 1] and made non-increasing (noise can break monotonicity)."""
    out: list[float] = []
    for value in measured:
        bounded = min(max(value, 0.0), 1.0)
        out.append(min(bounded, out[-1]) if out else bounded)
    return tuple(out)


def extrapolate(measured: Sequence[float], depth: int, prior: AcceptancePrior) -> Curve:
    """a_1..a_depth: the measured positions, then a constant conditional acceptance.

    The conditional rate is the geometric mean over the measured depth, (a_m / a_1)^(1/(m-1)), but never above
    the prior's: positions nobody measured are extrapolated conservatively, since a table ranks deeper k on
    them and an over-estimate there costs every step, while the first window that drafts them corrects an
    under-estimate. With a single position it is the prior's.
    """
    curve = clean(measured)
    if not curve:
        return prior_curve(prior, depth)
    conditional = prior.conditional
    if len(curve) >= 2 and curve[0] > 0:
        conditional = min((curve[-1] / curve[0]) ** (1.0 / (len(curve) - 1)), prior.conditional)
    while len(curve) < depth:
        curve += (curve[-1] * conditional,)
    return curve[:depth]


def curve_from_length(length: float, k: int) -> Curve:
    """The iid-alpha curve whose E(k) = 1 + alpha + ... + alpha^k equals a measured mean acceptance length."""
    target = min(max(length, 1.0), float(k + 1))
    low, high = 0.0, 1.0
    for _ in range(50):  # bisection: E is increasing in alpha
        alpha = (low + high) / 2
        if 1 + sum(alpha**i for i in range(1, k + 1)) < target:
            low = alpha
        else:
            high = alpha
    alpha = (low + high) / 2
    return tuple(alpha**i for i in range(1, k + 1))


def expected_tokens(curve: Sequence[float], k: int) -> float:
    """E(k) = 1 + Σ_{i≤k} a_i: tokens emitted per verify step."""
    return 1.0 + sum(curve[:k])


def collapse_floor(threshold: float, drafted_k: float) -> float:
    """The acceptance length below which acceptance has collapsed at `drafted_k` drafts per verify step.

    L ≤ 1 + k·a_1 ≤ 1 + k: a floor stated for k=3 would fire on a healthy k=1 row (L=1.25 is a_1=0.25). Below
    COLLAPSE_REFERENCE_K the floor shrinks with the k that ran (the same accepted tokens per drafted position;
    nothing drafted, nothing to judge). Above it, it stays: deeper positions of a poor drafter add little
    (a_i falls geometrically), so a k=5 config at L=1.47 may well pay at low batch and is no collapse.
    """
    return 1.0 + (threshold - 1.0) * min(max(drafted_k, 0.0), COLLAPSE_REFERENCE_K) / COLLAPSE_REFERENCE_K


@dataclass(frozen=True)
class AcceptanceMemory:
    """The last curve measured with enough samples, and when."""

    curve: Curve
    measured_at: float


def merge(measured: Curve, memory: AcceptanceMemory | None) -> Curve:
    """The measured positions, then the remembered deeper ones at their remembered conditional acceptance.

    A window that drafted fewer positions than an earlier one says nothing about the deeper ones; dropping
    them would let the extrapolation (prior conditional) stand in for a measurement and flap the table.
    """
    if memory is None or len(memory.curve) <= len(measured) or not measured:
        return measured
    old = memory.curve
    out = list(measured)
    for i in range(len(measured), len(old)):
        conditional = old[i] / old[i - 1] if old[i - 1] > 0 else 0.0
        out.append(out[-1] * conditional)
    return tuple(out)


def remembered(memory: AcceptanceMemory | None, prior: AcceptancePrior, now: float, depth: int) -> Curve:
    """The curve to predict with: the measured one, faded toward the prior as it ages."""
    base = prior_curve(prior, depth)
    if memory is None:
        return base
    weight = 0.5 ** (max(now - memory.measured_at, 0.0) / MEMORY_HALF_LIFE_S)
    measured = extrapolate(memory.curve, depth, prior)
    return tuple(p + (m - p) * weight for m, p in zip(measured, base, strict=True))
