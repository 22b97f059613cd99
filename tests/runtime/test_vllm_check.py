"""The runtime's re-check with vLLM's own parser: no extra argument may change a managed setting.

The extra arguments here skip the API's rule on purpose (an EngineConfig is built without validating it, or
the node's SPECFLEET_ENGINE_EXTRA_ARGS carries them): the re-check is the second line of defence.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys

import pytest

from specfleet.runtime.engine_args import EngineConfig, EngineConfigError, SpeculativeConfig
from specfleet.runtime.launcher import EXIT_INVALID_CONFIG
from specfleet.runtime.settings import ENV_EXTRA_ARGS, RuntimePlan, RuntimeSettings
from specfleet.runtime.vllm_check import argument_lists, managed_override, recheck, vllm_parser
from tests.fixtures.deps import require_module

pytestmark = pytest.mark.engine

NGRAM = SpeculativeConfig(method="ngram", k=3)


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    require_module("vllm")
    return vllm_parser()


def _plan(extra: tuple[str, ...] = (), node: tuple[str, ...] = (), **engine: object) -> RuntimePlan:
    config = EngineConfig(**{"model": "m", "speculative": NGRAM, "extra_args": extra, **engine})  # type: ignore[arg-type]
    return RuntimePlan(engine=config, settings=RuntimeSettings(extra_engine_args=node))


def _check(plan: RuntimePlan, parser: argparse.ArgumentParser) -> None:
    """What the launcher's check process does, in this process (the launcher test covers the process)."""
    if problem := managed_override(parser, *argument_lists(plan)):
        raise EngineConfigError(problem)


BYPASSES = [
    (("--por=9999",), "--port from 8000 to 9999"),
    (("--tensor-parallel=8",), "--tensor-parallel-size from 1 to 8"),
    (("--served-model=hijack",), "--served-model-name from None to ['hijack']"),
    (("--speculative-config.num_speculative_tokens=9",), "--speculative-config from {'method': 'ngram'"),
    (("--speculative-conf={}",), "--speculative-config"),
    (("\u2014model=evil",), "the positional model (a bare argument) from None to '\u2014model=evil'"),
    (("evil",), "the positional model (a bare argument) from None to 'evil'"),
    (("--port", "9999"), "--port from 8000 to 9999"),
    (("--max_model_len=99",), "--max-model-len from None to 99"),
    (("-tp", "4"), "--tensor-parallel-size from 1 to 4"),
    (("--hos=127.0.0.2",), "--host from '0.0.0.0' to '127.0.0.2'"),
    (("--uds=/tmp/engine.sock",), "--uds from None to '/tmp/engine.sock'"),
    (("--middleware=evil.Middleware",), "--middleware"),
    (("--scheduler-cls=evil.Scheduler",), "--scheduler-cls"),
    (("--config=/tmp/args.yaml",), "--config from None"),
]


@pytest.mark.parametrize(("extra", "change"), BYPASSES, ids=[repr(b[0]) for b in BYPASSES])
def test_every_bypass_is_caught_by_vllms_parser(
    parser: argparse.ArgumentParser, extra: tuple[str, ...], change: str
) -> None:
    with pytest.raises(EngineConfigError) as caught:
        _check(_plan(extra), parser)
    assert f"extra arguments would change {change}" in str(caught.value)
    assert "which the operator manages; refusing to start the engine" in str(caught.value)


def test_speculation_switched_on_behind_a_fleet_pinned_off_is_caught(parser: argparse.ArgumentParser) -> None:
    extra = ('--speculative-conf={"method":"ngram","num_speculative_tokens":12}',)
    with pytest.raises(EngineConfigError, match="--speculative-config from None to"):
        _check(_plan(extra, speculative=None), parser)


def test_a_config_file_naming_a_managed_setting_is_caught(
    parser: argparse.ArgumentParser, tmp_path: pathlib.Path
) -> None:
    """vLLM lets the command line win over the file, but a managed flag left at its default is the file's."""
    config = tmp_path / "args.yaml"
    config.write_text("port: 9999\ndata-parallel-size: 4\n")
    with pytest.raises(EngineConfigError, match="extra arguments would change --data-parallel-size from 1 to 4"):
        _check(_plan(("--config", str(config))), parser)


def test_the_nodes_arguments_are_checked_too(parser: argparse.ArgumentParser) -> None:
    with pytest.raises(EngineConfigError, match="--port from 8000 to 9999"):
        _check(_plan(node=("--por", "9999")), parser)


@pytest.mark.parametrize(
    "plan",
    [
        _plan(("--max-num-seqs=64", "--enable-prefix-caching", "--gpu-memory-utilization=0.9")),
        _plan(("--max-num-seqs=64",), node=("--enforce-eager", "--dtype", "float32")),
        _plan(speculative=SpeculativeConfig(method="ngram", k=3, schedule=((4, 3), (64, 1)))),  # live scheduler
        _plan(speculative=None, served_model_name="chat", tensor_parallel_size=2, max_model_len=4096, port=9000),
    ],
)
def test_legitimate_configurations_pass(parser: argparse.ArgumentParser, plan: RuntimePlan) -> None:
    _check(plan, parser)


def test_an_argument_vllm_does_not_know_is_refused_with_its_message(parser: argparse.ArgumentParser) -> None:
    with pytest.raises(EngineConfigError, match=r"vLLM's parser refuses the arguments: .*unrecognized arguments"):
        _check(_plan(("--no-such-flag=1",)), parser)


def test_the_check_process_passes_a_legitimate_configuration() -> None:
    require_module("vllm")
    recheck(_plan(("--max-num-seqs=64", "--enable-prefix-caching", "--gpu-memory-utilization=0.9")))


def test_the_launcher_refuses_to_start_with_one_line_naming_the_setting() -> None:
    require_module("vllm")
    result = subprocess.run(
        [sys.executable, "-m", "specfleet.runtime.launcher", *EngineConfig(model="m").vllm_args()],
        env={**os.environ, ENV_EXTRA_ARGS: "--por 9999"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == EXIT_INVALID_CONFIG, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        "specfleet-runtime: invalid configuration: extra arguments would change --port from 8000 to 9999, "
        "which the operator manages; refusing to start the engine"
    )
    assert "engine started" not in result.stderr
