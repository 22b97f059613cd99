"""PURE. Names, targets and results shared by both signal readers and the maths behind them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Protocol

from specfleet.operator.api.types import Signals

# (namespace, SpecDecodeDeployment name)
FleetKey = tuple[str, str]
# (namespace, SpecDecodeDeployment name, config hash)
ConfigKey = tuple[str, str, str]

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclass(frozen=True)
class LabelMapping:
    """Prometheus label names that identify a deployment's pods.

    The defaults are what a PodMonitor produces when it copies the pod labels `specfleet.dev/deployment`
    and `specfleet.dev/config-hash` into target labels (see docs/signals.md for the relabelling).
    """

    namespace: str = "namespace"
    deployment: str = "specfleet_dev_deployment"
    config_hash: str = "specfleet_dev_config_hash"
    pod: str = "pod"

    def __post_init__(self) -> None:
        # Label names go into queries unquoted, so only valid Prometheus label names are accepted.
        for item in fields(self):
            value = getattr(self, item.name)
            if not _LABEL_NAME.fullmatch(value):
                raise ValueError(f"invalid Prometheus label name for {item.name}: {value!r}")

    @property
    def group(self) -> tuple[str, str, str]:
        """The labels every query groups by: one group per configuration of one deployment."""
        return (self.namespace, self.deployment, self.config_hash)


@dataclass(frozen=True)
class PodEndpoint:
    """One pod's metrics endpoint, for the direct-scrape reader."""

    name: str
    metrics_url: str
    config_hash: str


@dataclass(frozen=True)
class FleetTarget:
    """A deployment to read: only series of its current configuration count."""

    namespace: str
    name: str
    config_hash: str
    pods: tuple[PodEndpoint, ...] = ()

    @property
    def key(self) -> FleetKey:
        return (self.namespace, self.name)

    @property
    def config_key(self) -> ConfigKey:
        return (self.namespace, self.name, self.config_hash)


@dataclass(frozen=True)
class Unavailable:
    """Why no signals could be read; feeds the `MetricsAvailable=False` condition."""

    reason: str  # CamelCase, e.g. PrometheusUnreachable
    message: str


SignalsResult = Signals | Unavailable


class SignalsReader(Protocol):
    """What the operator calls once per evaluation tick for the whole fleet."""

    async def read(self, targets: Sequence[FleetTarget], window_seconds: float) -> dict[FleetKey, SignalsResult]: ...


# The metrics read, by short name -> vLLM name without its `vllm:` / `vllm_` prefix.
COUNTERS: Mapping[str, str] = {
    "drafts": "spec_decode_num_drafts_total",
    "draft_tokens": "spec_decode_num_draft_tokens_total",
    "accepted": "spec_decode_num_accepted_tokens_total",
    "success": "request_success_total",
    "prompt_tokens": "prompt_tokens_total",
    "generation_tokens": "generation_tokens_total",
    "tpot_sum": "request_time_per_output_token_seconds_sum",
    "tpot_count": "request_time_per_output_token_seconds_count",
}
PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"
HISTOGRAMS: Mapping[str, str] = {
    "tpot": "request_time_per_output_token_seconds_bucket",
    "ttft": "time_to_first_token_seconds_bucket",
}
GAUGES: Mapping[str, str] = {
    "running": "num_requests_running",
    "waiting": "num_requests_waiting",
    "kv": "kv_cache_usage_perc",
}
# Per-pod gauge statistics over the window: (statistic name, gauge, quantile or None for the mean).
GAUGE_STATS: tuple[tuple[str, str, float | None], ...] = (
    ("running_mean", "running", None),
    ("running_p90", "running", 0.9),
    ("waiting_mean", "waiting", None),
    ("kv_mean", "kv", None),
)
VLLM_PREFIXES = ("vllm:", "vllm_")


@dataclass
class WindowStats:
    """What one configuration of one deployment did over the window, before it becomes `Signals`.

    Both readers fill this, so the maths that follows is shared: counters and gauge statistics per pod,
    per-position and histogram-bucket rates summed over pods.
    """

    counters: dict[str, dict[str, float]] = field(default_factory=dict)  # counter -> pod -> rate/s
    per_position: dict[int, float] = field(default_factory=dict)  # position -> rate/s
    buckets: dict[str, dict[float, float]] = field(default_factory=dict)  # histogram -> le -> rate/s
    gauges: dict[str, dict[str, float]] = field(default_factory=dict)  # statistic -> pod -> value
    pods_now: set[str] | None = None  # pods reporting at the end of the window, when known
