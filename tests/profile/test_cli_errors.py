"""`specfleet profile` on bad input: one clear line on stderr, no traceback, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specfleet.demo.local_engine import free_port
from specfleet.operator.cli import main

GOOD = json.dumps({"prompt": "the cat", "max_tokens": 4})


def _requests(tmp_path: Path, lines: list[str]) -> Path:
    requests = tmp_path / "requests.jsonl"
    requests.write_text("\n".join(lines) + "\n")
    return requests


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert "Traceback" not in captured.err
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("specfleet profile: ")
    return lines[0]


def test_malformed_jsonl_names_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    requests = _requests(tmp_path, [GOOD, GOOD, '{"prompt": "unterminated'])
    report = tmp_path / "report.json"
    status = main(["profile", str(requests), "--engine", "0=http://127.0.0.1:9", "--concurrency", "1",
                   "--json", str(report)])  # fmt: skip
    assert status == 2
    assert f"{requests}:3: not JSON" in _one_error_line(capsys)
    assert not report.exists()


def test_an_unreachable_engine_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    requests = _requests(tmp_path, [GOOD])
    report = tmp_path / "report.json"
    url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    status = main(["profile", str(requests), "--engine", f"0={url}", "--concurrency", "1,2", "--json", str(report)])
    assert status == 1
    assert f"cannot reach the engine at {url}" in _one_error_line(capsys)
    assert not report.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "0=http://127.0.0.1:9", "--concurrency", "0"], "--concurrency: '0' must list integers ≥ 1"),
        (["--concurrency", "1"], "nothing to profile"),
        (["--live", "http://127.0.0.1:9", "--k", "1", "--concurrency", "1"], "go together"),
        (["--live", "http://127.0.0.1:9", "--control-url", "http://127.0.0.1:10", "--k", "1", "--concurrency", "1",
          "--control-token-file", "/nonexistent/token"], "cannot read /nonexistent/token"),
        (["--engine", "0=http://127.0.0.1:9", "--concurrency", "1", "--max-tokens", "0"], "--max-tokens"),
        (["--engine", "0=http://127.0.0.1:9", "--concurrency", "2,8", "--max-num-seqs", "4"], "above the engine's"),
    ],
)  # fmt: skip
def test_a_sweep_that_cannot_run_is_refused_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    requests = _requests(tmp_path, [GOOD])
    assert main(["profile", str(requests), *args]) == 2
    assert message in _one_error_line(capsys)


def test_a_missing_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["profile", str(tmp_path / "nope.jsonl"), "--engine", "0=http://127.0.0.1:9", "--concurrency", "1"]) == 2
    )
    assert "nope.jsonl: cannot read it" in _one_error_line(capsys)
