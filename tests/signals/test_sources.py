"""Pure parts of Prometheus tenancy: judging addresses however they are spelled, and which source a spec picks."""

from __future__ import annotations

import argparse
import ipaddress

import pytest

from specfleet.operator.api.types import PrometheusSpec
from specfleet.operator.config import add_arguments, config_from
from specfleet.operator.signals.addresses import AddressRules, numeric_address, refusal
from specfleet.operator.signals.sources import (
    Catalog,
    InlinePolicy,
    SecretRef,
    Source,
    parse_sources,
    source_of,
    with_default_url,
)

LOOPBACK = ipaddress.ip_address("127.0.0.1")


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0X7F000001", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0177.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f.0.0.0x1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("::ffff:127.0.0.1", "127.0.0.1"),
        ("::ffff:7f00:1", "127.0.0.1"),
        ("0xa9fea9fe", "169.254.169.254"),
        ("2852039166", "169.254.169.254"),
        ("0", "0.0.0.0"),
        ("::1", "::1"),
        ("fe80::1%eth0", "fe80::1"),
    ],
)
def test_numeric_disguises_are_read_as_the_address_they_name(host: str, address: str) -> None:
    assert numeric_address(host) == ipaddress.ip_address(address)


@pytest.mark.parametrize("host", ["prometheus.monitoring.svc", "1e100.net", "08.1.2.3", "256.1.1.1", "1.2.3.4.5", ""])
def test_names_and_impossible_numbers_are_not_addresses(host: str) -> None:
    assert numeric_address(host) is None


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "0x7f000001", "2130706433", "169.254.169.254", "0.0.0.0", "::1", "fd00:ec2::254"]
)
def test_loopback_link_local_metadata_and_unspecified_are_denied_by_default(host: str) -> None:
    address = numeric_address(host)
    assert address is not None
    assert refusal(host, [address], AddressRules()) is not None


def test_a_network_on_the_allow_list_lifts_the_default_denial_for_that_network_only() -> None:
    rules = AddressRules.parse(allow=["127.0.0.0/8"])
    assert refusal("127.0.0.1", [LOOPBACK], rules) is None
    metadata = ipaddress.ip_address("169.254.169.254")
    assert refusal("169.254.169.254", [metadata], rules) is not None
    assert "allow list" in (refusal("10.0.0.1", [ipaddress.ip_address("10.0.0.1")], rules) or "")


def test_every_resolved_address_is_judged_and_deny_wins() -> None:
    public = ipaddress.ip_address("203.0.113.7")
    assert refusal("prom.example", [public], AddressRules()) is None
    assert refusal("prom.example", [public, LOOPBACK], AddressRules()) is not None  # one bad address is enough
    assert refusal("prom.example", [], AddressRules()) is not None
    denied = AddressRules.parse(allow=["203.0.113.0/24"], deny=["203.0.113.7"])
    assert refusal("prom.example", [public], denied) is not None


def test_host_names_are_matched_exactly_or_by_suffix() -> None:
    rules = AddressRules.parse(allow=["*.monitoring.svc.cluster.local"], deny=["evil.monitoring.svc.cluster.local"])
    public = [ipaddress.ip_address("10.1.2.3")]
    assert refusal("prometheus.monitoring.svc.cluster.local", public, rules) is None
    assert refusal("evil.monitoring.svc.cluster.local", public, rules) is not None
    assert refusal("prometheus.tenant.svc.cluster.local", public, rules) is not None
    # A name on the allow list does not lift the default denial of what it resolves to.
    assert refusal("prometheus.monitoring.svc.cluster.local", [LOOPBACK], rules) is not None


def test_an_entry_that_is_neither_network_nor_name_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="neither a network"):
        AddressRules.parse(allow=["http://prometheus:9090"])


SOURCES_FILE = """
sources:
  - name: platform
    url: https://prometheus.monitoring.svc:9090
    bearerTokenSecretRef: {name: prom-token, key: token}
    caSecretRef: {name: prom-ca, key: ca.crt}
    timeoutSeconds: 5
    maxConcurrency: 4
  - name: team-b
    url: http://prometheus.team-b.svc:9090
"""


