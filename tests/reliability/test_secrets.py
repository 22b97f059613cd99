"""No secret value leaks: plant known tokens, run the operator against an authenticating Prometheus front,
then search every output (status and Event bodies sent to the API, the operator's log, its /metrics)."""

from __future__ import annotations

import base64
import json
import pathlib
import time
import urllib.request

import kubernetes.client
import pytest

from specfleet.emulator import EmulatorServer
from tests.examples import EXAMPLES, load
from tests.fixtures.operator import in_namespace, wait_for
from tests.fixtures.prometheus import PrometheusServer, free_port
from tests.operator.test_reconcile import _create, _deployment, _sdd
from tests.reliability.faults import FaultProxy
from tests.reliability.process import OperatorProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PROMETHEUS_TOKEN = "prom-TOKEN-5f1e0c9a-never-print-me"
HUB_TOKEN = "hf_HUBTOKEN-7d2b4e11-never-print-me"
SECRETS = (PROMETHEUS_TOKEN, HUB_TOKEN)
OUTPUT_RESOURCES = {"specdecodedeployments", "events", "deployments", "services", "poddisruptionbudgets"}


def _secret(namespace: str, name: str, value: str) -> dict[str, object]:
    data = {"token": base64.b64encode(value.encode()).decode()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace}, "data": data}


def _leaks(text: str) -> list[str]:
    forms = [form for secret in SECRETS for form in (secret, base64.b64encode(secret.encode()).decode())]
    return [form for form in forms if form in text]


def test_tokens_never_reach_status_events_logs_or_metrics(
    emulator: EmulatorServer,
    kubeconfig: pathlib.Path,
    prometheus_server: PrometheusServer,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    tmp_path: pathlib.Path,
) -> None:
    emulator.apply(_secret(namespace, "prom-token", PROMETHEUS_TOKEN))
    emulator.apply(_secret(namespace, "hf-token", HUB_TOKEN))  # the example's HF_TOKEN valueFrom
    emulator.apply(in_namespace(load(EXAMPLES / "sre-default-policy.yaml"), namespace))
    fleet = in_namespace(load(EXAMPLES / "llama-8b-eagle3.yaml"), namespace)
    metrics_port = free_port()
    with FaultProxy(prometheus_server.url, token=PROMETHEUS_TOKEN) as proxy:
        # The token is a named source's, read in the operator's namespace (here the test's own).
        sources = tmp_path / "sources.yaml"
        source = {"name": "front", "url": proxy.url, "bearerTokenSecretRef": {"name": "prom-token", "key": "token"}}
        sources.write_text(json.dumps({"sources": [source]}))
        fleet["spec"]["prometheus"] = {"source": "front"}
        fleet["spec"]["policy"] = {"intervalSeconds": 5, "windowSeconds": 10}
        flags = ("--standalone", "--prometheus-sources", str(sources), "--operator-namespace", namespace)
        with OperatorProcess(kubeconfig, tmp_path / "operator.log", metrics_port=metrics_port, extra=flags) as operator:
            _create(api_client, fleet)
            wait_for(lambda: proxy.authorized >= 5, 60, "queries carrying the token")
            proxy.set_mode("http500")  # failures produce error reasons and log lines: they must not echo headers
            time.sleep(4)
            proxy.token = "rotated"  # 401s: the credentials are now wrong
            wait_for(lambda: _reason(emulator, namespace) == "PrometheusUnauthorized", 60, "the 401 in status")
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
                metrics = response.read().decode()
            assert "specfleet_metrics_available" in metrics
        log = operator.log()
    deployment = _deployment(emulator, namespace, "llama-8b")
    assert deployment is not None
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}} in env
    sent = [
        json.dumps(request.body)
        for request in emulator.requests
        if request.namespace == namespace and request.resource in OUTPUT_RESOURCES and request.verb != "get"
    ]
    assert len(sent) > 5
    assert "Prometheus query" in log  # the failures were logged, so the log was worth searching
    outputs = {"API writes": "\n".join(sent), "operator log": log, "/metrics": metrics}
    assert {where: _leaks(text) for where, text in outputs.items() if _leaks(text)} == {}
    assert _leaks(json.dumps(_sdd(emulator, namespace, "llama-8b"))) == []


def _reason(emulator: EmulatorServer, namespace: str) -> str | None:
    conditions = (_sdd(emulator, namespace, "llama-8b").get("status") or {}).get("conditions") or []
    return next((c["reason"] for c in conditions if c["type"] == "MetricsAvailable"), None)
