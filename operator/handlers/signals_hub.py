"""One batched signals read per tick for every fleet sharing a metrics source, shared by all timers."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from specfleet.operator.api.types import PrometheusSpec
from specfleet.operator.config import OperatorConfig
from specfleet.operator.kubeapi import KubeApi, Ref
from specfleet.operator.signals.model import (
    FleetKey,
    FleetTarget,
    LabelMapping,
    SignalsReader,
    SignalsResult,
    Unavailable,
)
from specfleet.operator.signals.prometheus import PrometheusConfig, PrometheusReader
from specfleet.operator.signals.scrape import ScrapeReader

# Threads for the blocking Prometheus client: two sources' ticks (14 queries each) at once.
PROMETHEUS_THREADS = 32


@dataclass(frozen=True)
class Source:
    """Where a fleet's signals come from; fleets with equal sources are read in one batch."""

    prometheus_url: str | None = None
    token_secret: tuple[str, str, str] | None = None  # namespace, name, key
    insecure_skip_verify: bool = False
    timeout_seconds: float = 10.0


def source_of(namespace: str, override: PrometheusSpec | None, config: OperatorConfig) -> Source:
    url = (override.url if override else None) or config.prometheus_url
    if url is None:
        return Source()
    secret = override.bearer_token_secret_ref if override else None
    return Source(
        prometheus_url=url,
        token_secret=(namespace, secret.name, secret.key) if secret else None,
        insecure_skip_verify=override.insecure_skip_verify if override else False,
        timeout_seconds=override.timeout_seconds if override else 10.0,
    )


@dataclass(frozen=True)
class Watched:
    """A fleet as the evaluation loop knows it."""

    target: FleetTarget
    source: Source
    window_seconds: float


class SignalsHub:
    """Caches each batch for about half an interval, so N timers firing together cost one read."""

    def __init__(self, config: OperatorConfig, api: KubeApi, clock: Callable[[], float] = time.time) -> None:
        self._config = config
        self._api = api
        self._clock = clock
        self._scraper = ScrapeReader()
        self._readers: dict[tuple[Source, str | None], PrometheusReader] = {}
        # One pool for every reader, so the threads stay bounded however many Prometheus sources fleets name.
        self._query_threads = ThreadPoolExecutor(PROMETHEUS_THREADS, thread_name_prefix="prometheus")
        self._batches: dict[tuple[Source, float], tuple[float, dict[FleetKey, SignalsResult]]] = {}
        self._locks: dict[tuple[Source, float], asyncio.Lock] = {}

    @property
    def labels(self) -> LabelMapping:
        c = self._config
        return LabelMapping(c.label_namespace, c.label_deployment, c.label_config_hash, c.label_pod)

    async def read(self, wanted: Watched, fleet: Callable[[], Sequence[Watched]]) -> SignalsResult:
        """`wanted`'s signals; `fleet` lists every watched fleet and is only called when a new batch is read."""
        batch_key = (wanted.source, wanted.window_seconds)
        lock = self._locks.setdefault(batch_key, asyncio.Lock())
        async with lock:
            cached = self._batches.get(batch_key)
            stale = cached is None or self._clock() - cached[0] >= self._config.interval_seconds / 2
            if stale or cached is None or wanted.target.key not in cached[1]:
                peers = [w.target for w in fleet() if (w.source, w.window_seconds) == batch_key]
                targets = [*{t.key: t for t in [*peers, wanted.target]}.values()]
                results = await self._read_batch(wanted.source, targets, wanted.window_seconds)
                cached = (self._clock(), results)
                self._batches[batch_key] = cached
        return cached[1].get(wanted.target.key) or Unavailable("NoSignals", "the fleet was not in the batch")

    async def _read_batch(
        self, source: Source, targets: list[FleetTarget], window: float
    ) -> dict[FleetKey, SignalsResult]:
        try:
            reader = await self._reader(source)
        except LookupError as exc:
            return {t.key: Unavailable("PrometheusCredentialsMissing", str(exc)) for t in targets}
        except ValueError as exc:  # a URL the client cannot use: say so, never fail the tick
            return {t.key: Unavailable("PrometheusConfigInvalid", str(exc)[:200]) for t in targets}
        return await reader.read(targets, window)

    async def _reader(self, source: Source) -> SignalsReader:
        if source.prometheus_url is None:
            return self._scraper
        token = await self._token(source.token_secret) if source.token_secret else None
        # Keyed by token too, so a rotated Secret gets a fresh client.
        key = (source, token)
        if key not in self._readers:
            self._readers[key] = PrometheusReader(
                PrometheusConfig(
                    url=source.prometheus_url,
                    bearer_token=token,
                    insecure_skip_verify=source.insecure_skip_verify,
                    timeout_seconds=source.timeout_seconds,
                    labels=self.labels,
                ),
                self._query_threads,
            )
        return self._readers[key]

    async def _token(self, ref: tuple[str, str, str]) -> str:
        namespace, name, key = ref
        secret = await self._api.get(Ref("v1", "Secret", namespace, name))
        encoded = (secret or {}).get("data", {}).get(key)
        if not encoded:
            raise LookupError(f"Secret {namespace}/{name} has no key {key!r}")
        return base64.b64decode(encoded).decode().strip()
