"""`specfleet demo --short`, as CI runs it: it finishes, and writes its PNG and summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specfleet.operator.cli import main

pytestmark = pytest.mark.slow


def test_the_short_demo_writes_its_timeline_and_summary(tmp_path: Path) -> None:
    assert main(["demo", "--short", "--no-live", "--out", str(tmp_path)]) == 0
    png = tmp_path / "timeline.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((tmp_path / "summary.json").read_text())
    names = [row["name"] for row in summary["rows"]]
    assert names[0] == "live"
    assert {"sim off", "sim k=3", "sim auto"} <= set(names)
    live = summary["rows"][0]
    assert live["requests"] > 100
    assert 0 < live["tpot_mean"] < 0.1
