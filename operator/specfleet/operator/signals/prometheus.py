"""SHELL. The Prometheus reader: one batch of instant queries per tick for the whole fleet.

Queries go over aiohttp, so they are coroutines, not threads: a reader bounds how many of its queries are in
flight at once (its source's bulkhead), a tick that outlives its deadline is cancelled, and a cancelled
query closes its connection at once instead of holding a thread until the server answers.

Connection errors and 429/5xx answers are retried with exponential backoff; a query that timed out is not
(it would time out again), so a slow Prometheus costs a tick about one timeout, never a multiple of it.

Nothing a server sends reaches a reason, a log line or a metric: not its body, not its headers, and the URL
only as its host and port. A failure is a fixed sentence with the HTTP status code. The bearer token is only
ever placed in the Authorization header. A failing tick logs one line, rate-limited per cause (lograte.py).
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from specfleet.operator.lograte import rate_limited
from specfleet.operator.signals.addresses import AddressRules, numeric_address, refusal
from specfleet.operator.signals.model import FleetKey, FleetTarget, LabelMapping, SignalsResult, Unavailable
from specfleet.operator.signals.promql import Query, build_queries, fleet_matchers, parse_results
from specfleet.operator.signals.rates import fleet_signals

log = rate_limited(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_ANSWER_BYTES = 32 * 1024 * 1024  # an answer larger than this is refused unread, not buffered
# Prometheus' own error types: only these names are repeated, anything else a server claims is not.
ERROR_TYPES = frozenset({"bad_data", "execution", "timeout", "canceled", "internal", "unavailable", "not_found"})


@dataclass(frozen=True)
class PrometheusConfig:
    """How to reach Prometheus. `bearer_token` is the value itself (the caller reads it from a Secret).

    `guard`: the address rules every connection's resolved addresses must pass (a tenant's inline URL);
    None trusts the URL (a source the admin named).
    """

    url: str
    bearer_token: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    ca_data: str | None = field(default=None, repr=False)  # PEM, e.g. read from a Secret
    insecure_skip_verify: bool = False
    timeout_seconds: float = 10.0
    retries: int = 3
    backoff_seconds: float = 0.5
    max_concurrency: int = 16  # one tick's queries all at once
    labels: LabelMapping = field(default_factory=LabelMapping)
    guard: AddressRules | None = None


@dataclass(frozen=True)
class QueryFailure:
    """A query that did not produce rows, with the CamelCase reason for the status condition."""

    reason: str
    message: str


class AddressRefusedError(OSError):
    """A connection the address rules forbid; raised by the guarded resolver before any connection."""


class GuardedResolver(AbstractResolver):
    """Resolves like aiohttp's default, then refuses the connection unless every address passes the rules.

    Judged at connection time, so a name that resolved to an allowed address when the fleet was admitted and
    to the metadata service now (DNS rebinding) is refused too.
    """

    def __init__(self, rules: AddressRules) -> None:
        self._rules = rules
        self._inner = aiohttp.DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        numeric = numeric_address(host)
        resolved = [] if numeric is not None else await self._inner.resolve(host, port, family)
        addresses = [numeric] if numeric is not None else [numeric_address(r["host"]) for r in resolved]
        why = refusal(host, [a for a in addresses if a is not None], self._rules)
        if why is not None or any(a is None for a in addresses):
            raise AddressRefusedError(why or f"{host} resolves to an address that cannot be judged")
        if numeric is not None:
            return [_result(host, str(numeric), port)]
        return resolved

    async def close(self) -> None:
        await self._inner.close()


def _result(host: str, address: str, port: int) -> ResolveResult:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    return {"hostname": host, "host": address, "port": port, "family": family, "proto": 0, "flags": 0}


def ssl_context(config: PrometheusConfig) -> ssl.SSLContext | bool:
    """A CA bundle (file or PEM) verifies against that CA; insecure_skip_verify turns verification off."""
    if config.insecure_skip_verify:
        return False
    if config.ca_file is None and config.ca_data is None:
        return True
    return ssl.create_default_context(cafile=config.ca_file, cadata=config.ca_data)


def _failure(error: BaseException, timeout: float) -> QueryFailure:
    """A failed request as a fixed reason and sentence; the error's own text is never repeated."""
    if isinstance(error, AddressRefusedError):
        return QueryFailure("PrometheusURLRefused", str(error))  # our own sentence, from the address rules
    if isinstance(error, aiohttp.ClientConnectorError) and isinstance(error.os_error, AddressRefusedError):
        return QueryFailure("PrometheusURLRefused", str(error.os_error))
    if isinstance(error, aiohttp.ClientSSLError | ssl.SSLError):
        return QueryFailure("PrometheusTLSError", "the TLS handshake with Prometheus failed (certificate not trusted?)")
    if isinstance(error, TimeoutError):
        return QueryFailure("PrometheusUnreachable", f"Prometheus did not answer within {timeout:g} s")
    if isinstance(error, aiohttp.ClientConnectorError):
        return QueryFailure("PrometheusUnreachable", "could not connect to Prometheus")
    if isinstance(error, aiohttp.ClientError):
        return QueryFailure("PrometheusUnreachable", f"the connection to Prometheus failed ({type(error).__name__})")
    return QueryFailure("PrometheusBadResponse", f"the answer could not be read ({type(error).__name__})")


def http_failure(status: int) -> QueryFailure:
    sentence = f"Prometheus answered HTTP {status}"
    if status in (401, 403):
        return QueryFailure("PrometheusUnauthorized", sentence)
    if status in (400, 422):
        return QueryFailure("PrometheusQueryError", sentence)
    if 300 <= status < 400:
        return QueryFailure("PrometheusError", f"{sentence} (redirects are not followed)")
    return QueryFailure("PrometheusError", sentence)


