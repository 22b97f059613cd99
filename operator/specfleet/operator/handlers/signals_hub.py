"""One batched signals read per tick for every fleet sharing a metrics source, shared by all timers.

Each source is a bulkhead: its reader bounds its own queries in flight and every batch has a deadline, so
a slow or dead Prometheus costs only the fleets that read it. A batch whose fleets are all deleted is
cancelled (its connections close), and a reader no fleet used for a while is dropped.
"""

from __future__ import annotations

import asyncio
import base64
import pathlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import yaml

from specfleet.operator.api.types import PrometheusSpec
from specfleet.operator.config import ConfigError, OperatorConfig, one_line
from specfleet.operator.kubeapi import ApiError, KubeApi, Ref
from specfleet.operator.lograte import rate_limited
from specfleet.operator.signals.addresses import AddressRules
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
from specfleet.operator.signals.sources import (
    CREDENTIALS_LABEL,
    Catalog,
    InlinePolicy,
    SecretRef,
    Source,
    parse_sources,
    source_of,
    with_default_url,
)

log = rate_limited(__name__)  # warned every tick while the cause lasts

# A reader no fleet used for this many timer intervals is dropped (a policy interval longer than that only
# costs a new reader object: readers hold no connection between ticks).
READER_IDLE_INTERVALS = 4
BatchKey = tuple[Source, float]
# In a pod, the namespace it runs in (when --operator-namespace is not given).
SERVICE_ACCOUNT_NAMESPACE = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def load_catalog(config: OperatorConfig) -> Catalog:
    """The admin's sources (the file, then `--prometheus-url` as `default`) and inline policy.

    A bad file or list is the operator's startup error: running with sources other than the admin wrote
    would point fleets somewhere nobody chose.
    """
    namespace = config.operator_namespace or (
        SERVICE_ACCOUNT_NAMESPACE.read_text().strip() if SERVICE_ACCOUNT_NAMESPACE.is_file() else None
    )
    path = config.prometheus_sources
    try:
        text = pathlib.Path(path).read_text() if path else ""
        sources = with_default_url(parse_sources(text, namespace), config.prometheus_url)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"--prometheus-sources {path}: {one_line(exc)}") from None
    try:
        rules = AddressRules.parse(config.inline_prometheus_allow, config.inline_prometheus_deny)
    except ValueError as exc:
        raise ConfigError(f"--inline-prometheus-allow/--inline-prometheus-deny: {exc}") from None
    return Catalog(sources, InlinePolicy(allowed=config.allow_inline_prometheus, rules=rules))


@dataclass(frozen=True)
class Watched:
    """A fleet as the evaluation loop knows it."""

    target: FleetTarget
    source: Source
    window_seconds: float


class CredentialsError(LookupError):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.unavailable = Unavailable(reason, message)


@dataclass
class _Idle:
    reader: PrometheusReader
    used: float


@dataclass
class _InFlight:
    task: asyncio.Task[dict[FleetKey, SignalsResult]]
    fleets: set[FleetKey]


