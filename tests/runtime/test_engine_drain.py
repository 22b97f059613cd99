"""SIGTERM during streaming requests: readiness drops first, all requests complete, the pod exits in time."""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from specfleet.runtime.drain import STATUS_PATH
from specfleet.runtime.engine_args import SpeculativeConfig
from tests.fixtures.vllm import (
    EngineServer,
    TinyModels,
    completion_request,
    engine_config,
    http_status,
    start_engine,
    stop_engine,
)

pytestmark = [pytest.mark.engine, pytest.mark.slow]

STREAMS = 4
STREAM_TOKENS = 400  # long enough that the streams outlast the checks made after SIGTERM on a busy machine
DRAIN_SECONDS = 60.0


def stream(server: EngineServer, started: threading.Barrier) -> tuple[int, str | None, float]:
    """One streaming completion; returns (tokens generated, finish reason, time the stream ended)."""
    request = completion_request(
        server, "the cat sat on the mat", STREAM_TOKENS, stream=True, stream_options={"include_usage": True}
    )
    chunks, tokens, finish = 0, 0, None
    with urllib.request.urlopen(request, timeout=120) as response:
        for line in response:
            data = line.decode().removeprefix("data: ").strip()
            if not data or data == "[DONE]":
                continue
            event = json.loads(data)
            # With speculation one chunk may carry several tokens; the last event carries the usage.
            tokens = (event.get("usage") or {}).get("completion_tokens", tokens)
            finish = next((c["finish_reason"] for c in event["choices"] if c["finish_reason"]), finish)
            chunks += 1
            if chunks == 1:
                started.wait(timeout=60)
    return tokens, finish, time.monotonic()


def wait_engine_draining(server: EngineServer, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{server.url}{STATUS_PATH}", timeout=5) as response:
            if json.load(response)["draining"]:
                return
        time.sleep(0.05)
    pytest.fail("the engine did not start draining after SIGTERM")


def wait_not_ready(server: EngineServer, timeout: float = 10.0) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if http_status(f"{server.health_url}/ready") != 200:
            return time.monotonic()
        time.sleep(0.05)
    pytest.fail("readiness did not drop after SIGTERM")


def test_sigterm_drains_streaming_requests(tiny_models: TinyModels, tmp_path_factory: pytest.TempPathFactory) -> None:
    config = engine_config(tiny_models.target, SpeculativeConfig(method="ngram", k=3))
    server = start_engine(config, tmp_path_factory.mktemp("vllm-drain"), drain_seconds=DRAIN_SECONDS)
    try:
        started = threading.Barrier(STREAMS + 1)
        with ThreadPoolExecutor(STREAMS) as pool:
            streams = [pool.submit(stream, server, started) for _ in range(STREAMS)]
            started.wait(timeout=60)  # every stream has its first token
            assert http_status(f"{server.health_url}/live") == 200
            terminated = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            not_ready = wait_not_ready(server)
            wait_engine_draining(server)
            refused = http_status(completion_request(server, "hi", 1), timeout=30)
            results = [future.result(timeout=120) for future in streams]
        exit_code = server.process.wait(timeout=DRAIN_SECONDS + 30)
        exited = time.monotonic()
    finally:
        stop_engine(server)

    assert all(tokens == STREAM_TOKENS and finish == "length" for tokens, finish, _ in results), results
    assert not_ready < min(ended for _, _, ended in results)  # readiness dropped while streams still ran
    assert refused == 503
    assert exit_code == 0
    assert exited - terminated < DRAIN_SECONDS
