"""SHELL. The HTTP side of a sweep: replays requests against an engine, reads its /metrics, sets live tables.

Each point runs `concurrency` closed-loop clients over the point's requests (the file's requests in order,
round-robin, the same ones at every point), each streamed so the first and last token are timed. `/metrics`
is read right before the first request and right after the last answer, so the counters cover exactly the
point. A concurrency above the engine's max-num-seqs is refused before the sweep when `--max-num-seqs` is
given (plan.py); the engine's own queue gauges are too coarse to tell it reliably while a point runs.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import aiohttp

from specfleet.operator.signals.scrape import parse_exposition
from specfleet.operator.signals.snapshot import Snapshot
from specfleet.profile.measure import RequestTiming
from specfleet.profile.plan import Point
from specfleet.profile.workload import ReplayRequest
from specfleet.runtime.table_control import CONTROL_TABLE_PATH

REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=600, sock_connect=10)
SHORT_TIMEOUT = aiohttp.ClientTimeout(total=30, sock_connect=10)


class SweepError(Exception):
    """The sweep cannot go on; the message is one line for the user."""


Progress = Callable[[int, int], None]  # (requests answered, requests of the point)


class Engine:
    """One engine's OpenAI and metrics endpoints on a shared session."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def served_model(self) -> str:
        """The first model the engine serves (`/v1/models`); fails with one line when it cannot be reached."""
        answer = await self._get_json("/v1/models")
        try:
            return str(answer["data"][0]["id"])
        except (KeyError, IndexError, TypeError):
            raise SweepError(f"{self.url}/v1/models lists no model; is this an OpenAI-compatible engine?") from None

    async def snapshot(self) -> Snapshot:
        text = await self._get_text("/metrics")
        try:
            return Snapshot(time.monotonic(), parse_exposition(text))
        except ValueError:
            raise SweepError(f"{self.url}/metrics is not a Prometheus exposition") from None

    async def _get_json(self, path: str) -> Any:
        try:
            return json.loads(await self._get_text(path))
        except json.JSONDecodeError:
            raise SweepError(f"{self.url}{path} did not answer JSON") from None

    async def _get_text(self, path: str) -> str:
        try:
            async with self.session.get(self.url + path, timeout=SHORT_TIMEOUT) as response:
                if response.status != 200:
                    raise SweepError(f"{self.url}{path} answered HTTP {response.status}")
                return await response.text()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise SweepError(f"cannot reach the engine at {self.url} ({_reason(exc)})") from None


class LiveTable:
    """A runtime's live batch-size table (`/speculation/table` on its control port), changed with its token."""

    def __init__(self, session: aiohttp.ClientSession, control_url: str, token: str) -> None:
        self.session = session
        self.url = control_url + CONTROL_TABLE_PATH
        self.token = token

    async def current(self) -> list[list[int]]:
        try:
            async with self.session.get(self.url, timeout=SHORT_TIMEOUT) as response:
                answer = await response.json(content_type=None)
                if response.status != 200 or not answer.get("live"):
                    raise SweepError(f"{self.url} has no live table (HTTP {response.status}); use --engine K=URL")
                return list(answer["table"])
        except (aiohttp.ClientError, TimeoutError, ValueError, AttributeError, KeyError) as exc:
            raise SweepError(f"cannot read the live table at {self.url} ({_reason(exc)})") from None

    async def put(self, table: list[list[int]], what: str) -> None:
        try:
            headers = {"Authorization": f"Bearer {self.token}"}
            async with self.session.put(self.url, json={"table": table}, headers=headers, timeout=SHORT_TIMEOUT) as r:
                if r.status != 200:
                    message = (await r.json(content_type=None) or {}).get("message", "")
                    raise SweepError(f"the live table at {self.url} refused {what} (HTTP {r.status}): {message}")
        except (aiohttp.ClientError, TimeoutError, ValueError, AttributeError) as exc:
            raise SweepError(f"cannot set {what} on the live table at {self.url} ({_reason(exc)})") from None


async def run_point(
    engine: Engine,
    point: Point,
    requests: Sequence[ReplayRequest],
    model: str,
    max_tokens: int | None,
    progress: Progress,
) -> tuple[list[RequestTiming], Snapshot, Snapshot]:
    """The point's timings and the engine's snapshots right before and right after it."""
    indices = iter(range(point.requests))
    timings: list[RequestTiming] = []

    async def client() -> None:
        for index in indices:  # one shared iterator: each request is sent once
            request = requests[index % len(requests)]
            where = f"k={point.config.k}, concurrency {point.concurrency}, request line {request.line}"
            timings.append(await _stream(engine, where, request, model, max_tokens))
            progress(len(timings), point.requests)

    before = await engine.snapshot()
    await asyncio.gather(*(client() for _ in range(point.concurrency)))
    return timings, before, await engine.snapshot()


async def warm_up(engine: Engine, k: int, request: ReplayRequest, model: str, max_tokens: int | None) -> None:
    """One unmeasured request after a configuration change, so its first point does not pay for the change."""
    await _stream(engine, f"k={k}, warm-up, request line {request.line}", request, model, max_tokens)


async def _stream(
    engine: Engine, where: str, request: ReplayRequest, model: str, max_tokens: int | None
) -> RequestTiming:
    sent = time.monotonic()
    first = last = None
    tokens = 0
    try:
        body = request.streamed(model, max_tokens)
        async with engine.session.post(engine.url + request.path, json=body, timeout=REQUEST_TIMEOUT) as response:
            if response.status != 200:
                raise SweepError(f"{where}: the engine answered HTTP {response.status}: {await _message(response)}")
            async for chunk in _events(response):
                # A chunk with choices is one engine step's output (its text may be empty: a partial character).
                if chunk.get("choices"):
                    last = time.monotonic()
                    first = first or last
                tokens = int((chunk.get("usage") or {}).get("completion_tokens") or tokens)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise SweepError(f"{where}: lost the engine at {engine.url} ({_reason(exc)})") from None
    finished = time.monotonic()
    return RequestTiming(
        sent=sent, first_token=first or finished, last_token=last or finished, finished=finished, tokens=tokens
    )


async def _events(response: aiohttp.ClientResponse) -> Any:
    """The JSON objects of a server-sent-event stream, up to `[DONE]`."""
    async for raw in response.content:
        line = raw.decode().strip()
        if not line.startswith("data:"):
            continue
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            return
        yield json.loads(data)


async def _message(response: aiohttp.ClientResponse) -> str:
    """The engine's error message, on one line and short (OpenAI errors: {"error": {"message": ...}})."""
    text = await response.text()
    try:
        obj = json.loads(text)
        text = str((obj.get("error") or {}).get("message") or obj.get("message") or text)
    except (json.JSONDecodeError, AttributeError):
        pass
    return " ".join(text.split())[:300]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    return " ".join(str(exc).split()) or type(exc).__name__
