"""The files between the launcher and vLLM's engine core, and the table info metric read from them."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from specfleet.runtime.table_channel import (
    APPLIED_FILE,
    ChangedFile,
    EngineAnswer,
    read_text,
    register_table_info,
    write_json_atomically,
)
from specfleet.runtime.table_control import LiveTable

ANSWER = EngineAnswer(applied=LiveTable(2, ((1, 4, 3), (5, 256, 1))), startup_k=3, allowed_k=(1, 3), request="r1")


def test_engine_answer_round_trips_through_its_file(tmp_path: Path) -> None:
    path = tmp_path / APPLIED_FILE
    write_json_atomically(path, ANSWER.to_json())
    assert EngineAnswer.load(path) == ANSWER
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_table_info_metric_follows_the_engines_answer(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    register_table_info(str(tmp_path), registry)
    assert b"specfleet_speculation_table_info" not in generate_latest(registry)  # engine core not up yet

    write_json_atomically(tmp_path / APPLIED_FILE, ANSWER.to_json())
    assert b'specfleet_speculation_table_info{table="1-4:3,5-256:1",version="2"} 1.0' in generate_latest(registry)

    refused = EngineAnswer(ANSWER.applied, 3, (1, 3), request="r2", refused="k=2 is not one of ...")
    write_json_atomically(tmp_path / APPLIED_FILE, refused.to_json())
    assert b'version="2"' in generate_latest(registry)  # a refusal leaves the table in force

    write_json_atomically(tmp_path / APPLIED_FILE, {**ANSWER.to_json(), "version": 3, "table": [[1, 8, 1]]})
    exposition = generate_latest(registry)
    assert b'specfleet_speculation_table_info{table="1-8:1",version="3"} 1.0' in exposition
    assert b'version="2"' not in exposition


def test_changed_file_reads_a_rotated_token(tmp_path: Path) -> None:
    path = tmp_path / "token"
    token = ChangedFile(path, read_text)
    assert token.read() is None
    path.write_text("first")
    assert token.read() == "first"
    replacement = tmp_path / "new"
    replacement.write_text("second")
    replacement.replace(path)  # how a Secret volume swaps its files
    assert token.read() == "second"
