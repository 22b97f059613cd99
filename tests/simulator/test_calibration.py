"""The performance model against published rows (SpecDecode-Bench, vLLM #49548), through the fleet simulation.

Closed batches, as the sources measured: `pytest -s` prints the residual table (docs/simulator.md shows it)."""

from __future__ import annotations

import numpy as np
import pytest

from specfleet.simulator.acceptance import draw_requests
from specfleet.simulator.calibration import ROWS, closed_batch, residual_table, row_cells, speedup, tax_cells
from specfleet.simulator.config import static
from specfleet.simulator.hardware import H100, LLAMA_8B, LLAMA_70B, QWEN3_8B
from specfleet.simulator.perf import DraftFamily, ReplicaPerf, replica_perf
from specfleet.simulator.workload import CREATIVE, SHAREGPT

EAGLE = DraftFamily.EAGLE
PERF_8B = replica_perf(LLAMA_8B, H100, 1)
PERF_70B = replica_perf(LLAMA_70B, H100, 4, eagle_head="eagle")

ASSERTED = [row for row in ROWS if row.k is not None]


def test_every_published_row_within_tolerance() -> None:
    """Fig. 1 (k=3, six settings incl. the Qwen3-8B + 0.6B draft model) and Fig. 10 (k=1, 3, 5), bs 1-128."""
    cells = [cell for row in ASSERTED for cell in row_cells(row, seeds=48)]
    table = residual_table(cells)
    print("\n" + table)
    assert len(cells) == 6 * 4 + 3 * 6
    assert all(cell.within for cell in cells), table


def test_per_step_oracle_row_is_reported_and_above_every_fixed_k() -> None:
    """Informational row (how the source's oracle drafts is not published): shown, and a ceiling on fixed k."""
    oracle = next(row for row in ROWS if row.k is None)
    cells = row_cells(oracle)
    print("\n" + residual_table(cells))
    for cell in cells:
        assert cell.model >= max(speedup(PERF_8B, SHAREGPT, EAGLE, cell.batch, k) for k in (1, 3, 5)) - 0.02


def test_k0_drafter_tax_matches_vllm_measurement() -> None:
    """vLLM #49548: an all-k=0 table costs +6.6 % TPOT at concurrency 2 and +21.6 % at 189 against off."""
    cells = tax_cells(PERF_8B, SHAREGPT, EAGLE)
    print("\n" + residual_table(cells))
    assert all(cell.within for cell in cells), residual_table(cells)


def test_draft_model_falls_below_one_before_bs128_and_eagle_does_not() -> None:
    """The separate draft LM's own weights and KV grow with batch: it crosses below 1, EAGLE-3 does not."""
    qwen = replica_perf(QWEN3_8B, H100, 1)
    assert speedup(qwen, SHAREGPT, DraftFamily.DRAFT_MODEL, 128, 3) < 1.0
    assert speedup(PERF_8B, SHAREGPT, EAGLE, 128, 3) > 1.1


def _bs1_ratio(perf: ReplicaPerf) -> float:
    """Speed-up / L at bs=1, L read from the pod's counters."""
    seeds = range(3)
    on = [closed_batch(perf, SHAREGPT, EAGLE, 1, static(3), seed=s) for s in seeds]
    s = np.mean([speedup(perf, SHAREGPT, EAGLE, 1, 3, seed=s) for s in seeds])
    return float(s / np.mean([r.acceptance_length for r in on]))


def test_bs1_speedup_over_length_is_about_0_8_on_8b() -> None:
    """EAGLE-3 paper: speed-up / L at bs=1 is 0.70-0.83 (the article's "speed-up ≈ 0.8·L")."""
    assert 0.70 <= _bs1_ratio(PERF_8B) <= 0.83


def test_bs1_ratio_on_70b_follows_its_published_row() -> None:
    """Known conflict: 1.96 at bs=1 with ShareGPT's L=2.25 is a ratio of 0.87, above the 0.70-0.83 band.

    The roofline-derived 70B model follows the measured row (the drafter is cheap next to a 70B step); see
    docs/simulator.md. Within the row's own tolerance of ±0.1 on 1.96.
    """
    assert _bs1_ratio(PERF_70B) == pytest.approx(1.96 / SHAREGPT.eagle.mean_length(3), abs=0.1 / 2.25)


def test_best_fixed_k_moves_from_5_to_3_around_bs32_on_8b() -> None:
    def best_k(batch: int) -> int:  # over four seeds: one seed's few requests can swap neighbouring k
        return max((3, 4, 5), key=lambda k: np.mean([speedup(PERF_8B, SHAREGPT, EAGLE, batch, k, s) for s in range(4)]))

    assert best_k(8) == 5
    assert best_k(64) == 3
    # The k=5 vs k=3 order flips between bs 16 and 48.
    flips = [b for b in (16, 24, 32, 40, 48) if best_k(b) < 5]
    assert flips
    assert 16 <= flips[0] <= 48


@pytest.mark.parametrize(("k", "published"), [(1, 1.66), (2, 2.04), (3, 2.25), (4, 2.39), (5, 2.48), (7, 2.58)])
def test_sharegpt_eagle_mean_length_by_k(k: int, published: float) -> None:
    """Read back from the pod's counters, as the operator would: L = 1 + accepted / drafts."""
    measured = closed_batch(PERF_8B, SHAREGPT, EAGLE, 16, static(k), seconds=120).acceptance_length
    # A held batch over-represents slow (low-acceptance) requests a little, so allow 0.08 below.
    assert published - 0.08 <= measured <= published + 0.03


def test_per_request_spread_of_length_at_k3() -> None:
    a = draw_requests(SHAREGPT.eagle, 20000, np.random.default_rng(0))
    sd = float((1 + a[:, :3].sum(axis=1)).std())
    assert 0.2 <= sd <= 0.4


def test_eagle_chain_is_roughly_iid_ngram_is_not() -> None:
    eagle = SHAREGPT.eagle.conditional[:4]
    ngram = SHAREGPT.ngram.conditional[:3]
    assert eagle.max() - eagle.min() < 0.15  # flat with depth
    assert ngram[0] < 0.3
    assert ngram[1:].min() > 0.75


def test_temperature_one_lowers_speedup_by_4_to_30_percent() -> None:
    cold = speedup(PERF_8B, SHAREGPT, EAGLE, 8, 3, seed=0)
    hot = speedup(PERF_8B, CREATIVE, EAGLE, 8, 3, seed=0)
    assert 0.04 <= 1 - hot / cold <= 0.30
