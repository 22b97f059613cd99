"""The `specfleet` command line: the operator that turns speculative decoding
on and off across vLLM fleets, and the workshop commands installed beside it.

Exit status: 0 done; 1 what a command documents (`crds --check` found a
difference, stdout was closed early); 2 a user's mistake (a bad flag or file,
a port in use, no reachable cluster), told in one line on stderr.
"""  # 80 columns: `specfleet --help` prints it as it is

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from specfleet.operator.api.crdgen import all_crds
from specfleet.operator.commands import workshop_commands
from specfleet.operator.config import ConfigError, add_arguments, config_from

EXIT_CLOSED_OUTPUT, EXIT_USAGE = 1, 2


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, rest = parser.parse_known_args(argv)
    if args.command not in workshop_commands() and rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        return int(args.handler(rest if args.command in workshop_commands() else args))
    except ConfigError as error:
        print(f"specfleet {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return _output_closed()


def _output_closed() -> int:
    """stdout was closed early (`specfleet demo | head`): stop quietly, as `head`'s readers expect.

    Python's own flush at exit would fail again and print a traceback, so stdout is pointed at /dev/null first.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_CLOSED_OUTPUT


RUN_HELP = "Run the operator against KUBECONFIG's cluster, or the embedded demo when there is none."
OPERATOR_HELP = "Run the operator against a cluster (what the Helm chart runs)."
OPERATOR_DESCRIPTION = (
    "Every flag also reads SPECFLEET_<NAME> from the environment; a flag wins. Exit status 2: a mistake in the "
    "configuration (a bad flag or file, a port in use, no reachable cluster), reported in one line."
)
CRDS_HELP = "Print, write or check the CRDs generated from the API types."
CRDS_DESCRIPTION = (
    f"{CRDS_HELP} With neither flag, print them as one YAML stream. Exit status 1: --check found a difference."
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specfleet", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help=RUN_HELP, description=f"{RUN_HELP} {OPERATOR_DESCRIPTION}")
    add_arguments(run)
    run.set_defaults(handler=_run)

    operator = commands.add_parser(
        "operator", help=OPERATOR_HELP, description=f"{OPERATOR_HELP} {OPERATOR_DESCRIPTION}"
    )
    add_arguments(operator)
    operator.set_defaults(handler=_operator)

    crds = commands.add_parser("crds", help=CRDS_HELP, description=CRDS_DESCRIPTION)
    group = crds.add_mutually_exclusive_group()
    # Repeatable: the repository keeps the CRDs in crds/ and, for `helm package`, in the chart.
    group.add_argument(
        "--write", metavar="DIR", type=Path, action="append", help="Write one YAML file per CRD into DIR (repeatable)."
    )
    group.add_argument(
        "--check",
        metavar="DIR",
        type=Path,
        action="append",
        help="Fail when DIR's YAML files differ from the generated CRDs, or DIR holds others (repeatable).",
    )
    crds.set_defaults(handler=_crds)

    for name, command in workshop_commands().items():
        commands.add_parser(name, help=command.help, add_help=False).set_defaults(handler=command.run)
    return parser


def _operator(args: argparse.Namespace) -> int:
    import asyncio

    from specfleet.operator.runner import configure_logging, operate

    config = config_from(os.environ, args)
    configure_logging(config)
    asyncio.run(operate(config))
    return 0


def _run(args: argparse.Namespace) -> int:
    if cluster_configured(os.environ):
        return _operator(args)
    demo = workshop_commands().get("demo")
    if demo is None:
        print(
            "specfleet: no cluster configured (KUBECONFIG, ~/.kube/config, in-cluster), and the embedded demo is "
            "not installed (pip install 'specfleet[demo]')",
            file=sys.stderr,
        )
        return 2
    print("specfleet: no cluster configured (KUBECONFIG, ~/.kube/config, in-cluster); running the embedded demo")
    return demo.run([])


def cluster_configured(env: dict[str, str] | os._Environ[str]) -> bool:
    if env.get("KUBERNETES_SERVICE_HOST") or env.get("SPECFLEET_KUBECONFIG"):
        return True
    if env.get("KUBECONFIG"):
        return any(Path(p).is_file() for p in env["KUBECONFIG"].split(os.pathsep))
    return (Path.home() / ".kube" / "config").is_file()


def render_crd_files() -> dict[str, str]:
    return {name: yaml.safe_dump(crd, sort_keys=False, width=120) for name, crd in all_crds().items()}


def _crds(args: argparse.Namespace) -> int:
    files = render_crd_files()
    if args.write:
        for folder in args.write:
            folder.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                (folder / name).write_text(text)
        return 0
    if args.check:
        problems = [problem for folder in args.check for problem in _folder_problems(folder, files)]
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    sys.stdout.write("---\n".join(files.values()))
    return 0


def _folder_problems(folder: Path, files: dict[str, str]) -> list[str]:
    """Why `folder` is not exactly the generated CRD files: a stale or missing one, or another YAML file."""
    stale = [name for name, text in files.items() if _read(folder / name) != text]
    extra = sorted(path.name for path in folder.glob("*.yaml") if path.name not in files)
    return [
        f"{folder / name} differs from the generated CRD; run `specfleet crds --write {folder}`" for name in stale
    ] + [f"{folder / name} is not a generated CRD; remove it" for name in extra]


def _read(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


if __name__ == "__main__":
    raise SystemExit(main())
