"""The benchmark's cell trace: Auto's changes and the holds that delayed them, on a real simulated cell."""

from __future__ import annotations

import re

import pytest

from benchmarks.cell_trace import _stretches, main
from benchmarks.policy_benchmark import CASES, run_cell
from specfleet.simulator.controllers import Held
from specfleet.simulator.evaluation import BASELINES


def _held(time: float, code: str = "dwell", wants: str = "disable to off") -> Held:
    return Held(time, code, wants, f"wants {wants}", {})


def test_holds_group_into_stretches_of_one_gate_and_one_change() -> None:
    held = [_held(0), _held(30), _held(60, "capacity"), _held(90, "capacity"), _held(300, "capacity"),
            _held(330, "capacity", "enable to k=2")]  # fmt: skip
    stretches = [(first.time, last.time, count, first.code) for first, last, count in _stretches(held, 45.0)]
    assert stretches == [
        (0, 30, 2, "dwell"),
        (60, 90, 2, "capacity"),
        (300, 300, 1, "capacity"),
        (330, 330, 1, "capacity"),
    ]


@pytest.mark.slow
def test_a_burst_cell_shows_the_late_disable_and_what_held_it(capsys: pytest.CaptureFixture[str]) -> None:
    main(["8b-burst", "steep", "--hours", "2"])
    out = capsys.readouterr().out
    for name in ("auto", *BASELINES):
        assert re.search(rf"^  {re.escape(name)} +mean +\d+\.\d+ ms +p99 +\d+\.\d+ ms +restarts \d+", out, re.M)
    assert re.search(r"^best static \S+: Auto [+-]\d+\.\d% against it$", out, re.M)
    assert re.search(r"^  auto +(\s+\d+\.\d){2}$", out, re.M)  # two hours, one mean each
    changes = out.split("changes:")[1].split("held back")[0]
    assert re.search(r"h  disable \(loss; B̂ \d+, at rollout end \d+\): S\(k=1", changes)
    held = out.split("held back")[1]
    stretch = re.search(r"h x(\d+) dwell \(B̂ \d+.*\): wants disable to off", held)
    assert stretch is not None
    assert int(stretch[1]) >= 1


@pytest.mark.slow
def test_the_traced_auto_run_is_the_benchmark_cells(capsys: pytest.CaptureFixture[str]) -> None:
    # The fleets of one simulation share its per-step noise: the trace must run the benchmark's fleets, all.
    case = next(c for c in CASES if c.name == "8b-burst")
    record = run_cell((case, "steep", 0, 2.0))
    main(["8b-burst", "steep", "--hours", "2"])
    out = capsys.readouterr().out
    traced = re.search(r"^  auto +mean +(\d+\.\d+) ms +p99 +(\d+\.\d+) ms +restarts (\d+)", out, re.M)
    assert traced is not None
    auto = record["runs"]["auto"]
    assert traced.groups() == (f"{auto['tpot_mean'] * 1e3:.2f}", f"{auto['tpot_p99'] * 1e3:.2f}", str(auto["restarts"]))
