"""PURE hardware and model constants the performance model is derived from (calibration.md, "Hardware")."""

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


@dataclass(frozen=True)
class ModelShape:
    """What the roofline needs to know about a target model and its EAGLE head (all TP shards together)."""

    name: str
    params: float
    weight_bytes: float
    kv_bytes_per_token: float
    layers: int
    hidden: int
    # An EAGLE-3 head: one decoder layer, the fusion projection and a 32k draft vocabulary head.
    eagle_head_bytes: float


H100 = Gpu(name="H100", hbm_bytes=80e9, bandwidth=3.35e12, bf16_flops=989e12)
H200 = Gpu(name="H200", hbm_bytes=141e9, bandwidth=4.8e12, bf16_flops=989e12)

LLAMA_8B = ModelShape(
    name="llama-3.1-8b",
    params=8.03e9,
    weight_bytes=16.1e9,
    kv_bytes_per_token=128 * 1024,
    layers=32,
    hidden=4096,
    eagle_head_bytes=0.8e9,
)
LLAMA_70B = ModelShape(
    name="llama-3-70b",
    params=70.6e9,
    weight_bytes=141e9,
    kv_bytes_per_token=320 * 1024,
    layers=80,
    hidden=8192,
    eagle_head_bytes=2.6e9,
)

GPUS = {gpu.name: gpu for gpu in (H100, H200)}
# CLI names of the two calibrated deployments: model and tensor-parallel size.
DEPLOYMENTS: dict[str, tuple[ModelShape, int]] = {"8b": (LLAMA_8B, 1), "70b-tp4": (LLAMA_70B, 4)}
