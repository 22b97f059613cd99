"""The slow loop end to end: Kopf + emulator + a real Prometheus scraping scripted vLLM exporters."""

from __future__ import annotations

import copy
import pathlib
import threading
from collections.abc import Iterator
from typing import Any

import kubernetes.client
import pytest

from specfleet.emulator import EmulatorServer
from specfleet.operator.api.constants import ANNOTATION_PAUSED, GROUP, LABEL_CONFIG_HASH, VERSION
from specfleet.operator.runner import BackgroundOperator
from tests.fixtures.operator import operator_config, wait_for
from tests.fixtures.prometheus import PrometheusServer
from tests.operator.test_reconcile import _args, _create, _deployment, _events, _sdd
from tests.signals.scripted import Exporter, Script

pytestmark = pytest.mark.slow

ACCEPTANCE = (0.5, 0.25, 0.1)
LOW, HIGH = 2.0, 512.0
FAST_POLICY = {
    "intervalSeconds": 5,
    "windowSeconds": 10,
    "dwellSeconds": 4,
    "cooldownSeconds": 0,
    "maxRestartsPerHour": 60,
    "minSamples": 1,
    "rollbackTolerance": 10,
    "readyDeadlineSeconds": 30,
    "schedule": False,
}


def _fleet(namespace: str, name: str, mode: str = "Auto", **policy: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "SpecDecodeDeployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "speculation": {
                "mode": mode,
                "method": "eagle3",
                "draftModel": "eagle/head",
                "maxSpeculativeTokens": 3,
            },
            "policy": {**FAST_POLICY, **policy},
        },
    }


class Kubelet:
    """Plays the Deployment controller and the pod: one scripted exporter that follows the pod template."""

    def __init__(self, emulator: EmulatorServer, prometheus: PrometheusServer, namespace: str, name: str) -> None:
        self.emulator, self.prometheus = emulator, prometheus
        self.namespace, self.name = namespace, name
        self.script = Script(acceptance=ACCEPTANCE, running=LOW, kv=0.01, drafts_per_second=40)
        self.ready = True
        self.exporter = Exporter(self.script)
        self.hash: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def set_load(self, running: float) -> None:
        self.script.running = running

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            deployment = _deployment(self.emulator, self.namespace, self.name)
            if deployment is None:
                continue
            config_hash = deployment["spec"]["template"]["metadata"]["labels"][LABEL_CONFIG_HASH]
            if config_hash != self.hash:
                self._roll(deployment, config_hash)

    def _roll(self, deployment: dict[str, Any], config_hash: str) -> None:
        speculating = any(arg == "--speculative-config" for arg in _args(deployment))
        self.script.acceptance = ACCEPTANCE if speculating else None
        self.exporter.pod.restart()
        labels = {
            "namespace": self.namespace,
            "specfleet_dev_deployment": self.name,
            "specfleet_dev_config_hash": config_hash,
            "pod": f"{self.name}-{config_hash}",
        }
        self.prometheus.set_targets(f"{self.namespace}-{self.name}", [(self.exporter.address, labels)])
        ready = 1 if self.ready else 0
        status = {"replicas": 1, "readyReplicas": ready, "updatedReplicas": 1, "availableReplicas": ready}
        self.emulator.apply({**copy.deepcopy(deployment), "status": status})
        self.hash = config_hash

    def __enter__(self) -> Kubelet:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.prometheus.set_targets(f"{self.namespace}-{self.name}", [])
        self.exporter.close()


@pytest.fixture
def loop_operator(
    emulator: EmulatorServer, kubeconfig: pathlib.Path, prometheus_server: PrometheusServer
) -> Iterator[BackgroundOperator]:
    config = operator_config(kubeconfig, prometheus_url=prometheus_server.url, interval_seconds=1.0)
    with BackgroundOperator(config) as operator:
        yield operator


def _speculating(emulator: EmulatorServer, namespace: str, name: str) -> bool:
    return "--speculative-config" in _args(
        _deployment(emulator, namespace, name) or {"spec": {"template": {"spec": {"containers": [{"args": []}]}}}}
    )


def _decisions(emulator: EmulatorServer, namespace: str, name: str) -> list[dict[str, Any]]:
    return list((_sdd(emulator, namespace, name).get("status") or {}).get("decisions", []))


