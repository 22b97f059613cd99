"""`specfleet demo --short`, as CI runs it (stdout a pipe, not a terminal): it finishes, writes its PNG and
summary, says where the operator's metrics and health endpoints are (and they answer), prints its tables
whole, and keeps Kopf's thread warning and any traceback off stderr; a reader that stops early ends it quietly."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

DEMO = [sys.executable, "-m", "specfleet.operator.cli", "demo", "--short"]
ENDPOINTS = re.compile(r"the operator's metrics at (http://\S+/metrics), health at (http://\S+/healthz)")


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def test_the_short_demo_off_a_terminal(tmp_path: Path) -> None:
    demo = subprocess.Popen([*DEMO, "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert demo.stdout is not None
    shown = []
    for line in demo.stdout:
        shown.append(line)
        if found := ENDPOINTS.search(line):
            assert "specfleet_decisions_total" in _get(found[1])  # reachable while it runs
            _get(found[2])
    _, errors = demo.communicate(timeout=180)
    assert demo.returncode == 0, errors
    output = "".join(shown)
    assert ENDPOINTS.search(output)
    # The summary whole, not cut to 80 columns ("reques…", "sim vllm-t…"):
    assert re.search(r"^ run +requests +mean +p90 +mean +p90 +tok/s +changes *$", output, re.MULTILINE)
    assert re.search(r"^ sim restart-oracle +\d+( +[\d.]+){6} *$", output, re.MULTILINE)
    assert "OS signals are ignored" not in errors
    assert "Traceback" not in errors

    png = tmp_path / "timeline.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((tmp_path / "summary.json").read_text())
    names = [row["name"] for row in summary["rows"]]
    assert names[0] == "live"
    assert {"sim off", "sim k=3", "sim auto"} <= set(names)
    live = summary["rows"][0]
    assert live["requests"] > 100
    assert 0 < live["tpot_mean"] < 0.1


def test_a_reader_that_stops_early_ends_the_demo_quietly(tmp_path: Path) -> None:
    """`specfleet demo --short | head -3`: no BrokenPipeError traceback, exit status 1."""
    demo = subprocess.Popen([*DEMO, "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert demo.stdout is not None
    head = [demo.stdout.readline() for _ in range(3)]
    demo.stdout.close()
    _, errors = demo.communicate(timeout=120)
    assert head[0].startswith("specfleet demo: starting")
    assert demo.returncode == 1
    assert "Traceback" not in errors
    assert "BrokenPipeError" not in errors
