"""Exporters with scripted vLLM series, served by prometheus_client on loopback in threads.

Every counter is a linear function of the time since the pod "started", computed when it is scraped, so a
scrape always sees a consistent set of counters and the expected rates are known exactly.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

ENGINE = ["model_name", "engine"]
TPOT_BUCKETS = ((0.01, 0.2), (0.025, 0.5), (0.05, 0.2), (0.1, 0.1))  # (upper bound, share of requests)
TTFT_BUCKETS = ((0.1, 0.5), (0.5, 0.4), (1.0, 0.1))


@dataclass
class Script:
    """What one scripted pod does, per second."""

    acceptance: tuple[float, ...] | None = (0.8, 0.5, 0.3)  # a_i per position; None: speculation off
    positions: tuple[int, ...] | None = None  # positions exposed (default: all)
    drafts_per_second: float = 20.0
    requests_per_second: float = 2.0
    prompt_tokens_per_request: float = 600.0
    output_tokens_per_request: float = 200.0
    tpot_mean_seconds: float = 0.03
    running: float = 4.0
    waiting: float = 1.0
    kv: float = 0.25


@dataclass(eq=False)  # registries key collectors by identity
class ScriptedPod(Collector):
    script: Script
    started: float = field(default_factory=time.time)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def restart(self) -> None:
        """The process restarted: every counter starts again from zero."""
        with self._lock:
            self.started = time.time()

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            elapsed = time.time() - self.started
        yield from self._load(elapsed)
        if self.script.acceptance is not None:
            yield from self._speculation(elapsed, self.script.acceptance)

    def _speculation(self, elapsed: float, acceptance: tuple[float, ...]) -> Iterator[Metric]:
        drafts = self.script.drafts_per_second * elapsed
        for name, value in (
            ("vllm:spec_decode_num_drafts", drafts),
            ("vllm:spec_decode_num_draft_tokens", drafts * len(acceptance)),
            ("vllm:spec_decode_num_accepted_tokens", drafts * sum(acceptance)),
        ):
            yield counter(name, value)
        per_position = CounterMetricFamily(
            "vllm:spec_decode_num_accepted_tokens_per_pos", "", labels=[*ENGINE, "position"]
        )
        exposed = self.script.positions if self.script.positions is not None else range(len(acceptance))
        for position in exposed:
            per_position.add_metric(["tiny", "0", str(position)], drafts * acceptance[position])
        yield per_position

    def _load(self, elapsed: float) -> Iterator[Metric]:
        requests = self.script.requests_per_second * elapsed
        yield counter("vllm:request_success", requests, extra={"finished_reason": "length"})
        yield counter("vllm:prompt_tokens", requests * self.script.prompt_tokens_per_request)
        yield counter("vllm:generation_tokens", requests * self.script.output_tokens_per_request)
        yield histogram(
            "vllm:request_time_per_output_token_seconds",
            TPOT_BUCKETS,
            requests,
            self.script.tpot_mean_seconds,
        )
        yield histogram("vllm:time_to_first_token_seconds", TTFT_BUCKETS, requests, 0.2)
        for name, value in (
            ("vllm:num_requests_running", self.script.running),
            ("vllm:num_requests_waiting", self.script.waiting),
            ("vllm:kv_cache_usage_perc", self.script.kv),
        ):
            gauge = GaugeMetricFamily(name, "", labels=ENGINE)
            gauge.add_metric(["tiny", "0"], value)
            yield gauge


def counter(name: str, value: float, extra: dict[str, str] | None = None) -> CounterMetricFamily:
    extra = extra or {}
    family = CounterMetricFamily(name, "", labels=[*ENGINE, *extra])
    family.add_metric(["tiny", "0", *extra.values()], value)
    return family


def histogram(name: str, shares: tuple[tuple[float, float], ...], count: float, mean: float) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, "", labels=ENGINE)
    cumulative, total = [], 0.0
    for bound, share in shares:
        total += share * count
        cumulative.append((str(bound), total))
    cumulative.append(("+Inf", count))
    family.add_metric(["tiny", "0"], cumulative, sum_value=count * mean)
    return family


class Exporter:
    """A scripted pod served on a free loopback port with its own registry."""

    def __init__(self, script: Script) -> None:
        self.pod = ScriptedPod(script)
        registry = CollectorRegistry()
        registry.register(self.pod)
        self._server, self._thread = start_http_server(0, "127.0.0.1", registry)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self._server.server_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://{self.address}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def expected_acceptance_length(acceptance: tuple[float, ...]) -> float:
    """L = 1 + accepted/drafts; the script accepts sum(a_i) tokens per draft round."""
    return 1 + math.fsum(acceptance)
