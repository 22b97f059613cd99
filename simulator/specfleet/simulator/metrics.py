"""PURE per-pod vLLM metrics of a simulated replica, and their Prometheus text exposition.

Names, labels and histogram buckets are vLLM's own (V1, checked on vLLM 0.32): the real signals code reads a
simulated pod exactly as it reads an engine. Spec-decode counters exist only while a speculative config is
loaded, with one `position` series per startup k, and everything restarts from zero with the pod.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# vllm.v1.metrics.loggers.histogram_buckets(...) on vLLM 0.32.
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
               40.0, 80.0)  # fmt: skip
LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
                   240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip

TTFT = "vllm:time_to_first_token_seconds"
ITL = "vllm:inter_token_latency_seconds"
TPOT = "vllm:request_time_per_output_token_seconds"
E2E = "vllm:e2e_request_latency_seconds"
HISTOGRAMS = {TTFT: TTFT_BUCKETS, ITL: ITL_BUCKETS, TPOT: ITL_BUCKETS, E2E: LATENCY_BUCKETS}

DRAFTS = "vllm:spec_decode_num_drafts"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens"
ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
SUCCESS = "vllm:request_success"
GENERATION_TOKENS = "vllm:generation_tokens"
PROMPT_TOKENS = "vllm:prompt_tokens"
RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
KV_USAGE = "vllm:kv_cache_usage_perc"


@dataclass(frozen=True)
class Histogram:
    """Non-cumulative bucket counts (the last bucket is +Inf), sum of observations."""

    bounds: tuple[float, ...]
    counts: FloatArray
    total: float

    @property
    def count(self) -> float:
        return float(self.counts.sum())


@dataclass(frozen=True)
class PodMetrics:
    """What one engine pod has counted since it started (a scrape)."""

    pod: str
    config_hash: str
    spec_positions: int  # startup k; 0 when no speculative config is loaded
    started_at: float
    drafts: float
    draft_tokens: float
    accepted: float
    accepted_per_pos: FloatArray
    success: float
    generation_tokens: float
    prompt_tokens: float
    running: float
    waiting: float
    kv_usage: float
    histograms: dict[str, Histogram]


COUNTERS = ("drafts", "draft_tokens", "accepted", "success", "generation_tokens", "prompt_tokens")
GAUGES = ("running", "waiting", "kv_usage")


class FleetCounters:
    """Every pod's metrics as arrays indexed by replica, so a simulation chunk updates them all at once."""

    def __init__(self, replicas: int, positions: int) -> None:
        self.replicas = replicas
        self.values = {name: np.zeros(replicas) for name in (*COUNTERS, *GAUGES)}
        self.per_pos = np.zeros((replicas, positions))
        self.buckets = {name: np.zeros((replicas, len(b) + 1)) for name, b in HISTOGRAMS.items()}
        self.sums = {name: np.zeros(replicas) for name in HISTOGRAMS}

    def reset(self, replica: int) -> None:
        """A restarted pod counts from zero."""
        for array in (*self.values.values(), *self.buckets.values(), *self.sums.values()):
            array[replica] = 0.0
        self.per_pos[replica] = 0.0

    def observe(self, name: str, replica: IntArray, values: FloatArray, weights: FloatArray | None = None) -> None:
        """Histogram observations of several pods at once (fractional weights for aggregated engine steps)."""
        w = np.ones(len(values)) if weights is None else weights
        counts = self.buckets[name]
        index = replica * counts.shape[1] + np.searchsorted(HISTOGRAMS[name], values, side="left")
        counts += np.bincount(index, weights=w, minlength=counts.size).reshape(counts.shape)
        self.sums[name] += np.bincount(replica, weights=values * w, minlength=self.replicas)

    def pod(self, replica: int, name: str, config_hash: str, positions: int, started_at: float) -> PodMetrics:
        """A copy of one pod's metrics, as a scrape would read them."""
        v = {key: float(array[replica]) for key, array in self.values.items()}
        histograms = {
            key: Histogram(HISTOGRAMS[key], self.buckets[key][replica].copy(), float(self.sums[key][replica]))
            for key in HISTOGRAMS
        }
        return PodMetrics(
            pod=name,
            config_hash=config_hash,
            spec_positions=positions,
            started_at=started_at,
            accepted_per_pos=self.per_pos[replica, :positions].copy(),
            histograms=histograms,
            **v,
        )


