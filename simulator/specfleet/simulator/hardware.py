"""PURE hardware and model constants the performance model is derived from.

GPUs: NVIDIA's datasheets (H100 SXM 3.35 TB/s, H200 4.8 TB/s, both ≈989 TFLOP/s dense bf16). Models: the
published configurations (weights in bf16, KV bytes per token = 2 · layers · KV heads · head dim · 2 bytes,
all tensor-parallel shards together).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    """One accelerator: memory, bandwidth and dense bf16 peak."""

    name: str
    hbm_bytes: float
    bandwidth: float  # bytes/s
    bf16_flops: float  # FLOP/s
    nvlink_bandwidth: float = 450e9  # bytes/s per direction, the all-reduce ring's link

    def ridge_tokens(self, params: float, weight_bytes: float) -> float:
        """Batched tokens at which a forward's FLOPs take as long as reading its weights (the roofline knee)."""
        return weight_bytes * self.bf16_flops / (2 * params * self.bandwidth)


@dataclass(frozen=True)
class ModelShape:
    """What the roofline needs to know about a model (target or separate draft LM)."""

    name: str
    params: float
    weight_bytes: float
    kv_bytes_per_token: float
    layers: int
    hidden: int
    # An EAGLE-3 head: one decoder layer, the fusion projection and a 32k draft vocabulary head.
    eagle3_head_bytes: float = 0.0
    # An EAGLE(-1) head: one decoder layer and the fusion projection, and it runs the target's full-vocabulary
    # LM head at every draft step.
    eagle_head_bytes: float = 0.0


H100 = Gpu(name="H100", hbm_bytes=80e9, bandwidth=3.35e12, bf16_flops=989e12)
H200 = Gpu(name="H200", hbm_bytes=141e9, bandwidth=4.8e12, bf16_flops=989e12)

# Llama-3.1-8B: 32 layers, hidden 4096, 8 KV heads x 128, vocabulary 128256.
LLAMA_8B = ModelShape(
    name="llama-3.1-8b",
    params=8.03e9,
    weight_bytes=16.1e9,
    kv_bytes_per_token=128 * 1024,
    layers=32,
    hidden=4096,
    eagle3_head_bytes=0.8e9,
    eagle_head_bytes=1.5e9,
)
# Llama-3-70B: 80 layers, hidden 8192, 8 KV heads x 128. EAGLE head: layer 0.86B + fc 0.13B + LM head 1.05B.
LLAMA_70B = ModelShape(
    name="llama-3-70b",
    params=70.6e9,
    weight_bytes=141e9,
    kv_bytes_per_token=320 * 1024,
    layers=80,
    hidden=8192,
    eagle3_head_bytes=2.6e9,
    eagle_head_bytes=4.1e9,
)
# Qwen3-8B: 36 layers, hidden 4096, 8 KV heads x 128, 8.19B parameters.
QWEN3_8B = ModelShape(
    name="qwen3-8b",
    params=8.19e9,
    weight_bytes=16.4e9,
    kv_bytes_per_token=2 * 36 * 8 * 128 * 2,
    layers=36,
    hidden=4096,
    eagle3_head_bytes=0.8e9,
    eagle_head_bytes=1.6e9,
)
# Separate draft LMs. Qwen3-0.6B: 28 layers, hidden 1024, 8 KV heads x 128 (its KV per token is nearly the
# 8B target's), tied embeddings. Llama-3.2-1B: 16 layers, hidden 2048, 8 KV heads x 64.
QWEN3_0_6B = ModelShape(
    name="qwen3-0.6b", params=0.6e9, weight_bytes=1.2e9, kv_bytes_per_token=2 * 28 * 8 * 128 * 2, layers=28,
    hidden=1024,
)  # fmt: skip
LLAMA_1B = ModelShape(
    name="llama-3.2-1b", params=1.24e9, weight_bytes=2.47e9, kv_bytes_per_token=2 * 16 * 8 * 64 * 2, layers=16,
    hidden=2048,
)  # fmt: skip

GPUS = {gpu.name: gpu for gpu in (H100, H200)}


# CLI names of the deployments the simulator knows: target model and tensor-parallel size.
DEPLOYMENTS: dict[str, tuple[ModelShape, int]] = {
    "8b": (LLAMA_8B, 1),
    "70b-tp4": (LLAMA_70B, 4),
    "qwen3-8b": (QWEN3_8B, 1),
}
# The separate draft LM of each target's `draft_model` method (same tokenizer family).
DRAFT_LMS: dict[str, ModelShape] = {LLAMA_8B.name: LLAMA_1B, LLAMA_70B.name: LLAMA_1B, QWEN3_8B.name: QWEN3_0_6B}
