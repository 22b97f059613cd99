"""extraArgs cannot reach a managed engine setting: every spelling vLLM's parser would map onto one is refused."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specfleet.operator.api.parse import InvalidSpecError, parse_spec
from specfleet.runtime.engine_args import EngineConfig, EngineConfigError, SpeculativeConfig
from specfleet.runtime.engine_flags import MANAGED_ENGINE_FLAGS
from specfleet.runtime.extra_args import (
    EXTRA_ARG_SYNTAX,
    MANAGED_FLAG_REACH,
    extra_arg_problem,
    managed_flags_reached,
)
from specfleet.runtime.settings import RuntimePlan, RuntimeSettings, served_args

POSITIONAL = "vLLM would take it as the model to serve (--model)"

# Each bypass of a managed setting (issue 13, finding 4 and its relatives) → what the refusal must say.
BYPASSES = [
    (["--por=9999"], "'--por=9999' would set --port, which the operator manages"),
    (["--tensor-parallel=8"], "'--tensor-parallel=8' would set --tensor-parallel-size"),
    (["--served-model=hijack"], "'--served-model=hijack' would set --served-model-name"),
    (
        ["--speculative-config.num_speculative_tokens=9"],
        "'--speculative-config.num_speculative_tokens=9' would set --speculative-config",
    ),
    (['--speculative-conf={"method":"ngram","num_speculative_tokens":12}'], "would set --speculative-config"),
    (["\u2014model=evil"], f"'\u2014model=evil' is not --name or --name=value: {POSITIONAL}"),  # em dash
    (["\u2013model=evil"], POSITIONAL),  # en dash
    (["\u2212model=evil"], POSITIONAL),  # minus sign
    (["\uff0dmodel=evil"], POSITIONAL),  # fullwidth hyphen-minus
    (["\u2010\u2010port=9999"], POSITIONAL),  # two U+2010 hyphens
    (["evil"], f"'evil' is not --name or --name=value: {POSITIONAL}"),
    (["--port", "9999"], "extraArgs[0]: '--port' would set --port"),
    (["--enforce-eager", "9999"], f"extraArgs[1]: '9999' is not --name or --name=value: {POSITIONAL}"),
    (["--tensor_parallel_size=2"], "would set --tensor-parallel-size"),
    (["--max_model_len=99"], "would set --max-model-len"),
    (["--data-parallel=4"], "would set --data-parallel-size"),
    (["--hos=127.0.0.2"], "would set --host"),
    (["--model=x"], "'--model=x' would set --model,"),
    (["--m=x"], "would set --model or --max-model-len or --middleware"),
    (["-tp=8"], "'-tp=8' would set --tensor-parallel-size (vLLM's short alias)"),
    (["-sc", "{}"], "would set --speculative-config (vLLM's short alias)"),
    (["-dp"], "would set --data-parallel-size (vLLM's short alias)"),
    (["--config=/tmp/args.yaml"], "would set --config"),
    (["--config"], "would set --config"),
    (["--uds=/tmp/engine.sock"], "would set --uds"),
    (["--middleware=evil.Middleware"], "would set --middleware"),
    (["--PORT=9999"], "is not --name or --name=value with a name of a-z, 0-9"),
    (["--enforce-eager\n"], "is not --name or --name=value"),
    (["---port=1"], "is not --name or --name=value"),
    (["--"], "is not --name or --name=value"),
]
LEGITIMATE = [
    "--max-num-seqs=64",
    "--enable-prefix-caching",
    "--gpu-memory-utilization=0.9",
    "--model-impl=vllm",
    "--portal",
    "--data-parallel-size-local=1",
    "--compilation-config.level=3",
    "--chat-template={{ messages }} --port=9999",  # a value is one argv element, whatever it holds
    "--max_num_batched_tokens=8192",
]


def _spec(extra: list[str]) -> dict[str, object]:
    return {"model": {"name": "m"}, "speculation": {"method": "ngram", "mode": "Off"}, "runtime": {"extraArgs": extra}}


@pytest.mark.parametrize(("extra", "message"), BYPASSES, ids=[repr(b[0]) for b in BYPASSES])
def test_every_bypass_is_refused_naming_the_setting(extra: list[str], message: str) -> None:
    with pytest.raises(InvalidSpecError) as caught:
        parse_spec(_spec(extra))
    assert message in str(caught.value)
    assert str(caught.value).startswith("spec.runtime.extraArgs[")


@pytest.mark.parametrize(("extra", "message"), BYPASSES, ids=[repr(b[0]) for b in BYPASSES])
def test_the_runtime_refuses_the_same_arguments(extra: list[str], message: str) -> None:
    with pytest.raises(EngineConfigError):
        EngineConfig.from_vllm_args(["--model", "m", "--port", "8000", *extra])


@pytest.mark.parametrize("arg", LEGITIMATE)
def test_legitimate_extra_args_pass(arg: str) -> None:
    assert parse_spec(_spec([arg])).runtime.extra_args == [arg]
    assert EngineConfig.from_vllm_args(["--model", "m", arg]).extra_args == (arg,)


def _spellings(flag: str) -> list[str]:
    """Every prefix of a managed flag's name, with `_` for `-`, bare, with a value and with a dotted key."""
    name = flag.removeprefix("--")
    prefixes = [name[:end] for end in range(1, len(name) + 1)]
    names = {spelled for prefix in prefixes for spelled in (prefix, prefix.replace("-", "_"))}
    return [f"--{n}{tail}" for n in sorted(names) for tail in ("", "=1", ".key=1")]


