"""The drain middleware around a small streaming ASGI app, driven through the ASGI interface."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from specfleet.runtime.drain import STATUS_PATH, DrainMiddleware, DrainState, Message, Receive, Scope, Send

CHUNKS = 3


class StreamingApp:
    """Streams CHUNKS chunks; each waits for `release`, so a test controls when the response ends."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for _ in range(CHUNKS):
            await self.release.wait()
            await send({"type": "http.response.body", "body": b"x", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def call(
    app: DrainMiddleware, method: str, path: str, client: str = "127.0.0.1"
) -> tuple[int, bytes, dict[bytes, bytes]]:
    scope: Scope = {"type": "http", "method": method, "path": path, "client": (client, 40000)}
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start = sent[0]
    body = b"".join(message.get("body", b"") for message in sent[1:])
    return start["status"], body, dict(start["headers"])


def json_body(body: bytes) -> Any:
    return json.loads(body)


async def test_counts_a_streaming_request_until_its_last_chunk() -> None:
    inner, state = StreamingApp(), DrainState()
    app = DrainMiddleware(inner, state)
    request = asyncio.create_task(call(app, "POST", "/v1/completions"))
    await asyncio.sleep(0.01)
    assert state.in_flight == 1
    inner.release.set()
    status, body, _ = await request
    assert (status, body, state.in_flight) == (200, b"x" * CHUNKS, 0)


async def test_drain_refuses_new_requests_and_lets_running_ones_finish() -> None:
    inner, state = StreamingApp(), DrainState()
    app = DrainMiddleware(inner, state)
    running = asyncio.create_task(call(app, "POST", "/v1/completions"))
    await asyncio.sleep(0.01)

    status, body, _ = await call(app, "POST", STATUS_PATH)
    assert status == 200
    assert json_body(body) == {"draining": True, "in_flight": 1}

    status, _, headers = await call(app, "POST", "/v1/completions")
    assert status == 503
    assert headers[b"connection"] == b"close"
    assert inner.calls == ["/v1/completions"]  # the refused request never reached the engine

    inner.release.set()
    assert (await running)[0] == 200
    assert (await call(app, "GET", "/health"))[0] == 200  # probes and scrapes keep answering
    status, body, _ = await call(app, "GET", STATUS_PATH)
    assert json_body(body) == {"draining": True, "in_flight": 0}


async def test_only_loopback_can_start_a_drain() -> None:
    state = DrainState()
    app = DrainMiddleware(StreamingApp(), state)
    status, _, _ = await call(app, "POST", STATUS_PATH, client="10.1.2.3")
    assert status == 403
    assert not state.draining
