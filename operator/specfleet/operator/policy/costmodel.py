"""Step-cost model and predicted speed-up of speculative decoding.

C_off(B)    = T_target(B, B tokens)
C_spec(k,B) = T_target(B, B·(k+1) tokens) + T_draft(k, B)
S(k,B)      = E(k)·C_off(B) / C_spec(k,B)

The roofline prior of one target forward is

    max(weight bytes / bandwidth, FLOPs / peak) + UNOVERLAPPED·FLOPs / peak + KV bytes / bandwidth + overhead

at achievable (not datasheet) bandwidth and peak, plus two all-reduces per layer under tensor parallelism.
The pure max form makes verification free up to the knee, which the measurements contradict: published fits of
vLLM's step time pay their per-token term from bs=1. Small-batch GEMMs do not overlap their maths
with weight streaming, so that share is added on top; attention reads the KV cache in its own memory-bound
kernels, so KV time is added too. Fitted against published 8B/H100 and 70B/TP4 EAGLE speed-up rows
(largest error 0.10; tests/policy/test_costmodel.py). The step time is linear in a few physical parameters
(`Parameters`); the roofline gives their prior and the online fit (`calibration.py`) learns them from the
fleet's observed step times.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass, replace
from functools import cached_property
from operator import mul

from specfleet.operator.policy.acceptance import expected_tokens
from specfleet.operator.policy.hardware import (
    BF16_BYTES,
    GpuProfile,
    ModelProfile,
    gpu_profile,
    model_profile,
)

# Achievable fractions of datasheet bandwidth and peak, fitted against a published 8B/H100 step model.
BANDWIDTH_EFFICIENCY = 0.85
COMPUTE_EFFICIENCY = 0.9
UNOVERLAPPED_COMPUTE = 1.0
STEP_OVERHEAD_S = 1.5e-3
# Mean tokens in a running sequence's KV cache when the signals do not say (ShareGPT-like chat).
DEFAULT_CONTEXT_TOKENS = 1024.0
# Fraction of GPU memory vLLM gives to weights plus KV cache (its default gpu_memory_utilization).
GPU_MEMORY_UTILIZATION = 0.9
# What a k=0 row costs with a drafter loaded, relative to the same engine started without speculation, as
# measured in vLLM (issue #49548, gemma-4-31B FP8 on one H100 NVL): +6.6 % TPOT at concurrency 2, +21.6 % at
# 189. Far above the drafter's own pass over the batch, so the prior takes the measurement, not the roofline.
ZERO_ROW_TAX = ((2.0, 0.066), (189.0, 0.216))


@dataclass(frozen=True)
class DraftProfile:
    """Cost of proposing k tokens: `k·(fraction of a target forward + per_position_s) + fixed_s`."""

    weight_fraction: float
    per_position_s: float
    fixed_s: float


# EAGLE/MTP: one decoder layer plus a head, ≈4 % of an 8B target, with ≈1.2 ms of launches per step — the
# fitted 2.1 ms per engine step at k=3. A separate draft model is a small LM run k times. N-gram and suffix
# matching run on the CPU: near free, not free.
DRAFTS: dict[str, DraftProfile] = {
    "eagle3": DraftProfile(0.04, 0.1e-3, 1.2e-3),
    "mtp": DraftProfile(0.04, 0.1e-3, 1.2e-3),
    "draft_model": DraftProfile(0.12, 0.4e-3, 0.5e-3),
    "ngram": DraftProfile(0.0, 0.02e-3, 0.3e-3),
    "suffix": DraftProfile(0.0, 0.03e-3, 0.4e-3),
}


@dataclass(frozen=True)
class Parameters:
    """The physical parameters one engine step's time is linear in (seconds per unit of each feature).

    A step's target forward over n query tokens, with B sequences of context c, costs
    `fixed + token·n + knee·max(n - n_knee, 0) + kv·B·c`: streaming the weights and the launches; the maths not
    overlapped with streaming; the maths past the knee, where it outlasts streaming; attention's reads of the
    KV cache. The n tokens are the decode tokens, B·(k+1). The prompt tokens that chunked prefill folds into the
    step cost `token` each: they run the same GEMMs, and a prompt's maths is its cost whatever the batch (the
    knee term stays the decode's). Pricing them with the decode's own parameter, rather than with one of their
    own, is what tells them apart: prompt work grows with the load exactly as the batch does. A loaded drafter
    adds `draft_fixed + draft_sequence·B` on every speculating step and, per drafted position,
    `draft_position + draft_token·B + draft_kv·B·c`. The same target parameters price a plain step of B tokens
    and the verification of B·(k+1), so either mode's evidence teaches the other. A k=0 row (a batch-size
    table's row that drafts nothing, the drafter still loaded) pays `zero_row_fixed + zero_row_sequence·B` on top
    of the plain step instead: vLLM's k=0 path costs far more than the drafter's pass (`ZERO_ROW_TAX`), and
    only k=0 rows can say how much.
    """

    fixed: float
    token: float
    knee: float
    kv: float
    draft_fixed: float
    draft_sequence: float
    draft_position: float
    draft_token: float
    draft_kv: float
    zero_row_fixed: float
    zero_row_sequence: float


@dataclass(frozen=True)
class StepShape:
    """What one engine step does: its sequences, query tokens, their context, and the drafting around it."""

    batch: float
    tokens: float
    context: float
    k: int
    drafter: bool
    prompt_tokens: float = 0.0  # prompt tokens the step's chunked prefill carries in the same forward


@dataclass(frozen=True)
class MeasuredPrior:
    """Step-cost parameters measured on the fleet's own model and draft (a SpeculationProfile's fit), in
    `Parameters`' order: they replace the roofline as the fit's starting point, with their own uncertainty."""

    mean: tuple[float, ...]
    std: tuple[float, ...]


@dataclass(frozen=True)
class CostModel:
    """Roofline step-cost prior for one replica (a tensor-parallel group of GPUs), or a measured one."""

    gpu: GpuProfile
    model: ModelProfile
    draft: DraftProfile
    tensor_parallel: int = 1
    context_tokens: float = DEFAULT_CONTEXT_TOKENS
    measured: MeasuredPrior | None = None

    @classmethod
    def build(
        cls,
        accelerator: str,
        model_name: str,
        method: str,
        *,
        size_billions: float | None = None,
        tensor_parallel: int = 1,
    ) -> CostModel:
        return cls(
            gpu=gpu_profile(accelerator),
            model=model_profile(model_name, size_billions),
            draft=DRAFTS.get(method, DRAFTS["eagle3"]),
            tensor_parallel=tensor_parallel,
        )

    def _memory_s(self, nbytes: float) -> float:
        return nbytes / (self.tensor_parallel * self.gpu.bandwidth_bytes_s * BANDWIDTH_EFFICIENCY)

    def _compute_s(self, flops: float) -> float:
        return flops / (self.tensor_parallel * self.gpu.peak_flops * COMPUTE_EFFICIENCY)

    @cached_property
    def knee_tokens(self) -> float:
        """Query tokens per forward past which the GEMMs' maths outlasts streaming the weights."""
        return self._memory_s(self.model.weight_bytes) / self._compute_s(self.model.flops_per_token)

    def prior(self) -> Parameters:
        """The roofline's step model as parameters of the linear form `features` spans (see `Parameters`)."""
        per_token = self._compute_s(self.model.flops_per_token)
        kv_token = self._memory_s(self.model.kv_bytes_per_token)
        allreduce_fixed, allreduce_token = 0.0, 0.0
        if self.tensor_parallel > 1:
            allreduce_fixed = 2 * self.model.layers * self.gpu.allreduce_latency_s
            payload = self.model.hidden_size * BF16_BYTES / self.gpu.interconnect_bytes_s
            allreduce_token = 2 * self.model.layers * payload
        share = self.draft.weight_fraction
        untaxed = Parameters(
            fixed=self._memory_s(self.model.weight_bytes) + STEP_OVERHEAD_S + allreduce_fixed,
            token=UNOVERLAPPED_COMPUTE * per_token + allreduce_token,
            knee=per_token,
            kv=kv_token,
            draft_fixed=self.draft.fixed_s,
            # Every speculating step the drafter runs over each sequence's new token to keep its own KV in step.
            draft_sequence=share * (per_token + kv_token * self.context_tokens),
            draft_position=self._memory_s(share * self.model.weight_bytes) + self.draft.per_position_s,
            draft_token=share * per_token,
            draft_kv=share * kv_token,
            zero_row_fixed=0.0,
            zero_row_sequence=0.0,
        )
        zero_row_fixed, zero_row_sequence = self._zero_row_tax(astuple(untaxed))
        return replace(untaxed, zero_row_fixed=zero_row_fixed, zero_row_sequence=zero_row_sequence)

    def _zero_row_tax(self, values: Sequence[float]) -> tuple[float, float]:
        """(fixed, per sequence) seconds that put a k=0 row's step `ZERO_ROW_TAX` above the plain step these
        parameter values price, at both measured concurrencies: the line through the two points."""

        def plain(batch: float) -> float:
            return self.step(self.shape(0, batch, drafter=False), values)

        (b0, t0), (b1, t1) = ZERO_ROW_TAX
        per_sequence = max((t1 * plain(b1) - t0 * plain(b0)) / (b1 - b0), 0.0)
        return max(t0 * plain(b0) - b0 * per_sequence, 0.0), per_sequence

    def features(self, shape: StepShape) -> tuple[float, ...]:
        """The quantities one engine step's time is linear in, in the order of `Parameters`' fields."""
        kv_tokens = shape.batch * shape.context
        drafting = 1.0 if shape.drafter and shape.k > 0 else 0.0
        zero_row = 1.0 if shape.drafter and shape.k == 0 else 0.0
        return (
            1.0,
            shape.tokens + shape.prompt_tokens,
            max(shape.tokens - self.knee_tokens, 0.0),
            kv_tokens,
            drafting,
            drafting * shape.batch,
            float(shape.k),
            shape.k * shape.batch,
            shape.k * kv_tokens,
            zero_row,
            zero_row * shape.batch,
        )

    def shape(self, k: int, batch: float, *, drafter: bool, prompt_tokens: float = 0.0) -> StepShape:
        """A decode step at `batch` sequences of this model's context, verifying k drafts each, with
        `prompt_tokens` of chunked prefill in the same forward."""
        return StepShape(batch, batch * (k + 1), self.context_tokens, k, drafter, prompt_tokens)

    @cached_property
    def roofline_values(self) -> tuple[float, ...]:
        return astuple(self.prior())

    @cached_property
    def prior_values(self) -> tuple[float, ...]:
        """The fit's starting point: the measured parameters where a profile gave them, else the roofline."""
        return self.measured.mean if self.measured is not None else self.roofline_values

    def with_measured(self, measured: MeasuredPrior | None) -> CostModel:
        return replace(self, measured=measured)

    def step(self, shape: StepShape, values: Sequence[float] | None = None) -> float:
        """Seconds of one step: parameter values (`Parameters`' order; the prior's by default) times features."""
        theta = self.prior_values if values is None else values
        return float(sum(map(mul, theta, self.features(shape))))

    def step_off(self, batch: float) -> float:
        return self.step(self.shape(0, batch, drafter=False))

    def step_spec(self, k: int, batch: float) -> float:
        return self.step(self.shape(k, batch, drafter=True))

    def with_context(self, context_tokens: float) -> CostModel:
        return replace(self, context_tokens=context_tokens)

    def kv_capacity_tokens(self) -> float:
        """KV-cache tokens one replica holds: its memory share left after the weights."""
        memory = self.tensor_parallel * self.gpu.memory_bytes * GPU_MEMORY_UTILIZATION
        return max(memory - self.model.weight_bytes, 0.0) / self.model.kv_bytes_per_token


def context_from_signals(cost: CostModel, kv_cache_usage: float | None, concurrency: float | None) -> float:
    """Mean context per running sequence, from KV-cache usage when the signals carry it."""
    capacity = cost.kv_capacity_tokens()
    # No capacity: the spec's model does not fit the GPUs it names (the demo's CPU engine stands in for one).
    if kv_cache_usage is None or not concurrency or concurrency < 1 or kv_cache_usage <= 0 or capacity <= 0:
        return cost.context_tokens
    return kv_cache_usage * capacity / concurrency


def speedup(off_s: float, spec_s: float, curve: Sequence[float], k: int) -> float:
    """S(k,B) = E(k)·C_off(B)/C_spec(k,B) from the two step costs at one batch."""
    return expected_tokens(curve, k) * off_s / spec_s
