"""PURE policy evaluation: the real policy against static baselines and the hindsight oracle, on one trace.

Every run of a scenario sees the same requests and the same random stream (common random numbers), so the
differences between policies are the policies', not the dice's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from specfleet.operator.api.policy_types import PolicySpec
from specfleet.operator.api.types import SpecDecodeDeploymentSpec
from specfleet.operator.policy.state import SpecConfig
from specfleet.operator.simulator.config import VLLM_DOCUMENTED_TABLE, label, static, table
from specfleet.operator.simulator.controllers import AutoPolicy, Fixed
from specfleet.operator.simulator.fleet import Controller, FleetSimulation, FleetSpec, ProgressFn, RunResult
from specfleet.operator.simulator.hardware import DEPLOYMENTS, GPUS
from specfleet.operator.simulator.perf import METHOD_FAMILY, ReplicaPerf, replica_perf
from specfleet.operator.simulator.traces import Trace
from specfleet.operator.simulator.workload import CLASSES, PromptClass, Requests, generate_requests

FloatArray = NDArray[np.float64]
# After the trace ends no request arrives; the fleet runs this long more so that what was admitted finishes.
DRAIN_SECONDS = 300.0
# The model ids the policy's cost model sees (it guesses size and shape from the name, as in production).
MODEL_IDS = {"8b": "meta-llama/Llama-3.1-8B-Instruct", "70b-tp4": "meta-llama/Llama-3.3-70B-Instruct"}
DRAFT_IDS = {"8b": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "70b-tp4": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"}

BASELINES: dict[str, SpecConfig] = {
    "off": SpecConfig.off(),
    "k=1": static(1),
    "k=3": static(3),
    "k=5": static(5),
    "vllm-table": table(VLLM_DOCUMENTED_TABLE),
}
AUTO = "auto"
ORACLE = "oracle"


@dataclass(frozen=True)
class Slo:
    """What a request must meet to count towards goodput."""

    tpot_seconds: float = 0.05
    ttft_seconds: float = 2.0


@dataclass(frozen=True)
class Scenario:
    """A deployment under a trace."""

    name: str
    trace: Trace
    deployment: str = "8b"  # a key of hardware.DEPLOYMENTS
    gpu: str = "H100"
    replicas: int = 4
    method: str = "eagle3"
    restart_seconds: float = 180.0
    max_batch: int = 1024
    dt: float = 1.0
    seed: int = 0

    def perf(self) -> ReplicaPerf:
        model, tp = DEPLOYMENTS[self.deployment]
        return replica_perf(model, GPUS[self.gpu], tp)

    def classes(self) -> list[PromptClass]:
        unknown = [name for name in self.trace.classes if name not in CLASSES]
        if unknown:
            raise ValueError(f"unknown prompt classes {unknown}: known are {', '.join(CLASSES)}")
        return [CLASSES[name] for name in self.trace.classes]

    def requests(self) -> Requests:
        trace = self.trace
        return generate_requests(trace.times, trace.qps, trace.mix, self.classes(), np.random.default_rng(self.seed))

    def deployment_spec(self) -> SpecDecodeDeploymentSpec:
        """The SpecDecodeDeployment the policy believes it manages."""
        _, tp = DEPLOYMENTS[self.deployment]
        draft = DRAFT_IDS[self.deployment] if self.method in ("eagle3", "draft_model") else None
        return SpecDecodeDeploymentSpec.model_validate(
            {
                "replicas": self.replicas,
                "model": {"name": MODEL_IDS[self.deployment], "tensorParallelSize": tp},
                "speculation": {"mode": "Auto", "method": self.method, "draftModel": draft},
                "runtime": {"accelerator": self.gpu},
            }
        )


def run(
    scenario: Scenario, controller: Controller, requests: Requests, interval: float = 30.0,
    progress: ProgressFn | None = None,
) -> RunResult:  # fmt: skip
    spec = FleetSpec(
        perf=scenario.perf(),
        family=METHOD_FAMILY[scenario.method],
        replicas=scenario.replicas,
        max_batch=scenario.max_batch,
        restart_seconds=scenario.restart_seconds,
        dt=scenario.dt,
        interval=interval,
        model_name=MODEL_IDS[scenario.deployment],
    )
    rng = np.random.default_rng(scenario.seed + 1)
    sim = FleetSimulation(spec, requests, scenario.classes(), controller, rng)
    return sim.run(scenario.trace.duration + DRAIN_SECONDS, progress)


@dataclass(frozen=True)
class Summary:
    """One policy's figures over the trace (latencies in seconds)."""

    name: str
    tpot_mean: float
    tpot_p50: float
    tpot_p90: float
    tpot_p99: float
    e2e_mean: float
    e2e_p50: float
    e2e_p90: float
    e2e_p99: float
    ttft_p90: float
    throughput: float  # generated tokens/s
    goodput: float  # requests/s meeting the SLO
    completed: float  # share of requests finished
    restarts: int
    config_share: dict[str, float]  # share of replica-time in each config


