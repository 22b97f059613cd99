"""A fault-injecting HTTP proxy in front of the real Prometheus.

Modes: `pass` (forward), `down` (the port refuses connections), `slow` (answer after `delay` seconds),
`http500`, `garbage` (a 200 that is not JSON), `nan` / `inf` (every sample value replaced), `empty` (a
successful answer without rows). With `token` set it also checks the bearer token, as an authenticating
Prometheus front would, and counts the requests that carried it.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
import urllib.error
import urllib.request
from types import TracebackType
from typing import Any, Self

from tests.fixtures.prometheus import free_port
from tests.fixtures.stand_in import StandInServer

MODES = ("pass", "down", "slow", "http500", "garbage", "nan", "inf", "empty")
_EMPTY = {"status": "success", "data": {"resultType": "vector", "result": []}}


def _replace_values(answer: dict[str, Any], value: str) -> dict[str, Any]:
    for row in answer.get("data", {}).get("result", []):
        if "value" in row:
            row["value"] = [row["value"][0], value]
    return answer


class FaultProxy:
    def __init__(self, upstream: str, token: str | None = None, delay: float = 5.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.token = token
        self.delay = delay
        self.mode = "pass"
        self.port = free_port()
        self.requests = 0
        self.authorized = 0
        self._server: StandInServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_mode(self, mode: str) -> None:
        """Switch the fault; `down` closes the listening socket, leaving it reopens on the same port."""
        assert mode in MODES, mode
        if mode == "down":
            self._close()
        elif self._server is None:
            self._open()
        self.mode = mode

    def _open(self) -> None:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body = proxy.answer(self.path, self.headers.get("Authorization"))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                return

        self._server = StandInServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _close(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5)
        self._server = self._thread = None

    def answer(self, path: str, authorization: str | None) -> tuple[int, bytes]:
        self.requests += 1
        if self.token is not None:
            if authorization != f"Bearer {self.token}":
                return 401, b'{"status": "error", "error": "unauthorized"}'
            self.authorized += 1
        mode = self.mode
        if mode == "http500":
            return 500, b'{"status": "error", "error": "injected failure"}'
        if mode == "garbage":
            return 200, b"<html>502 bad gateway</html>{not json"
        if mode == "empty":
            return 200, json.dumps(_EMPTY).encode()
        if mode == "slow":
            time.sleep(self.delay)
        status, body = self._forward(path)
        if mode in {"nan", "inf"} and status == 200:
            body = json.dumps(_replace_values(json.loads(body), "NaN" if mode == "nan" else "+Inf")).encode()
        return status, body

    def _forward(self, path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(self.upstream + path, timeout=10) as response:
                return int(response.status), bytes(response.read())
        except urllib.error.HTTPError as error:
            return int(error.code), bytes(error.read())

    def __enter__(self) -> Self:
        self._open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close()
