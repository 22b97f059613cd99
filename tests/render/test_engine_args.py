from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specfleet.runtime.engine_args import EngineConfig, EngineConfigError, SpeculativeConfig

methods = st.sampled_from(["eagle3", "draft_model", "ngram", "mtp", "suffix"])


@st.composite
def speculative(draw: st.DrawFn) -> SpeculativeConfig:
    method = draw(methods)
    k = draw(st.integers(1, 16))
    draft = draw(st.text("abc/-_", min_size=1, max_size=12)) if method in ("eagle3", "draft_model") else None
    batches = draw(st.lists(st.integers(1, 512), unique=True, max_size=5))
    schedule = tuple((b, draw(st.integers(0, k))) for b in sorted(batches)) or None
    return SpeculativeConfig(method=method, k=k, draft_model=draft, schedule=schedule)


@given(
    spec=st.none() | speculative(),
    tp=st.integers(1, 8),
    extra=st.lists(st.sampled_from(["--enforce-eager", "--max-num-seqs=4", "--seed=1"]), max_size=3),
)
def test_vllm_args_round_trip(spec: SpeculativeConfig | None, tp: int, extra: list[str]) -> None:
    config = EngineConfig(model="m", tensor_parallel_size=tp, speculative=spec, extra_args=tuple(extra))
    parsed = EngineConfig.from_vllm_args(config.vllm_args())
    assert parsed == config
    assert parsed.config_hash() == config.config_hash()


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (
            ["--model", "m", "--speculative-config", '{"method":"ngram","num_speculative_tokens":0}'],
            "num_speculative_tokens",
        ),
        (
            [
                "--model",
                "m",
                "--speculative-config",
                '{"method":"ngram","num_speculative_tokens":2,"model":"d"}',
            ],
            "speculative.model",
        ),
        (["--model", "m", "--speculative-config", "{bad"], "speculative-config"),
        (["--speculative-config", '{"method":"ngram","num_speculative_tokens":2}'], "model"),
        (["--model", "m", "--tensor-parallel-size", "two"], "tensor-parallel-size"),
    ],
)
def test_invalid_args_name_the_field(args: list[str], field: str) -> None:
    with pytest.raises(EngineConfigError, match=field):
        EngineConfig.from_vllm_args(args)
