"""SHELL: `specfleet simulate` — replay a trace through the fleet simulator under a policy and the baselines.

A trace (a built-in shape or a CSV `time,qps[,class...]`) and a policy (a SpeculationPolicy YAML or the
defaults) in; a table of TPOT/E2E/throughput/goodput/restarts per policy and two PNG plots out.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

import yaml
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from specfleet.operator.api.policy_types import PolicySpec
from specfleet.operator.simulator.evaluation import Evaluation, Scenario, Slo, evaluate, goal_report
from specfleet.operator.simulator.hardware import DEPLOYMENTS, GPUS
from specfleet.operator.simulator.traces import BUILTIN_TRACES, Trace, builtin_trace, parse_trace_csv
from specfleet.operator.simulator.workload import CLASSES


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="specfleet simulate", description=__doc__)
    p.add_argument("--trace", default="diurnal", help=f"{', '.join(BUILTIN_TRACES)} or a CSV file")
    p.add_argument("--classes", default="sharegpt", help=f"built-in traces: classes, of {', '.join(CLASSES)}")
    p.add_argument("--weights", help="built-in traces: class weights, e.g. 0.6,0.4 (default: first class)")
    p.add_argument("--peak-qps", type=float, help="built-in traces: fleet-wide peak (default 10/replica)")
    p.add_argument("--policy", help="SpeculationPolicy YAML (a resource or its spec); default: the defaults")
    p.add_argument("--hours", type=float, default=24.0, help="built-in traces: length")
    p.add_argument("--replicas", type=int, default=4)
    p.add_argument("--model", choices=sorted(DEPLOYMENTS), default="8b")
    p.add_argument("--gpu", choices=sorted(GPUS), default="H100")
    p.add_argument("--method", choices=["eagle3", "mtp", "ngram", "suffix"], default="eagle3")
    p.add_argument("--restart-seconds", type=float, default=180.0, help="time a pod is out for a config change")
    p.add_argument("--slo-tpot", type=float, default=0.05, help="goodput: TPOT bound (s)")
    p.add_argument("--slo-ttft", type=float, default=2.0, help="goodput: TTFT bound (s)")
    p.add_argument("--dt", type=float, default=1.0, help="simulation chunk (s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("simulate-out"), help="directory for the PNGs and JSON")
    return p


def load_trace(args: argparse.Namespace) -> Trace:
    path = Path(args.trace)
    if path.suffix == ".csv" or path.exists():
        return parse_trace_csv(path.read_text(), name=path.stem)
    peak = args.peak_qps if args.peak_qps is not None else 10.0 * args.replicas
    weights = tuple(float(w) for w in args.weights.split(",")) if args.weights else None
    return builtin_trace(args.trace, peak, args.hours, tuple(args.classes.split(",")), weights)


def load_policy(path: str | None) -> PolicySpec | None:
    if path is None:
        return None
    raw = yaml.safe_load(Path(path).read_text()) or {}
    return PolicySpec.model_validate(raw.get("spec", raw) if raw.get("kind") else raw)


def summary_table(evaluation: Evaluation) -> Table:
    table = Table(title=f"{evaluation.scenario.name} — {evaluation.scenario.deployment} on {evaluation.scenario.gpu}")
    for column in ("policy", "TPOT mean", "p50", "p90", "p99", "E2E mean", "p50", "p90", "p99", "tok/s",
                   "goodput/s", "restarts", "time in config"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("policy", "time in config") else "right")
    for s in evaluation.summaries.values():
        shares = ", ".join(f"{name} {share:.0%}" for name, share in s.config_share.items() if share >= 0.005)
        table.add_row(
            s.name,
            *(f"{v * 1e3:.2f}ms" for v in (s.tpot_mean, s.tpot_p50, s.tpot_p90, s.tpot_p99)),
            *(f"{v:.2f}s" for v in (s.e2e_mean, s.e2e_p50, s.e2e_p90, s.e2e_p99)),
            f"{s.throughput:.0f}",
            f"{s.goodput:.2f}",
            str(s.restarts),
            shares,
        )
    return table


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    console = Console(width=None if Console().is_terminal else 200)
    from specfleet.operator.simulator import plots  # matplotlib is slow to import; only when running

    trace = load_trace(args)
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
    )
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=console) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(name: str, done: float, total: float) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(f"simulating {name}", total=total)
            bar.update(tasks[name], completed=done)

        evaluation = evaluate(scenario, load_policy(args.policy), Slo(args.slo_tpot, args.slo_ttft), progress=progress)
    console.print(summary_table(evaluation))
    report = goal_report(evaluation)
    console.print(f"best static: {report.best_static}; "
                  f"Auto vs best static {report.gain_vs_best_static:+.1%} mean TPOT; "
                  f"vs oracle {report.gap_to_oracle:+.1%}; p99 ratio {report.p99_vs_best_static:.2f}; "
                  f"{report.restarts_per_hour:.2f} restart-bound changes/hour")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    cross = plots.plot_latency_vs_load(evaluation, args.out / "latency_vs_load.png")
    plots.plot_timeline(evaluation, args.out / "timeline.png")
    summary = {
        "summaries": {name: asdict(s) for name, s in evaluation.summaries.items()},
        "goal": {**asdict(report), "met": report.met},
        "crossover_qps_per_replica": cross,
        "decisions": evaluation.decisions,
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    console.print(f"wrote {args.out}/latency_vs_load.png, timeline.png, summary.json")
    return 0
