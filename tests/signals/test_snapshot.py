"""In-process rates from successive /metrics snapshots (pure maths, plus the text parser)."""

from __future__ import annotations

import pytest

from specfleet.operator.signals.model import WindowStats
from specfleet.operator.signals.scrape import parse_exposition
from specfleet.operator.signals.snapshot import Sample, Snapshot, add_pod, counter_increase, vllm_metric


def test_counter_increase_survives_resets() -> None:
    # 5 -> 10 (+5), restart to 3 (+3: the new process counted 3), 3 -> 8 (+5).
    assert counter_increase([5.0, 10.0, 3.0, 8.0]) == 13.0
    assert counter_increase([4.0]) == 0.0


def test_both_name_spellings_are_recognised() -> None:
    assert vllm_metric("vllm:num_requests_running") == "num_requests_running"
    assert vllm_metric("vllm_num_requests_running") == "num_requests_running"
    assert vllm_metric("process_cpu_seconds_total") is None


def snapshot(time: float, drafts: float, accepted0: float, running: float) -> Snapshot:
    return Snapshot(
        time,
        (
            Sample("spec_decode_num_drafts_total", {"engine": "0"}, drafts),
            Sample("spec_decode_num_accepted_tokens_per_pos_total", {"engine": "0", "position": "0"}, accepted0),
            Sample("request_time_per_output_token_seconds_bucket", {"le": "+Inf"}, drafts),
            Sample("num_requests_running", {"engine": "0"}, running),
        ),
    )


def test_pod_rates_and_gauges_over_the_window() -> None:
    stats = WindowStats()
    history = [
        snapshot(0.0, 100.0, 50.0, 2.0),
        snapshot(10.0, 200.0, 90.0, 4.0),
        snapshot(20.0, 60.0, 30.0, 6.0),
    ]
    add_pod(stats, "p", history)
    # drafts: +100 then a restart that counted 60 -> 160 over 20 s; position 0: +40 then +30 -> 70.
    assert stats.counters["drafts"] == {"p": pytest.approx(8.0)}
    assert stats.per_position == {0: pytest.approx(3.5)}
    assert stats.buckets["tpot"] == {float("inf"): pytest.approx(8.0)}
    assert stats.gauges["running_mean"] == {"p": pytest.approx(4.0)}
    assert stats.gauges["running_p90"] == {"p": pytest.approx(5.6)}


def test_a_single_snapshot_gives_gauges_but_no_rates() -> None:
    stats = WindowStats()
    add_pod(stats, "p", [snapshot(0.0, 1.0, 1.0, 3.0)])
    assert stats.counters == {}
    assert stats.gauges["running_mean"] == {"p": 3.0}


def test_parse_exposition_keeps_only_vllm_samples_in_either_spelling() -> None:
    text = (
        "# TYPE vllm:num_requests_running gauge\n"
        'vllm:num_requests_running{engine="0"} 3.0\n'
        "# TYPE vllm_spec_decode_num_drafts counter\n"
        'vllm_spec_decode_num_drafts_total{engine="0"} 7.0\n'
        "# TYPE python_gc_objects_collected counter\n"
        "python_gc_objects_collected_total 1.0\n"
    )
    samples = parse_exposition(text)
    assert [(sample.name, sample.value) for sample in samples] == [
        ("num_requests_running", 3.0),
        ("spec_decode_num_drafts_total", 7.0),
    ]
