"""`specfleet-runtime` refuses bad configurations before it starts anything, naming the field."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from specfleet.runtime.engine_args import SCHEDULE_KEY, EngineConfig, SpeculativeConfig
from specfleet.runtime.launcher import EXIT_INVALID_CONFIG
from specfleet.runtime.settings import ENV_DRAIN_SECONDS


def spec_args(**spec: object) -> list[str]:
    return ["--model", "m", "--speculative-config", json.dumps(spec)]


def rendered(speculative: SpeculativeConfig) -> list[str]:
    """What the operator would render, without the validation the runtime must do itself."""
    return EngineConfig(model="m", speculative=speculative).vllm_args()


CASES = [
    pytest.param(rendered(SpeculativeConfig("ngram", 3, schedule=((4, 1), (2, 3)))), SCHEDULE_KEY, id="table-order"),
    pytest.param(rendered(SpeculativeConfig("ngram", 3, schedule=((4, 5),))), SCHEDULE_KEY, id="table-k-above-k"),
    pytest.param(
        spec_args(method="ngram", num_speculative_tokens=3, **{SCHEDULE_KEY: {"1": 3}}),
        SCHEDULE_KEY,
        id="table-form",
    ),
    pytest.param(rendered(SpeculativeConfig("ngram", 3, draft_model="d")), "speculative.model", id="draft-for-ngram"),
    pytest.param(rendered(SpeculativeConfig("draft_model", 3)), "speculative.model", id="draft-missing"),
    pytest.param(rendered(SpeculativeConfig("ngram", 0)), "num_speculative_tokens", id="k-zero"),
    pytest.param(rendered(SpeculativeConfig("ngram", 99)), "num_speculative_tokens", id="k-too-large"),
    pytest.param(spec_args(method="ngram", num_speculative_tokens="3"), "num_speculative_tokens", id="k-not-int"),
    pytest.param(rendered(SpeculativeConfig("medusa", 3)), "speculative.method", id="unknown-method"),
    pytest.param(["--model", "m", "--speculative-config", "{"], "speculative-config", id="not-json"),
    pytest.param(["--max-model-len", "512"], "model", id="no-model"),
    pytest.param(["--model", "m", "--tensor-parallel-size", "two"], "tensor-parallel-size", id="tp-not-int"),
    pytest.param(["--model", "m", "--tensor-parallel-size=4"], "tensor-parallel-size", id="managed-extra-arg"),
    pytest.param([], "args", id="no-args"),
]


def run_launcher(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specfleet.runtime.launcher", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(("args", "field"), CASES)
def test_invalid_config_exits_before_starting_vllm(args: list[str], field: str) -> None:
    result = run_launcher(args)
    assert result.returncode == EXIT_INVALID_CONFIG, result.stderr
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith("specfleet-runtime: invalid configuration:")
    assert field in message
    assert "engine started" not in result.stderr  # the launcher logs this once it has spawned vLLM


def test_invalid_runtime_environment_is_refused_too() -> None:
    result = run_launcher(rendered(SpeculativeConfig("ngram", 3)), {ENV_DRAIN_SECONDS: "forever"})
    assert result.returncode == EXIT_INVALID_CONFIG
    assert ENV_DRAIN_SECONDS in result.stderr
