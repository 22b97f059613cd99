"""The policy benchmark: Auto (the operator's real policy core) against every static setting and the oracle.

    python benchmarks/policy_benchmark.py [--hours 24] [--only NAME ...] [--seed 0]

Scenarios: Llama-3.1-8B on H100 and Llama-3-70B TP4 on H100, under a diurnal and a bursty trace whose peak
crosses the crossover (off beats every speculating config) and a prompt-mix drift (English code by day,
French chat by night). Peaks are set from the simulator's own performance model: 1.3x the load that holds
the crossover batch, but never above 85 % of what a replica can take (a fleet past saturation measures its
queue, not its policy; the header says when that bound wins). Prints one table per
scenario and the issue's goal: Auto >= 10 % better mean TPOT than the best static, within 3 % of the oracle,
p99 TPOT no worse than the best static, <= 1 restart-bound change per hour.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace

import numpy as np

from specfleet.operator.simulator.evaluation import Evaluation, Scenario, evaluate, goal_report
from specfleet.operator.simulator.perf import METHOD_FAMILY, ReplicaPerf
from specfleet.operator.simulator.traces import builtin_trace
from specfleet.operator.simulator.workload import CLASSES


@dataclass(frozen=True)
class Case:
    name: str
    deployment: str
    trace: str
    classes: tuple[str, ...]
    weights: tuple[float, ...] | None = None
    restart_seconds: float = 180.0


CASES = (
    # Mostly French chat: the mix whose crossover a replica's KV cache can reach (English chat at L≈2.25 keeps
    # paying up to the KV limit in this model).
    Case("8b-diurnal", "8b", "diurnal", ("chat-fr", "sharegpt"), (0.9, 0.1)),
    Case("8b-burst", "8b", "burst", ("chat-fr", "sharegpt"), (0.9, 0.1)),
    Case("8b-drift", "8b", "drift", ("code-en", "chat-fr")),
    Case("70b-diurnal", "70b-tp4", "diurnal", ("chat-fr", "sharegpt"), (0.8, 0.2), restart_seconds=300.0),
    Case("70b-burst", "70b-tp4", "burst", ("chat-fr", "sharegpt"), (0.8, 0.2), restart_seconds=300.0),
    Case("70b-drift", "70b-tp4", "drift", ("code-en", "chat-fr"), restart_seconds=300.0),
)


@dataclass(frozen=True)
class Load:
    """The case's traffic against one replica of the perf model."""

    crossover_batch: float  # where the best speculating k stops beating off (the KV limit if never)
    crossover_qps: float  # arrivals/s per replica that hold that batch
    saturation_qps: float  # arrivals/s per replica at the KV-cache-limited batch, speculation off


def replica_load(perf: ReplicaPerf, case: Case, method: str = "eagle3") -> Load:
    """From the perf model: crossover batch and the per-replica loads that reach it and saturate.

    The traffic's acceptance is the token-weighted mixture of its classes (for drift: the night class). A
    batch B is held at B / (output · step(B) + B · prompt · per-token cost) arrivals/s (Little's law with the
    prompt work that shares the engine).
    """
    night_only = (0.0, 1.0) if case.trace == "drift" else (1.0,)
    weights = np.asarray(case.weights or night_only, float)
    weights = weights / weights.sum()
    classes = [CLASSES[name] for name in case.classes][: len(weights)]
    family = METHOD_FAMILY[method]
    share = weights * np.array([c.output.mean for c in classes])
    share /= share.sum()
    context = float(sum(w * (c.prompt.mean + c.output.mean / 2) for w, c in zip(share, classes, strict=True)))
    output = float(sum(w * c.output.mean for w, c in zip(weights, classes, strict=True)))
    prompt = float(sum(w * c.prompt.mean for w, c in zip(weights, classes, strict=True)))
    kv_limit = perf.kv_capacity_tokens / context
    batch = np.arange(1.0, kv_limit)
    off = perf.step_seconds(None, batch, 0, batch * context)
    best = np.zeros_like(batch)
    for k in range(1, 6):
        length = sum(w * c.profile(family).mean_length(k) for w, c in zip(share, classes, strict=True))
        best = np.maximum(best, length * off / perf.step_seconds(family, batch, k, batch * context))
    qps = batch / (output * off + batch * prompt * perf.target.per_token_s)
    index = int(np.argmax(best < 1)) if (best < 1).any() else len(batch) - 1
    return Load(float(batch[index]), float(qps[index]), float(qps[-1]))


