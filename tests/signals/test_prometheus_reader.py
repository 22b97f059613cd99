"""The Prometheus reader and the direct-scrape reader against a real Prometheus scraping scripted pods.

One scenario fleet is started for the module; mid-way through the window, pods restart, a deployment
changes configuration and a pod disappears, as they do in real fleets. Both readers then read it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from specfleet.operator.api.types import Signals
from specfleet.operator.signals.model import (
    FleetTarget,
    LabelMapping,
    PodEndpoint,
    SignalsResult,
    Unavailable,
)
from specfleet.operator.signals.prometheus import PrometheusConfig, PrometheusReader
from specfleet.operator.signals.promql import build_queries, deployment_matchers, fleet_matchers
from specfleet.operator.signals.scrape import ScrapeReader
from tests.fixtures.prometheus import PrometheusServer
from tests.signals.scripted import Exporter, Script, expected_acceptance_length

pytestmark = pytest.mark.slow

LABELS = LabelMapping()
WINDOW = 10.0
OLD_ACCEPTANCE = (0.9, 0.9, 0.9)
NEW_ACCEPTANCE = (0.3, 0.1, 0.05)


@dataclass
class Pod:
    namespace: str
    deployment: str
    config_hash: str
    name: str
    exporter: Exporter

    @property
    def endpoint(self) -> PodEndpoint:
        return PodEndpoint(self.name, self.exporter.metrics_url, self.config_hash)


@dataclass
class Fleet:
    server: PrometheusServer
    pods: list[Pod] = field(default_factory=list)
    scrape_reader: ScrapeReader = field(default_factory=ScrapeReader)
    scraped: dict[tuple[str, str], SignalsResult] = field(default_factory=dict)
    # When the scripted history is complete: reads of what happened inside the window (a restart, a config
    # change, a pod leaving) end here, however late their test runs.
    ready_at: float = 0.0

    def add(self, namespace: str, deployment: str, config_hash: str, name: str, script: Script) -> Pod:
        pod = Pod(namespace, deployment, config_hash, name, Exporter(script))
        self.pods.append(pod)
        self.publish()
        return pod

    def remove(self, pod: Pod) -> None:
        self.pods.remove(pod)
        self.publish()
        pod.exporter.close()

    def publish(self) -> None:
        """The targets a PodMonitor would discover, with the labels its relabelling attaches."""
        groups = [
            (
                pod.exporter.address,
                {
                    LABELS.namespace: pod.namespace,
                    LABELS.deployment: pod.deployment,
                    LABELS.config_hash: pod.config_hash,
                    LABELS.pod: pod.name,
                },
            )
            for pod in self.pods
        ]
        self.server.set_targets("scenario", groups)

    def target(self, namespace: str, deployment: str, config_hash: str = "h1") -> FleetTarget:
        pods = tuple(pod.endpoint for pod in self.pods if (pod.namespace, pod.deployment) == (namespace, deployment))
        return FleetTarget(namespace, deployment, config_hash, pods)


STEADY = Script()
STEADY_SELECTOR = 'namespace="team-a", specfleet_dev_deployment="steady"}'
NAN_SCRIPT = Script(drafts_per_second=0.0, kv=math.nan)


@pytest.fixture(scope="module")
def fleet(prometheus_server: PrometheusServer) -> Iterator[Fleet]:
    fleet = Fleet(prometheus_server)
    try:
        for index in range(2):
            fleet.add("team-a", "steady", "h1", f"steady-{index}", STEADY)
            fleet.add("team-c", "shrink", "h1", f"shrink-{index}", STEADY)
        fleet.add("team-c", "nan", "h1", "nan-0", NAN_SCRIPT)
        fleet.add("team-c", "nan", "h1", "nan-1", Script(drafts_per_second=0.0))
        fleet.add("team-a", "nospec", "h1", "nospec-0", Script(acceptance=None))
        reset = fleet.add("team-b", "reset", "h1", "reset-0", STEADY)
        fleet.add("team-b", "gaps", "h1", "gaps-0", Script(positions=(0, 2)))
        old = fleet.add("team-b", "change", "h1", "change-old", Script(acceptance=OLD_ACCEPTANCE))
        pods = len(fleet.pods)
        prometheus_server.wait_for('count({__name__=~"vllm[:_]num_requests_running"})', _at_least(pods))
        steady = fleet.target("team-a", "steady")
        _scrape_for(fleet, steady, WINDOW / 2)
        reset.exporter.pod.restart()
        fleet.remove(old)
        fleet.add("team-b", "change", "h2", "change-new", Script(acceptance=NEW_ACCEPTANCE))
        fleet.remove(next(pod for pod in fleet.pods if pod.name == "shrink-1"))
        # Enough scrapes of the new configuration for a rate, while the old one is still inside the window.
        prometheus_server.wait_for(
            'count_over_time({__name__=~"vllm[:_]num_requests_running", pod="change-new"}[10s])', _at_least(3)
        )
        fleet.ready_at = time.time()
        _scrape_for(fleet, steady, WINDOW / 2)
        yield fleet
    finally:
        prometheus_server.set_targets("scenario", [])
        for pod in fleet.pods:
            pod.exporter.close()


def _at_least(count: int) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda rows: bool(rows) and float(rows[0]["value"][1]) >= count


def _scrape_for(fleet: Fleet, target: FleetTarget, seconds: float) -> None:
    """Let the window fill, scraping the steady pods directly once a second as the embedded reader would."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        fleet.scraped = asyncio.run(fleet.scrape_reader.read([target], WINDOW))
        time.sleep(1.0)


