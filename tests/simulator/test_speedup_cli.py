"""`specfleet simulate speedup`: closed-batch speed-up at the caller's acceptance, k or table, and lengths."""

from __future__ import annotations

import json
import re

import pytest

from specfleet.simulator.cli import main, parse_table


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert main(["speedup", "--json", *args]) == 0
    return dict(json.loads(capsys.readouterr().out))


def _points(report: dict[str, object]) -> dict[int, dict[str, float]]:
    points = report["points"]
    assert isinstance(points, list)
    return {int(p["batch"]): p for p in points}


def test_speedup_falls_with_batch_and_reads_back_the_acceptance(capsys: pytest.CaptureFixture[str]) -> None:
    report = _json(capsys, "--acceptance", "0.66,0.38,0.21", "--k", "3", "--batch", "1,128")
    points = _points(report)
    assert points[1]["speedup"] == pytest.approx(1.71, abs=0.1)  # the published ShareGPT row
    assert points[128]["speedup"] < points[1]["speedup"] - 0.2
    assert points[1]["acceptance_length"] == pytest.approx(2.25, abs=0.15)
    assert report["config"] == "k=3"


def test_a_draft_model_loses_at_high_batch(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--model", "qwen3-8b", "--method", "draft_model", "--acceptance", "0.74,0.53,0.37", "--batch", "1,128")
    points = _points(_json(capsys, *args))
    assert points[1]["speedup"] > 1.2
    assert points[128]["speedup"] < 1.0


def test_a_table_uses_its_row_and_k0_rows_pay_the_tax(capsys: pytest.CaptureFixture[str]) -> None:
    points = _points(_json(capsys, "--table", "16:5,32:4,64:3,128:1,*:0", "--batch", "8,200"))
    assert points[8]["k"] == 5
    assert points[200]["k"] == 0
    assert points[200]["speedup"] == pytest.approx(1 / 1.216, abs=0.02)


def test_the_terminal_table_has_a_row_per_batch(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["speedup", "--batch", "2,4", "--gpu", "H200"]) == 0
    out = capsys.readouterr().out
    assert "H200" in out
    assert "speed-up" in out


def test_bad_input_is_one_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["speedup", "--acceptance", "0.3,0.5", "--batch", "0"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert re.match(r"specfleet simulate speedup: --acceptance.*; --batch", line)
    assert main(["speedup", "--table", "32:4,16:5"]) == 2
    assert "--table: table rows must be strictly ascending" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["16", "a:1", "16:-1", "*:0", "32:2,16:1"])
def test_malformed_tables_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="table"):
        parse_table(text)


def test_a_table_row_star_covers_every_larger_batch() -> None:
    config = parse_table("16:5,*:1")
    assert config.k == 5
    assert config.k_at(10_000) == 1
