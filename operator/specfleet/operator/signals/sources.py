"""PURE. Prometheus sources: the named ones the cluster admin configures, and how a fleet's spec picks one.

A tenant who may create fleets may not choose where the operator sends a platform credential: named sources
(URL, CA, token from a Secret in the operator's namespace) are the admin's; an inline `spec.prometheus.url`
is honoured only where the admin allows it, only to allowed addresses, and with a credential only from a
Secret of the fleet's own namespace that opts in, over https.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import Field, ValidationError

from specfleet.operator.api.base import ApiModel
from specfleet.operator.api.parse import describe_errors
from specfleet.operator.api.types import (
    MAX_PROMETHEUS_TIMEOUT_SECONDS,
    SOURCE_NAME_PATTERN,
    PrometheusSpec,
    SecretKeyRef,
)
from specfleet.operator.signals.addresses import AddressRules, numeric_address, refusal
from specfleet.operator.signals.model import Unavailable

DEFAULT_SOURCE = "default"
DEFAULT_TIMEOUT_SECONDS = 10.0
DEFAULT_MAX_CONCURRENCY = 16  # one tick's queries at once
CREDENTIALS_LABEL = "specfleet.dev/prometheus-credentials"


class SourceSpec(ApiModel):
    """One named source, as the admin writes it in the operator's sources file."""

    name: str = Field(pattern=SOURCE_NAME_PATTERN, max_length=63)
    url: str = Field(pattern=r"^https?://[^\s]+$", max_length=2048)
    ca_file: str | None = Field(default=None, min_length=1)
    ca_secret_ref: SecretKeyRef | None = None
    bearer_token_secret_ref: SecretKeyRef | None = None
    insecure_skip_verify: bool = False
    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0, le=MAX_PROMETHEUS_TIMEOUT_SECONDS)
    max_concurrency: int = Field(default=DEFAULT_MAX_CONCURRENCY, ge=1, le=64)


class SourcesFile(ApiModel):
    sources: list[SourceSpec] = Field(default_factory=list)


@dataclass(frozen=True)
class SecretRef:
    """A Secret key the operator reads; `opt_in` says the Secret must carry the credentials label."""

    namespace: str
    name: str
    key: str
    opt_in: bool = False


@dataclass(frozen=True)
class Source:
    """Where a fleet's signals come from; fleets with equal sources are read in one batch.

    No URL: the pods are scraped directly. `refused`: the spec asks for something the operator will not do,
    and every read answers that (nothing is sent). `guarded`: a tenant's URL, whose host is judged again
    against the address rules for every connection.
    """

    name: str | None = None  # the named source, or None for an inline URL
    prometheus_url: str | None = None
    token: SecretRef | None = None
    ca_file: str | None = None
    ca: SecretRef | None = None
    insecure_skip_verify: bool = False
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    guarded: bool = False
    refused: Unavailable | None = None

    @property
    def label(self) -> str:
        """How logs and metrics name the source: never its URL, which may carry credentials."""
        if self.prometheus_url is None:
            return "scrape"
        return self.name or f"inline:{urlsplit(self.prometheus_url).hostname}"


@dataclass(frozen=True)
class InlinePolicy:
    """Whether tenants may name a Prometheus URL themselves, and where it may point."""

    allowed: bool = False
    rules: AddressRules = field(default_factory=AddressRules)
    max_concurrency: int = 4  # a tenant's own URL gets a smaller share than an admin's source


@dataclass(frozen=True)
class Catalog:
    """The named sources and the inline policy: everything a fleet's `spec.prometheus` is judged by."""

    sources: Mapping[str, Source]
    inline: InlinePolicy = field(default_factory=InlinePolicy)