def rows_of(body: bytes, name: str) -> list[dict[str, Any]] | QueryFailure:
    """The result rows of an instant query's JSON answer."""
    try:
        answer = json.loads(body)
    except ValueError:
        return QueryFailure("PrometheusBadResponse", "the answer is not JSON")
    if not isinstance(answer, dict):
        return QueryFailure("PrometheusBadResponse", "the answer is not a JSON object")
    if answer.get("status") != "success":
        kind = answer.get("errorType")
        detail = f" ({kind})" if kind in ERROR_TYPES else ""
        return QueryFailure("PrometheusQueryError", f"Prometheus refused the query {name}{detail}")
    rows = (answer.get("data") or {}).get("result") if isinstance(answer.get("data"), dict) else None
    if not isinstance(rows, list):
        return QueryFailure("PrometheusBadResponse", f"result of {name} is not a list")
    return rows


async def _bounded_body(response: aiohttp.ClientResponse) -> bytes | None:
    """The whole body, or None past MAX_ANSWER_BYTES (a hostile or broken server cannot exhaust memory)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def iso_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class PrometheusReader:
    """Implements `SignalsReader` against a Prometheus HTTP API."""

    def __init__(self, config: PrometheusConfig) -> None:
        self.config = config
        self._endpoint = config.url.rstrip("/") + "/api/v1/query"
        url = urlsplit(config.url)
        self.host = f"{url.hostname}:{url.port}" if url.port else str(url.hostname)  # never its credentials
        self._headers = {"Authorization": f"Bearer {config.bearer_token}"} if config.bearer_token else {}
        self._ssl = ssl_context(config)
        self._bulkhead: asyncio.Semaphore | None = None  # made on first use, in the loop that uses it
        self.queries_issued = 0  # for benchmarks and tests: queries sent since creation
        self.in_flight = 0  # queries holding a connection now

    @property
    def deadline(self) -> float:
        """How long a whole batch may take: one query's timeout twice over (a bulkhead's queue, a retried
        connect), the backoff between retries, and a second; past it, the batch is cancelled."""
        backoff = sum(self.config.backoff_seconds * 2.0**attempt for attempt in range(self.config.retries))
        return 2 * self.config.timeout_seconds + backoff + 1

    @property
    def bulkhead(self) -> asyncio.Semaphore:
        """Bounds this source's queries in flight, across every batch that reads it."""
        if self._bulkhead is None:
            self._bulkhead = asyncio.Semaphore(self.config.max_concurrency)
        return self._bulkhead

    def session(self) -> aiohttp.ClientSession:
        """A session per tick: nothing outlives the tick, so a reader holds no sockets between ticks."""
        resolver = GuardedResolver(self.config.guard) if self.config.guard is not None else None
        connector = aiohttp.TCPConnector(limit=self.config.max_concurrency, ssl=self._ssl, resolver=resolver)
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_seconds)
        return aiohttp.ClientSession(connector=connector, timeout=timeout, headers=self._headers)

    async def answer(
        self, session: aiohttp.ClientSession, query: Query, at: float
    ) -> list[dict[str, Any]] | QueryFailure:
        """Rows of one instant query evaluated at `at` (epoch seconds), or why there are none.

        Returned, not raised: a query still in flight when its tick is cancelled (shutdown) must not leave a
        task holding an exception, which Kopf would re-raise from the operator's main coroutine.
        """
        params = {"query": query.promql, "time": f"{at:.3f}"}
        delay = self.config.backoff_seconds
        for attempt in range(self.config.retries + 1):
            outcome, retryable = await self._once(session, params, query.name)
            if not retryable or attempt == self.config.retries:
                return outcome
            await asyncio.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")

    async def _once(
        self, session: aiohttp.ClientSession, params: dict[str, str], name: str
    ) -> tuple[list[dict[str, Any]] | QueryFailure, bool]:
        """One try, and whether another may help (connection errors, 429 and 5xx; never a timeout)."""
        timeout = self.config.timeout_seconds
        async with self.bulkhead:
            self.queries_issued += 1
            self.in_flight += 1
            try:
                async with session.get(self._endpoint, params=params, allow_redirects=False) as response:
                    if response.status != 200:
                        return http_failure(response.status), response.status in RETRY_STATUSES
                    body = await _bounded_body(response)
            except aiohttp.ClientSSLError as error:
                return _failure(error, timeout), False
            except aiohttp.ClientConnectorError as error:
                failure = _failure(error, timeout)
                return failure, failure.reason != "PrometheusURLRefused"
            except aiohttp.ServerDisconnectedError as error:
                return _failure(error, timeout), True
            except Exception as error:  # every failure becomes a reason; none may escape the tick
                return _failure(error, timeout), False
            finally:
                self.in_flight -= 1
        if body is None:
            return QueryFailure("PrometheusBadResponse", "the answer is larger than the operator reads"), False
        return rows_of(body, name), False

    async def run(self, queries: Sequence[Query], at: float) -> tuple[dict[str, Any], dict[str, QueryFailure]]:
        """All queries concurrently (up to the bulkhead): the answered rows and the failures, by query name."""
        async with self.session() as session:
            outcomes = await asyncio.gather(*(self.answer(session, query, at) for query in queries))
        answered: dict[str, Any] = {}
        failed: dict[str, QueryFailure] = {}
        for query, outcome in zip(queries, outcomes, strict=True):
            if isinstance(outcome, QueryFailure):
                failed[query.name] = outcome
            else:
                answered[query.name] = outcome
        if failed:
            reasons = ", ".join(sorted({failure.reason for failure in failed.values()}))
            log.warning("Prometheus query failures at %s: %d of %d (%s)", self.host, len(failed), len(queries), reasons)
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
