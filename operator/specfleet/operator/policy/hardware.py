"""Hardware and model-size profiles: the constants the roofline prior of the cost model starts from.

Figures: NVIDIA's public datasheets (H100/H200/A100 bandwidth and bf16 peak) and the models' published
configurations (Llama-3.1-8B and Llama-3-70B weights and KV bytes per token). Unknown accelerators fall back
to the H100 profile and unknown model names to 8B; the online cost fit learns what the prior gets wrong.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

BF16_BYTES = 2
# Llama-family GQA: 8 KV heads x 128 head dim, K and V, bf16 -> 4096 bytes per layer per token.
KV_BYTES_PER_LAYER = 2 * 8 * 128 * BF16_BYTES
DEFAULT_SIZE_BILLIONS = 8.0
# Layers of the Llama family by parameter count (billions); other sizes interpolate in log space.
_LAYERS_BY_SIZE = ((1.0, 16), (3.0, 28), (8.0, 32), (13.0, 40), (34.0, 48), (70.0, 80), (405.0, 126))


@dataclass(frozen=True)
class GpuProfile:
    name: str
    bandwidth_bytes_s: float
    peak_flops: float  # dense bf16
    memory_bytes: float
    # One tensor-parallel all-reduce: launch latency and interconnect bandwidth (NVLink class).
    allreduce_latency_s: float = 8e-6
    interconnect_bytes_s: float = 450e9


GPUS: dict[str, GpuProfile] = {
    "H100": GpuProfile("H100", 3.35e12, 989e12, 80e9),
    "H200": GpuProfile("H200", 4.8e12, 989e12, 141e9),
    "A100": GpuProfile("A100", 2.039e12, 312e12, 80e9, allreduce_latency_s=10e-6, interconnect_bytes_s=300e9),
}


def gpu_profile(accelerator: str) -> GpuProfile:
    """Profile for an accelerator name such as `H100`, `nvidia-h200-141gb` or `NVIDIA-A100-SXM4-80GB`."""
    upper = accelerator.upper()
    for key, profile in GPUS.items():
        if key in upper:
            return profile
    return GPUS["H100"]


@dataclass(frozen=True)
class ModelProfile:
    size_billions: float
    weight_bytes: float
    kv_bytes_per_token: float
    layers: int
    hidden_size: int

    @property
    def flops_per_token(self) -> float:
        """Dense forward FLOPs per token (2 per parameter)."""
        return 2.0 * self.size_billions * 1e9


_SIZE_RE = re.compile(r"(?:(\d+)x)?(\d+(?:\.\d+)?)\s*B(?![a-z])", re.IGNORECASE)


def guess_size_billions(name: str) -> float | None:
    """Parameter count from a model name: `Llama-3.1-8B` → 8, `Qwen2.5-0.5B` → 0.5, `Mixtral-8x7B` → 56."""
    matches = _SIZE_RE.findall(name.rsplit("/", 1)[-1])
    if not matches:
        return None
    experts, size = matches[-1]
    return float(size) * (int(experts) if experts else 1)


def _layers(size_billions: float) -> int:
    points = _LAYERS_BY_SIZE
    if size_billions <= points[0][0]:
        return points[0][1]
    for (s0, l0), (s1, l1) in itertools.pairwise(points):
        if size_billions <= s1:
            frac = math.log(size_billions / s0) / math.log(s1 / s0)
            return round(l0 + frac * (l1 - l0))
    return points[-1][1]


def model_profile(name: str, size_billions: float | None = None) -> ModelProfile:
    """bf16 profile of a model, from its declared size or, failing that, the size in its name."""
    size = size_billions or guess_size_billions(name) or DEFAULT_SIZE_BILLIONS
    layers = _layers(size)
    # A transformer holds ~12·layers·hidden² parameters; solve for the hidden size.
    hidden = round(math.sqrt(size * 1e9 / (12 * layers)))
    return ModelProfile(
        size_billions=size,
        weight_bytes=size * 1e9 * BF16_BYTES,
        kv_bytes_per_token=float(layers * KV_BYTES_PER_LAYER),
        layers=layers,
        hidden_size=hidden,
    )
