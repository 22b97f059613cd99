"""How long the fleet simulator takes for a simulated day: 24 h, 4 replicas, 10 QPS per replica (8B, k=3).

    python benchmarks/simulator_speed.py [--hours 24] [--dt 1.0] [--fleets N]

Prints the wall time; the issue's target is under 60 s on the 2-core development machine. `--fleets N` runs N
static fleets (k=1, 2, ...) side by side in one simulation, as an evaluation runs its baselines.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from specfleet.simulator.config import static
from specfleet.simulator.controllers import Fixed
from specfleet.simulator.evaluation import Scenario, run_fleets
from specfleet.simulator.traces import builtin_trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--qps-per-replica", type=float, default=10.0)
    parser.add_argument("--dt", type=float, default=1.0)
    parser.add_argument("--fleets", type=int, default=1, help="static fleets simulated side by side")
    args = parser.parse_args()
    trace = builtin_trace("constant", args.qps_per_replica * args.replicas, args.hours)
    scenario = Scenario("speed", trace, replicas=args.replicas, dt=args.dt)
    start = time.perf_counter()
    requests = scenario.requests()
    generated = time.perf_counter()
    controllers = [Fixed(static(3 if args.fleets == 1 else 1 + i % 5)) for i in range(args.fleets)]
    result = run_fleets(scenario, controllers, requests)[0]
    done = time.perf_counter()
    print(
        f"{args.hours:g} h, {args.replicas} replicas, {args.qps_per_replica:g} QPS/replica, "
        f"dt={args.dt:g} s, {args.fleets} fleet(s): "
        f"{len(requests)} requests, mean TPOT {np.nanmean(result.tpot) * 1e3:.2f} ms"
    )
    print(f"requests generated in {generated - start:.1f} s, simulated in {done - generated:.1f} s")
    print(f"total {done - start:.1f} s (target < 60 s)")


if __name__ == "__main__":
    main()
