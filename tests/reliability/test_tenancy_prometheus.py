"""A shared cluster, Prometheus side: what a hostile tenant (who may create fleets in one namespace) cannot do.

The real operator (Kopf, in a thread) against the emulator; stand-in HTTP servers record every request a
tenant could point the operator at. Each case here worked for the tenant before named sources existed.
"""

from __future__ import annotations

import base64
import json
import logging
import pathlib
import ssl
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import kubernetes.client
import pytest
import yaml

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.constants import GROUP, SDD_PLURAL, VERSION
from specfleet.operator.runner import BackgroundOperator
from tests.fixtures.operator import operator_config, wait_for
from tests.fixtures.prometheus import free_port
from tests.fixtures.stand_in import Stub, serve
from tests.operator.test_policy_loop import _fleet
from tests.operator.test_reconcile import _create, _sdd
from tests.operator.test_signals_hub import Held
from tests.signals.test_prometheus_errors import certificate  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
PLATFORM_PASSWORD = "platform-db-PASSWORD-91c4e7"
MARKER = "ECHO-MARKER-3f9a1b"
URL_PASSWORD = "url-PASSWORD-77d1e0"


def _secret(namespace: str, name: str, value: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"token": base64.b64encode(value.encode()).decode()},
    }


def _namespace(emulator: EmulatorServer, name: str) -> str:
    emulator.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@contextmanager
def _operator(
    emulator: EmulatorServer,
    kubeconfig: pathlib.Path,
    tmp_path: pathlib.Path,
    sources: list[dict[str, Any]],
    **config: Any,
) -> Iterator[BackgroundOperator]:
    path = tmp_path / f"sources-{free_port()}.yaml"
    path.write_text(yaml.safe_dump({"sources": sources}))
    settings = {"interval_seconds": 1.0, "prometheus_sources": str(path), "operator_namespace": "specfleet-ops"}
    _namespace(emulator, "specfleet-ops")
    with BackgroundOperator(operator_config(kubeconfig, **{**settings, **config})) as operator:
        yield operator


def _fleet_on(namespace: str, name: str, prometheus: dict[str, Any]) -> dict[str, Any]:
    manifest = _fleet(namespace, name)
    manifest["spec"]["prometheus"] = prometheus
    return manifest


def _metrics_condition(emulator: EmulatorServer, namespace: str, name: str) -> dict[str, Any]:
    conditions = (_sdd(emulator, namespace, name).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "MetricsAvailable"), {})


def _reason(emulator: EmulatorServer, namespace: str, name: str, wanted: str | None = None) -> str | None:
    condition = _metrics_condition(emulator, namespace, name)
    reason = condition.get("reason") if condition.get("status") == "False" else None
    return reason if wanted is None or reason == wanted else None


def _authorized(stub: Stub) -> list[str]:
    return [h["Authorization"] for h in stub.headers if "Authorization" in h]


def test_a_tenant_cannot_send_a_secret_it_cannot_read_to_its_own_server(
    emulator: EmulatorServer,
    kubeconfig: pathlib.Path,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    tmp_path: pathlib.Path,
    certificate: tuple[pathlib.Path, pathlib.Path],  # noqa: F811
) -> None:
    """The issue's attack: an unlabelled Secret of the namespace, sent to a tenant server over http."""
    emulator.apply(_secret(namespace, "platform-db", PLATFORM_PASSWORD))
    token = {"name": "platform-db", "key": "token"}
    tenant = Stub(lambda headers: (200, EMPTY))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    tls_tenant = Stub(lambda headers: (200, EMPTY))
    for url in serve(tenant):
        for tls_url in serve(tls_tenant, context):
            # The chart's default: no inline URLs at all.
            with _operator(emulator, kubeconfig, tmp_path, []):
                _create(api_client, _fleet_on(namespace, "by-default", {"url": url, "bearerTokenSecretRef": token}))
                wait_for(
                    lambda: _reason(emulator, namespace, "by-default", "PrometheusInlineURLRefused"), 60, "refusal"
                )
            # Inline URLs allowed, to loopback even: still no credential over http, nor from a Secret that did
            # not opt in, even over https.
            allowed = {"allow_inline_prometheus": True, "inline_prometheus_allow": ("127.0.0.0/8",)}
            with _operator(emulator, kubeconfig, tmp_path, [], **allowed):
                _create(api_client, _fleet_on(namespace, "plain", {"url": url, "bearerTokenSecretRef": token}))
                tls = {"url": tls_url, "bearerTokenSecretRef": token, "insecureSkipVerify": True}
                _create(api_client, _fleet_on(namespace, "unlabelled", tls))
                wait_for(lambda: _reason(emulator, namespace, "plain", "PrometheusCredentialsRefused"), 60, "http")
                wait_for(
                    lambda: _reason(emulator, namespace, "unlabelled", "PrometheusCredentialsRefused"), 60, "opt-in"
                )
                time.sleep(3)  # several ticks: still nothing sent
                assert (_authorized(tenant), _authorized(tls_tenant)) == ([], [])
                condition = _metrics_condition(emulator, namespace, "unlabelled")
                assert "specfleet.dev/prometheus-credentials" in condition["message"]
                # The control: once the Secret opts in, it is sent, over https only.
                emulator.apply(
                    _secret(namespace, "platform-db", PLATFORM_PASSWORD, **{GROUP + "/prometheus-credentials": "true"})
                )
                wait_for(lambda: _authorized(tls_tenant), 60, "the opted-in token over https")
                time.sleep(2)
    assert set(_authorized(tls_tenant)) == {f"Bearer {PLATFORM_PASSWORD}"}
    assert _authorized(tenant) == []


