"""Policy evaluation: the real policy and the baselines on one trace; the oracle; the CLI end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specfleet.operator.policy.belief import BELIEF_BATCHES
from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.cli import main
from specfleet.simulator.config import static, table
from specfleet.simulator.evaluation import (
    AUTO,
    BASELINES,
    BEST_TABLE,
    ORACLE,
    RESTART_ORACLE,
    TABLE_CANDIDATES,
    Evaluation,
    Scenario,
    Slo,
    crossover,
    evaluate,
    goal_report,
    oracle,
    restart_oracle,
    summarize,
)
from specfleet.simulator.fleet import RunResult
from specfleet.simulator.traces import builtin_trace
from specfleet.simulator.workload import Requests

ALL_RUNS = {AUTO, ORACLE, RESTART_ORACLE, BEST_TABLE, *BASELINES, *TABLE_CANDIDATES}


@pytest.fixture(scope="module")
def evaluation() -> Evaluation:
    trace = builtin_trace("step", 36.0, 0.5, ("sharegpt", "chat-fr"))
    return evaluate(Scenario("step", trace, replicas=2, restart_seconds=60))


@pytest.mark.slow
def test_every_policy_is_summarised(evaluation: Evaluation) -> None:
    assert set(evaluation.summaries) == ALL_RUNS
    for summary in evaluation.summaries.values():
        assert not summary.saturated
        assert summary.completed > 0.99
        assert summary.tpot_p50 <= summary.tpot_p90 <= summary.tpot_p99
        assert summary.e2e_p50 <= summary.e2e_p90 <= summary.e2e_p99
        assert summary.throughput > 0
        assert summary.goodput > 0
        assert sum(summary.config_share.values()) == pytest.approx(1.0)


@pytest.mark.slow
def test_static_runs_never_restart_and_auto_counts_its_changes(evaluation: Evaluation) -> None:
    for name in BASELINES:
        assert evaluation.summaries[name].restarts == 0
    auto = evaluation.summaries[AUTO]
    assert auto.restarts + auto.live_changes <= len(evaluation.decisions)


@pytest.mark.slow
def test_oracles_against_the_statics(evaluation: Evaluation) -> None:
    s = evaluation.summaries
    best = min(s[name].tpot_mean for name in (*BASELINES, *TABLE_CANDIDATES))
    assert s[ORACLE].tpot_mean <= best * 1.001
    assert s[ORACLE].tpot_mean <= s[RESTART_ORACLE].tpot_mean * 1.001  # paying for switches never helps
    assert s[RESTART_ORACLE].tpot_mean <= best * 1.001  # staying put is one of its choices
    assert s[BEST_TABLE].tpot_mean == min(s[name].tpot_mean for name in TABLE_CANDIDATES)


def _result(tpot: list[float], arrival: list[float]) -> RunResult:
    n = len(tpot)
    requests = Requests(np.array(arrival), np.zeros(n, np.int64), np.full(n, 100), np.full(n, 100))
    values = np.array(tpot, float)
    return RunResult(requests, ttft=np.full(n, 0.1), tpot=values, finish=np.array(arrival) + 1,
                     duration=max(arrival) + 1)  # fmt: skip


# Two windows of 100 s; the first quiet (one request), the second busy (ten requests).
ARRIVAL = [10.0] + [150.0 + i for i in range(10)]


def test_restart_oracle_pays_for_a_restart_bound_switch_and_not_for_a_live_one() -> None:
    off = _result([0.010] + [0.020] * 10, ARRIVAL)  # better while quiet... and worse while busy
    spec = _result([0.005] + [0.030] * 10, ARRIVAL)
    free, _ = oracle({"k=3": spec, "off": off}, 100.0)
    assert free.restarts == 1
    runs, configs = {"k=3": spec, "off": off}, {"k=3": static(3), "off": SpecConfig.off()}
    cheap, _ = restart_oracle(runs, configs, 100.0, replicas=4, restart_seconds=0.0)
    assert cheap.restarts == 1
    assert np.nanmean(cheap.tpot) == pytest.approx(np.nanmean(free.tpot))
    # A costly roll: the load curve says each request pays more than the switch gains, so it stays.
    costly, timeline = restart_oracle(runs, configs, 100.0, replicas=4, restart_seconds=10_000.0)
    assert costly.restarts == 0
    assert len({name for _, name in timeline}) == 1
    # Between two tables of the same startup k the switch is live: free whatever a restart would cost.
    tables = {"a": table(((8, 3), (1 << 20, 1))), "b": table(((64, 3), (1 << 20, 3)))}
    live, _ = restart_oracle({"a": spec, "b": off}, tables, 100.0, replicas=4, restart_seconds=10_000.0)
    assert (live.restarts, live.live_changes) == (0, 1)


def test_no_oracle_credit_where_nothing_finished() -> None:
    stuck = _result([0.010, *[float("nan")] * 10], ARRIVAL)
    half = _result([0.012, *([0.02] * 5), *[float("nan")] * 5], ARRIVAL)
    free, timeline = oracle({"a": stuck, "b": half}, 100.0)
    # Neither finished 99 % of the busy window: the choice holds, and those requests stay unfinished.
    assert [name for _, name in timeline] == ["a", "a"]
    assert np.isnan(free.tpot[1:]).all()


@pytest.mark.slow
def test_goal_report_compares_auto_to_the_best_static(evaluation: Evaluation) -> None:
    report = goal_report(evaluation)
    s = evaluation.summaries
    assert report.best_static == min(BASELINES, key=lambda name: s[name].tpot_mean)
    assert report.gain_vs_best_static == pytest.approx(1 - s[AUTO].tpot_mean / s[report.best_static].tpot_mean)
    assert set(report.met) == {
        "gain >= 10% vs best static",
        "within 3% of restart-paying oracle",
        "p99 TPOT <= best static",
        "<= 1 restart-bound change/hour",
    }


def test_crossover_is_where_off_beats_every_speculating_static() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    curves = {"off": (x, np.array([20.0, 21.0, 22.0, 23.0])), "k=3": (x, np.array([10.0, 15.0, 23.0, 30.0]))}
    assert crossover(curves) == 3.0
    assert crossover({"off": (x, x + 100), "k=3": (x, x)}) is None


@pytest.mark.slow
def test_cli_replays_a_csv_trace(tmp_path: Path) -> None:
    trace = tmp_path / "yesterday.csv"
    trace.write_text("time,qps,code-en,chat-fr\n0,8,1,0\n600,30,0,1\n1200,8,1,1\n")
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: specfleet.dev/v1alpha1\nkind: SpeculationPolicy\nspec:\n  cooldownSeconds: 300\n")
    out = tmp_path / "out"
    code = main(["--trace", str(trace), "--policy", str(policy), "--replicas", "2", "--out", str(out)])
    assert code == 0
    assert (out / "latency_vs_load.png").stat().st_size > 10_000
    assert (out / "timeline.png").stat().st_size > 10_000
    assert (out / "belief.png").stat().st_size > 10_000
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["summaries"]) == ALL_RUNS
    # What the fit believed at the end, beside the simulated fleet's own speed-up, for every k it may choose.
    believed = summary["belief_vs_truth"]
    assert {p["batch"] for p in believed} == set(BELIEF_BATCHES)
    assert {p["k"] for p in believed} == set(range(1, 6))
    assert all(p["fitted"] > 0 and p["std"] > 0 and p["truth"] > 0 for p in believed)
    # The truth is the fleet's: speculation past the knee loses there, whatever the fit says.
    assert min(p["truth"] for p in believed if p["batch"] == 1) > max(p["truth"] for p in believed if p["batch"] == 256)


def test_a_run_that_leaves_requests_unfinished_is_flagged_saturated() -> None:
    stuck = _result([0.010, 0.011, *[float("nan")] * 9], ARRIVAL)
    summary = summarize("k=5", stuck, Slo(), duration=160.0)
    assert summary.saturated
    assert summary.completed == pytest.approx(2 / 11)
    assert not summarize("off", _result([0.01] * 11, ARRIVAL), Slo(), duration=160.0).saturated
