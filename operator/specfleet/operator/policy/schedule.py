"""vLLM's per-step batch-size→k table (`num_speculative_tokens_per_batch_size`), rendered from the model.

The engine then adapts k to its own running batch within one configuration, with no restart. vLLM honours
the table only at data-parallel size 1. Re-rendering means a restart, so it happens only when the measured
acceptance has drifted from the curve the table was rendered from.
"""

from __future__ import annotations

from collections.abc import Sequence

from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.state import Schedule, SpecConfig

# Batch sizes the table is evaluated at; each row covers the sizes up to its own.
BATCH_GRID = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
# Standard deviations above the fitted drafter tax a k=0 row is judged at.
TAX_PESSIMISM = 1.0
# Largest change of any a_i that leaves the table as it is.
DRIFT_THRESHOLD = 0.05
# Smallest predicted relative gain a live table change must promise (fleet-wide TPOT over the forecast load),
# and that a re-rendered row's k must promise over the running table's at its batch size.
LIVE_MIN_GAIN = 0.01


def table_supported(enabled_by_policy: bool, data_parallel_size: int) -> bool:
    return enabled_by_policy and data_parallel_size == 1


def render_schedule(
    predictor: Predictor, k_range: range, grid: Sequence[int] = BATCH_GRID, incumbent: SpecConfig | None = None
) -> Schedule:
    """(max_batch, k) rows, ascending: the best k at each grid size, 0 only where a k=0 row surely wins.

    A k=0 row is not speculation off: the engine keeps running the drafter's pass (the drafter tax), so a
    losing k≥1 still beats it as long as its loss is below that tax. The tax is the fitted one, taken at its
    pessimistic bound (TAX_PESSIMISM standard deviations up): the roofline under-prices it, and a k=0 row
    that is wrong costs every busy step. Where every row loses to plain decoding the cure is turning
    speculation off (a restart the decision core weighs), not a k=0 row.
    Re-rendering the table the fleet runs (`incumbent`), a size keeps the running k ≥ 1 unless the new one is
    at least LIVE_MIN_GAIN faster there: near a boundary between two k the fit's small moves would otherwise
    swap the row back and forth as the load crosses it.
    Neighbouring sizes with the same k merge into one row; the last row also covers larger batches.
    """
    rows: list[tuple[int, int]] = []
    for batch in grid:
        k, s = predictor.best(batch, k_range)
        k = 0 if predictor.drafter_tax(batch, pessimism=TAX_PESSIMISM) < 1.0 - s else k
        if incumbent is not None and incumbent.schedule is not None:
            k = _kept(predictor, k, incumbent.k_at(batch), batch, k_range)
        if rows and rows[-1][1] == k:
            rows[-1] = (batch, k)
        else:
            rows.append((batch, k))
    return tuple(rows)


def _kept(predictor: Predictor, k: int, running: int, batch: int, k_range: range) -> int:
    """The running row's k at `batch` unless `k` is surely better there; a k=0 row is never kept so (only the
    pessimistic tax test above writes one)."""
    if running == k or running not in k_range:
        return k
    new = predictor.speedup(k, batch, drafter_loaded=True)
    return k if new >= (1 + LIVE_MIN_GAIN) * predictor.speedup(running, batch, drafter_loaded=True) else running


def drifted(rendered_from: Sequence[float] | None, curve: Sequence[float]) -> bool:
    """Whether acceptance moved enough since the table was rendered to re-render it."""
    if rendered_from is None:
        return True
    return any(abs(a - b) > DRIFT_THRESHOLD for a, b in zip(rendered_from, curve, strict=False))
