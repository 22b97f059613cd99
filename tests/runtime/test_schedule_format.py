"""The batch-size→k table as vLLM 0.32 reads it (`num_speculative_tokens_per_batch_size`)."""

from __future__ import annotations

import json

import pytest

from specfleet.runtime.engine_args import SCHEDULE_KEY, EngineConfig, EngineConfigError, SpeculativeConfig
from tests.fixtures.deps import require_module

SCHEDULES = [((1, 3),), ((1, 3), (4, 1)), ((2, 5), (16, 2), (64, 0))]


def _rendered(schedule: tuple[tuple[int, int], ...]) -> object:
    config = EngineConfig(model="m", speculative=SpeculativeConfig(method="ngram", k=5, schedule=schedule))
    spec_json = config.vllm_args()[config.vllm_args().index("--speculative-config") + 1]
    return json.loads(spec_json)[SCHEDULE_KEY]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_vllm_accepts_the_rendered_table_and_expands_it_as_meant(
    schedule: tuple[tuple[int, int], ...],
) -> None:
    require_module("vllm")
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    max_batch = 100
    dense = build_dynamic_sd_schedule_lookup(_rendered(schedule), max_batch, 5)
    # Each batch size gets the k of the first row whose max batch covers it; the last row's k beyond it.
    for batch in range(1, max_batch + 1):
        expected = next((k for top, k in schedule if batch <= top), schedule[-1][1])
        assert dense[batch] == expected, batch


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_rendered_table_parses_back(schedule: tuple[tuple[int, int], ...]) -> None:
    config = EngineConfig(model="m", speculative=SpeculativeConfig(method="ngram", k=5, schedule=schedule))
    assert EngineConfig.from_vllm_args(config.vllm_args()) == config


@pytest.mark.parametrize(
    "table",
    [
        {"1": 3},  # the old mapping form
        [],
        [[2, 4, 3]],  # does not start at batch 1
        [[1, 2, 3], [4, 8, 1]],  # gap
        [[1, 2, 3], [3, 2, 1]],  # end before start
        [[1, 2]],
        [[1, 2, "3"]],
        [[1, 4, 6]],  # above k
    ],
)
def test_bad_tables_are_refused_naming_the_field(table: object) -> None:
    spec = json.dumps({"method": "ngram", "num_speculative_tokens": 5, SCHEDULE_KEY: table})
    with pytest.raises(EngineConfigError, match=SCHEDULE_KEY):
        EngineConfig.from_vllm_args(["--model", "m", "--speculative-config", spec])
