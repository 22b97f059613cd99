"""SHELL the local fleet of simulated GPUs: the kubelet of `kubelet.py` with one simulated vLLM replica per pod.

Every `tick` it draws each deployment's arrivals from its trace, routes them over the ready pods (a Service)
and runs every pod's simulated engine up to now; a pod is Ready `startup_delay` seconds after it was created,
and serves vLLM's `/metrics` from its engine on its own loopback port, and (a pod started with a batch-size→k
table) the runtime's live-table control endpoint on another (`control.py`), which swaps its engine's table.

A pod being replaced stops taking requests at once (its queue goes back to the Service) and finishes its
running ones for up to `drain_seconds`: its capacity is lost for the whole rollout step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import kubernetes.client
import numpy as np

from specfleet.demo.control import ControlServer, TableControl
from specfleet.demo.engine import Finished, SimulatedEngine
from specfleet.demo.kubelet import LocalKubelet, LocalPod, NewPod, Target
from specfleet.demo.serving import MetricsServer
from specfleet.demo.traffic import RoundRobin, arrivals
from specfleet.operator.policy.state import SpecConfig
from specfleet.runtime.engine_args import EngineConfig
from specfleet.runtime.table_control import LiveTable, startup_table
from specfleet.simulator.config import label
from specfleet.simulator.evaluation import MODEL_IDS
from specfleet.simulator.hardware import DEPLOYMENTS, GPUS
from specfleet.simulator.perf import METHOD_FAMILY, DraftFamily, ReplicaPerf, replica_perf
from specfleet.simulator.traces import Trace


def perf_for(model: str, gpu: str) -> ReplicaPerf:
    """The simulator's calibrated deployment closest to the model id (the 8B fit unless it names a 70B)."""
    key = next(
        (k for k, model_id in MODEL_IDS.items() if model_id == model),
        "70b-tp4" if "70b" in model.lower() else "8b",
    )
    shape, tp = DEPLOYMENTS[key]
    return replica_perf(shape, GPUS[gpu], tp)


def engine_setup(args: list[str]) -> tuple[str, SpecConfig, DraftFamily]:
    """Model id, speculation config and draft family of a pod, from its container args (vLLM's flags)."""
    config = EngineConfig.from_vllm_args(args)
    spec = config.speculative
    if spec is None:
        return config.served_model_name or config.model, SpecConfig.off(), DraftFamily.EAGLE
    speculation = SpecConfig(enabled=True, k=spec.k, schedule=spec.schedule)
    return config.served_model_name or config.model, speculation, METHOD_FAMILY[spec.method]


@dataclass(kw_only=True)
class SimulatedPod(LocalPod):
    model: str
    engine: SimulatedEngine
    server: MetricsServer
    ready_at: float
    control: ControlServer | None = None

    @property
    def metrics_port(self) -> int:
        return self.server.port

    @property
    def control_port(self) -> int | None:
        return self.control.port if self.control else None


@dataclass(frozen=True)
class Completed:
    """A finished request, with the deployment and configuration that served it."""

    deployment: str
    spec: SpecConfig
    finished: Finished

    @property
    def config(self) -> str:
        """off, k=3, or the table's rows: each table the pods ran is told apart (and priced, see report.py)."""
        return label(self.spec)


@dataclass
class FleetOptions:
    gpu: str = "H100"
    startup_delay: float = 3.0  # seconds from pod creation to Ready (model load, compressed)
    drain_seconds: float = 10.0
    tick: float = 0.1
    sync: float = 0.5
    seed: int = 0
    max_batch: int = 256


@dataclass
class _Deployment:
    traffic: Trace | None = None
    router: RoundRobin = field(default_factory=RoundRobin)
    dropped: int = 0