@pytest.mark.parametrize("flag", MANAGED_ENGINE_FLAGS)
def test_every_prefix_and_spelling_of_every_managed_flag_is_refused(flag: str) -> None:
    for arg in _spellings(flag):
        assert flag in managed_flags_reached(arg), arg
        assert re.fullmatch(MANAGED_FLAG_REACH, arg), arg  # the CEL rule's regex says the same
        assert extra_arg_problem(arg), arg


@given(st.from_regex(r"--[a-z_-]{1,24}(=[a-z0-9]{0,3})?", fullmatch=True))
def test_the_regex_and_the_prefix_rule_agree(arg: str) -> None:
    """The CEL rule (a regex) and the Python naming (prefix test) refuse exactly the same arguments."""
    if not re.fullmatch(EXTRA_ARG_SYNTAX, arg):
        return
    name = arg.removeprefix("--").split("=", 1)[0].replace("_", "-")
    by_prefix = any(flag.removeprefix("--").startswith(name) for flag in MANAGED_ENGINE_FLAGS)
    assert bool(re.fullmatch(MANAGED_FLAG_REACH, arg)) == by_prefix


def test_a_managed_flag_given_twice_on_the_command_line_is_refused() -> None:
    with pytest.raises(EngineConfigError, match="--port: given twice"):
        EngineConfig.from_vllm_args(["--model", "m", "--port", "8000", "--port", "9999"])


def test_the_runtimes_own_environment_is_managed_too() -> None:
    """SPECFLEET_ENGINE_EXTRA_ARGS would hand the runtime more engine flags; SPECFLEET_HEALTH_PORT would move probes."""
    env = [{"name": "SPECFLEET_ENGINE_EXTRA_ARGS", "value": "--port 9999"}, {"name": "HF_TOKEN", "value": "t"}]
    spec = {"model": {"name": "m"}, "speculation": {"method": "ngram"}, "runtime": {"env": env}}
    with pytest.raises(InvalidSpecError, match=re.escape("spec.runtime.env: env may not set SPECFLEET_* variables")):
        parse_spec(spec)
    spec["runtime"] = {"env": env[1:]}
    assert parse_spec(spec).runtime.env[0].name == "HF_TOKEN"


def test_every_flag_the_operator_or_the_runtime_renders_is_managed() -> None:
    """A flag added to the rendered command line without joining MANAGED_ENGINE_FLAGS fails here."""
    schedule = SpeculativeConfig(method="draft_model", k=3, draft_model="d", schedule=((4, 3),))
    config = EngineConfig(
        model="m", served_model_name="s", tensor_parallel_size=2, max_model_len=4096, speculative=schedule, port=9000
    )
    wide = EngineConfig(model="m", data_parallel_size=2)
    rendered = [
        arg
        for engine in (config, wide)
        for arg in served_args(RuntimePlan(engine=engine, settings=RuntimeSettings()).serve_args())
        if arg.startswith("--")
    ]
    assert set(rendered) <= set(MANAGED_ENGINE_FLAGS)
    assert set(MANAGED_ENGINE_FLAGS) - set(rendered) == {"--uds", "--config"}  # never rendered, never allowed
