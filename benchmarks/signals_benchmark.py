"""Batched signal queries vs one query set per deployment, against a real local Prometheus.

One exporter serves N deployments x M pods of vLLM-shaped series (labels already attached, scraped with
honor_labels as a PodMonitor's relabelling would produce them). For N = 10, 100, 1000 the script reads the
fleet once with the batched reader and once deployment by deployment, and prints the queries issued and the
wall time of one evaluation tick side by side.

    cd /work/main && python -m benchmarks.signals_benchmark [--pods 2] [--window 30] [--interval 5]
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from specfleet.operator.signals.model import FleetTarget, LabelMapping, SignalsResult
from specfleet.operator.signals.prometheus import PrometheusConfig, PrometheusReader, iso_time
from specfleet.operator.signals.promql import build_queries, deployment_matchers, parse_results
from specfleet.operator.signals.rates import fleet_signals
from tests.fixtures.prometheus import PrometheusServer

SIZES = (10, 100, 1000)
NAMESPACES_PER_GROUP = 5
LABELS = LabelMapping()
ACCEPTANCE = (0.7, 0.4, 0.2)
BUCKETS = (0.01, 0.05, 0.1, 0.5)


def fleet(size: int) -> list[FleetTarget]:
    return [FleetTarget(f"bench-n{size}-{i % NAMESPACES_PER_GROUP}", f"dep-{i}", "h1") for i in range(size)]


def series_lines(targets: Sequence[FleetTarget], pods: int) -> Iterator[tuple[str, float]]:
    """(series, value per second of uptime) for every pod; gauges get a rate of 0 and a constant below."""
    for target in targets:
        for pod in range(pods):
            base = (
                f'{LABELS.namespace}="{target.namespace}",{LABELS.deployment}="{target.name}",'
                f'{LABELS.config_hash}="{target.config_hash}",{LABELS.pod}="{target.name}-{pod}",engine="0"'
            )
            yield f"vllm:spec_decode_num_drafts_total{{{base}}}", 10.0
            yield f"vllm:spec_decode_num_draft_tokens_total{{{base}}}", 10.0 * len(ACCEPTANCE)
            yield f"vllm:spec_decode_num_accepted_tokens_total{{{base}}}", 10.0 * sum(ACCEPTANCE)
            for position, share in enumerate(ACCEPTANCE):
                yield (
                    f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{base},position="{position}"}}',
                    10 * share,
                )
            yield f"vllm:request_success_total{{{base}}}", 1.0
            for histogram in ("request_time_per_output_token_seconds", "time_to_first_token_seconds"):
                for index, bound in enumerate((*BUCKETS, "+Inf")):
                    yield f'vllm:{histogram}_bucket{{{base},le="{bound}"}}', (index + 1) / (len(BUCKETS) + 1)
                yield f"vllm:{histogram}_sum{{{base}}}", 0.03
                yield f"vllm:{histogram}_count{{{base}}}", 1.0
            yield f"vllm:num_requests_running{{{base}}}", -4.0
            yield f"vllm:num_requests_waiting{{{base}}}", -1.0
            yield f"vllm:kv_cache_usage_perc{{{base}}}", -0.3


def serve(lines: list[tuple[str, float]]) -> http.server.ThreadingHTTPServer:
    started = time.time()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            elapsed = time.time() - started
            # Negative "rates" mark gauges: their value is constant.
            body = "".join(f"{series} {-rate if rate < 0 else rate * elapsed}\n" for series, rate in lines).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def batched_tick(
    reader: PrometheusReader, targets: list[FleetTarget], window: float
) -> dict[tuple[str, str], SignalsResult]:
    return await reader.read(targets, window)


async def per_deployment_tick(
    reader: PrometheusReader, targets: list[FleetTarget], window: float
) -> dict[tuple[str, str], SignalsResult]:
    """The naive design: every deployment gets its own query set."""
    at = time.time()
    results: dict[tuple[str, str], SignalsResult] = {}
    for target in targets:
        answered, failed = await reader.run(build_queries(deployment_matchers(target, LABELS), LABELS, window), at)
        stats = parse_results(answered, LABELS)
        results.update(fleet_signals(stats, [target], window, iso_time(at), sorted(failed)))
    return results


async def measure(
    reader: PrometheusReader, tick: object, targets: list[FleetTarget], window: float, repeats: int
) -> tuple[int, float, int]:
    """(queries per tick, median wall seconds, deployments with signals)."""
    walls, queries, ok = [], 0, 0
    for _ in range(repeats):
        before = reader.queries_issued
        start = time.perf_counter()
        results = await tick(reader, targets, window)  # type: ignore[operator]
        walls.append(time.perf_counter() - start)
        queries = reader.queries_issued - before
        ok = sum(1 for result in results.values() if getattr(result, "acceptance_length", None))
    return queries, statistics.median(walls), ok


def row(label: str, batched: Sequence[object], naive: Sequence[object]) -> str:
    def cells(values: Sequence[object]) -> str:
        return " ".join(f"{value:.3f}" if isinstance(value, float) else str(value) for value in values)

    return f"{label:>6} | {cells(batched):<30} | {cells(naive)}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=2, help="pods per deployment")
    parser.add_argument("--window", type=float, default=30.0, help="rate window, seconds")
    parser.add_argument("--interval", type=float, default=5.0, help="scrape interval, seconds")
    parser.add_argument("--repeats", type=int, default=3, help="batched ticks per size (median reported)")
    args = parser.parse_args()
    lines = [line for size in SIZES for line in series_lines(fleet(size), args.pods)]
    exporter = serve(lines)
    with tempfile.TemporaryDirectory() as base:
        binary = shutil.which("prometheus")
        if binary is None:
            raise SystemExit("the prometheus binary is not on PATH (scripts/install-deps.sh installs it)")
        prometheus = PrometheusServer(Path(base), binary, interval=args.interval, honor_labels=True)
        try:
            prometheus.set_targets("bench", [(f"127.0.0.1:{exporter.server_address[1]}", {})])
            deployments = sum(SIZES)
            print(f"{len(lines)} series ({deployments} deployments x {args.pods} pods); waiting for samples")
            prometheus.wait_for(
                'count(vllm_num_requests_running) or count({__name__="vllm:num_requests_running"})',
                lambda rows: bool(rows) and float(rows[0]["value"][1]) >= sum(SIZES) * args.pods,
                120,
            )
            await asyncio.sleep(2.5 * args.interval)  # rates need two samples in the window
            reader = PrometheusReader(PrometheusConfig(url=prometheus.url, timeout_seconds=30))
            print(row("N", ("batched: queries", "wall s", "ok"), ("per-deployment: queries", "wall s", "ok")))
            for size in SIZES:
                targets = fleet(size)
                batched = await measure(reader, batched_tick, targets, args.window, args.repeats)
                naive = await measure(reader, per_deployment_tick, targets, args.window, 1)
                print(row(str(size), batched, naive))
        finally:
            prometheus.stop()
            exporter.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
