"""Per-pod metrics: vLLM's names, the text exposition, and what the real signals code reads from it."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from specfleet.operator.policy.state import SpecConfig
from specfleet.operator.signals.scrape import parse_exposition
from specfleet.simulator.config import VLLM_DOCUMENTED_TABLE, static, table
from specfleet.simulator.feed import pod_samples
from specfleet.simulator.metrics import render_exposition
from tests.simulator.fleets import small_fleet

VLLM_FAMILIES = {
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:spec_decode_num_drafts": "counter",
    "vllm:spec_decode_num_draft_tokens": "counter",
    "vllm:spec_decode_num_accepted_tokens": "counter",
    "vllm:spec_decode_num_accepted_tokens_per_pos": "counter",
    "vllm:request_success": "counter",
    "vllm:request_time_per_output_token_seconds": "histogram",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
    "vllm:inter_token_latency_seconds": "histogram",
}


def _scrape(config: SpecConfig) -> str:
    sim = small_fleet(config, seconds=120)
    sim.run(120)
    return render_exposition(sim.pod(0), "meta-llama/Llama-3.1-8B-Instruct")


def test_exposition_parses_with_vllm_names_and_types() -> None:
    families = {f.name: f for f in text_string_to_metric_families(_scrape(static(3)))}
    for name, kind in VLLM_FAMILIES.items():
        assert families[name].type == kind, name
    positions = [s.labels["position"] for s in families["vllm:spec_decode_num_accepted_tokens_per_pos"].samples]
    assert positions == ["0", "1", "2"]  # fixed to the startup k
    for sample in families["vllm:num_requests_running"].samples:
        assert sample.labels == {"engine": "0", "model_name": "meta-llama/Llama-3.1-8B-Instruct"}


def test_histograms_are_cumulative_and_consistent_with_counters() -> None:
    families = {f.name: f for f in text_string_to_metric_families(_scrape(static(3)))}
    success = families["vllm:request_success"].samples[0].value
    tpot = families["vllm:request_time_per_output_token_seconds"].samples
    buckets = [s.value for s in tpot if s.name.endswith("_bucket")]
    assert buckets == sorted(buckets)
    count = next(s.value for s in tpot if s.name.endswith("_count"))
    assert count == buckets[-1] == success > 0
    drafts = families["vllm:spec_decode_num_drafts"].samples[0].value
    accepted = families["vllm:spec_decode_num_accepted_tokens"].samples[0].value
    per_pos = sum(s.value for s in families["vllm:spec_decode_num_accepted_tokens_per_pos"].samples)
    assert per_pos == pytest.approx(accepted)
    assert 1.9 < 1 + accepted / drafts < 2.6  # ShareGPT at k=3: L ≈ 2.25


def test_spec_series_vanish_when_speculation_is_off() -> None:
    names = {f.name for f in text_string_to_metric_families(_scrape(SpecConfig.off()))}
    assert not any(name.startswith("vllm:spec_decode") for name in names)
    assert "vllm:request_time_per_output_token_seconds" in names


def test_table_pods_expose_their_largest_k_as_positions() -> None:
    families = {f.name: f for f in text_string_to_metric_families(_scrape(table(VLLM_DOCUMENTED_TABLE)))}
    assert len(families["vllm:spec_decode_num_accepted_tokens_per_pos"].samples) == 5


def test_signals_samples_equal_what_the_scrape_reader_parses() -> None:
    """The simulator feeds the policy exactly what signals.scrape would read off the pod's /metrics."""
    sim = small_fleet(static(3), seconds=60)
    sim.run(60)
    pod = sim.pod(1)
    assert pod_samples(pod, "m") == parse_exposition(render_exposition(pod, "m"))
