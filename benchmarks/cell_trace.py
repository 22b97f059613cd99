"""One cell of the policy benchmark, traced: why Auto won or lost there.

    python -m benchmarks.cell_trace SCENARIO TRUTH [--seed N] [--hours H] [--window FROM,TO]

Runs Auto, the static settings and the candidate tables side by side on the same requests, exactly as the
benchmark does (so Auto's run is the benchmark's: the fleets of one simulation share its per-step noise
stream, so leaving any out would change Auto's draws), and prints each run's (but the tables') mean and p99
TPOT, restarts and live changes; the mean TPOT by arrival hour for Auto, off and
the best static; every change Auto made, with the load it was judged at; and every stretch of evaluations
where a gate held a change back (dwell, capacity, switching cost, budget...), once per stretch. `--window`
limits the last two lists to hours FROM..TO of the trace.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence

import numpy as np

from benchmarks.policy_benchmark import CASES, scenario
from specfleet.operator.policy.decision import Inputs
from specfleet.simulator.controllers import AutoPolicy, Fixed, Held
from specfleet.simulator.evaluation import BASELINES, TABLE_CANDIDATES, TRUTHS, Slo, run_fleets, summarize
from specfleet.simulator.fleet import Controller, RunResult
from specfleet.simulator.traces import HOUR

AUTO = "auto"
REASON_CHARS = 220


def _hour_mean_ms(result: RunResult, hour: int) -> float:
    """Mean TPOT of the requests that arrived in `hour` and finished."""
    arrival = result.requests.arrival
    done = (arrival >= hour * HOUR) & (arrival < (hour + 1) * HOUR) & ~np.isnan(result.tpot)
    return float(result.tpot[done].mean()) * 1e3 if done.any() else math.nan


def _load(inputs: Inputs) -> str:
    forecast, ahead = inputs.get("forecast"), inputs.get("rolloutForecast")
    parts = [f"B̂ {forecast:.0f}" if isinstance(forecast, float) else "B̂ -"]
    if isinstance(ahead, float):
        parts.append(f"at rollout end {ahead:.0f}")
    return ", ".join(parts)


def _stretches(held: Sequence[Held], gap: float) -> list[tuple[Held, Held, int]]:
    """Consecutive holds by the same gate of the same change: (first, last, count)."""
    stretches: list[tuple[Held, Held, int]] = []
    for entry in held:
        if stretches:
            first, last, count = stretches[-1]
            if (entry.code, entry.wants) == (last.code, last.wants) and entry.time - last.time <= gap:
                stretches[-1] = (first, entry, count + 1)
                continue
        stretches.append((entry, entry, 1))
    return stretches


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=[case.name for case in CASES])
    parser.add_argument("truth", choices=TRUTHS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--window", default=None, help="FROM,TO in hours: the changes and holds listed")
    args = parser.parse_args(argv)
    case = next(c for c in CASES if c.name == args.scenario)
    sc, sizing = scenario(case, args.hours, args.seed, args.truth)
    low, high = (float(x) for x in args.window.split(",")) if args.window else (0.0, math.inf)
    auto = AutoPolicy(sc.deployment_spec(), None)
    candidates = {**BASELINES, **TABLE_CANDIDATES}
    controllers: list[Controller] = [auto, *(Fixed(config) for config in candidates.values())]
    runs = run_fleets(sc, controllers, sc.requests(), auto.interval_seconds)
    results = dict(zip((AUTO, *candidates), runs, strict=True))
    summaries = {name: summarize(name, results[name], Slo(), sc.trace.duration) for name in (AUTO, *BASELINES)}
    print(f"{sc.name}, truth {sc.truth}, seed {sc.seed}, {args.hours:g} h: {sizing.note}")
    for name, summary in summaries.items():
        print(f"  {name:11s} mean {summary.tpot_mean * 1e3:7.2f} ms  p99 {summary.tpot_p99 * 1e3:7.2f} ms  "
              f"restarts {summary.restarts}  live {summary.live_changes}")  # fmt: skip
    best = min(BASELINES, key=lambda name: summaries[name].tpot_mean)
    print(f"best static {best}: Auto {1 - summaries[AUTO].tpot_mean / summaries[best].tpot_mean:+.1%} against it")
    hours = math.ceil(args.hours)
    print("mean TPOT (ms) by arrival hour:")
    for name in dict.fromkeys((AUTO, "off", best)):
        row = (_hour_mean_ms(results[name], h) for h in range(hours))
        print(f"  {name:11s}" + "".join(f"{v:6.1f}" for v in row))
    print("changes:")
    for now, decision in auto.decisions:
        if low <= now / HOUR <= high:
            print(f"  {now / HOUR:6.2f} h  {decision.action} ({decision.code}; {_load(decision.inputs)}): "
                  f"{decision.reason[:REASON_CHARS]}")  # fmt: skip
    print("held back (one line per stretch of evaluations the same gate held the same change):")
    for first, last, count in _stretches(auto.held, 1.5 * auto.interval_seconds):
        if low <= first.time / HOUR <= high:
            print(f"  {first.time / HOUR:6.2f}-{last.time / HOUR:.2f} h x{count} {first.code} "
                  f"({_load(first.inputs)}): {first.reason[:REASON_CHARS]}")  # fmt: skip


if __name__ == "__main__":
    main()
