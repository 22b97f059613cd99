"""The signals hub: each Prometheus source is a bulkhead; deleted fleets' queries are cancelled; idle readers go."""

from __future__ import annotations

import asyncio
import threading
import time

import kubernetes.client

from specfleet.operator.config import OperatorConfig
from specfleet.operator.handlers.signals_hub import SignalsHub, Watched
from specfleet.operator.kubeapi import KubeApi
from specfleet.operator.signals.model import FleetTarget, Unavailable
from specfleet.operator.signals.sources import Catalog, Source
from tests.fixtures.stand_in import Stub, serve

EMPTY = b'{"status": "success", "data": {"resultType": "vector", "result": []}}'


class Held:
    """A stand-in answer that holds each query `seconds`, counting how many it holds at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.now, self.peak = seconds, 0, 0
        self._lock = threading.Lock()

    def __call__(self, headers: dict[str, str]) -> tuple[int, bytes]:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.seconds)
        with self._lock:
            self.now -= 1
        return 200, EMPTY


def _hub(sources: dict[str, Source], clock: list[float] | None = None) -> SignalsHub:
    config = OperatorConfig(interval_seconds=1.0)
    api = KubeApi(kubernetes.client.ApiClient())
    if clock is None:
        return SignalsHub(config, api, catalog=Catalog(sources))
    return SignalsHub(config, api, clock=lambda: clock[0], catalog=Catalog(sources))


def _watched(name: str, source: Source) -> Watched:
    return Watched(FleetTarget("ns", name, "h"), source, 60)


async def test_a_slow_source_holds_only_its_own_bulkhead() -> None:
    held = Held(1)
    for slow_url in serve(Stub(held)):
        for fast_url in serve(Stub(lambda headers: (200, EMPTY))):
            slow = Source(name="slow", prometheus_url=slow_url, timeout_seconds=10, max_concurrency=2)
            fast = Source(name="fast", prometheus_url=fast_url, timeout_seconds=10)
            hub = _hub({"slow": slow, "fast": fast})
            fleets = [_watched("a", slow), _watched("b", fast)]
            slow_read = asyncio.ensure_future(hub.read(fleets[0], fleets.copy))
            started = time.monotonic()
            fast_result = await hub.read(fleets[1], fleets.copy)
            fast_seconds = time.monotonic() - started
            assert not slow_read.done()
            assert hub.queries_in_flight() == 2
            slow_result = await slow_read
    assert isinstance(fast_result, Unavailable)
    assert fast_result.reason == "NoSeries"
    assert fast_seconds < 2.5, "the healthy source waited for the slow one"
    assert isinstance(slow_result, Unavailable)
    assert slow_result.reason == "NoSeries"
    assert held.peak == 2  # 16 queries, never more than the source's maxConcurrency at once


async def test_a_deleted_fleets_queries_are_cancelled_and_their_connections_closed() -> None:
    held = Held(20)
    for url in serve(Stub(held)):
        source = Source(name="hung", prometheus_url=url, timeout_seconds=30, max_concurrency=4)
        hub = _hub({"hung": source})
        fleet = [_watched("gone", source)]
        read = asyncio.ensure_future(hub.read(fleet[0], fleet.copy))
        for _ in range(200):  # until the bulkhead is full: four queries hang at the server
            if hub.queries_in_flight() == 4:
                break
            await asyncio.sleep(0.05)
        assert hub.queries_in_flight() == 4
        hub.forget(("ns", "gone"))
        result = await asyncio.wait_for(read, 5)
        assert hub.queries_in_flight() == 0
    assert isinstance(result, Unavailable)
    assert result.reason == "FleetDeleted"


async def test_readers_no_fleet_uses_are_dropped() -> None:
    clock = [1000.0]
    for url in serve(Stub(lambda headers: (200, EMPTY))):
        sources = {name: Source(name=name, prometheus_url=f"{url}/{name}") for name in ("a", "b")}
        hub = _hub(sources, clock)
        first = [_watched("x", sources["a"])]
        await hub.read(first[0], first.copy)
        assert hub.readers == 1
        clock[0] += 60  # many intervals later, only the other source is read
        second = [_watched("y", sources["b"])]
        await hub.read(second[0], second.copy)
    assert hub.readers == 1
