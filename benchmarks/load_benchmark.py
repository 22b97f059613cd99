"""Load: N SpecDecodeDeployments on one operator process against the emulator and a real Prometheus.

Prints the time to reconcile all of them (every Deployment created, every status caught up), then over a few
steady-state evaluation ticks: operator CPU seconds per tick, resident memory, API requests per tick by verb,
and the mean evaluation time from the operator's own /metrics. Targets: under 5 s of CPU per tick and under
300 MiB resident for 1000 fleets.

    cd /work/main && python -m benchmarks.load_benchmark [--fleets 1000] [--interval 30] [--ticks 2]
"""

from __future__ import annotations

import argparse
import copy
import pathlib
import re
import tempfile
import time
import urllib.request
from collections import Counter

from specfleet.emulator import EmulatorServer
from tests.examples import EXAMPLES, load
from tests.fixtures.deps import require_binary
from tests.fixtures.operator import wait_for
from tests.fixtures.prometheus import PrometheusServer, free_port
from tests.reliability.process import OperatorProcess, install_cluster

NAMESPACES = 10
MIB = 1024 * 1024


def _fleets(emulator: EmulatorServer, count: int) -> None:
    template = load(EXAMPLES / "code-assistant-ngram.yaml")
    for index in range(NAMESPACES):
        emulator.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"load-{index}"}})
    for index in range(count):
        fleet = copy.deepcopy(template)
        fleet["metadata"] = {"name": f"fleet-{index}", "namespace": f"load-{index % NAMESPACES}"}
        emulator.apply(fleet)


def _created(emulator: EmulatorServer) -> int:
    return len(emulator.created("deployments"))  # applied (a PATCH that creates): counted from the watch log


def _evaluation_mean(port: int) -> float | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    found = {
        name: float(value)
        for name, value in re.findall(r"^specfleet_evaluation_duration_seconds_(sum|count) (\S+)$", text, re.M)
    }
    return found["sum"] / found["count"] if found.get("count") else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleets", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=30.0, help="the operator's timer interval (seconds)")
    parser.add_argument("--ticks", type=int, default=2, help="steady-state ticks to measure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmulatorServer(history_limit=100000) as emulator:
        base = pathlib.Path(tmp)
        kubeconfig = install_cluster(emulator, base)
        prometheus = PrometheusServer(base / "prometheus", require_binary("prometheus"))
        metrics_port = free_port()
        try:
            _fleets(emulator, args.fleets)
            emulator.clear_requests()
            operator = OperatorProcess(
                kubeconfig,
                base / "operator.log",
                interval=args.interval,
                prometheus_url=prometheus.url,
                metrics_port=metrics_port,
            )
            with operator:
                started = time.monotonic()
                wait_for(lambda: _created(emulator) >= args.fleets, 1800, "every Deployment")
                reconciled = time.monotonic() - started
                cpu_reconcile = operator.cpu_seconds()
                time.sleep(args.interval)  # the first timers fire one interval after their resource is seen
                emulator.clear_requests()
                cpu, rss = operator.cpu_seconds(), 0
                for _ in range(args.ticks):
                    time.sleep(args.interval)
                    rss = max(rss, operator.rss_bytes())
                per_tick = (operator.cpu_seconds() - cpu) / args.ticks
                verbs = Counter(
                    f"{r.verb} {r.resource}{'/' + r.subresource if r.subresource else ''}" for r in emulator.requests
                )
                evaluation = _evaluation_mean(metrics_port)
                crashes = operator.crash_lines()
        finally:
            prometheus.stop()
    print(f"fleets                          {args.fleets} (interval {args.interval:g} s)")
    print(f"reconcile of all                {reconciled:.1f} s wall, {cpu_reconcile:.1f} s operator CPU")
    print(f"operator CPU per tick           {per_tick:.2f} s (target < 5 s)")
    print(f"operator resident memory (max)  {rss / MIB:.0f} MiB (target < 300 MiB)")
    print(f"API requests per tick           {sum(verbs.values()) / args.ticks:.0f}")
    for verb, count in verbs.most_common(8):
        print(f"    {verb:<40} {count / args.ticks:.0f}")
    print(f"mean evaluation (one fleet)     {evaluation * 1000 if evaluation else float('nan'):.1f} ms")
    print(f"operator crash lines            {len(crashes)}")
    return 0 if per_tick < 5 and rss < 300 * MIB and not crashes else 1


if __name__ == "__main__":
    raise SystemExit(main())
