"""SHELL a simulated pod's control endpoint, as the runtime serves it on its health port: the live table.

`GET /speculation/table` shows the table in force; `PUT /speculation/table` with the pod's bearer token
replaces it, validated by the runtime's own rules (`runtime.table_control`), and hands it to the simulated
engine at once. The same contract as the real runtime, so the operator cannot tell the two apart.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from specfleet.demo.serving import LoopbackServer
from specfleet.runtime.table_control import (
    CONTROL_TABLE_PATH,
    LiveTable,
    TableRequestError,
    authorize,
    parse_table_request,
)

MAX_BODY = 1 << 16


class TableControl:
    """The pod's table and who may change it; `apply` runs under the caller's lock when a change is accepted."""

    def __init__(
        self, startup: LiveTable, startup_k: int, method: str, token: str | None, apply: Callable[[LiveTable], None]
    ) -> None:
        self.current = startup
        self.allowed_k = startup.ks()  # decode CUDA graphs exist only for these on a GPU: the runtime's rule
        self.startup_k = startup_k
        self.method = method
        self.token = token
        self.apply = apply
        self._lock = threading.Lock()

    def show(self) -> dict[str, object]:
        with self._lock:
            shown = self.current.to_json()
        return {**shown, "appliedVersion": shown["version"], "startupK": self.startup_k, "method": self.method}

    def replace(self, header: str | None, body: object) -> dict[str, object]:
        authorize(header, self.token)
        with self._lock:
            table = parse_table_request(body, self.startup_k, self.current, allowed_k=self.allowed_k)
            self.apply(table)
            self.current = table
        return table.to_json()


class ControlServer(LoopbackServer):
    """Serves one pod's `TableControl`."""

    def __init__(self, control: TableControl, host: str = "127.0.0.1") -> None:
        super().__init__(_handler(control), "pod-control", host)
        self.control = control


def _handler(control: TableControl) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != CONTROL_TABLE_PATH:
                self.send_error(404)
                return
            self._answer(200, control.show())

        def do_PUT(self) -> None:
            if self.path.split("?")[0] != CONTROL_TABLE_PATH:
                self.send_error(404)
                return
            try:
                self._answer(200, control.replace(self.headers.get("Authorization"), self._body()))
            except TableRequestError as exc:
                self._answer(exc.status, {"message": exc.message})

        def _body(self) -> object:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                raise TableRequestError(400, "body: too large")
            try:
                return json.loads(self.rfile.read(length) or b"null")
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise TableRequestError(400, f"body: not valid JSON ({exc})") from exc

        def _answer(self, status: int, obj: object) -> None:
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # the operator's pushes would drown the demo's output

    return Handler
