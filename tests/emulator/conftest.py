"""Helpers for the emulator's tests: raw HTTP calls, a fresh namespace per test, the Widget CRD."""

from __future__ import annotations

import itertools
import json
import pathlib
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from specfleet.emulator import EmulatorServer
from tests.emulator.widgets import widget_crd
from tests.fixtures.deps import require_binary

Http = Callable[..., tuple[int, Any]]
Kubectl = Callable[..., str]
_counter = itertools.count()


def call(
    server: EmulatorServer | str,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    accept: str = "application/json",
) -> tuple[int, Any]:
    """(HTTP status, decoded JSON body) of one request to a server (or its URL); errors are answers too."""
    data = body if isinstance(body, bytes) else None if body is None else json.dumps(body).encode()
    base = server if isinstance(server, str) else server.url
    request = urllib.request.Request(
        base + path, data=data, method=method, headers={"Content-Type": content_type, "Accept": accept}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


@pytest.fixture
def http(emulator: EmulatorServer) -> Http:
    return lambda method, path, body=None, **kw: call(emulator, method, path, body, **kw)


@pytest.fixture
def ns(emulator: EmulatorServer) -> str:
    """A namespace of its own for each test (the emulator is shared by the session)."""
    name = f"t{next(_counter)}"
    emulator.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


@pytest.fixture
def widgets(emulator: EmulatorServer, ns: str) -> str:
    """The Widget CRD installed; the base path of widgets in this test's namespace."""
    emulator.apply(widget_crd())
    return f"/apis/test.dev/v1/namespaces/{ns}/widgets"


@pytest.fixture
def kubectl(kubeconfig: pathlib.Path, tmp_path: pathlib.Path, ns: str) -> Kubectl:
    """The real kubectl in this test's namespace; fails the test on a non-zero exit (stderr in the message)."""
    binary = require_binary("kubectl")

    def run(*args: str) -> str:
        command = [binary, f"--kubeconfig={kubeconfig}", f"--cache-dir={tmp_path / 'cache'}", "-n", ns, *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    return run


def kubectl_fails(kubectl: Kubectl, *args: str) -> str:
    """kubectl's stderr for a command that must fail."""
    with pytest.raises(AssertionError) as failed:
        kubectl(*args)
    return str(failed.value)
