"""The cost model, an acceptance curve and the calibration together: predicted speed-up and TPOT."""

from __future__ import annotations

import math
from dataclasses import dataclass

from specfleet.operator.policy.acceptance import Curve, expected_tokens
from specfleet.operator.policy.calibration import OFF, SPEC, Calibration
from specfleet.operator.policy.costmodel import CostModel, speedup
from specfleet.operator.policy.state import SpecConfig

# Loads the guarded speed-up is judged at: 1 to 4096 sequences, 2^(1/4) (≈19 %) apart.
LOAD_GRID = tuple(2 ** (i / 4) for i in range(49))


@dataclass(frozen=True)
class Predictor:
    cost: CostModel
    curve: Curve
    calibration: Calibration

    def speedup(self, k: int, batch: float) -> float:
        """Calibrated S(k,B); 1.0 for k=0 (no drafting)."""
        return speedup(
            self.cost,
            self.curve,
            k,
            batch,
            self.calibration.factor(OFF, batch),
            self.calibration.factor(SPEC, batch),
        )

    def best(self, batch: float, k_range: range) -> tuple[int, float]:
        """argmax_k S(k,B) over `k_range`; ties go to the smaller k (fewer wasted drafts)."""
        best = (k_range.start, -1.0)
        for k in k_range:
            s = self.speedup(k, batch)
            if s > best[1] + 1e-12:
                best = (k, s)
        return best

    def guarded(self, batch: float, k_range: range) -> float:
        """The best speed-up the policy may count on at a load: the lowest S(k*, b) over the grid loads up to
        `batch` rounded up to the grid. The model can let S rise slightly with load (fixed costs amortise past
        the knee; long contexts make verification relatively cheap); the running minimum keeps decisions
        monotone, so more load never turns speculation on, and errs towards caution."""
        lowest = math.inf
        for load in LOAD_GRID:
            lowest = min(lowest, self.best(load, k_range)[1])
            if load >= batch:
                break
        return lowest

    def config_speedup(self, config: SpecConfig, batch: float) -> float:
        return self.speedup(config.k_at(batch), batch)

    def tpot(self, config: SpecConfig, batch: float) -> float:
        """Predicted time per output token: C_off(B), or C_spec(k,B)/E(k) at the k the config runs at B."""
        b = max(batch, 1.0)
        k = config.k_at(b)
        if k == 0:
            return self.cost.step_off(b) * self.calibration.factor(OFF, b)
        return self.cost.step_spec(k, b) * self.calibration.factor(SPEC, b) / expected_tokens(self.curve, k)
