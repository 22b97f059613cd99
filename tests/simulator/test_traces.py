"""Trace shapes, recorded CSV traces and request generation."""

from __future__ import annotations

import numpy as np
import pytest

from specfleet.simulator.traces import HOUR, builtin_trace, parse_trace_csv
from specfleet.simulator.workload import CHAT_FR, CODE_EN, generate_requests


def test_diurnal_peaks_in_the_afternoon_and_bottoms_before_dawn() -> None:
    trace = builtin_trace("diurnal", 100.0, 24)
    assert trace.qps.max() == pytest.approx(100.0, rel=1e-3)
    assert trace.qps.min() == pytest.approx(10.0, rel=1e-3)
    assert trace.qps_at(16 * HOUR) > 99.0
    assert trace.qps_at(4 * HOUR) < 11.0


def test_step_ramp_and_burst_shapes() -> None:
    step = builtin_trace("step", 50.0, 2)
    assert step.qps_at(0.4 * HOUR) == pytest.approx(5.0)
    assert step.qps_at(1.5 * HOUR) == pytest.approx(50.0)
    ramp = builtin_trace("ramp", 50.0, 2)
    assert np.all(np.diff(ramp.qps) >= 0)
    burst = builtin_trace("burst", 50.0, 6)
    high = burst.qps > 25
    assert 0.05 < high.mean() < 0.3  # short bursts over a low base
    assert burst.qps_at(1.0 * HOUR) == pytest.approx(5.0)


def test_drift_mix_moves_from_day_class_to_night_class() -> None:
    trace = builtin_trace("drift", 40.0, 24, ("code-en", "chat-fr"))
    assert np.allclose(trace.mix.sum(axis=1), 1.0)
    day, night = trace.times.searchsorted(14 * HOUR), trace.times.searchsorted(2 * HOUR)
    assert trace.mix[day, 0] > 0.85
    assert trace.mix[night, 1] > 0.85


def test_unknown_trace_and_single_class_drift_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown trace"):
        builtin_trace("sawtooth", 1.0, 1)
    with pytest.raises(ValueError, match="two classes"):
        builtin_trace("drift", 1.0, 1, ("sharegpt",))


def test_csv_trace_with_class_mix() -> None:
    trace = parse_trace_csv("time,qps,code-en,chat-fr\n0,10,3,1\n600,20,1,1\n1200,0,1,0\n")
    assert trace.classes == ("code-en", "chat-fr")
    assert trace.duration == 1200.0
    assert trace.mix[0].tolist() == [0.75, 0.25]
    assert trace.qps_at(700.0) == 20.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("t,qps\n0,1\n1,1\n", "header"),
        ("time,qps\n0,1\n0,2\n", "increasing"),
        ("time,qps,a\n0,1,0\n1,1,0\n", "weights"),
    ],
)
def test_bad_csv_traces_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_trace_csv(text)


def test_requests_follow_rate_and_mix() -> None:
    trace = parse_trace_csv("time,qps,code-en,chat-fr\n0,20,1,0\n1800,20,0,1\n3600,0,1,1\n")
    req = generate_requests(trace.times, trace.qps, trace.mix, [CODE_EN, CHAT_FR], np.random.default_rng(3))
    assert len(req) == pytest.approx(72000, rel=0.02)
    assert np.all(np.diff(req.arrival) >= 0)
    first_half = req.arrival < 1800
    assert np.all(req.klass[first_half] == 0)
    assert np.all(req.klass[~first_half] == 1)
    assert req.output[first_half].mean() == pytest.approx(CODE_EN.output.mean, rel=0.05)


def test_requests_are_deterministic_given_a_seed() -> None:
    trace = builtin_trace("burst", 30.0, 1)
    a = generate_requests(trace.times, trace.qps, trace.mix, [CODE_EN], np.random.default_rng(7))
    b = generate_requests(trace.times, trace.qps, trace.mix, [CODE_EN], np.random.default_rng(7))
    c = generate_requests(trace.times, trace.qps, trace.mix, [CODE_EN], np.random.default_rng(8))
    assert np.array_equal(a.arrival, b.arrival)
    assert np.array_equal(a.output, b.output)
    assert not np.array_equal(a.arrival[:100], c.arrival[:100])
