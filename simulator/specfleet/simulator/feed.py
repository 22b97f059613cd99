"""PURE what a controller of the simulated fleet is fed: the real signals code over the pods' scrapes.

Each evaluation takes one scrape of every simulated pod (the samples its /metrics would expose, through the
same name handling as the direct-scrape reader), keeps the snapshots inside the window, and reduces them with
`specfleet.operator.signals` — the code the operator runs — to one `Signals` value for the running config.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from specfleet.operator.api.types import Signals
from specfleet.operator.signals.model import FleetTarget, PodEndpoint, WindowStats
from specfleet.operator.signals.rates import fleet_signals
from specfleet.operator.signals.snapshot import Sample, Snapshot, add_pod, vllm_metric
from specfleet.simulator.metrics import PodMetrics, families

NAMESPACE = "simulated"


def pod_samples(pod: PodMetrics, model_name: str) -> tuple[Sample, ...]:
    """The samples a scrape of the pod yields (what `signals.scrape.parse_exposition` makes of its text)."""
    return tuple(
        Sample(short, labels, value)
        for family in families(pod, model_name)
        for name, labels, value in family.samples
        if (short := vllm_metric(name)) is not None
    )


def _iso(now: float) -> str:
    """Simulated seconds as an RFC 3339 time on day zero of the epoch."""
    seconds = int(now)
    day, hour, minute, second = 1 + seconds // 86400, seconds // 3600 % 24, seconds // 60 % 60, seconds % 60
    return f"1970-01-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"


@dataclass
class SimulatedScrape:
    """The direct-scrape reader's window bookkeeping, on simulated pods."""

    deployment: str
    model_name: str
    window_seconds: float
    history: dict[str, list[Snapshot]] = field(default_factory=dict)

    def read(self, now: float, pods: Sequence[PodMetrics], ready: Sequence[bool], config_hash: str) -> Signals | None:
        """Signals of the pods running `config_hash` over the window, or None when there are none."""
        current = [pod for pod, up in zip(pods, ready, strict=True) if up and pod.config_hash == config_hash]
        for pod in current:
            kept = [s for s in self.history.get(pod.pod, []) if s.time >= now - self.window_seconds]
            if kept and pod.started_at > kept[-1].time:
                kept = []  # a restarted pod is a new pod: its old snapshots belong to another config
            self.history[pod.pod] = [*kept, Snapshot(now, pod_samples(pod, self.model_name))]
        endpoints = tuple(PodEndpoint(pod.pod, f"sim://{pod.pod}/metrics", config_hash) for pod in current)
        target = FleetTarget(NAMESPACE, self.deployment, config_hash, endpoints)
        stats = WindowStats(pods_now={pod.pod for pod in current})
        for pod in current:
            add_pod(stats, pod.pod, self.history[pod.pod])
        result = fleet_signals({target.config_key: stats}, [target], self.window_seconds, _iso(now))
        signals = result[target.key]
        return signals if isinstance(signals, Signals) else None
