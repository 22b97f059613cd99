"""The live-table contract (pure): what the control endpoint accepts, refuses, and with which status."""

from __future__ import annotations

from typing import Any

import pytest

from specfleet.runtime.engine_args import SpeculativeConfig
from specfleet.runtime.table_control import (
    LiveTable,
    TableRequestError,
    authorize,
    parse_table_request,
    startup_table,
)

K = 3
CURRENT = LiveTable(version=4, ranges=((1, 4, 3), (5, 64, 1)))
ALLOWED = (0, 1, 3)


def refusal(body: object, allowed_k: tuple[int, ...] | None = ALLOWED) -> TableRequestError:
    with pytest.raises(TableRequestError) as caught:
        parse_table_request(body, K, CURRENT, allowed_k=allowed_k)
    return caught.value


def test_accepted_table_gets_the_next_version_in_vllms_range_form() -> None:
    table = parse_table_request({"table": [[1, 2, 1], [3, 8, 0]], "expectedVersion": 4}, K, CURRENT)
    assert table == LiveTable(version=5, ranges=((1, 2, 1), (3, 8, 0)))
    assert table.to_json() == {"version": 5, "table": [[1, 2, 1], [3, 8, 0]]}
    assert table.label() == "1-2:1,3-8:0"


def test_expected_version_is_optional() -> None:
    assert parse_table_request({"table": [[1, 1, 3]]}, K, CURRENT).version == CURRENT.version + 1


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ([[1, 4, 1]], "JSON object"),
        ({}, "non-empty list"),
        ({"table": []}, "non-empty list"),
        ({"table": [[1, 4]]}, "[first batch, last batch, k]"),
        ({"table": [[1, 4, "3"]]}, "integers"),
        ({"table": [[1, 4, True]]}, "integers"),
        ({"table": [[2, 4, 1]]}, "contiguous from batch 1"),
        ({"table": [[1, 4, 1], [6, 8, 1]]}, "contiguous from batch 1"),
        ({"table": [[1, 4, 1], [5, 3, 1]]}, "contiguous from batch 1"),
        ({"table": [[1, 4, -1]]}, "outside 0..3"),
        ({"table": [[1, 4, 4]]}, "outside 0..3"),
        ({"table": [[1, 4, 1]], "expectedVersion": "4"}, "expectedVersion"),
        ({"table": [[1, 4, 1]], "version": 4}, "unknown keys ['version']"),
    ],
)
def test_malformed_tables_and_k_above_startup_are_400(body: Any, words: str) -> None:
    error = refusal(body)
    assert error.status == 400
    assert words in error.message, error.message


def test_k_the_startup_table_does_not_run_is_400_naming_the_allowed_values() -> None:
    error = refusal({"table": [[1, 4, 2]]})
    assert error.status == 400
    for words in ("k=2", "(0, 1, 3)", "restart"):
        assert words in error.message, error.message
    # Without the start-up k values only 0..startup k is checked.
    assert parse_table_request({"table": [[1, 4, 2]]}, K, CURRENT).ranges == ((1, 4, 2),)


def test_stale_expected_version_is_409_after_the_table_itself_checks_out() -> None:
    error = refusal({"table": [[1, 4, 1]], "expectedVersion": 3})
    assert (error.status, "stale" in error.message) == (409, True)
    assert refusal({"table": [[1, 4, 9]], "expectedVersion": 3}).status == 400


@pytest.mark.parametrize(
    ("header", "token", "status"),
    [
        (None, "secret", 401),
        ("", "secret", 401),
        ("Basic secret", "secret", 401),
        ("Bearer", "secret", 401),
        ("Bearer wrong", "secret", 403),
        ("Bearer secretx", "secret", 403),
        ("Bearer secret", None, 403),
        ("Bearer secret", "", 403),
    ],
)
def test_authorize_refuses_without_the_pods_token(header: str | None, token: str | None, status: int) -> None:
    with pytest.raises(TableRequestError) as caught:
        authorize(header, token)
    assert caught.value.status == status


@pytest.mark.parametrize("header", ["Bearer secret", "bearer secret", "Bearer  secret "])
def test_authorize_accepts_the_token(header: str) -> None:
    authorize(header, "secret")


def test_startup_table_is_version_0_of_what_the_engine_args_render() -> None:
    spec = SpeculativeConfig(method="ngram", k=K, schedule=((4, 3), (64, 1)))
    assert startup_table(spec) == LiveTable(version=0, ranges=((1, 4, 3), (5, 64, 1)))
    assert spec.to_json_obj()["num_speculative_tokens_per_batch_size"] == [[1, 4, 3], [5, 64, 1]]
    assert startup_table(SpeculativeConfig(method="ngram", k=K)) is None
    assert startup_table(None) is None


def test_from_json_reads_back_to_json() -> None:
    assert LiveTable.from_json(CURRENT.to_json()) == CURRENT
    with pytest.raises(TableRequestError):
        LiveTable.from_json({"table": [[1, 4, 1]]})
