"""PURE naming of the speculation configurations a simulated pod can start with.

The configuration itself is the policy's `SpecConfig` (enabled, k, batch-size→k table), so the policy's
decisions drive the simulated pods without translation.
"""

from __future__ import annotations

import hashlib

from specfleet.operator.policy.state import Schedule, SpecConfig

# vLLM's documented example of num_speculative_tokens_per_batch_size: 5 up to 16, 4 up to 32, 3 up to 64,
# 1 up to 128, 0 beyond. Rows are (max batch size, k), ascending, as in specfleet.runtime.engine_args.
VLLM_DOCUMENTED_TABLE: Schedule = ((16, 5), (32, 4), (64, 3), (128, 1), (1 << 20, 0))


def static(k: int) -> SpecConfig:
    return SpecConfig(enabled=True, k=k)


def table(schedule: Schedule) -> SpecConfig:
    """A table config; its k is the largest row, the startup k that fixes the `position` label set."""
    return SpecConfig(enabled=True, k=max(k for _, k in schedule), schedule=schedule)


def label(config: SpecConfig) -> str:
    """Short human name: off, k=3, table(16:5,32:4,...)."""
    if not config.enabled:
        return "off"
    if config.schedule:
        rows = ",".join(f"{b}:{k}" for b, k in config.schedule if b < 1 << 20)
        return f"table({rows})"
    return f"k={config.k}"


def config_hash(config: SpecConfig) -> str:
    """What the pods' config-hash label carries: signals are grouped by it."""
    return hashlib.sha256(repr(config).encode()).hexdigest()[:10]
