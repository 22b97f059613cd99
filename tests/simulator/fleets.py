"""Small simulated fleets shared by the simulator tests."""

from __future__ import annotations

import numpy as np

from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.controllers import Fixed
from specfleet.simulator.fleet import Controller, FleetSimulation, FleetSpec
from specfleet.simulator.hardware import H100, LLAMA_8B
from specfleet.simulator.perf import DraftFamily, replica_perf
from specfleet.simulator.traces import builtin_trace
from specfleet.simulator.workload import SHAREGPT, generate_requests


def small_fleet(
    config: SpecConfig | None = None,
    controller: Controller | None = None,
    seed: int = 0,
    qps: float = 20.0,
    seconds: float = 300.0,
    replicas: int = 2,
    restart_seconds: float = 60.0,
    ceiling_k: int = 0,
) -> FleetSimulation:
    """Two 8B replicas under constant ShareGPT load."""
    trace = builtin_trace("constant", qps, seconds / 3600)
    rng = np.random.default_rng(seed)
    requests = generate_requests(trace.times, trace.qps, trace.mix, [SHAREGPT], rng)
    spec = FleetSpec(
        perf=replica_perf(LLAMA_8B, H100, 1),
        family=DraftFamily.EAGLE,
        replicas=replicas,
        restart_seconds=restart_seconds,
        ceiling_k=ceiling_k,
    )
    chosen = controller if controller is not None else Fixed(config or SpecConfig.off())
    return FleetSimulation(spec, requests, [SHAREGPT], chosen, rng)
