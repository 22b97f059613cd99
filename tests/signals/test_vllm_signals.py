"""Both readers against the real vLLM engine (n-gram speculation, k=3), scraped by the real Prometheus.

The expected acceptance is computed by hand from two `/metrics` snapshots taken around a burst of real
requests. Prometheus stores what it scrapes from vLLM's prometheus_client exporter under the name it
negotiates (`vllm:` or `vllm_`), so the reader matching these numbers proves the spelling handling.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from specfleet.operator.api.types import Signals
from specfleet.operator.signals.model import FleetTarget, LabelMapping, PodEndpoint
from specfleet.operator.signals.prometheus import PrometheusConfig, PrometheusReader
from specfleet.operator.signals.scrape import ScrapeReader
from tests.fixtures.prometheus import SCRAPE_INTERVAL_SECONDS, PrometheusServer
from tests.fixtures.vllm import EngineServer, complete, metric_value, scrape

pytestmark = [pytest.mark.slow, pytest.mark.engine]

K = 3
LABELS = LabelMapping()
DRAFTS = "spec_decode_num_drafts_total"
ACCEPTED = "spec_decode_num_accepted_tokens_total"
PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"
# Repetitive prompts: n-gram drafting finds their continuations in the prompt itself.
PROMPTS = (
    "the cat sat on the mat the cat sat on the mat the cat sat on the",
    "1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4 1 2",
    "red green blue red green blue red green blue red green",
)
QUIET_SECONDS = 2.5 * SCRAPE_INTERVAL_SECONDS  # long enough for Prometheus to scrape a still value


def by_hand(before: str, after: str) -> tuple[float, list[float]]:
    """L and a_i from the difference of two snapshots of the vLLM exposition."""

    def delta(name: str, **labels: str) -> float:
        return (metric_value(after, f"vllm:{name}", **labels) or 0.0) - (
            metric_value(before, f"vllm:{name}", **labels) or 0.0
        )

    drafts = delta(DRAFTS)
    assert drafts > 0, "the burst produced no verify rounds"
    positions = [delta(PER_POSITION, position=str(i)) / drafts for i in range(K)]
    return 1 + delta(ACCEPTED) / drafts, positions


def drive(server: EngineServer) -> None:
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda prompt: complete(server, prompt, max_tokens=48), PROMPTS * 2))


def test_readers_match_hand_computed_acceptance(
    vllm_ngram_server: EngineServer, prometheus_server: PrometheusServer
) -> None:
    server = vllm_ngram_server
    labels = {
        LABELS.namespace: "engines",
        LABELS.deployment: "tiny-ngram",
        LABELS.config_hash: "k3",
        LABELS.pod: "tiny-ngram-0",
    }
    # In a cluster the PodMonitor's relabelling attaches these; here the discovered target carries them.
    prometheus_server.set_targets("vllm", [(server.url.removeprefix("http://"), labels)])
    target = FleetTarget("engines", "tiny-ngram", "k3", (PodEndpoint("tiny-ngram-0", server.metrics_url, "k3"),))
    drafts_selector = f'{{__name__=~"vllm[:_]{DRAFTS}", {LABELS.deployment}="tiny-ngram"}}'
    try:
        stored = prometheus_server.wait_for(drafts_selector, bool)
        time.sleep(QUIET_SECONDS)
        scraper = ScrapeReader()
        asyncio.run(scraper.read([target], 600))
        before, start = scrape(server), time.time()
        drive(server)
        time.sleep(QUIET_SECONDS)
        after = scrape(server)
        direct = asyncio.run(scraper.read([target], 600))
        time.sleep(QUIET_SECONDS)
        idle = metric_value(scrape(server), f"vllm:{DRAFTS}") == metric_value(after, f"vllm:{DRAFTS}")
        assert idle, "the engine was still drafting after the burst"
        end = time.time()
        # The window starts inside the quiet time before the burst and ends after Prometheus saw its end.
        reader = PrometheusReader(PrometheusConfig(url=prometheus_server.url, timeout_seconds=10))
        queried = asyncio.run(reader.read([target], end - start + 1.0, at=end))[target.key]
    finally:
        prometheus_server.set_targets("vllm", [])

    length, positions = by_hand(before, after)
    assert f"vllm:{DRAFTS}" in before  # vLLM exposes the colon spelling ...
    names = {row["metric"]["__name__"] for row in stored}
    assert names <= {f"vllm:{DRAFTS}", f"vllm_{DRAFTS}"}, names  # ... Prometheus may store either
    for result in (queried, direct[target.key]):
        assert isinstance(result, Signals), result
        assert result.acceptance_length == pytest.approx(length, rel=1e-3)
        assert result.acceptance_by_position == pytest.approx(positions, rel=1e-3, abs=1e-6)
        assert result.evidence is not None
        assert result.evidence.acceptance is not None
        assert result.evidence.acceptance.pods == 1
    assert length > 1.0  # n-gram drafting accepted tokens on the repetitive prompts
