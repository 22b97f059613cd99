"""The fleet simulation: determinism, rolling restarts, the batch-size table, what controllers see."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from specfleet.operator.policy.state import SpecConfig
from specfleet.simulator.config import config_hash, static, table
from specfleet.simulator.controllers import Fixed
from specfleet.simulator.feed import SimulatedScrape
from specfleet.simulator.fleet import FleetSimulation
from specfleet.simulator.metrics import PodMetrics
from tests.simulator.fleets import small_fleet


def test_same_seed_same_run_other_seed_other_run() -> None:
    a, b, c = (small_fleet(static(3), seed=s).run(300) for s in (1, 1, 2))
    assert np.array_equal(a.tpot, b.tpot, equal_nan=True)
    assert np.array_equal(a.e2e, b.e2e, equal_nan=True)
    assert not np.array_equal(a.tpot[:50], c.tpot[:50], equal_nan=True)


def test_requests_finish_and_latencies_are_consistent() -> None:
    sim = small_fleet(static(3), seconds=300)
    result = sim.run(600)  # 300 s of arrivals, then a drain
    assert np.isnan(result.tpot).sum() == 0
    assert np.all(result.ttft > 0)
    assert np.all(result.e2e >= result.ttft)
    assert np.all(result.finish >= result.requests.arrival)


def test_speculation_cuts_tpot_at_light_load() -> None:
    off = small_fleet(SpecConfig.off(), qps=4).run(400)
    on = small_fleet(static(3), qps=4).run(400)
    assert np.nanmean(off.tpot) / np.nanmean(on.tpot) == pytest.approx(1.7, abs=0.25)


def test_table_at_k0_pays_the_drafter_tax() -> None:
    """vLLM's table with k=0 at every batch still runs the drafter: slower than speculation off."""
    off = small_fleet(SpecConfig.off(), qps=30).run(300)
    zero = small_fleet(table(((1 << 20, 0),)), qps=30).run(300)
    assert np.nanmean(zero.tpot) > np.nanmean(off.tpot) * 1.1


class SwitchAt:
    """Asks for `after` from time `at` on; records what it saw."""

    def __init__(self, before: SpecConfig, after: SpecConfig, at: float) -> None:
        self.before, self.after, self.at = before, after, at
        self.seen: list[tuple[float, list[str], list[bool]]] = []

    def initial(self) -> SpecConfig:
        return self.before

    def observe(self, now: float, pods: Sequence[PodMetrics], ready: Sequence[bool], current: SpecConfig) -> SpecConfig:
        self.seen.append((now, [p.config_hash for p in pods], list(ready)))
        return self.after if now >= self.at else self.before


def test_rolling_restart_one_pod_at_a_time_with_counters_reset() -> None:
    controller = SwitchAt(SpecConfig.off(), static(3), at=60)
    sim = small_fleet(controller=controller, replicas=3, restart_seconds=60, seconds=400)
    result = sim.run(400)
    assert result.restarts == 1
    for _, _, ready in controller.seen:
        assert sum(ready) >= 2  # never more than one pod out
    final_hashes = controller.seen[-1][1]
    assert final_hashes == [config_hash(static(3))] * 3
    assert result.config_seconds["restarting"] == pytest.approx(3 * 60, abs=1)
    pod = sim.pod(0)
    assert pod.started_at >= 60
    assert pod.drafts > 0


def test_restart_costs_capacity() -> None:
    """Raising the startup k (3 → 5) is restart-bound: a pod out of service costs the others latency."""
    quiet = small_fleet(static(3), qps=24, seconds=300).run(400)
    controller = SwitchAt(static(3), static(5), at=30)
    restarted = small_fleet(controller=controller, qps=24, seconds=300, restart_seconds=120).run(400)
    assert restarted.restarts == 1
    assert np.nanmean(restarted.tpot) > np.nanmean(quiet.tpot) * 1.05


def test_a_table_within_the_startup_k_applies_live() -> None:
    """Issue 17: a new batch-size table (drafter loaded, k ≤ startup k) changes every pod at once, no restart."""
    new = table(((8, 3), (1 << 20, 1)))
    controller = SwitchAt(static(3), new, at=60)
    sim = small_fleet(controller=controller, replicas=3, qps=24, seconds=300, restart_seconds=120)
    result = sim.run(300)
    assert (result.restarts, result.live_changes) == (0, 1)
    assert "restarting" not in result.config_seconds
    after = [hashes for now, hashes, _ in controller.seen if now > 60]
    assert after[0] == [config_hash(new)] * 3
    assert all(sum(ready) == 3 for _, _, ready in controller.seen)
    pod = sim.pod(0)
    assert pod.started_at == 0.0  # the same engine process
    assert pod.spec_positions == 3
    # Disabling speculation is still a restart.
    off = SwitchAt(static(3), SpecConfig.off(), at=60)
    assert small_fleet(controller=off, replicas=3, seconds=300).run(300).restarts == 1


