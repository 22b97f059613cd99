"""Step-cost model and predicted speed-up of speculative decoding.

C_off(B)    = T_target(B, B tokens)
C_spec(k,B) = T_target(B, B·(k+1) tokens) + T_draft(k, B)
S(k,B)      = E(k)·C_off(B) / C_spec(k,B)

The roofline prior of one target forward is

    max(weight bytes / bandwidth, FLOPs / peak) + UNOVERLAPPED·FLOPs / peak + KV bytes / bandwidth + overhead

at achievable (not datasheet) bandwidth and peak, plus two all-reduces per layer under tensor parallelism.
The pure max form makes verification free up to the knee, which the measurements contradict: the fitted vLLM
step model in calibration.md pays its per-token term from bs=1. Small-batch GEMMs do not overlap their maths
with weight streaming, so that share is added on top; attention reads the KV cache in its own memory-bound
kernels, so KV time is added too. Fitted against the 8B/H100 and 70B/TP4 speed-up rows of calibration.md
(largest error 0.10). Online calibration (`calibration.py`) corrects the prior from observed TPOT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specfleet.operator.policy.acceptance import expected_tokens
from specfleet.operator.policy.hardware import (
    BF16_BYTES,
    GpuProfile,
    ModelProfile,
    gpu_profile,
    model_profile,
)

# Achievable fractions of datasheet bandwidth and peak, fitted against calibration.md's 8B/H100 step model.
BANDWIDTH_EFFICIENCY = 0.85
COMPUTE_EFFICIENCY = 0.9
UNOVERLAPPED_COMPUTE = 1.0
STEP_OVERHEAD_S = 1.5e-3
# Mean tokens in a running sequence's KV cache when the signals do not say (ShareGPT-like chat).
DEFAULT_CONTEXT_TOKENS = 1024.0
# Fraction of GPU memory vLLM gives to weights plus KV cache (its default gpu_memory_utilization).
GPU_MEMORY_UTILIZATION = 0.9


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
class CostModel:
    """Roofline step-cost prior for one replica (a tensor-parallel group of GPUs)."""

    gpu: GpuProfile
    model: ModelProfile
    draft: DraftProfile
    tensor_parallel: int = 1
    context_tokens: float = DEFAULT_CONTEXT_TOKENS

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

    def _allreduce_s(self, tokens: float) -> float:
        if self.tensor_parallel == 1:
            return 0.0
        payload = tokens * self.model.hidden_size * BF16_BYTES
        per_call = self.gpu.allreduce_latency_s + payload / self.gpu.interconnect_bytes_s
        return 2 * self.model.layers * per_call

    def target_step(self, batch: float, tokens: float) -> float:
        """One target forward over `tokens` query tokens of `batch` running sequences."""
        weights = self._memory_s(self.model.weight_bytes)
        kv = self._memory_s(batch * self.context_tokens * self.model.kv_bytes_per_token)
        compute = self._compute_s(tokens * self.model.flops_per_token)
        gemm = max(weights, compute) + UNOVERLAPPED_COMPUTE * compute
        return gemm + kv + self._allreduce_s(tokens) + STEP_OVERHEAD_S

    def draft_step(self, k: int, batch: float) -> float:
        """Proposing k tokens for each of `batch` sequences."""
        share = self.draft.weight_fraction
        kv_bytes = batch * self.context_tokens * self.model.kv_bytes_per_token
        position = (
            self._memory_s(share * (self.model.weight_bytes + kv_bytes))
            + self._compute_s(share * batch * self.model.flops_per_token)
            + self.draft.per_position_s
        )
        return k * position + self.draft.fixed_s

    def step_off(self, batch: float) -> float:
        return self.target_step(batch, batch)

    def step_spec(self, k: int, batch: float) -> float:
        return self.target_step(batch, batch * (k + 1)) + self.draft_step(k, batch)

    def with_context(self, context_tokens: float) -> CostModel:
        return CostModel(self.gpu, self.model, self.draft, self.tensor_parallel, context_tokens)

    def kv_capacity_tokens(self) -> float:
        """KV-cache tokens one replica holds: its memory share left after the weights."""
        memory = self.tensor_parallel * self.gpu.memory_bytes * GPU_MEMORY_UTILIZATION
        return max(memory - self.model.weight_bytes, 0.0) / self.model.kv_bytes_per_token


def context_from_signals(cost: CostModel, kv_cache_usage: float | None, concurrency: float | None) -> float:
    """Mean context per running sequence, from KV-cache usage when the signals carry it."""
    if kv_cache_usage is None or not concurrency or concurrency < 1 or kv_cache_usage <= 0:
        return cost.context_tokens
    return kv_cache_usage * cost.kv_capacity_tokens() / concurrency


def speedup(
    cost: CostModel,
    curve: Sequence[float],
    k: int,
    batch: float,
    correction_off: float = 1.0,
    correction_spec: float = 1.0,
    *,
    drafter_loaded: bool = False,
) -> float:
    """S(k,B) = E(k)·C_off(B)/C_spec(k,B), each step cost scaled by its calibrated correction factor.

    k=0 is plain decoding (1.0) unless the drafter is loaded anyway — a batch-size table's k=0 row: vLLM
    still runs the drafter's pass then, so S(0,B) = C_off/C_spec(0,B) < 1 (the drafter tax).
    """
    if k == 0 and not drafter_loaded:
        return 1.0
    b = max(batch, 1.0)
    off = cost.step_off(b) * correction_off
    spec = cost.step_spec(k, b) * correction_spec
    return expected_tokens(curve, k) * off / spec
