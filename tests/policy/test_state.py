from __future__ import annotations

import json

from specfleet.operator.policy.context import initial_state
from specfleet.operator.policy.state import PolicyState
from tests.policy.helpers import make_context, make_signals, run


def test_state_round_trips_through_json() -> None:
    ctx = make_context(data_parallel_size=1, dwell_seconds=0, restart_cost_seconds=0, min_k=3, max_k=3)
    assert initial_state(ctx).current.schedule is not None
    decisions = run(ctx, initial_state(ctx), lambda t, s: make_signals(600 if t < 300 else 4, tpot_seconds=0.01))
    for decision in decisions:
        raw = json.loads(json.dumps(decision.state.to_dict()))
        assert PolicyState.from_dict(raw) == decision.state
    assert any(d.state.verification is not None for d in decisions)
