"""The `specfleet` command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from specfleet.operator.api.crdgen import all_crds
from specfleet.operator.commands import workshop_commands
from specfleet.operator.config import add_arguments, config_from


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args, rest = parser.parse_known_args(argv)
    if args.command in workshop_commands():
        return int(args.handler(rest))
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return int(args.handler(args))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specfleet", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser(
        "run", help="Run the operator against KUBECONFIG's cluster, or the embedded demo when there is none."
    )
    add_arguments(run)
    run.set_defaults(handler=_run)

    operator = commands.add_parser("operator", help="Run the operator against a cluster (what the Helm chart runs).")
    add_arguments(operator)
    operator.set_defaults(handler=_operator)

    crds = commands.add_parser("crds", help="Print, write or check the CRDs generated from the API types.")
    group = crds.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="DIR", type=Path, help="Write one YAML file per CRD into DIR.")
    group.add_argument("--check", metavar="DIR", type=Path, help="Fail when DIR differs from the generated CRDs.")
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
        args.write.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (args.write / name).write_text(text)
        return 0
    if args.check:
        stale = [name for name, text in files.items() if _read(args.check / name) != text]
        for name in stale:
            print(f"{args.check / name} differs from the generated CRD; run `specfleet crds --write {args.check}`")
        return 1 if stale else 0
    sys.stdout.write("---\n".join(files.values()))
    return 0


def _read(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


if __name__ == "__main__":
    raise SystemExit(main())
