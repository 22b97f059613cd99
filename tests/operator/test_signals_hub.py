"""The signals hub: fleets naming many Prometheus sources share one bounded pool of query threads."""

from __future__ import annotations

import asyncio
import threading
import time

import kubernetes.client

from specfleet.operator.config import OperatorConfig
from specfleet.operator.handlers.signals_hub import PROMETHEUS_THREADS, SignalsHub, Source, Watched
from specfleet.operator.kubeapi import KubeApi
from specfleet.operator.signals.model import FleetTarget, SignalsResult
from tests.fixtures.stand_in import Stub, serve

EMPTY = b'{"status": "success", "data": {"resultType": "vector", "result": []}}'
SOURCES = 5


def _query_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name.startswith("prometheus"))


async def _read_every_source(hub: SignalsHub, url: str) -> list[SignalsResult]:
    fleets = [
        Watched(FleetTarget("ns", f"fleet-{i}", "h"), Source(f"{url}/prometheus-{i}", timeout_seconds=5), 60)
        for i in range(SOURCES)
    ]
    return list(await asyncio.gather(*(hub.read(fleet, lambda: fleets) for fleet in fleets)))


async def test_many_sources_share_one_bounded_pool_of_query_threads() -> None:
    def slow(headers: dict[str, str]) -> tuple[int, bytes]:
        time.sleep(0.5)  # every query of every source is in flight at once
        return 200, EMPTY

    hub = SignalsHub(OperatorConfig(), KubeApi(kubernetes.client.ApiClient()))
    before = _query_threads()
    for url in serve(Stub(slow)):
        results = await _read_every_source(hub, url)
    assert [getattr(result, "reason", None) for result in results] == ["NoSeries"] * SOURCES
    # One pool per reader would hold 14 threads for each source.
    assert _query_threads() - before <= PROMETHEUS_THREADS
