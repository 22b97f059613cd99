"""`specfleet profile`: measure speculation on your own requests, point by point, and find the crossovers.

Exit status: 0 done, 1 the sweep failed (the points measured so far are still written), 2 bad input,
130 interrupted (Ctrl-C; the points measured so far are written).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from specfleet.operator.api.profile_result import encode_result
from specfleet.profile.crossover import crossovers
from specfleet.profile.measure import point_result
from specfleet.profile.plan import (
    Configuration,
    PlanError,
    Point,
    live_configurations,
    parse_engine,
    parse_ints,
    parse_url,
    plan_sweep,
)
from specfleet.profile.replay import Engine, LiveTable, SweepError, run_point, warm_up
from specfleet.profile.report import ProfilePoint, ProfileReport, render_table
from specfleet.profile.workload import ReplayRequest, WorkloadError, parse_requests
from specfleet.runtime.table_control import TOKEN_FILE_ENV

EXIT_FAILED, EXIT_INPUT, EXIT_INTERRUPTED = 1, 2, 130
DESCRIPTION = "Measure speculation on your own requests, point by point, and find the crossover concurrency per k."
FIT_NOTE = "the step-cost fit is the operator's (a SpeculationProfile's status.fit): stepSeconds per point is its input"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="specfleet profile", description=DESCRIPTION)
    p.add_argument("requests", type=Path, help="JSONL of OpenAI chat or completion requests (bodies or batch lines)")
    p.add_argument("--concurrency", required=True, metavar="LIST", help="concurrencies to sweep, e.g. 1,2,4,8")
    p.add_argument(
        "--engine",
        action="append",
        default=[],
        metavar="K=URL",
        help="an engine running k=K at every batch size (K=0: without speculation); repeatable",
    )
    p.add_argument("--live", metavar="URL", help="an engine whose k is set through its live table (with --control-url)")
    p.add_argument("--control-url", metavar="URL", help="the --live runtime's control port, e.g. http://host:8081")
    p.add_argument("--k", metavar="LIST", help="k values to set on the --live engine's table, e.g. 1,3")
    p.add_argument(
        "--control-token-file", type=Path, metavar="PATH", help=f"the control token (default: ${TOKEN_FILE_ENV})"
    )
    p.add_argument(
        "--requests-per-point", type=int, metavar="N", help="requests per point (default: max(8, 4 x concurrency))"
    )
    p.add_argument("--max-num-seqs", type=int, metavar="N", help="the engines' --max-num-seqs: no concurrency above it")
    p.add_argument("--max-tokens", type=int, metavar="N", help="cap every request's output at this many tokens")
    p.add_argument(
        "--warm-up",
        type=int,
        default=1,
        metavar="N",
        help="unmeasured requests after each configuration change (default 1)",
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="write the report as JSON")
    p.add_argument("--png", type=Path, metavar="PATH", help="write throughput and TPOT against concurrency")
    p.add_argument(
        "--result",
        type=Path,
        metavar="PATH",
        help="write the points and crossovers compactly (a profiling Job's termination message, read by the operator)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        requests = _read_requests(args.requests)
        concurrencies = parse_ints(args.concurrency, "--concurrency", 1)
        points = plan_sweep(_configurations(args), concurrencies, args.requests_per_point, args.max_num_seqs)
        token = _token(args) if args.live else ""
        if args.max_tokens is not None and args.max_tokens < 1:
            raise PlanError(f"--max-tokens: {args.max_tokens} must be ≥ 1")
        if args.warm_up < 0:
            raise PlanError(f"--warm-up: {args.warm_up} must be ≥ 0")
    except (WorkloadError, PlanError) as exc:
        return _fail(str(exc), EXIT_INPUT)
    report = ProfileReport(
        model="", requests_file=str(args.requests), distinct_requests=len(requests), max_tokens=args.max_tokens
    )
    status = 0
    try:
        asyncio.run(_sweep(points, requests, _Options(args.max_tokens, args.warm_up, token), report))
    except KeyboardInterrupt:
        report.interrupted, status = True, EXIT_INTERRUPTED
    except SweepError as exc:
        status = _fail(str(exc), EXIT_FAILED)
    if report.points or status == 0:
        _finish(report, args)
    return status


def _configurations(args: argparse.Namespace) -> list[Configuration]:
    configs = [parse_engine(text) for text in args.engine]
    live = (args.live, args.control_url, args.k)
    if any(live) and not all(live):
        raise PlanError("--live, --control-url and --k go together: the engine, its control port, the k values")
    if args.live:
        url, control = parse_url(args.live, "--live"), parse_url(args.control_url, "--control-url")
        configs.extend(live_configurations(url, control, parse_ints(args.k, "--k", 0)))
    return configs


def _read_requests(path: Path) -> tuple[ReplayRequest, ...]:
    try:
        with path.open(encoding="utf-8") as lines:
            return parse_requests(lines, str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"{path}: cannot read it ({type(exc).__name__}: {exc})") from None


def _token(args: argparse.Namespace) -> str:
    path = args.control_token_file or (Path(os.environ[TOKEN_FILE_ENV]) if os.environ.get(TOKEN_FILE_ENV) else None)
    if path is None:
        raise PlanError(f"--live needs the control token: --control-token-file or ${TOKEN_FILE_ENV}")
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise PlanError(f"--control-token-file: cannot read {path} ({exc.strerror})") from None


@dataclass(frozen=True)
class _Options:
    max_tokens: int | None
    warm_up: int
    token: str


async def _sweep(
    points: Sequence[Point], requests: Sequence[ReplayRequest], options: _Options, report: ProfileReport
) -> None:
    """Run the points in order, appending each to `report.points` as soon as it is measured; live tables
    changed on the way are put back as they were, even when the sweep fails or is interrupted."""
    interrupted = asyncio.Event()
    task = asyncio.current_task()

    def on_interrupt() -> None:
        # A cancellation alone can be lost: a client timeout in flight may turn it into a TimeoutError,
        # which a request counts as failed. The flag ends the sweep after the point in any case.
        interrupted.set()
        if task is not None:
            task.cancel()

    asyncio.get_running_loop().add_signal_handler(signal.SIGINT, on_interrupt)
    async with aiohttp.ClientSession() as session:
        saved: dict[str, tuple[LiveTable, list[list[int]]]] = {}
        try:
            await _run_points(session, points, requests, options, report, saved, interrupted)
        except BaseException:
            await _restore(saved, failing=True)
            if interrupted.is_set():
                raise KeyboardInterrupt from None
            raise
        await _restore(saved, failing=False)


async def _restore(saved: dict[str, tuple[LiveTable, list[list[int]]]], failing: bool) -> None:
    """Put each changed live table back; when the sweep is already failing, its error is the one reported."""
    for table, original in saved.values():
        try:
            await table.put(original, "the table it had before the sweep")
        except SweepError as exc:
            if not failing:
                raise
            print(f"specfleet profile: also: {exc}", file=sys.stderr)


async def _run_points(
    session: aiohttp.ClientSession,
    points: Sequence[Point],
    requests: Sequence[ReplayRequest],
    options: _Options,
    report: ProfileReport,
    saved: dict[str, tuple[LiveTable, list[list[int]]]],
    interrupted: asyncio.Event,
) -> None:
    current: Configuration | None = None
    model = ""
    for number, point in enumerate(points, start=1):
        engine = Engine(session, point.config.engine_url)
        if point.config != current:
            model = await engine.served_model()
            report.model = report.model or model
            if point.config.control_url:
                await _set_k(session, point.config, options.token, saved)
            for request in requests[: options.warm_up]:
                await warm_up(engine, point.config.k, request, model, options.max_tokens)
            current = point.config
        label = f"[{number}/{len(points)}] k={point.config.k} concurrency {point.concurrency}"
        timings, before, after = await run_point(engine, point, requests, model, options.max_tokens, _Ticker(label))
        result = point_result(point, timings, before, after)
        report.points.append(result)
        _progress_done(label, result)
        if interrupted.is_set():
            raise KeyboardInterrupt


async def _set_k(
    session: aiohttp.ClientSession,
    config: Configuration,
    token: str,
    saved: dict[str, tuple[LiveTable, list[list[int]]]],
) -> None:
    assert config.control_url is not None
    table = LiveTable(session, config.control_url, token)
    if config.control_url not in saved:
        saved[config.control_url] = (table, await table.current())
    await table.put(config.live_table(), f"k={config.k}")


class _Ticker:
    """Per-request progress on a terminal, overwritten in place."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if self.tty:
            print(f"\r{self.label}: {done}/{total} requests", end="", file=sys.stderr, flush=True)


def _progress_done(label: str, point: ProfilePoint) -> None:
    length = "" if point.acceptance_length is None else f", L {point.acceptance_length:.2f}"
    back = "\r" if sys.stderr.isatty() else ""  # over the ticker's line
    print(
        f"{back}{label}: {point.requests} requests, {point.throughput_tokens_per_second:.1f} tok/s{length}",
        file=sys.stderr,
        flush=True,
    )


def _finish(report: ProfileReport, args: argparse.Namespace) -> None:
    report.crossovers = crossovers(report.points)
    report.notes.append(FIT_NOTE)
    if not any(point.k == 0 for point in report.points):
        report.notes.append("no k=0 points: crossovers need a configuration without speculation (--engine 0=URL)")
    sys.stdout.write(render_table(report))
    if args.json:
        args.json.write_text(report.model_dump_json(by_alias=True, exclude_none=True, indent=2) + "\n")
    if args.result:
        args.result.write_text(encode_result(report.points, report.crossovers))
    if args.png and report.points:
        from specfleet.profile.plot import write_png

        write_png(report, args.png)


def _fail(message: str, status: int) -> int:
    print(f"specfleet profile: {message}", file=sys.stderr)
    return status
