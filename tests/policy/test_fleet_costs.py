"""What the policy benchmark taught: the drafter tax of a table's k=0 rows, acceptance measured under a
table, the price of a rollout at the load it happens in, and rollouts whose Ready count hides progress."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import replace
from typing import cast

import pytest

from specfleet.operator.api.types import Signals, SpeculationMode
from specfleet.operator.policy.acceptance import PRIORS, AcceptanceMemory, extrapolate, merge
from specfleet.operator.policy.calibration import PARAMETER_NAMES, Calibration
from specfleet.operator.policy.context import Context, initial_state
from specfleet.operator.policy.costmodel import CostModel, context_from_signals
from specfleet.operator.policy.decide import decide
from specfleet.operator.policy.decision import Action, Decision, Reason
from specfleet.operator.policy.forecast import Forecast
from specfleet.operator.policy.observe import drafted_depth, learn
from specfleet.operator.policy.predictor import Predictor
from specfleet.operator.policy.schedule import render_schedule
from specfleet.operator.policy.state import PolicyState, SpecConfig
from tests.policy.helpers import COST_8B_H100, make_context, make_signals, run, with_fleet

# A draft the traffic does not suit (French chat on an English EAGLE head): k=1 loses to plain decoding past
# bs ≈ 200 on the 8B prior, but by less than the drafter's own pass costs.
POOR = extrapolate((0.38, 0.14, 0.05), 5, PRIORS["eagle3"])
TABLE = SpecConfig(enabled=True, k=2, schedule=((2, 2), (192, 1), (1 << 20, 0)))


def test_a_losing_k_beats_the_drafter_tax_of_a_zero_row() -> None:
    predictor = Predictor(COST_8B_H100, POOR, Calibration())
    s_best = predictor.best(256, range(1, 6))[1]
    taxed = predictor.speedup(0, 256, drafter_loaded=True)
    assert taxed < s_best < 1.0  # the region where the old rendering wrote k=0
    table = SpecConfig(enabled=True, k=2, schedule=render_schedule(predictor, range(1, 6)))
    assert table.k_at(256) == 1


def test_a_zero_row_is_priced_with_the_drafter_tax() -> None:
    predictor = Predictor(COST_8B_H100, POOR, Calibration())
    assert predictor.config_speedup(TABLE, 600) < 1.0
    assert predictor.config_speedup(SpecConfig.off(), 600) == 1.0
    assert predictor.tpot(TABLE, 600) > predictor.tpot(SpecConfig.off(), 600)


def test_zero_row_steps_teach_the_drafter_tax() -> None:
    ctx = make_context(data_parallel_size=1)
    state = replace(initial_state(ctx), current=TABLE, last_good=TABLE)
    state, _ = learn(0.0, make_signals(600, samples=0, tpot_seconds=0.05), state, ctx)
    moment = dict(zip(PARAMETER_NAMES, state.calibration.evidence.moment, strict=True))
    assert moment["zero_row_fixed"] > 0  # a k=0 row ran with the drafter loaded: its tax is observed
    assert moment["draft_fixed"] == moment["draft_position"] == 0  # but nothing was drafted


def test_only_positions_every_busy_step_drafted_are_measured() -> None:
    # At bs≈100 the table drafts one position: vLLM's per-position ratio reads a_2 ≈ 0 though it is not.
    signals = make_signals(100, concurrency_p90=120, acceptance_by_position=[0.4, 0.01, 0.0], acceptance_length=1.41)
    assert drafted_depth(signals, TABLE) == 1
    assert drafted_depth(signals, SpecConfig(enabled=True, k=3)) == 3
    ctx = make_context(data_parallel_size=1)
    earlier = AcceptanceMemory((0.5, 0.2, 0.08), measured_at=0.0)
    state = replace(initial_state(ctx), current=TABLE, last_good=TABLE, acceptance=earlier)
    state, _ = learn(60.0, signals, state, ctx)
    assert state.acceptance is not None
    a1, a2, a3 = state.acceptance.curve
    assert a1 == 0.4
    assert (a2 / a1, a3 / a2) == pytest.approx((0.2 / 0.5, 0.08 / 0.2))  # deeper: their measured shape


def test_merge_without_memory_keeps_the_measurement() -> None:
    assert merge((0.4,), None) == (0.4,)
    assert merge((0.4, 0.2), AcceptanceMemory((0.5,), 0.0)) == (0.4, 0.2)


def test_a_table_at_its_zero_row_is_not_thin_evidence() -> None:
    """No acceptance is sampled while the rows say k=0; the drafter tax still justifies turning off."""
    ctx = make_context(data_parallel_size=1, dwell_seconds=0, restart_cost_seconds=0)
    remembered = AcceptanceMemory(POOR, measured_at=0.0)
    state = replace(initial_state(ctx), current=TABLE, last_good=TABLE, acceptance=remembered)
    decision = decide(0.0, make_signals(600, samples=0, enabled=False), state, ctx)
    assert decision.code != Reason.THIN_EVIDENCE
    assert decision.action == Action.DISABLE


def test_three_pods_cannot_carry_what_four_carry_near_their_top_throughput() -> None:
    """k=3 on 8B at 64 sequences per pod serves about 5.7k tokens/s; three pods would each need 7.6k, above
    what any batch gives (7.5k at 400): the rollout batch has no fixed point, however many steps are taken."""
    predictor = Predictor(COST_8B_H100, POOR, Calibration())
    k3 = SpecConfig(enabled=True, k=3)
    peak = max(b / predictor.tpot(k3, b) for b in range(1, int(predictor.batch_limit(64)) + 1))
    assert 64 / predictor.tpot(k3, 64) * 4 / 3 > peak
    assert predictor.rollout_batch(k3, 64, 4) == math.inf
    assert 48 < predictor.rollout_batch(k3, 48, 4) < predictor.batch_limit(48)


def test_a_rollout_costs_more_near_saturation() -> None:
    predictor = Predictor(COST_8B_H100, POOR, Calibration())
    k1 = SpecConfig(enabled=True, k=1)
    quiet, busy = predictor.rollout_slowdown(k1, 8, 4), predictor.rollout_slowdown(k1, 300, 4)
    assert 0.0 <= quiet < 0.1 < busy
    assert predictor.rollout_slowdown(k1, 8, 1) == 1.0


def _at_k3(ctx: Context) -> PolicyState:
    k3 = SpecConfig(enabled=True, k=3)
    return replace(initial_state(ctx), current=k3, last_good=k3)


def test_the_switching_cost_defers_a_change_to_quieter_load() -> None:
    """Without a surge pod the same retune passes the switching-cost test at low load and waits at high load."""
    ctx = make_context(dwell_seconds=0, min_k=1, max_k=1, surge=False)
    busy = decide(0.0, make_signals(56), _at_k3(ctx), ctx)  # busy, but 3 of 4 pods still carry it
    assert busy.code == Reason.SWITCHING_COST
    quiet = decide(0.0, make_signals(8), _at_k3(ctx), ctx)
    assert quiet.action == Action.SET_K


def test_a_surge_pod_makes_a_busy_rollout_cost_only_its_restart() -> None:
    """With a surge pod no capacity is lost: the retune held back at high load without one goes ahead,
    priced at one restart's time (the floor), not at the slowdown of a replica short."""
    ctx = make_context(dwell_seconds=0, min_k=1, max_k=1, surge=True)
    busy = decide(0.0, make_signals(64), _at_k3(ctx), ctx)
    assert busy.action == Action.SET_K
    assert busy.inputs["switchCost"] == ctx.policy.restart_cost_seconds


