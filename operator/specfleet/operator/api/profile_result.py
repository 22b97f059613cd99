"""The profiling Job's result on the wire: its points and crossovers, small enough for a termination message. Pure.

The Job's container writes it to its termination-message file; the operator reads it back from the Pod's
status (`containerStatuses[].state.terminated.message`) and validates every field before anything of it
reaches the profile's status. The kubelet keeps at most 4096 bytes of a message, so points are rows of
numbers rounded to four significant digits (the sweep's size is bounded in the spec to fit).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from specfleet.operator.api.profile_types import Crossover, ProfilePoint, Summary

TERMINATION_MESSAGE_LIMIT = 4096
FORMAT = "specfleet.profile/v1"
# A point's row, in this order.
COLUMNS = (
    "k",
    "concurrency",
    "requests",
    "outputTokens",
    "durationSeconds",
    "throughputTokensPerSecond",
    "requestsPerSecond",
    "tpotMean",
    "tpotP50",
    "tpotP90",
    "ttftMean",
    "ttftP50",
    "ttftP90",
    "acceptanceLength",
    "stepSeconds",
)


class ResultError(ValueError):
    """The Job's message is not a result (truncated, forged or from another version)."""


def encode_result(points: Sequence[ProfilePoint], crossovers: Sequence[Crossover]) -> str:
    text = json.dumps(
        {
            "format": FORMAT,
            "columns": list(COLUMNS),
            "points": [_row(point) for point in points],
            "crossovers": [[c.k, c.metric, c.bound, _round(c.concurrency)] for c in crossovers],
        },
        separators=(",", ":"),
    )
    if len(text.encode()) > TERMINATION_MESSAGE_LIMIT:
        raise ResultError(f"{len(points)} points take {len(text)} bytes, over a termination message's 4096")
    return text


def decode_result(text: str) -> tuple[list[ProfilePoint], list[Crossover]]:
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.get("format") != FORMAT or raw.get("columns") != list(COLUMNS):
            raise ResultError(f"not a {FORMAT} result")
        points = [_point(row) for row in raw["points"]]
        crossovers = [
            Crossover(k=k, metric=metric, bound=bound, concurrency=concurrency)
            for k, metric, bound, concurrency in raw["crossovers"]
        ]
    except (ValueError, TypeError, KeyError, ValidationError) as exc:
        if isinstance(exc, ResultError):
            raise
        raise ResultError(f"unreadable result: {type(exc).__name__}: {str(exc)[:200]}") from None
    return points, crossovers


def _round(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.4g}")


def _row(p: ProfilePoint) -> list[Any]:
    tpot, ttft = p.tpot_seconds, p.ttft_seconds
    floats = (p.duration_seconds, p.throughput_tokens_per_second, p.requests_per_second)
    summaries = (tpot.mean, tpot.p50, tpot.p90, ttft.mean, ttft.p50, ttft.p90, p.acceptance_length, p.step_seconds)
    return [p.k, p.concurrency, p.requests, p.output_tokens, *map(_round, floats), *map(_round, summaries)]


def _point(row: Sequence[Any]) -> ProfilePoint:
    if not isinstance(row, list) or len(row) != len(COLUMNS):
        raise ResultError(f"a point has {len(row)} values, not {len(COLUMNS)}")
    k, concurrency, requests, tokens, duration, throughput, rps, *summaries = row
    tpot_mean, tpot_p50, tpot_p90, ttft_mean, ttft_p50, ttft_p90, length, step = summaries
    return ProfilePoint(
        k=k,
        concurrency=concurrency,
        requests=requests,
        output_tokens=tokens,
        duration_seconds=duration,
        throughput_tokens_per_second=throughput,
        requests_per_second=rps,
        tpot_seconds=Summary(mean=tpot_mean, p50=tpot_p50, p90=tpot_p90),
        ttft_seconds=Summary(mean=ttft_mean, p50=ttft_p50, p90=ttft_p90),
        acceptance_length=length,
        step_seconds=step,
    )
