"""SHELL. The Prometheus reader: one batch of instant queries per tick for the whole fleet.

Uses prometheus-api-client over a requests session with timeouts, retries with exponential backoff on
connection errors and 429/5xx answers, TLS options and bearer-token auth. The token is only ever placed in
the Authorization header: it is kept out of reprs, log lines and error reasons.

A tick's queries run side by side on a thread pool (the operator's shared one, or the reader's own) and a
timed-out query is not retried, so a slow or dead Prometheus costs a tick about one timeout (plus the connect
backoff), never a multiple of it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from specfleet.operator.signals.model import FleetKey, FleetTarget, LabelMapping, SignalsResult, Unavailable
from specfleet.operator.signals.promql import Query, build_queries, fleet_matchers, parse_results
from specfleet.operator.signals.rates import fleet_signals

log = logging.getLogger(__name__)

RETRY_STATUSES = (429, 500, 502, 503, 504)
_MESSAGE_LIMIT = 300


@dataclass(frozen=True)
class PrometheusConfig:
    """How to reach Prometheus. `bearer_token` is the value itself (the caller reads it from a Secret)."""

    url: str
    bearer_token: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    insecure_skip_verify: bool = False
    timeout_seconds: float = 10.0
    retries: int = 3
    backoff_seconds: float = 0.5
    max_parallel: int = 16  # at least one tick's queries, so they all run at once
    labels: LabelMapping = field(default_factory=LabelMapping)


@dataclass(frozen=True)
class QueryFailure:
    """A query that did not produce rows, with the CamelCase reason for the status condition."""

    reason: str
    message: str


def make_client(config: PrometheusConfig) -> PrometheusConnect:
    session = requests.Session()
    # A CA bundle path verifies against that CA; insecure_skip_verify turns verification off entirely.
    session.verify = False if config.insecure_skip_verify else (config.ca_file or True)
    retry = Retry(
        total=config.retries,
        read=0,  # a query that timed out would time out again; retrying only lengthens the tick and the load
        backoff_factor=config.backoff_seconds,
        status_forcelist=RETRY_STATUSES,
        allowed_methods=frozenset({"GET"}),
        raise_on_status=False,
    )
    headers = {"Authorization": f"Bearer {config.bearer_token}"} if config.bearer_token else None
    url = config.url.rstrip("/")
    client = PrometheusConnect(url, headers, session=session, retry=retry, timeout=config.timeout_seconds)
    # Its adapter pools 10 connections; a tick runs up to max_parallel queries at once.
    session.mount(url, HTTPAdapter(max_retries=retry, pool_maxsize=config.max_parallel))
    return client


def _classify(error: Exception) -> QueryFailure:
    """A failed request as a condition reason; messages are trimmed and never carry request headers."""
    text = str(error)[:_MESSAGE_LIMIT]
    if isinstance(error, requests.exceptions.SSLError):
        return QueryFailure("PrometheusTLSError", text)
    if isinstance(error, requests.exceptions.JSONDecodeError):  # a RequestException, but the server answered
        return QueryFailure("PrometheusBadResponse", f"answer is not JSON: {text}")
    if isinstance(error, requests.exceptions.RequestException):
        return QueryFailure("PrometheusUnreachable", text)
    if isinstance(error, PrometheusApiClientException):
        if "Status Code 401" in text or "Status Code 403" in text:
            return QueryFailure("PrometheusUnauthorized", text)
        if "Status Code 400" in text or "Status Code 422" in text:
            return QueryFailure("PrometheusQueryError", text)
        return QueryFailure("PrometheusError", text)
    return QueryFailure("PrometheusBadResponse", f"{type(error).__name__}: {text}")


def iso_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class PrometheusReader:
    """Implements `SignalsReader` against a Prometheus HTTP API."""

    def __init__(self, config: PrometheusConfig, threads: Executor | None = None) -> None:
        """`threads` runs the blocking queries (the operator shares one pool among all its readers); by
        default the reader gets its own. Never the event loop's default pool: it is small (cores + 4) and
        shared with everything else."""
        self.config = config
        self._client = make_client(config)
        self._threads = threads or ThreadPoolExecutor(config.max_parallel, thread_name_prefix="prometheus")
        self.queries_issued = 0  # for benchmarks and tests: queries sent since creation

    async def answer(self, query: Query, at: float, parallel: asyncio.Semaphore) -> list[dict[str, Any]] | QueryFailure:
        """Rows of one instant query evaluated at `at` (epoch seconds), or why there are none.

        Returned, not raised: a query still in flight when its tick is cancelled (shutdown) must not leave a
        task holding an exception, which Kopf would re-raise from the operator's main coroutine.
        """
        self.queries_issued += 1
        params = {"time": f"{at:.3f}"}
        loop = asyncio.get_running_loop()
        async with parallel:
            try:
                rows = await loop.run_in_executor(self._threads, self._client.custom_query, query.promql, params)
            except Exception as error:  # every failure becomes a reason; none may escape the tick
                return _classify(error)
        if not isinstance(rows, list):
            return QueryFailure("PrometheusBadResponse", f"result of {query.name} is not a list")
        return rows

    async def run(self, queries: Sequence[Query], at: float) -> tuple[dict[str, Any], dict[str, QueryFailure]]:
        """All queries concurrently (up to max_parallel): the answered rows and the failures, by query name."""
        # Made per call so the reader is not tied to one event loop.
        parallel = asyncio.Semaphore(self.config.max_parallel)
        outcomes = await asyncio.gather(*(self.answer(query, at, parallel) for query in queries))
        answered: dict[str, Any] = {}
        failed: dict[str, QueryFailure] = {}
        for query, outcome in zip(queries, outcomes, strict=True):
            if isinstance(outcome, QueryFailure):
                log.warning("Prometheus query %s failed: %s", query.name, outcome.reason)
                failed[query.name] = outcome
            else:
                answered[query.name] = outcome
        return answered, failed

    async def read(
        self, targets: Sequence[FleetTarget], window_seconds: float, at: float | None = None
    ) -> dict[FleetKey, SignalsResult]:
        """Signals of every target over the window ending at `at` (default: now)."""
        if not targets:
            return {}
        at = time.time() if at is None else at
        labels = self.config.labels
        queries = build_queries(fleet_matchers(targets, labels), labels, window_seconds)
        answered, failed = await self.run(queries, at)
        if not answered:
            first = next(iter(failed.values()))
            return {target.key: Unavailable(first.reason, first.message) for target in targets}
        try:
            stats = parse_results(answered, labels)
        except ValueError as error:
            return {target.key: Unavailable("PrometheusBadResponse", str(error)) for target in targets}
        return fleet_signals(stats, targets, window_seconds, iso_time(at), sorted(failed))
