"""Drain inside the serving process: an ASGI middleware that vLLM loads with `--middleware`.

It counts in-flight inference requests (POSTs, until their response, streamed or not, has been sent) and,
once a drain has started, answers new ones with 503 so clients retry elsewhere. `GET /specfleet/drain` reports
the state; `POST /specfleet/drain`, from loopback only (the launcher in the same pod), starts the drain.
GETs (/health, /metrics, /v1/models) keep answering throughout.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

STATUS_PATH = "/specfleet/drain"
LOOPBACK = ("127.0.0.1", "::1")


@dataclass
class DrainState:
    draining: bool = False
    in_flight: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"draining": self.draining, "in_flight": self.in_flight}


# One per serving process: vLLM instantiates the middleware itself, so the state cannot be passed in.
STATE = DrainState()


class DrainMiddleware:
    def __init__(self, app: ASGIApp, state: DrainState = STATE) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
        elif scope["path"] == STATUS_PATH:
            await self._control(scope, send)
        elif scope["method"] != "POST":
            await self.app(scope, receive, send)
        elif self.state.draining:
            await _reply(send, 503, {"error": "draining: this replica takes no new requests"})
        else:
            await self._count(scope, receive, send)

    async def _count(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The inner app returns only after the whole response body (including a stream) has been sent.
        self.state.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.state.in_flight -= 1

    async def _control(self, scope: Scope, send: Send) -> None:
        if scope["method"] == "POST":
            client = scope.get("client") or ("", 0)
            if client[0] not in LOOPBACK:
                await _reply(send, 403, {"error": "drain can only be started from inside the pod"})
                return
            self.state.draining = True
        await _reply(send, 200, self.state.as_json())


async def _reply(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if status == 503:
        # Close so a keep-alive client reconnects, through the Service, to a replica that is still ready.
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
