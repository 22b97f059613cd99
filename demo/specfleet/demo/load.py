"""SHELL the real-engine demo's traffic: closed-loop clients sending `/v1/completions` to the ready pods.

Each client sends one greedy request (EOS ignored, so every answer has `max_tokens` tokens), waits for the
answer, and sends the next; `set_concurrency(n)` decides how many clients are active. Prompts are repetitive,
so n-gram drafting finds their continuations and the engine accepts drafts. A pod that is draining answers
503: the client tries again (the Service would route it elsewhere). The clients run on an asyncio loop in
their own thread.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import aiohttp

PROMPTS = (
    "the cat sat on the mat the cat sat on the mat the cat sat on the",
    "1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4 1 2 3 4 1 2",
    "red green blue red green blue red green blue red green",
)
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=120)
IDLE_SECONDS = 0.1
RATE_WINDOW_SECONDS = 5.0


@dataclass(frozen=True)
class Answer:
    """One completed request, as the client saw it."""

    sent: float  # seconds since the load started
    e2e: float
    tokens: int


class CompletionLoad:
    """`max_clients` clients of which `concurrency` are active, spread round-robin over `endpoints()`."""

    def __init__(
        self, endpoints: Callable[[], Sequence[str]], model: str, max_tokens: int = 64, max_clients: int = 64
    ) -> None:
        self.endpoints = endpoints
        self.model = model
        self.max_tokens = max_tokens
        self.max_clients = max_clients
        self.concurrency = 0
        self.failures = 0
        self.answers: list[Answer] = []
        self._recent: deque[float] = deque()
        self._next = itertools.count()
        self._started = time.monotonic()
        self._loop = asyncio.new_event_loop()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._run(),), daemon=True)

    def start(self) -> CompletionLoad:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping = True
        self._thread.join(timeout=REQUEST_TIMEOUT.total or 120)
        self._loop.close()

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def set_concurrency(self, clients: int) -> None:
        self.concurrency = max(0, min(clients, self.max_clients))

    def rate(self) -> float:
        """Completed requests per second over the last few seconds."""
        horizon = self.elapsed() - RATE_WINDOW_SECONDS
        while self._recent and self._recent[0] < horizon:
            self._recent.popleft()
        return len(self._recent) / RATE_WINDOW_SECONDS

    async def _run(self) -> None:
        async with aiohttp.ClientSession(timeout=REQUEST_TIMEOUT) as session:
            await asyncio.gather(*(self._client(session, i) for i in range(self.max_clients)))

    async def _client(self, session: aiohttp.ClientSession, index: int) -> None:
        prompt = PROMPTS[index % len(PROMPTS)]
        while not self._stopping:
            endpoints = self.endpoints()
            if index >= self.concurrency or not endpoints:
                await asyncio.sleep(IDLE_SECONDS)
                continue
            url = endpoints[next(self._next) % len(endpoints)]
            sent = self.elapsed()
            if not await self._send(session, url, prompt):
                self.failures += 1
                await asyncio.sleep(IDLE_SECONDS)
                continue
            done = self.elapsed()
            self.answers.append(Answer(sent, done - sent, self.max_tokens))
            self._recent.append(done)

    async def _send(self, session: aiohttp.ClientSession, url: str, prompt: str) -> bool:
        body = {"model": self.model, "prompt": prompt, "max_tokens": self.max_tokens, "temperature": 0,
                "ignore_eos": True}  # fmt: skip
        try:
            async with session.post(f"{url}/v1/completions", json=body) as response:
                await response.read()
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False


@dataclass
class Cycle:
    """Low → high → low, paced by the operator: `warmup` seconds low, high until it has switched speculation
    off, low until it has switched it back on and every pod runs that configuration (`settled`).

    While a rollout runs (not `settled`) the clients pause: the new engine's start-up then has the CPU to itself
    (2 cores here), and the operator ignores the old pods' signals anyway (they belong to another config hash).
    """

    low: int = 2
    high: int = 64
    warmup: float = 10.0
    phase: str = "warm-up"

    @property
    def done(self) -> bool:
        return self.phase == "done"

    def step(self, elapsed: float, speculating: bool, settled: bool) -> int:
        """The number of clients now, from what the operator has done so far."""
        if self.phase == "warm-up" and elapsed >= self.warmup:
            self.phase = "high"
        elif self.phase == "high" and not speculating:
            self.phase = "low"
        elif self.phase == "low" and speculating and settled:
            self.phase = "done"
        if not settled:
            return 0
        return self.high if self.phase == "high" else self.low
