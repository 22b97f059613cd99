"""PURE step-time model of one vLLM replica: target forward, drafter, CPU overhead.

The shape is the fitted vLLM model of calibration.md (Llama-3.1-8B, one H100, vLLM 0.10): every cost is
linear in batched tokens and KV tokens with a fixed term. Other models and GPUs get their constants from the
roofline, scaled by the efficiencies the fit implies on the 8B/H100 pair, so the 8B/H100 model *is* the fit
and the rest (70B TP4, H200) are derived from it and checked against the calibration rows in tests/simulator.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specfleet.operator.simulator.hardware import H100, LLAMA_8B, Gpu, ModelShape

FloatArray = NDArray[np.float64]


class DraftFamily(StrEnum):
    """How a draft method costs and accepts: a GPU head (EAGLE, MTP, draft model) or a CPU lookup (n-gram)."""

    EAGLE = "eagle"
    NGRAM = "ngram"


METHOD_FAMILY: dict[str, DraftFamily] = {
    "eagle3": DraftFamily.EAGLE,
    "mtp": DraftFamily.EAGLE,
    "draft_model": DraftFamily.EAGLE,
    "ngram": DraftFamily.NGRAM,
    "suffix": DraftFamily.NGRAM,
}


@dataclass(frozen=True)
class LinearCost:
    """seconds = fixed + per_token * tokens + per_kv * kv_tokens."""

    fixed_s: float
    per_token_s: float
    per_kv_s: float

    def seconds(self, tokens: ArrayLike, kv_tokens: ArrayLike) -> FloatArray:
        return (
            self.fixed_s + self.per_token_s * np.asarray(tokens, float) + self.per_kv_s * np.asarray(kv_tokens, float)
        )


# calibration.md, "A fitted vLLM step-time model" (SpecDecode-Bench predictor.py).
FIT_TARGET_8B_H100 = LinearCost(fixed_s=5.886e-03, per_token_s=2.101e-05, per_kv_s=3.926e-08)
# Per engine step, whatever k: `per_token` multiplies the draft tokens of the whole batch (B*k).
FIT_EAGLE_8B_H100 = LinearCost(fixed_s=2.135e-03, per_token_s=8.414e-07, per_kv_s=2.378e-09)
FIT_CPU_OVERHEAD_S = 1.207e-03
# n-gram proposes on the CPU from the prompt and output so far: no GPU pass, a small lookup per draft token.
# Not in the fit; an assumption of this model (vLLM's numba n-gram proposer: tens of microseconds a request).
NGRAM_COST = LinearCost(fixed_s=1.5e-04, per_token_s=2.0e-06, per_kv_s=0.0)

# Efficiencies implied by the fit against the roofline on the 8B/H100 pair (weights read, FLOPs, KV read).
ETA_WEIGHTS = (LLAMA_8B.weight_bytes / H100.bandwidth) / FIT_TARGET_8B_H100.fixed_s
ETA_FLOPS = (2 * LLAMA_8B.params / H100.bf16_flops) / FIT_TARGET_8B_H100.per_token_s
ETA_KV = (LLAMA_8B.kv_bytes_per_token / H100.bandwidth) / FIT_TARGET_8B_H100.per_kv_s
# Launch/sync cost of one draft pass beyond reading the head's weights (the bulk of the fitted 2.1 ms).
DRAFT_LAUNCH_S = FIT_EAGLE_8B_H100.fixed_s - LLAMA_8B.eagle_head_bytes / H100.bandwidth / ETA_WEIGHTS
# Tensor parallelism: two all-reduces per layer, each with a latency floor over NVLink.
ALLREDUCE_LATENCY_S = 8e-6


@dataclass(frozen=True)
class ReplicaPerf:
    """Step-time constants of one replica (model on `tp` GPUs of one kind)."""

    target: LinearCost
    eagle: LinearCost
    ngram: LinearCost
    cpu_overhead_s: float
    kv_capacity_tokens: int

    def draft_cost(self, family: DraftFamily) -> LinearCost:
        return self.eagle if family is DraftFamily.EAGLE else self.ngram

    def step_seconds(
        self,
        family: DraftFamily | None,
        batch: ArrayLike,
        k: ArrayLike,
        kv_tokens: ArrayLike,
        prefill_tokens: ArrayLike = 0.0,
    ) -> FloatArray:
        """Seconds of one engine step decoding `batch` sequences with `k` drafts each.

        `family=None` is a replica started without a speculative config. With a drafter loaded and k=0 (vLLM's
        batch-size table at large batch) the drafter still runs its pass: the "drafter tax".
        """
        b = np.asarray(batch, float)
        kk = np.asarray(k, float)
        target = self.target.seconds(b * (kk + 1) + np.asarray(prefill_tokens, float), kv_tokens)
        if family is None:
            return target + self.cpu_overhead_s
        draft = self.draft_cost(family).seconds(b * kk, kv_tokens)
        return target + draft + self.cpu_overhead_s


def _allreduce_costs(model: ModelShape, gpu: Gpu, tp: int) -> tuple[float, float]:
    """(fixed, per token) seconds of the per-layer all-reduces of a TP group; zero on one GPU."""
    if tp == 1:
        return 0.0, 0.0
    ring = 2 * (tp - 1) / tp
    per_token_bytes = 2 * model.layers * model.hidden * 2  # two bf16 activations per layer
    return 2 * model.layers * ALLREDUCE_LATENCY_S, ring * per_token_bytes / gpu.nvlink_bandwidth


def derive_target(model: ModelShape, gpu: Gpu, tp: int) -> LinearCost:
    """Target forward constants from the roofline, at the efficiencies of the 8B/H100 fit."""
    ar_fixed, ar_token = _allreduce_costs(model, gpu, tp)
    return LinearCost(
        fixed_s=model.weight_bytes / tp / gpu.bandwidth / ETA_WEIGHTS + ar_fixed,
        per_token_s=2 * model.params / tp / gpu.bf16_flops / ETA_FLOPS + ar_token,
        per_kv_s=model.kv_bytes_per_token / tp / gpu.bandwidth / ETA_KV,
    )


def derive_eagle(model: ModelShape, gpu: Gpu, tp: int) -> LinearCost:
    """EAGLE head constants: launch cost + head weights; token and KV terms scale as one target layer."""
    target = derive_target(model, gpu, tp)
    fit_target = FIT_TARGET_8B_H100
    ar_fixed, _ = _allreduce_costs(model, gpu, tp)
    layer_ratio = LLAMA_8B.layers / model.layers  # the head is one layer whatever the target's depth
    return LinearCost(
        fixed_s=DRAFT_LAUNCH_S + model.eagle_head_bytes / tp / gpu.bandwidth / ETA_WEIGHTS + ar_fixed / model.layers,
        per_token_s=FIT_EAGLE_8B_H100.per_token_s * target.per_token_s / fit_target.per_token_s * layer_ratio,
        per_kv_s=FIT_EAGLE_8B_H100.per_kv_s * target.per_kv_s / fit_target.per_kv_s * layer_ratio,
    )


def kv_capacity_tokens(model: ModelShape, gpu: Gpu, tp: int, memory_utilization: float = 0.9) -> int:
    """KV tokens the replica can hold: vLLM's gpu_memory_utilization share of HBM minus the weights."""
    free = memory_utilization * gpu.hbm_bytes * tp - model.weight_bytes
    return max(int(free / model.kv_bytes_per_token), 0)


def replica_perf(model: ModelShape, gpu: Gpu, tp: int) -> ReplicaPerf:
    """The calibrated model for 8B on one H100; roofline-derived constants for anything else."""
    fitted = model == LLAMA_8B and gpu == H100 and tp == 1
    return ReplicaPerf(
        target=FIT_TARGET_8B_H100 if fitted else derive_target(model, gpu, tp),
        eagle=FIT_EAGLE_8B_H100 if fitted else derive_eagle(model, gpu, tp),
        ngram=NGRAM_COST,
        cpu_overhead_s=FIT_CPU_OVERHEAD_S,
        kv_capacity_tokens=kv_capacity_tokens(model, gpu, tp),
    )
