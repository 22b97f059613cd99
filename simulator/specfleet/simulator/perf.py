"""PURE step-time model of one vLLM replica: target forward, drafter, CPU overhead, the k=0 drafter tax.

The base is the fitted vLLM step model for Llama-3.1-8B on one H100 (SpecDecode-Bench's `predictor.py`, vLLM
0.10, fitted on real runs at bs 1-64): every cost linear in batched tokens and KV tokens with a fixed term.
Other models and GPUs get their constants from the roofline, at the efficiencies the fit implies on the
8B/H100 pair. Past the roofline ridge (batched tokens where a forward's FLOPs take as long as reading its
weights: ≈295 on H100, ≈206 on H200) the GEMMs are compute-bound and stop hiding under the weight stream, so
each further token costs `PAST_KNEE_SHARE` more of its FLOPs. That is the one constant set from published
speed-up rows (SpecDecode-Bench Fig. 1 and 10, bs 64-128), not from the fit, which never left the knee.

Draft costs per engine step, by family:
- EAGLE/MTP head: a launch cost per step plus, per draft step, a read of the head's weights; per draft token
  and per KV token the share of one target layer.
- A separate draft LM (`draft_model`): k sequential forward passes, each with its own launches (per layer),
  its own weight read, its own KV read over the context, and the verified tokens caught up in the first.
- n-gram/suffix: a CPU lookup.
A pod started with a drafter whose batch-size table says k=0 does not run "off": the step pays the drafter
tax measured in vLLM (issue #49548: +6.6 % TPOT at concurrency 2, +21.6 % at 189, against the same engine
started without speculation).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specfleet.simulator.hardware import DRAFT_LMS, H100, LLAMA_8B, Gpu, ModelShape

FloatArray = NDArray[np.float64]


class DraftFamily(StrEnum):
    """How a draft method costs and accepts: a GPU head (EAGLE, MTP), a separate draft LM, a CPU lookup."""

    EAGLE = "eagle"
    DRAFT_MODEL = "draft_model"
    NGRAM = "ngram"


METHOD_FAMILY: dict[str, DraftFamily] = {
    "eagle3": DraftFamily.EAGLE,
    "mtp": DraftFamily.EAGLE,
    "draft_model": DraftFamily.DRAFT_MODEL,
    "ngram": DraftFamily.NGRAM,
    "suffix": DraftFamily.NGRAM,
}


@dataclass(frozen=True)
class TargetCost:
    """seconds = fixed + per_token·T + past_knee_per_token·max(T - knee, 0) + per_kv·KV tokens."""

    fixed_s: float
    per_token_s: float
    per_kv_s: float
    knee_tokens: float
    past_knee_per_token_s: float

    def seconds(self, tokens: ArrayLike, kv_tokens: ArrayLike) -> FloatArray:
        t = np.asarray(tokens, float)
        past = np.maximum(t - self.knee_tokens, 0.0)
        kv = np.asarray(kv_tokens, float)
        return self.fixed_s + self.per_token_s * t + self.past_knee_per_token_s * past + self.per_kv_s * kv


@dataclass(frozen=True)
class DraftCost:
    """Proposing k tokens for B sequences with KV tokens of context, per engine step:

    fixed + k·(per_pass + per_pass_kv·KV) + per_token·B·k + per_kv·KV.
    """

    fixed_s: float
    per_pass_s: float = 0.0
    per_token_s: float = 0.0
    per_kv_s: float = 0.0
    per_pass_kv_s: float = 0.0

    def seconds(self, batch: ArrayLike, k: ArrayLike, kv_tokens: ArrayLike) -> FloatArray:
        b, kk, kv = (np.asarray(x, float) for x in (batch, k, kv_tokens))
        passes = kk * (self.per_pass_s + self.per_pass_kv_s * kv)
        total: FloatArray = self.fixed_s + passes + self.per_token_s * b * kk + self.per_kv_s * kv
        return total

    def scaled(self, factor: float) -> DraftCost:
        return DraftCost(*(factor * value for value in (self.fixed_s, self.per_pass_s, self.per_token_s,
                                                        self.per_kv_s, self.per_pass_kv_s)))  # fmt: skip


# The fitted vLLM model (Llama-3.1-8B, one H100). Its EAGLE term is per engine step at the k of its runs: the
# SpecDecode-Bench rows at k=1, 3 and 5 (bs=1) all put the drafter at about this cost whatever k.
FIT_TARGET_S = (5.886e-03, 2.101e-05, 3.926e-08)  # fixed, per batched token, per KV token
FIT_EAGLE_8B_H100 = DraftCost(fixed_s=2.135e-03, per_token_s=8.414e-07, per_kv_s=2.378e-09)
FIT_CPU_OVERHEAD_S = 1.207e-03
# n-gram proposes on the CPU from the prompt and output so far: no GPU pass, a small lookup per draft token.
# Not in the fit; an assumption of this model (vLLM's numba n-gram proposer: tens of microseconds a request).
NGRAM_COST = DraftCost(fixed_s=1.5e-04, per_token_s=2.0e-06)

# Efficiencies implied by the fit against the roofline on the 8B/H100 pair (weights read, FLOPs, KV read).
ETA_WEIGHTS = (LLAMA_8B.weight_bytes / H100.bandwidth) / FIT_TARGET_S[0]
ETA_FLOPS = (2 * LLAMA_8B.params / H100.bf16_flops) / FIT_TARGET_S[1]
ETA_KV = (LLAMA_8B.kv_bytes_per_token / H100.bandwidth) / FIT_TARGET_S[2]
# Past the ridge, this share of a token's FLOPs (at the fit's efficiency) is paid on top of the fit's slope.
PAST_KNEE_SHARE = 0.5
# The fit's EAGLE runs draft k=3 with an EAGLE-3 head: what is not the three head reads is launch and sync.
FIT_DRAFT_STEPS = 3
DRAFT_LAUNCH_S = FIT_EAGLE_8B_H100.fixed_s - FIT_DRAFT_STEPS * LLAMA_8B.eagle3_head_bytes / H100.bandwidth / ETA_WEIGHTS
# A separate draft LM's pass: the one-layer head's share of that launch cost, plus one layer's kernel launches
# (≈8 kernels at ≈5 µs) for every further layer.
LAYER_LAUNCH_S = 40e-6
# Tensor parallelism: two all-reduces per layer, each with a latency floor over NVLink.
ALLREDUCE_LATENCY_S = 8e-6
# The drafter tax of k=0 rows, relative to the engine started without speculation (vLLM issue #49548,
# gemma-4-31B FP8 on one H100 NVL, 400-token context): linear in log concurrency between the two points.
ZERO_ROW_TAX = ((2.0, 0.066), (189.0, 0.216))


def zero_row_tax(batch: ArrayLike) -> FloatArray:
    """Relative step-time tax of a k=0 row with a drafter loaded, at a concurrency."""
    (b0, t0), (b1, t1) = ZERO_ROW_TAX
    where = np.clip(np.log(np.maximum(np.asarray(batch, float), 1.0) / b0) / np.log(b1 / b0), 0.0, 1.0)
    tax: FloatArray = t0 + (t1 - t0) * where
    return tax


@dataclass(frozen=True)
class ReplicaPerf:
    """Step-time constants of one replica (model on `tp` GPUs of one kind)."""

    target: TargetCost
    eagle: DraftCost
    draft_lm: DraftCost
    ngram: DraftCost
    cpu_overhead_s: float
    kv_capacity_tokens: int
    zero_row_tax_scale: float = 1.0

    def draft_cost(self, family: DraftFamily) -> DraftCost:
        return {DraftFamily.EAGLE: self.eagle, DraftFamily.DRAFT_MODEL: self.draft_lm}.get(family, self.ngram)

    def step_seconds(
        self,
        family: DraftFamily | None,
        batch: ArrayLike,
        k: ArrayLike,
        kv_tokens: ArrayLike,
        prefill_tokens: ArrayLike = 0.0,
    ) -> FloatArray:
        """Seconds of one engine step decoding `batch` sequences with `k` drafts each.

        `family=None` is a replica started without a speculative config. With a drafter loaded and k=0 (a
        batch-size table's k=0 row) the step pays the drafter tax on top of the plain step.
        """
        b = np.asarray(batch, float)
        kk = np.asarray(k, float)
        prefill = np.asarray(prefill_tokens, float)
        target = self.target.seconds(b * (kk + 1) + prefill, kv_tokens)
        if family is None:
            return target + self.cpu_overhead_s
        plain = self.target.seconds(b + prefill, kv_tokens) + self.cpu_overhead_s
        taxed = plain * (1.0 + self.zero_row_tax_scale * zero_row_tax(b))
        spec = target + self.draft_cost(family).seconds(b, kk, kv_tokens) + self.cpu_overhead_s
        return np.where(kk > 0, spec, taxed)

    def with_draft_scale(self, factor: float) -> ReplicaPerf:
        """The same replica with every drafter (and its k=0 tax) `factor` times as costly."""
        return replace(
            self,
            eagle=self.eagle.scaled(factor),
            draft_lm=self.draft_lm.scaled(factor),
            ngram=self.ngram.scaled(factor),
            zero_row_tax_scale=self.zero_row_tax_scale * factor,
        )


def _allreduce_costs(model: ModelShape, gpu: Gpu, tp: int) -> tuple[float, float]:
    """(fixed, per token) seconds of the per-layer all-reduces of a TP group; zero on one GPU."""
    if tp == 1:
        return 0.0, 0.0
    ring = 2 * (tp - 1) / tp
    per_token_bytes = 2 * model.layers * model.hidden * 2  # two bf16 activations per layer
    return 2 * model.layers * ALLREDUCE_LATENCY_S, ring * per_token_bytes / gpu.nvlink_bandwidth


def _weights_s(nbytes: float, gpu: Gpu, tp: int) -> float:
    return nbytes / tp / gpu.bandwidth / ETA_WEIGHTS


def _flops_per_token_s(model: ModelShape, gpu: Gpu, tp: int) -> float:
    return 2 * model.params / tp / gpu.bf16_flops / ETA_FLOPS


def _kv_s(model: ModelShape, gpu: Gpu, tp: int) -> float:
    return model.kv_bytes_per_token / tp / gpu.bandwidth / ETA_KV


def derive_target(model: ModelShape, gpu: Gpu, tp: int, past_knee_share: float = PAST_KNEE_SHARE) -> TargetCost:
    """Target forward constants from the roofline, at the efficiencies of the 8B/H100 fit."""
    ar_fixed, ar_token = _allreduce_costs(model, gpu, tp)
    flops = _flops_per_token_s(model, gpu, tp)
    return TargetCost(
        fixed_s=_weights_s(model.weight_bytes, gpu, tp) + ar_fixed,
        per_token_s=flops + ar_token,
        per_kv_s=_kv_s(model, gpu, tp),
        knee_tokens=gpu.ridge_tokens(model.params, model.weight_bytes),
        past_knee_per_token_s=past_knee_share * flops,
    )


def fitted_target(past_knee_share: float = PAST_KNEE_SHARE) -> TargetCost:
    """The 8B/H100 fit verbatim below the ridge, with the same knee term as every derived model."""
    fixed, per_token, per_kv = FIT_TARGET_S
    return TargetCost(fixed, per_token, per_kv, H100.ridge_tokens(LLAMA_8B.params, LLAMA_8B.weight_bytes),
                      past_knee_share * per_token)  # fmt: skip


def derive_eagle(model: ModelShape, gpu: Gpu, tp: int, head_bytes: float) -> DraftCost:
    """EAGLE head: launch per engine step, a head read per draft step; tokens and KV as one target layer."""
    ar_fixed, _ = _allreduce_costs(model, gpu, tp)
    layer_ratio = LLAMA_8B.layers / model.layers  # the head is one layer whatever the target's depth
    fit_flops = _flops_per_token_s(LLAMA_8B, H100, 1)
    fit_kv = _kv_s(LLAMA_8B, H100, 1)
    return DraftCost(
        fixed_s=DRAFT_LAUNCH_S,
        per_pass_s=_weights_s(head_bytes, gpu, tp) + ar_fixed / model.layers,
        per_token_s=FIT_EAGLE_8B_H100.per_token_s * _flops_per_token_s(model, gpu, tp) / fit_flops * layer_ratio,
        per_kv_s=FIT_EAGLE_8B_H100.per_kv_s * _kv_s(model, gpu, tp) / fit_kv * layer_ratio,
    )


def derive_draft_lm(drafter: ModelShape, gpu: Gpu, tp: int) -> DraftCost:
    """A separate draft LM on the target's GPUs (same TP): k passes, each launch + weights + its own KV.

    Per draft token: its forward, plus catching up the verified token in the first pass.
    """
    ar_fixed, ar_token = _allreduce_costs(drafter, gpu, tp)
    launch = DRAFT_LAUNCH_S / FIT_DRAFT_STEPS + LAYER_LAUNCH_S * (drafter.layers - 1)
    return DraftCost(
        fixed_s=0.0,
        per_pass_s=launch + _weights_s(drafter.weight_bytes, gpu, tp) + ar_fixed,
        per_token_s=2 * (_flops_per_token_s(drafter, gpu, tp) + ar_token),
        per_pass_kv_s=_kv_s(drafter, gpu, tp),
    )


def kv_capacity_tokens(model: ModelShape, gpu: Gpu, tp: int, memory_utilization: float = 0.9) -> int:
    """KV tokens the replica can hold: vLLM's gpu_memory_utilization share of HBM minus the weights."""
    free = memory_utilization * gpu.hbm_bytes * tp - model.weight_bytes
    return max(int(free / model.kv_bytes_per_token), 0)


def replica_perf(
    model: ModelShape,
    gpu: Gpu,
    tp: int,
    *,
    eagle_head: str = "eagle3",
    drafter: ModelShape | None = None,
    past_knee_share: float = PAST_KNEE_SHARE,
) -> ReplicaPerf:
    """The calibrated model: the fit for 8B on one H100, roofline-derived constants for anything else.

    `eagle_head` is "eagle3" (own 32k vocabulary) or "eagle" (EAGLE-1: runs the target's LM head per draft
    step); `drafter` is the separate draft LM of `draft_model` (default: the target family's small model).
    """
    fitted = model == LLAMA_8B and gpu == H100 and tp == 1
    head_bytes = model.eagle3_head_bytes if eagle_head == "eagle3" else model.eagle_head_bytes
    draft_lm = drafter if drafter is not None else DRAFT_LMS[model.name]
    eagle = derive_eagle(model, gpu, tp, head_bytes)
    if fitted and eagle_head == "eagle3":
        eagle = FIT_EAGLE_8B_H100
    return ReplicaPerf(
        target=fitted_target(past_knee_share) if fitted else derive_target(model, gpu, tp, past_knee_share),
        eagle=eagle,
        draft_lm=derive_draft_lm(draft_lm, gpu, tp),
        ngram=NGRAM_COST,
        cpu_overhead_s=FIT_CPU_OVERHEAD_S,
        kv_capacity_tokens=kv_capacity_tokens(model, gpu, tp),
    )