@dataclass(frozen=True)
class Family:
    """One metric family of the exposition: its samples are (full name, labels, value)."""

    name: str
    kind: str
    doc: str
    samples: tuple[tuple[str, dict[str, str], float], ...]


def families(pod: PodMetrics, model_name: str) -> list[Family]:
    """The pod's metrics as vLLM exposes them (labels `engine`, `model_name`; `position`, `le` where due)."""
    base = {"engine": "0", "model_name": model_name}
    out = [
        Family(name, "gauge", doc, ((name, base, value),))
        for name, value, doc in (
            (RUNNING, pod.running, "Number of requests in model execution batches."),
            (WAITING, pod.waiting, "Number of requests waiting to be processed."),
            (KV_USAGE, pod.kv_usage, "KV-cache usage. 1 means 100 percent usage."),
        )
    ]
    counters = [
        (PROMPT_TOKENS, pod.prompt_tokens, "Number of prefill tokens processed."),
        (GENERATION_TOKENS, pod.generation_tokens, "Number of generation tokens processed."),
    ]
    if pod.spec_positions:  # spec-decode series exist only while a speculative config is loaded
        counters += [
            (DRAFTS, pod.drafts, "Number of spec decoding drafts."),
            (DRAFT_TOKENS, pod.draft_tokens, "Number of draft tokens."),
            (ACCEPTED, pod.accepted, "Number of accepted tokens."),
        ]
    out += [Family(name, "counter", doc, ((f"{name}_total", base, value),)) for name, value, doc in counters]
    if pod.spec_positions:
        per_pos = tuple(
            (f"{ACCEPTED_PER_POS}_total", {**base, "position": str(i)}, float(v))
            for i, v in enumerate(pod.accepted_per_pos)
        )
        out.append(Family(ACCEPTED_PER_POS, "counter", "Accepted tokens per draft position.", per_pos))
    success = ((f"{SUCCESS}_total", {**base, "finished_reason": "length"}, pod.success),)
    out.append(Family(SUCCESS, "counter", "Count of successfully processed requests.", success))
    out += [_histogram_family(name, hist, base) for name, hist in pod.histograms.items()]
    return out


def _histogram_family(name: str, hist: Histogram, base: dict[str, str]) -> Family:
    cumulative = np.cumsum(hist.counts)
    buckets = tuple(
        (f"{name}_bucket", {**base, "le": _fmt(bound)}, float(count))
        for bound, count in zip((*hist.bounds, float("inf")), cumulative, strict=True)
    )
    totals = ((f"{name}_sum", base, hist.total), (f"{name}_count", base, hist.count))
    return Family(name, "histogram", f"Histogram of {name.removeprefix('vllm:')}.", buckets + totals)


def _fmt(value: float) -> str:
    return repr(float(value)) if np.isfinite(value) else "+Inf"


def render_exposition(pod: PodMetrics, model_name: str) -> str:
    """The pod's metrics in Prometheus text format 0.0.4, as vLLM's /metrics serves them."""
    lines: list[str] = []
    for family in families(pod, model_name):
        # prometheus_client (which vLLM uses) names a counter family by its `_total` sample in format 0.0.4.
        header = f"{family.name}_total" if family.kind == "counter" else family.name
        lines += [f"# HELP {header} {family.doc}", f"# TYPE {header} {family.kind}"]
        for name, labels, value in family.samples:
            rendered = ",".join(f'{key}="{val}"' for key, val in labels.items())
            lines.append(f"{name}{{{rendered}}} {_fmt(value)}")
    return "\n".join(lines) + "\n"
