"""Crash safety: SIGKILL the operator process during reconciles and rollouts; nothing is lost or doubled."""

from __future__ import annotations

import pathlib

import pytest

from specfleet.emulator import EmulatorServer
from tests.fixtures.prometheus import PrometheusServer
from tests.reliability.crash import Campaign, history_violation

KILLS = 12


def _decision(time: str) -> dict[str, str]:
    return {"time": time, "action": "hold", "reason": "r"}


def test_history_check_accepts_growth_and_trimming_only() -> None:
    old = {"decisions": [_decision("a"), _decision("b")], "policyState": {"x": 1}}
    assert history_violation(old, {"decisions": [*old["decisions"], _decision("c")], "policyState": {"x": 2}}) is None
    assert history_violation(old, {**old, "decisions": [_decision("b")]}) is not None  # dropped below the cap
    assert history_violation(old, {**old, "decisions": [_decision("a"), _decision("c")]}) is not None
    assert history_violation(old, {"decisions": old["decisions"]}) == "policyState reset"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_random_sigkills_lose_nothing_and_double_nothing(
    emulator: EmulatorServer,
    prometheus_server: PrometheusServer,
    kubeconfig: pathlib.Path,
    namespace: str,
    tmp_path: pathlib.Path,
) -> None:
    report = Campaign(emulator, prometheus_server, kubeconfig, tmp_path, f"{namespace}-crash", seed=7).run(KILLS)
    print("\n".join(report.lines()))
    assert report.kills == KILLS
    assert report.child_creates, "the campaign created no children"
    assert report.duplicates == {}
    assert report.history_violations == []
    assert report.unconverged == []
    assert report.double_restarts == {}
    assert report.crash_lines == []
