"""The real-engine demo's pure pieces: the load cycle paced by the operator, and a pod's engine args."""

from __future__ import annotations

import dataclasses

from specfleet.demo.engine_fleet import pod_args
from specfleet.demo.load import Cycle
from specfleet.runtime.engine_args import EngineConfig, SpeculativeConfig


def test_the_cycle_goes_high_until_speculation_is_off_and_low_until_it_is_back_on() -> None:
    cycle = Cycle(low=2, high=64, warmup=10.0)
    assert cycle.step(0.0, speculating=True, settled=True) == 2
    assert cycle.step(10.0, speculating=True, settled=True) == 64
    assert cycle.step(20.0, speculating=False, settled=False) == 0  # the rollout to off: clients pause
    assert cycle.step(80.0, speculating=False, settled=True) == 2
    assert not cycle.done
    assert cycle.step(100.0, speculating=True, settled=False) == 0  # the rollout back on
    assert not cycle.done
    assert cycle.step(150.0, speculating=True, settled=True) == 2
    assert cycle.done


def test_a_pod_keeps_the_operators_args_but_its_own_port() -> None:
    rendered = EngineConfig(model="/models/tiny", served_model_name="tiny", max_model_len=512,
                            speculative=SpeculativeConfig(method="ngram", k=3), port=8000)  # fmt: skip
    args = pod_args(rendered.vllm_args(), 41234)
    assert args[args.index("--port") + 1] == "41234"
    assert EngineConfig.from_vllm_args(args) == dataclasses.replace(rendered, port=41234)
