"""`specfleet simulate`: replay a trace through the fleet simulator under a policy and the baselines.

A trace (a built-in shape or a CSV `time,qps[,class...]`) and a policy (a SpeculationPolicy YAML or the
defaults) in; a table of TPOT/E2E/throughput/goodput/restarts per policy and three PNG plots out (latency
against load, the decisions over the trace, and what the policy's fit believed against the truth it ran on).
Exit status 2: a bad input (trace, policy, option), told in one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from specfleet.operator.api.parse import describe_errors
from specfleet.operator.api.policy_types import PolicySpec
from specfleet.operator.config import one_line
from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.acceptance import MAX_POSITIONS
from specfleet.simulator.calibration import speedup_curve, traffic_class
from specfleet.simulator.config import label, static, table
from specfleet.simulator.evaluation import TRUTHS, Evaluation, Scenario, Slo, belief_vs_truth, evaluate, goal_report
from specfleet.simulator.hardware import DEPLOYMENTS, GPUS
from specfleet.simulator.perf import METHOD_FAMILY, replica_perf
from specfleet.simulator.traces import BUILTIN_TRACES, Trace, builtin_trace, parse_trace_csv
from specfleet.simulator.workload import CLASSES

EXIT_INPUT = 2
MODEL_HELP = "the served model and its tensor-parallel size (default 8b: Llama-3.1-8B on one GPU)"
GPU_HELP = "the GPU every replica runs on (default H100)"
METHOD_HELP = "the speculative-decoding method: its drafter's cost and acceptance (default eagle3)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="specfleet simulate",
        description=__doc__,
        epilog="Closed-batch speed-up of one configuration per batch size: `specfleet simulate speedup --help`.",
    )
    p.add_argument("--trace", default="diurnal", help=f"{', '.join(BUILTIN_TRACES)} or a CSV file")
    p.add_argument("--classes", default="sharegpt", help=f"built-in traces: classes, of {', '.join(CLASSES)}")
    p.add_argument("--weights", help="built-in traces: class weights, e.g. 0.6,0.4 (default: first class)")
    p.add_argument("--peak-qps", type=float, help="built-in traces: fleet-wide peak (default 10/replica)")
    p.add_argument("--policy", help="SpeculationPolicy YAML (a resource or its spec); default: the defaults")
    p.add_argument("--hours", type=float, default=24.0, help="built-in traces: length in hours (default 24)")
    p.add_argument("--replicas", type=int, default=4, help="serving pods in the fleet (default 4)")
    p.add_argument("--model", choices=sorted(DEPLOYMENTS), default="8b", help=MODEL_HELP)
    p.add_argument("--gpu", choices=sorted(GPUS), default="H100", help=GPU_HELP)
    p.add_argument("--method", choices=sorted(METHOD_FAMILY), default="eagle3", help=METHOD_HELP)
    p.add_argument("--restart-seconds", type=float, default=180.0, help="time a pod is out for a config change")
    p.add_argument("--slo-tpot", type=float, default=0.05, help="goodput: TPOT bound (s)")
    p.add_argument("--slo-ttft", type=float, default=2.0, help="goodput: TTFT bound (s)")
    p.add_argument("--dt", type=float, default=1.0, help="simulation step in seconds (default 1; smaller is slower)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the requests drawn (default 0)")
    p.add_argument("--truth", choices=TRUTHS, default="calibrated", help="performance model the fleet runs on")
    p.add_argument("--out", type=Path, default=Path("simulate-out"), help="directory for the PNGs and JSON")
    return p


def load_trace(args: argparse.Namespace) -> Trace:
    """The --trace CSV or built-in shape; InputError names what is wrong."""
    path = Path(args.trace)
    try:
        if path.suffix == ".csv" or path.exists():
            return parse_trace_csv(_read(path, "--trace"), name=path.stem)
        peak = args.peak_qps if args.peak_qps is not None else 10.0 * args.replicas
        weights = _floats(args.weights, "--weights") if args.weights else None
        return builtin_trace(args.trace, peak, args.hours, tuple(args.classes.split(",")), weights)
    except InputError:
        raise
    except ValueError as exc:  # the traces' and workload's own checks: an unknown shape or class, a malformed CSV
        raise InputError(f"--trace {args.trace}: {exc}") from None


def load_policy(path: str | None) -> PolicySpec | None:
    """The policy of a SpeculationPolicy file (the resource or its bare spec); InputError names what is wrong."""
    if path is None:
        return None
    try:
        raw = yaml.safe_load(_read(Path(path), "--policy")) or {}
    except yaml.YAMLError as exc:
        raise InputError(f"--policy {path}: {one_line(exc)}") from None
    if not isinstance(raw, dict):
        raise InputError(f"--policy {path}: a SpeculationPolicy (a YAML mapping), not a {type(raw).__name__}")
    try:
        return PolicySpec.model_validate(raw.get("spec", raw) if raw.get("kind") else raw)
    except ValidationError as exc:
        raise InputError(f"--policy {path}: {describe_errors(exc, 'spec')}") from None


class InputError(ValueError):
    """A bad file or option: reported in one line, exit status 2."""


def _read(path: Path, flag: str) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{flag} {path}: {one_line(exc)}") from None


def _check(args: argparse.Namespace) -> None:
    for flag, value in (("--hours", args.hours), ("--dt", args.dt), ("--restart-seconds", args.restart_seconds)):
        if not value > 0:
            raise InputError(f"{flag} {value:g}: must be above 0")
    if args.replicas < 1:
        raise InputError(f"--replicas {args.replicas}: at least 1")


def summary_table(evaluation: Evaluation) -> Table:
    table = Table(title=f"{evaluation.scenario.name} — {evaluation.scenario.deployment} on {evaluation.scenario.gpu}")
    for column in ("policy", "TPOT mean", "p50", "p90", "p99", "E2E mean", "p50", "p90", "p99", "tok/s",
                   "goodput/s", "completed", "restarts", "live", "time in config"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("policy", "time in config") else "right")
    for s in evaluation.summaries.values():
        shares = ", ".join(f"{name} {share:.0%}" for name, share in s.config_share.items() if share >= 0.005)
        table.add_row(
            s.name,
            *(f"{v * 1e3:.2f}ms" for v in (s.tpot_mean, s.tpot_p50, s.tpot_p90, s.tpot_p99)),
            *(f"{v:.2f}s" for v in (s.e2e_mean, s.e2e_p50, s.e2e_p90, s.e2e_p99)),
            f"{s.throughput:.0f}",
            f"{s.goodput:.2f}",
            f"{s.completed:.1%}" + (" SATURATED" if s.saturated else ""),
            str(s.restarts),
            str(s.live_changes),
            shares,
        )
    return table


def _speedup_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="specfleet simulate speedup",
        description="Closed-batch speed-up of a speculative configuration over no speculation, per batch size.",
    )
    p.add_argument("--model", choices=sorted(DEPLOYMENTS), default="8b", help=MODEL_HELP)
    p.add_argument("--gpu", choices=sorted(GPUS), default="H100", help=GPU_HELP)
    p.add_argument("--tp", type=int, help="tensor-parallel size (default: the deployment's)")
    p.add_argument("--method", choices=sorted(METHOD_FAMILY), default="eagle3", help=METHOD_HELP)
    p.add_argument("--acceptance", default="0.66,0.38,0.21", help="cumulative acceptance a_i per draft position")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--k", type=int, default=3, help="draft tokens per step")
    group.add_argument("--table", help="batch-size table, e.g. 16:5,32:4,64:3,128:1,*:0 (the last row may be *)")
    p.add_argument("--batch", default="1,8,16,32,64,128", help="batch sizes to measure")
    p.add_argument("--prompt-tokens", type=int, default=1300, help="mean prompt length")
    p.add_argument("--output-tokens", type=int, default=300, help="mean output length")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def _floats(text: str, what: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"{what}: a comma-separated list of numbers, got {text!r}") from None
    return values


def parse_table(text: str) -> SpecConfig:
    """`16:5,32:4,*:0` → a table config (rows ascending by batch size, k ≥ 0)."""
    rows: list[tuple[int, int]] = []
    for item in text.split(","):
        batch, _, k = item.partition(":")
        if not k or not k.strip().isdigit() or not (batch.strip() == "*" or batch.strip().isdigit()):
            raise ValueError(f"table row {item!r}: expected BATCH:K (BATCH an integer or *, K ≥ 0)")
        rows.append((1 << 20 if batch.strip() == "*" else int(batch), int(k)))
    if [b for b, _ in rows] != sorted({b for b, _ in rows}):
        raise ValueError("table rows must be strictly ascending by batch size")
    if max(k for _, k in rows) == 0:
        raise ValueError("a table needs at least one row with k ≥ 1")
    return table(tuple(rows))


def speedup_main(argv: list[str]) -> int:
    args = _speedup_parser().parse_args(argv)
    acceptance = _floats(args.acceptance, "--acceptance")
    batches = tuple(int(b) for b in _floats(args.batch, "--batch"))
    problems = []
    if any(not 0 <= a <= 1 for a in acceptance) or list(acceptance) != sorted(acceptance, reverse=True):
        problems.append("--acceptance: values in [0, 1], non-increasing (a_i is cumulative)")
    if any(b < 1 for b in batches):
        problems.append("--batch: sizes ≥ 1")
    if args.k < 1 or args.k > MAX_POSITIONS:
        problems.append(f"--k: 1..{MAX_POSITIONS}")
    try:
        config = parse_table(args.table) if args.table else static(args.k)
    except ValueError as error:
        problems.append(f"--table: {error}")
    if problems:
        raise InputError("; ".join(problems))
    model, tp = DEPLOYMENTS[args.model]
    family = METHOD_FAMILY[args.method]
    perf = replica_perf(model, GPUS[args.gpu], args.tp or tp)
    klass = traffic_class(acceptance, args.prompt_tokens, args.output_tokens, family)
    points = speedup_curve(perf, klass, family, config, batches)
    if args.json:
        print(json.dumps({"model": args.model, "gpu": args.gpu, "tp": args.tp or tp, "method": args.method,
                          "config": label(config), "acceptance": acceptance,
                          "points": [asdict(p) for p in points]}, indent=2))  # fmt: skip
        return 0
    out = Table(
        title=f"{label(config)} over no speculation — {args.model} TP{args.tp or tp} on {args.gpu}, {args.method}"
    )
    for column in ("batch", "k", "speed-up", "L", "tok/s spec", "tok/s off"):
        out.add_column(column, justify="right")
    for p in points:
        out.add_row(str(p.batch), str(p.k), f"{p.speedup:.2f}", f"{p.acceptance_length:.2f}",
                    f"{p.tokens_per_second_on:.0f}", f"{p.tokens_per_second_off:.0f}")  # fmt: skip
    Console().print(out)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(argv) if argv is not None else sys.argv[1:]
    command = "specfleet simulate speedup" if argv[:1] == ["speedup"] else "specfleet simulate"
    try:
        return speedup_main(argv[1:]) if argv[:1] == ["speedup"] else simulate_main(argv)
    except InputError as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return EXIT_INPUT


def simulate_main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    _check(args)
    trace = load_trace(args)
    policy = load_policy(args.policy)
    console = Console(width=None if Console().is_terminal else 200)
    from specfleet.simulator import plots  # matplotlib is slow to import; only when running

    scenario = Scenario(
        name=f"{trace.name}",
        trace=trace,
        deployment=args.model,
        gpu=args.gpu,
        replicas=args.replicas,
        method=args.method,
        restart_seconds=args.restart_seconds,
        dt=args.dt,
        seed=args.seed,
        truth=args.truth,
    )
    try:
        scenario.classes()  # a class that --classes or the CSV names but the workload does not know
    except ValueError as exc:
        raise InputError(f"--trace {args.trace}: {exc}") from None
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=console) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(name: str, done: float, total: float) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(f"simulating {name}", total=total)
            bar.update(tasks[name], completed=done)

        evaluation = evaluate(scenario, policy, Slo(args.slo_tpot, args.slo_ttft), progress=progress)
    console.print(summary_table(evaluation))
    report = goal_report(evaluation)
    console.print(f"best static: {report.best_static}; "
                  f"Auto vs best static {report.gain_vs_best_static:+.1%} mean TPOT; "
                  f"vs restart-paying oracle {report.gap_to_oracle:+.1%}; p99 ratio {report.p99_vs_best_static:.2f}; "
                  f"{report.restarts_per_hour:.2f} restart-bound changes/hour")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    cross = plots.plot_latency_vs_load(evaluation, args.out / "latency_vs_load.png")
    plots.plot_timeline(evaluation, args.out / "timeline.png")
    believed = belief_vs_truth(evaluation)
    plots.plot_belief(evaluation, believed, args.out / "belief.png")
    saturated = [name for name, s in evaluation.summaries.items() if s.saturated]
    if saturated:
        console.print(f"[bold red]SATURATED[/]: {', '.join(saturated)} left requests unfinished (queues grew): "
                      "their latencies describe the queue, not the policy; lower the load or add replicas")  # fmt: skip
    if cross is None:
        console.print("the trace never crosses the crossover: at every load it reached some static k beat "
                      "speculation off, so adapting to load cannot pay here (only to acceptance)")  # fmt: skip
    summary = {
        "summaries": {name: asdict(s) for name, s in evaluation.summaries.items()},
        "goal": {**asdict(report), "met": report.met},
        "crossover_qps_per_replica": cross,
        "crosses_crossover": cross is not None,
        "saturated": saturated,
        "best_table": evaluation.best_table,
        "decisions": evaluation.decisions,
        "belief_vs_truth": [asdict(p) for p in believed],
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    console.print(f"wrote {args.out}/latency_vs_load.png, timeline.png, belief.png, summary.json")
    return 0
