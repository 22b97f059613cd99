"""A dead Prometheus says so once, not once per query per tick: warnings are rate-limited per cause.

The filter alone on a fake clock; then the real reader and the real operator against a closed port, counting
the lines they log over several reads.
"""

from __future__ import annotations

import logging
import pathlib
import urllib.request

import kubernetes.client
import pytest
from prometheus_client.parser import text_string_to_metric_families

from specfleet.operator.lograte import RepeatFilter
from specfleet.operator.runner import BackgroundOperator
from specfleet.operator.signals.model import FleetTarget, LabelMapping
from specfleet.operator.signals.prometheus import PrometheusConfig, PrometheusReader
from specfleet.operator.signals.promql import build_queries
from tests.fixtures.operator import operator_config, wait_for
from tests.fixtures.prometheus import free_port
from tests.operator.test_policy_loop import _fleet
from tests.operator.test_reconcile import _create

READER_LOGGER = "specfleet.operator.signals.prometheus"


def _record(message: str, level: int = logging.WARNING, name: str = "specfleet.test") -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, message, None, None)


def test_a_cause_logs_once_then_a_summary_once_per_interval() -> None:
    now = [0.0]
    repeats = RepeatFilter(interval=60, clock=lambda: now[0])
    assert repeats.filter(_record("Prometheus at a:1 is down"))
    for second in range(1, 60):
        now[0] = second
        assert not repeats.filter(_record("Prometheus at a:1 is down"))
    assert repeats.filter(_record("Prometheus at b:1 is down"))  # another cause
    assert repeats.filter(_record("Prometheus at a:1 is down", logging.INFO))  # not a warning
    now[0] = 61.0
    summary = _record("Prometheus at a:1 is down")
    assert repeats.filter(summary)
    assert summary.getMessage() == "Prometheus at a:1 is down (repeated 59 times in the last 61 s)"
    now[0] = 62.0
    assert not repeats.filter(_record("Prometheus at a:1 is down"))
    now[0] = 200.0
    quiet = _record("Prometheus at a:1 is down")
    assert repeats.filter(quiet)
    assert quiet.getMessage() == "Prometheus at a:1 is down (repeated 1 times in the last 139 s)"


def _failures(caplog: pytest.LogCaptureFixture, host: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == READER_LOGGER and host in r.getMessage()]


async def test_the_reader_logs_a_dead_prometheus_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=READER_LOGGER)
    port = free_port()
    reader = PrometheusReader(PrometheusConfig(url=f"http://127.0.0.1:{port}", retries=1, backoff_seconds=0.01))
    for _ in range(4):
        result = (await reader.read([FleetTarget("ns", "d", "h")], 30))[("ns", "d")]
        assert result.reason == "PrometheusUnreachable"  # type: ignore[union-attr]
    queries = len(build_queries([], LabelMapping(), 30))
    assert _failures(caplog, f"127.0.0.1:{port}") == [
        f"Prometheus query failures at 127.0.0.1:{port}: {queries} of {queries} (PrometheusUnreachable)"
    ]


def _evaluations(metrics_port: int, namespace: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "specfleet_decisions"
        for sample in family.samples
        if sample.name == "specfleet_decisions_total" and sample.labels.get("namespace") == namespace
    )


@pytest.mark.slow
def test_the_operator_logs_a_dead_prometheus_once_over_several_ticks(
    kubeconfig: pathlib.Path,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=READER_LOGGER)
    port, metrics_port = free_port(), free_port()
    config = operator_config(
        kubeconfig,
        interval_seconds=1.0,
        prometheus_url=f"http://127.0.0.1:{port}",
        metrics_port=metrics_port,
        namespaces=(namespace,),
    )
    with BackgroundOperator(config):
        _create(api_client, _fleet(namespace, "dead-prometheus"))
        wait_for(lambda: _evaluations(metrics_port, namespace) >= 3, 90, "three evaluations")
    failures = _failures(caplog, f"127.0.0.1:{port}")
    assert len(failures) == 1, failures
    assert failures[0].endswith("(PrometheusUnreachable)")
