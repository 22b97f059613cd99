"""PURE policy evaluation: the real policy against static baselines and the hindsight oracle, on one trace.

Every run of a scenario sees the same requests and the same random stream (common random numbers), so the
differences between policies are the policies', not the dice's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from specfleet.operator.api.policy_types import PolicySpec
from specfleet.operator.api.types import SpecDecodeDeploymentSpec
from specfleet.operator.policy.belief import SpeedupBelief
from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.calibration import speedup_curve
from specfleet.simulator.config import VLLM_DOCUMENTED_TABLE, label, static, table
from specfleet.simulator.controllers import AutoPolicy, Fixed
from specfleet.simulator.fleet import Controller, FleetSimulation, FleetSpec, ProgressFn, RunResult
from specfleet.simulator.hardware import DEPLOYMENTS, GPUS
from specfleet.simulator.perf import METHOD_FAMILY, PAST_KNEE_SHARE, ReplicaPerf, replica_perf
from specfleet.simulator.traces import Trace
from specfleet.simulator.workload import CLASSES, PromptClass, Requests, generate_requests

FloatArray = NDArray[np.float64]
# After the trace ends no request arrives; the fleet runs this long more so that what was admitted finishes.
DRAIN_SECONDS = 300.0
# A run that leaves more than this share of its requests unfinished is flagged as saturated.
SATURATED_BELOW = 0.99
# The model ids the policy's cost model sees (it guesses size and shape from the name, as in production).
MODEL_IDS = {
    "8b": "meta-llama/Llama-3.1-8B-Instruct",
    "70b-tp4": "meta-llama/Llama-3.3-70B-Instruct",
    "qwen3-8b": "Qwen/Qwen3-8B",
}
DRAFT_IDS = {
    ("8b", "eagle3"): "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    ("70b-tp4", "eagle3"): "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B",
    ("qwen3-8b", "eagle3"): "Tengyunw/qwen3_8b_eagle3",
    ("8b", "draft_model"): "meta-llama/Llama-3.2-1B-Instruct",
    ("70b-tp4", "draft_model"): "meta-llama/Llama-3.2-1B-Instruct",
    ("qwen3-8b", "draft_model"): "Qwen/Qwen3-0.6B",
}

BASELINES: dict[str, SpecConfig] = {
    "off": SpecConfig.off(),
    **{f"k={k}": static(k) for k in range(1, 6)},
    "vllm-table": table(VLLM_DOCUMENTED_TABLE),
}
# Candidate tables for the best hindsight static table (one table for the whole trace, chosen afterwards).
TABLE_CANDIDATES: dict[str, SpecConfig] = {
    name: table(rows)
    for name, rows in (
        ("table-a", ((32, 5), (64, 3), (1 << 20, 1))),
        ("table-b", ((16, 4), (64, 2), (1 << 20, 1))),
        ("table-c", ((32, 3), (128, 1), (1 << 20, 0))),
        ("table-d", ((64, 5), (128, 3), (1 << 20, 2))),
    )
}
AUTO = "auto"
# Per window the best static run, stitched for free: knows the future and pays no restart. Not a bound on
# what an in-engine table can do (a table adapts within a window too).
ORACLE = "free-oracle"
# The same hindsight choice, but every restart-bound switch pays what a rolling restart costs at that load.
RESTART_ORACLE = "restart-oracle"
BEST_TABLE = "best-table"
# Simulation truths: the performance model the fleet runs on. The policy's prior is never told which.
TRUTHS = ("calibrated", "steep", "h200", "drafter-2x")
STEEP_PAST_KNEE_SHARE = 1.5


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
    truth: str = "calibrated"  # one of TRUTHS: what the simulated fleet really runs on
    surge: bool = False  # roll with a surge pod: capacity never drops below `replicas`

    def perf(self) -> ReplicaPerf:
        """The fleet's true performance model (the policy believes `gpu` and its own prior)."""
        if self.truth not in TRUTHS:
            raise ValueError(f"unknown truth {self.truth!r}: one of {', '.join(TRUTHS)}")
        model, tp = DEPLOYMENTS[self.deployment]
        gpu = GPUS["H200"] if self.truth == "h200" else GPUS[self.gpu]
        share = STEEP_PAST_KNEE_SHARE if self.truth == "steep" else PAST_KNEE_SHARE
        perf = replica_perf(model, gpu, tp, past_knee_share=share)
        return perf.with_draft_scale(2.0) if self.truth == "drafter-2x" else perf

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
        draft = DRAFT_IDS[(self.deployment, self.method)] if self.method in ("eagle3", "draft_model") else None
        return SpecDecodeDeploymentSpec.model_validate(
            {
                "replicas": self.replicas,
                "model": {"name": MODEL_IDS[self.deployment], "tensorParallelSize": tp},
                "speculation": {"mode": "Auto", "method": self.method, "draftModel": draft},
                "runtime": {"accelerator": self.gpu},
                "rollout": {"maxSurge": 1 if self.surge else 0},  # what the SRE declares: spare GPUs or none
            }
        )