def reader(server: PrometheusServer) -> PrometheusReader:
    return PrometheusReader(PrometheusConfig(url=server.url, timeout_seconds=5, retries=1))


def signals(result: SignalsResult | None) -> Signals:
    assert isinstance(result, Signals), result
    return result


async def test_batched_read_matches_the_scripted_fleet(fleet: Fleet) -> None:
    prometheus = reader(fleet.server)
    at = time.time()
    targets = [
        fleet.target("team-a", "steady"),
        fleet.target("team-a", "nospec"),
        fleet.target("team-b", "gaps"),
    ]
    results = await prometheus.read(targets, WINDOW, at=at)
    assert prometheus.queries_issued == len(build_queries([], LABELS, WINDOW))
    steady = signals(results[("team-a", "steady")])
    acceptance = STEADY.acceptance or ()
    assert steady.acceptance_length == pytest.approx(expected_acceptance_length(acceptance), rel=1e-6)
    assert steady.acceptance_by_position == pytest.approx(list(acceptance), rel=1e-6)
    assert steady.draft_acceptance_rate == pytest.approx(sum(acceptance) / len(acceptance), rel=1e-6)
    assert steady.qps == pytest.approx(2 * STEADY.requests_per_second, rel=0.05)
    ratio = STEADY.prompt_tokens_per_request / STEADY.output_tokens_per_request
    assert steady.prompt_tokens_per_output == pytest.approx(ratio, rel=1e-6)
    assert steady.concurrency_per_replica == pytest.approx(STEADY.running)
    assert steady.concurrency_p90 == pytest.approx(STEADY.running)
    assert steady.waiting_requests == pytest.approx(2 * STEADY.waiting)
    assert steady.kv_cache_usage == pytest.approx(STEADY.kv)
    assert steady.tpot_seconds == pytest.approx(STEADY.tpot_mean_seconds, rel=1e-6)
    for q, value in ((0.5, steady.tpot_p50_seconds), (0.9, steady.tpot_p90_seconds)):
        buckets = '{__name__=~"vllm[:_]request_time_per_output_token_seconds_bucket", ' + STEADY_SELECTOR
        own = fleet.server.query(f"histogram_quantile({q}, sum by (le) (rate({buckets}[10s])))", at=at)
        assert value == pytest.approx(float(own[0]["value"][1]), rel=1e-6)
    assert steady.pods == 2
    assert steady.evidence is not None
    assert steady.evidence.acceptance is not None
    assert steady.evidence.acceptance.pods == 2
    assert steady.evidence.acceptance.samples == pytest.approx(2 * STEADY.drafts_per_second * WINDOW, rel=0.05)
    assert steady.missing is None

    nospec = signals(results[("team-a", "nospec")])
    assert nospec.acceptance_length is None
    assert nospec.evidence is not None
    assert nospec.evidence.acceptance is None
    assert nospec.qps == pytest.approx(STEADY.requests_per_second, rel=0.05)

    gaps = signals(results[("team-b", "gaps")])
    assert gaps.acceptance_by_position == pytest.approx([acceptance[0]], rel=1e-6)


async def test_counter_reset_mid_window_keeps_rates_right(fleet: Fleet) -> None:
    result = signals(
        (await reader(fleet.server).read([fleet.target("team-b", "reset")], WINDOW, fleet.ready_at))[
            ("team-b", "reset")
        ]
    )
    assert result.acceptance_length == pytest.approx(expected_acceptance_length(STEADY.acceptance or ()), rel=1e-6)
    # Without reset handling the increase over the window would be negative or tiny.
    assert result.qps == pytest.approx(STEADY.requests_per_second, rel=0.15)


