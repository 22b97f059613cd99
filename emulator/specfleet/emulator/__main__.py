"""`python -m specfleet.emulator`: serve the emulator until SIGINT/SIGTERM.

Exit status 2: a port in use or a manifest that cannot be read, told in one line.
"""

from __future__ import annotations

import argparse
import pathlib
import signal
import socket
import sys
import threading

import yaml

from specfleet.emulator.peering import kopf_peering_crds
from specfleet.emulator.server import EmulatorServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="specfleet emulator", description="Serve a Kubernetes API emulator.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, loopback only)")
    parser.add_argument("--port", type=int, default=6443, help="port to listen on (default 6443; 0 picks a free port)")
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


EXIT_INPUT = 2


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    problem = _port_problem(args.host, args.port) or next(
        (f"--crds {path}: no such file or folder" for path in args.crds if not path.exists()), None
    )
    if problem is not None:
        print(f"specfleet emulator: {problem}", file=sys.stderr)
        return EXIT_INPUT
    stopping = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopping.set())
    with EmulatorServer(host=args.host, port=args.port) as srv:
        for manifest in [] if args.no_peering else kopf_peering_crds():
            srv.apply(manifest)
        for path in args.crds:
            try:
                srv.apply_path(path)
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
                first = f"{type(exc).__name__}: {exc}".splitlines()[0]
                print(f"specfleet emulator: --crds {path}: {first}", file=sys.stderr)
                return EXIT_INPUT
        if args.kubeconfig:
            srv.write_kubeconfig(args.kubeconfig)
        print(srv.url, flush=True)
        stopping.wait()
    return 0


def _port_problem(host: str, port: int) -> str | None:
    """Why the server could not listen on host:port (bound once and let go, as the server will), or None."""
    if port == 0:
        return None
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc}); 0 picks a free port"
    return None


if __name__ == "__main__":
    sys.exit(main())
