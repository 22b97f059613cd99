"""Prometheus faults: each one holds (or falls back to Off when the policy says so), is reported in the
MetricsAvailable condition with its reason, never flaps the fleet, and heals when Prometheus answers again."""

from __future__ import annotations

import pathlib
import time
from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest

from specfleet.emulator import EmulatorServer
from specfleet.operator.runner import BackgroundOperator
from tests.fixtures.operator import operator_config, wait_for
from tests.fixtures.prometheus import PrometheusServer
from tests.operator.test_policy_loop import Kubelet, _fleet, _speculating
from tests.operator.test_reconcile import _create, _patch_spec, _sdd
from tests.reliability.crash import changes, config_hashes
from tests.reliability.faults import FaultProxy

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

# Fault → the MetricsAvailable reasons that describe it.
PROXY_FAULTS = {
    "down": {"PrometheusUnreachable"},
    "slow": {"PrometheusUnreachable"},
    "http500": {"PrometheusError"},
    "garbage": {"PrometheusBadResponse"},
    "nan": {"NonFiniteValues"},
    "inf": {"NonFiniteValues"},
    "empty": {"NoSeries"},
}
HOLD_SECONDS = 3.0  # how long each fault stays on once it is reported (several 1 s ticks)
TIMEOUT_SECONDS = 1  # the fleets' Prometheus timeout; `slow` answers after 3 s


def _metrics_condition(emulator: EmulatorServer, namespace: str, name: str) -> dict[str, Any]:
    conditions = (_sdd(emulator, namespace, name).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "MetricsAvailable"), {})


def _available(emulator: EmulatorServer, namespace: str, name: str, value: str) -> dict[str, Any] | None:
    condition = _metrics_condition(emulator, namespace, name)
    return condition if condition.get("status") == value else None


def _fleet_behind(namespace: str, name: str, proxy: FaultProxy, **policy: Any) -> dict[str, Any]:
    manifest = _fleet(namespace, name, **policy)
    manifest["spec"]["prometheus"] = {"url": proxy.url, "timeoutSeconds": TIMEOUT_SECONDS}
    return manifest


@pytest.fixture
def proxy(prometheus_server: PrometheusServer) -> Iterator[FaultProxy]:
    with FaultProxy(prometheus_server.url, delay=3.0) as running:
        yield running


@pytest.fixture
def fault_operator(emulator: EmulatorServer, kubeconfig: pathlib.Path) -> Iterator[BackgroundOperator]:
    # The fleets name the fault proxy inline, on loopback: allowed explicitly, as an admin would.
    config = operator_config(
        kubeconfig, interval_seconds=1.0, allow_inline_prometheus=True, inline_prometheus_allow=("127.0.0.0/8",)
    )
    with BackgroundOperator(config) as operator:
        yield operator


@pytest.mark.usefixtures("fault_operator")
def test_every_prometheus_fault_holds_reports_and_recovers(
    emulator: EmulatorServer,
    prometheus_server: PrometheusServer,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    proxy: FaultProxy,
) -> None:
    _create(api_client, _fleet_behind(namespace, "steady", proxy, metricsMissingIntervals=2))
    with Kubelet(emulator, prometheus_server, namespace, "steady") as kubelet:
        wait_for(lambda: _available(emulator, namespace, "steady", "True"), 60, "signals before any fault")
        seen: dict[str, str] = {}
        for mode, reasons in PROXY_FAULTS.items():
            proxy.set_mode(mode)
            seen[mode] = _report_and_recover(emulator, namespace, mode, lambda: proxy.set_mode("pass"))
            assert seen[mode] in reasons, f"{mode}: {seen[mode]}"
        kubelet.exporter.pod.restart()  # a counter reset is normal life: rates stay sane, nothing changes
        time.sleep(HOLD_SECONDS)
        wait_for(lambda: _available(emulator, namespace, "steady", "True"), 30, "signals after a counter reset")
        prometheus_server.set_targets(f"{namespace}-steady", [])  # the pod vanishes: its series go stale
        seen["stale"] = _report_and_recover(emulator, namespace, "stale", lambda: setattr(kubelet, "hash", None), 60)
        assert seen["stale"] == "NoSeries"
        assert _speculating(emulator, namespace, "steady")
    hashes = config_hashes(emulator, namespace, "steady")
    assert changes(hashes) == 0, f"the fleet was restarted under bad metrics: {hashes}"
    decisions = _sdd(emulator, namespace, "steady")["status"]["decisions"]
    assert all(not d["applied"] or d["action"] == "hold" for d in decisions)


def _last_reason(emulator: EmulatorServer, namespace: str) -> str:
    decisions = (_sdd(emulator, namespace, "steady").get("status") or {}).get("decisions") or [{}]
    return str(decisions[-1].get("reason", ""))


def _report_and_recover(emulator: EmulatorServer, namespace: str, fault: str, heal: Any, timeout: float = 40) -> str:
    """Wait for the fault in MetricsAvailable, keep it a few ticks, heal it, wait for signals again."""
    condition = wait_for(lambda: _available(emulator, namespace, "steady", "False"), timeout, f"{fault} reported")
    assert condition["message"], condition
    # Once the fault has lasted metricsMissingIntervals ticks, the policy's fallback (Hold) is what it decides.
    wait_for(
        lambda: _last_reason(emulator, namespace).startswith("metrics-missing"),
        30,
        lambda: f"the fallback hold under {fault} (last decision: {_last_reason(emulator, namespace)})",
    )
    assert _last_reason(emulator, namespace).endswith("fallback Hold")
    time.sleep(HOLD_SECONDS)
    still = _metrics_condition(emulator, namespace, "steady")
    assert (still["status"], still["reason"]) == ("False", condition["reason"]), f"{fault}: the condition flapped"
    heal()
    wait_for(lambda: _available(emulator, namespace, "steady", "True"), 60, f"recovery from {fault}")
    return str(condition["reason"])


@pytest.mark.usefixtures("fault_operator")
def test_fallback_off_switches_off_once_and_stays_off(
    emulator: EmulatorServer,
    prometheus_server: PrometheusServer,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
    proxy: FaultProxy,
) -> None:
    _create(api_client, _fleet_behind(namespace, "cautious", proxy, metricsMissingIntervals=2))
    with Kubelet(emulator, prometheus_server, namespace, "cautious"):
        wait_for(lambda: _available(emulator, namespace, "cautious", "True"), 60, "signals before the fault")
        assert _speculating(emulator, namespace, "cautious")
        # Off only once the fleet reports: the ticks before Prometheus has two scrapes of a new pod (here
        # 1 s ticks, 1 s scrapes) have no signals either, and would race the fault this test injects.
        _patch_spec(api_client, namespace, "cautious", {"spec": {"policy": {"fallback": "Off"}}})
        proxy.set_mode("down")
        wait_for(
            lambda: not _speculating(emulator, namespace, "cautious"),
            90,
            f"the fallback to Off ({_sdd(emulator, namespace, 'cautious')['status'].get('decisions')})",
        )
        time.sleep(3 * HOLD_SECONDS)  # many ticks still without metrics: it stays off
        assert not _speculating(emulator, namespace, "cautious")
        proxy.set_mode("pass")
    hashes = config_hashes(emulator, namespace, "cautious")
    assert changes(hashes) == 1, hashes
    disabled = [d for d in _sdd(emulator, namespace, "cautious")["status"]["decisions"] if d["action"] == "disable"]
    assert len(disabled) == 1, disabled
    assert "fallback Off" in disabled[0]["reason"]
