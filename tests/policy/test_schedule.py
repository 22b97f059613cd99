from __future__ import annotations

from specfleet.operator.policy.acceptance import PRIORS, extrapolate
from specfleet.operator.policy.calibration import Calibration
from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.schedule import (
    BATCH_GRID,
    DRIFT_THRESHOLD,
    LIVE_MIN_GAIN,
    TAX_PESSIMISM,
    drifted,
    render_schedule,
    table_supported,
)
from specfleet.operator.policy.state import SpecConfig
from specfleet.runtime.engine_args import SpeculativeConfig
from tests.policy.helpers import COST_8B_H100, SHAREGPT

CURVE = extrapolate(SHAREGPT, 5, PRIORS["eagle3"])


def test_table_follows_the_cost_model() -> None:
    predictor = Predictor(COST_8B_H100, CURVE, Calibration())
    table = render_schedule(predictor, range(1, 6))
    batches = [b for b, _ in table]
    ks = [k for _, k in table]
    assert batches == sorted(batches)
    assert len(set(batches)) == len(batches)
    assert ks == sorted(ks, reverse=True)  # fewer drafts as the batch grows
    config = SpecConfig(enabled=True, k=max(ks), schedule=table)
    assert config.k_at(1) == 5
    assert config.k_at(48) == 3
    assert config.k_at(100_000) == ks[-1]
    for batch in (1, 8, 48, 200):  # every row is the best k at its own size
        assert config.k_at(batch) in {predictor.best(b, range(1, 6))[0] for b in (batch, *batches)}
    SpeculativeConfig(method="eagle3", k=max(ks), draft_model="d", schedule=table).validate()


def test_no_zero_row_on_an_uncertain_tax() -> None:
    # Weak drafter, short contexts: k=1 loses at large batch, by less than the prior's tax at its pessimistic
    # bound, so the prior writes no k=0 row there (the fit writes one once evidence makes the tax sure).
    poor = extrapolate((0.45, 0.1), 5, PRIORS["eagle3"])
    predictor = Predictor(COST_8B_H100.with_context(128), poor, Calibration())
    table = render_schedule(predictor, range(1, 6))
    assert predictor.speedup(1, 512) < 1.0
    assert predictor.drafter_tax(512, pessimism=TAX_PESSIMISM) > 1 - predictor.speedup(1, 512)
    assert table[-1][1] == 1
    assert table[0][1] > 1


def test_only_with_data_parallel_one() -> None:
    assert table_supported(True, 1)
    assert not table_supported(True, 2)
    assert not table_supported(False, 1)


def test_drift_threshold() -> None:
    assert drifted(None, CURVE)
    assert not drifted(CURVE, tuple(a + DRIFT_THRESHOLD / 2 for a in CURVE))
    assert drifted(CURVE, tuple(a - 2 * DRIFT_THRESHOLD for a in CURVE))


def test_a_rerendered_table_keeps_the_running_rows_the_fit_does_not_surely_beat() -> None:
    """Near a boundary between two k the fit's small moves would swap a row back and forth as the load crosses
    it; a re-rendered row takes the new k only where that is at least LIVE_MIN_GAIN faster at its size."""
    predictor, k_range = Predictor(COST_8B_H100, CURVE, Calibration()), range(1, 6)
    fresh = SpecConfig(enabled=True, k=5, schedule=render_schedule(predictor, k_range))
    assert render_schedule(predictor, k_range, incumbent=fresh) == fresh.schedule
    running = SpecConfig(enabled=True, k=5, schedule=tuple((b, max(k - 1, 1)) for b, k in fresh.schedule))
    rerendered = SpecConfig(enabled=True, k=5, schedule=render_schedule(predictor, k_range, incumbent=running))
    kept = replaced = 0
    for batch in BATCH_GRID:
        new, old = fresh.k_at(batch), running.k_at(batch)
        if new == old:
            continue
        sure = predictor.speedup(new, batch) >= (1 + LIVE_MIN_GAIN) * predictor.speedup(old, batch)
        assert rerendered.k_at(batch) == (new if sure else old)
        kept, replaced = kept + (not sure), replaced + sure
    assert kept
    assert replaced
    # A k=0 row is written only where the tax test says so, never kept for being close.
    zero_topped = SpecConfig(enabled=True, k=5, schedule=(*fresh.schedule[:-1], (fresh.schedule[-1][0], 0)))
    assert render_schedule(predictor, k_range, incumbent=zero_topped) == fresh.schedule
