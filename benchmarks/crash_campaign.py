"""Crash campaign: SIGKILL the operator process at random points 100 times and count what was lost.

The operator runs as its own process against an emulator and a real Prometheus (scripted vLLM exporters play
the pods); fleets are edited, created and rolled out by the policy while the kills land. Prints kills, kill
points, duplicate children, rollouts vs decisions, history violations and unconverged fleets.

    cd /work/main && python -m benchmarks.crash_campaign [--kills 100] [--seed 1]
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile

from specfleet.emulator import EmulatorServer
from tests.fixtures.deps import require_binary
from tests.fixtures.prometheus import PrometheusServer
from tests.reliability.crash import Campaign
from tests.reliability.process import install_cluster


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-delay", type=float, default=4.0, help="longest run before a kill (seconds)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmulatorServer() as emulator:
        base = pathlib.Path(tmp)
        kubeconfig = install_cluster(emulator, base)
        prometheus = PrometheusServer(base / "prometheus", require_binary("prometheus"))
        try:
            campaign = Campaign(emulator, prometheus, kubeconfig, base, "crash", seed=args.seed)
            report = campaign.run(args.kills, max_delay=args.max_delay)
        finally:
            prometheus.stop()
        for line in report.lines():
            print(line)
        for problem in [*report.history_violations, *report.unconverged, *report.crash_lines]:
            print("  ", problem)
    failed = report.duplicates or report.double_restarts or report.data_lost or report.crash_lines
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