@pytest.mark.usefixtures("loop_operator")
def test_load_past_the_crossover_turns_speculation_off_and_back_on(
    emulator: EmulatorServer,
    prometheus_server: PrometheusServer,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
) -> None:
    # The scripted pod restarts within seconds and each regime is expected to last two hours: speculating at the
    # light load earns more than a repeat of the peak would cost before the fleet got off (the peak-risk gate).
    _create(api_client, _fleet(namespace, "chat", restartCostSeconds=1, expectedDwellSeconds=7200))
    with Kubelet(emulator, prometheus_server, namespace, "chat") as kubelet:
        wait_for(lambda: kubelet.hash, what="the first pod")
        wait_for(
            lambda: (_sdd(emulator, namespace, "chat").get("status") or {}).get("signals"),
            40,
            "signals in status",
        )
        assert _speculating(emulator, namespace, "chat")
        kubelet.set_load(HIGH)
        wait_for(lambda: not _speculating(emulator, namespace, "chat"), 60, "speculation to be switched off")
        disabled = next(d for d in reversed(_decisions(emulator, namespace, "chat")) if d["action"] == "disable")
        assert disabled["applied"] is True
        assert disabled["reason"]
        assert float(disabled["inputs"]["concurrency"]) > 100
        kubelet.set_load(LOW)
        wait_for(lambda: _speculating(emulator, namespace, "chat"), 90, "speculation to come back")
    reasons = {event["reason"] for event in _events(emulator, namespace)}
    assert {"SpeculationDisabled", "SpeculationEnabled"} <= reasons
    status = _sdd(emulator, namespace, "chat")["status"]
    available = next(c for c in status["conditions"] if c["type"] == "MetricsAvailable")
    assert available["status"] == "True"


def _recommendations(emulator: EmulatorServer, namespace: str) -> list[dict[str, Any]]:
    return [event for event in _events(emulator, namespace) if event["reason"] == "Recommendation"]


def test_recommend_mode_announces_its_advice_once_across_restarts_and_changes_nothing(
    emulator: EmulatorServer,
    prometheus_server: PrometheusServer,
    kubeconfig: pathlib.Path,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
) -> None:
    config = operator_config(kubeconfig, prometheus_url=prometheus_server.url, interval_seconds=1.0)
    _create(api_client, _fleet(namespace, "trial", mode="Recommend"))

    def disables() -> list[dict[str, Any]]:
        return [d for d in _decisions(emulator, namespace, "trial") if d["action"] == "disable"]

    with Kubelet(emulator, prometheus_server, namespace, "trial") as kubelet:
        kubelet.set_load(HIGH)
        with BackgroundOperator(config):
            wait_for(lambda: kubelet.hash, what="the pod")
            first_hash = kubelet.hash
            # The same advice, evaluated again and again (each with its own figures in the reason).
            wait_for(lambda: len(disables()) >= 3, 90, "three evaluations advising to disable")
        seen = len(disables())
        with BackgroundOperator(config):  # a restarted operator finds the advice in status
            wait_for(lambda: len(disables()) >= seen + 2, 60, "two more evaluations after the restart")
        assert all(d["applied"] is False for d in disables())
        assert _speculating(emulator, namespace, "trial")
        assert kubelet.hash == first_hash
    (announced,) = _recommendations(emulator, namespace)
    assert announced["message"].startswith("would disable → off: ")
    assert announced["source"]["component"] == announced["reportingComponent"] == "specfleet"
    recommendation = _sdd(emulator, namespace, "trial")["status"]["recommendation"]
    assert (recommendation["action"], recommendation["target"]) == ("disable", "off")


@pytest.mark.usefixtures("loop_operator")
def test_paused_fleet_is_left_alone(
    emulator: EmulatorServer,
    prometheus_server: PrometheusServer,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
) -> None:
    fleet = _fleet(namespace, "frozen")
    fleet["metadata"]["annotations"] = {ANNOTATION_PAUSED: "true"}
    _create(api_client, fleet)
    with Kubelet(emulator, prometheus_server, namespace, "frozen") as kubelet:
        kubelet.set_load(HIGH)
        wait_for(lambda: kubelet.hash, what="the pod")
        held = wait_for(
            lambda: [d for d in _decisions(emulator, namespace, "frozen") if "paused" in d["reason"]],
            40,
            "a paused decision",
        )
        assert held[-1]["applied"] is False
        assert _speculating(emulator, namespace, "frozen")


@pytest.mark.usefixtures("loop_operator")
def test_a_config_whose_pods_never_get_ready_is_rolled_back(
    emulator: EmulatorServer,
    prometheus_server: PrometheusServer,
    api_client: kubernetes.client.ApiClient,
    namespace: str,
) -> None:
    _create(api_client, _fleet(namespace, "fragile"))
    with Kubelet(emulator, prometheus_server, namespace, "fragile") as kubelet:
        wait_for(lambda: kubelet.hash, what="the pod")
        good = kubelet.hash
        kubelet.ready = False  # the next configuration crash-loops
        kubelet.set_load(HIGH)
        wait_for(lambda: kubelet.hash != good, 60, "a change to a new configuration")
        rollback = wait_for(
            lambda: [d for d in _decisions(emulator, namespace, "fragile") if d["action"] == "rollback"],
            90,
            "the rollback",
        )
        assert "rollback-unready" in rollback[-1]["reason"]
        wait_for(lambda: kubelet.hash == good, 30, "the last good configuration to run again")
    assert "RolledBack" in {event["reason"] for event in _events(emulator, namespace)}
