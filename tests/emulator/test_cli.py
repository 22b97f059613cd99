"""`python -m specfleet.emulator`: serves with the given manifests until SIGTERM."""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys

import pytest
import yaml

from tests.emulator.conftest import call
from tests.emulator.widgets import widget_crd


@pytest.mark.slow
def test_standalone_server(tmp_path: pathlib.Path) -> None:
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "widgets.yaml").write_text(yaml.safe_dump(widget_crd()))
    kubeconfig = tmp_path / "config"
    command = [
        sys.executable,
        "-m",
        "specfleet.emulator",
        "--port",
        "0",
        "--crds",
        str(tmp_path / "crds"),
        "--kubeconfig",
        str(kubeconfig),
    ]
    root = pathlib.Path(__file__).resolve().parents[2]
    with subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            assert call(url, "GET", "/apis/test.dev/v1")[0] == 200
            assert call(url, "GET", "/apis/kopf.dev/v1")[0] == 200
            assert yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"] == url
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=10) == 0
