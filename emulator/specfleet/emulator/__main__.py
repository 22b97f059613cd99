"""`python -m specfleet.emulator`: serve the emulator until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import pathlib
import signal
import sys
import threading

from specfleet.emulator.peering import kopf_peering_crds
from specfleet.emulator.server import EmulatorServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specfleet emulator", description="Serve a Kubernetes API emulator.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6443, help="0 picks a free port")
    parser.add_argument(
        "--crds",
        action="append",
        default=[],
        type=pathlib.Path,
        help="a YAML file or folder of manifests to apply at start (repeatable)",
    )
    parser.add_argument("--kubeconfig", type=pathlib.Path, help="write a kubeconfig for the emulator here")
    parser.add_argument("--no-peering", action="store_true", help="do not install Kopf's peering CRDs")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.set())
    with EmulatorServer(host=args.host, port=args.port) as srv:
        for manifest in [] if args.no_peering else kopf_peering_crds():
            srv.apply(manifest)
        for path in args.crds:
            srv.apply_path(path)
        if args.kubeconfig:
            srv.write_kubeconfig(args.kubeconfig)
        print(srv.url, flush=True)
        stopping.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
