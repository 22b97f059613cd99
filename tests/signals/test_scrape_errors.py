"""How the direct-scrape reader fails: a hung pod is asked once per tick, a refusing one is retried."""

from __future__ import annotations

import time

from specfleet.operator.signals.model import FleetTarget, PodEndpoint, Unavailable
from specfleet.operator.signals.scrape import ScrapeConfig, ScrapeReader
from tests.fixtures.stand_in import Stub, serve

CONFIG = ScrapeConfig(timeout_seconds=0.3, retries=2, backoff_seconds=0.01)


async def _read_pod(url: str) -> Unavailable:
    target = FleetTarget("ns", "d", "h", (PodEndpoint("d-0", f"{url}/metrics", "h"),))
    result = (await ScrapeReader(CONFIG).read([target], 30))[target.key]
    assert isinstance(result, Unavailable)
    return result


async def test_a_pod_that_times_out_is_not_asked_again_in_the_tick() -> None:
    def hung(headers: dict[str, str]) -> tuple[int, bytes]:
        time.sleep(1.0)
        return 200, b""

    stub = Stub(hung)
    for url in serve(stub):
        result = await _read_pod(url)
    assert result.reason == "ScrapeFailed"
    assert stub.hits == 1


async def test_a_failing_pod_is_retried_then_reported() -> None:
    stub = Stub(lambda headers: (503, b"starting"))
    for url in serve(stub):
        result = await _read_pod(url)
    assert result.reason == "ScrapeFailed"
    assert result.message == "d-0: the pod answered HTTP 503"  # a fixed sentence: nothing the pod sent
    assert stub.hits == CONFIG.retries + 1