class SignalsHub:
    """Caches each batch for about half an interval, so N timers firing together cost one read."""

    def __init__(
        self,
        config: OperatorConfig,
        api: KubeApi,
        clock: Callable[[], float] = time.time,
        catalog: Catalog | None = None,
    ) -> None:
        self._config = config
        self._api = api
        self._clock = clock
        self.catalog = catalog if catalog is not None else load_catalog(config)
        self._scraper = ScrapeReader()
        self._readers: dict[tuple[Source, str | None, str | None], _Idle] = {}
        self._batches: dict[BatchKey, tuple[float, dict[FleetKey, SignalsResult]]] = {}
        self._locks: dict[BatchKey, asyncio.Lock] = {}
        self._in_flight: dict[BatchKey, _InFlight] = {}

    @property
    def labels(self) -> LabelMapping:
        c = self._config
        return LabelMapping(c.label_namespace, c.label_deployment, c.label_config_hash, c.label_pod)

    @property
    def readers(self) -> int:
        """Prometheus readers held now (for tests and benchmarks)."""
        return len(self._readers)

    def queries_in_flight(self) -> int:
        """Called from the metrics server's thread too: a snapshot of the readers, never the live dict."""
        return sum(idle.reader.in_flight for idle in tuple(self._readers.values()))

    def source_of(self, namespace: str, spec: PrometheusSpec | None) -> Source:
        return source_of(namespace, spec, self.catalog)

    async def read(self, wanted: Watched, fleet: Callable[[], Sequence[Watched]]) -> SignalsResult:
        """`wanted`'s signals; `fleet` lists every watched fleet and is only called when a new batch is read."""
        if wanted.source.refused is not None:
            return wanted.source.refused  # nothing is sent for a spec the operator refuses
        batch_key = (wanted.source, wanted.window_seconds)
        lock = self._locks.setdefault(batch_key, asyncio.Lock())
        async with lock:
            cached = self._batches.get(batch_key)
            stale = cached is None or self._clock() - cached[0] >= self._config.interval_seconds / 2
            if stale or cached is None or wanted.target.key not in cached[1]:
                peers = [w.target for w in fleet() if (w.source, w.window_seconds) == batch_key]
                targets = [*{t.key: t for t in [*peers, wanted.target]}.values()]
                results = await self._in_batch(batch_key, targets)
                cached = (self._clock(), results)
                self._batches[batch_key] = cached
        return cached[1].get(wanted.target.key) or Unavailable("NoSignals", "the fleet was not in the batch")

    async def _in_batch(self, batch_key: BatchKey, targets: list[FleetTarget]) -> dict[FleetKey, SignalsResult]:
        """Read the batch as a task of its own, so `forget` can cancel it once all its fleets are gone."""
        source, window = batch_key
        task = asyncio.ensure_future(self._read_batch(source, targets, window))
        self._in_flight[batch_key] = _InFlight(task, {t.key for t in targets})
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:  # our own caller was cancelled (its fleet deleted, shutdown)
            task.cancel()
            raise
        finally:
            self._in_flight.pop(batch_key, None)
        if task.cancelled():
            return {t.key: Unavailable("FleetDeleted", "the fleet was deleted during the read") for t in targets}
        return task.result()

    def forget(self, key: FleetKey) -> None:
        """A deleted fleet: cancel every batch in flight that no remaining fleet waits for."""
        for batch in list(self._in_flight.values()):
            batch.fleets.discard(key)
            if not batch.fleets:
                batch.task.cancel()
        for batch_key, (_, results) in list(self._batches.items()):
            if key in results and len(results) == 1:
                del self._batches[batch_key]

    async def _read_batch(
        self, source: Source, targets: list[FleetTarget], window: float
    ) -> dict[FleetKey, SignalsResult]:
        try:
            reader = await self._reader(source)
        except CredentialsError as exc:
            return {t.key: exc.unavailable for t in targets}
        except (ValueError, OSError) as exc:  # a CA bundle or URL the client cannot use: say so, never fail the tick
            log.warning("Prometheus source %s is unusable: %s", source.label, type(exc).__name__)
            message = "the source's TLS or URL settings cannot be used; the cluster admin should check them"
            return {t.key: Unavailable("PrometheusConfigInvalid", message) for t in targets}
        if not isinstance(reader, PrometheusReader):
            return await reader.read(targets, window)  # direct scrape: bounded by its own per-pod timeouts
        try:
            async with asyncio.timeout(reader.deadline):
                return await reader.read(targets, window)
        except TimeoutError:
            message = f"Prometheus did not answer within {reader.deadline:g} s"
            return {t.key: Unavailable("PrometheusUnreachable", message) for t in targets}

    async def _reader(self, source: Source) -> SignalsReader:
        if source.prometheus_url is None:
            return self._scraper
        token = await self._secret(source.token, source) if source.token else None
        ca = await self._secret(source.ca, source) if source.ca else None
        # Keyed by the token and CA too, so a rotated Secret gets a fresh client.
        key = (source, token, ca)
        now = self._clock()
        self._evict(now)
        if key not in self._readers:
            self._readers[key] = _Idle(PrometheusReader(self._connection(source, token, ca)), now)
        idle = self._readers[key]
        idle.used = now
        return idle.reader

    def _connection(self, source: Source, token: str | None, ca: str | None) -> PrometheusConfig:
        assert source.prometheus_url is not None
        return PrometheusConfig(
            url=source.prometheus_url,
            bearer_token=token,
            ca_file=source.ca_file,
            ca_data=ca,
            insecure_skip_verify=source.insecure_skip_verify,
            timeout_seconds=source.timeout_seconds,
            max_concurrency=source.max_concurrency,
            labels=self.labels,
            guard=self.catalog.inline.rules if source.guarded else None,
        )

    def _evict(self, now: float) -> None:
        idle_after = READER_IDLE_INTERVALS * self._config.interval_seconds
        for key, idle in list(self._readers.items()):
            if now - idle.used > idle_after and idle.reader.in_flight == 0:
                del self._readers[key]

    async def _secret(self, ref: SecretRef, source: Source) -> str:
        """A Secret's value; a tenant's Secret only if it opts in with the credentials label."""
        # Named sources' Secrets are the admin's: the tenant's status says only that they cannot be read.
        named = "" if ref.opt_in else f"the credentials of Prometheus source {source.name!r}: "
        where = f"Secret {ref.name}" if ref.opt_in else "their Secret"
        try:
            secret = await self._api.get(Ref("v1", "Secret", ref.namespace, ref.name))
        except ApiError as exc:
            raise CredentialsError(
                "PrometheusCredentialsMissing", f"{named}the operator may not read {where} (HTTP {exc.status})"
            ) from None
        if secret is None:
            raise CredentialsError("PrometheusCredentialsMissing", f"{named}{where} does not exist")
        labels = (secret.get("metadata") or {}).get("labels") or {}
        if ref.opt_in and labels.get(CREDENTIALS_LABEL) != "true":
            raise CredentialsError(
                "PrometheusCredentialsRefused",
                f'Secret {ref.name} is not labelled {CREDENTIALS_LABEL}: "true"; only Secrets that opt in are sent',
            )
        encoded = (secret.get("data") or {}).get(ref.key)
        if not encoded:
            raise CredentialsError("PrometheusCredentialsMissing", f"{named}{where} has no key {ref.key!r}")
        return base64.b64decode(encoded).decode().strip()
