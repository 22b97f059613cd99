"""The pure core of `specfleet profile`: the request file, the sweep plan, point statistics, crossovers, the table."""

from __future__ import annotations

import json
import math

import pytest

from specfleet.operator.signals.snapshot import Sample, Snapshot
from specfleet.profile.crossover import crossing, crossovers
from specfleet.profile.measure import RequestTiming, point_result, spec_counts
from specfleet.profile.plan import Configuration, PlanError, Point, parse_engine, parse_ints, plan_sweep
from specfleet.profile.report import ProfilePoint, ProfileReport, Summary, render_table
from specfleet.profile.workload import CHAT_PATH, COMPLETIONS_PATH, WorkloadError, parse_requests

CHAT = {"messages": [{"role": "user", "content": "hi"}], "temperature": 0.7, "top_p": 0.9, "max_tokens": 200}
COMPLETION = {"prompt": "the cat", "temperature": 0, "max_tokens": 8}


def test_requests_of_both_kinds_and_the_batch_form_keep_their_sampling_parameters() -> None:
    batch = {"custom_id": "a", "method": "POST", "url": CHAT_PATH, "body": CHAT}
    lines = [json.dumps(CHAT), "", json.dumps(COMPLETION), json.dumps(batch)]
    chat, completion, batched = parse_requests(lines)
    assert (chat.path, completion.path, batched.path) == (CHAT_PATH, COMPLETIONS_PATH, CHAT_PATH)
    assert (chat.line, completion.line, batched.line) == (1, 3, 4)
    body = chat.streamed("tiny", max_tokens=16)
    assert body["temperature"] == 0.7
    assert body["top_p"] == 0.9
    assert body["model"] == "tiny"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 16  # capped
    assert completion.streamed("tiny", max_tokens=None)["max_tokens"] == 8
    assert completion.streamed("tiny", max_tokens=32)["max_tokens"] == 8  # already below the cap


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "requests:2: not JSON"),
        ("[1, 2]", "requests:2: must be a JSON object"),
        ('{"temperature": 0}', "requests:2: needs exactly one of `messages` (chat) or `prompt`"),
        ('{"prompt": "a", "messages": []}', "requests:2: needs exactly one of"),
        ('{"messages": []}', "requests:2: `messages` must be a non-empty list"),
        ('{"prompt": 3}', "requests:2: `prompt` must be a string or a list"),
        ('{"prompt": "a", "n": 2}', "requests:2: n=2 is not supported"),
        ('{"url": "/v1/completions", "body": {"messages": [{"role": "user", "content": "x"}]}}', "does not match"),
    ],
)
def test_a_bad_line_is_named_by_its_number(line: str, message: str) -> None:
    with pytest.raises(WorkloadError) as error:
        parse_requests([json.dumps(COMPLETION), line, json.dumps(COMPLETION)])
    assert message in str(error.value)


def test_an_empty_file_is_refused() -> None:
    with pytest.raises(WorkloadError, match="no requests"):
        parse_requests(["", "  "])


def test_the_plan_runs_each_k_over_the_concurrencies_with_at_least_one_request_per_client() -> None:
    live = [Configuration(3, "http://e", "http://c"), Configuration(1, "http://e", "http://c")]
    points = plan_sweep([*live, parse_engine("0=http://plain/")], parse_ints("4,1,16", "--concurrency", 1), None)
    assert [point.key for point in points] == [(k, c) for k in (0, 1, 3) for c in (1, 4, 16)]
    assert [point.requests for point in points[:3]] == [8, 16, 64]
    assert points[0].config.engine_url == "http://plain"
    assert [p.requests for p in plan_sweep(live, (1, 8), 4)] == [4, 8, 4, 8]
    assert live[0].live_table() == [[1, 1, 3]]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: parse_ints("1,x", "--concurrency", 1), "--concurrency: '1,x' is not"),
        (lambda: parse_ints("0,2", "--concurrency", 1), "must list integers ≥ 1"),
        (lambda: parse_ints("2,2", "--k", 0), "lists a value twice"),
        (lambda: parse_engine("http://e"), "must be K=URL"),
        (lambda: parse_engine("1=ftp://e"), "is not an http(s) URL"),
        (lambda: plan_sweep([], (1,)), "nothing to profile"),
        (lambda: plan_sweep([parse_engine("1=http://a"), parse_engine("1=http://b")], (1,)), "k=1 is given twice"),
        (lambda: plan_sweep([parse_engine("1=http://a")], (1,), 0), "--requests-per-point"),
        (lambda: plan_sweep([parse_engine("0=http://a")], (4, 8), None, 4), "8 is above the engine's max-num-seqs 4"),
    ],
)
def test_bad_sweeps_are_refused_naming_the_flag(call: object, message: str) -> None:
    with pytest.raises(PlanError) as error:
        call()  # type: ignore[operator]
    assert message in str(error.value)


def _snapshot(time: float, drafts: float, accepted: float, positions: tuple[float, ...], spelling: str) -> Snapshot:
    samples = [
        Sample("spec_decode_num_drafts_total", {}, drafts),
        Sample("spec_decode_num_draft_tokens_total", {}, drafts * len(positions)),
        Sample("spec_decode_num_accepted_tokens_total", {}, accepted),
        *(Sample("spec_decode_num_accepted_tokens_per_pos_total", {"position": str(i)}, a)
          for i, a in enumerate(positions)),
    ]  # fmt: skip
    del spelling  # the snapshot holds names without the prefix, whichever spelling the engine used
    return Snapshot(time, tuple(samples))


