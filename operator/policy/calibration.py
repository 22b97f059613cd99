"""Online correction of the step-cost prior from observed TPOT, per mode and concurrency bucket.

Observed TPOT relates to the step cost as TPOT_off ≈ C_off(B) and TPOT_spec ≈ C_spec(k,B)/L (L the measured
tokens per verify step). Each observation moves an exponentially weighted ratio observed/predicted for its
mode and its power-of-two bucket of B. The state is a plain dict of floats so it persists in the status.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

OFF = "off"
SPEC = "spec"
MODES = (OFF, SPEC)
# Weight of a new observation; ~5 windows to forget an old regime.
LEARNING_RATE = 0.3
# Ratios outside this band are measurement faults (idle engines, mixed configs), not cost-model errors.
RATIO_BOUNDS = (0.2, 5.0)

Factors = dict[str, float]


def bucket(batch: float) -> int:
    """Power-of-two bucket of a concurrency: 1 → 0, 2-3 → 1, 4-7 → 2, ..."""
    return math.floor(math.log2(max(batch, 1.0)))


@dataclass(frozen=True)
class Calibration:
    """Correction factors (observed/predicted step cost) by mode, then by bucket."""

    factors: Mapping[str, Mapping[int, float]] = field(default_factory=dict)

    def factor(self, mode: str, batch: float) -> float:
        """The factor of the nearest calibrated bucket; a mode never observed borrows the other's, since a
        systematic error (slower GPU, busier host) affects both alike and cancels in the speed-up."""
        for source in (mode, *(m for m in MODES if m != mode)):
            table = self.factors.get(source)
            if table:
                nearest = min(table, key=lambda b: (abs(b - bucket(batch)), b))
                return table[nearest]
        return 1.0

    def observe(self, mode: str, batch: float, observed_s: float, predicted_s: float) -> Calibration:
        """Fold one observed/predicted step-cost pair into the factor of its bucket."""
        if observed_s <= 0 or predicted_s <= 0:
            return self
        ratio = observed_s / predicted_s
        if not RATIO_BOUNDS[0] <= ratio <= RATIO_BOUNDS[1]:
            return self
        table = dict(self.factors.get(mode, {}))
        key = bucket(batch)
        previous = table.get(key, self.factor(mode, batch))
        table[key] = previous + LEARNING_RATE * (ratio - previous)
        return Calibration({**self.factors, mode: table})

    def to_dict(self) -> dict[str, Factors]:
        return {mode: {str(b): f for b, f in sorted(table.items())} for mode, table in self.factors.items()}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Mapping[str, float]]) -> Calibration:
        return cls({mode: {int(b): float(f) for b, f in table.items()} for mode, table in raw.items() if mode in MODES})