def summarize(name: str, result: RunResult, slo: Slo, duration: float) -> Summary:
    done = ~np.isnan(result.tpot)
    tpot, e2e, ttft = result.tpot[done], result.e2e[done], result.ttft[done]
    good = (tpot <= slo.tpot_seconds) & (ttft <= slo.ttft_seconds)
    total = sum(result.config_seconds.values()) or 1.0

    def pct(values: FloatArray, q: float) -> float:
        return float(np.percentile(values, q)) if len(values) else float("nan")

    return Summary(
        name=name,
        tpot_mean=float(tpot.mean()) if len(tpot) else float("nan"),
        tpot_p50=pct(tpot, 50),
        tpot_p90=pct(tpot, 90),
        tpot_p99=pct(tpot, 99),
        e2e_mean=float(e2e.mean()) if len(e2e) else float("nan"),
        e2e_p50=pct(e2e, 50),
        e2e_p90=pct(e2e, 90),
        e2e_p99=pct(e2e, 99),
        ttft_p90=pct(ttft, 90),
        throughput=float(result.requests.output[done].sum()) / duration,
        goodput=float(good.sum()) / duration,
        completed=float(done.mean()) if len(done) else 0.0,
        restarts=result.restarts,
        config_share={key: seconds / total for key, seconds in sorted(result.config_seconds.items())},
    )


