"""What each of a demo run's changes bought: live TPOT until the next change against keeping what it replaced."""

from __future__ import annotations

import numpy as np
import pytest

from specfleet.demo.effects import change_effects
from specfleet.demo.engine import Finished
from specfleet.demo.fleet import Completed
from specfleet.demo.report import Row, closing_lines, served_tables
from specfleet.demo.timeline import DecisionRecord
from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.config import label

TABLE = SpecConfig(enabled=True, k=3, schedule=((48, 3), (96, 2), (1024, 1)))
SPECS = {"off": SpecConfig.off(), "k=2": SpecConfig(enabled=True, k=2), "k=3": SpecConfig(enabled=True, k=3)}


def _served(config: str, arrival: float, tpot: float) -> Completed:
    spec = SPECS.get(config, TABLE)
    return Completed("chat", spec, Finished(arrival=arrival, ttft=0.1, tpot=tpot, e2e=1.0, output=100))


CHANGES = [
    DecisionRecord(10.0, "chat", "set-k", "gain: S(k=2)=1.06 vs k=3", True),
    DecisionRecord(20.0, "chat", "disable", "loss", True),
]
COMPLETED = [
    *(_served("k=3", t, 0.010) for t in (2.0, 5.0, 9.0)),
    *(_served("k=2", t, 0.012) for t in (11.0, 15.0, 19.0)),
    _served("k=3", 10.5, 0.020),  # a request the old pods still served after the change
    *(_served("off", t, 0.009) for t in (21.0, 25.0)),
]
# The static runs on the same trace: k=3 is slow from 10 s on, k=2 from 20 s on.
ARRIVAL = np.array([5.0, 12.0, 18.0, 22.0, 28.0])
BASELINES = {
    "k=3": (ARRIVAL, np.array([0.010, 0.016, 0.018, 0.020, np.nan])),
    "k=2": (ARRIVAL, np.array([0.011, 0.012, 0.013, 0.015, 0.017])),
}


def test_each_change_is_judged_against_the_configuration_the_pods_ran_before_it() -> None:
    first, second = change_effects(CHANGES, COMPLETED, BASELINES, duration=30.0)
    assert (first.replaced, first.until) == ("k=3", 20.0)
    assert first.live_tpot == pytest.approx((0.012 * 3 + 0.020) / 4)
    assert first.kept_tpot == pytest.approx(0.017)
    assert first.bought == pytest.approx(1 - 0.014 / 0.017)
    assert second.replaced == "k=2"
    assert second.live_tpot == pytest.approx(0.009)
    assert second.kept_tpot == pytest.approx(0.016)  # k=2's unfinished request is not counted
    assert second.bought is not None
    assert second.bought > 0


def test_a_configuration_without_a_static_baseline_is_compared_with_nothing() -> None:
    (effect,) = change_effects(CHANGES[:1], [_served(label(TABLE), 5.0, 0.01)], BASELINES, duration=30.0)
    assert effect.replaced == "table(48:3,96:2,1024:1)"
    assert effect.kept_tpot is None
    assert effect.bought is None


def test_the_tables_the_pods_ran_are_told_apart_by_their_rows_and_priced_like_static_settings() -> None:
    other = SpecConfig(enabled=True, k=3, schedule=((64, 3), (1024, 1)))
    finished = Finished(arrival=13.0, ttft=0.1, tpot=0.01, e2e=1.0, output=9)
    completed = [_served("k=3", 1.0, 0.01), _served(label(TABLE), 12.0, 0.01), _served(label(TABLE), 15.0, 0.01)]
    completed.append(Completed("chat", other, finished))
    assert served_tables(completed) == {label(TABLE): TABLE, label(other): other}
    # With the table simulated as a baseline, the change away from it is priced against keeping it.
    kept = {**BASELINES, label(TABLE): (ARRIVAL, np.array([0.010, 0.011, 0.011, 0.012, 0.012]))}
    changes = [DecisionRecord(20.0, "chat", "disable", "loss", True)]
    (effect,) = change_effects(changes, [*completed, _served("off", 22.0, 0.009)], kept, duration=30.0)
    assert effect.replaced == label(TABLE)
    assert effect.kept_tpot == pytest.approx(0.012)
    assert effect.bought == pytest.approx(1 - 0.009 / 0.012)


def _row(name: str, tpot: float) -> Row:
    return Row(name, 100, tpot, tpot, 1.0, 1.0, 1000.0, 0)


def test_the_closing_lines_say_where_the_live_row_stands_and_what_each_change_bought() -> None:
    live = _row("live", 0.0105)
    rows = [live, _row("sim k=1", 0.0100), _row("sim off", 0.0110), _row("sim auto", 0.0090)]
    lines = closing_lines(live, rows, change_effects(CHANGES, COMPLETED, BASELINES, duration=30.0))
    assert lines[0] == "live mean TPOT 10.50 ms is above the best static setting (k=1, 10.00 ms): -5.0%"
    assert "10-20 s  set-k (gain: S(k=2)=1.06 vs k=3): 14.00 ms vs 17.00 ms at k=3 (+17.6%)" in lines[2]
    assert "at k=2" in lines[3]
    assert closing_lines(_row("live", 0.0095), rows, [])[1:] == ["the operator made no change"]
    assert "at or below" in closing_lines(_row("live", 0.0095), rows, [])[0]
    # The best table held all run is a static setting too.
    with_table = [*rows, _row("sim best-table", 0.0094), _row("sim restart-oracle", 0.0080)]
    assert closing_lines(_row("live", 0.0095), with_table, [])[0] == (
        "live mean TPOT 9.50 ms is above the best static setting (best-table, 9.40 ms): -1.1%"
    )