def test_a_named_sources_platform_token_goes_only_where_the_admin_pointed_it(
    emulator: EmulatorServer,
    kubeconfig: pathlib.Path,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    tmp_path: pathlib.Path,
) -> None:
    """A fleet picks the platform source by name: the token (read in the operator's namespace) reaches the
    platform's Prometheus; a fleet that names the token's Secret itself is refused by the API."""
    emulator.apply(_secret("specfleet-ops", "prom-token", PLATFORM_PASSWORD))
    platform = Stub(lambda headers: (200, EMPTY))
    tenant = Stub(lambda headers: (200, EMPTY))
    for platform_url in serve(platform):
        for tenant_url in serve(tenant):
            source = {
                "name": "platform",
                "url": platform_url,
                "bearerTokenSecretRef": {"name": "prom-token", "key": "token"},
            }
            with _operator(emulator, kubeconfig, tmp_path, [source], allow_inline_prometheus=True):
                _create(api_client, _fleet_on(namespace, "picks", {"source": "platform"}))
                _create(api_client, _fleet_on(namespace, "unknown", {"source": "nope"}))
                inline = {"url": tenant_url, "bearerTokenSecretRef": {"name": "prom-token", "key": "token"}}
                _create(api_client, _fleet_on(namespace, "steals", inline))
                wait_for(lambda: _authorized(platform), 60, "the platform token at the platform's Prometheus")
                wait_for(lambda: _reason(emulator, namespace, "unknown", "PrometheusSourceUnknown"), 60, "unknown")
                wait_for(lambda: _reason(emulator, namespace, "steals"), 60, "the inline fleet refused")
                time.sleep(2)
    assert set(_authorized(platform)) == {f"Bearer {PLATFORM_PASSWORD}"}
    assert _authorized(tenant) == []


@pytest.mark.parametrize("host", ["127.0.0.1", "0x7f000001", "2130706433", "localhost", "169.254.169.254"])
def test_inline_urls_to_loopback_and_metadata_are_refused_by_default(
    emulator: EmulatorServer,
    kubeconfig: pathlib.Path,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    tmp_path: pathlib.Path,
    host: str,
) -> None:
    stub = Stub(lambda headers: (200, EMPTY))
    for url in serve(stub):
        port = url.rsplit(":", 1)[1]
        target = f"http://{host}:{port}" if host != "169.254.169.254" else f"http://{host}/"
        with _operator(emulator, kubeconfig, tmp_path, [], allow_inline_prometheus=True):
            _create(api_client, _fleet_on(namespace, "ssrf", {"url": target, "timeoutSeconds": 2}))
            wait_for(lambda: _reason(emulator, namespace, "ssrf", "PrometheusURLRefused"), 60, f"{target} refused")
            time.sleep(2)
        assert stub.hits == 0
        if host == "127.0.0.1":  # the control: where the admin allows loopback, the same URL is read
            with _operator(
                emulator,
                kubeconfig,
                tmp_path,
                [],
                allow_inline_prometheus=True,
                inline_prometheus_allow=("127.0.0.0/8",),
            ):
                wait_for(lambda: stub.hits, 60, f"{target} read when loopback is allowed")


