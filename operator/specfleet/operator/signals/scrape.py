"""SHELL. The direct-scrape reader: the embedded default when no Prometheus URL is configured.

Each `read` scrapes the `/metrics` of every pod of each target's current configuration, keeps the
snapshots in memory, and computes the window's statistics in process (snapshot.py). Rates need two
snapshots of a pod inside the window, so the first tick after start yields gauges only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from specfleet.operator.lograte import rate_limited
from specfleet.operator.signals.model import (
    FleetKey,
    FleetTarget,
    PodEndpoint,
    SignalsResult,
    Unavailable,
    WindowStats,
)
from specfleet.operator.signals.prometheus import iso_time
from specfleet.operator.signals.rates import fleet_signals
from specfleet.operator.signals.snapshot import Sample, Snapshot, add_pod, vllm_metric

log = rate_limited(__name__)  # warned every tick while the cause lasts

PodKey = tuple[str, str]  # (namespace, pod)


def parse_exposition(text: str) -> tuple[Sample, ...]:
    """vLLM samples of a Prometheus text exposition, either name spelling."""
    samples = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = vllm_metric(sample.name)
            if name is not None:
                samples.append(Sample(name, dict(sample.labels), float(sample.value)))
    return tuple(samples)


@dataclass(frozen=True)
class ScrapeConfig:
    timeout_seconds: float = 5.0
    retries: int = 2
    backoff_seconds: float = 0.2


def _described(error: Exception) -> str:
    """A fixed sentence: nothing the pod sent (status line, body, headers) is repeated."""
    if isinstance(error, aiohttp.ClientResponseError):
        return f"the pod answered HTTP {error.status}"
    if isinstance(error, TimeoutError):
        return "the pod did not answer in time"
    if isinstance(error, ValueError):
        return "the pod's metrics are not a Prometheus exposition"
    return f"the scrape failed ({type(error).__name__})"


class ScrapeReader:
    """Implements `SignalsReader` by scraping pods directly; keeps each pod's snapshots in the window."""

    def __init__(self, config: ScrapeConfig | None = None, clock: Callable[[], float] = time.time) -> None:
        self.config = config or ScrapeConfig()
        self._clock = clock
        self._history: dict[PodKey, list[Snapshot]] = {}

    async def _fetch(self, session: aiohttp.ClientSession, pod: PodEndpoint) -> tuple[Sample, ...] | Exception:
        """The pod's samples, or why not: returned, not raised, so a fetch still running when its tick is
        cancelled leaves no task holding an exception for Kopf to re-raise at shutdown."""
        text = await self._get(session, pod)
        if isinstance(text, Exception):
            return text
        try:
            return parse_exposition(text)
        except ValueError as error:
            return error

    async def _get(self, session: aiohttp.ClientSession, pod: PodEndpoint) -> str | Exception:
        delay = self.config.backoff_seconds
        for attempt in range(self.config.retries + 1):
            try:
                async with session.get(pod.metrics_url) as response:
                    response.raise_for_status()
                    return await response.text()
            except TimeoutError as error:  # a pod that timed out would time out again: the tick moves on
                return error
            except aiohttp.ClientError as error:
                if attempt == self.config.retries:
                    return error
                await asyncio.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    async def scrape(self, pods: Sequence[tuple[str, PodEndpoint]]) -> dict[PodKey, Snapshot | str]:
        """One snapshot per pod, or the reason it could not be read (text or parse error)."""
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_seconds)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            outcomes = await asyncio.gather(*(self._fetch(session, pod) for _, pod in pods))
        now = self._clock()
        results: dict[PodKey, Snapshot | str] = {}
        for (namespace, pod), outcome in zip(pods, outcomes, strict=True):
            if isinstance(outcome, Exception):
                log.warning("scraping %s/%s failed: %s", namespace, pod.name, type(outcome).__name__)
                results[(namespace, pod.name)] = f"{pod.name}: {_described(outcome)}"
            else:
                results[(namespace, pod.name)] = Snapshot(now, outcome)
        return results

    def _remember(self, scraped: dict[PodKey, Snapshot | str], window_seconds: float, now: float) -> None:
        """Append fresh snapshots; forget pods no longer targeted and snapshots older than the window."""
        self._history = {key: history for key, history in self._history.items() if key in scraped}
        for key, outcome in scraped.items():
            history = [snapshot for snapshot in self._history.get(key, []) if snapshot.time >= now - window_seconds]
            if isinstance(outcome, Snapshot):
                history.append(outcome)
            self._history[key] = history

    async def read(self, targets: Sequence[FleetTarget], window_seconds: float) -> dict[FleetKey, SignalsResult]:
        pods = [
            (target.namespace, pod)
            for target in targets
            for pod in target.pods
            if pod.config_hash == target.config_hash  # only the current configuration counts
        ]
        scraped = await self.scrape(pods)
        now = self._clock()
        self._remember(scraped, window_seconds, now)
        stats: dict[tuple[str, str, str], WindowStats] = {}
        errors: dict[FleetKey, list[str]] = {}
        for target in targets:
            window_stats = stats.setdefault(target.config_key, WindowStats(pods_now=set()))
            for pod in target.pods:
                outcome = scraped.get((target.namespace, pod.name))
                if outcome is None:
                    continue
                if isinstance(outcome, str):
                    errors.setdefault(target.key, []).append(outcome)
                else:
                    window_stats.pods_now = (window_stats.pods_now or set()) | {pod.name}
                add_pod(window_stats, pod.name, self._history[(target.namespace, pod.name)])
        results = fleet_signals(stats, targets, window_seconds, iso_time(now))
        for key, reasons in errors.items():
            if isinstance(results[key], Unavailable):
                results[key] = Unavailable("ScrapeFailed", "; ".join(reasons))
        return results
