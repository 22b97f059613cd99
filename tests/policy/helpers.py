"""Plain-data builders for the policy tests: an 8B/H100 EAGLE fleet and its signals."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from specfleet.operator.api.types import Signals, SpeculationMode
from specfleet.operator.policy.context import Context, Fleet
from specfleet.operator.policy.costmodel import CostModel
from specfleet.operator.policy.decide import decide
from specfleet.operator.policy.decision import Decision
from specfleet.operator.policy.resolve import ResolvedPolicy
from specfleet.operator.policy.state import PolicyState

# SpecDecode-Bench ShareGPT EAGLE acceptance.
SHAREGPT = (0.62, 0.38, 0.25)
COST_8B_H100 = CostModel.build("H100", "meta-llama/Llama-3.1-8B-Instruct", "eagle3")


def make_context(
    mode: SpeculationMode = SpeculationMode.AUTO,
    *,
    replicas: int = 4,
    ready: int | None = None,
    paused: bool = False,
    data_parallel_size: int = 2,
    surge: bool = True,
    **policy: Any,
) -> Context:
    """Context of an 8B/H100 EAGLE fleet; data parallel 2 by default so decisions use a fixed k."""
    return Context(
        policy=ResolvedPolicy(**{"max_k": 5, **policy}),
        cost=COST_8B_H100,
        method="eagle3",
        mode=mode,
        fleet=Fleet(replicas=replicas, ready_replicas=replicas if ready is None else ready),
        start_k=3,
        data_parallel_size=data_parallel_size,
        paused=paused,
        surge=surge,
    )


def make_signals(concurrency: float, *, enabled: bool = True, **overrides: Any) -> Signals:
    """One healthy window of signals at a concurrency; acceptance only while speculating."""
    values: dict[str, Any] = {"concurrency_per_replica": concurrency, "pods": 4, "samples": 1000}
    if enabled:
        values.update(acceptance_by_position=list(SHAREGPT), acceptance_length=1 + sum(SHAREGPT))
    values.update(overrides)
    return Signals(**values)


def run(ctx: Context, state: PolicyState, signals_at: Any, *, start: float = 0.0, steps: int = 40) -> list[Decision]:
    """Evaluate every interval; `signals_at(t, state)` gives the signals of that step (or None)."""
    decisions = []
    for i in range(steps):
        now = start + i * ctx.policy.interval_seconds
        decision = decide(now, signals_at(now, state), state, ctx)
        decisions.append(decision)
        state = decision.state
    return decisions


def with_fleet(ctx: Context, **fleet: Any) -> Context:
    return replace(ctx, fleet=replace(ctx.fleet, **fleet))
