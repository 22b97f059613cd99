"""One simulated replica: the crossover it reproduces, and the metrics it serves in vLLM's own names."""

from __future__ import annotations

import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from specfleet.demo.engine import Finished, SimulatedEngine
from specfleet.demo.fleet import engine_setup, perf_for
from specfleet.demo.resources import MODEL
from specfleet.demo.traffic import arrivals, demo_trace
from specfleet.operator.policy.state import SpecConfig
from specfleet.runtime.engine_args import EngineConfig, SpeculativeConfig
from specfleet.simulator.perf import DraftFamily


def _run(config: SpecConfig, qps: float, seconds: float = 40.0) -> tuple[SimulatedEngine, list[Finished]]:
    rng = np.random.default_rng(1)
    engine = SimulatedEngine(perf_for(MODEL, "H100"), DraftFamily.NGRAM, config, 0.0, rng)
    trace = demo_trace("constant", qps, seconds, "gsm8k")
    done: list[Finished] = []
    for i in range(int(seconds * 10)):
        for a in arrivals(trace, i / 10, (i + 1) / 10, rng):
            engine.submit(a.time, a.prompt_class, a.prompt, a.output)
        done += engine.advance((i + 1) / 10)
    return engine, done


def _mean_tpot(done: list[Finished]) -> float:
    return float(np.mean([f.tpot for f in done if f.arrival > 10]))


def test_speculation_wins_at_low_load_and_loses_at_high_load() -> None:
    low_on, low_off = _run(SpecConfig(True, 3), 5)[1], _run(SpecConfig.off(), 5)[1]
    high_on, high_off = _run(SpecConfig(True, 3), 60)[1], _run(SpecConfig.off(), 60)[1]
    assert _mean_tpot(low_on) < 0.85 * _mean_tpot(low_off)
    assert _mean_tpot(high_on) > _mean_tpot(high_off)


def test_metrics_are_vllms_and_spec_series_exist_only_while_speculating() -> None:
    engine, done = _run(SpecConfig(True, 3), 10, seconds=15)
    families = {f.name: f for f in text_string_to_metric_families(engine.exposition("p", "h", "m"))}
    success = families["vllm:request_success"].samples[0].value
    assert success == len(done) > 0
    drafts = families["vllm:spec_decode_num_drafts"].samples[0].value
    accepted = families["vllm:spec_decode_num_accepted_tokens"].samples[0].value
    assert 1.3 < 1 + accepted / drafts < 2.0  # n-gram on GSM8K-like prompts at k=3
    positions = {s.labels["position"] for s in families["vllm:spec_decode_num_accepted_tokens_per_pos"].samples}
    assert positions == {"0", "1", "2"}
    off, _ = _run(SpecConfig.off(), 10, seconds=5)
    assert "vllm:spec_decode_num_drafts" not in off.exposition("p", "h", "m")


def test_a_pods_engine_config_comes_from_its_vllm_args() -> None:
    args = EngineConfig(model=MODEL, speculative=SpeculativeConfig("ngram", 2)).vllm_args()
    assert engine_setup(args) == (MODEL, SpecConfig(True, 2), DraftFamily.NGRAM)
    assert engine_setup(EngineConfig(model=MODEL).vllm_args())[1] == SpecConfig.off()
