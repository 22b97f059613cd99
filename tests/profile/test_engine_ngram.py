"""`specfleet profile` on the real engine with n-gram speculation: a sweep over k (live table) and concurrency."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from specfleet.profile.report import ProfileReport
from tests.fixtures.vllm import ControlToken, EngineServer
from tests.profile.engines import (
    counters,
    live_table,
    profile_args,
    run_profile,
    write_requests,
)

pytestmark = [pytest.mark.slow, pytest.mark.engine]
METHOD = "ngram"  # the engine conftest.py starts for this module


def test_a_sweep_reports_every_point_with_the_engine_counters_of_its_interval(
    live_engine: EngineServer, control_token: ControlToken, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = write_requests(tmp_path / "requests.jsonl")
    startup = live_table(live_engine)
    report_path, png = tmp_path / "report.json", tmp_path / "report.png"
    drafts_before, accepted_before = counters(live_engine)
    status = run_profile(live_engine, control_token, requests, "--k", "0,1,3", "--concurrency", "1,2,4",
                         "--requests-per-point", "8", "--json", str(report_path), "--png", str(png))  # fmt: skip
    drafts_after, accepted_after = counters(live_engine)
    out = capsys.readouterr()
    assert status == 0, out.err
    report = ProfileReport.model_validate_json(report_path.read_text())
    assert [(p.k, p.concurrency) for p in report.points] == [(k, c) for k in (0, 1, 3) for c in (1, 2, 4)]
    assert all(p.requests == 8 and p.output_tokens == 8 * 24 for p in report.points)
    # Nothing but the points ran between the two scrapes, so the points' counters add up to the engine's.
    assert all(p.counters is not None for p in report.points)
    assert sum(p.counters.drafts for p in report.points if p.counters) == pytest.approx(drafts_after - drafts_before)
    accepted = sum(p.counters.accepted for p in report.points if p.counters)
    assert accepted == pytest.approx(accepted_after - accepted_before)
    assert all(p.counters and p.counters.drafts == 0 for p in report.points if p.k == 0)  # k=0 drafts nothing
    drafted = [p for p in report.points if p.counters and p.counters.drafts > 0]
    assert drafted, "n-gram drafting found no match in any point"
    for point in drafted:
        assert point.counters is not None
        assert point.acceptance_length == pytest.approx(1 + point.counters.accepted / point.counters.drafts)
        assert sum(point.counters.accepted_by_position) == pytest.approx(point.counters.accepted)
        assert point.acceptance_by_position is not None
        assert len(point.acceptance_by_position) == 3
    for point in report.points:
        assert point.throughput_tokens_per_second > 0
        assert point.ttft_seconds.p50 is not None
        assert point.tpot_seconds.mean is not None
    assert sorted((c.k, c.metric) for c in report.crossovers) == [
        (1, "throughput"), (1, "tpot"), (3, "throughput"), (3, "tpot"),
    ]  # fmt: skip
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = out.out.splitlines()
    assert table[0].split()[:2] == ["k", "conc"]
    assert len([line for line in table if line[:1].isdigit()]) == 9
    assert "[9/9] k=3 concurrency 4" in out.err
    assert live_table(live_engine) == startup  # the sweep put the table back


def test_ctrl_c_keeps_the_points_measured_so_far(
    live_engine: EngineServer, control_token: ControlToken, tmp_path: Path
) -> None:
    requests = write_requests(tmp_path / "requests.jsonl")
    startup = live_table(live_engine)
    report_path = tmp_path / "report.json"
    args = profile_args(live_engine, control_token, requests, "--k", "0,3", "--concurrency", "1,2",
                        "--requests-per-point", "400", "--json", str(report_path))  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "specfleet.operator.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert process.stderr is not None
    first = process.stderr.readline()  # the first point's progress line: one point is in
    assert first.startswith("[1/4] k=0 concurrency 1: 400 requests"), first
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    report = json.loads(report_path.read_text())
    assert report["interrupted"] is True
    assert 1 <= len(report["points"]) < 4
    assert "interrupted:" in out
    assert live_table(live_engine) == startup


def test_requests_the_engine_refuses_stop_the_sweep_with_one_line(
    live_engine: EngineServer, control_token: ControlToken, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text(json.dumps({"prompt": "the cat", "max_tokens": 100_000}) + "\n")  # above max-model-len
    report_path = tmp_path / "report.json"
    status = run_profile(live_engine, control_token, requests, "--k", "3", "--concurrency", "1",
                         "--json", str(report_path))  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1
    assert len(err) == 1, err
    assert err[0].startswith("specfleet profile: k=3, concurrency 1, request line 1: the engine answered HTTP 400")
    assert not report_path.exists()  # no point was measured
