"""A user's mistake ends in one line on stderr and exit status 2, never a traceback: the real `specfleet`
command in a subprocess, against the session emulator or a closed port."""

from __future__ import annotations

import pathlib
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
import yaml

from tests.fixtures.prometheus import free_port

COMMAND = [sys.executable, "-m", "specfleet.operator.cli"]
OPERATOR = [*COMMAND, "operator", "--standalone", "--health-port", "0", "--metrics-port", "0"]


def _one_line(argv: list[str], env: dict[str, str] | None = None) -> str:
    """The only line the command writes to stderr, having exited with status 2."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    lines = done.stderr.strip().splitlines()
    assert (done.returncode, len(lines)) == (2, 1), done.stderr
    return lines[0]


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port something else listens on."""
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


@pytest.mark.parametrize("flag", ["--health-port", "--metrics-port"])
def test_a_port_in_use(kubeconfig: pathlib.Path, taken_port: int, flag: str) -> None:
    line = _one_line([*OPERATOR, "--kubeconfig", str(kubeconfig), flag, str(taken_port)])
    assert line == f"specfleet operator: {flag} {taken_port}: the port is in use; pick another port, or 0 for none"


def test_an_unreachable_cluster(tmp_path: pathlib.Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": dead}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
    line = _one_line([*OPERATOR, "--kubeconfig", str(tmp_path / "kubeconfig")])
    assert line == f"specfleet operator: cannot reach the cluster at {dead}: Connection refused"


def test_a_bad_kubeconfig(tmp_path: pathlib.Path) -> None:
    (tmp_path / "kubeconfig").write_text("clusters: [\n")
    line = _one_line([*COMMAND, "run", "--standalone"], env={"KUBECONFIG": str(tmp_path / "kubeconfig")})
    assert line.startswith("specfleet run: no usable cluster configuration in KUBECONFIG, ~/.kube/config or the ")
    assert line.endswith("not YAML: expected the node content, but found '<stream end>' (line 2, column 1)")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "No such file or directory"),
        ("sources: [\n", "not YAML: "),
        ("sources:\n  - name: a\n", "Prometheus sources: "),
    ],
)
def test_a_bad_prometheus_sources_file(
    kubeconfig: pathlib.Path, tmp_path: pathlib.Path, content: str | None, says: str
) -> None:
    path = tmp_path / "sources.yaml"
    if content is not None:
        path.write_text(content)
    line = _one_line([*OPERATOR, "--kubeconfig", str(kubeconfig), "--prometheus-sources", str(path)])
    assert line.startswith(f"specfleet operator: --prometheus-sources {path}: {says}")


def test_a_bad_variable() -> None:
    line = _one_line(OPERATOR, env={"SPECFLEET_INTERVAL_SECONDS": "soon", "PATH": ""})
    assert line == "specfleet operator: SPECFLEET_INTERVAL_SECONDS='soon' is not a number"


@pytest.mark.parametrize(
    ("name", "content", "flag", "says"),
    [
        ("missing.csv", None, "--trace", "No such file or directory"),
        ("trace.csv", "time,qps\n0,1\n", "--trace", "a trace CSV needs"),
        ("policy.yaml", "spec: [\n", "--policy", "not YAML: "),
        ("policy.yaml", "kind: SpeculationPolicy\nspec: {bogus: 1}\n", "--policy", "spec.bogus: Extra inputs"),
    ],
)
def test_a_bad_simulator_input(tmp_path: pathlib.Path, name: str, content: str | None, flag: str, says: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    line = _one_line([*COMMAND, "simulate", flag, str(path), "--out", str(tmp_path / "out")])
    assert line.startswith(f"specfleet simulate: {flag} {path}: {says}")


def test_a_demo_that_cannot_write_its_output(tmp_path: pathlib.Path) -> None:
    (tmp_path / "file").write_text("")
    line = _one_line([*COMMAND, "demo", "--out", str(tmp_path / "file" / "out")])
    assert line.startswith(f"specfleet demo: --out {tmp_path / 'file' / 'out'}: ")


def test_an_emulator_on_a_port_in_use(taken_port: int) -> None:
    line = _one_line([*COMMAND, "emulator", "--port", str(taken_port)])
    assert line.startswith(f"specfleet emulator: --host 127.0.0.1 --port {taken_port}: cannot listen there")


def test_an_emulator_given_a_missing_manifest(tmp_path: pathlib.Path) -> None:
    line = _one_line([*COMMAND, "emulator", "--port", "0", "--crds", str(tmp_path / "crds.yaml")])
    assert line == f"specfleet emulator: --crds {tmp_path / 'crds.yaml'}: no such file or folder"
