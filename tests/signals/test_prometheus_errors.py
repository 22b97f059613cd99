"""How the Prometheus reader fails: unreachable, garbage, 5xx with retries, auth, TLS; the token never leaks.

A small HTTP server stands in for Prometheus where a real one cannot be made to misbehave on demand.
"""

from __future__ import annotations

import json
import logging
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest

from specfleet.operator.signals.addresses import AddressRules
from specfleet.operator.signals.model import FleetTarget, LabelMapping, Unavailable
from specfleet.operator.signals.prometheus import PrometheusConfig, PrometheusReader
from specfleet.operator.signals.promql import build_queries
from tests.fixtures.deps import require_binary
from tests.fixtures.prometheus import free_port
from tests.fixtures.stand_in import Stub, serve

TOKEN = "s3cret-token-value"
EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()
TARGETS = [FleetTarget("ns", "d", "h")]


async def read_with(url: str, **options: object) -> Unavailable:
    config = PrometheusConfig(url=url, timeout_seconds=2, retries=1, backoff_seconds=0.01, **options)  # type: ignore[arg-type]
    result = (await PrometheusReader(config).read(TARGETS, 30))[TARGETS[0].key]
    assert isinstance(result, Unavailable)
    return result


async def test_unreachable_prometheus_is_a_reason_not_a_crash() -> None:
    result = await read_with(f"http://127.0.0.1:{free_port()}")
    assert result.reason == "PrometheusUnreachable"


@pytest.mark.parametrize(
    "body",
    [
        b"<html>not prometheus</html>",
        json.dumps({"status": "success", "data": {"result": {"a": 1}}}).encode(),
    ],
)
async def test_garbage_answers_are_reported(body: bytes) -> None:
    for url in serve(Stub(lambda headers: (200, body))):
        assert (await read_with(url)).reason == "PrometheusBadResponse"


async def test_server_errors_are_retried_with_backoff_then_reported() -> None:
    stub = Stub(lambda headers: (503, b"overloaded"))
    for url in serve(stub):
        result = await read_with(url)
    assert result.reason == "PrometheusError"
    queries = len(build_queries([], LabelMapping(), 30))
    assert stub.hits == queries * 2  # each query: the first try and one retry


async def test_a_slow_prometheus_costs_a_tick_one_timeout_not_one_per_retry() -> None:
    """Every query of the tick is in flight at once, and a query that timed out is not sent again."""
    in_flight = peak = 0
    lock = threading.Lock()

    def slow(headers: dict[str, str]) -> tuple[int, bytes]:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(3.0)  # beyond the timeout, long enough for every query of the tick to arrive
        with lock:
            in_flight -= 1
        return 200, EMPTY

    stub = Stub(slow)
    for url in serve(stub):
        # A timeout long enough for every query to reach the server even on a loaded machine: a query still
        # connecting when it fires is never sent at all.
        config = PrometheusConfig(url=url, timeout_seconds=2.0, retries=3, backoff_seconds=0.01)
        result = (await PrometheusReader(config).read(TARGETS, 30))[TARGETS[0].key]
    assert isinstance(result, Unavailable)
    assert result.reason == "PrometheusUnreachable"
    queries = len(build_queries([], LabelMapping(), 30))
    assert stub.hits == queries
    assert peak == queries


async def test_bearer_token_is_sent_and_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    stub = Stub(lambda headers: (200, EMPTY) if headers.get("Authorization") == f"Bearer {TOKEN}" else (401, b"no"))
    caplog.set_level(logging.DEBUG)
    for url in serve(stub):
        accepted = await read_with(url, bearer_token=TOKEN)
        refused = await read_with(url, bearer_token="wrong")
        config = PrometheusConfig(url=url, bearer_token=TOKEN)
    assert accepted.reason == "NoSeries"  # Prometheus answered: there is just nothing for this deployment
    assert refused.reason == "PrometheusUnauthorized"
    assert TOKEN not in repr(config)
    assert TOKEN not in caplog.text
    assert TOKEN not in refused.message


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    openssl = require_binary("openssl")
    base = tmp_path_factory.mktemp("tls")
    cert, key = base / "cert.pem", base / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


async def test_tls_verifies_against_the_given_ca_or_is_skipped_on_request(
    certificate: tuple[Path, Path],
) -> None:
    cert, key = certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    for url in serve(Stub(lambda headers: (200, EMPTY)), context):
        unknown_ca = await read_with(url)
        with_ca = await read_with(url, ca_file=str(cert))
        with_ca_data = await read_with(url, ca_data=cert.read_text())  # a CA read from a Secret
        skipped = await read_with(url, insecure_skip_verify=True)
    assert unknown_ca.reason == "PrometheusTLSError"
    assert with_ca.reason == with_ca_data.reason == skipped.reason == "NoSeries"


async def test_nothing_a_failing_server_sends_is_repeated() -> None:
    for url in serve(Stub(lambda headers: (500, b"<pre>Traceback: ECHO-MARKER password=hunter2</pre>"))):
        failed = await read_with(url)
    for url in serve(Stub(lambda headers: (200, b'{"status": "error", "errorType": "ECHO-MARKER", "error": "x"}'))):
        refused = await read_with(url)
    assert (failed.reason, failed.message) == ("PrometheusError", "Prometheus answered HTTP 500")
    assert refused.reason == "PrometheusQueryError"
    assert "ECHO-MARKER" not in refused.message


async def test_a_guarded_reader_connects_only_where_the_address_rules_allow() -> None:
    stub = Stub(lambda headers: (200, EMPTY))
    for url in serve(stub):
        port = url.rsplit(":", 1)[1]
        by_name = await read_with(f"http://localhost:{port}", guard=AddressRules())
        by_number = await read_with(f"http://0x7f000001:{port}", guard=AddressRules())
        assert stub.hits == 0
        allowed = await read_with(url, guard=AddressRules.parse(allow=["127.0.0.0/8"]))
    assert by_name.reason == by_number.reason == "PrometheusURLRefused"
    assert "denied by default" in by_name.message
    assert allowed.reason == "NoSeries"
    assert stub.hits == len(build_queries([], LabelMapping(), 30))


async def test_a_large_answer_is_read_whole() -> None:
    """An answer arriving in many chunks (here 4 MB of rows for another deployment) is parsed, not cut short."""
    labels = {"namespace": "other", "specfleet_dev_deployment": "x"}
    rows: list[dict[str, object]] = [{"metric": {**labels, "pod": f"p{i}"}, "value": [0, "1"]} for i in range(40000)]
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": rows}}).encode()
    assert len(body) > 4_000_000
    for url in serve(Stub(lambda headers: (200, body))):
        result = await read_with(url)
    assert result.reason == "NoSeries"  # every answer was valid JSON; none of its rows is this deployment's