async def test_only_the_current_config_hash_counts(fleet: Fleet) -> None:
    prometheus = reader(fleet.server)
    new, old = fleet.target("team-b", "change", "h2"), fleet.target("team-b", "change", "h1")
    current = signals((await prometheus.read([new], WINDOW, fleet.ready_at))[new.key])
    assert current.config_hash == "h2"
    assert current.acceptance_length == pytest.approx(expected_acceptance_length(NEW_ACCEPTANCE), rel=1e-6)
    # The old configuration is still inside the window: it is there, and it is not mixed in.
    previous = signals((await prometheus.read([old], WINDOW, fleet.ready_at))[old.key])
    assert previous.acceptance_length == pytest.approx(expected_acceptance_length(OLD_ACCEPTANCE), rel=1e-6)
    assert previous.pods == 0


async def test_a_pod_that_disappears_stops_counting_as_a_replica(fleet: Fleet) -> None:
    shrink = signals(
        (await reader(fleet.server).read([fleet.target("team-c", "shrink")], WINDOW, fleet.ready_at))[
            ("team-c", "shrink")
        ]
    )
    assert shrink.pods == 1
    assert shrink.evidence is not None
    assert shrink.evidence.acceptance is not None
    assert shrink.evidence.acceptance.pods == 2  # its work earlier in the window still counts
    assert shrink.acceptance_length == pytest.approx(expected_acceptance_length(STEADY.acceptance or ()), rel=1e-6)


async def test_nan_and_empty_rates_become_unset_values(fleet: Fleet) -> None:
    result = signals((await reader(fleet.server).read([fleet.target("team-c", "nan")], WINDOW))[("team-c", "nan")])
    assert result.acceptance_length is None  # no draft round in the window: 0/0
    assert result.evidence is not None
    assert result.evidence.acceptance is not None
    assert result.evidence.acceptance.samples == 0
    assert result.kv_cache_usage == pytest.approx(STEADY.kv)  # the NaN pod is left out


async def test_direct_scrape_gives_the_same_numbers_as_prometheus(fleet: Fleet) -> None:
    target = fleet.target("team-a", "steady")
    scraped = signals((await fleet.scrape_reader.read([target], WINDOW))[target.key])
    queried = signals((await reader(fleet.server).read([target], WINDOW))[target.key])
    for name in (
        "acceptance_length",
        "draft_acceptance_rate",
        "tpot_seconds",
        "tpot_p50_seconds",
        "tpot_p90_seconds",
    ):
        assert getattr(scraped, name) == pytest.approx(getattr(queried, name), rel=1e-6), name
    assert scraped.acceptance_by_position == pytest.approx(queried.acceptance_by_position, rel=1e-6)
    for name in ("concurrency_per_replica", "concurrency_p90", "waiting_requests", "kv_cache_usage", "pods"):
        assert getattr(scraped, name) == pytest.approx(getattr(queried, name)), name
    assert scraped.qps == pytest.approx(queried.qps, rel=0.05)


async def test_hostile_names_cannot_widen_a_query(fleet: Fleet) -> None:
    prometheus = reader(fleet.server)
    hostile = [
        FleetTarget("team-a", 'steady"} or {__name__=~".+', "h1"),
        FleetTarget(".*", "steady", "h1"),
        FleetTarget("team-a|team-b", "steady", "h1"),
    ]
    results = await prometheus.read(hostile, WINDOW)
    assert all(isinstance(result, Unavailable) and result.reason == "NoSeries" for result in results.values())
    # Selectors built from hostile values match nothing; the honest ones match the fleet's series.
    hostile_selectors = [deployment_matchers(target, LABELS) for target in hostile]
    hostile_selectors += [fleet_matchers([target], LABELS) for target in hostile[1:]]  # hostile namespaces
    for matchers in hostile_selectors:
        assert count_series(fleet.server, matchers) == []
    honest = fleet.target("team-a", "steady")
    for matchers in (fleet_matchers([honest], LABELS), deployment_matchers(honest, LABELS)):
        assert count_series(fleet.server, matchers) != []


def count_series(server: PrometheusServer, matchers: list[str]) -> list[dict[str, object]]:
    return server.query(f'count({{__name__=~"vllm[:_].+", {", ".join(matchers)}}})')
