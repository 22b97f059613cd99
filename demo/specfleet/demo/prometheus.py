"""SHELL a real Prometheus (the `prometheus` binary) on a free loopback port, scraping file-discovered targets.

The demo writes one target per ready pod with the labels a PodMonitor's relabelling would attach in a
cluster (`namespace`, `specfleet_dev_deployment`, `specfleet_dev_config_hash`, `pod`), which is how the
operator's Prometheus reader groups series.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from specfleet.demo.local_engine import free_port

CONFIG = """
global:
  scrape_interval: {interval}ms
  scrape_timeout: {interval}ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: specfleet
    honor_labels: {honor_labels}
    file_sd_configs:
      - files: ["{targets}/*.json"]
        refresh_interval: 1s
"""
READY_TIMEOUT = 30.0

__all__ = ["Prometheus", "find_prometheus", "free_port"]


def find_prometheus() -> str | None:
    return shutil.which("prometheus") or next((p for p in ("/usr/bin/prometheus",) if Path(p).is_file()), None)


class Prometheus:
    """A Prometheus process under `base` (config, targets, data, log); `stop()` ends it."""

    def __init__(self, base: Path, binary: str, interval: float = 1.0, honor_labels: bool = False) -> None:
        self.targets_dir = base / "targets"
        self.targets_dir.mkdir(parents=True, exist_ok=True)
        config = base / "prometheus.yml"
        config.write_text(
            CONFIG.format(
                targets=self.targets_dir, interval=round(interval * 1000), honor_labels=str(honor_labels).lower()
            )
        )
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = base / "prometheus.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={base / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                    "--storage.tsdb.retention.time=1h",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"Prometheus did not become ready; see {self.log_path}")

    def set_targets(self, name: str, groups: Sequence[tuple[str, Mapping[str, str]]]) -> None:
        """Replace target file `name` with (host:port, labels) groups, atomically (never half a file).

        An empty list removes the file."""
        path = self.targets_dir / f"{name}.json"
        if not groups:
            path.unlink(missing_ok=True)
            return
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps([{"targets": [address], "labels": dict(labels)} for address, labels in groups]))
        temporary.rename(path)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