def oracle(results: Mapping[str, RunResult], window: float) -> tuple[RunResult, list[tuple[float, str]]]:
    """Hindsight: per window, the static config whose requests (by arrival) had the lowest mean TPOT.

    Stitched from the static runs, so it pays no restart and no transient: a bound, not a policy.
    """
    names = list(results)
    first = results[names[0]]
    arrival = first.requests.arrival
    windows = (arrival // window).astype(np.int64)
    n_windows = int(windows.max()) + 1 if len(windows) else 0
    means = np.full((len(names), n_windows), np.inf)
    for i, name in enumerate(names):
        tpot = results[name].tpot
        ok = ~np.isnan(tpot)
        sums = np.bincount(windows[ok], weights=tpot[ok], minlength=n_windows)
        counts = np.bincount(windows[ok], minlength=n_windows)
        means[i] = np.where(counts > 0, sums / np.maximum(counts, 1), np.inf)
    choice = means.argmin(axis=0)
    pick = choice[windows]
    stitched = replace(
        first,
        ttft=np.choose(pick, [results[n].ttft for n in names]),
        tpot=np.choose(pick, [results[n].tpot for n in names]),
        e2e=np.choose(pick, [results[n].e2e for n in names]),
        finish=np.choose(pick, [results[n].finish for n in names]),
        restarts=int((np.diff(choice) != 0).sum()),
        timeline=[],
        config_seconds={name: float((choice == i).sum()) * window for i, name in enumerate(names)},
    )
    timeline = [(w * window, names[int(c)]) for w, c in enumerate(choice)]
    return stitched, timeline


@dataclass
class Evaluation:
    scenario: Scenario
    results: dict[str, RunResult] = field(default_factory=dict)
    summaries: dict[str, Summary] = field(default_factory=dict)
    decisions: list[tuple[float, str, str]] = field(default_factory=list)  # Auto's changes: time, action, reason
    oracle_timeline: list[tuple[float, str]] = field(default_factory=list)  # window start, config label


RunProgress = Callable[[str, float, float], None]  # policy name, simulated seconds done, total


def evaluate(
    scenario: Scenario,
    policy: PolicySpec | None = None,
    slo: Slo | None = None,
    baselines: Mapping[str, SpecConfig] = BASELINES,
    oracle_window: float = 300.0,
    progress: RunProgress | None = None,
) -> Evaluation:
    """Auto (the real policy) and every baseline on the same requests, then the oracle over the baselines."""
    slo = slo or Slo()
    requests = scenario.requests()
    evaluation = Evaluation(scenario)

    def tracked(name: str) -> ProgressFn | None:
        return None if progress is None else lambda done, total: progress(name, done, total)

    auto = AutoPolicy(scenario.deployment_spec(), policy)
    evaluation.results[AUTO] = run(scenario, auto, requests, auto.interval_seconds, tracked(AUTO))
    evaluation.decisions = [(t, str(d.action), f"{d.code}: {d.reason}") for t, d in auto.decisions]
    for name, config in baselines.items():
        evaluation.results[name] = run(scenario, Fixed(config), requests, progress=tracked(name))
    statics = {name: evaluation.results[name] for name in baselines}
    evaluation.results[ORACLE], timeline = oracle(statics, oracle_window)
    evaluation.oracle_timeline = [(t, label(baselines[name])) for t, name in timeline]
    duration = scenario.trace.duration
    evaluation.summaries = {name: summarize(name, r, slo, duration) for name, r in evaluation.results.items()}
    return evaluation


@dataclass(frozen=True)
class GoalReport:
    """The issue's goal for Auto, measured: gain over the best static, gap to the oracle, tail, churn."""

    best_static: str
    gain_vs_best_static: float  # relative reduction of mean TPOT (positive: Auto faster)
    gap_to_oracle: float  # relative excess of mean TPOT over the oracle's
    p99_vs_best_static: float  # Auto's p99 TPOT / the best static's
    restarts_per_hour: float

    @property
    def met(self) -> dict[str, bool]:
        return {
            "gain >= 10% vs best static": self.gain_vs_best_static >= 0.10,
            "within 3% of oracle": self.gap_to_oracle <= 0.03,
            "p99 TPOT <= best static": self.p99_vs_best_static <= 1.0,
            "<= 1 restart-bound change/hour": self.restarts_per_hour <= 1.0,
        }


def goal_report(evaluation: Evaluation) -> GoalReport:
    s = evaluation.summaries
    statics = [name for name in BASELINES if name in s]
    best = min(statics, key=lambda name: s[name].tpot_mean)
    auto, hours = s[AUTO], evaluation.scenario.trace.duration / 3600
    return GoalReport(
        best_static=best,
        gain_vs_best_static=1 - auto.tpot_mean / s[best].tpot_mean,
        gap_to_oracle=auto.tpot_mean / s[ORACLE].tpot_mean - 1,
        p99_vs_best_static=auto.tpot_p99 / s[best].tpot_p99,
        restarts_per_hour=auto.restarts / hours,
    )


def latency_vs_load(
    result: RunResult,
    replicas: int,
    bin_seconds: float = 300.0,
    load_bins: int = 12,
    top: float | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Mean TPOT against offered load (arrivals/s per replica), binned over time windows then over load."""
    arrival, tpot = result.requests.arrival, result.tpot
    ok = ~np.isnan(tpot)
    windows = (arrival // bin_seconds).astype(np.int64)
    n = int(windows.max()) + 1 if len(windows) else 0
    load = np.bincount(windows, minlength=n) / bin_seconds / replicas
    tpot_sum = np.bincount(windows[ok], weights=tpot[ok], minlength=n)
    count = np.bincount(windows[ok], minlength=n)
    edges = np.linspace(0.0, top if top is not None else float(load.max()) + 1e-9, load_bins + 1)
    which = np.clip(np.digitize(load, edges) - 1, 0, load_bins - 1)
    sums = np.bincount(which, weights=tpot_sum, minlength=load_bins)
    counts = np.bincount(which, weights=count, minlength=load_bins)
    centres = (edges[:-1] + edges[1:]) / 2
    keep = counts > 0
    return centres[keep], sums[keep] / counts[keep]


def crossover(curves: Mapping[str, tuple[FloatArray, FloatArray]]) -> float | None:
    """The lowest load at which speculation off beats every static speculating config (None if never)."""
    if "off" not in curves:
        return None
    x_off, y_off = curves["off"]
    on = [curves[name] for name in curves if name in BASELINES and name != "off"]
    for x, y in zip(x_off, y_off, strict=True):
        best_on = min((float(yy[np.argmin(np.abs(xx - x))]) for xx, yy in on if len(xx)), default=np.inf)
        if y < best_on:
            return float(x)
    return None