def test_without_a_surge_pod_no_restart_the_others_cannot_carry() -> None:
    """At a load 3 of 4 pods could not hold in their KV caches, the excess would queue for the whole rollout:
    the change waits, and the reason says how many sequences per pod against what a cache holds."""
    ctx = make_context(dwell_seconds=0, min_k=1, max_k=1, surge=False, restart_cost_seconds=0)
    full = make_signals(100, kv_cache_usage=0.9)
    held = decide(0.0, full, _at_k3(ctx), ctx)
    assert held.code == Reason.CAPACITY
    assert "3 of 4 replicas cannot carry" in held.reason
    assert "more sequences than the 111 its KV cache holds" in held.reason
    assert held.wants == "set-k to k=1"
    roomy = decide(0.0, make_signals(32, kv_cache_usage=0.1), _at_k3(ctx), ctx)
    assert roomy.action == Action.SET_K
    with_surge = decide(0.0, full, _at_k3(replace(ctx, surge=True)), replace(ctx, surge=True))
    assert with_surge.action == Action.SET_K


def test_a_rollout_whose_ready_count_hides_the_new_pods_is_not_rolled_back() -> None:
    """One pod out at a time: n-1 Ready throughout, while the new config's pods report one by one."""
    ctx = make_context(dwell_seconds=0, restart_cost_seconds=0, ready_deadline_seconds=900, max_k=5)
    start = decide(0.0, make_signals(600), initial_state(ctx), ctx)
    assert start.action == Action.SET_K
    state = start.state
    for step in range(1, 50):
        now = step * 30.0
        new_pods = min(4, int(now // 300))
        ready = 4 if new_pods == 4 else 3
        signals = make_signals(600, pods=new_pods) if new_pods else None
        decision = decide(now, signals, state, with_fleet(ctx, ready_replicas=ready))
        assert decision.action != Action.ROLLBACK, decision.reason
        state = decision.state
    assert state.restart_seconds == 300.0  # 1200 s for four pods, learned for the next switching cost


def test_a_k1_row_is_not_collapsed_by_its_own_ceiling() -> None:
    """n-gram on chat under k=1: L=1.16 is a_1=0.16, what the prior expects, not a collapse."""
    ctx = make_context(dwell_seconds=0, restart_cost_seconds=0, min_k=1, max_k=1)
    k1 = SpecConfig(enabled=True, k=1)
    state = replace(initial_state(ctx), current=k1, last_good=k1)
    signals = make_signals(4, acceptance_by_position=[0.16], acceptance_length=1.16, draft_acceptance_rate=0.16)
    assert decide(0.0, signals, state, ctx).code != Reason.COLLAPSE
    collapsed = make_signals(4, acceptance_by_position=[0.05], acceptance_length=1.05, draft_acceptance_rate=0.05)
    decision = decide(0.0, collapsed, state, ctx)
    assert (decision.code, decision.action) == (Reason.COLLAPSE, Action.DISABLE)


def test_a_deep_k_is_judged_at_the_stated_threshold() -> None:
    """k=5 at L=1.47 (a_1=0.31, falling fast) still pays at low batch: no collapse; at L=1.25 it is one."""
    ctx = make_context(max_k=5)
    k5 = SpecConfig(enabled=True, k=5)
    state = replace(initial_state(ctx), current=k5, last_good=k5)
    modest = make_signals(1, acceptance_by_position=[0.31, 0.12, 0.04, 0.01, 0.0], acceptance_length=1.48)
    assert decide(0.0, modest, state, ctx).code != Reason.COLLAPSE
    poor = make_signals(4, acceptance_by_position=[0.2, 0.05, 0.0, 0.0, 0.0], acceptance_length=1.25)
    decision = decide(0.0, poor, state, ctx)
    assert (decision.code, decision.action) == (Reason.COLLAPSE, Action.DISABLE)


def _poor(concurrency: float) -> Signals:
    return make_signals(concurrency, acceptance_by_position=list(POOR[:3]), acceptance_length=1 + sum(POOR[:3]))


def _first_disable(ctx: Context, load: Callable[[float], float]) -> Decision | None:
    decisions = run(ctx, _at_k1(ctx), lambda now, _: _poor(load(now)), steps=40)
    return next((d for d in decisions if d.action == Action.DISABLE), None)


def _at_k1(ctx: Context) -> PolicyState:
    k1 = SpecConfig(enabled=True, k=1)
    return replace(initial_state(ctx), current=k1, last_good=k1)


def test_a_rising_load_is_judged_where_the_rollout_would_end() -> None:
    """k=1 loses to plain decoding past about 180 sequences on this draft. On a steep climb the restart is
    judged at the load it would land in (4 pods x 90 s ahead on the trend), so speculation goes off before
    the fleet reaches the crossover; at a steady load below it, never."""
    ctx = make_context(dwell_seconds=0, min_k=1, max_k=1)
    rising = _first_disable(ctx, lambda now: 40 + 8 * now / 30)
    assert rising is not None
    concurrency, ahead = rising.inputs["concurrency"], rising.inputs["rolloutForecast"]
    assert isinstance(concurrency, float)
    assert isinstance(ahead, float)
    assert concurrency < 170 < ahead
    assert _first_disable(ctx, lambda _: 150.0) is None


def test_a_restart_waits_until_the_fits_lower_bound_pays_for_it() -> None:
    """An off fleet has never run the drafter, so what speculating would cost is the fit's extrapolation: on a
    falling load speculation goes on only once the gain one standard deviation below the fit's prediction, held
    for the expected dwell, beats the restart's cost. Before that the point gain alone would have paid; the
    holds say both figures."""
    ctx = make_context(min_k=3, max_k=3, dwell_seconds=0, restart_cost_seconds=90)
    off = SpecConfig.off()
    state = replace(initial_state(ctx), current=off, last_good=off)
    decisions = run(ctx, state, lambda now, _: make_signals(160 - 2 * now / 30), steps=40)
    made = next(i for i, d in enumerate(decisions) if d.action == Action.ENABLE)
    held = [d for d in decisions[:made] if d.code == Reason.SWITCHING_COST]
    dwell, cost = ctx.policy.expected_dwell_seconds, ctx.policy.restart_cost_seconds
    assert any(cast(float, d.inputs["gain"]) * dwell > cost for d in held)  # the point estimate would have gone
    for decision in held:
        assert cast(float, decision.inputs["gainLow"]) * dwell <= cost
        assert re.search(r"gain \d+, at least -?\d+ s of TPOT ≤ restart cost \d+ s", decision.reason)
    assert cast(float, decisions[made].inputs["gainLow"]) * dwell > cost


def test_a_loss_turns_speculation_off_on_the_prediction() -> None:
    """Staying on while speculation loses slows the fleet, and its growing batch deepens the loss: a disable for
    a loss at the load now is judged on the predicted gain, with no bound to wait for."""
    ctx = make_context(min_k=3, max_k=3, dwell_seconds=0, restart_cost_seconds=90)
    decision = decide(0.0, make_signals(300), initial_state(ctx), ctx)
    assert (decision.action, decision.code) == (Action.DISABLE, Reason.LOSS)
    assert "gainLow" not in decision.inputs
    said = re.search(r"gain (\d+) s of TPOT > restart cost (\d+) s", decision.reason)
    assert said is not None, decision.reason
    gain = cast(float, decision.inputs["gain"])
    assert [float(v) for v in said.groups()] == pytest.approx([gain * 1800, 90.0], abs=1)


def test_near_saturation_staying_on_is_priced_at_the_batch_off_would_settle_at() -> None:
    """Off serves the same load at a smaller batch where it is faster: at low load that changes little, past
    the crossover it deepens the loss of staying on well below the closed-batch S at the same batch."""
    predictor = Predictor(COST_8B_H100, POOR, Calibration())
    k1 = SpecConfig(enabled=True, k=1)
    assert predictor.settled_speedup(k1, 8) == pytest.approx(predictor.speedup(1, 8), rel=0.05)
    assert predictor.settled_speedup(k1, 300) < predictor.speedup(1, 300) - 0.1
    assert predictor.settled_speedup(k1, 300) < predictor.settled_speedup(k1, 250) < 1.0


def test_a_model_that_does_not_fit_its_gpus_is_still_judged() -> None:
    """A 405B model on one A100 has no KV capacity in the model (the demo's CPU engine stands in for one):
    the context falls back to the default and staying on is judged without dividing by zero."""
    big = CostModel.build("A100", "meta-llama/Llama-3.1-405B-Instruct", "ngram", size_billions=405.0)
    assert big.kv_capacity_tokens() == 0.0
    assert context_from_signals(big, 0.4, 20.0) == big.context_tokens
    ctx = replace(make_context(dwell_seconds=0), cost=big, method="ngram")
    decision = decide(0.0, make_signals(40, kv_cache_usage=0.4), initial_state(ctx), ctx)
    assert decision.inputs["speedupCurrent"] is not None


def test_a_fleet_already_queueing_is_not_held_for_capacity() -> None:
    """Every replica has requests waiting as the fleet runs: holding keeps a queue that grows while the load
    lasts. The change, which serves more at a full cache, goes ahead."""
    ctx = make_context(dwell_seconds=0, min_k=1, max_k=1, surge=False, restart_cost_seconds=0)
    queueing = make_signals(100, kv_cache_usage=0.9, waiting_requests=4 * 30.0)
    released = decide(0.0, queueing, _at_k3(ctx), ctx)
    assert released.action == Action.SET_K
    assert released.inputs["queued"] == 30.0
    barely = decide(0.0, make_signals(100, kv_cache_usage=0.9, waiting_requests=2.0), _at_k3(ctx), ctx)
    assert barely.code == Reason.CAPACITY  # half a request per replica: not a queue


def _queued_poor(waiting: float) -> Signals:
    return make_signals(
        300, kv_cache_usage=0.95, waiting_requests=waiting, acceptance_by_position=list(POOR[:3]),
        acceptance_length=1 + sum(POOR[:3]),
    )  # fmt: skip


def test_peaks_that_twice_force_a_restart_to_off_keep_the_fleet_off_for_the_day() -> None:
    """A restart-bound disable for a loss is a peak that forced speculation off, queued or not, with a surge
    pod or without. Two in a day hold every enable until the older is a day old; one holds none, and a safety
    disable (acceptance collapsed) is no peak."""
    ctx = make_context(dwell_seconds=0, surge=False, restart_cost_seconds=0)
    forced = decide(0.0, _queued_poor(4 * 30.0), _at_k1(ctx), ctx)
    assert (forced.action, forced.code) == (Action.DISABLE, Reason.LOSS)
    assert forced.state.loss_peaks == (0.0,)
    surge = replace(ctx, surge=True)
    calm = decide(0.0, _queued_poor(0.0), _at_k1(surge), surge)
    assert (calm.action, calm.code, calm.state.loss_peaks) == (Action.DISABLE, Reason.LOSS, (0.0,))
    collapsed = make_signals(4, acceptance_by_position=[0.05], acceptance_length=1.05, draft_acceptance_rate=0.05)
    safety = decide(0.0, collapsed, _at_k1(ctx), ctx)
    assert (safety.action, safety.code, safety.state.loss_peaks) == (Action.DISABLE, Reason.COLLAPSE, ())
    # Hours later, in a quiet spell: the load forecast has long forgotten the peak.
    off = replace(forced.state, verification=None, loss_peaks=(0.0, 7200.0), forecast=Forecast(level=2.0))
    quiet = make_signals(2, enabled=False)
    for fleet in (ctx, surge):
        held = decide(9000.0, quiet, off, fleet)
        assert held.code == Reason.RECURRING_PEAKS
        assert (held.wants or "").startswith("enable to")
        assert "2 peaks in the last day, about 120 min apart" in held.reason
        assert "waits 1290 min more" in held.reason
    assert PolicyState.from_dict(off.to_dict()).loss_peaks == (0.0, 7200.0)
    assert decide(86_401.0, quiet, off, ctx).action == Action.ENABLE
    assert decide(9000.0, quiet, replace(off, loss_peaks=(7200.0,)), ctx).action == Action.ENABLE


def _off_through(ctx: Context, loads: list[float]) -> list[Decision]:
    """An off fleet on the poor draft, evaluated every interval at the given loads per replica."""
    off = SpecConfig.off()
    state = replace(initial_state(ctx), current=off, last_good=off, acceptance=AcceptanceMemory(POOR, 0.0))
    return run(ctx, state, lambda now, _: make_signals(loads[int(now // 30)], enabled=False), steps=len(loads))


def test_an_off_fleet_records_the_peaks_a_speculating_fleet_could_not_have_followed() -> None:
    """Off, the fleet still learns of the peaks: a load that steps from where speculating clears the bar to
    turn it on to twice that and where it would be turned off, in less time than a restart to off takes (the
    dwell and every replica's restart: 120 + 4 x 90 s), is a peak where speculation lost. Two such bursts, a trough
    between them, hold speculation off for the day (`recurring-peaks`). A rise that takes an hour records
    none, nor does a burst that comes longer after the last time speculation cleared the bar."""
    ctx = make_context(surge=True)
    light, burst = [4.0] * 3, [300.0] * 6
    bursts = _off_through(ctx, light + burst + light + burst + [4.0] * 8)
    assert bursts[3].state.enable_cleared_at == 60.0
    assert bursts[3].state.loss_peaks == (90.0,)
    assert bursts[3].state.peak_loss is not None
    assert bursts[3].state.peak_loss > 0.05
    assert bursts[8].state.loss_peaks == (90.0,)  # one burst, one peak
    assert bursts[12].state.loss_peaks == (90.0, 360.0)
    assert {d.code for d in bursts[18:]} == {Reason.RECURRING_PEAKS}
    assert all((d.wants or "").startswith("enable to") for d in bursts[18:])
    assert PolicyState.from_dict(bursts[-1].state.to_dict()) == bursts[-1].state
    rise = [4.0 + 296.0 * i / 120 for i in range(121)]
    assert _off_through(ctx, rise)[-1].state.loss_peaks == ()
    quick_restart = replace(ctx, policy=replace(ctx.policy, restart_cost_seconds=0.0))
    assert _off_through(quick_restart, light + [100.0] * 4 + burst)[-1].state.loss_peaks == ()
    # Noise about the crossover is no step: the load must at least double from where speculation paid.
    off = SpecConfig.off()
    poised = replace(
        initial_state(ctx), current=off, last_good=off, acceptance=AcceptanceMemory(POOR, 0.0),
        forecast=Forecast(level=200.0), enable_cleared_at=0.0,
    )  # fmt: skip
    at_200 = make_signals(200.0, enabled=False)
    assert decide(30.0, at_200, replace(poised, enable_cleared_load=150.0), ctx).state.loss_peaks == ()
    assert decide(30.0, at_200, replace(poised, enable_cleared_load=90.0), ctx).state.loss_peaks == (30.0,)


def test_a_loss_held_back_for_capacity_is_a_peak_once_per_busy_period() -> None:
    """Past the dwell, a restart to off for a loss that the capacity gate holds back is still a peak where
    speculation lost: it is recorded at the time the loss began, once. A loss that begins again with no trough
    in between (the load at half the peak's or less) is the same busy period; after a trough, a new peak."""
    ctx = make_context(dwell_seconds=60, surge=False, restart_cost_seconds=0)
    first = decide(0.0, _queued_poor(0.0), _at_k1(ctx), ctx)
    assert (first.code, first.state.loss_peaks) == (Reason.DWELL, ())
    held = decide(90.0, _queued_poor(0.0), first.state, ctx)
    assert held.code == Reason.CAPACITY
    assert (held.wants or "").startswith("disable to off")
    assert held.state.loss_peaks == (0.0,)
    assert decide(180.0, _queued_poor(0.0), held.state, ctx).state.loss_peaks == (0.0,)

    def relapse(state: PolicyState, at: float) -> Decision:
        return decide(at + 90.0, _queued_poor(0.0), decide(at, _queued_poor(0.0), state, ctx).state, ctx)

    hovering = replace(held.state, pending=None)
    assert relapse(hovering, 4000.0).state.loss_peaks == (0.0,)
    trough = decide(3000.0, make_signals(4), hovering, ctx)
    assert trough.state.trough_at == 3000.0
    assert decide(3000.0, make_signals(200), hovering, ctx).state.trough_at is None  # 200 of 300: no trough
    assert PolicyState.from_dict(trough.state.to_dict()).trough_at == 3000.0
    assert relapse(replace(trough.state, pending=None), 4000.0).state.loss_peaks == (0.0, 4000.0)


def test_peaks_the_fleet_cannot_follow_turn_speculation_off_in_the_trough() -> None:
    """Two peaks where speculation lost in the last day: at low load, where speculating still pays and a
    restart costs little, the fleet goes off before the next one; under mode On, or with one peak, it stays."""
    ctx = make_context(dwell_seconds=0, surge=False, restart_cost_seconds=0)
    peaks = replace(_at_k1(ctx), loss_peaks=(0.0, 7200.0))
    trough = decide(9000.0, make_signals(4), peaks, ctx)
    assert (trough.action, trough.code) == (Action.DISABLE, Reason.RECURRING_PEAKS)
    assert "2 peaks in the last day, about 120 min apart, where speculation lost: off while the load is low" in (
        trough.reason
    )
    assert not trough.state.current.enabled
    assert decide(9000.0, make_signals(4), replace(peaks, loss_peaks=(7200.0,)), ctx).action != Action.DISABLE
    pinned = replace(ctx, mode=SpeculationMode.ON)
    assert decide(9000.0, make_signals(4), peaks, pinned).action != Action.DISABLE
    busy = decide(9000.0, make_signals(100, kv_cache_usage=0.9), peaks, ctx)
    assert busy.code == Reason.CAPACITY  # no rollout the others cannot carry, not even to go off


def _poor_at(load: float, kv_per_sequence: float = 1 / 400, enabled: bool = True) -> Signals:
    if not enabled:
        return make_signals(load, enabled=False, kv_cache_usage=load * kv_per_sequence)
    accepted = list(POOR[:3])
    return make_signals(load, kv_cache_usage=load * kv_per_sequence, acceptance_by_position=accepted,
                        acceptance_length=1 + sum(accepted))  # fmt: skip


def test_the_capacity_wall_is_where_the_others_stop_carrying_a_restart() -> None:
    predictor = Predictor(COST_8B_H100, POOR, Calibration())
    k1 = SpecConfig(enabled=True, k=1)
    wall = predictor.capacity_wall(k1, 4)
    assert 1.0 < wall < predictor.batch_limit(1.0)
    assert math.isfinite(predictor.rollout_batch(k1, 0.98 * wall, 4))
    assert math.isinf(predictor.rollout_batch(k1, wall, 4))
    assert predictor.capacity_wall(k1, 8) > wall  # more pods share a missing one's load
    assert predictor.capacity_wall(k1, 1) == 1.0  # nothing serves while the only pod restarts


def test_a_load_rising_toward_the_capacity_wall_turns_speculation_off_before_it() -> None:
    """Without a surge pod a fleet that crosses the wall speculating is stuck so until the load falls. Where the
    load may reach it within the expected dwell and speculating there would not clear the enable bar, the fleet
    goes off at once, at a low load where a rollout lands (no dwell: a TROUGH change); with a surge pod it
    follows the load as before."""
    for surge in (False, True):
        ctx = make_context(surge=surge, restart_cost_seconds=0, min_k=1, max_k=1)
        decisions = run(ctx, _at_k1(ctx), lambda now, _: _poor_at(10 + 2 * now / 30), steps=80)
        first = next((d for d in decisions if d.action != Action.HOLD), None)
        if surge:
            assert first is None
            continue
        assert first is not None
        assert (first.action, first.code) == (Action.DISABLE, Reason.CAPACITY)
        assert "past which 3 of 4 could not carry it while one restarts" in first.reason
        assert "off while a rollout can still land" in first.reason
        forecast, reach = first.inputs["forecast"], first.inputs["reach"]
        assert isinstance(forecast, float)
        assert isinstance(reach, float)
        wall = float(re.search(r"reach B=(\d+) per replica", first.reason)[1])  # type: ignore[index]
        assert forecast < wall / 2 < wall <= reach


def test_a_loss_too_small_to_pay_for_a_restart_still_goes_off_before_the_wall() -> None:
    """A draft that loses a little (S just under the disable bar) on a load rising toward the wall: the loss
    alone does not pay for a restart, but past the wall none lands and the fleet would lose for the whole peak.
    The wall is judged first, so the fleet goes off while a rollout can still land, not stuck at the gate."""
    ctx = make_context(surge=False, min_k=1, max_k=1)

    def rising(now: float, _: PolicyState) -> Signals:
        load = 10 + 2 * now / 30
        return make_signals(load, kv_cache_usage=load / 400, acceptance_by_position=[0.27], acceptance_length=1.27)

    decisions = run(ctx, _at_k1(ctx), rising, steps=80)
    codes = [d.code for d in decisions]
    assert Reason.SWITCHING_COST in codes  # the loss alone is held back: too small for a restart
    first = next((d for d in decisions if d.action != Action.HOLD), None)
    assert first is not None, "the fleet stayed speculating into the wall"
    assert (first.action, first.code) == (Action.DISABLE, Reason.CAPACITY)
    assert "off while a rollout can still land" in first.reason
    assert not any(d.action == Action.HOLD and d.code == Reason.CAPACITY for d in decisions)  # never stuck


def test_speculation_turns_on_only_in_a_trough_of_the_capacity_wall() -> None:
    """An off fleet without a surge pod turns speculation on only at half the wall's load or less: above it the
    load's noise, or the larger batch a rollout leaves on the pods in service, would soon reach the wall."""
    ctx = make_context(surge=False, restart_cost_seconds=0, min_k=1, max_k=1, dwell_seconds=0)
    off = replace(initial_state(ctx), current=SpecConfig.off(), last_good=SpecConfig.off())
    busy = run(ctx, off, lambda _now, _state: _poor_at(70, enabled=False), steps=4)[-1]
    assert (busy.action, busy.code) == (Action.HOLD, Reason.CAPACITY)
    assert "B̂ is above 50% of B=" in busy.reason
    assert busy.reason.endswith(": stay off")
    quiet = run(ctx, off, lambda _now, _state: _poor_at(8, enabled=False), steps=4)
    assert any(d.action == Action.ENABLE for d in quiet)
    surge = replace(ctx, surge=True)
    assert any(d.action == Action.ENABLE for d in run(surge, off, lambda _n, _s: _poor_at(70, enabled=False), steps=4))


def test_speculation_turns_on_towards_the_capacity_wall_only_on_confidence() -> None:
    """An off fleet whose load may reach the wall within the dwell turns speculation on only where S at the wall
    one standard deviation of the fit down still clears the enable bar: past the wall a wrong guess would leave
    it speculating until the load falls. The hold says S there and its bound."""
    for margin, enables in ((0.3, True), (0.45, False)):
        auto = make_context(
            surge=False, restart_cost_seconds=0, min_k=3, max_k=3, dwell_seconds=0, enable_margin=margin
        )
        off = replace(initial_state(auto), current=SpecConfig.off(), last_good=SpecConfig.off())

        def rising(now: float, _state: PolicyState) -> Signals:
            load = 2 + 2 * now / 30
            return make_signals(load, enabled=False, kv_cache_usage=load / 150)

        # Held off for four minutes of a steady rise, so the forecast has seen the trend when Auto takes over.
        warm = run(replace(auto, mode=SpeculationMode.OFF), off, rising, steps=8)[-1].state
        decision = run(auto, warm, rising, start=8 * 30, steps=1)[0]
        assert (decision.action == Action.ENABLE) is enables, decision.reason
        if enables:
            continue
        assert decision.code == Reason.CAPACITY
        said = re.search(r"reach B=(\d+) .* S there is ([\d.]+) \(at least ([\d.]+)\)", decision.reason)
        assert said is not None, decision.reason
        assert cast(float, decision.inputs["forecast"]) <= float(said[1]) / 2
        assert float(said[3]) < 1 + margin <= float(said[2])  # the prediction alone would have turned it on


def test_the_forecast_follows_the_fleet_load_not_a_rollouts_share_of_it() -> None:
    """While a fleet without a surge pod rolls, one of its four pods is out and the others each carry a third
    more: the forecast, and so the capacity wall's reach, follow the fleet's load per replica, not that step.
    With a surge pod every pod still serves, and the pods' mean is the fleet's load."""
    for surge in (False, True):
        ctx = make_context(surge=surge)
        state = initial_state(ctx)
        for i in range(40):
            state, _ = learn(30.0 * i, make_signals(40.0), state, ctx)
        rolling = with_fleet(ctx, ready_replicas=2)
        per_pod = 40.0 * 4 / 3 if not surge else 40.0
        for i in range(40, 64):
            state, obs = learn(30.0 * i, make_signals(per_pod), state, rolling)
        assert obs.batch == pytest.approx(per_pod)  # the step times are still fitted at the pods' own batch
        assert state.forecast.level == pytest.approx(40.0)
        assert obs.reach == pytest.approx(40.0)
    ready = make_context(surge=False)
    state = initial_state(ready)
    for i in range(40):
        state, _ = learn(30.0 * i, make_signals(40.0 * 4 / 3), state, ready)
    assert state.forecast.level == pytest.approx(40.0 * 4 / 3)  # a ready fleet's pods carry it all


def test_one_peak_that_cost_dear_holds_speculation_off_while_it_earns_less_than_a_repeat_would_cost() -> None:
    """One peak where speculation lost is recorded with what the fit then said it lost there. Turning
    speculation back on at a light load earns little (few sequences); should the peak come back, the fleet
    loses on many sequences until the dwell and a whole rollout to off have passed: held (`peak-risk`) while
    that risk exceeds the gain, the risk weighed by how likely a repeat is (one peak in the time since it
    began). A peak left as its loss began, at a load where speculating barely loses, holds nothing; nor does
    one with a restart priced at nothing (the fleet gets off at once)."""
    ctx = make_context(dwell_seconds=0, surge=False, restart_cost_seconds=90)
    forced = decide(0.0, _queued_poor(4 * 30.0), _at_k1(ctx), ctx)
    assert (forced.action, forced.code) == (Action.DISABLE, Reason.LOSS)
    assert forced.state.peak_load == 300.0
    assert forced.state.peak_loss is not None
    assert forced.state.peak_loss > 0.1
    off = replace(forced.state, verification=None, forecast=Forecast(level=4.0))
    quiet = make_signals(4, enabled=False)
    held = decide(9000.0, quiet, off, ctx)
    assert held.code == Reason.PEAK_RISK
    assert (held.wants or "").startswith("enable to")
    assert re.search(
        r"should the peak of B̂=300 per replica come back \(20% likely within 1800 s, one in the 150 min since it "
        r"began\), speculating there loses \d+% for the 360 s",
        held.reason,
    )
    assert PolicyState.from_dict(off.to_dict()).peak_loss == off.peak_loss
    mild = replace(off, peak_load=8.0, peak_loss=0.0)
    assert decide(9000.0, quiet, mild, ctx).action == Action.ENABLE
    unpriced = replace(ctx, policy=replace(ctx.policy, restart_cost_seconds=0.0))
    assert decide(9000.0, quiet, off, unpriced).action == Action.ENABLE
    # A peak that has not come back for most of a day is not likely to within the dwell.
    assert decide(80_000.0, quiet, off, ctx).action == Action.ENABLE