def scenario(case: Case, hours: float, replicas: int, seed: int) -> tuple[Scenario, Load, float]:
    """The case at a peak of 1.3x its crossover load, held below 85 % of what a replica can take."""
    base = Scenario(case.name, builtin_trace("constant", 1.0, hours), deployment=case.deployment)
    load = replica_load(base.perf(), case)
    saturation = load.saturation_qps
    if case.trace == "drift":  # the day class saturates too: the peak must suit both
        day = replica_load(base.perf(), replace(case, weights=(1.0, 0.0)))
        saturation = min(saturation, day.saturation_qps)
    peak = min(1.3 * load.crossover_qps, 0.85 * saturation) * replicas
    trace = builtin_trace(case.trace, peak, hours, case.classes, case.weights)
    full = Scenario(
        case.name, trace, case.deployment, replicas=replicas, restart_seconds=case.restart_seconds, seed=seed
    )
    return full, load, peak


def print_evaluation(evaluation: Evaluation, load: Load, peak: float) -> None:
    sc = evaluation.scenario
    hours = sc.trace.duration / 3600
    print(f"\n== {sc.name}: {sc.deployment} on {sc.gpu}, {sc.replicas} replicas, {hours:g} h, peak {peak:.1f} QPS,")
    print(
        f"   crossover batch ≈ {load.crossover_batch:.0f} at {load.crossover_qps:.1f} QPS/replica, "
        f"saturation ≈ {load.saturation_qps:.1f} QPS/replica, restart {sc.restart_seconds:g} s"
    )
    tpot = f"{'TPOT':>8s} {'p50':>7s} {'p90':>7s} {'p99':>7s}"
    e2e = f"{'E2E':>7s} {'p50':>6s} {'p90':>6s} {'p99':>6s}"
    print(f"{'policy':12s} {tpot} {e2e} {'tok/s':>8s} {'good/s':>7s} {'rst':>4s}  time in config")
    for s in evaluation.summaries.values():
        shares = ", ".join(f"{k} {v:.0%}" for k, v in s.config_share.items() if v >= 0.01)
        print(
            f"{s.name:12s} {s.tpot_mean * 1e3:7.2f}m {s.tpot_p50 * 1e3:6.2f}m {s.tpot_p90 * 1e3:6.2f}m "
            f"{s.tpot_p99 * 1e3:6.2f}m {s.e2e_mean:6.2f}s {s.e2e_p50:5.2f}s {s.e2e_p90:5.2f}s "
            f"{s.e2e_p99:5.2f}s "
            f"{s.throughput:8.0f} {s.goodput:7.2f} {s.restarts:4d}  {shares}"
        )
    report = goal_report(evaluation)
    print(
        f"goal: best static {report.best_static}; Auto {report.gain_vs_best_static:+.1%} mean TPOT vs it "
        f"(goal >= +10%), {report.gap_to_oracle:+.1%} vs oracle (goal <= +3%), p99 ratio "
        f"{report.p99_vs_best_static:.2f} (goal <= 1), {report.restarts_per_hour:.2f} changes/h (goal <= 1)"
    )
    print("met: " + ", ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in report.met.items()))
    for t, action, reason in evaluation.decisions[:12]:
        print(f"  t={t / 3600:5.2f} h {action:12s} {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", help=f"scenarios to run, of {', '.join(c.name for c in CASES)}")
    args = parser.parse_args()
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        start = time.perf_counter()
        sc, load, peak = scenario(case, args.hours, args.replicas, args.seed)
        evaluation = evaluate(sc)
        print_evaluation(evaluation, load, peak)
        print(f"  ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
