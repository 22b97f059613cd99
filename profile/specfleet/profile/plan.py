"""PURE. The sweep: which engine configurations (k values) and concurrencies, in which order, how many requests.

One configuration is one k on one engine: either an engine started with that k ("one engine per
configuration"), or a k set on a runtime's live batch-size table before its points (`control_url`). k=0 is
the configuration without speculation, the baseline every crossover is measured against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

MIN_REQUESTS = 8
REQUESTS_PER_CLIENT = 4


class PlanError(ValueError):
    """A sweep that cannot be run as asked; the message names the flag."""


@dataclass(frozen=True)
class Configuration:
    k: int
    engine_url: str
    control_url: str | None = None  # set k on this runtime's live table before the configuration's points

    def live_table(self) -> list[list[int]]:
        """k at every batch size: the table's last row carries through larger batches."""
        return [[1, 1, self.k]]


@dataclass(frozen=True)
class Point:
    config: Configuration
    concurrency: int
    requests: int

    @property
    def key(self) -> tuple[int, int]:
        return (self.config.k, self.concurrency)


def parse_ints(text: str, flag: str, minimum: int) -> tuple[int, ...]:
    """`1,2,4` → (1, 2, 4): distinct integers ≥ `minimum`, ascending."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise PlanError(f"{flag}: {text!r} is not a comma-separated list of integers") from None
    if not values or min(values) < minimum:
        raise PlanError(f"{flag}: {text!r} must list integers ≥ {minimum}")
    if len(set(values)) != len(values):
        raise PlanError(f"{flag}: {text!r} lists a value twice")
    return tuple(sorted(values))


def parse_url(text: str, flag: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise PlanError(f"{flag}: {text!r} is not an http(s) URL")
    return text.rstrip("/")


def parse_engine(text: str) -> Configuration:
    """`--engine K=URL`: an engine that runs k=K at every batch size (K=0: without speculation)."""
    k, sep, url = text.partition("=")
    if not sep:
        raise PlanError(f"--engine: {text!r} must be K=URL, e.g. 0=http://127.0.0.1:8000")
    (value,) = parse_ints(k, "--engine", 0)
    return Configuration(value, parse_url(url, "--engine"))


def live_configurations(engine_url: str, control_url: str, ks: Sequence[int]) -> tuple[Configuration, ...]:
    return tuple(Configuration(k, engine_url, control_url) for k in ks)


def plan_sweep(
    configs: Sequence[Configuration],
    concurrencies: Sequence[int],
    requests_per_point: int | None = None,
    max_num_seqs: int | None = None,
) -> tuple[Point, ...]:
    """Configurations by k, each over the concurrencies ascending (a live table changes once per k).

    Above the engine's max-num-seqs the engine queues what it cannot run, and the point would measure the
    queue, not the engine at that concurrency.
    """
    if max_num_seqs is not None and max(concurrencies, default=0) > max_num_seqs:
        raise PlanError(
            f"--concurrency: {max(concurrencies)} is above the engine's max-num-seqs {max_num_seqs}; "
            "it would queue the rest"
        )
    if not configs:
        raise PlanError("nothing to profile: give --engine K=URL and/or --live URL with --control-url and --k")
    ks = [config.k for config in configs]
    if len(set(ks)) != len(ks):
        raise PlanError(f"k={min(k for k in ks if ks.count(k) > 1)} is given twice (--engine / --k)")
    if requests_per_point is not None and requests_per_point < 1:
        raise PlanError(f"--requests-per-point: {requests_per_point} must be ≥ 1")
    return tuple(
        Point(config, c, _requests(c, requests_per_point))
        for config in sorted(configs, key=lambda config: config.k)
        for c in concurrencies
    )


def _requests(concurrency: int, asked: int | None) -> int:
    """At least one request per client, so every point runs at its full concurrency once."""
    return max(concurrency, asked if asked is not None else max(MIN_REQUESTS, REQUESTS_PER_CLIENT * concurrency))