def test_nothing_a_failing_prometheus_sends_reaches_status_events_or_logs(
    emulator: EmulatorServer,
    kubeconfig: pathlib.Path,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    tmp_path: pathlib.Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    stub = Stub(lambda headers: (500, f"<html>internal error {MARKER} at /etc/shadow</html>".encode()))
    for url in serve(stub):
        with_credentials = url.replace("http://", f"http://scraper:{URL_PASSWORD}@")
        with _operator(emulator, kubeconfig, tmp_path, [{"name": "flaky", "url": with_credentials}]):
            _create(api_client, _fleet_on(namespace, "echo", {"source": "flaky"}))
            wait_for(lambda: _reason(emulator, namespace, "echo", "PrometheusError"), 60, "the 500 in status")
            time.sleep(2)
    condition = _metrics_condition(emulator, namespace, "echo")
    assert condition["message"].startswith("Prometheus answered HTTP 500")
    assert stub.hits > 0
    sent = [
        json.dumps(request.body)
        for request in emulator.requests
        if request.namespace == namespace and request.verb != "get"
    ]
    assert any("MetricsAvailable" in body for body in sent)
    assert "Prometheus query" in caplog.text  # the failures were logged, so the log was worth searching
    outputs = {"API writes": "\n".join(sent), "operator log": caplog.text}
    assert {where: [s for s in (MARKER, URL_PASSWORD) if s in text] for where, text in outputs.items()} == {
        "API writes": [],
        "operator log": [],
    }


def _in_flight(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    line = next(line for line in text.splitlines() if line.startswith("specfleet_prometheus_queries_in_flight "))
    return float(line.split()[1])


def test_slow_sources_cost_only_their_own_fleets_and_deleting_them_frees_their_queries(
    emulator: EmulatorServer,
    kubeconfig: pathlib.Path,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    tmp_path: pathlib.Path,
) -> None:
    """Three fleets on three sources that answer after two minutes; one fleet on a healthy source."""
    reads: list[float] = []
    lock = threading.Lock()

    def healthy(headers: dict[str, str]) -> tuple[int, bytes]:
        with lock:
            reads.append(time.monotonic())
        return 200, EMPTY

    slow = [Held(120) for _ in range(3)]
    metrics_port = free_port()
    custom = kubernetes.client.CustomObjectsApi(api_client)
    with serving([Stub(healthy), *(Stub(s) for s in slow)]) as (healthy_url, *slow_urls):
        # The gauge counts every source: the healthy one's single query slot is the 1 in the bound below.
        sources = [{"name": "healthy", "url": healthy_url, "maxConcurrency": 1}] + [
            {"name": f"slow-{i}", "url": url, "timeoutSeconds": 30, "maxConcurrency": 2}
            for i, url in enumerate(slow_urls)
        ]
        with _operator(emulator, kubeconfig, tmp_path, sources, metrics_port=metrics_port):
            for i in range(3):
                _create(api_client, _fleet_on(namespace, f"slow-{i}", {"source": f"slow-{i}"}))
            wait_for(lambda: all(s.now == 2 for s in slow), 60, "every slow source's bulkhead full")
            _create(api_client, _fleet_on(namespace, "healthy", {"source": "healthy"}))
            wait_for(lambda: _reason(emulator, namespace, "healthy", "NoSeries"), 60, "the healthy fleet read")
            start = time.monotonic()
            held = []
            while time.monotonic() - start < 25:  # five of the healthy fleet's 5 s intervals; the slow ones hang
                held.append(_in_flight(metrics_port))
                time.sleep(1)
            with lock:
                during = [t for t in reads if t >= start]
            wait_for(lambda: _in_flight(metrics_port) >= 6, 20, "the slow queries held, two per source")
            for i in range(3):
                custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, SDD_PLURAL, f"slow-{i}")
            wait_for(lambda: _in_flight(metrics_port) == 0, 15, "the deleted fleets' queries released")
    ticks = sorted({round(t - start) // 5 for t in during})
    assert len(ticks) >= 4, f"the healthy fleet was read in only {ticks} of five intervals"
    assert max(held) <= 3 * 2 + 1, f"the slow sources held more queries than their bulkheads allow: {held}"


@contextmanager
def serving(stubs: list[Stub]) -> Iterator[list[str]]:
    """Serve every stub at once, each on its own loopback port."""
    if not stubs:
        yield []
        return
    for url in serve(stubs[0]):
        with serving(stubs[1:]) as rest:
            yield [url, *rest]


@pytest.mark.parametrize(
    "prometheus",
    [
        {"source": "platform", "timeoutSeconds": 300},
        {"source": "platform", "url": "https://prometheus.example"},
        {"source": "platform", "bearerTokenSecretRef": {"name": "prom-token", "key": "token"}},
    ],
)
def test_the_api_refuses_a_timeout_above_the_ceiling_and_contradictory_choices(
    api_client: kubernetes.client.ApiClient, namespace: str, prometheus: dict[str, Any]
) -> None:
    with pytest.raises(kubernetes.client.ApiException) as refused:
        _create(api_client, _fleet_on(namespace, "refused", prometheus))
    assert refused.value.status == 422


def test_a_named_source_verifies_tls_against_the_ca_in_its_secret(
    emulator: EmulatorServer,
    kubeconfig: pathlib.Path,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    tmp_path: pathlib.Path,
    certificate: tuple[pathlib.Path, pathlib.Path],  # noqa: F811
) -> None:
    cert, key = certificate
    _namespace(emulator, "specfleet-ops")
    emulator.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "prom-ca", "namespace": "specfleet-ops"},
            "data": {"ca.crt": base64.b64encode(cert.read_bytes()).decode()},
        }
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    stub = Stub(lambda headers: (200, EMPTY))
    for url in serve(stub, context):
        sources: list[dict[str, Any]] = [
            {"name": "trusted", "url": url, "caSecretRef": {"name": "prom-ca", "key": "ca.crt"}},
            {"name": "untrusted", "url": url},
        ]
        with _operator(emulator, kubeconfig, tmp_path, sources):
            _create(api_client, _fleet_on(namespace, "trusted", {"source": "trusted"}))
            _create(api_client, _fleet_on(namespace, "untrusted", {"source": "untrusted"}))
            wait_for(lambda: _reason(emulator, namespace, "trusted", "NoSeries"), 60, "a read verified by the CA")
            wait_for(lambda: _reason(emulator, namespace, "untrusted", "PrometheusTLSError"), 60, "an untrusted cert")
    assert stub.hits > 0
