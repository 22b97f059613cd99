"""PURE closed-batch measurements, as the calibration sources measured: a batch held full, throughput read.

They run through the fleet simulation itself (one replica, max batch = bs, a queue that never empties), so
the calibration tests check the code that produces the policy results, chunking included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specfleet.operator.policy.state import SpecConfig
from specfleet.operator.simulator.config import static
from specfleet.operator.simulator.controllers import Fixed
from specfleet.operator.simulator.fleet import FleetSimulation, FleetSpec
from specfleet.operator.simulator.perf import DraftFamily, ReplicaPerf
from specfleet.operator.simulator.workload import PromptClass, Requests


@dataclass(frozen=True)
class ClosedBatch:
    """Generated tokens per second and the pod's acceptance counters at a held batch size."""

    tokens_per_second: float  # per second of decoding (prompt processing excluded, as the sources measure decode)
    acceptance_length: float  # 1 + accepted / drafts; 1.0 without speculation
    acceptance_by_position: tuple[float, ...]


def closed_batch(
    perf: ReplicaPerf,
    prompt_class: PromptClass,
    family: DraftFamily,
    batch: int,
    config: SpecConfig,
    seconds: float = 60.0,
    seed: int = 0,
    dt: float = 0.5,
) -> ClosedBatch:
    rng = np.random.default_rng(seed)
    # Enough requests, all queued at t=0, that the batch never drains: a bound on what the batch can generate.
    tokens_bound = seconds * batch * (config.k + 1) / perf.target.fixed_s
    n = batch + int(tokens_bound / prompt_class.output.minimum_mean())
    requests = Requests(
        arrival=np.zeros(n),
        klass=np.zeros(n, np.int64),
        prompt=prompt_class.prompt.draw(n, rng),
        output=prompt_class.output.draw(n, rng),
    )
    spec = FleetSpec(perf=perf, family=family, replicas=1, max_batch=batch, dt=dt, interval=seconds)
    sim = FleetSimulation(spec, requests, [prompt_class], Fixed(config), rng)
    result = sim.run(seconds)
    pod = sim.pod(0)
    drafts = max(pod.drafts, 1e-12)
    return ClosedBatch(
        tokens_per_second=pod.generation_tokens / (result.duration - result.prefill_seconds),
        acceptance_length=1.0 + pod.accepted / drafts if pod.spec_positions else 1.0,
        acceptance_by_position=tuple(float(x) / drafts for x in pod.accepted_per_pos),
    )


def speedup(
    perf: ReplicaPerf, prompt_class: PromptClass, family: DraftFamily, batch: int, k: int, seed: int = 0
) -> float:
    """Generated-token throughput at k ÷ without speculation, same batch (calibration.md's "speed-up")."""
    on = closed_batch(perf, prompt_class, family, batch, static(k), seed=seed)
    off = closed_batch(perf, prompt_class, family, batch, SpecConfig.off(), seed=seed)
    return on.tokens_per_second / off.tokens_per_second
