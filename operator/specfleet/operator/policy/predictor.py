"""The cost model, an acceptance curve and the fleet's fit of the step model together: speed-up and TPOT."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from specfleet.operator.policy.acceptance import Curve, expected_tokens
from specfleet.operator.policy.calibration import Calibration, FittedCost
from specfleet.operator.policy.costmodel import CostModel, StepShape, speedup
from specfleet.operator.policy.state import SpecConfig

# Loads the guarded speed-up is judged at: 1 to 4096 sequences, 2^(1/4) (≈19 %) apart.
LOAD_GRID = tuple(2 ** (i / 4) for i in range(49))
# Fixed-point steps and relative tolerance for the batch a configuration settles at under a given throughput.
SETTLE_ITERATIONS = 60
SETTLE_TOLERANCE = 1e-3
WALL_TOLERANCE = 0.01  # relative precision of `capacity_wall`


@dataclass(frozen=True)
class Predictor:
    cost: CostModel
    curve: Curve
    calibration: Calibration

    @cached_property
    def fitted(self) -> FittedCost:
        return self.calibration.fitted(self.cost)

    def shape(self, k: int, batch: float, *, drafter_loaded: bool) -> StepShape:
        """One step at `batch` sequences verifying k drafts each, with the prompt tokens chunked prefill folds
        in: in a steady state every generated token's share of a prompt, E(k) tokens per sequence a step."""
        b = max(batch, 1.0)
        generated = b * expected_tokens(self.curve, k)
        prompt = generated * self.calibration.prompt_ratio
        return self.cost.shape(k, b, drafter=drafter_loaded, prompt_tokens=prompt)

    @cached_property
    def _steps(self) -> dict[tuple[int, float, bool], float]:
        """`step` by its arguments: one decision asks for the same steps many times (every k at every grid
        load, off beside each of them)."""
        return {}

    def step(self, k: int, batch: float, *, drafter_loaded: bool) -> float:
        """Fitted seconds of one step, its share of the prompts included."""
        key = (k, batch, drafter_loaded)
        seconds = self._steps.get(key)
        if seconds is None:
            seconds = self._steps[key] = self.fitted.step(self.shape(k, batch, drafter_loaded=drafter_loaded))
        return seconds

    def speedup(self, k: int, batch: float, *, drafter_loaded: bool = False) -> float:
        """Fitted S(k,B); for k=0 1.0 (speculation off) or the drafter tax (a table's k=0 row)."""
        if k == 0 and not drafter_loaded:
            return 1.0
        off = self.step(0, batch, drafter_loaded=False)
        return speedup(off, self.step(k, batch, drafter_loaded=True), self.curve, k)

    def speedup_std(self, k: int, batch: float, *, drafter_loaded: bool = False) -> float:
        """Relative standard deviation of the fitted S(k,B) (0 for speculation off: nothing to predict)."""
        if k == 0 and not drafter_loaded:
            return 0.0
        off, spec = self.shape(0, batch, drafter_loaded=False), self.shape(k, batch, drafter_loaded=True)
        return self.fitted.ratio_std(off, spec)

    def tpot_ratio_std(self, top: SpecConfig, bottom: SpecConfig, batch: float) -> float:
        """Relative standard deviation of tpot(top)/tpot(bottom) at `batch`: how sure the fit is of what a
        switch between the two changes (the acceptance curve is taken as measured)."""
        return self.fitted.ratio_std(self._config_shape(top, batch), self._config_shape(bottom, batch))

    def _config_shape(self, config: SpecConfig, batch: float) -> StepShape:
        b = max(batch, 1.0)
        return self.shape(config.k_at(b), b, drafter_loaded=config.enabled)

    def drafter_tax(self, batch: float, *, pessimism: float = 0.0) -> float:
        """1 - S(0,B) with the drafter loaded, its step cost raised by `pessimism` standard deviations."""
        taxed = self.shape(0, batch, drafter_loaded=True)
        spec = self.fitted.step(taxed) + pessimism * self.fitted.step_std(taxed)
        return 1.0 - self.step(0, batch, drafter_loaded=False) / spec

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
        return self.speedup(config.k_at(batch), batch, drafter_loaded=config.enabled)

    def rollout_slowdown(self, config: SpecConfig, batch: float, replicas: int) -> float:
        """Relative TPOT rise while one of `replicas` pods restarts under `config` at `batch` per replica.

        The pods in service share the missing one's requests, and a slower step keeps each request in the
        batch longer (Little's law), so the batch settles where B' = B·n/(n-1)·TPOT(B')/TPOT(B), capped by
        what the KV cache holds (past it requests queue, which the gain side does not price either, so both
        stop at the cap). Near saturation this is large; at low load nearly nothing.
        """
        if replicas <= 1:
            return 1.0  # nothing serves while the only pod restarts
        settled = self.rollout_batch(config, batch, replicas)
        return self.tpot(config, min(settled, self.batch_limit(batch))) / self.tpot(config, batch) - 1.0

    def rollout_batch(self, config: SpecConfig, batch: float, replicas: int) -> float:
        """The batch each pod in service settles at while one of `replicas` restarts: they carry the whole
        fleet's throughput (Little's law, `settled_batch`). Infinite past what the KV cache holds: the excess
        queues for as long as the rollout lasts."""
        if replicas <= 1:
            return math.inf
        b = max(batch, 1.0)
        throughput = b * replicas / (replicas - 1) / self.tpot(config, b)
        return self.settled_batch(config, throughput, self.batch_limit(b))

    def capacity_wall(self, config: SpecConfig, replicas: int) -> float:
        """The lowest batch per pod from which `replicas` - 1 pods under `config` could not carry the load while
        one restarts (`rollout_batch` infinite), by bisection; infinite if none up to what a KV cache holds.
        Past it no rolling restart lands until the load falls back below it."""
        low, high = 1.0, self.batch_limit(1.0)
        if math.isfinite(self.rollout_batch(config, high, replicas)):
            return math.inf
        if math.isinf(self.rollout_batch(config, low, replicas)):
            return low
        while high - low > WALL_TOLERANCE * high:
            middle = (low + high) / 2
            low, high = (low, middle) if math.isinf(self.rollout_batch(config, middle, replicas)) else (middle, high)
        return high

    def settled_batch(self, config: SpecConfig, throughput: float, limit: float) -> float:
        """The batch per pod at which `config` serves `throughput` tokens/s per pod: by Little's law the batch
        is the throughput times TPOT, and TPOT grows with the batch, so a slower configuration holds each
        request longer and its batch grows until B = X·TPOT(B). Infinite where no batch up to `limit` (what
        the KV cache holds) serves it: the excess would queue."""
        batch = throughput * self.tpot(config, 1.0)
        for _ in range(SETTLE_ITERATIONS):
            following = throughput * self.tpot(config, batch)
            if following > limit:
                return math.inf
            if abs(following - batch) <= SETTLE_TOLERANCE * batch:
                return following
            batch = following
        return batch

    def settled_speedup(self, config: SpecConfig, batch: float) -> float:
        """S of the running `config` over speculation off at the load it carries (`batch` per pod), off settled
        at its own batch for the same throughput: near saturation a slower step holds each request longer and
        the batch grows with it, so the closed-batch S at B understates what a speculating fleet loses there.
        Infinite where off could not carry that load at all."""
        b = max(batch, 1.0)
        plain = self.settled_batch(SpecConfig.off(), b / self.tpot(config, b), self.batch_limit(b))
        if math.isinf(plain):
            return math.inf
        return self.tpot(SpecConfig.off(), plain) / self.tpot(config, b)

    def carried_speedup(self, config: SpecConfig, batch: float) -> float:
        """S of `config` at `batch` per pod, the closed-batch S or the settled one, whichever is lower: what
        running it costs against off carrying the same load."""
        return min(self.config_speedup(config, batch), self.settled_speedup(config, batch))

    def batch_limit(self, batch: float) -> float:
        """The most sequences one pod's KV cache holds at the observed context (never below `batch`)."""
        return max(self.cost.kv_capacity_tokens() / max(self.cost.context_tokens, 1.0), batch)

    def tpot(self, config: SpecConfig, batch: float) -> float:
        """Predicted time per output token: C_off(B), or C_spec(k,B)/E(k) at the k the config runs at B
        (k=0 with the drafter loaded still pays its pass)."""
        b = max(batch, 1.0)
        k = config.k_at(b)
        return self.step(k, b, drafter_loaded=config.enabled) / expected_tokens(self.curve, k)