class LocalFleet(LocalKubelet[SimulatedPod]):
    """Plays kubelet, Deployment controller and GPUs for one namespace."""

    def __init__(
        self,
        client: kubernetes.client.ApiClient,
        namespace: str,
        options: FleetOptions | None = None,
        on_targets: Callable[[list[Target]], None] | None = None,
    ) -> None:
        self.options = options or FleetOptions()
        super().__init__(client, namespace, tick=self.options.tick, sync=self.options.sync, on_targets=on_targets)
        self.rng = np.random.default_rng(self.options.seed)
        self.deployments: dict[str, _Deployment] = {}
        self.completed: list[Completed] = []
        self.traffic_started: float | None = None

    def __enter__(self) -> LocalFleet:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def drive(self, deployment: str, trace: Trace) -> None:
        """Send `trace`'s load to a deployment's ready pods, from the moment traffic starts."""
        with self.lock:
            self.deployments.setdefault(deployment, _Deployment()).traffic = trace

    def start_traffic(self) -> None:
        with self.lock:
            self.traffic_started = self.now()

    def trace_time(self) -> float | None:
        """Seconds into the traces, or None before traffic started."""
        return None if self.traffic_started is None else self.now() - self.traffic_started

    def take_completed(self) -> list[Completed]:
        with self.lock:
            done, self.completed = self.completed, []
        return done

    # ------------------------------------------------------------------ the simulated engines

    def _step(self, now: float) -> None:
        if self.traffic_started is not None:
            start = now - self.traffic_started
            for name, deployment in self.deployments.items():
                if deployment.traffic is None:
                    continue
                ready = [p.engine for p in self.serving(name) if p.ready]
                new = arrivals(deployment.traffic, start - self.options.tick, start, self.rng, self.traffic_started)
                deployment.dropped += deployment.router.route(new, ready)
        for pod in self.pods.values():
            done = pod.engine.advance(now)
            self.completed += [Completed(pod.deployment, pod.engine.config, f) for f in done]

    def _launch(self, pod: NewPod) -> SimulatedPod:
        model, config, family = engine_setup(pod.container.get("args", []))
        engine = SimulatedEngine(
            perf_for(model, self.options.gpu),
            family,
            config,
            started_at=pod.created,
            rng=np.random.default_rng(self.rng.integers(1 << 32)),
            max_batch=self.options.max_batch,
        )
        return SimulatedPod(
            pod.name,
            pod.namespace,
            pod.deployment,
            pod.config_hash,
            pod.created,
            model=model,
            engine=engine,
            server=MetricsServer(lambda: self._exposition(pod.name)).start(),
            ready_at=pod.created + self.options.startup_delay,
            control=self._control(pod, engine),
        )

    def _control(self, pod: NewPod, engine: SimulatedEngine) -> ControlServer | None:
        """The pod's live-table endpoint, when it starts with a batch-size→k table (as the runtime serves it)."""
        spec = EngineConfig.from_vllm_args(pod.container.get("args", [])).speculative
        startup = startup_table(spec)
        if spec is None or startup is None:
            return None

        def apply(table: LiveTable) -> None:
            rows = tuple((last, k) for _, last, k in table.ranges)
            with self.lock:
                engine.config = replace(engine.config, schedule=rows)

        return ControlServer(TableControl(startup, spec.k, spec.method, pod.control_token, apply)).start()

    def _exposition(self, name: str) -> str:
        with self.lock:
            pod = self.pods.get(name)
            return pod.engine.exposition(pod.name, pod.config_hash, pod.model) if pod else ""

    def _engine_ready(self, pod: SimulatedPod) -> bool:
        return self.now() >= pod.ready_at

    def _on_leave(self, pod: SimulatedPod) -> None:
        """Hand the pod's queue back to the Service (the other ready pods)."""
        waiting = pod.engine.take_queue()
        others = [p.engine for p in self.serving(pod.deployment) if p.ready]
        if others:
            for index, request in enumerate(waiting):
                others[index % len(others)].requeue([request])
        elif pod.deployment in self.deployments:
            self.deployments[pod.deployment].dropped += len(waiting)

    def _left(self, pod: SimulatedPod) -> bool:
        assert pod.leaving_since is not None
        return not len(pod.engine.batch) or self.now() - pod.leaving_since > self.options.drain_seconds

    def _release(self, pod: SimulatedPod) -> None:
        pod.server.stop()
        if pod.control is not None:
            pod.control.stop()