def parse_sources(text: str, operator_namespace: str | None) -> dict[str, Source]:
    """The sources file's named sources; one ValueError naming the first problem."""
    raw: Any = yaml.safe_load(text) if text.strip() else {}
    if isinstance(raw, list):  # a bare list is accepted too
        raw = {"sources": raw}
    try:
        parsed = SourcesFile.model_validate(raw or {})
    except ValidationError as exc:
        raise ValueError(f"Prometheus sources: {describe_errors(exc, '')}") from exc
    sources: dict[str, Source] = {}
    for spec in parsed.sources:
        if spec.name in sources:
            raise ValueError(f"Prometheus sources: {spec.name!r} is defined twice")
        secrets = [ref for ref in (spec.bearer_token_secret_ref, spec.ca_secret_ref) if ref is not None]
        if secrets and not operator_namespace:
            raise ValueError(f"Prometheus source {spec.name!r} reads a Secret, but the operator's namespace is unknown")
        sources[spec.name] = named_source(spec, operator_namespace or "")
    return sources


def named_source(spec: SourceSpec, operator_namespace: str) -> Source:
    def ref(key: SecretKeyRef | None) -> SecretRef | None:
        return SecretRef(operator_namespace, key.name, key.key) if key else None

    return Source(
        name=spec.name,
        prometheus_url=spec.url,
        token=ref(spec.bearer_token_secret_ref),
        ca_file=spec.ca_file,
        ca=ref(spec.ca_secret_ref),
        insecure_skip_verify=spec.insecure_skip_verify,
        timeout_seconds=spec.timeout_seconds,
        max_concurrency=spec.max_concurrency,
    )


def with_default_url(sources: dict[str, Source], url: str | None) -> dict[str, Source]:
    """`--prometheus-url` is shorthand for a source named `default` (a file's own `default` wins)."""
    if url is None or DEFAULT_SOURCE in sources:
        return sources
    return {**sources, DEFAULT_SOURCE: Source(name=DEFAULT_SOURCE, prometheus_url=url)}


def _refused(reason: str, message: str) -> Source:
    return Source(refused=Unavailable(reason, message))


def source_of(namespace: str, spec: PrometheusSpec | None, catalog: Catalog) -> Source:
    """The source a fleet's `spec.prometheus` picks, or a refusal saying why none (nothing is ever sent then)."""
    if spec is not None and spec.url is not None:
        return _inline(namespace, spec, catalog.inline)
    name = spec.source if spec is not None and spec.source else DEFAULT_SOURCE
    source = catalog.sources.get(name)
    if source is None:
        if name == DEFAULT_SOURCE:
            return Source()  # no Prometheus configured: scrape the pods directly
        return _refused(
            "PrometheusSourceUnknown",
            f"no Prometheus source named {name!r} is configured in the operator; ask the cluster admin",
        )
    if spec is not None and "timeout_seconds" in spec.model_fields_set:
        return dataclasses.replace(source, timeout_seconds=min(source.timeout_seconds, spec.timeout_seconds))
    return source


def _inline(namespace: str, spec: PrometheusSpec, inline: InlinePolicy) -> Source:
    assert spec.url is not None
    if not inline.allowed:
        return _refused(
            "PrometheusInlineURLRefused",
            "this operator does not allow spec.prometheus.url; use spec.prometheus.source",
        )
    parts = urlsplit(spec.url)
    host = parts.hostname or ""
    address = numeric_address(host)
    if address is not None:  # a numeric host is judged now; names are judged when resolved
        why = refusal(host, [address], inline.rules)
        if why is not None:
            return _refused("PrometheusURLRefused", why)
    token = spec.bearer_token_secret_ref
    if token is not None and parts.scheme != "https":
        return _refused("PrometheusCredentialsRefused", "bearerTokenSecretRef is only ever sent over https")
    return Source(
        prometheus_url=spec.url,
        token=SecretRef(namespace, token.name, token.key, opt_in=True) if token else None,
        insecure_skip_verify=spec.insecure_skip_verify,
        timeout_seconds=spec.timeout_seconds,
        max_concurrency=inline.max_concurrency,
        guarded=True,
    )
