"""`specfleet profile` on the real engine with a draft model: L and per-position acceptance from its counters."""

from __future__ import annotations

from pathlib import Path

import pytest

from specfleet.profile.report import ProfileReport
from tests.fixtures.vllm import ControlToken, EngineServer
from tests.profile.engines import counters, live_table, run_profile, write_requests

pytestmark = [pytest.mark.slow, pytest.mark.engine]
METHOD = "draft_model"  # the engine conftest.py starts for this module


def test_the_report_acceptance_is_the_engine_counters_over_the_points(
    live_engine: EngineServer, control_token: ControlToken, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = write_requests(tmp_path / "requests.jsonl")
    startup = live_table(live_engine)
    report_path = tmp_path / "report.json"
    drafts_before, accepted_before = counters(live_engine)
    status = run_profile(live_engine, control_token, requests, "--k", "0,3", "--concurrency", "1,2",
                         "--requests-per-point", "6", "--json", str(report_path))  # fmt: skip
    drafts_after, accepted_after = counters(live_engine)
    assert status == 0, capsys.readouterr().err
    report = ProfileReport.model_validate_json(report_path.read_text())
    assert [(p.k, p.concurrency) for p in report.points] == [(0, 1), (0, 2), (3, 1), (3, 2)]
    spec = [p for p in report.points if p.k == 3]
    drafts = sum(p.counters.drafts for p in spec if p.counters)
    accepted = sum(p.counters.accepted for p in spec if p.counters)
    assert drafts == pytest.approx(drafts_after - drafts_before)
    assert accepted == pytest.approx(accepted_after - accepted_before)
    for point in spec:
        assert point.counters is not None
        assert point.counters.drafts > 0
        length = point.acceptance_length
        assert length == pytest.approx(1 + point.counters.accepted / point.counters.drafts)
        assert length is not None
        assert length > 3.0  # greedy self-drafting: nearly every drafted token is what the target picks
        positions = point.acceptance_by_position
        assert positions is not None
        assert len(positions) == 3
        assert positions == sorted(positions, reverse=True)  # a position is reached only past the one before
        assert point.step_seconds == pytest.approx((point.tpot_seconds.mean or 0) * length)
    assert {(c.k, c.metric) for c in report.crossovers} == {(3, "throughput"), (3, "tpot")}
    assert live_table(live_engine) == startup