def test_counters_are_the_increase_over_exactly_the_point() -> None:
    before = _snapshot(10.0, drafts=100, accepted=150, positions=(80, 50, 20), spelling="vllm:")
    after = _snapshot(14.0, drafts=140, accepted=210, positions=(110, 70, 30), spelling="vllm_")
    counts = spec_counts(before, after)
    assert counts is not None
    assert counts.drafts == pytest.approx(40)
    assert counts.accepted == pytest.approx(60)
    assert counts.draft_tokens == pytest.approx(120)
    assert counts.accepted_by_position == pytest.approx([30, 20, 10])
    assert spec_counts(Snapshot(0.0, ()), Snapshot(1.0, ())) is None  # k=0: no speculation series


def test_a_point_reports_client_timings_and_the_engine_acceptance() -> None:
    point = Point(Configuration(3, "http://e"), concurrency=2, requests=3)
    timings = [
        RequestTiming(sent=0.0, first_token=0.1, last_token=1.1, finished=1.1, tokens=11),  # TPOT 0.1
        RequestTiming(sent=0.0, first_token=0.2, last_token=0.6, finished=0.7, tokens=3),  # TPOT 0.2
        RequestTiming(sent=0.6, first_token=0.9, last_token=0.9, finished=2.0, tokens=1),  # no TPOT
    ]
    before = _snapshot(0.0, drafts=0, accepted=0, positions=(0, 0, 0), spelling="vllm:")
    after = _snapshot(2.0, drafts=10, accepted=15, positions=(8, 5, 2), spelling="vllm:")
    result = point_result(point, timings, before, after)
    assert (result.k, result.concurrency, result.requests, result.output_tokens) == (3, 2, 3, 15)
    assert result.duration_seconds == pytest.approx(2.0)
    assert result.throughput_tokens_per_second == pytest.approx(7.5)
    assert result.tpot_seconds.mean == pytest.approx(0.15)
    assert result.tpot_seconds.p90 == pytest.approx(0.19)
    assert result.ttft_seconds.p50 == pytest.approx(0.2)
    assert result.acceptance_length == pytest.approx(2.5)
    assert result.acceptance_by_position == pytest.approx([0.8, 0.5, 0.2])
    assert result.step_seconds == pytest.approx(0.15 * 2.5)


def _point(k: int, c: int, throughput: float, tpot: float) -> ProfilePoint:
    return ProfilePoint(k=k, concurrency=c, requests=c, output_tokens=1, duration_seconds=1.0,
                        throughput_tokens_per_second=throughput, requests_per_second=1.0,
                        tpot_seconds=Summary(mean=tpot), ttft_seconds=Summary())  # fmt: skip


def test_the_crossover_interpolates_in_log_concurrency_between_the_last_win_and_the_first_loss() -> None:
    points = [
        *(_point(0, c, t, 1 / t) for c, t in ((1, 100), (2, 190), (4, 340), (8, 500))),
        *(_point(3, c, t, 1 / t) for c, t in ((1, 200), (2, 285), (4, 340), (8, 400))),
        *(_point(1, c, t, 1 / t) for c, t in ((1, 90), (2, 150), (4, 300), (8, 400))),
    ]
    found = {(cross.k, cross.metric): cross for cross in crossovers(points)}
    assert found[(3, "throughput")].bound == "within"
    assert found[(3, "throughput")].concurrency == pytest.approx(4.0)
    assert found[(3, "tpot")].concurrency == pytest.approx(4.0)
    assert found[(1, "throughput")].bound == "belowSweep"
    assert found[(1, "throughput")].concurrency == 1
    half = crossing(3, "throughput", [(2, 0.5), (8, -0.5)])  # halfway in log2: 2 → 8 crosses at 4
    assert half.concurrency == pytest.approx(4.0)
    assert crossing(3, "tpot", [(1, 0.3), (2, 0.1)]).bound == "aboveSweep"
    assert crossovers([_point(3, 1, 200, 0.005)]) == []  # no k=0 to compare with


def test_the_table_shows_every_point_the_crossovers_and_an_interruption() -> None:
    points = [_point(0, 1, 100, 0.01), _point(0, 2, 150, 0.013), _point(3, 1, 180, 0.006), _point(3, 2, 140, 0.014)]
    points[2].acceptance_length, points[2].acceptance_by_position = 2.25, [0.7, 0.4, 0.15]
    report = ProfileReport(model="tiny", requests_file="r.jsonl", distinct_requests=3, points=points,
                           crossovers=crossovers(points), interrupted=True)  # fmt: skip
    lines = render_table(report).splitlines()
    assert lines[0].split()[:4] == ["k", "conc", "reqs", "tok/s"]
    assert lines[3].split() == ["3", "1", "1", "180.0", "6.0", "-", "-", "-", "2.25", "0.70", "0.40", "0.15"]
    assert any(line.startswith("crossover k=3 (throughput): concurrency ≈ 1.") for line in lines)
    assert any(line.startswith("interrupted:") for line in lines)
    assert math.isclose(report.crossovers[0].concurrency or 0, 2 ** (0.8 / (0.8 + 1 / 15)), rel_tol=1e-6)
    assert "acceptanceLength" in report.to_api()["points"][2]  # camelCase, as a status would hold it
