"""The operator as a separate OS process (what a pod runs), so it can be SIGKILLed and measured."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
from types import TracebackType
from typing import Self

import psutil  # type: ignore[import-untyped]

from specfleet.emulator import EmulatorServer, kopf_peering_crds
from tests.fixtures.cluster import CRDS_DIR

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Lines that mean the operator itself failed (Kopf logs handler crashes as "failed with an exception").
CRASH_MARKERS = ("Traceback (most recent call last)", "failed with an exception", "Unhandled", "CRITICAL")


class OperatorProcess:
    """`python -m specfleet.operator.cli operator ...` with its output appended to `log_path`."""

    def __init__(
        self,
        kubeconfig: pathlib.Path,
        log_path: pathlib.Path,
        *,
        interval: float = 1.0,
        prometheus_url: str | None = None,
        metrics_port: int = 0,
        extra: tuple[str, ...] = ("--standalone",),
        env: dict[str, str] | None = None,
    ) -> None:
        self.log_path = log_path
        self.argv = [
            sys.executable,
            "-m",
            "specfleet.operator.cli",
            "operator",
            "--kubeconfig",
            str(kubeconfig),
            "--health-port",
            "0",
            "--metrics-port",
            str(metrics_port),
            "--interval",
            str(interval),
            *(["--prometheus-url", prometheus_url] if prometheus_url else []),
            *extra,
        ]
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> Self:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.starts += 1
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown handlers, no final patches; exactly a node or OOM kill."""
        if self.alive():
            assert self.process is not None
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.alive():
            assert self.process is not None
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def rss_bytes(self) -> int:
        return int(psutil.Process(self.pid).memory_info().rss)

    def cpu_seconds(self) -> float:
        times = psutil.Process(self.pid).cpu_times()
        return float(times.user + times.system)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def crash_lines(self) -> list[str]:
        return [line for line in self.log().splitlines() if any(marker in line for marker in CRASH_MARKERS)]

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def install_cluster(emulator: EmulatorServer, base: pathlib.Path) -> pathlib.Path:
    """Kopf's peering CRDs and specfleet's CRDs in a fresh emulator; its kubeconfig under `base`."""
    for crd in kopf_peering_crds():
        emulator.apply(crd)
    emulator.apply_path(CRDS_DIR)
    return emulator.write_kubeconfig(base / "kubeconfig")