def run_fleets(
    scenario: Scenario, controllers: Sequence[Controller], requests: Requests, interval: float = 30.0,
    progress: ProgressFn | None = None,
) -> list[RunResult]:  # fmt: skip
    """One run per controller, simulated side by side (independent fleets on the same requests)."""
    spec = FleetSpec(
        perf=scenario.perf(),
        family=METHOD_FAMILY[scenario.method],
        replicas=scenario.replicas,
        max_batch=scenario.max_batch,
        restart_seconds=scenario.restart_seconds,
        surge=scenario.surge,
        dt=scenario.dt,
        interval=interval,
        model_name=MODEL_IDS[scenario.deployment],
        ceiling_k=scenario.deployment_spec().speculation.max_speculative_tokens,
    )
    rng = np.random.default_rng(scenario.seed + 1)
    sim = FleetSimulation(spec, requests, scenario.classes(), controllers, rng)
    sim.run(scenario.trace.duration + DRAIN_SECONDS, progress)
    return sim.results


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
    live_changes: int
    saturated: bool  # requests left unfinished: the fleet measured its queue, not its policy
    config_share: dict[str, float]  # share of replica-time in each config


def summarize(name: str, result: RunResult, slo: Slo, duration: float) -> Summary:
    done = ~np.isnan(result.tpot)
    tpot, e2e, ttft = result.tpot[done], result.e2e[done], result.ttft[done]
    good = (tpot <= slo.tpot_seconds) & (ttft <= slo.ttft_seconds)
    total = sum(result.config_seconds.values()) or 1.0

    def pct(values: FloatArray, *q: float) -> list[float]:
        """The q-th percentiles of `values`, from one partial sort (a day's run has millions of requests)."""
        return [float(v) for v in np.percentile(values, q)] if len(values) else [float("nan")] * len(q)

    (tpot_p50, tpot_p90, tpot_p99), (e2e_p50, e2e_p90, e2e_p99) = pct(tpot, 50, 90, 99), pct(e2e, 50, 90, 99)
    return Summary(
        name=name,
        tpot_mean=float(tpot.mean()) if len(tpot) else float("nan"),
        tpot_p50=tpot_p50,
        tpot_p90=tpot_p90,
        tpot_p99=tpot_p99,
        e2e_mean=float(e2e.mean()) if len(e2e) else float("nan"),
        e2e_p50=e2e_p50,
        e2e_p90=e2e_p90,
        e2e_p99=e2e_p99,
        ttft_p90=pct(ttft, 90)[0],
        throughput=float(result.requests.output[done].sum()) / duration,
        goodput=float(good.sum()) / duration,
        completed=float(done.mean()) if len(done) else 0.0,
        restarts=result.restarts,
        live_changes=result.live_changes,
        saturated=bool(len(done)) and float(done.mean()) < SATURATED_BELOW,
        config_share={key: seconds / total for key, seconds in sorted(result.config_seconds.items())},
    )