def test_a_table_fleet_starts_at_the_deployments_ceiling_k_so_a_deeper_table_is_live() -> None:
    """As the operator starts live-table fleets at maxSpeculativeTokens, a table whose largest k rises past the
    starting table's (2 → 4) is pushed live under ceiling 5; without a ceiling it rolls; a fixed k is sized for
    itself either way."""
    start, deeper = table(((8, 2), (1 << 20, 1))), table(((8, 4), (1 << 20, 1)))
    for ceiling, restarts in ((5, 0), (0, 1)):
        controller = SwitchAt(start, deeper, at=60)
        sim = small_fleet(controller=controller, replicas=2, seconds=300, ceiling_k=ceiling)
        assert sim.run(300).restarts == restarts
        assert sim.pod(0).spec_positions == (5 if ceiling else 4)
    fixed = SwitchAt(static(2), static(4), at=60)
    assert small_fleet(controller=fixed, replicas=2, seconds=300, ceiling_k=5).run(300).restarts == 1


def test_signals_from_simulated_pods_measure_the_hidden_acceptance() -> None:
    """The real signals code, on the simulated scrapes, recovers L and the load without seeing the model."""
    scrape = SimulatedScrape("fleet", "m", window_seconds=120)
    signals = None
    hashes = config_hash(static(3))

    class Reader:
        def initial(self) -> SpecConfig:
            return static(3)

        def observe(
            self, now: float, pods: Sequence[PodMetrics], ready: Sequence[bool], current: SpecConfig
        ) -> SpecConfig:
            nonlocal signals
            signals = scrape.read(now, pods, ready, hashes)
            return current

    small_fleet(controller=Reader(), qps=20, seconds=600).run(600)
    assert signals is not None
    assert signals.acceptance_length == pytest.approx(2.25, abs=0.15)
    assert signals.acceptance_by_position is not None
    assert len(signals.acceptance_by_position) == 3
    assert signals.qps == pytest.approx(20.0, rel=0.2)
    assert signals.pods == 2
    assert signals.concurrency_per_replica is not None
    assert signals.concurrency_per_replica > 1
    assert signals.tpot_seconds is not None
    assert 0.004 < signals.tpot_seconds < 0.02


def test_fleets_side_by_side_match_separate_runs() -> None:
    """Several controllers in one simulation are independent fleets on the same requests."""
    together = small_fleet(seconds=300)
    together = FleetSimulation(
        together.spec, together.req, together.classes, [Fixed(SpecConfig.off()), Fixed(static(3))], together.rng
    )
    together.run(400)
    off, spec = together.results
    alone_off = small_fleet(SpecConfig.off(), seconds=300).run(400)
    alone_spec = small_fleet(static(3), seconds=300).run(400)
    assert np.nanmean(off.tpot) == pytest.approx(np.nanmean(alone_off.tpot), rel=0.03)
    assert np.nanmean(spec.tpot) == pytest.approx(np.nanmean(alone_spec.tpot), rel=0.03)
    assert np.isnan(off.tpot).sum() == np.isnan(spec.tpot).sum() == 0
    assert together.pod(0).spec_positions == 0  # fleet 0's pods run off, fleet 1's k=3
    assert together.pod(2).spec_positions == 3
    assert together.pod(2).pod == "pod-0"


def test_a_surge_pod_keeps_every_replica_serving_through_a_restart() -> None:
    controller = SwitchAt(static(3), SpecConfig.off(), at=60)
    sim = small_fleet(controller=controller, replicas=3, seconds=400, restart_seconds=60)
    sim = FleetSimulation(replace(sim.spec, surge=True), sim.req, sim.classes, controller, sim.rng)
    result = sim.run(400)
    assert result.restarts == 1
    assert "restarting" not in result.config_seconds
    assert all(sum(ready) == 3 for _, _, ready in controller.seen)
    assert controller.seen[-1][1] == [config_hash(SpecConfig.off())] * 3


class WaitingAt(SwitchAt):
    """SwitchAt that also records what every pod has waiting in its queue."""

    def __init__(self, before: SpecConfig, after: SpecConfig, at: float) -> None:
        super().__init__(before, after, at)
        self.waiting: list[list[float]] = []

    def observe(self, now: float, pods: Sequence[PodMetrics], ready: Sequence[bool], current: SpecConfig) -> SpecConfig:
        self.waiting.append([pod.waiting for pod in pods])
        return super().observe(now, pods, ready, current)


def test_requests_go_only_to_pods_in_service_while_a_fleet_beside_others_rolls() -> None:
    """Without a surge pod the restarting pod takes no new requests (they would wait for it, unserved); a fleet
    simulated beside it keeps routing over all of its pods."""
    base = small_fleet(replicas=3, seconds=400, restart_seconds=90)
    rolling, steady = WaitingAt(SpecConfig.off(), static(3), at=60), SwitchAt(SpecConfig.off(), SpecConfig.off(), 0)
    sim = FleetSimulation(base.spec, base.req, base.classes, [steady, rolling], base.rng)
    sim.run(500)
    out = [(waiting, ready) for (_, _, ready), waiting in zip(rolling.seen, rolling.waiting, strict=True)]
    assert sum(not up for _, ready in out for up in ready) >= 6  # three pods, each out for several evaluations
    assert all(queued == 0 for waiting, ready in out for queued, up in zip(waiting, ready, strict=True) if not up)
    assert all(sum(ready) == 3 for _, _, ready in steady.seen)
    assert all(sim.pod(r).success > 0 for r in range(3))  # every pod of the steady fleet served
    assert [np.isnan(result.tpot).sum() for result in sim.results] == [0, 0]
