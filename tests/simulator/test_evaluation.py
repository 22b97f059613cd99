"""Policy evaluation: the real policy and the baselines on one trace; the oracle; the CLI end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specfleet.operator.simulator.cli import main
from specfleet.operator.simulator.evaluation import (
    AUTO,
    BASELINES,
    ORACLE,
    Evaluation,
    Scenario,
    crossover,
    evaluate,
    goal_report,
)
from specfleet.operator.simulator.traces import builtin_trace

# Each evaluation simulates Auto and five baselines: tens of seconds on two cores.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def evaluation() -> Evaluation:
    trace = builtin_trace("step", 36.0, 0.5, ("sharegpt", "chat-fr"))
    return evaluate(Scenario("step", trace, replicas=2, restart_seconds=60))


def test_every_policy_is_summarised(evaluation: Evaluation) -> None:
    assert set(evaluation.summaries) == {AUTO, ORACLE, *BASELINES}
    for summary in evaluation.summaries.values():
        assert summary.completed > 0.99
        assert summary.tpot_p50 <= summary.tpot_p90 <= summary.tpot_p99
        assert summary.e2e_p50 <= summary.e2e_p90 <= summary.e2e_p99
        assert summary.throughput > 0
        assert summary.goodput > 0
        assert sum(summary.config_share.values()) == pytest.approx(1.0)


def test_static_runs_never_restart_and_auto_counts_its_changes(evaluation: Evaluation) -> None:
    for name in BASELINES:
        assert evaluation.summaries[name].restarts == 0
    assert evaluation.summaries[AUTO].restarts == len(evaluation.decisions)


def test_oracle_is_at_least_as_good_as_every_static(evaluation: Evaluation) -> None:
    oracle = evaluation.summaries[ORACLE].tpot_mean
    assert oracle <= min(evaluation.summaries[name].tpot_mean for name in BASELINES) * 1.001


def test_goal_report_compares_auto_to_the_best_static(evaluation: Evaluation) -> None:
    report = goal_report(evaluation)
    s = evaluation.summaries
    assert report.best_static == min(BASELINES, key=lambda name: s[name].tpot_mean)
    assert report.gain_vs_best_static == pytest.approx(1 - s[AUTO].tpot_mean / s[report.best_static].tpot_mean)
    assert set(report.met) == {
        "gain >= 10% vs best static",
        "within 3% of oracle",
        "p99 TPOT <= best static",
        "<= 1 restart-bound change/hour",
    }


def test_crossover_is_where_off_beats_every_speculating_static() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    curves = {"off": (x, np.array([20.0, 21.0, 22.0, 23.0])), "k=3": (x, np.array([10.0, 15.0, 23.0, 30.0]))}
    assert crossover(curves) == 3.0
    assert crossover({"off": (x, x + 100), "k=3": (x, x)}) is None


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
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["summaries"]) == {AUTO, ORACLE, *BASELINES}
