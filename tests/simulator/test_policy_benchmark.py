"""The policy benchmark's scorecard: the policy's goals counted over cells, and the table reprinted from JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from benchmarks.policy_benchmark import goals, main
from specfleet.simulator.evaluation import AUTO, BASELINES, RESTART_ORACLE


def _run(mean_ms: float, p99_ms: float, restarts: int = 0) -> dict[str, Any]:
    return {"tpot_mean": mean_ms / 1e3, "tpot_p99": p99_ms / 1e3, "restarts": restarts, "live_changes": 0,
            "saturated": False}  # fmt: skip


def _cell(auto: float, best: float, oracle: float, *, auto_p99: float = 20.0, restarts: int = 0,
          seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """A cell whose best static is off (every other static 50 % slower); 24 hours."""
    runs = {name: _run(best * 1.5, 30.0) for name in BASELINES}
    runs["off"] = _run(best, 20.0)
    runs[AUTO] = _run(auto, auto_p99, restarts)
    runs[RESTART_ORACLE] = _run(oracle, 20.0)
    return {"scenario": "s", "truth": "calibrated", "seed": seed, "hours": 24.0, "crossed": True, "runs": runs}


def test_goals_count_each_cell_against_its_best_static_and_the_restart_paying_oracle() -> None:
    cells = [
        _cell(10.0, 10.0, 8.0),  # level with the best static: within 1 %, none of the 20 % headroom captured
        _cell(10.2, 10.0, 9.0, auto_p99=21.2),  # 2 % worse; p99 1.06x
        _cell(7.0, 10.0, 7.0, restarts=25),  # all of 30 % headroom, 10 % better... and 25 restarts in 24 h
        _cell(9.5, 10.0, 10.0),  # no headroom: left out of the capture
    ]
    g = goals(cells)
    assert (g.cells, g.within_1pct, g.with_headroom) == (4, 3, 3)
    assert g.capture_pooled == pytest.approx((0.0 - 0.02 + 0.3 + 0.05) / (0.2 + 0.1 + 0.3 + 0.0))
    assert g.capture_median == pytest.approx(0.0)
    assert (g.wide, g.wide_won) == (2, 1)
    assert (g.p99_within, g.restarts_within) == (3, 3)


def test_from_reprints_the_table_and_the_goals_of_an_earlier_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps([_cell(9.0, 10.0, 8.0, seed=0), _cell(9.4, 10.0, 8.0, seed=1)]))
    main(["--from", str(path)])
    out = capsys.readouterr().out
    row = re.search(r"^s +calibrated +off +(\S+) ± (\S+) .* (\d\.\d\d) +0\.0 +0\.0", out, re.M)
    assert row is not None
    assert (row[1], row[2], row[3]) == ("+8.0%", "3.9%", "1.00")
    assert "goals over 2 cells: within 1 % of the best static 2;" in out
    assert "headroom captured +40% (pooled over cells; median of the 2 cells with headroom +40%)" in out