def test_the_sources_file_names_secrets_in_the_operators_namespace() -> None:
    sources = parse_sources(SOURCES_FILE, "specfleet-system")
    platform = sources["platform"]
    assert platform.token == SecretRef("specfleet-system", "prom-token", "token")
    assert platform.ca == SecretRef("specfleet-system", "prom-ca", "ca.crt")
    assert (platform.timeout_seconds, platform.max_concurrency) == (5, 4)
    assert sources["team-b"].token is None


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("sources: [{name: a, url: http://x}, {name: a, url: http://y}]", "defined twice"),
        ("sources: [{name: a, url: http://x, timeoutSeconds: 300}]", r"^Prometheus sources: sources\[0\]\.timeout"),
        ("sources: [{name: a, url: ftp://x}]", r"^Prometheus sources: sources\[0\]\.url: "),
        ("sources: [{name: a, url: http://x, bearerToken: abc}]", "bearerToken"),
    ],
)
def test_a_bad_sources_file_is_one_clear_error(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_sources(text, "ops")


def test_a_source_reading_a_secret_needs_the_operators_namespace() -> None:
    with pytest.raises(ValueError, match="namespace is unknown"):
        parse_sources(SOURCES_FILE, None)


def test_prometheus_url_is_shorthand_for_the_default_source() -> None:
    catalog = Catalog(with_default_url({}, "http://prometheus:9090"))
    assert source_of("ns", None, catalog).prometheus_url == "http://prometheus:9090"
    assert source_of("ns", None, Catalog({})) == Source()  # nothing configured: scrape the pods


def _spec(**fields: object) -> PrometheusSpec:
    return PrometheusSpec.model_validate(fields)


def test_a_fleet_picks_a_named_source_and_may_only_shorten_its_timeout() -> None:
    catalog = Catalog(parse_sources(SOURCES_FILE, "ops"))
    assert source_of("ns", _spec(source="platform"), catalog) == catalog.sources["platform"]
    assert source_of("ns", _spec(source="platform", timeoutSeconds=2), catalog).timeout_seconds == 2
    assert source_of("ns", _spec(source="platform", timeoutSeconds=20), catalog).timeout_seconds == 5


def test_an_unknown_source_is_refused_with_its_own_reason() -> None:
    refused = source_of("ns", _spec(source="nope"), Catalog({})).refused
    assert refused is not None
    assert refused.reason == "PrometheusSourceUnknown"
    assert "nope" in refused.message


def test_inline_urls_are_refused_unless_the_admin_allows_them() -> None:
    refused = source_of("ns", _spec(url="https://prom.example"), Catalog({})).refused
    assert refused is not None
    assert refused.reason == "PrometheusInlineURLRefused"


@pytest.mark.parametrize("url", ["http://127.0.0.1:9090", "http://0x7f000001:9090", "http://169.254.169.254/"])
def test_inline_numeric_hosts_are_judged_before_anything_is_sent(url: str) -> None:
    catalog = Catalog({}, InlinePolicy(allowed=True))
    refused = source_of("ns", _spec(url=url), catalog).refused
    assert refused is not None
    assert refused.reason == "PrometheusURLRefused"


def test_inline_credentials_need_https_and_an_opted_in_secret_of_the_fleets_namespace() -> None:
    catalog = Catalog({}, InlinePolicy(allowed=True))
    token = {"name": "mine", "key": "token"}
    plain = source_of("team-a", _spec(url="http://prom.example", bearerTokenSecretRef=token), catalog).refused
    assert plain is not None
    assert plain.reason == "PrometheusCredentialsRefused"
    tls = source_of("team-a", _spec(url="https://prom.example", bearerTokenSecretRef=token), catalog)
    assert tls.token == SecretRef("team-a", "mine", "token", opt_in=True)
    assert tls.guarded


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"source": "a", "url": "https://x"}, "at most one"),
        ({"source": "a", "bearerTokenSecretRef": {"name": "s", "key": "k"}}, "only to an inline url"),
        ({"url": "https://user:pass@x"}, "credentials"),
        ({"source": "a", "timeoutSeconds": 31}, "less than or equal to 30"),
    ],
)
def test_the_api_refuses_contradictory_or_unsafe_prometheus_specs(fields: dict[str, object], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        PrometheusSpec.model_validate(fields)


def test_the_operator_flags_configure_inline_urls() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        ["--allow-inline-prometheus", "--inline-prometheus-allow", "10.0.0.0/8,*.svc", "--prometheus-sources", "/s"]
    )
    config = config_from({"SPECFLEET_INLINE_PROMETHEUS_DENY": "10.9.0.0/16"}, args)
    assert config.allow_inline_prometheus
    assert config.inline_prometheus_allow == ("10.0.0.0/8", "*.svc")
    assert config.inline_prometheus_deny == ("10.9.0.0/16",)
    assert config.prometheus_sources == "/s"
    assert not config_from({}).allow_inline_prometheus
