"""SHELL one pod's `/metrics` endpoint on its own loopback port, as a vLLM pod serves it."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-answer (a scraper as the demo stops) is no error worth a traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class LoopbackServer:
    """Serves one handler class on 127.0.0.1:<free port> from a daemon thread: one endpoint of a local pod."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], name: str, host: str = "127.0.0.1") -> None:
        self._server = _Server((host, 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class MetricsServer(LoopbackServer):
    """Serves `render()` at /metrics."""

    def __init__(self, render: Callable[[], str], host: str = "127.0.0.1") -> None:
        super().__init__(_handler(render), "pod-metrics", host)


def _handler(render: Callable[[], str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = render().encode()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return  # one line per scrape would drown the demo's output

    return Handler