@dataclass(frozen=True)
class Windows:
    """Every candidate run's total TPOT per arrival window; inf where it finished under 99 % of the window."""

    names: list[str]
    index: NDArray[np.int64]  # window of each request
    totals: FloatArray  # (runs, windows) summed TPOT of the window's requests
    counts: FloatArray  # (runs, windows) finished requests
    arrivals: FloatArray  # (windows,) requests that arrived

    @property
    def means(self) -> FloatArray:
        full = self.counts >= SATURATED_BELOW * self.arrivals[None, :]
        means: FloatArray = np.where(full & (self.counts > 0), self.totals / np.maximum(self.counts, 1), np.inf)
        return means


def windows_of(results: Mapping[str, RunResult], window: float) -> Windows:
    names = list(results)
    arrival = results[names[0]].requests.arrival
    index = (arrival // window).astype(np.int64)
    n = int(index.max()) + 1 if len(index) else 0
    totals, counts = np.zeros((len(names), n)), np.zeros((len(names), n))
    for i, name in enumerate(names):
        tpot = results[name].tpot
        ok = ~np.isnan(tpot)
        totals[i] = np.bincount(index[ok], weights=tpot[ok], minlength=n)
        counts[i] = np.bincount(index[ok], minlength=n)
    return Windows(names, index, totals, counts, np.bincount(index, minlength=n).astype(float))


def _stitch(
    results: Mapping[str, RunResult], w: Windows, choice: NDArray[np.int64], window: float, restarts: int
) -> RunResult:
    pick = choice[w.index]
    runs = [results[name] for name in w.names]
    return replace(
        runs[0],
        ttft=np.choose(pick, [r.ttft for r in runs]),
        tpot=np.choose(pick, [r.tpot for r in runs]),
        finish=np.choose(pick, [r.finish for r in runs]),
        restarts=restarts,
        live_changes=int((np.diff(choice) != 0).sum()) - restarts,
        timeline=[],
        config_seconds={name: float((choice == i).sum()) * window for i, name in enumerate(w.names)},
    )


def _hold_where_unknown(means: FloatArray) -> NDArray[np.int64]:
    """Per window the lowest mean; a window where no run finished keeps the previous choice (no credit)."""
    choice: NDArray[np.int64] = np.asarray(means.argmin(axis=0), np.int64)
    known = np.asarray(np.isfinite(means).any(axis=0), bool)
    for i in range(1, len(choice)):
        if not known[i]:
            choice[i] = choice[i - 1]
    return choice


def oracle(results: Mapping[str, RunResult], window: float) -> tuple[RunResult, list[tuple[float, str]]]:
    """Hindsight: per window, the run whose requests (by arrival) had the lowest mean TPOT, switching for free.

    Stitched from the candidate runs: knows the future, pays no restart and no transient. It is not a bound on
    an in-engine table, which adapts within a window too.
    """
    w = windows_of(results, window)
    choice = _hold_where_unknown(w.means)
    stitched = _stitch(results, w, choice, window, restarts=int((np.diff(choice) != 0).sum()))
    return stitched, [(i * window, w.names[int(c)]) for i, c in enumerate(choice)]


def live_switch(current: SpecConfig, new: SpecConfig) -> bool:
    """A change the engine takes without a restart (same rule as the fleet's pods)."""
    return current.enabled and new.enabled and new.k <= current.k


def restart_penalty(
    w: Windows, replicas: int, restart_seconds: float, window: float, surge: bool = False
) -> FloatArray:
    """(runs, windows) extra TPOT-seconds of rolling a fleet into each run's config at each window's load.

    While the roll lasts (replicas · restart_seconds), N-1 pods carry the load of N: each request pays the
    difference between that config's mean TPOT at N/(N-1) times the window's load and at its load, read off
    the config's own latency-against-load curve over the trace (extended past the highest load it saw along
    its last segment: an underestimate where the surge would saturate the remaining pods).
    """
    load = w.arrivals / window
    means = w.means
    penalty = np.zeros_like(means)
    if surge:  # a surge pod stands in while each pod restarts: the roll costs GPU time, not latency
        return penalty
    crowding = replicas / max(replicas - 1, 1)
    affected = load * replicas * restart_seconds
    for i in range(len(w.names)):
        ok = np.isfinite(means[i])
        if ok.sum() < 2:
            penalty[i] = np.inf
            continue
        order = np.argsort(load[ok])
        x, y = load[ok][order], np.maximum.accumulate(means[i][ok][order])
        penalty[i] = affected * np.maximum(_extended(load * crowding, x, y) - _extended(load, x, y), 0.0)
    return penalty


def _extended(at: FloatArray, x: FloatArray, y: FloatArray) -> FloatArray:
    """Piecewise-linear through (x, y), continued beyond both ends along the end segments."""
    inside = np.interp(at, x, y)
    if x[-1] <= x[0]:
        return inside
    slope_hi = (y[-1] - y[-2]) / max(x[-1] - x[-2], 1e-12)
    extended: FloatArray = np.where(at > x[-1], y[-1] + slope_hi * (at - x[-1]), inside)
    return extended


def restart_oracle(
    results: Mapping[str, RunResult], configs: Mapping[str, SpecConfig], window: float, replicas: int,
    restart_seconds: float, surge: bool = False,
) -> tuple[RunResult, list[tuple[float, str]]]:  # fmt: skip
    """Hindsight with switching costs: dynamic programming over windows, live table changes free, every
    restart-bound switch charged `restart_penalty` (added to the TPOT of the requests it slows)."""
    w = windows_of(results, window)
    means, n_runs, n_windows = w.means, len(w.names), w.totals.shape[1]
    cost = np.where(np.isfinite(means), w.totals, np.inf)
    cost[:, ~np.isfinite(means).any(axis=0)] = 0.0  # nothing finished anywhere: no credit, no information
    penalty = restart_penalty(w, replicas, restart_seconds, window, surge)
    live = np.array([[live_switch(configs[a], configs[b]) for b in w.names] for a in w.names])
    value = cost[:, 0].copy()
    back = np.zeros((n_windows, n_runs), np.int64)
    for t in range(1, n_windows):
        switch = np.where(live | np.eye(n_runs, dtype=bool), 0.0, penalty[None, :, t])  # [from, to]
        total = value[:, None] + switch
        back[t] = total.argmin(axis=0)
        value = total[back[t], np.arange(n_runs)] + cost[:, t]
    choice = np.zeros(n_windows, np.int64)
    choice[-1] = int(value.argmin())
    for t in range(n_windows - 1, 0, -1):
        choice[t - 1] = back[t, choice[t]]
    bound = [t for t in range(1, n_windows) if choice[t] != choice[t - 1] and not live[choice[t - 1], choice[t]]]
    stitched = _stitch(results, w, choice, window, restarts=len(bound))
    span = max(int(np.ceil(replicas * restart_seconds / window)), 1)
    tpot = stitched.tpot.copy()
    for t in bound:  # the roll's cost lands on the requests it slows
        hit = (w.index >= t) & (w.index < t + span)
        per_request = penalty[choice[t], t] / max(float(hit.sum()), 1.0)
        tpot[hit] += per_request
    stitched.tpot = tpot
    return stitched, [(i * window, w.names[int(c)]) for i, c in enumerate(choice)]


@dataclass
class Evaluation:
    scenario: Scenario
    results: dict[str, RunResult] = field(default_factory=dict)
    summaries: dict[str, Summary] = field(default_factory=dict)
    decisions: list[tuple[float, str, str]] = field(default_factory=list)  # Auto's changes: time, action, reason
    oracle_timeline: list[tuple[float, str]] = field(default_factory=list)  # window start, config label
    best_table: str = ""  # label of the candidate table behind BEST_TABLE
    belief: tuple[SpeedupBelief, ...] = ()  # Auto's fitted S(k,B) at its last evaluation


RunProgress = Callable[[str, float, float], None]  # policy name, simulated seconds done, total


def evaluate(
    scenario: Scenario,
    policy: PolicySpec | None = None,
    slo: Slo | None = None,
    baselines: Mapping[str, SpecConfig] = BASELINES,
    oracle_window: float = 300.0,
    progress: RunProgress | None = None,
    tables: Mapping[str, SpecConfig] = TABLE_CANDIDATES,
) -> Evaluation:
    """Auto (the real policy), every baseline and candidate table on the same requests, then the hindsight
    runs over them: the best table, the free oracle and the restart-paying oracle."""
    slo = slo or Slo()
    requests = scenario.requests()
    evaluation = Evaluation(scenario)

    def tracked(name: str) -> ProgressFn | None:
        return None if progress is None else lambda done, total: progress(name, done, total)

    auto = AutoPolicy(scenario.deployment_spec(), policy)
    candidates = {**baselines, **tables}
    # Auto and every static run in one simulation: separate fleets, side by side on the same requests.
    controllers: list[Controller] = [auto, *(Fixed(config) for config in candidates.values())]
    runs = run_fleets(
        scenario, controllers, requests, auto.interval_seconds, tracked(f"auto and {len(candidates)} static runs")
    )
    evaluation.results = dict(zip((AUTO, *candidates), runs, strict=True))
    evaluation.decisions = [(t, str(d.action), f"{d.code}: {d.reason}") for t, d in auto.decisions]
    evaluation.belief = auto.belief
    statics = {name: evaluation.results[name] for name in candidates}
    table_names = [name for name in candidates if candidates[name].schedule]
    if table_names:
        best = min(table_names, key=lambda name: _mean_tpot(evaluation.results[name]))
        evaluation.results[BEST_TABLE] = replace(evaluation.results[best])
        evaluation.best_table = label(candidates[best])
    evaluation.results[ORACLE], timeline = oracle(statics, oracle_window)
    evaluation.oracle_timeline = [(t, label(candidates[name])) for t, name in timeline]
    evaluation.results[RESTART_ORACLE], _ = restart_oracle(
        statics, candidates, oracle_window, scenario.replicas, scenario.restart_seconds, scenario.surge
    )
    duration = scenario.trace.duration
    evaluation.summaries = {name: summarize(name, r, slo, duration) for name, r in evaluation.results.items()}
    return evaluation


def _mean_tpot(result: RunResult) -> float:
    done = ~np.isnan(result.tpot)
    return float(result.tpot[done].mean()) if done.any() else float("inf")


@dataclass(frozen=True)
class GoalReport:
    """The issue's goal for Auto, measured: gain over the best static, gap to the oracle, tail, churn."""

    best_static: str
    gain_vs_best_static: float  # relative reduction of mean TPOT (positive: Auto faster)
    gap_to_oracle: float  # relative excess of mean TPOT over the restart-paying oracle's
    p99_vs_best_static: float  # Auto's p99 TPOT / the best static's
    restarts_per_hour: float

    @property
    def met(self) -> dict[str, bool]:
        return {
            "gain >= 10% vs best static": self.gain_vs_best_static >= 0.10,
            "within 3% of restart-paying oracle": self.gap_to_oracle <= 0.03,
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
        gap_to_oracle=auto.tpot_mean / s[RESTART_ORACLE].tpot_mean - 1,
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


@dataclass(frozen=True)
class BeliefPoint:
    """Auto's fitted S(k,B) beside the simulated fleet's own closed-batch speed-up at the same k and batch."""

    k: int
    batch: int
    fitted: float
    std: float
    truth: float


def belief_vs_truth(evaluation: Evaluation) -> list[BeliefPoint]:
    """What the policy believed at the end of the run against what the fleet it ran on really does: the truth's
    closed-batch speed-up, on the trace's first prompt class."""
    scenario = evaluation.scenario
    klass, family = scenario.classes()[0], METHOD_FAMILY[scenario.method]
    points = []
    for k in sorted({b.k for b in evaluation.belief}):
        beliefs = sorted((b for b in evaluation.belief if b.k == k), key=lambda b: b.batch)
        config = SpecConfig(enabled=True, k=k)
        truths = speedup_curve(scenario.perf(), klass, family, config, tuple(b.batch for b in beliefs), seeds=1)
        points += [BeliefPoint(k, b.batch, b.speedup, b.std, t.speedup) for b, t in zip(beliefs, truths, strict=True)]
    return points
