"""High availability: two operator replicas with Kopf peering; only the higher priority acts."""

from __future__ import annotations

import logging
import pathlib
import time
from typing import Any

import kubernetes.client
import pytest

from specfleet.emulator import EmulatorServer
from specfleet.operator.runner import BackgroundOperator
from tests.examples import EXAMPLES, load
from tests.fixtures.operator import in_namespace, operator_config, wait_for
from tests.operator.test_reconcile import _create, _deployment


def _peered(kubeconfig: pathlib.Path, priority: int, peering: str) -> BackgroundOperator:
    return BackgroundOperator(operator_config(kubeconfig, standalone=False, priority=priority, peering=peering))


RESUMED = "Resuming operations after the pause"
HANDLED = "Handler 'on_fleet_changed' succeeded"


def _peers(emulator: EmulatorServer, peering: str) -> dict[str, Any]:
    found = emulator.get("kopf.dev/v1", "clusterkopfpeerings", peering) or {}
    return dict(found.get("status") or {})


def _count(caplog: pytest.LogCaptureFixture, text: str, namespace: str | None = None) -> int:
    """Log lines with `text`; with a namespace, only those about objects in it (other tests' fleets resume too)."""
    return sum(
        text in record.getMessage()
        and (namespace is None or getattr(record, "k8s_ref", {}).get("namespace") == namespace)
        for record in caplog.records
    )


def test_only_the_active_replica_acts_and_the_standby_takes_over(
    emulator: EmulatorServer,
    kubeconfig: pathlib.Path,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    peering = f"ha-{namespace}"
    emulator.apply({"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": peering}})
    caplog.set_level(logging.INFO, logger="kopf")
    active = _peered(kubeconfig, 200, peering).start()
    standby = _peered(kubeconfig, 100, peering).start()
    try:
        # Both announce themselves in the peering object; the lower priority then pauses.
        wait_for(lambda: len(_peers(emulator, peering)) == 2, what="both replicas to register")
        wait_for(lambda: _count(caplog, RESUMED) >= 1, what="the active replica to resume")
        time.sleep(1.0)
        _create(api_client, in_namespace(load(EXAMPLES / "code-assistant-ngram.yaml"), namespace))
        wait_for(lambda: _deployment(emulator, namespace, "code-assistant"), what="the active replica to act")
        wait_for(lambda: _count(caplog, HANDLED, namespace) >= 1, what="the handler to finish")
        time.sleep(1.0)
        assert _count(caplog, HANDLED, namespace) == 1, "the standby acted too"
        active.stop()
        second: dict[str, Any] = in_namespace(load(EXAMPLES / "llama-8b-eagle3.yaml"), namespace)
        _create(api_client, second)
        wait_for(lambda: _deployment(emulator, namespace, "llama-8b"), timeout=30, what="the standby to act")
    finally:
        standby.stop()
        active.stop()
